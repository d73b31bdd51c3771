//! A seat's total reward from its named components: the weighted sum, or the reward
//! enhancement; the one function that gives an episode its per-turn signals, per-seat
//! components and totals ([`episode_rewards`]); and the one that makes parts into totals and
//! turns into their own rewards ([`combine_parts`]), which a record calls again once the judge
//! and the reward model have answered.

use std::collections::BTreeMap;

use crate::game::{Outcome, PerSeat, Seat, Setup, Turn};
use crate::scenario::{bargained_ratio, Scenario};

use super::config::{Combine, Component, RewardConfig, TurnReward};
use super::judge::zero_after_negative_history;
use super::parts::Parts;
use super::terminal::terminal_rewards;
use super::turn::turn_signals;

/// Reward enhancement (REPO): R = R_m · (1 + sign(R_m) · clip(E, −n, n)/n). The auxiliary
/// score E scales the primary reward R_m instead of being added to it: E > 0 makes a positive
/// R_m larger and a negative one smaller in size; E < 0 the opposite; R_m = 0 stays 0. With
/// |E| ≥ n the scale is 2 or 0.
pub(crate) fn enhance(primary: f64, auxiliary: f64, n: f64) -> f64 {
    let sign = if primary > 0.0 {
        1.0
    } else if primary < 0.0 {
        -1.0
    } else {
        0.0
    };
    primary * (1.0 + sign * auxiliary.clamp(-n, n) / n)
}

/// A seat's total reward from its components (by name; a missing one counts 0): Σ weight ·
/// component for `sum`; for `enhance`, `enhance` of the primary with E = Σ weight · auxiliary.
pub fn total(parts: &Parts, config: &RewardConfig) -> f64 {
    let part = |c: Component| parts.get(c).unwrap_or(0.0);
    match config.combine {
        // Folded from +0.0: `Sum` for f64 starts at −0.0, which a record would show as "-0.0".
        Combine::Sum => config
            .components()
            .into_iter()
            .fold(0.0, |acc, c| acc + config.weight(c) * part(c)),
        Combine::Enhance => {
            let e = &config.enhance;
            let aux = e
                .auxiliary
                .iter()
                .fold(0.0, |acc, c| acc + config.weight(*c) * part(*c));
            enhance(part(e.primary), aux, e.n)
        }
    }
}

/// What an episode's rewards are under a config, from the record alone (the judge's and the
/// reward model's components are added by `run` afterwards).
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeRewards {
    /// Per turn, in order: the signals of the seat that moved.
    pub turns: Vec<BTreeMap<String, f64>>,
    /// Per seat: each pure component's episode value, unweighted. Empty under the terminal
    /// reward alone.
    pub parts: PerSeat<Parts>,
    /// Per seat: the total.
    pub total: PerSeat<f64>,
    /// Per turn, in order, under `[rewards] turn_reward = "every_turn" | "last_turn"`: the
    /// turn's own reward for the seat that moved (`None` for a logged prefix's turns). Empty
    /// otherwise.
    pub turn_rewards: Vec<Option<f64>>,
}

/// The pure rewards of an ended episode. A seat's `format`, `length`, `points` and `strategic`
/// are the means of its turns' signals (0 without turns), `rules` the sum of its turns' rule
/// scores; `terminal` is `terminal_rewards`. Under the terminal reward alone the total is the
/// terminal reward itself and nothing else is given.
pub fn episode_rewards(
    scenario: &Scenario,
    setup: &Setup,
    turns: &[impl AsRef<Turn>],
    outcome: &Outcome,
    config: &RewardConfig,
) -> EpisodeRewards {
    let no_deal_rho = PerSeat::from_fn(|seat| {
        bargained_ratio(
            scenario,
            setup.seats[seat].role,
            setup.no_deal_value_of(seat),
        )
    });
    let roles = setup.seats.map(|_, seat| seat.role);
    let violated = PerSeat::from_fn(|seat| broke_format(setup, turns, seat));
    let terminal = terminal_rewards(scenario, outcome, config, &roles, &no_deal_rho, &violated);
    let signals = turn_signals(scenario, setup, turns, config);
    if config.is_terminal_only() {
        return EpisodeRewards {
            turns: signals,
            parts: PerSeat::default(),
            total: terminal,
            turn_rewards: Vec::new(),
        };
    }
    let mut parts = PerSeat::from_fn(|seat| {
        let mut parts = Parts::default();
        if config.uses(Component::Terminal) {
            parts.insert(Component::Terminal, terminal[seat]);
        }
        if config.uses(Component::PriceGap) {
            parts.insert(
                Component::PriceGap,
                super::ina::price_gap(setup, turns, outcome, seat, config.ina.version),
            );
        }
        if config.uses(Component::NegotiationStrategy) {
            parts.insert(
                Component::NegotiationStrategy,
                super::ina::negotiation_strategy(
                    scenario,
                    setup,
                    turns,
                    outcome,
                    seat,
                    config.ina.version,
                ),
            );
        }
        parts
    });
    let refs: Vec<&BTreeMap<String, f64>> = signals.iter().collect();
    let combined = combine_parts(setup, turns, &refs, &mut parts, config);
    EpisodeRewards {
        turns: signals,
        parts,
        total: combined.total,
        turn_rewards: combined.turn_rewards,
    }
}

