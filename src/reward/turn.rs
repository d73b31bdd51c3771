//! The per-turn signals (seeded from the CaSiNo harness's turn rewards): format, length, points
//! and strategic talk. Each is a pure function of one turn (and, for points, the offer it
//! accepted); [`turn_signals`] walks an episode's turns and gives each the signals a config
//! uses, keyed by name.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::game::{standing_after, Offer, Setup, Turn};
use crate::protocol::{Action, Terms};
use crate::scenario::{bargained_ratio, Game, Role, Scenario};

use super::config::{Component, LengthConfig, RewardConfig};
use super::rules::rule_scores;

/// 1 for a format-ok completion (all three parts, in order, one well-formed action), else 0.
pub fn format_reward(turn: &Turn) -> f64 {
    if turn.parsed.format_ok {
        1.0
    } else {
        0.0
    }
}

/// The number of words (whitespace-separated) in the turn's Talk; 0 without one.
pub fn talk_words(turn: &Turn) -> usize {
    turn.parsed
        .talk
        .as_deref()
        .map_or(0, |t| t.split_whitespace().count())
}

/// The length reward of a Talk of `words` words: 1 at `min`, falling linearly to 0 at `max`
/// (concise talk is better, within reason); `outside` (a penalty, −1 by default) below `min` or
/// above `max`.
pub fn length_reward(words: usize, config: &LengthConfig) -> f64 {
    let (min, max, w) = (f64::from(config.min), f64::from(config.max), words as f64);
    if w < min || w > max {
        config.outside
    } else {
        1.0 - (w - min) / (max - min)
    }
}

/// The points reward of a move that took effect: for a SUBMIT, the mover's own ρ of its terms,
/// and for an ACCEPT, its ρ of the accepted offer — clipped to [0, 1], then · 2 − 0.5; −1 for
/// WALK_AWAY; 0 for anything else (REJECT, TALK, a turn that could not be used). ρ is the
/// scenario's own ([`bargained_ratio`]): own points / max points on items, u / max u on issues,
/// and on price tasks the seat's share of the spread |B − C| at the proposed price
/// (docs/decisions.md, "Per-turn points on price tasks").
///
/// `accepted` is the accepted offer's terms from the mover's side (for an ACCEPT).
pub fn points_reward(
    scenario: &Scenario,
    role: Role,
    played: Option<&Action>,
    accepted: Option<&Terms>,
) -> f64 {
    let scaled = |terms: &Terms| {
        let rho = bargained_ratio(scenario, role, scenario.utility(role, terms));
        rho.clamp(0.0, 1.0) * 2.0 - 0.5
    };
    match played {
        Some(Action::Submit(terms)) => scaled(terms),
        Some(Action::Accept) => accepted.map_or(0.0, scaled),
        Some(Action::WalkAway) => -1.0,
        _ => 0.0,
    }
}

static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\$?\d[\d,]*(?:\.\d+)?").expect("a literal pattern"));
static POINTS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(\d+(?:\.\d+)?)\s*(?:points?|pts)\b").expect("a literal pattern")
});
static PERCENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(\d+(?:\.\d+)?)\s*%").expect("a literal pattern"));

