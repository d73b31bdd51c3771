//! Belief probes (issue 44 item 3; the book's `guide/eval.md`, "Does it know what the other
//! side wants?"): a model seat is asked, at chosen turns and never forwarded, for its estimate
//! of the other side's private values, with its confidence; this module is the pure half — the
//! question ([`belief_question`]), the one reader of the answer, and the one scoring of it
//! against the scenario ([`Probe::scored`]), which `run` writes and `replay --verify`
//! recomputes. Asking is the runtime's (`run::driver`); nothing here touches an episode.
//!
//! What is asked, per family (the other side's private block, `scenario::DealSpace`):
//! - price families (AHP, Craigslist): the other side's reservation price — a buyer's budget,
//!   a seller's cost. Scored by the absolute error, normalised by the listing price (the
//!   public figure every price scenario has; a zone of agreement can be empty);
//! - item families (CaSiNo, Deal or No Deal): the other side's priority order over the items
//!   (by its points per unit);
//! - Job Interview: the order of the other side's issues by its weights.
//!
//! Orders are scored by Spearman's rank correlation ρₛ with the true order (ties in the truth
//! at their average rank). Every probe's **accuracy** is in [0, 1]: 1 − the normalised price
//! error (0 past an error of the whole listing price), or (1 + ρₛ)/2 for an order — what a
//! stated confidence of 0–100 is set against. Bundles and hotel calls have no single private
//! figure to ask for: probes on them are refused ([`BeliefError::Family`]).

use std::sync::LazyLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::game::{Seat, Setup};
use crate::protocol::read_number;
use crate::scenario::{DealSpace, Family, Role, Scenario};
use crate::template::SingleTemplate;
use crate::vocab::Usage;

/// What marks a belief probe's question (the first words of the template): the mock endpoint
/// recognises a probe by it.
pub const PROBE_MARKER: &str = "[BELIEF PROBE]";

/// The probe question's template (`prompts/probes/beliefs.j2`; not one of the episode's
/// prompts, so it is no part of their fingerprint).
const QUESTION: &str = include_str!("../../../../prompts/probes/beliefs.j2");

/// Why a seat cannot be probed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BeliefError {
    #[error(
        "[probes] beliefs: {0} scenarios have no single private figure to ask about (probes \
         ask for a price family's reservation price, an item family's priorities or Job \
         Interview's issue weights); leave probes off for them"
    )]
    Family(Family),
    #[error("[probes] beliefs: the probe question did not render: {0}")]
    Template(String),
}

/// A seat's estimate of the other side's private values, as read from its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Belief {
    /// The other side's reservation price.
    Price(f64),
    /// The other side's items or issues, most wanted first (by their names in the scenario).
    Order(Vec<String>),
}

/// One belief probe of one seat, with its score: what the record's `probes` keep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Probe {
    /// The seat asked.
    pub seat: Seat,
    /// The seat's own turn the probe was asked before (1 for its first move).
    pub turn: u32,
    /// The answer as the model wrote it.
    pub answer: String,
    /// The estimate read from the answer; absent when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub belief: Option<Belief>,
    /// The stated confidence, 0 to 100; absent when it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// A price's absolute error (in the scenario's currency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<f64>,
    /// An order's Spearman rank correlation with the true order, −1 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_correlation: Option<f64>,
    /// The error on one scale for every family: a price's error over the listing price; an
    /// order's (1 − ρₛ)/2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalized_error: Option<f64>,
    /// 1 − the normalised error, at least 0: what the confidence is set against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<f64>,
    /// The answer gave no estimate the reader could use (the raw text is kept in `answer`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreadable: bool,
    /// The estimate was read, but no score is defined for it: an order against a truth that
    /// is all ties (every item worth the same to the other side, so Spearman's ρₛ is
    /// undefined). Counted apart from the unreadable.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unscored: bool,
    /// Why the probe call failed (after its retries); the episode went on without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// The probe call's tokens, counted apart from the turns'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl Probe {
    /// The probe of `seat` before its own turn `turn`, answered `answer`, read and scored
    /// against `scenario` under `setup`: the one scoring `run` writes and `replay --verify`
    /// recomputes. `failed`: the call failed, and `answer` is empty.
    pub fn scored(
        scenario: &Scenario,
        setup: &Setup,
        seat: Seat,
        turn: u32,
        answer: String,
        usage: Option<Usage>,
        failed: Option<String>,
    ) -> Probe {
        let target = Target::of(scenario, setup, seat).ok();
        let read = match (&target, &failed) {
            (Some(target), None) => read_answer(&answer, target),
            _ => Read::default(),
        };
        let scores = match (&target, &read.belief) {
            (Some(target), Some(belief)) => target.score(belief),
            _ => None,
        };
        Probe {
            seat,
            turn,
            unreadable: failed.is_none() && read.belief.is_none(),
            unscored: read.belief.is_some() && scores.is_none(),
            answer,
            belief: read.belief,
            confidence: read.confidence,
            error: scores.and_then(|s| s.error),
            rank_correlation: scores.and_then(|s| s.rank_correlation),
            normalized_error: scores.map(|s| s.normalized),
            accuracy: scores.map(|s| (1.0 - s.normalized).max(0.0)),
            failed,
            usage,
        }
    }
}

