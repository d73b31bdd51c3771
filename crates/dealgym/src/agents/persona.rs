//! Personas for LLM players: named addenda to the system prompt, drawn per episode (per group)
//! with configurable weights and recorded with the episode.

use std::collections::BTreeMap;

use rand::Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::game::{Persona, Seat};

const BUILTIN: &[(&str, &str)] = &[
    (
        "uncompromising",
        include_str!("../../../../prompts/personas/uncompromising.txt"),
    ),
    (
        "selfish",
        include_str!("../../../../prompts/personas/selfish.txt"),
    ),
    (
        "anchoring",
        include_str!("../../../../prompts/personas/anchoring.txt"),
    ),
    (
        "cooperative",
        include_str!("../../../../prompts/personas/cooperative.txt"),
    ),
];

/// The built-in persona names.
pub(crate) fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|(n, _)| *n)
}

/// The built-in persona of that name.
pub fn builtin(name: &str) -> Option<Persona> {
    BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, text)| Persona {
            name: n.to_string(),
            text: text.trim().to_string(),
        })
}

/// Which seats draw a persona from the weights (a player's own fixed persona is kept either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PersonaSeats {
    /// Every language-model seat (the default).
    #[default]
    Both,
    /// The opponent alone; the learner plays as itself. The CaSiNo harness conditions "the
    /// opponent['s] system prompt … on one of four personas, sampled with equal probability"
    /// (§3.3.3) and breaks its tables down by opponent persona (§4.2).
    Opponent,
    /// The learner alone.
    Learner,
}

impl PersonaSeats {
    /// Whether `seat` draws a persona.
    pub(crate) fn includes(self, seat: Seat) -> bool {
        match self {
            PersonaSeats::Both => true,
            PersonaSeats::Opponent => seat == Seat::Opponent,
            PersonaSeats::Learner => seat == Seat::Learner,
        }
    }
}

/// Persona weights. The name `none` stands for "no persona". Custom texts can be added under
/// `texts`; `seats` says who draws one.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PersonaConfig {
    /// Persona name → the weight it is drawn with (`none`: no persona).
    pub weights: BTreeMap<String, f64>,
    /// Persona name → its text, beside the built-in personas.
    pub texts: BTreeMap<String, String>,
    /// Which seats draw a persona.
    #[serde(skip_serializing_if = "is_both")]
    pub seats: PersonaSeats,
}

fn is_both(seats: &PersonaSeats) -> bool {
    *seats == PersonaSeats::Both
}

impl PersonaConfig {
    /// Check that every weighted persona has a text and the weights make sense.
    pub(crate) fn validate(&self) -> Result<(), String> {
        for (name, w) in &self.weights {
            if !w.is_finite() || *w < 0.0 {
                return Err(format!(
                    "persona weight for `{name}` must be a non-negative number"
                ));
            }
            if name != "none" && !self.texts.contains_key(name) && builtin(name).is_none() {
                return Err(format!(
                    "unknown persona `{name}` (built in: {}, or `none`; add others under [personas.texts])",
                    builtin_names().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        let total = self.weights.values().sum::<f64>();
        if !self.weights.is_empty() && total <= 0.0 {
            return Err("persona weights must not all be zero".into());
        }
        // A draw picks a point below the total: an infinite one cannot be drawn from.
        if !total.is_finite() {
            return Err(format!(
                "persona weights must add up to a finite number; they add up to {total}"
            ));
        }
        Ok(())
    }

    /// Draw `seat`'s persona. With no weights, or for a seat that draws none (`seats`), nothing
    /// is drawn and the RNG is not used.
    pub(crate) fn draw(&self, seat: Seat, rng: &mut impl Rng) -> Option<Persona> {
        if !self.seats.includes(seat) {
            return None;
        }
        let total: f64 = self.weights.values().sum();
        if self.weights.is_empty() || total <= 0.0 {
            return None;
        }
        let mut x = rng.random_range(0.0..total);
        for (name, w) in &self.weights {
            if x < *w {
                return self.named(name);
            }
            x -= w;
        }
        None
    }

    fn named(&self, name: &str) -> Option<Persona> {
        if name == "none" {
            return None;
        }
        match self.texts.get(name) {
            Some(text) => Some(Persona {
                name: name.to_string(),
                text: text.clone(),
            }),
            None => builtin(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_that_add_up_past_any_number_are_refused() {
        let with = |a: f64, b: f64| PersonaConfig {
            weights: [("cooperative".to_string(), a), ("none".to_string(), b)].into(),
            ..PersonaConfig::default()
        };
        assert_eq!(with(1.0, 1.0).validate(), Ok(()));
        assert_eq!(
            with(1e308, 1e308).validate().unwrap_err(),
            "persona weights must add up to a finite number; they add up to inf"
        );
        assert!(with(f64::NAN, 1.0).validate().is_err());
    }
}