/// Strategic talk, a heuristic in [0, 1]: the mean of the checks that apply to the turn —
///
/// 1. *names its priority*: the Talk names one of the seat's highest-valued items (items), or
///    its highest-weighted issue by key or label (issues); not checked on price tasks;
/// 2. *keeps its numbers private*: the Talk does not state the seat's private numbers — its
///    budget B or cost C (price, within 0.5), a per-unit value as "N points" (items), an issue
///    weight as "N%" (issues);
/// 3. *concedes what it values least*: in a SUBMIT, the seat keeps a smaller share of its
///    lowest-valued item than of its highest-valued one (items with unequal values only).
///
/// A turn without Talk scores 0.
pub fn strategic_talk(
    scenario: &Scenario,
    role: Role,
    talk: Option<&str>,
    played: Option<&Action>,
) -> f64 {
    let Some(talk) = talk.filter(|t| !t.trim().is_empty()) else {
        return 0.0;
    };
    let lower = talk.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut checks: Vec<bool> = Vec::new();
    match &scenario.game {
        Game::Price { buyer, seller, .. } => {
            let secret = if role == Role::Buyer {
                buyer.budget
            } else {
                seller.cost
            };
            let said = NUMBER.find_iter(talk).any(|m| {
                let digits: String = m
                    .as_str()
                    .chars()
                    .filter(|c| *c != '$' && *c != ',')
                    .collect();
                digits
                    .parse::<f64>()
                    .is_ok_and(|n| (n - secret).abs() < 0.5)
            });
            checks.push(!said);
        }
        Game::Items { items, .. } => {
            let Some(own) = scenario.item_values(role) else {
                return 0.0;
            };
            let values = &own.values;
            let (Some(&hi), Some(&lo)) = (values.iter().max(), values.iter().min()) else {
                return 0.0;
            };
            let named = items.iter().zip(values).any(|(item, v)| {
                let name = item.name.to_lowercase();
                *v == hi
                    && words
                        .iter()
                        .any(|w| *w == name || w.strip_suffix('s').is_some_and(|s| s == name))
            });
            checks.push(named);
            let said = POINTS.captures_iter(talk).any(|c| {
                c[1].parse::<f64>()
                    .is_ok_and(|n| values.iter().any(|v| (f64::from(*v) - n).abs() < 1e-9))
            });
            checks.push(!said);
            if let (Some(Action::Submit(Terms::Items(shares))), true) = (played, hi != lo) {
                let kept = |value: u32| {
                    items
                        .iter()
                        .zip(values)
                        .zip(shares)
                        .filter(|((_, v), _)| **v == value)
                        .map(|((item, _), x)| f64::from(*x) / f64::from(item.count.max(1)))
                        .fold(None, |acc: Option<f64>, k| {
                            Some(acc.map_or(k, |a| a.min(k)))
                        })
                };
                if let (Some(low), Some(high)) = (kept(lo), kept(hi)) {
                    checks.push(low < high);
                }
            }
        }
        Game::Issues { issues, .. } => {
            let Some(prefs) = scenario.issue_preferences(role) else {
                return 0.0;
            };
            let top = prefs
                .issues
                .iter()
                .map(|p| p.weight)
                .fold(f64::NEG_INFINITY, f64::max);
            let named = issues.iter().zip(&prefs.issues).any(|(spec, p)| {
                p.weight == top
                    && (lower.contains(&spec.key.to_lowercase())
                        || lower.contains(&spec.label.to_lowercase()))
            });
            checks.push(named);
            let said = PERCENT.captures_iter(talk).any(|c| {
                c[1].parse::<f64>().is_ok_and(|n| {
                    prefs
                        .issues
                        .iter()
                        .any(|p| p.weight > 0.0 && (p.weight * 100.0 - n).abs() < 0.5)
                })
            });
            checks.push(!said);
        }
    }
    if checks.is_empty() {
        return 0.0;
    }
    checks.iter().filter(|c| **c).count() as f64 / checks.len() as f64
}

/// The per-turn signals `config` uses, for every turn of an episode in order (each for the seat
/// that moved): `format`, `length`, `points`, `strategic` and `rule:NAME` for each rule that
/// matched. Empty maps under the terminal reward alone, and for the turns of a logged prefix
/// ([`Rules::is_logged_turn`](crate::game::Rules::is_logged_turn)): only the players' own turns
/// are scored (their offers still stand for the points of a later ACCEPT).
pub fn turn_signals(
    scenario: &Scenario,
    setup: &Setup,
    turns: &[Turn],
    config: &RewardConfig,
) -> Vec<BTreeMap<String, f64>> {
    if config.is_terminal_only() {
        return vec![BTreeMap::new(); turns.len()];
    }
    let uses = |c: Component| config.uses(c);
    let space = scenario.term_space();
    let mut standing: Option<Offer> = None;
    let mut out = Vec::with_capacity(turns.len());
    for (index, turn) in turns.iter().enumerate() {
        let played = turn.played.as_ref();
        if setup.rules.is_logged_turn(index) {
            if let Some(action) = played {
                standing = standing_after(standing, turn.seat, action);
            }
            out.push(BTreeMap::new());
            continue;
        }
        let role = setup.seats[turn.seat].role;
        let mut signals = BTreeMap::new();
        if uses(Component::Format) {
            signals.insert(Component::Format.name().to_string(), format_reward(turn));
        }
        if uses(Component::Length) {
            let length = length_reward(talk_words(turn), &config.length);
            signals.insert(Component::Length.name().to_string(), length);
        }
        if uses(Component::Points) {
            let accepted = match played {
                Some(Action::Accept) => standing.as_ref().map(|o| o.terms_for(turn.seat, space)),
                _ => None,
            };
            let points = points_reward(scenario, role, played, accepted.as_ref());
            signals.insert(Component::Points.name().to_string(), points);
        }
        if uses(Component::Strategic) {
            let s = strategic_talk(scenario, role, turn.parsed.talk.as_deref(), played);
            signals.insert(Component::Strategic.name().to_string(), s);
        }
        if uses(Component::Rules) {
            for (name, score) in rule_scores(&config.rules, turn, space) {
                signals.insert(format!("rule:{name}"), score);
            }
        }
        if let Some(action) = played {
            standing = standing_after(standing, turn.seat, action);
        }
        out.push(signals);
    }
    out
}

