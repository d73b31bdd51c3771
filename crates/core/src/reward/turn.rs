//! The per-turn signals (seeded from the CaSiNo harness's turn rewards): format, length, points
//! and strategic talk. Each is a pure function of one turn (and, for points, the offer it
//! accepted); [`turn_signals`] walks an episode's turns and gives each the signals a config
//! uses, keyed by name.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::game::{standing_after, Offer, Setup, Turn};
use crate::protocol::{Action, Parsed, TermSpace, Terms};
use crate::scenario::{bargained_ratio, DealSpace, Role, Scenario};

use super::config::{
    Component, InaVersion, LengthConfig, LengthUnit, RewardConfig, StrategicTurns,
};
use super::rules::rule_scores;

/// What the per-turn signals every rulebook's turns have read of a turn — format, length,
/// rules, INA's R4 — whichever rulebook played it: a two-party [`Turn`] and an n-party
/// [`TableTurn`](crate::table::TableTurn) both are one. The signals that read a bilateral
/// standing offer or a two-party deal space (points, strategic talk, INA's R1, the hotel's
/// guardrails and procedure rules) are [`turn_signals`]' alone.
pub(crate) trait SignalTurn {
    /// Who moved, in the rulebook's own terms (a two-party [`Seat`](crate::game::Seat), a
    /// table's seat index).
    type Mover: Copy + Eq;
    fn mover(&self) -> Self::Mover;
    /// What was read from the completion.
    fn parsed(&self) -> &Parsed;
    /// The whole completion as written.
    fn raw(&self) -> &str;
    /// Whether the turn counts as format-ok: readable and its move allowed.
    fn format_ok(&self) -> bool;
}

impl SignalTurn for Turn {
    type Mover = crate::game::Seat;
    fn mover(&self) -> crate::game::Seat {
        self.seat
    }
    fn parsed(&self) -> &Parsed {
        &self.parsed
    }
    fn raw(&self) -> &str {
        &self.raw
    }
    /// [`Parsed::counts_as_format_ok`]: the two-party engine keeps a refused move in the parse.
    fn format_ok(&self) -> bool {
        self.parsed.counts_as_format_ok()
    }
}

impl SignalTurn for crate::table::TableTurn {
    type Mover = usize;
    fn mover(&self) -> usize {
        self.seat
    }
    fn parsed(&self) -> &Parsed {
        &self.parsed
    }
    fn raw(&self) -> &str {
        &self.completion.text
    }
    /// [`Parsed::counts_as_format_ok`], and the move not refused by the table's rules (which
    /// the table engine keeps in the turn's `error`, not the parse's).
    fn format_ok(&self) -> bool {
        self.parsed.counts_as_format_ok() && self.error.is_none()
    }
}

/// 1 for a turn that counts as format-ok ([`Parsed::counts_as_format_ok`]: all three parts, in
/// order, one well-formed action, and the move allowed), else 0. The CaSiNo harness's format
/// check (§3.4) counts valid action syntax and deal arithmetic, and "[ACCEPT_DEAL] is only
/// valid when the opponent's last action was [SUBMIT_DEAL]": a readable turn the engine
/// refused as illegal (an ACCEPT with no offer to accept, terms out of range) earns nothing.
pub(crate) fn format_reward(turn: &impl SignalTurn) -> f64 {
    if turn.format_ok() {
        1.0
    } else {
        0.0
    }
}

/// The number of words (whitespace-separated) in the turn's Talk; 0 without one.
pub(crate) fn talk_words(turn: &impl SignalTurn) -> usize {
    turn.parsed()
        .talk
        .as_deref()
        .map_or(0, |t| t.split_whitespace().count())
}

/// A turn's length in `config`'s unit: the Talk's words, or the characters (Unicode scalar
/// values) of the whole completion as written.
pub(crate) fn length_of(turn: &impl SignalTurn, config: &LengthConfig) -> usize {
    match config.unit {
        LengthUnit::Words => talk_words(turn),
        LengthUnit::Chars => turn.raw().chars().count(),
    }
}