/// The question a probe asks `seat` (its template rendered for the other side's private
/// block), or why the seat's scenario cannot be probed.
pub fn belief_question(
    scenario: &Scenario,
    setup: &Setup,
    seat: Seat,
) -> Result<String, BeliefError> {
    static TEMPLATE: LazyLock<Result<SingleTemplate, String>> =
        LazyLock::new(|| SingleTemplate::new(QUESTION.to_string()));
    let template = TEMPLATE
        .as_ref()
        .map_err(|e| BeliefError::Template(e.clone()))?;
    let input = match Target::of(scenario, setup, seat)? {
        Target::Price { buyer, .. } => serde_json::json!({
            "target": "price",
            "what": if buyer {
                "the most the buyer will pay (its budget)"
            } else {
                "the least the seller will take (its cost)"
            },
        }),
        Target::Order { names, issues, .. } => serde_json::json!({
            "target": "order",
            "names": names,
            "noun": if issues { "issues" } else { "items" },
            "singular": if issues { "issue" } else { "item" },
        }),
    };
    template.render(&input).map_err(BeliefError::Template)
}

/// Whether `scenario`'s family can be probed (see [`BeliefError::Family`]).
pub fn check_probed_family(scenario: &Scenario) -> Result<(), BeliefError> {
    match scenario.game {
        DealSpace::Price { .. } | DealSpace::Items { .. } | DealSpace::Issues { .. } => Ok(()),
        DealSpace::Bundle { .. } | DealSpace::Tickets { .. } => {
            Err(BeliefError::Family(scenario.family))
        }
    }
}

/// What a probe of one seat asks about: the other side's private block.
enum Target {
    /// The other side's reservation price (`buyer`: it is the buyer, the figure its budget).
    Price {
        truth: f64,
        listing: f64,
        buyer: bool,
    },
    /// The other side's items or issues (`issues`) with what each is worth to it, in the
    /// scenario's order; `aliases` are other names the reader takes (an issue's label).
    Order {
        names: Vec<String>,
        aliases: Vec<String>,
        worth: Vec<f64>,
        issues: bool,
    },
}

impl Target {
    fn of(scenario: &Scenario, setup: &Setup, seat: Seat) -> Result<Target, BeliefError> {
        let other: Role = setup.seats[seat.other()].role;
        match &scenario.game {
            DealSpace::Price {
                listing_price,
                buyer,
                seller,
            } => {
                let is_buyer = other == Role::Buyer;
                Ok(Target::Price {
                    truth: if is_buyer { buyer.budget } else { seller.cost },
                    listing: *listing_price,
                    buyer: is_buyer,
                })
            }
            DealSpace::Items { items, .. } => {
                let values = scenario
                    .item_values(other)
                    .map(|v| v.values.clone())
                    .unwrap_or_default();
                Ok(Target::Order {
                    names: items.iter().map(|i| i.name.clone()).collect(),
                    aliases: items.iter().map(|i| i.name.clone()).collect(),
                    worth: values.into_iter().map(f64::from).collect(),
                    issues: false,
                })
            }
            DealSpace::Issues { issues, .. } => {
                let weights = scenario
                    .issue_preferences(other)
                    .map(|p| p.issues.iter().map(|i| i.weight).collect())
                    .unwrap_or_default();
                Ok(Target::Order {
                    names: issues.iter().map(|i| i.key.clone()).collect(),
                    aliases: issues.iter().map(|i| i.label.clone()).collect(),
                    worth: weights,
                    issues: true,
                })
            }
            DealSpace::Bundle { .. } | DealSpace::Tickets { .. } => {
                Err(BeliefError::Family(scenario.family))
            }
        }
    }