/// Whether `seat` played a turn that does not count as format-ok
/// ([`Parsed::counts_as_format_ok`](crate::protocol::Parsed::counts_as_format_ok)): what
/// `[rewards] psi_on = "violation"` charges ψ for. A logged prefix's turns were nobody's play.
fn broke_format(setup: &Setup, turns: &[impl AsRef<Turn>], seat: Seat) -> bool {
    turns.iter().map(AsRef::as_ref).enumerate().any(|(i, t)| {
        t.seat == seat && !setup.rules.is_logged_turn(i) && !t.parsed.counts_as_format_ok()
    })
}

/// What [`combine_parts`] makes of an episode's parts and per-turn signals.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Combined {
    /// Per seat: the total ([`total`] of its parts).
    pub total: PerSeat<f64>,
    /// Per turn, under `turn_reward = "every_turn" | "last_turn"` (else empty): the reward of
    /// the turn for the seat that moved, `None` for a logged prefix's turn.
    pub turn_rewards: Vec<Option<f64>>,
}

/// The one place a seat's parts become its total and each turn its reward. `parts` comes in
/// with each seat's episode-level parts (`terminal`; a per-episode `judge` and `reward_model`
/// once they were called); the parts of the per-turn components
/// ([`RewardConfig::is_per_turn`]) are (re)made here from `signals` (the turns' own, in
/// order): the mean of the seat's turns that have the signal (0 when none has), `rules` the
/// sum of its turns' `rule:NAME` scores, and a per-turn `judge` or per-response
/// `reward_model` the mean of its scored turns — absent when no turn was scored, as a failed
/// episode call is absent; `intent_consistency` (INA's R1) likewise, absent for a seat none of
/// whose turns carries an act label. Under `[rewards.judge] history = "zero_if_negative"` a
/// turn's judge value is [`zero_after_negative_history`]'s. A logged prefix's turns have no
/// signals and count for nothing.
///
/// A turn's reward is [`total`] of the turn's own parts: each per-turn component's value on
/// that turn (a missing signal counts 0), and each episode-level part on every turn of the
/// seat (`every_turn`) or on its last turn only (`last_turn`) — see
/// [`TurnReward`](super::TurnReward).
pub(crate) fn combine_parts(
    setup: &Setup,
    turns: &[impl AsRef<Turn>],
    signals: &[&BTreeMap<String, f64>],
    parts: &mut PerSeat<Parts>,
    config: &RewardConfig,
) -> Combined {
    let index = |seat: Seat| usize::from(seat == Seat::Opponent);
    let movers: Vec<usize> = turns.iter().map(|t| index(t.as_ref().seat)).collect();
    let scored: Vec<bool> = (0..turns.len())
        .map(|i| !setup.rules.is_logged_turn(i))
        .collect();
    let mut by_index = [
        std::mem::take(&mut parts.learner),
        std::mem::take(&mut parts.opponent),
    ];
    let (total, turn_rewards) =
        combine_seat_parts(&movers, &scored, signals, &mut by_index, config);
    let [learner, opponent] = by_index;
    *parts = PerSeat { learner, opponent };
    Combined {
        total: PerSeat::new(total[0], total[1]),
        turn_rewards,
    }
}

