//! Replaying a record: rebuild its episode exactly — the same turns, views and outcome — from
//! the scenario and the prompt templates it was played with, or refuse and say what differs.
//!
//! A record keeps the digest of its scenario and the fingerprint of its templates (see
//! [`crate::digest`]); replay checks both before stepping a single completion, because other
//! templates give other views and another scenario other utilities, and either would make a
//! "replay" quietly wrong. A record written before these fields existed is replayed unchecked.

use std::fmt;
use std::sync::Arc;

use crate::digest::Digest;
use crate::game::{Episode, GameError, Leftover, Prompts};
use crate::scenario::Scenario;

use super::EpisodeRecord;

/// Why a record cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("episode {episode} was played on scenario {expected}, not {found}")]
    WrongScenario {
        episode: String,
        expected: String,
        found: String,
    },
    #[error("scenario {scenario} is not the one episode {episode} was played on: its digest is {found}, the record's is {expected} (the scenario file changed since the run)")]
    ScenarioChanged {
        episode: String,
        scenario: String,
        expected: Digest,
        found: Digest,
    },
    #[error("episode {episode} was played with other prompt templates: their fingerprint was {expected}, these give {found}; {}", describe(.differing))]
    TemplatesChanged {
        episode: String,
        expected: Digest,
        found: Digest,
        /// The templates known to differ (empty when only this build's built-ins differ from
        /// those of the build that wrote the record).
        differing: Vec<TemplateDiff>,
    },
    #[error("episode {episode}: {source}")]
    Game { episode: String, source: GameError },
}

/// One template that is not what the record was played with. A record names only its
/// templates that were not built-ins, so `recorded: None` means "the built-in template of the
/// build that wrote the record".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateDiff {
    pub name: String,
    /// The digest of the template the episode was played with, where it was not a built-in.
    pub recorded: Option<Digest>,
    /// The digest of the template of that name here; `None` when there is none.
    pub here: Option<Digest>,
    /// The template here is this build's built-in.
    pub here_builtin: bool,
}

impl fmt::Display for TemplateDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let recorded = match self.recorded {
            Some(d) => format!("a prompts-directory template {d}"),
            None => "its build's built-in, if any".to_string(),
        };
        let here = match (self.here, self.here_builtin) {
            (None, _) => "none".to_string(),
            (Some(d), true) => format!("the built-in {d}"),
            (Some(d), false) => format!("a prompts-directory template {d}"),
        };
        write!(f, "{} (played with {recorded}, here {here})", self.name)
    }
}

fn describe(differing: &[TemplateDiff]) -> String {
    if differing.is_empty() {
        return "the built-in templates of this build are not those of the build that wrote \
                the record"
            .to_string();
    }
    let list: Vec<String> = differing.iter().map(ToString::to_string).collect();
    format!(
        "differing: {}; replay with the prompts directory of the run",
        list.join(", ")
    )
}

impl EpisodeRecord {
    /// Rebuild the episode of this record with `prompts`, stepping every recorded completion
    /// in order, after checking that `scenario` and `prompts` are the ones it was played with.
    /// The scenario's digest is computed here (one serialization of the scenario, small next to
    /// the replay itself).
    pub fn replay(
        &self,
        scenario: &Arc<Scenario>,
        prompts: &Arc<Prompts>,
    ) -> Result<Episode, ReplayError> {
        self.replay_observing(scenario, prompts, |_| {})
    }

    /// Like [`EpisodeRecord::replay`], but where the engine ends the episode before the
    /// record's last completion, stop there instead of refusing: the episode, and how many of
    /// the record's completions were left unplayed (0 when the replay used them all). This is
    /// what `dealgym replay --verify` compares a record with, so that a record the engine no
    /// longer agrees with is reported field by field rather than as one error.
    pub fn replay_until_end(
        &self,
        scenario: &Arc<Scenario>,
        prompts: &Arc<Prompts>,
    ) -> Result<(Episode, usize), ReplayError> {
        let mut episode = self.checked_start(scenario, prompts)?;
        let left = episode
            .step_all(self.completions(), Leftover::Stop, |_| {})
            .map_err(|e| self.game_error(e))?;
        Ok((episode, left))
    }

