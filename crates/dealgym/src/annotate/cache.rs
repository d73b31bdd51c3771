//! The annotator's answers on disk: one JSON line per answer the endpoint gave
//! (`{"key", "model", "template", "reply"}`), appended and flushed as it arrives, keyed by the
//! model, the template's fingerprint and the prompt. A resumed or repeated annotation reads
//! them back and asks the endpoint nothing it has answered before; another model or template
//! never meets an answer it did not give. A line cut off by a kill is dropped (its prompt is
//! asked again), by the record files' rule ([`read_appended`]); failures are never cached.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::digest::{Digest, Fnv1a64};
use crate::record::{cut_off_tail, read_appended, TailError};

/// The file in the cache directory.
pub const ANSWERS_FILE: &str = "answers.jsonl";

/// A problem with the cache directory.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    /// A line that is not a cached answer and not the last ([`read_appended`]'s rule).
    #[error(transparent)]
    Read(#[from] TailError),
}

#[derive(Serialize, Deserialize)]
struct Entry {
    key: Digest,
    model: String,
    template: Digest,
    reply: String,
}

/// The answers read from disk and the file new ones are appended to.
#[derive(Debug)]
pub(crate) struct AnswerCache {
    answers: Mutex<HashMap<Digest, String>>,
    file: Mutex<File>,
    path: PathBuf,
}

/// The cache key of a prompt sent to `model` from the template with `template` fingerprint.
pub(crate) fn answer_key(model: &str, template: Digest, prompt: &str) -> Digest {
    let mut h = Fnv1a64::new();
    h.field(model.as_bytes());
    h.field(&template.0.to_le_bytes());
    h.field(prompt.as_bytes());
    h.finish()
}

impl AnswerCache {
    /// Open (creating) the cache in `dir`, reading every whole answer in it. A cut-off or
    /// unreadable last line is cut away; a bad line before it is an error.
    pub fn open(dir: &Path) -> Result<AnswerCache, CacheError> {
        let path = dir.join(ANSWERS_FILE);
        let io = |source| CacheError::Io {
            file: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|source| CacheError::Io {
            file: dir.display().to_string(),
            source,
        })?;
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        let mut answers = HashMap::new();
        let tail = read_appended::<Entry>(&file, &path.display().to_string(), |entry, _| {
            answers.insert(entry.key, entry.reply);
        })?;
        if let Some(cut) = &tail.cut {
            eprintln!("{}", crate::record::cut_note(&path, cut));
        }
        cut_off_tail(&mut file, &tail).map_err(io)?;
        Ok(AnswerCache {
            answers: Mutex::new(answers),
            file: Mutex::new(file),
            path,
        })
    }

    /// The answer cached under `key`.
    pub fn get(&self, key: Digest) -> Option<String> {
        self.lock_answers().get(&key).cloned()
    }

    /// Keep `reply`, on disk first (one whole line, flushed), so a kill after this call never
    /// asks for it again.
    pub fn put(
        &self,
        key: Digest,
        model: &str,
        template: Digest,
        reply: &str,
    ) -> Result<(), CacheError> {
        let entry = Entry {
            key,
            model: model.to_string(),
            template,
            reply: reply.to_string(),
        };
        let mut line = serde_json::to_vec(&entry).expect("an entry serializes");
        line.push(b'\n');
        {
            let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
            file.write_all(&line)
                .and_then(|_| file.flush())
                .map_err(|source| CacheError::Io {
                    file: self.path.display().to_string(),
                    source,
                })?;
        }
        self.lock_answers().insert(key, reply.to_string());
        Ok(())
    }

    /// Answers held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock_answers().len()
    }

    fn lock_answers(&self) -> std::sync::MutexGuard<'_, HashMap<Digest, String>> {
        // A panic while holding the lock cannot leave a half-written entry: keep going.
        self.answers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "dealgym-answer-cache-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn answers_survive_reopening_and_a_cut_off_line_is_dropped() {
        let dir = dir("reopen");
        let key = answer_key("m", Digest(1), "prompt");
        assert_ne!(key, answer_key("m", Digest(2), "prompt"), "template");
        assert_ne!(key, answer_key("n", Digest(1), "prompt"), "model");
        {
            let cache = AnswerCache::open(&dir).unwrap();
            assert!(cache.get(key).is_none());
            cache
                .put(key, "m", Digest(1), "REASONING: a\nMOVE: b")
                .unwrap();
        }
        let path = dir.join(ANSWERS_FILE);
        let mut text = std::fs::read_to_string(&path).unwrap();
        let whole = text.clone();
        text.push_str("{\"key\":\"00000000000000");
        std::fs::write(&path, &text).unwrap();
        let cache = AnswerCache::open(&dir).unwrap();
        assert_eq!(cache.get(key).as_deref(), Some("REASONING: a\nMOVE: b"));
        assert_eq!(cache.len(), 1);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), whole, "repaired");
        std::fs::write(&path, format!("not json\n{whole}")).unwrap();
        let err = AnswerCache::open(&dir).unwrap_err().to_string();
        assert!(err.contains("answers.jsonl:1: field `(line)`"), "{err}");
        assert!(err.contains("not the last line"), "{err}");
    }
}