/// [`combine_parts`] over any number of seats, named by index: the rule itself, which a
/// two-party episode ([`combine_parts`]) and an n-party table
/// ([`TableRecord`](crate::record::TableRecord)) both come to. `movers[i]` is the seat that
/// played turn `i`, `scored[i]` whether the players played it (not a logged prefix's turn),
/// `parts[seat]` each seat's parts; gives each seat's total, and each turn's reward where
/// `turn_reward` asks (else empty).
pub(crate) fn combine_seat_parts(
    movers: &[usize],
    scored: &[bool],
    signals: &[&BTreeMap<String, f64>],
    parts: &mut [Parts],
    config: &RewardConfig,
) -> (Vec<f64>, Vec<Option<f64>>) {
    let components = config.components();
    let judge_values: Option<Vec<Option<f64>>> =
        config.judge_zeroes_negative_history().then(|| {
            let verdicts: Vec<(usize, Option<f64>)> = movers
                .iter()
                .zip(signals)
                .map(|(seat, s)| (*seat, turn_value(Component::Judge, s)))
                .collect();
            zero_after_negative_history(&verdicts)
        });
    let value_at = |c: Component, i: usize| match (&judge_values, c) {
        (Some(judged), Component::Judge) => judged[i],
        _ => turn_value(c, signals[i]),
    };
    for (seat, seat_parts) in parts.iter_mut().enumerate() {
        let mine: Vec<usize> = (0..movers.len()).filter(|i| movers[*i] == seat).collect();
        for &c in components.iter().filter(|c| config.is_per_turn(**c)) {
            let values: Vec<f64> = mine.iter().filter_map(|i| value_at(c, *i)).collect();
            let value = match c {
                Component::Rules => Some(values.iter().fold(0.0, |acc, v| acc + v)),
                Component::Judge | Component::RewardModel if values.is_empty() => None,
                // INA's R1 scores labelled turns only: a seat that labelled none has no R1
                // (absent from its parts, as an unjudged seat's judge is), never a silent 0.
                Component::IntentConsistency if values.is_empty() => None,
                _ if values.is_empty() => Some(0.0),
                _ => Some(values.iter().sum::<f64>() / values.len() as f64),
            };
            match value {
                Some(v) => seat_parts.insert(c, v),
                None => seat_parts.remove(c),
            };
        }
    }
    let totals: Vec<f64> = parts.iter().map(|p| total(p, config)).collect();
    let every = match config.turn_reward {
        TurnReward::Episode => return (totals, Vec::new()),
        TurnReward::EveryTurn => true,
        TurnReward::LastTurn => false,
    };
    let last: Vec<Option<usize>> = (0..parts.len())
        .map(|seat| {
            (0..movers.len())
                .rev()
                .find(|i| movers[*i] == seat && scored[*i])
        })
        .collect();
    let turn_rewards = movers
        .iter()
        .enumerate()
        .map(|(i, &seat)| {
            if !scored[i] {
                return None;
            }
            let episode_parts = every || last[seat] == Some(i);
            let mut own = Parts::default();
            for &c in &components {
                let value = if config.is_per_turn(c) {
                    value_at(c, i)
                } else if episode_parts {
                    parts[seat].get(c)
                } else {
                    None
                };
                if let Some(v) = value {
                    own.insert(c, v);
                }
            }
            Some(total(&own, config))
        })
        .collect();
    (totals, turn_rewards)
}

