//! `script:FILE`: plays a JSON array of raw completions in order, the same list in every episode.

use std::path::Path;

use super::PlayerError;

/// A scripted player.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptPlayer {
    pub completions: Vec<String>,
}

impl ScriptPlayer {
    pub fn load(path: &Path) -> Result<Self, PlayerError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PlayerError::Spec(format!("script {}: {e}", path.display())))?;
        let completions: Vec<String> = serde_json::from_str(&text).map_err(|e| {
            PlayerError::Spec(format!(
                "script {}: expected a JSON array of strings: {e}",
                path.display()
            ))
        })?;
        Ok(ScriptPlayer { completions })
    }

    /// The completion for the seat's `attempt`-th call of the episode.
    pub fn complete(&self, attempt: usize) -> Result<String, PlayerError> {
        self.completions.get(attempt).cloned().ok_or_else(|| {
            PlayerError::Backend(format!(
                "script exhausted after {} completions",
                self.completions.len()
            ))
        })
    }
}