/// The length reward of a turn `length` long ([`length_of`]).
///
/// Words (the default): 1 at `min`, falling linearly to 0 at `max` (concise talk is better,
/// within reason); `outside` (a penalty, −1 by default) below `min` or above `max`.
///
/// Characters (the CaSiNo harness's form, §3.4: "linear reward for responses between 50 and
/// 750 characters; penalizes very short (−1.0) or excessively long completions with gentle
/// decay"): `outside` below `min`; from 0 at `min` rising linearly to 1 at `max` (a fuller
/// response, Thought included, earns more up to the cap); beyond `max` a decay of 1 per `max`
/// characters, 1 − (n − max)/max, never below `outside` — gentle next to the cliff below
/// `min`: 900 of a 750 cap keeps 0.8, twice the cap is 0, and only a runaway completion
/// (2·max + |outside|·max) is as bad as a too-short one.
pub(crate) fn length_reward(length: usize, config: &LengthConfig) -> f64 {
    let (min, max, n) = (f64::from(config.min), f64::from(config.max), length as f64);
    match config.unit {
        LengthUnit::Words if n < min || n > max => config.outside,
        LengthUnit::Words => 1.0 - (n - min) / (max - min),
        LengthUnit::Chars if n < min => config.outside,
        LengthUnit::Chars if n <= max => (n - min) / (max - min),
        LengthUnit::Chars => (1.0 - (n - max) / max).max(config.outside),
    }
}

/// The points reward of a move that took effect: for a SUBMIT, the mover's own ρ of its terms,
/// and for an ACCEPT, its ρ of the accepted offer — clipped to [0, 1], then · 2 − 0.5; −1 for
/// WALK_AWAY; 0 for anything else (REJECT, TALK, a turn that could not be used). ρ is the
/// scenario's own ([`bargained_ratio`]): own points / max points on items, u / max u on issues,
/// and on price tasks the seat's share of the spread |B − C| at the proposed price
/// (docs/src/decisions/rewards.md, "Per-turn points on price tasks").
///
/// `accepted` is the accepted offer's terms from the mover's side (for an ACCEPT).
pub(crate) fn points_reward(
    scenario: &Scenario,
    role: Role,
    played: Option<&Action>,
    accepted: Option<&Terms>,
) -> f64 {
    let rho = |terms: &Terms| bargained_ratio(scenario, role, scenario.utility(role, terms));
    points_of(played, |action| match action {
        Action::Submit(terms) => Some(rho(terms)),
        _ => accepted.map(rho),
    })
}

/// The points rule of both rulebooks: a SUBMIT or an ACCEPT scores the mover's ρ of the deal
/// it proposes or accepts (`rho_of`; `None`: nothing was accepted), clipped to [0, 1], then
/// · 2 − 0.5; WALK_AWAY −1; anything else 0.
fn points_of(played: Option<&Action>, rho_of: impl FnOnce(&Action) -> Option<f64>) -> f64 {
    match played {
        Some(action @ (Action::Submit(_) | Action::Accept)) => {
            rho_of(action).map_or(0.0, |rho| rho.clamp(0.0, 1.0) * 2.0 - 0.5)
        }
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

/// A seat's own priorities said out loud: "our top priority", "we prioritize", "most important
/// to us", "what we need most", "our highest-value item" — first person only, so asking after
/// the other side's priorities ("what is your priority?") is no leak.
static OWN_PRIORITY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?ix)
        \b(?:my|our)\s+(?:\w+[\s-]+){0,2}priorit(?:y|ies)\b
        | \b(?:i|we)\s+(?:\w+\s+)?priori[tz]i[sz]e\b
        | \b(?:most|least)\s+important\s+(?:\w+\s+){0,2}(?:to|for)\s+(?:me|us)\b
        | \b(?:matters?|counts?)\s+(?:the\s+)?most\s+(?:to|for)\s+(?:me|us)\b
        | \b(?:i|we)\s+(?:\w+\s+)?(?:value|need|want)\s+(?:\w+\s+){0,3}(?:the\s+)?most\b
        | \b(?:my|our)\s+(?:highest|lowest|top|least)[\s-]+valu(?:e|ed)\b",
    )
    .expect("a literal pattern")
});

/// What leaking one's priorities costs a turn's strategic talk: half the scale, so a turn that
/// names its top item *as* its priority earns nothing for it.
const LEAK_COST: f64 = 0.5;