#[cfg(test)]
mod tests {
    //! Every signal worked by hand on the fixtures: CaSiNo with agent_1 valuing
    //! food/water/firewood 5/4/3 and agent_2 3/4/5 (each side's best 36); price L = 200,
    //! B = 180, C = 100; the job where the worker weighs salary 0.6 and company 0.2.

    use super::*;
    use crate::fixtures::{casino, job, learner_first_as, play, price, turn};
    use crate::game::Seat;

    const TOL: f64 = 1e-9;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < TOL
    }

    fn with(weights: &[Component]) -> RewardConfig {
        RewardConfig {
            weights: weights.iter().map(|c| (*c, 1.0)).collect(),
            ..RewardConfig::default()
        }
    }

    #[test]
    fn format_is_one_for_a_format_ok_turn_else_zero() {
        let s = casino();
        let mut e =
            crate::game::Episode::new(s.clone(), learner_first_as(&s, Role::Agent1)).unwrap();
        e.step("Talk: no thought\nAction: [REJECT_DEAL]").unwrap();
        e.step(turn("Fine.", "[REJECT_DEAL]").as_str()).unwrap();
        let signals = turn_signals(&s, e.setup(), e.turns(), &with(&[Component::Format]));
        assert_eq!(signals[0]["format"], 0.0);
        assert_eq!(signals[1]["format"], 1.0);
    }

    #[test]
    fn length_is_linear_inside_the_bounds_and_penalised_outside() {
        let c = LengthConfig {
            min: 5,
            max: 25,
            outside: -1.0,
        };
        // At min: 1; at max: 0; 10 words: 1 − 5/20 = 0.75; 15: 0.5.
        assert!(close(length_reward(5, &c), 1.0));
        assert!(close(length_reward(25, &c), 0.0));
        assert!(close(length_reward(10, &c), 0.75));
        assert!(close(length_reward(15, &c), 0.5));
        // 4 words (too short) and 26 (too long): the penalty; another penalty when set.
        assert!(close(length_reward(4, &c), -1.0));
        assert!(close(length_reward(26, &c), -1.0));
        assert!(close(
            length_reward(0, &LengthConfig { outside: -0.3, ..c }),
            -0.3
        ));
    }

    #[test]
    fn points_on_items_for_submit_accept_walk_away_and_others() {
        // Learner is agent_1 (5/4/3). It submits food:3 water:2 firewood:0 = 15 + 8 = 23 of 36
        // → 2·23/36 − 0.5 = 0.77778. Agent_2 (3/4/5) accepts, getting 0/1/3 = 4 + 15 = 19
        // → 2·19/36 − 0.5 = 0.55556.
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn("I need food.", "[SUBMIT_DEAL] food:3 water:2 firewood:0"),
                turn("OK.", "[ACCEPT_DEAL]"),
            ],
        );
        let signals = turn_signals(&s, e.setup(), e.turns(), &with(&[Component::Points]));
        assert!(close(signals[0]["points"], 2.0 * 23.0 / 36.0 - 0.5));
        assert!(close(signals[1]["points"], 2.0 * 19.0 / 36.0 - 0.5));
        // Walking away: −1; REJECT: 0; a turn that could not be used: 0.
        assert_eq!(
            points_reward(&s, Role::Agent1, Some(&Action::WalkAway), None),
            -1.0
        );
        assert_eq!(
            points_reward(&s, Role::Agent1, Some(&Action::Reject), None),
            0.0
        );
        assert_eq!(points_reward(&s, Role::Agent1, None, None), 0.0);
        // Everything for oneself: 36/36 → 1.5; nothing: −0.5.
        let all = Action::Submit(Terms::Items(vec![3, 3, 3]));
        assert!(close(
            points_reward(&s, Role::Agent1, Some(&all), None),
            1.5
        ));
        let none = Action::Submit(Terms::Items(vec![0, 0, 0]));
        assert!(close(
            points_reward(&s, Role::Agent2, Some(&none), None),
            -0.5
        ));
    }

    #[test]
    fn points_on_price_and_issues() {
        // Price B = 180, C = 100, spread 80. The buyer submits 120: ρ = 60/80 = 0.75 → 1.0.
        // The seller accepts: ρ = 20/80 = 0.25 → 0.0.
        let s = price();
        let e = play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &[
                turn("120?", "[SUBMIT_DEAL] price:120"),
                turn("Deal.", "[ACCEPT_DEAL]"),
            ],
        );
        let signals = turn_signals(&s, e.setup(), e.turns(), &with(&[Component::Points]));
        assert!(close(signals[0]["points"], 1.0));
        assert!(close(signals[1]["points"], 0.0));
        // A price above the budget (200: ρ = −20/80) is clipped to 0 → −0.5; below the cost
        // for the seller likewise.
        let high = Action::Submit(Terms::Price(20000));
        assert!(close(
            points_reward(&s, Role::Buyer, Some(&high), None),
            -0.5
        ));
        // Job: the worker asks salary 35 at Google: 100·(0.6·0.5 + 0.2·1) = 50 of 80 → ρ
        // 0.625 → 0.75. The recruiter accepts: 100·(0.5·15/30 + 0.5·0) = 25 of 100 → ρ 0.25
        // → 0.0.
        let s = job();
        let e = play(
            &s,
            learner_first_as(&s, Role::Worker),
            &[
                turn(
                    "Fair?",
                    "[SUBMIT_DEAL] salary:35 company:Google position:Engineer holiday:2",
                ),
                turn("Agreed.", "[ACCEPT_DEAL]"),
            ],
        );
        let signals = turn_signals(&s, e.setup(), e.turns(), &with(&[Component::Points]));
        assert!(close(signals[0]["points"], 0.75));
        assert!(close(signals[1]["points"], 0.0));
        assert_eq!(
            points_reward(&s, Role::Recruiter, Some(&Action::WalkAway), None),
            -1.0
        );
    }

    #[test]
    fn strategic_talk_rewards_naming_priorities_keeping_secrets_and_conceding_low_value() {
        let s = casino();
        let submit = |x: Vec<u32>| Action::Submit(Terms::Items(x));
        // Agent_1 (food 5 high, firewood 3 low): names food, states no points, keeps all food
        // and gives all firewood → 3 of 3.
        let good = strategic_talk(
            &s,
            Role::Agent1,
            Some("We really need food for the kids."),
            Some(&submit(vec![3, 2, 0])),
        );
        assert!(close(good, 1.0));
        // Names no food, says "3 points", keeps all firewood and no food → 0 of 3.
        let bad = strategic_talk(
            &s,
            Role::Agent1,
            Some("Firewood is worth 3 points to me."),
            Some(&submit(vec![0, 2, 3])),
        );
        assert!(close(bad, 0.0));
        // Names "foods" (plural counts) but reveals "5 points"; a REJECT has no concession to
        // check → 1 of 2.
        let half = strategic_talk(
            &s,
            Role::Agent1,
            Some("Foods give me 5 pts each."),
            Some(&Action::Reject),
        );
        assert!(close(half, 0.5));
        // No talk: 0.
        assert_eq!(strategic_talk(&s, Role::Agent1, None, None), 0.0);
        // Price: only the secret is checked. The buyer's budget is 180.
        let s = price();
        assert!(close(
            strategic_talk(&s, Role::Buyer, Some("My budget is $180."), None),
            0.0
        ));
        assert!(close(
            strategic_talk(&s, Role::Buyer, Some("How about $1,200 or $120?"), None),
            1.0
        ));
        assert!(close(
            strategic_talk(&s, Role::Seller, Some("It cost me 100."), None),
            0.0
        ));
        // Job worker: salary (0.6) is the top issue; "60%" states its weight → 1 of 2.
        let s = job();
        let said = strategic_talk(&s, Role::Worker, Some("Salary is 60% of it for me."), None);
        assert!(close(said, 0.5));
        let kept = strategic_talk(&s, Role::Worker, Some("I hope for a better salary."), None);
        assert!(close(kept, 1.0));
        let vague = strategic_talk(&s, Role::Worker, Some("Google sounds nice."), None);
        assert!(close(vague, 0.5));
    }

    #[test]
    fn only_the_used_signals_are_given_and_none_under_the_terminal_reward() {
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[turn(
                "Food please.",
                "[SUBMIT_DEAL] food:3 water:2 firewood:0",
            )],
        );
        let none = turn_signals(&s, e.setup(), e.turns(), &RewardConfig::default());
        assert!(none[0].is_empty());
        let some = turn_signals(
            &s,
            e.setup(),
            e.turns(),
            &with(&[Component::Terminal, Component::Format, Component::Length]),
        );
        assert_eq!(
            some[0].keys().collect::<Vec<_>>(),
            ["format", "length"],
            "{some:?}"
        );
        // "Food please." is 2 words, under the default min of 5 → −1.
        assert_eq!(some[0]["length"], -1.0);
        assert_eq!(e.turns()[0].seat, Seat::Learner);
    }
}
