//! `script:FILE`: plays a JSON array of raw completions in order, the same list in every episode.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::SystemTime;

use crate::limits::{read_file, MAX_SCRIPT_BYTES};

use super::PlayerError;

/// A scripted player.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptPlayer {
    /// Shared by every player of the same file ([`ScriptPlayer::load`]).
    pub(crate) completions: Arc<[String]>,
    /// The file it was read from, for messages.
    pub(crate) file: String,
}

impl ScriptPlayer {
    /// Read the script; the error says what is wrong with the file. At most
    /// [`MAX_SCRIPT_BYTES`] are read: `/dev/zero` or a huge file is refused, not read whole.
    /// A file already loaded and still held by a player is not read again, whatever path
    /// names it (`a.json`, `./a.json`, `dir//a.json`, a link): a server whose clients name
    /// scripts keeps one copy of each file, not one per spelling (`LOADED`).
    pub(crate) fn load(path: &Path) -> Result<Self, String> {
        let file = path.display().to_string();
        let known = std::fs::canonicalize(path)
            .ok()
            .and_then(|real| Some((stamp(&real)?, real)));
        if let Some((stamp, real)) = &known {
            if let Some(completions) = loaded(real, *stamp) {
                return Ok(ScriptPlayer { completions, file });
            }
        }
        let text = read_file(path, MAX_SCRIPT_BYTES).map_err(|e| format!("{file}: {e}"))?;
        let completions: Vec<String> = serde_json::from_str(&text)
            .map_err(|e| format!("{file}: expected a JSON array of strings: {e}"))?;
        let mut completions: Arc<[String]> = completions.into();
        if let Some((stamp, real)) = known {
            completions = keep(real, stamp, completions);
        }
        Ok(ScriptPlayer { completions, file })
    }

    /// The completion for the seat's `attempt`-th call of the episode.
    pub(crate) fn complete(&self, attempt: usize) -> Result<String, PlayerError> {
        self.completions
            .get(attempt)
            .cloned()
            .ok_or_else(|| PlayerError::ScriptExhausted {
                file: self.file.clone(),
                played: self.completions.len(),
            })
    }
}

/// What tells one state of a script file from another: its identity, length and
/// modification time. A file changed since it was loaded is read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    identity: (u64, u64),
    len: u64,
    modified: Option<SystemTime>,
}

/// The stamp of the regular file at `real`; `None` for anything else (a device is never
/// shared: it is read, and refused, as it is).
fn stamp(real: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(real).ok().filter(|m| m.is_file())?;
    #[cfg(unix)]
    let identity = {
        use std::os::unix::fs::MetadataExt;
        (meta.dev(), meta.ino())
    };
    #[cfg(not(unix))]
    let identity = (0, 0);
    Some(Stamp {
        identity,
        len: meta.len(),
        modified: meta.modified().ok(),
    })
}

/// The scripts loaded, by their file's real path, while a player holds them (weakly: a script
/// no player holds is freed, and its entry dropped at the next load).
type Loaded = HashMap<PathBuf, (Stamp, Weak<[String]>)>;
static LOADED: LazyLock<Mutex<Loaded>> = LazyLock::new(Mutex::default);

fn loaded_scripts() -> std::sync::MutexGuard<'static, Loaded> {
    LOADED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The script at `real` as it is now (`stamp`), if a player holds it.
fn loaded(real: &Path, stamp: Stamp) -> Option<Arc<[String]>> {
    let scripts = loaded_scripts();
    let (was, script) = scripts.get(real)?;
    (*was == stamp).then(|| script.upgrade()).flatten()
}

/// Keep `completions`, just read from `real`, for the next load of that file; the copy
/// another load kept meanwhile wins, so two concurrent loads still share one.
fn keep(real: PathBuf, stamp: Stamp, completions: Arc<[String]>) -> Arc<[String]> {
    let mut scripts = loaded_scripts();
    scripts.retain(|_, (_, script)| script.strong_count() > 0);
    if let Some((was, script)) = scripts.get(&real) {
        if let Some(kept) = script.upgrade().filter(|_| *was == stamp) {
            return kept;
        }
    }
    scripts.insert(real, (stamp, Arc::downgrade(&completions)));
    completions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_named_many_ways_is_loaded_once_and_again_once_changed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, r#"["Action: [WALK_AWAY]"]"#).unwrap();
        let link = dir.path().join("link.json");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&path, &link).unwrap();
        #[cfg(not(unix))]
        std::fs::copy(&path, &link).unwrap();
        let first = ScriptPlayer::load(&path).unwrap();
        let spellings = [
            dir.path().join(".").join("s.json"),
            PathBuf::from(format!("{}//s.json", dir.path().display())),
            dir.path().join("sub/../s.json"),
            link,
        ];
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        for spelling in &spellings[..3] {
            let again = ScriptPlayer::load(spelling).unwrap();
            assert!(
                Arc::ptr_eq(&first.completions, &again.completions),
                "{}",
                spelling.display()
            );
            assert_eq!(
                again.file,
                spelling.display().to_string(),
                "messages name it as given"
            );
        }
        #[cfg(unix)]
        assert!(Arc::ptr_eq(
            &first.completions,
            &ScriptPlayer::load(&spellings[3]).unwrap().completions
        ));
        // Changed (another length), it is read again.
        std::fs::write(&path, r#"["Action: [WALK_AWAY]", "Action: [ACCEPT_DEAL]"]"#).unwrap();
        let changed = ScriptPlayer::load(&path).unwrap();
        assert_eq!(changed.completions.len(), 2);
        assert_eq!(first.completions.len(), 1, "a player keeps what it loaded");
    }

    #[test]
    fn an_endless_file_is_refused_at_the_limit_not_read_whole() {
        let e = ScriptPlayer::load(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("longer than") && e.contains("/dev/zero"), "{e}");
    }
}