/// The CaSiNo harness's strategic-talk score of one turn (§3.4, its whole rule: "Heuristic
/// score (0 to 1) for [TALK] and [REJECT_DEAL] turns only. Awards credit for mentioning
/// high-value items (anchoring), avoiding priority-leaking language, and referencing low-value
/// items (concession signaling)."): the two mentions share the credit equally — 0.5 each where
/// the seat has a low-value item to concede, all of it on anchoring where every item is worth
/// the same — and priority-leaking language costs [`LEAK_COST`] (floored at 0). Naming the
/// top item earns the anchoring credit; naming it *as the seat's priority* ("food is our top
/// priority") leaks the ranking it should anchor on, so it does not earn the maximum.
/// `concedes` is `None` where the seat has nothing of lower value to signal.
fn mention_score(anchors: bool, concedes: Option<bool>, leaks: bool) -> f64 {
    let credits: Vec<bool> = std::iter::once(anchors).chain(concedes).collect();
    let earned = credits.iter().filter(|c| **c).count() as f64 / credits.len() as f64;
    let cost = if leaks { LEAK_COST } else { 0.0 };
    (earned - cost).clamp(0.0, 1.0)
}

/// Strategic talk, a heuristic in [0, 1].
///
/// On items and issues, the CaSiNo harness's rule ([`mention_score`], §3.4): credit for
/// *anchoring* — the Talk names one of the seat's highest-valued items (items; singular or
/// plural) or its highest-weighted issue by key or label (issues) — and for *concession
/// signalling* — it names one of its lowest-valued items or issues (where they are worth less
/// than the top), or, on a SUBMIT (scored under `turns = "all"`), its terms keep a smaller
/// share of the lowest-valued item than of the highest-valued one — less the cost of
/// *priority-leaking language*: stating its own ranking ([`OWN_PRIORITY`]: "our top
/// priority", "what we need most") or its private numbers (a per-unit value as "N points",
/// an issue weight as "N%"). The concession check reads the Talk, so it runs on the
/// [TALK] and [REJECT_DEAL] turns the paper scores (`turns = "talk_and_reject"`).
///
/// On price, bundle and hotel tasks (dealgym's, beyond the paper) there is no item ranking to
/// name: the mean of the checks that apply — *keeps its numbers private*, the Talk does not
/// state the seat's budget B or cost C (price, within 0.5) or the worth or cost of its main
/// product or whole bundle (bundle); a hotel call's agent names a room of the call.
///
/// A turn without Talk scores 0.
pub(crate) fn strategic_talk(
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
    let says = |secrets: &[f64]| {
        NUMBER.find_iter(talk).any(|m| {
            let digits: String = m
                .as_str()
                .chars()
                .filter(|c| *c != '$' && *c != ',')
                .collect();
            digits
                .parse::<f64>()
                .is_ok_and(|n| secrets.iter().any(|s| (n - s).abs() < 0.5))
        })
    };
    match &scenario.game {
        DealSpace::Price { buyer, seller, .. } => {
            let secret = if role == Role::Buyer {
                buyer.budget
            } else {
                seller.cost
            };
            checks.push(!says(&[secret]));
        }
        DealSpace::Bundle {
            bundle,
            buyer,
            seller,
        } => {
            let own = if role == Role::Buyer { buyer } else { seller };
            let full = crate::protocol::BundleChoice::full(bundle);
            checks.push(!says(&[own.main, own.total(&full)]));
        }
        DealSpace::Items { items, .. } => {
            let Some(own) = scenario.item_values(role) else {
                return 0.0;
            };
            let values = &own.values;
            let (Some(&hi), Some(&lo)) = (values.iter().max(), values.iter().min()) else {
                return 0.0;
            };
            let names_one_worth = |value: u32| {
                items.iter().zip(values).any(|(item, v)| {
                    let name = item.name.to_lowercase();
                    *v == value
                        && words
                            .iter()
                            .any(|w| *w == name || w.strip_suffix('s').is_some_and(|s| s == name))
                })
            };
            let states_points = POINTS.captures_iter(talk).any(|c| {
                c[1].parse::<f64>()
                    .is_ok_and(|n| values.iter().any(|v| (f64::from(*v) - n).abs() < 1e-9))
            });
            let offers_low = match played {
                Some(Action::Submit(Terms::Items(shares))) => {
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
                    matches!((kept(lo), kept(hi)), (Some(low), Some(high)) if low < high)
                }
                _ => false,
            };
            let concedes = (hi != lo).then(|| names_one_worth(lo) || offers_low);
            return mention_score(
                names_one_worth(hi),
                concedes,
                OWN_PRIORITY.is_match(talk) || states_points,
            );
        }
        DealSpace::Issues { issues, .. } => {
            let Some(prefs) = scenario.issue_preferences(role) else {
                return 0.0;
            };
            let weights = prefs.issues.iter().map(|p| p.weight);
            let top = weights.clone().fold(f64::NEG_INFINITY, f64::max);
            let least = weights.fold(f64::INFINITY, f64::min);
            let names_one_weighing = |weight: f64| {
                issues.iter().zip(&prefs.issues).any(|(spec, p)| {
                    p.weight == weight
                        && (lower.contains(&spec.key.to_lowercase())
                            || lower.contains(&spec.label.to_lowercase()))
                })
            };
            let states_weight = PERCENT.captures_iter(talk).any(|c| {
                c[1].parse::<f64>().is_ok_and(|n| {
                    prefs
                        .issues
                        .iter()
                        .any(|p| p.weight > 0.0 && (p.weight * 100.0 - n).abs() < 0.5)
                })
            });
            let concedes = (top > least).then(|| names_one_weighing(least));
            return mention_score(
                names_one_weighing(top),
                concedes,
                OWN_PRIORITY.is_match(talk) || states_weight,
            );
        }
        // Hotel calls: the hotel keeps its floors to itself; the agent names a room of the
        // call (it must quote its asks, so its figures are no secret).
        DealSpace::Tickets { tickets, hotel, .. } => match role {
            Role::Hotel => {
                let said = NUMBER.find_iter(talk).any(|m| {
                    let digits: String = m
                        .as_str()
                        .chars()
                        .filter(|c| *c != '$' && *c != ',')
                        .collect();
                    digits
                        .parse::<f64>()
                        .is_ok_and(|n| hotel.iter().any(|h| (n - h.floor).abs() < 0.5))
                });
                checks.push(!said);
            }
            _ => checks.push(
                tickets
                    .iter()
                    .any(|t| lower.contains(&t.room.to_lowercase())),
            ),
        },
    }
    if checks.is_empty() {
        return 0.0;
    }
    checks.iter().filter(|c| **c).count() as f64 / checks.len() as f64
}

