//! Personas for LLM players: named addenda to the system prompt, drawn per episode (per group)
//! with configurable weights and recorded with the episode.

use std::collections::BTreeMap;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::game::Persona;

const BUILTIN: &[(&str, &str)] = &[
    (
        "uncompromising",
        include_str!("../../prompts/personas/uncompromising.txt"),
    ),
    (
        "selfish",
        include_str!("../../prompts/personas/selfish.txt"),
    ),
    (
        "anchoring",
        include_str!("../../prompts/personas/anchoring.txt"),
    ),
    (
        "cooperative",
        include_str!("../../prompts/personas/cooperative.txt"),
    ),
];

/// The built-in persona names.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
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

/// Persona weights. The name `none` stands for "no persona". Custom texts can be added under
/// `texts`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PersonaConfig {
    pub weights: BTreeMap<String, f64>,
    pub texts: BTreeMap<String, String>,
}

impl PersonaConfig {
    /// Check that every weighted persona has a text and the weights make sense.
    pub fn validate(&self) -> Result<(), String> {
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
        if !self.weights.is_empty() && self.weights.values().sum::<f64>() <= 0.0 {
            return Err("persona weights must not all be zero".into());
        }
        Ok(())
    }

    /// Draw a persona. With no weights, nothing is drawn and the RNG is not used.
    pub fn draw(&self, rng: &mut impl Rng) -> Option<Persona> {
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