    /// The belief's scores; `None` where it does not fit the target or no score is defined
    /// (an order whose truth is all ties).
    fn score(&self, belief: &Belief) -> Option<Scores> {
        match (self, belief) {
            (Target::Price { truth, listing, .. }, Belief::Price(estimate)) => {
                let error = (estimate - truth).abs();
                (*listing > 0.0).then(|| Scores {
                    error: Some(error),
                    rank_correlation: None,
                    normalized: error / listing,
                })
            }
            (Target::Order { names, worth, .. }, Belief::Order(order)) => {
                // The estimate's worth of each name: its place from the bottom (the first the
                // most wanted), so both vectors rank the same way.
                let n = order.len();
                let estimated: Vec<f64> = names
                    .iter()
                    .map(|name| {
                        order
                            .iter()
                            .position(|o| o == name)
                            .map_or(0.0, |i| (n - i) as f64)
                    })
                    .collect();
                let rho = spearman(&estimated, worth)?;
                Some(Scores {
                    error: None,
                    rank_correlation: Some(rho),
                    normalized: (1.0 - rho) / 2.0,
                })
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Scores {
    error: Option<f64>,
    rank_correlation: Option<f64>,
    normalized: f64,
}

/// What the reader found in an answer.
#[derive(Debug, Default, PartialEq)]
struct Read {
    belief: Option<Belief>,
    confidence: Option<f64>,
}

/// The one reader of a probe's answer: the last `Estimate:` and `Confidence:` lines, lenient
/// about case, spacing, Markdown emphasis, a currency sign, thousands separators and a `%`.
/// An order must name every item (or issue, by its key or label) exactly once, separated by
/// `>` (or commas); a confidence must be within 0–100. What cannot be read is left out.
fn read_answer(text: &str, target: &Target) -> Read {
    let estimate = field(text, "estimate");
    let belief = estimate.and_then(|value| match target {
        Target::Price { .. } => number(value).map(Belief::Price),
        Target::Order { names, aliases, .. } => order(value, names, aliases).map(Belief::Order),
    });
    let confidence = field(text, "confidence")
        .and_then(number)
        .filter(|c| (0.0..=100.0).contains(c));
    Read { belief, confidence }
}

/// The value of the last line `name: value` (any case; Markdown bullets and emphasis around
/// it ignored).
fn field<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    text.lines().rev().find_map(|line| {
        let line = line.trim().trim_start_matches(['-', '*', '#', '>', ' ']);
        let (key, value) = line.split_once(':')?;
        let key = key.trim().trim_matches('*').trim();
        key.eq_ignore_ascii_case(name)
            .then(|| value.trim().trim_matches('*').trim())
            .filter(|v| !v.is_empty())
    })
}

/// The first number in `value`, read by the one number reader (`protocol::read_number`:
/// thousands separators and a `k` for thousands, never an exponent): its token runs from its
/// first digit (with a minus sign just before it) to the first character no number has, so a
/// currency sign before it and a `%` or a word after it are left out.
fn number(value: &str) -> Option<f64> {
    let digit = value.find(|c: char| c.is_ascii_digit() || c == '.')?;
    let start = if value[..digit].ends_with('-') {
        digit - 1
    } else {
        digit
    };
    let rest = &value[start..];
    let end = rest
        .char_indices()
        .skip(1)
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '.' | ',')))
        .map_or(rest.len(), |(i, _)| i);
    read_number(rest[..end].trim_end_matches(['.', ',']))
}

/// The names of an order, each matched to the scenario's `names` (or the `aliases` beside
/// them) whatever its case, quotes or numbering; `None` unless every name comes exactly once.
fn order(value: &str, names: &[String], aliases: &[String]) -> Option<Vec<String>> {
    let sep = if value.contains('>') { '>' } else { ',' };
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for part in value.split(sep) {
        let word = part
            .trim()
            .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ')')
            .trim()
            .trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | '*' | '.' | ' '));
        let i = names
            .iter()
            .zip(aliases)
            .position(|(n, a)| n.eq_ignore_ascii_case(word) || a.eq_ignore_ascii_case(word))?;
        if out.contains(&names[i]) {
            return None;
        }
        out.push(names[i].clone());
    }
    (out.len() == names.len()).then_some(out)
}

/// Spearman's rank correlation of two lists of figures (higher ranks first in both, ties at
/// their average rank): the Pearson correlation of the ranks. `None` where either list has a
/// single rank throughout (no correlation is defined) or the lengths differ.
pub(crate) fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 2 {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = a.len() as f64;
    let mean = (n + 1.0) / 2.0;
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        sab += (x - mean) * (y - mean);
        saa += (x - mean) * (x - mean);
        sbb += (y - mean) * (y - mean);
    }
    (saa > 1e-12 && sbb > 1e-12).then(|| (sab / (saa * sbb).sqrt()).clamp(-1.0, 1.0))
}