/// Whether a turn whose seat wrote `written` (the action it wrote, before regulation; `None`
/// when none could be read) gets the strategic-talk signal under `turns`.
pub(crate) fn strategic_applies(turns: StrategicTurns, written: Option<&Action>) -> bool {
    match turns {
        StrategicTurns::All => true,
        StrategicTurns::TalkAndReject => matches!(written, Some(Action::Talk | Action::Reject)),
    }
}

/// The per-turn signals `config` uses, for every turn of an episode in order (each for the seat
/// that moved): `format`, `length`, `points`, `strategic` (where `strategic_applies`) and
/// `rule:NAME` for each rule, guardrail and procedure rule that matched. A per-turn judge's
/// `judge` and a per-response reward model's `reward_model` are added by `run` after their
/// calls. Empty maps under the terminal reward alone, and for the turns of a logged prefix
/// ([`Rules::is_logged_turn`](crate::game::Rules::is_logged_turn)): only the players' own turns
/// are scored (their offers still stand for the points of a later ACCEPT).
pub(crate) fn turn_signals(
    scenario: &Scenario,
    setup: &Setup,
    turns: &[impl AsRef<Turn>],
    config: &RewardConfig,
) -> Vec<BTreeMap<String, f64>> {
    if config.is_terminal_only() {
        return vec![BTreeMap::new(); turns.len()];
    }
    let uses = |c: Component| config.uses(c);
    let space = scenario.term_space();
    let all: Vec<&Turn> = turns.iter().map(AsRef::as_ref).collect();
    let mut standing: Option<Offer> = None;
    let mut out = Vec::with_capacity(turns.len());
    for (index, turn) in all.iter().copied().enumerate() {
        let played = turn.played.as_ref();
        if setup.rules.is_logged_turn(index) {
            if let Some(action) = played {
                standing = standing_after(standing, turn.seat, action);
            }
            out.push(BTreeMap::new());
            continue;
        }
        let role = setup.seats[turn.seat].role;
        let mut signals = shared_signals(&all, index, config, space);
        if uses(Component::Points) {
            let accepted = match played {
                Some(Action::Accept) => standing.as_ref().map(|o| o.terms_for(turn.seat, space)),
                _ => None,
            };
            let points = points_reward(scenario, role, played, accepted.as_ref());
            signals.insert(Component::Points.name().to_string(), points);
        }
        if uses(Component::Strategic)
            && strategic_applies(config.strategic.turns, turn.parsed.action.as_ref())
        {
            let s = strategic_talk(scenario, role, turn.parsed.talk.as_deref(), played);
            signals.insert(Component::Strategic.name().to_string(), s);
        }
        if let (true, Some(label)) = (
            uses(Component::IntentConsistency),
            turn.parsed.act.as_deref(),
        ) {
            // Read against the offer the move answers, as the built-in players label it.
            let own_last = turns[..index]
                .iter()
                .rev()
                .map(AsRef::as_ref)
                .filter(|t| t.seat == turn.seat)
                .find_map(|t| match &t.played {
                    Some(Action::Submit(terms)) => Some(terms.clone()),
                    _ => None,
                });
            let counter = standing
                .as_ref()
                .filter(|o| o.by != turn.seat)
                .map(|o| o.terms_for(turn.seat, space));
            let opening = scenario.opening_terms();
            let previous = crate::scenario::acts::ina_reference(
                counter.as_ref(),
                own_last.as_ref(),
                opening.as_ref(),
            )
            .cloned();
            if let Some(r1) = super::ina::intent_consistency(label, played, previous.as_ref()) {
                signals.insert(Component::IntentConsistency.name().to_string(), r1);
            }
        }
        if uses(Component::Rules) && (config.guardrails.is_some() || config.procedure.is_some()) {
            if let Some(guardrails) = &config.guardrails {
                for (name, score) in super::guardrails::guardrail_scores(
                    guardrails,
                    scenario,
                    role,
                    &all,
                    index,
                    standing.as_ref(),
                ) {
                    signals.insert(format!("rule:{name}"), score);
                }
            }
            if let Some(procedure) = &config.procedure {
                for (name, score) in
                    super::procedure::procedure_scores(procedure, scenario, role, &all, index)
                {
                    signals.insert(format!("rule:{name}"), score);
                }
            }
        }
        if let Some(action) = played {
            standing = standing_after(standing, turn.seat, action);
        }
        out.push(signals);
    }
    out
}

