//! `script:FILE`: plays a JSON array of raw completions in order, the same list in every episode.

use std::path::Path;

use crate::limits::{read_file, MAX_SCRIPT_BYTES};

use super::PlayerError;

/// A scripted player.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptPlayer {
    pub completions: Vec<String>,
    /// The file it was read from, for messages.
    pub file: String,
}

impl ScriptPlayer {
    /// Read the script; the error says what is wrong with the file. At most
    /// [`MAX_SCRIPT_BYTES`] are read: `/dev/zero` or a huge file is refused, not read whole.
    pub fn load(path: &Path) -> Result<Self, String> {
        let file = path.display().to_string();
        let text = read_file(path, MAX_SCRIPT_BYTES).map_err(|e| format!("{file}: {e}"))?;
        let completions: Vec<String> = serde_json::from_str(&text)
            .map_err(|e| format!("{file}: expected a JSON array of strings: {e}"))?;
        Ok(ScriptPlayer { completions, file })
    }

    /// The completion for the seat's `attempt`-th call of the episode.
    pub fn complete(&self, attempt: usize) -> Result<String, PlayerError> {
        self.completions
            .get(attempt)
            .cloned()
            .ok_or_else(|| PlayerError::ScriptExhausted {
                file: self.file.clone(),
                played: self.completions.len(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_refused_at_the_limit_not_read_whole() {
        let e = ScriptPlayer::load(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("longer than") && e.contains("/dev/zero"), "{e}");
    }
}