/// Each figure's rank (1 the lowest), ties at their average rank.
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&i, &j| x[i].total_cmp(&x[j]));
    let mut out = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for k in &order[i..=j] {
            out[*k] = rank;
        }
        i = j + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{casino, job, learner_first_as, price_task};

    fn probe(s: &Scenario, setup: &Setup, answer: &str) -> Probe {
        Probe::scored(s, setup, Seat::Learner, 1, answer.into(), None, None)
    }

    /// The learner buys (L = 200, B = 180, C = 100): it is asked for the seller's cost. An
    /// estimate of 130 is 30 off, 30/200 = 0.15 of the listing: accuracy 0.85.
    #[test]
    fn a_price_estimate_is_scored_by_its_error_over_the_listing_price() {
        let s = price_task(200.0, 180.0, 100.0);
        let setup = learner_first_as(&s, Role::Buyer);
        let p = probe(&s, &setup, "Estimate: 130\nConfidence: 60");
        assert_eq!(p.belief, Some(Belief::Price(130.0)));
        assert_eq!((p.error, p.confidence), (Some(30.0), Some(60.0)));
        assert!((p.normalized_error.unwrap() - 0.15).abs() < 1e-12);
        assert!((p.accuracy.unwrap() - 0.85).abs() < 1e-12);
        assert!(!p.unreadable);
        // The seller is asked for the buyer's budget; an error past the listing scores 0.
        let seller = learner_first_as(&s, Role::Seller);
        let far = probe(&s, &seller, "Estimate: 500\nConfidence: 10");
        assert_eq!(far.error, Some(320.0));
        assert_eq!(far.accuracy, Some(0.0));
    }

    #[test]
    fn the_reader_is_lenient_about_spacing_case_and_markup() {
        let s = price_task(200.0, 180.0, 100.0);
        let setup = learner_first_as(&s, Role::Buyer);
        let p = probe(
            &s,
            &setup,
            "Let me think.\n  **estimate** :  $1,050.50 dollars\n- CONFIDENCE:75%",
        );
        assert_eq!(p.belief, Some(Belief::Price(1050.5)));
        assert_eq!(p.confidence, Some(75.0));
        let c = casino();
        let setup = learner_first_as(&c, Role::Agent1);
        let p = probe(
            &c,
            &setup,
            "Estimate:  Firewood >water>  FOOD \nConfidence: 40",
        );
        assert_eq!(
            p.belief,
            Some(Belief::Order(vec![
                "firewood".into(),
                "water".into(),
                "food".into()
            ]))
        );
    }

    /// A number is read by the one number reader: `k` is thousands, an exponent is no number
    /// (`1.2e3` read as 1.2 would be a wrong estimate, not a missing one).
    #[test]
    fn an_estimate_is_read_as_a_moves_number_is() {
        let s = price_task(200.0, 180.0, 100.0);
        let setup = learner_first_as(&s, Role::Buyer);
        let p = probe(&s, &setup, "Estimate: $35k\nConfidence: 60");
        assert_eq!(p.belief, Some(Belief::Price(35_000.0)));
        let p = probe(&s, &setup, "Estimate: 1.2e3\nConfidence: 60");
        assert_eq!((p.belief, p.unreadable), (None, true));
        let p = probe(
            &s,
            &setup,
            "Estimate: about -5 dollars.\nConfidence: 60/100",
        );
        assert_eq!(
            (p.belief, p.confidence),
            (Some(Belief::Price(-5.0)), Some(60.0))
        );
    }

    /// Deal or No Deal often values every item the same to one side: an order read against
    /// that truth has no rank correlation. It is unscored, not unreadable.
    #[test]
    fn an_order_against_an_all_ties_truth_is_unscored_not_unreadable() {
        let mut c = (*casino()).clone();
        if let DealSpace::Items { agent_2, .. } = &mut c.game {
            agent_2.values = vec![4; agent_2.values.len()];
        }
        let setup = learner_first_as(&c, Role::Agent1);
        let p = probe(
            &c,
            &setup,
            "Estimate: water > firewood > food\nConfidence: 50",
        );
        assert!(p.belief.is_some(), "{p:?}");
        assert_eq!((p.unreadable, p.unscored), (false, true), "{p:?}");
        assert_eq!((p.accuracy, p.rank_correlation), (None, None));
        let p = probe(&c, &setup, "Estimate: water\nConfidence: 50");
        assert_eq!((p.unreadable, p.unscored), (true, false), "{p:?}");
    }

    #[test]
    fn an_unreadable_answer_is_kept_raw_and_scored_nothing() {
        let c = casino();
        let setup = learner_first_as(&c, Role::Agent1);
        for answer in [
            "I would rather not say.",
            "Estimate: food > water\nConfidence: 50",
            "Estimate: food > food > water\nConfidence: 50",
            "Estimate: food > water > tents\nConfidence: 50",
        ] {
            let p = probe(&c, &setup, answer);
            assert!(p.unreadable, "{answer}");
            assert_eq!((p.belief, p.accuracy), (None, None), "{answer}");
            assert_eq!(p.answer, answer);
        }
        // A confidence out of range is not read; the estimate still is.
        let p = probe(
            &c,
            &setup,
            "Estimate: food, water, firewood\nConfidence: 150",
        );
        assert_eq!((p.confidence, p.unreadable), (None, false));
    }

    /// CaSiNo: the other side (agent_2) values food/water/firewood 3/4/5, so its order is
    /// firewood > water > food. The estimate water > firewood > food ranks them 2, 3, 1 (3 the
    /// top) against the truth's 3, 2, 1 ... as vectors over (food, water, firewood): estimate
    /// (1, 3, 2), truth (1, 2, 3): d² = 0 + 1 + 1 = 2, ρₛ = 1 − 6·2/(3·8) = 0.5; accuracy
    /// (1 + 0.5)/2 = 0.75. The reverse order is ρₛ = −1, accuracy 0.
    #[test]
    fn an_order_is_scored_by_its_spearman_correlation() {
        let c = casino();
        let setup = learner_first_as(&c, Role::Agent1);
        let p = probe(
            &c,
            &setup,
            "Estimate: water > firewood > food\nConfidence: 50",
        );
        assert!((p.rank_correlation.unwrap() - 0.5).abs() < 1e-12, "{p:?}");
        assert!((p.accuracy.unwrap() - 0.75).abs() < 1e-12);
        let right = probe(&c, &setup, "Estimate: firewood > water > food");
        assert_eq!(right.rank_correlation, Some(1.0));
        let reverse = probe(&c, &setup, "Estimate: food > water > firewood");
        assert_eq!(
            (reverse.rank_correlation, reverse.accuracy),
            (Some(-1.0), Some(0.0))
        );
    }

    /// Job Interview (the fixture): the recruiter weighs salary 0.5, company 0.5, position 0,
    /// holiday 0 — ranks over (salary, company, position, holiday) 3.5, 3.5, 1.5, 1.5. The
    /// worker's estimate salary > company > position > holiday is 4, 3, 2, 1: centred,
    /// (1.5, 0.5, −0.5, −1.5) against (1, 1, −1, −1): Σ = 1.5 + 0.5 + 0.5 + 1.5 = 4;
    /// √(5 · 4) = √20; ρₛ = 4/√20 ≈ 0.894. Labels are read as the keys.
    #[test]
    fn issue_weights_are_scored_with_ties_at_their_average_rank() {
        let j = job();
        let setup = learner_first_as(&j, Role::Worker);
        let p = probe(
            &j,
            &setup,
            "Estimate: Salary > company > position > Weekly holiday\nConfidence: 80",
        );
        let expected = 4.0 / 20f64.sqrt();
        assert!(
            (p.rank_correlation.unwrap() - expected).abs() < 1e-12,
            "{p:?}"
        );
        assert_eq!(
            p.belief,
            Some(Belief::Order(
                ["salary", "company", "position", "holiday"]
                    .map(String::from)
                    .to_vec()
            ))
        );
    }

    #[test]
    fn spearman_is_one_for_the_same_order_and_undefined_without_spread() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[5.0, 5.0, 5.0]), None);
    }

    #[test]
    fn questions_name_the_figure_asked_and_bundles_are_refused() {
        let s = price_task(200.0, 180.0, 100.0);
        let q = belief_question(&s, &learner_first_as(&s, Role::Buyer), Seat::Learner).unwrap();
        assert!(q.starts_with(PROBE_MARKER) && q.contains("its cost"), "{q}");
        let c = casino();
        let q = belief_question(&c, &learner_first_as(&c, Role::Agent1), Seat::Learner).unwrap();
        assert!(
            q.contains("food, water, firewood") && q.contains("Estimate:"),
            "{q}"
        );
        let b = crate::fixtures::bundle();
        let setup = crate::fixtures::setup_with(&b, &Default::default());
        assert_eq!(
            belief_question(&b, &setup, Seat::Learner),
            Err(BeliefError::Family(Family::Bundle))
        );
    }
}