/// The signals of turn `index` of `turns` that read only what every rulebook's turns have
/// ([`SignalTurn`]): `format`, `length`, INA's R4 (`interactiveness`, against the seat's — or,
/// in the released code's version, everyone's — earlier Talk) and `rule:NAME` for each
/// `[[rewards.rules]]` rule that matched, those `config` uses. The one home of these signals
/// for two-party turns ([`turn_signals`]) and table turns ([`table_turn_signals`]).
fn shared_signals<T: SignalTurn>(
    turns: &[&T],
    index: usize,
    config: &RewardConfig,
    space: TermSpace<'_>,
) -> BTreeMap<String, f64> {
    let uses = |c: Component| config.uses(c);
    let turn = turns[index];
    let mut signals = BTreeMap::new();
    if uses(Component::Format) {
        signals.insert(Component::Format.name().to_string(), format_reward(turn));
    }
    if uses(Component::Length) {
        let length = length_reward(length_of(turn, &config.length), &config.length);
        signals.insert(Component::Length.name().to_string(), length);
    }
    if uses(Component::Interactiveness) {
        let talk = turn.parsed().talk.as_deref();
        let r4 = match config.ina.version {
            InaVersion::Paper => {
                let earlier: Vec<(&str, Option<&str>)> = turns[..index]
                    .iter()
                    .filter(|t| t.mover() == turn.mover())
                    .filter_map(|t| {
                        let talk = t.parsed().talk.as_deref()?;
                        Some((talk, t.parsed().act.as_deref()))
                    })
                    .collect();
                super::ina::interactiveness(talk, turn.parsed().act.as_deref(), &earlier)
            }
            InaVersion::Code => {
                let earlier: Vec<&str> = turns[..index]
                    .iter()
                    .filter_map(|t| t.parsed().talk.as_deref())
                    .collect();
                super::ina::code_similarity(talk, &earlier)
            }
        };
        signals.insert(Component::Interactiveness.name().to_string(), r4);
    }
    if uses(Component::Rules) {
        for (name, score) in rule_scores(&config.rules, turn, space) {
            signals.insert(format!("rule:{name}"), score);
        }
    }
    signals
}

