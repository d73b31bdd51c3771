//! Scoring candidates and committing one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A value model: how good each candidate turn is in a state (DialogXpert §3.2's `Q(s, a)`,
/// there a BERT encoder under a small MLP). `state` is [`super::state_text`]'s text for the
/// seat to move; a candidate is a raw completion (or an act label, for a planner that proposes
/// acts). In-process planners implement this; the runtime also reaches one over HTTP.
pub trait ValueModel: Send + Sync {
    /// One value per candidate, in order; an error (a value model that cannot answer) is the
    /// seat's backend failure, never a silent choice.
    fn values(&self, state: &str, candidates: &[&str]) -> Result<Vec<f64>, String>;
}

impl<F> ValueModel for F
where
    F: Fn(&str, &str) -> f64 + Send + Sync,
{
    fn values(&self, state: &str, candidates: &[&str]) -> Result<Vec<f64>, String> {
        Ok(candidates.iter().map(|c| self(state, c)).collect())
    }
}

/// The one selection rule: the candidate of highest value, the first of equals (so a value
/// model that scores all alike commits the first candidate, as no value model does). A value
/// that is not a number is never chosen while one is; `None` for no candidates.
pub fn choose(values: &[f64]) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    for (i, v) in values.iter().copied().enumerate() {
        if v.is_nan() {
            continue;
        }
        if best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i).or((!values.is_empty()).then_some(0))
}

/// One candidate a planner proposed for a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Candidate {
    /// The completion as proposed (the one committed is also the turn's `raw`).
    pub raw: String,
    /// Its dialogue-act label, where it wrote one (`#label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<String>,
    /// What the value model gave it; absent when the planner commits the first candidate
    /// without a value model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

/// The candidates a turn was chosen from and the one committed: a propose-then-commit seat's
/// turn carries them in the record (`candidates`, `chosen`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Planning {
    pub candidates: Vec<Candidate>,
    /// Index into `candidates` of the completion the turn was played with.
    pub chosen: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_value_wins_and_ties_go_to_the_first() {
        assert_eq!(choose(&[0.1, 0.7, 0.7, 0.2]), Some(1));
        assert_eq!(choose(&[0.0, 0.0]), Some(0));
        assert_eq!(choose(&[f64::NAN, -1.0]), Some(1));
        assert_eq!(choose(&[f64::NAN]), Some(0));
        assert_eq!(choose(&[]), None);
    }

    #[test]
    fn a_closure_is_a_value_model() {
        let longest = |_: &str, c: &str| c.len() as f64;
        assert_eq!(
            longest.values("s", &["ab", "abcd"]).unwrap(),
            vec![2.0, 4.0]
        );
    }
}