/// A per-turn component's value on one turn, from its signals: the sum of its `rule:NAME`
/// scores for `rules` (0 when none matched), else the signal by name, if the turn has it.
fn turn_value(c: Component, signals: &BTreeMap<String, f64>) -> Option<f64> {
    match c {
        Component::Rules if signals.is_empty() => None,
        Component::Rules => Some(
            signals
                .iter()
                .filter(|(k, _)| k.starts_with("rule:"))
                .fold(0.0, |acc, (_, v)| acc + v),
        ),
        c => signals.get(c.name()).copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{casino, learner_first_as, play, turn};
    use crate::reward::config::RuleTarget;
    use crate::reward::{EnhanceConfig, RuleConfig};
    use crate::scenario::Role;
    use crate::scenario::Scenario;

    const TOL: f64 = 1e-9;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < TOL
    }

    #[test]
    fn enhancement_in_every_sign_case() {
        // n = 1.
        // R_m > 0, E > 0: 0.5 · (1 + 0.4) = 0.7.
        assert!(close(enhance(0.5, 0.4, 1.0), 0.7));
        // R_m > 0, E < 0: 0.5 · (1 − 0.4) = 0.3.
        assert!(close(enhance(0.5, -0.4, 1.0), 0.3));
        // R_m < 0, E > 0: −0.5 · (1 − 0.4) = −0.3 (good behaviour shrinks the penalty).
        assert!(close(enhance(-0.5, 0.4, 1.0), -0.3));
        // R_m < 0, E < 0: −0.5 · (1 + 0.4) = −0.7.
        assert!(close(enhance(-0.5, -0.4, 1.0), -0.7));
        // R_m = 0: 0 whatever E.
        assert_eq!(enhance(0.0, 0.9, 1.0), 0.0);
        assert_eq!(enhance(0.0, -0.9, 1.0), 0.0);
        // Clipped at ±n: n = 2, E = 5 → clip 2 → 0.5 · (1 + 1) = 1; E = −3 → 0.5 · 0 = 0;
        // R_m = −0.5, E = 5 → −0.5 · 0 = 0; E = −5 → −1.
        assert!(close(enhance(0.5, 5.0, 2.0), 1.0));
        assert!(close(enhance(0.5, -3.0, 2.0), 0.0));
        assert!(close(enhance(-0.5, 5.0, 2.0), 0.0));
        assert!(close(enhance(-0.5, -5.0, 2.0), -1.0));
        // Inside the clip with n = 2: 0.5 · (1 + 1/2) = 0.75.
        assert!(close(enhance(0.5, 1.0, 2.0), 0.75));
    }

    fn parts(pairs: &[(&str, f64)]) -> Parts {
        pairs
            .iter()
            .map(|(k, v)| (Component::from_name(k).expect("a component"), *v))
            .collect()
    }

    #[test]
    fn the_weighted_sum_counts_the_named_components_only() {
        let config = RewardConfig {
            weights: [
                (Component::Terminal, 1.0),
                (Component::Format, 0.1),
                (Component::Judge, 0.5),
            ]
            .into(),
            ..RewardConfig::default()
        };
        // 1 · 0.75 + 0.1 · 1 + 0.5 · 0.4 = 1.05; `points` is not weighted, so ignored; a
        // missing judge part counts 0.
        let p = parts(&[
            ("terminal", 0.75),
            ("format", 1.0),
            ("judge", 0.4),
            ("points", 9.0),
        ]);
        assert!(close(total(&p, &config), 1.05));
        let p = parts(&[("terminal", 0.75), ("format", 1.0)]);
        assert!(close(total(&p, &config), 0.85));
        // The default: terminal alone.
        assert!(close(
            total(&parts(&[("terminal", -0.5)]), &RewardConfig::default()),
            -0.5
        ));
    }

    #[test]
    fn enhance_combines_the_primary_with_weighted_auxiliaries() {
        let config = RewardConfig {
            combine: Combine::Enhance,
            weights: [(Component::Judge, 0.5)].into(),
            enhance: EnhanceConfig {
                primary: Component::RewardModel,
                auxiliary: vec![Component::Rules, Component::Judge],
                n: 1.0,
            },
            ..RewardConfig::default()
        };
        // E = 1 · (−0.25) + 0.5 · 0.9 = 0.2; R = 0.6 · 1.2 = 0.72.
        let p = parts(&[("reward_model", 0.6), ("rules", -0.25), ("judge", 0.9)]);
        assert!(close(total(&p, &config), 0.72));
        // Without the reward model (it failed): R_m = 0 → 0.
        let p = parts(&[("rules", -0.25), ("judge", 0.9)]);
        assert_eq!(total(&p, &config), 0.0);
    }

    #[test]
    fn an_episode_gets_per_turn_signals_per_seat_parts_and_totals() {
        // Agent_1 (learner, 5/4/3) submits 3/2/0 with "We need food badly." (4 words), then
        // agent_2 accepts with "Deal, thank you so much!" (5 words). A rule −0.5 on talk
        // mentioning food.
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn(
                    "We need food badly.",
                    "[SUBMIT_DEAL] food:3 water:2 firewood:0",
                ),
                turn("Deal, thank you so much!", "[ACCEPT_DEAL]"),
            ],
        );
        let config = RewardConfig {
            weights: [
                (Component::Terminal, 1.0),
                (Component::Format, 0.5),
                (Component::Length, 0.5),
                (Component::Points, 1.0),
                (Component::Rules, 1.0),
            ]
            .into(),
            length: crate::reward::LengthConfig {
                min: 5,
                max: 15,
                outside: -1.0,
                ..Default::default()
            },
            rules: vec![RuleConfig {
                name: "food".into(),
                pattern: "(?i)food".into(),
                target: RuleTarget::Talk,
                score: -0.5,
            }],
            ..RewardConfig::default()
        };
        let outcome = e.outcome().unwrap().clone();
        let r = episode_rewards(&s, e.setup(), e.turns(), &outcome, &config);
        // Turn 1 (learner): format 1, length −1 (4 < 5), points 2·23/36 − 0.5, rule −0.5.
        assert_eq!(r.turns[0]["format"], 1.0);
        assert_eq!(r.turns[0]["length"], -1.0);
        assert!(close(r.turns[0]["points"], 2.0 * 23.0 / 36.0 - 0.5));
        assert_eq!(r.turns[0]["rule:food"], -0.5);
        // Turn 2 (opponent): length 1 (5 = min), points 2·19/36 − 0.5, no rule.
        assert_eq!(r.turns[1]["length"], 1.0);
        assert!(!r.turns[1].contains_key("rule:food"));
        // Learner: terminal ρ = 23/36; total 23/36 + 0.5 − 0.5 + (46/36 − 0.5) − 0.5.
        let l = &r.parts.learner;
        assert!(close(l[Component::Terminal], 23.0 / 36.0));
        assert_eq!(l[Component::Rules], -0.5);
        // format 0.5 · 1, length 0.5 · (−1), points 1 · (46/36 − 0.5), rules −0.5.
        let want = 23.0 / 36.0 + 0.5 - 0.5 + (46.0 / 36.0 - 0.5) - 0.5;
        assert!(
            close(r.total.learner, want),
            "{} vs {want}",
            r.total.learner
        );
        // Opponent: 19/36 + 0.5 + 0.5 + (38/36 − 0.5) + 0.
        let want = 19.0 / 36.0 + 0.5 + 0.5 + (38.0 / 36.0 - 0.5);
        assert!(close(r.total.opponent, want));
        assert_eq!(r.parts.opponent[Component::Rules], 0.0);
        assert!(
            r.parts.opponent[Component::Rules].is_sign_positive(),
            "no rule matched: 0, not -0"
        );
        // The terminal reward alone: no parts, no signals, the total is the terminal reward.
        let plain = episode_rewards(&s, e.setup(), e.turns(), &outcome, &RewardConfig::default());
        assert!(plain.parts.learner.is_empty() && plain.turns[0].is_empty());
        assert_eq!(
            plain.total,
            terminal_rewards(
                &s,
                &outcome,
                &RewardConfig::default(),
                &e.setup().seats.map(|_, seat| seat.role),
                &PerSeat::default(),
                &PerSeat::default()
            )
        );
    }

    #[test]
    fn a_batna_seat_that_broke_the_layout_pays_psi_though_its_move_was_read() {
        // BATNA paper §2.1: "format violations receive −ψ" (ψ = 1.0, App. A). Agent_1 (the
        // learner, 5/4/3) writes Talk and Action with no Thought: readable, so the engine plays
        // its 3/2/0, which agent_2 (3/4/5) accepts. Learner u = 15 + 8 + 0 = 23 → ρ = 23/36
        // ≈ 0.639 ≥ τ = 0.4; agent_2 gets 0/1/3 → 0 + 4 + 15 = 19 → 19/36. Under the paper's
        // reading the learner's reward is −ψ = −1, not 23/36; the opponent keeps 19/36.
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                "Talk: We need food badly.\nAction: [SUBMIT_DEAL] food:3 water:2 firewood:0"
                    .to_string(),
                turn("Deal, thank you so much!", "[ACCEPT_DEAL]"),
            ],
        );
        let outcome = e.outcome().unwrap().clone();
        assert_eq!(outcome.kind, crate::game::OutcomeKind::Deal);
        let batna = RewardConfig {
            kind: crate::reward::RewardKind::Threshold,
            psi_on: crate::reward::PsiOn::Violation,
            ..RewardConfig::default()
        };
        let r = episode_rewards(&s, e.setup(), e.turns(), &outcome, &batna);
        assert!(close(r.total.learner, -1.0), "{:?}", r.total);
        assert!(close(r.total.opponent, 19.0 / 36.0), "{:?}", r.total);
        // Only ψ for a forfeit (the default): the deal's ρ.
        let forfeit_only = RewardConfig {
            psi_on: crate::reward::PsiOn::Forfeit,
            ..batna.clone()
        };
        let r = episode_rewards(&s, e.setup(), e.turns(), &outcome, &forfeit_only);
        assert!(close(r.total.learner, 23.0 / 36.0), "{:?}", r.total);

        // An illegal ACCEPT (nothing to accept yet) is a format failure too, corrected and
        // retried (format_retries = 1), then the same offer: −ψ again. The format reward and the
        // format-ok share count it alike (one rule): turns 0 and 1 of the learner's two →
        // format 0, 1 → mean 0.5, and format_ok_rate 1/2.
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn("Deal!", "[ACCEPT_DEAL]"),
                turn(
                    "We need food badly.",
                    "[SUBMIT_DEAL] food:3 water:2 firewood:0",
                ),
                turn("Deal, thank you so much!", "[ACCEPT_DEAL]"),
            ],
        );
        let outcome = e.outcome().unwrap().clone();
        let with_format = RewardConfig {
            weights: [(Component::Terminal, 1.0), (Component::Format, 1.0)].into(),
            ..batna.clone()
        };
        let r = episode_rewards(&s, e.setup(), e.turns(), &outcome, &with_format);
        assert!(close(r.parts.learner[Component::Terminal], -1.0));
        assert!(close(r.parts.learner[Component::Format], 0.5));
        let metrics = crate::score::episode_metrics(
            &s,
            e.setup(),
            e.turns(),
            outcome.kind,
            None,
            &outcome.utility,
        );
        assert!(close(metrics.seats.learner.format_ok_rate, 0.5));
    }

    #[test]
    fn repo_clip_n_100_with_a_deducting_judge() {
        // REPO §4: E = clip(E_judge + E_func, −n, n), R = R_m · (1 ± E/n), n = 100. Its judge
        // deducts 5, 20, 30 per fault (its rubric); a reply with a 5- and a 20-point fault
        // scores −25, and one rule costs −20: E = −45.
        // R_m = 0.6 > 0, E < 0: dampened, 0.6 · (1 − 45/100) = 0.33.
        assert!(close(enhance(0.6, -45.0, 100.0), 0.33));
        // R_m = −0.4 < 0, E < 0: the penalty amplified, −0.4 · (1 + 0.45) = −0.58.
        assert!(close(enhance(-0.4, -45.0, 100.0), -0.58));
        // Faults past the clip: E = −130 → −100, 0.6 · 0 = 0; a clean reply (E = 0) keeps R_m.
        assert!(close(enhance(0.6, -130.0, 100.0), 0.0));
        assert!(close(enhance(0.6, 0.0, 100.0), 0.6));
        // The same through a config: n = 100 is accepted, the judge per turn in [−100, 0].
        let config: RewardConfig = toml::from_str(
            "combine = \"enhance\"\nturn_reward = \"every_turn\"\n\
             [enhance]\nprimary = \"reward_model\"\nauxiliary = [\"judge\", \"rules\"]\nn = 100.0\n\
             [judge]\nendpoint = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\nmode = \"turn\"\n\
             range = [-100.0, 0.0]\n\
             [reward_model]\nurl = \"http://127.0.0.1:1/reward\"\n\
             [[rules]]\nname = \"work_order\"\npattern = \"(?i)work.order\"\ntarget = \"talk\"\n\
             score = -20.0",
        )
        .unwrap();
        config.validate().unwrap();
        assert_eq!(config.enhance.n, 100.0);
        let p = parts(&[("reward_model", 0.6), ("judge", -25.0), ("rules", -20.0)]);
        assert!(close(total(&p, &config), 0.33));
    }

    /// Agent_1 (learner, 5/4/3) submits 3/2/0, agent_2 (3/4/5) rejects, the learner submits
    /// 2/2/0, agent_2 accepts: the learner keeps 10 + 8 = 18 of 36, agent_2 gets 1/1/3 =
    /// 3 + 4 + 15 = 22.
    fn four_turns() -> (std::sync::Arc<Scenario>, crate::game::Episode) {
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn(
                    "We need food badly.",
                    "[SUBMIT_DEAL] food:3 water:2 firewood:0",
                ),
                turn("No, we need firewood.", "[REJECT_DEAL]"),
                turn(
                    "Two food then, you keep the firewood.",
                    "[SUBMIT_DEAL] food:2 water:2 firewood:0",
                ),
                turn("Deal, thank you so much!", "[ACCEPT_DEAL]"),
            ],
        );
        (s, e)
    }

    #[test]
    fn each_turn_gets_its_own_reward_with_the_episode_parts_on_every_or_the_last_turn() {
        let (s, e) = four_turns();
        let outcome = e.outcome().unwrap().clone();
        let weights = [
            (Component::Terminal, 1.0),
            (Component::Format, 0.5),
            (Component::Points, 1.0),
        ];
        let config = |turn_reward| RewardConfig {
            weights: weights.into(),
            turn_reward,
            ..RewardConfig::default()
        };
        // Points per turn: learner 2·23/36 − 0.5 and 2·18/36 − 0.5 = 0.5; agent_2's REJECT
        // 0, its ACCEPT 2·22/36 − 0.5. Terminal ρ: 18/36 and 22/36. Every turn format-ok.
        let (p0, p3) = (46.0 / 36.0 - 0.5, 44.0 / 36.0 - 0.5);
        let (t_l, t_o) = (0.5, 22.0 / 36.0);
        // every_turn: 0.5·format + points + terminal on each row.
        let every = episode_rewards(
            &s,
            e.setup(),
            e.turns(),
            &outcome,
            &config(TurnReward::EveryTurn),
        );
        let want = [
            0.5 + p0 + t_l,
            0.5 + 0.0 + t_o,
            0.5 + 0.5 + t_l,
            0.5 + p3 + t_o,
        ];
        for (i, (got, want)) in every.turn_rewards.iter().zip(want).enumerate() {
            assert!(close(got.unwrap(), want), "turn {i}: {got:?} vs {want}");
        }
        assert_ne!(
            every.turn_rewards[0], every.turn_rewards[2],
            "the learner's rows differ"
        );
        // last_turn: the terminal part on each seat's last turn only.
        let last = episode_rewards(
            &s,
            e.setup(),
            e.turns(),
            &outcome,
            &config(TurnReward::LastTurn),
        );
        let want = [0.5 + p0, 0.5, 0.5 + 0.5 + t_l, 0.5 + p3 + t_o];
        for (i, (got, want)) in last.turn_rewards.iter().zip(want).enumerate() {
            assert!(close(got.unwrap(), want), "turn {i}: {got:?} vs {want}");
        }
        // The episode totals stay as they were, whatever the rows get: terminal + 0.5·mean
        // format + mean points; and the default stores no per-turn reward.
        let episode = episode_rewards(
            &s,
            e.setup(),
            e.turns(),
            &outcome,
            &config(TurnReward::Episode),
        );
        assert!(episode.turn_rewards.is_empty());
        for r in [&every, &last] {
            assert_eq!(r.total, episode.total);
            assert_eq!(r.parts, episode.parts);
        }
        assert!(close(episode.total.learner, t_l + 0.5 + (p0 + 0.5) / 2.0));
    }

    #[test]
    fn under_enhance_each_turn_scales_the_primary_by_its_own_auxiliaries() {
        // Primary: terminal (the episode's, on every turn); E = 0.1·format + 0.5·points of
        // the turn, n = 1. Learner (terminal 0.5): turn 0, E = 0.1 + 0.5·(46/36 − 0.5) →
        // 0.5·(1 + E); turn 2, E = 0.1 + 0.25 = 0.35 → 0.675.
        let (s, e) = four_turns();
        let outcome = e.outcome().unwrap().clone();
        let config = RewardConfig {
            combine: Combine::Enhance,
            weights: [(Component::Format, 0.1), (Component::Points, 0.5)].into(),
            enhance: EnhanceConfig {
                primary: Component::Terminal,
                auxiliary: vec![Component::Format, Component::Points],
                n: 1.0,
            },
            turn_reward: TurnReward::EveryTurn,
            ..RewardConfig::default()
        };
        config.validate().unwrap();
        let r = episode_rewards(&s, e.setup(), e.turns(), &outcome, &config);
        let e0 = 0.1 + 0.5 * (46.0 / 36.0 - 0.5);
        assert!(close(r.turn_rewards[0].unwrap(), 0.5 * (1.0 + e0)));
        assert!(close(r.turn_rewards[2].unwrap(), 0.675));
        // last_turn would leave the primary off every turn but the last: refused.
        let last = RewardConfig {
            turn_reward: TurnReward::LastTurn,
            ..config
        };
        assert!(last.validate().unwrap_err().contains("last_turn"));
    }

    /// REPO's configuration (the `repo` preset's rewards) with a judge and a reward model at
    /// made-up addresses and one regex rule; `n` left to its default.
    fn repo_config(history: &str) -> RewardConfig {
        let config: RewardConfig = toml::from_str(&format!(
            "combine = \"enhance\"\nturn_reward = \"every_turn\"\n\
             [judge]\nendpoint = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\nmode = \"turn\"\n\
             range = [-100.0, 0.0]\nhistory = \"{history}\"\n\
             [reward_model]\nurl = \"http://127.0.0.1:1/reward\"\n\
             [[rules]]\nname = \"work_order\"\npattern = \"(?i)work.order\"\ntarget = \"talk\"\n\
             score = -20.0"
        ))
        .unwrap();
        config.validate().unwrap();
        config
    }

    #[test]
    fn n_defaults_to_repos_100() {
        // REPO §4: "We set n to 100". A config that leaves n out gets it, and its run id says
        // so (an enhance config always prints its table: the default changed from 1).
        let config = repo_config("ignore");
        assert_eq!(config.enhance.n, 100.0);
        assert_eq!(EnhanceConfig::default().n, 100.0);
        assert!(format!("{config:?}").contains("n: 100.0"), "{config:?}");
        // A judge deducting 45 points of a positive R_m = 0.6: 0.6 · (1 − 45/100) = 0.33, where
        // n = 1 would clip E to −1 and give 0.6 · 0 = 0.
        let p = parts(&[("reward_model", 0.6), ("judge", -25.0), ("rules", -20.0)]);
        assert!(close(total(&p, &config), 0.33));
    }

    /// Each turn's signals as `run` leaves them once the reward model and the judge have
    /// answered: `(reward_model, judge, rule score)` per turn.
    fn answered(per_turn: &[(f64, f64, Option<f64>)]) -> Vec<BTreeMap<String, f64>> {
        per_turn
            .iter()
            .map(|(rm, judge, rule)| {
                let mut s = BTreeMap::from([
                    ("reward_model".to_string(), *rm),
                    ("judge".to_string(), *judge),
                ]);
                if let Some(rule) = rule {
                    s.insert("rule:work_order".to_string(), *rule);
                }
                s
            })
            .collect()
    }

    #[test]
    fn each_response_is_scaled_by_its_own_judge_and_rules_with_repos_history_rule() {
        // REPO §4 per response: R = R_m · (1 + sign(R_m) · clip(E_judge + E_func, −n, n)/n),
        // n = 100, with that response's R_m and E. Turns (learner, opponent, learner,
        // opponent): R_m 0.6, −0.4, 0.8, 0.5; judge −5, −30, −20, −5; rule −20 on turn 1 and
        // −5 on turn 4.
        let (s, e) = four_turns();
        let signals = answered(&[
            (0.6, -5.0, Some(-20.0)),
            (-0.4, -30.0, None),
            (0.8, -20.0, None),
            (0.5, -5.0, Some(-5.0)),
        ]);
        let refs: Vec<&BTreeMap<String, f64>> = signals.iter().collect();
        // Figure 6's history rule: the learner's turn 3 follows its −5 (history −5 < 0), so its
        // judge counts 0; the opponent's turn 4 follows its −30, so 0 too.
        //   turn 1: E = −5 − 20 = −25, 0.6 · (1 − 0.25) = 0.45
        //   turn 2: E = −30, R_m < 0: −0.4 · (1 + 0.30) = −0.52
        //   turn 3: E = 0 (judge zeroed), 0.8 · 1 = 0.8
        //   turn 4: E = 0 − 5 = −5, 0.5 · (1 − 0.05) = 0.475
        let config = repo_config("zero_if_negative");
        let mut parts = PerSeat::default();
        let c = combine_parts(e.setup(), e.turns(), &refs, &mut parts, &config);
        let want = [0.45, -0.52, 0.8, 0.475];
        for (i, (got, want)) in c.turn_rewards.iter().zip(want).enumerate() {
            assert!(
                close(got.unwrap(), want),
                "turn {}: {got:?} vs {want}",
                i + 1
            );
        }
        // Per seat: R_m the mean of its responses, the judge the mean of its counted verdicts,
        // the rules their sum. Learner: R_m (0.6 + 0.8)/2 = 0.7, judge (−5 + 0)/2 = −2.5,
        // rules −20: E = −22.5, 0.7 · 0.775 = 0.5425.
        assert!(close(parts.learner[Component::RewardModel], 0.7));
        assert!(close(parts.learner[Component::Judge], -2.5));
        assert!(close(c.total.learner, 0.5425));
        // The verdicts on the turns stay as the judge gave them.
        assert_eq!(signals[2]["judge"], -20.0);
        // Without the history rule turn 3 keeps its −20: 0.8 · (1 − 0.20) = 0.64.
        let config = repo_config("ignore");
        let c = combine_parts(e.setup(), e.turns(), &refs, &mut parts, &config);
        assert!(close(c.turn_rewards[2].unwrap(), 0.64));
        // Under the episode reward the reward model is the seat's and not per turn: a turn's
        // `reward_model` signal is not read, the seat part comes from `run` (absent here: 0).
        let episode = RewardConfig {
            turn_reward: TurnReward::Episode,
            ..config
        };
        assert!(!episode.is_per_turn(Component::RewardModel));
        let mut parts = PerSeat::default();
        let c = combine_parts(e.setup(), e.turns(), &refs, &mut parts, &episode);
        assert!(!parts.learner.contains(Component::RewardModel));
        assert_eq!(c.total.learner, 0.0);
        let _ = s;
    }
}
