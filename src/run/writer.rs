//! The run's JSONL file: one whole line per ended episode, written as soon as it ends, and the
//! scan that `--resume` uses to skip what is already there and repair a cut-off last line.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::record::EpisodeRecord;

/// A problem with the output file.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: line {line} is not an episode record ({message}); it is not the last line, so it was not written by an interrupted run")]
    Corrupt {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file} holds episodes of run {found}, not of this run ({expected}): resume with the same scenarios, players and seed, or write to another file")]
    OtherRun {
        file: String,
        found: String,
        expected: String,
    },
    #[error("{file} already holds {episodes} episodes: pass --resume to continue that run, or choose another --out")]
    Exists { file: String, episodes: usize },
    #[error("cannot encode a record: {0}")]
    Encode(String),
}

/// What a previous run left in the file.
#[derive(Debug, Default)]
pub struct Existing {
    pub episode_ids: HashSet<String>,
    pub run_id: Option<String>,
    /// A cut-off last line was found (and removed, when repairing).
    pub repaired: bool,
}

#[derive(Deserialize)]
struct Ids {
    run_id: String,
    episode_id: String,
}

/// Read the episode ids already in `path` (if it exists). With `repair`, a cut-off last line is
/// truncated away; without, the file is left as it is (and `repaired` says one was found).
pub fn scan_existing(path: &Path, repair: bool) -> Result<Existing, WriteError> {
    let io = |source| WriteError::Io {
        file: path.display().to_string(),
        source,
    };
    let mut existing = Existing::default();
    let mut file = match OpenOptions::new().read(true).write(repair).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(existing),
        Err(e) => return Err(io(e)),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io)?;
    let mut good_end = 0usize;
    let mut start = 0usize;
    let mut line_no = 0;
    while start < bytes.len() {
        line_no += 1;
        let end = bytes[start..]
            .iter()
            .position(|b| *b == b'\n')
            .map(|i| start + i);
        let line = &bytes[start..end.unwrap_or(bytes.len())];
        let last = end.is_none_or(|e| e + 1 >= bytes.len());
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            good_end = end.map(|e| e + 1).unwrap_or(bytes.len());
            start = good_end;
            continue;
        }
        match serde_json::from_slice::<Ids>(line) {
            Ok(ids) if end.is_some() => {
                existing.run_id.get_or_insert(ids.run_id);
                existing.episode_ids.insert(ids.episode_id);
                good_end = end.map(|e| e + 1).unwrap_or(bytes.len());
            }
            // A last line without its newline, or one that does not parse: an interrupted write.
            _ if last => {
                existing.repaired = true;
                break;
            }
            Err(e) => {
                return Err(WriteError::Corrupt {
                    file: path.display().to_string(),
                    line: line_no,
                    message: e.to_string(),
                })
            }
            Ok(_) => unreachable!("a line with a newline after it is handled above"),
        }
        start = good_end;
    }
    if existing.repaired && repair {
        file.set_len(good_end as u64).map_err(io)?;
        file.seek(SeekFrom::End(0)).map_err(io)?;
    }
    Ok(existing)
}

/// Appends one record per line; each line is written whole with one `write_all` and flushed.
pub struct RecordWriter {
    file: File,
    path: PathBuf,
    written: usize,
}

impl RecordWriter {
    pub fn append(path: &Path) -> Result<RecordWriter, WriteError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| WriteError::Io {
                file: dir.display().to_string(),
                source,
            })?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| WriteError::Io {
                file: path.display().to_string(),
                source,
            })?;
        Ok(RecordWriter {
            file,
            path: path.to_path_buf(),
            written: 0,
        })
    }

    pub fn write(&mut self, record: &EpisodeRecord) -> Result<(), WriteError> {
        let mut line = serde_json::to_vec(record).map_err(|e| WriteError::Encode(e.to_string()))?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|_| self.file.flush())
            .map_err(|source| WriteError::Io {
                file: self.path.display().to_string(),
                source,
            })?;
        self.written += 1;
        Ok(())
    }

    pub fn written(&self) -> usize {
        self.written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("dealgym-writer-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("e.jsonl");
        std::fs::write(&path, text).unwrap();
        path
    }

    const A: &str = r#"{"run_id":"r1","episode_id":"g0-m0"}"#;
    const B: &str = r#"{"run_id":"r1","episode_id":"g1-m0"}"#;

    #[test]
    fn a_cut_off_last_line_is_repaired_only_when_asked() {
        let path = file("cut", &format!("{A}\n{B}\n{{\"run_id\":\"r1\",\"epi"));
        let seen = scan_existing(&path, false).unwrap();
        assert!(seen.repaired);
        assert!(
            std::fs::read_to_string(&path).unwrap().ends_with("epi"),
            "left alone"
        );
        let seen = scan_existing(&path, true).unwrap();
        assert_eq!(seen.episode_ids.len(), 2);
        assert_eq!(seen.run_id.as_deref(), Some("r1"));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{A}\n{B}\n")
        );
    }

    #[test]
    fn a_complete_last_line_without_newline_is_treated_as_cut_off() {
        let path = file("nonl", &format!("{A}\n{B}"));
        let seen = scan_existing(&path, true).unwrap();
        assert_eq!(
            seen.episode_ids.len(),
            1,
            "it may be a prefix of a longer line: rerun it"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{A}\n"));
    }

    #[test]
    fn a_broken_line_in_the_middle_is_an_error() {
        let path = file("mid", &format!("{A}\nnot json\n{B}\n"));
        let err = scan_existing(&path, true).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
        assert!(
            scan_existing(Path::new("/nonexistent/dealgym/x.jsonl"), true)
                .unwrap()
                .episode_ids
                .is_empty()
        );
    }
}