/// The per-turn signals `config` uses for every turn of an n-party table in order (each for
/// the seat that moved): those [`shared_signals`] gives, and `points` by the rule of
/// [`points_reward`] — a proposal scores the mover's ρ of the deal it proposes, an acceptance
/// its ρ of the numbered offer it accepts (`offers`, the table's). Empty maps under the
/// terminal reward alone. The signals that read a two-party deal space are refused at tables
/// ([`RewardConfig::check_for_table`]).
pub(crate) fn table_turn_signals(
    scenario: &crate::scenario::TableScenario,
    turns: &[&crate::table::TableTurn],
    offers: &[crate::table::TableOffer],
    config: &RewardConfig,
) -> Vec<BTreeMap<String, f64>> {
    if config.is_terminal_only() {
        return vec![BTreeMap::new(); turns.len()];
    }
    let space = scenario.term_space();
    let rho = |seat: usize, offer: Option<u32>| {
        let deal = &offers.iter().find(|o| Some(o.id) == offer)?.deal;
        let best = scenario.best_score(seat).max(1);
        Some(scenario.score(seat, deal) as f64 / best as f64)
    };
    (0..turns.len())
        .map(|index| {
            let turn = turns[index];
            let mut signals = shared_signals(turns, index, config, space);
            if config.uses(Component::Points) {
                let points = points_of(turn.played(), |action| match action {
                    Action::Submit(_) => rho(turn.seat, turn.offer),
                    _ => rho(turn.seat, turn.accepts),
                });
                signals.insert(Component::Points.name().to_string(), points);
            }
            signals
        })
        .collect()
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
    fn an_illegal_accept_earns_no_format_reward() {
        // The CaSiNo harness (§3.4): "[ACCEPT_DEAL] is only valid when the opponent's last
        // action was [SUBMIT_DEAL]". The learner accepts with nothing on the table: well-formed
        // (format_ok) but illegal, so 0; its corrected SUBMIT gets 1; the opponent's ACCEPT of
        // that SUBMIT is legal, 1.
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn("Deal!", "[ACCEPT_DEAL]"),
                turn("Food for us?", "[SUBMIT_DEAL] food:3 water:2 firewood:0"),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ],
        );
        let t = e.turns();
        assert!(
            t[0].parsed.format_ok,
            "well-formed: only the move is refused"
        );
        assert_eq!(
            t[0].parsed.error.as_ref().map(|e| e.kind),
            Some(crate::protocol::ErrorKind::Illegal)
        );
        let signals = turn_signals(&s, e.setup(), t, &with(&[Component::Format]));
        let format: Vec<f64> = signals.iter().map(|s| s["format"]).collect();
        assert_eq!(format, [0.0, 1.0, 1.0]);
    }

    #[test]
    fn length_is_linear_inside_the_bounds_and_penalised_outside() {
        let c = LengthConfig {
            min: 5,
            max: 25,
            outside: -1.0,
            unit: LengthUnit::Words,
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
    fn length_in_characters_is_the_harness_form_over_the_whole_completion() {
        // 50 to 750 characters (§3.4): −1 below 50; 0 at 50 rising to 1 at 750 (400: 350/700
        // = 0.5); beyond 750 a decay of 1 per 750 characters: 900 → 1 − 150/750 = 0.8, 1500
        // → 0, and from 2250 on the floor, −1.
        let c = LengthConfig {
            min: 50,
            max: 750,
            outside: -1.0,
            unit: LengthUnit::Chars,
        };
        for (chars, want) in [
            (0, -1.0),
            (49, -1.0),
            (50, 0.0),
            (400, 0.5),
            (750, 1.0),
            (900, 0.8),
            (1500, 0.0),
            (2250, -1.0),
            (9000, -1.0),
        ] {
            let got = length_reward(chars, &c);
            assert!(close(got, want), "{chars} chars: {got}, want {want}");
        }
        // The count is of characters of the raw completion, Thought and action line included
        // — not bytes ("é" is one), not the Talk's words.
        let s = casino();
        let raw = format!(
            "Thought: {}\nTalk: Café?\nAction: [REJECT_DEAL]",
            "x".repeat(5)
        );
        let mut e =
            crate::game::Episode::new(s.clone(), learner_first_as(&s, Role::Agent1)).unwrap();
        e.step(raw.as_str()).unwrap();
        let turn = &e.turns()[0];
        assert_eq!(length_of(turn, &c), 48);
        assert_eq!(raw.len(), 49, "one two-byte character");
        assert_eq!(length_of(turn, &LengthConfig::default()), 1);
        let chars = RewardConfig {
            length: c,
            ..with(&[Component::Length])
        };
        let signals = turn_signals(&s, e.setup(), e.turns(), &chars);
        assert!(close(signals[0]["length"], -1.0), "48 < 50");
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

    // ---- strategic talk: the CaSiNo harness's rule, case by case ----
    //
    // §3.4: "Heuristic score (0 to 1) for [TALK] and [REJECT_DEAL] turns only. Awards credit
    // for mentioning high-value items (anchoring), avoiding priority-leaking language, and
    // referencing low-value items (concession signaling)." Agent_1 values food 5 (high), water
    // 4, firewood 3 (low): anchoring and concession signalling are worth 1/2 each, leaking its
    // priorities costs 1/2 (floored at 0). Every case below is a [REJECT_DEAL] or [TALK] turn,
    // the turns the paper scores.

    fn agent_1_says(talk: &str) -> f64 {
        strategic_talk(&casino(), Role::Agent1, Some(talk), Some(&Action::Reject))
    }

    #[test]
    fn strategic_talk_anchoring_on_the_top_item_earns_half() {
        // Names food (its 5-point item), no ranking stated, nothing conceded: 1/2 + 0 − 0.
        assert!(close(
            agent_1_says("We really need food for the kids."),
            0.5
        ));
        // Plural counts as the item ("foods").
        assert!(close(agent_1_says("Foods would help us a lot."), 0.5));
    }

    #[test]
    fn strategic_talk_naming_the_top_item_as_a_priority_is_a_leak_not_the_maximum() {
        // "Food is our top priority": names food (1/2) but states its ranking: − 1/2 → 0.
        assert!(close(agent_1_says("Food is our top priority."), 0.0));
        assert!(close(agent_1_says("Food is what we need most."), 0.0));
        assert!(close(
            agent_1_says("Food is the most important item to us."),
            0.0
        ));
        // Its per-unit value as points is a leak too: food named (1/2), "5 points" (− 1/2).
        assert!(close(agent_1_says("Food gives me 5 pts each."), 0.0));
        // Even anchoring and conceding together stop short of the maximum when the ranking is
        // said: 1/2 + 1/2 − 1/2 = 1/2.
        let both = agent_1_says("Food is our top priority; you can have the firewood.");
        assert!(close(both, 0.5));
        assert!(both < 1.0);
    }

    #[test]
    fn strategic_talk_referencing_a_low_value_item_earns_the_papers_half() {
        // Names firewood (its 3-point item) only: concession signalling, 0 + 1/2 − 0.
        assert!(close(
            agent_1_says("You can have all of the firewood."),
            0.5
        ));
        // Agent_2 values firewood 5, food 3: the same sentence anchors for it instead, and
        // naming food is its concession.
        let s = casino();
        let say = |talk| strategic_talk(&s, Role::Agent2, Some(talk), Some(&Action::Talk));
        assert!(close(say("You can have all of the firewood."), 0.5));
        assert!(close(say("Take the food, we are fine."), 0.5));
    }

    #[test]
    fn strategic_talk_anchoring_and_conceding_without_a_leak_is_the_maximum() {
        // 1/2 + 1/2 − 0 = 1.
        let full = agent_1_says("We'd love the food; the firewood can go to you.");
        assert!(close(full, 1.0));
    }

    #[test]
    fn strategic_talk_with_no_item_named_earns_nothing() {
        // Neither mention: 0 (the paper's credits are for mentions; keeping quiet earns none).
        assert!(close(agent_1_says("Let us find a fair split."), 0.0));
        // Asking after the other side's priority is no leak, and names no item: 0.
        assert!(close(agent_1_says("What is your top priority?"), 0.0));
        // A leak alone floors at 0.
        assert!(close(agent_1_says("Our priorities are clear."), 0.0));
        // No talk: 0.
        assert_eq!(strategic_talk(&casino(), Role::Agent1, None, None), 0.0);
    }

    #[test]
    fn strategic_talk_on_a_submit_also_reads_the_terms_as_a_concession() {
        // Under `turns = "all"` a SUBMIT is scored too: keeping all the food and giving all the
        // firewood signals the concession the Talk does not name (1/2 + 1/2 = 1); naming the
        // firewood (its low item: 1/2) while saying "3 points" (− 1/2), food unnamed, is 0.
        let s = casino();
        let submit = |x: Vec<u32>| Action::Submit(Terms::Items(x));
        let good = strategic_talk(
            &s,
            Role::Agent1,
            Some("We really need food for the kids."),
            Some(&submit(vec![3, 2, 0])),
        );
        assert!(close(good, 1.0));
        let bad = strategic_talk(
            &s,
            Role::Agent1,
            Some("Firewood is worth 3 points to me."),
            Some(&submit(vec![0, 2, 3])),
        );
        assert!(close(bad, 0.0));
    }

    #[test]
    fn strategic_talk_on_issues_and_price_tasks() {
        // Job worker: salary (0.6) is the top issue, position and holiday (0) the least.
        let s = job();
        let say = |talk| strategic_talk(&s, Role::Worker, Some(talk), None);
        // Names salary: 1/2; and "60%" states its weight: − 1/2 → 0.
        assert!(close(say("I hope for a better salary."), 0.5));
        assert!(close(say("Salary is 60% of it for me."), 0.0));
        // Salary and a concession on the holidays: 1.
        assert!(close(
            say("A better salary, and the holiday is up to you."),
            1.0
        ));
        // Google is an option, not an issue: nothing named → 0.
        assert!(close(say("Google sounds nice."), 0.0));
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
    }

    #[test]
    fn strategic_talk_on_talk_and_reject_turns_only_where_asked() {
        // Agent_1 (learner, 5/4/3) SUBMITs naming food, giving all the firewood (1/2 + 1/2 =
        // 1); agent_2 (3/4/5) REJECTs naming firewood, its top item, and food, its least (1);
        // the learner REJECTs offering the firewood, its least (the concession on a REJECT:
        // 1/2); agent_2 walks away with "Bye." (names nothing: 0).
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn(
                    "We really need food for the kids.",
                    "[SUBMIT_DEAL] food:3 water:2 firewood:0",
                ),
                turn(
                    "We need the firewood; you can keep the food.",
                    "[REJECT_DEAL]",
                ),
                turn("You can have the firewood.", "[REJECT_DEAL]"),
                turn("Bye.", "[WALK_AWAY]"),
            ],
        );
        let outcome = e.outcome().unwrap().clone();
        let all = with(&[Component::Strategic]);
        let signals = turn_signals(&s, e.setup(), e.turns(), &all);
        let every: Vec<f64> = signals.iter().map(|s| s["strategic"]).collect();
        assert_eq!(every, [1.0, 1.0, 0.5, 0.0]);
        // The harness's rule (§3.4): only [TALK] and [REJECT_DEAL] turns are scored; the
        // SUBMIT and the WALK_AWAY get no signal, so the seats' means are over their REJECTs:
        // the learner 0.5 (not (1 + 0.5)/2), the opponent 1.0 (not (1 + 0)/2).
        let talk = RewardConfig {
            strategic: crate::reward::StrategicConfig {
                turns: StrategicTurns::TalkAndReject,
            },
            ..all.clone()
        };
        let signals = turn_signals(&s, e.setup(), e.turns(), &talk);
        let scored: Vec<Option<f64>> = signals
            .iter()
            .map(|s| s.get("strategic").copied())
            .collect();
        assert_eq!(scored, [None, Some(1.0), Some(0.5), None]);
        let r = crate::reward::episode_rewards(&s, e.setup(), e.turns(), &outcome, &talk);
        assert_eq!(r.parts.learner[Component::Strategic], 0.5);
        assert_eq!(r.parts.opponent[Component::Strategic], 1.0);
        let r = crate::reward::episode_rewards(&s, e.setup(), e.turns(), &outcome, &all);
        assert_eq!(r.parts.learner[Component::Strategic], 0.75);
        assert_eq!(r.parts.opponent[Component::Strategic], 0.5);
        // A [TALK] turn is scored; a turn whose action could not be read is not.
        assert!(strategic_applies(
            StrategicTurns::TalkAndReject,
            Some(&Action::Talk)
        ));
        assert!(!strategic_applies(StrategicTurns::TalkAndReject, None));
        assert!(strategic_applies(StrategicTurns::All, None));
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
