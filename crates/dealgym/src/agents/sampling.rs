//! Sampling defaults per seat (`[sampling.learner]`, `[sampling.opponent]`): what a paper fixes
//! for every model seat — the BATNA paper's "train temperature 1.0 (learner), 0.7 (opp.)" —
//! without the user writing a `[players.NAME]` table for each. A setting the player gives
//! itself (in its `[players.NAME]` table) wins over the default; a rule or a script ignores
//! them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::limits::check_sampling;
use crate::llm::EndpointSettings;

/// The sampling settings a model seat gets where its player leaves them unset.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingDefaults {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

/// `[sampling]`: the defaults of each seat.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingConfig {
    pub learner: SamplingDefaults,
    pub opponent: SamplingDefaults,
}

impl SamplingDefaults {
    /// `settings` with each value it leaves unset taken from these defaults.
    pub(crate) fn fill(&self, mut settings: EndpointSettings) -> EndpointSettings {
        settings.temperature = settings.temperature.or(self.temperature);
        settings.top_p = settings.top_p.or(self.top_p);
        settings.max_tokens = settings.max_tokens.or(self.max_tokens);
        settings
    }

    /// Check the values by [`check_sampling`]'s rule, naming `table`.
    pub(crate) fn validate(&self, table: &str) -> Result<(), String> {
        check_sampling(
            &format!("{table} "),
            self.temperature,
            self.top_p,
            self.max_tokens,
        )
    }
}

impl SamplingConfig {
    pub(crate) fn validate(&self) -> Result<(), String> {
        self.learner.validate("[sampling.learner]")?;
        self.opponent.validate("[sampling.opponent]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_players_own_setting_wins_over_the_default() {
        let d = SamplingDefaults {
            temperature: Some(0.7),
            top_p: Some(0.9),
            max_tokens: Some(512),
        };
        let own = EndpointSettings {
            temperature: Some(1.0),
            ..EndpointSettings::default()
        };
        let filled = d.fill(own);
        assert_eq!(
            (filled.temperature, filled.top_p, filled.max_tokens),
            (Some(1.0), Some(0.9), Some(512))
        );
        assert!(SamplingDefaults {
            temperature: Some(3.0),
            ..d
        }
        .validate("[sampling.learner]")
        .is_err());
    }
}