    /// [`EpisodeRecord::replay`], calling `before_step` with the episode just before each
    /// recorded completion is stepped: the moment its call was made, when the view of the seat
    /// to move is exactly what that call sent. Views only grow, so a reader that notes each
    /// call's view length can cut every call's prompt out of the final views (what `export`
    /// does) without copying a view per turn.
    pub fn replay_observing(
        &self,
        scenario: &Arc<Scenario>,
        prompts: &Arc<Prompts>,
        before_step: impl FnMut(&Episode),
    ) -> Result<Episode, ReplayError> {
        let mut episode = self.checked_start(scenario, prompts)?;
        episode
            .step_all(self.completions(), Leftover::Refuse, before_step)
            .map_err(|e| self.game_error(e))?;
        Ok(episode)
    }

    /// The episode at its start, after checking the scenario and templates are this record's.
    fn checked_start(
        &self,
        scenario: &Arc<Scenario>,
        prompts: &Arc<Prompts>,
    ) -> Result<Episode, ReplayError> {
        self.check_replay_inputs(scenario, prompts)?;
        Episode::with_prompts(scenario.clone(), self.setup.clone(), prompts.clone())
            .map_err(|e| self.game_error(e))
    }

    fn game_error(&self, source: crate::game::GameError) -> ReplayError {
        ReplayError::Game {
            episode: self.episode_id.clone(),
            source,
        }
    }

    /// Check that `scenario` and `prompts` are those this record was played with: the same
    /// scenario id and digest, the same templates fingerprint. A check the record has no field
    /// for (a record older than the field) passes.
    pub fn check_replay_inputs(
        &self,
        scenario: &Scenario,
        prompts: &Prompts,
    ) -> Result<(), ReplayError> {
        if scenario.id != self.scenario_id {
            return Err(ReplayError::WrongScenario {
                episode: self.episode_id.clone(),
                expected: self.scenario_id.clone(),
                found: scenario.id.clone(),
            });
        }
        if let Some(expected) = self.scenario_digest {
            let found = scenario.digest();
            if found != expected {
                return Err(ReplayError::ScenarioChanged {
                    episode: self.episode_id.clone(),
                    scenario: scenario.id.clone(),
                    expected,
                    found,
                });
            }
        }
        if let Some(expected) = self.prompts_digest {
            let found = prompts.fingerprint();
            if !prompts.renders_as(expected, self.setup.rules.talk.is_on()) {
                return Err(ReplayError::TemplatesChanged {
                    episode: self.episode_id.clone(),
                    expected,
                    found,
                    differing: self.template_diffs(prompts),
                });
            }
        }
        Ok(())
    }

    /// The templates that differ between this record and `prompts`, as far as the record can
    /// tell: each of its non-built-in templates whose digest is not the one here, and each
    /// non-built-in template here that the record played as a built-in.
    fn template_diffs(&self, prompts: &Prompts) -> Vec<TemplateDiff> {
        let here = |name: &str| {
            let digest = prompts.template_digest(name);
            let builtin = digest.is_some() && !prompts.overrides().contains_key(name);
            (digest, builtin)
        };
        let mut diffs = Vec::new();
        for (name, recorded) in &self.prompt_overrides {
            let (digest, builtin) = here(name);
            if digest != Some(*recorded) {
                diffs.push(TemplateDiff {
                    name: name.clone(),
                    recorded: Some(*recorded),
                    here: digest,
                    here_builtin: builtin,
                });
            }
        }
        for (name, digest) in prompts.overrides() {
            if !self.prompt_overrides.contains_key(name) {
                diffs.push(TemplateDiff {
                    name: name.clone(),
                    recorded: None,
                    here: Some(*digest),
                    here_builtin: false,
                });
            }
        }
        diffs.sort_by(|a, b| a.name.cmp(&b.name));
        diffs
    }
}
