//! Writing a record file: one whole line per ended episode, appended and flushed as soon as it
//! ends, so a killed run leaves at most one cut-off last line. Before a run appends, the file
//! is scanned (through [`RecordReader`]) for the episodes already there, a cut-off last line is
//! repaired, and a file of another run is refused. An episode is known by (run id, episode id):
//! a run's file holds one run, an eval's file one run per pairing ([`RecordWriter::open_runs`]).
//!
//! A command that appends to a file holds an [`OutputLock`] on it for as long as it writes, so
//! the same command started twice on one file (a requeued job while the old one still runs)
//! is refused instead of writing every episode twice.

use std::collections::{BTreeMap, HashSet};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::duplicates::{Duplicates, EpisodeKey};
use super::tail::{cut_off_tail, read_appended, Cut, TailError};
use crate::limits::MAX_RECORD_LINE;

/// A problem with the output file.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    /// The file could not be read: I/O, or a bad line that is not the last
    /// ([`read_appended`]'s rule).
    #[error(transparent)]
    Read(#[from] TailError),
    #[error("{file} holds episodes of run {found}, not of this run ({expected}): resume with the same scenarios, players and seed, or write to another file")]
    OtherRun {
        file: String,
        found: String,
        expected: String,
    },
    #[error("{file} holds episodes of run {found}, which is none of the {runs} runs of this eval: resume with the same scenarios, players, seats and seed, or write to another file")]
    NotOfEval {
        file: String,
        found: String,
        runs: usize,
    },
    #[error("{file} already holds {episodes} episodes: pass --resume to continue that run, or choose another --out")]
    Exists { file: String, episodes: usize },
    /// Appending a record failed (a full disk: ENOSPC; a device such as `/dev/full`). What
    /// was written of the record is taken back where the file allows it, so the file ends
    /// with the last whole record.
    #[error("{file}: cannot write a record ({source}); every record written before it is kept whole: fix the cause (free space), then `--resume` continues a run, an eval or an annotation")]
    Append {
        file: String,
        source: std::io::Error,
    },
    #[error("cannot encode a record: {0}")]
    Encode(String),
    /// A record longer than every reader reads ([`MAX_RECORD_LINE`]): not written, so the file
    /// stays readable and every record before and after it is kept.
    #[error("{file}: a record of {bytes} bytes was not written: a record line may hold at most {limit} bytes, the most every reader reads (the records before it are kept, and the file stays readable)")]
    TooLong {
        file: String,
        bytes: usize,
        limit: usize,
    },
    #[error("{file} is being written by another process ({holder}; lock file {lock}): wait for it to end, or write to another file")]
    Locked {
        file: String,
        holder: String,
        lock: String,
    },
    #[error("{out} is also an input ({input} is the same file): writing it would destroy what is read; write to another file")]
    OutputIsInput { out: String, input: String },
}

/// An exclusive advisory lock (`flock`) on an output file, held by every command that appends
/// to one (`run`, `eval`, `annotate`, `merge`, a server's log) for as long as it writes. The
/// lock is on the file itself — its open file description, so on the file whatever name it is
/// reached by: a symbolic link or a hard link to a file being written is refused as the file is
/// (a lock on a name would let two writers share one file). A merge, which replaces its
/// output by renaming a new file over it, locks that new file before writing it, and the old
/// one too. For the message a second writer is refused with, the holder writes its pid and
/// command line into a sidecar beside the file's real path, `F.lock`, and removes it when it
/// lets go; the lock, not the sidecar, decides (the operating system releases it when the
/// holder ends, however it ends, and a `F.lock` left behind holds nothing: it may be deleted).
#[derive(Debug)]
pub struct OutputLock {
    _file: Option<File>,
    /// The sidecar this holder wrote, removed when the lock is let go.
    holder: Option<PathBuf>,
}

impl OutputLock {
    /// Lock `output` (created if it does not exist) for this process, or refuse at once
    /// (never wait) naming the holder. An output that exists and is not a regular file
    /// (`/dev/null`, a pipe) is no file two writers could both grow: nothing is locked.
    pub fn acquire(output: &Path) -> Result<OutputLock, WriteError> {
        if std::fs::metadata(output).is_ok_and(|m| !m.is_file()) {
            return Ok(OutputLock::none());
        }
        create_parent(output)?;
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(output)
            .map_err(|source| WriteError::Io {
                file: output.display().to_string(),
                source,
            })?;
        OutputLock::hold(file, output)
    }

    /// [`OutputLock::acquire`] of an output only if it exists (one a merge renames a new
    /// file over at its end: not made here, so a merge that fails leaves no empty file).
    pub fn acquire_existing(output: &Path) -> Result<OutputLock, WriteError> {
        match std::fs::metadata(output) {
            Ok(meta) if meta.is_file() => {}
            _ => return Ok(OutputLock::none()),
        }
        match OpenOptions::new().append(true).open(output) {
            Ok(file) => OutputLock::hold(file, output),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(OutputLock::none()),
            Err(source) => Err(WriteError::Io {
                file: output.display().to_string(),
                source,
            }),
        }
    }

    fn none() -> OutputLock {
        OutputLock {
            _file: None,
            holder: None,
        }
    }

    /// Lock `file` (opened from `output`), then name this process in the sidecar.
    fn hold(file: File, output: &Path) -> Result<OutputLock, WriteError> {
        // The sidecar of the file's real path: every symbolic link to it finds the same one.
        let sidecar = lock_path(&std::fs::canonicalize(output).unwrap_or(output.to_path_buf()));
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                // A pid and a host name; a sidecar that is anything else is not read whole.
                let holder = crate::limits::read_file(&sidecar, 4096).unwrap_or_default();
                let holder = match holder.trim() {
                    "" => "pid unknown".to_string(),
                    said => said.to_string(),
                };
                return Err(WriteError::Locked {
                    file: output.display().to_string(),
                    holder,
                    lock: sidecar.display().to_string(),
                });
            }
            Err(TryLockError::Error(source)) => {
                return Err(WriteError::Io {
                    file: output.display().to_string(),
                    source,
                })
            }
        }
        let command: Vec<String> = std::env::args().collect();
        let holder = format!("pid {}: {}\n", std::process::id(), command.join(" "));
        // Best effort: the sidecar only names the holder; the lock on the file decides.
        let named = std::fs::write(&sidecar, holder).is_ok();
        Ok(OutputLock {
            _file: Some(file),
            holder: named.then_some(sidecar),
        })
    }
}

impl Drop for OutputLock {
    /// The sidecar goes before the lock (the file is closed after this): no later holder's
    /// sidecar is ever removed.
    fn drop(&mut self) {
        if let Some(sidecar) = &self.holder {
            let _ = std::fs::remove_file(sidecar);
        }
    }
}

/// The sidecar naming the holder of output `F`'s lock: `F.lock`.
pub(crate) fn lock_path(output: &Path) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Refuse an output that is one of the inputs `inputs` (files, or directories of record
/// files as [`super::record_files_in`] reads them): the same file by device and inode, not by
/// name, so a symbolic link or a hard link to an input is refused as the input itself is. A
/// command that wrote it would overwrite (or append to) what it reads. Every command that
/// reads files and writes an `--out` asks this before it writes anything. An output that is
/// not a regular file (a device, a pipe) or does not exist yet is no input.
pub fn refuse_output_among_inputs(out: &Path, inputs: &[PathBuf]) -> Result<(), WriteError> {
    let Some(written) = std::fs::metadata(out).ok().filter(|m| m.is_file()) else {
        return Ok(());
    };
    let files = super::record_files_in(inputs).unwrap_or_else(|_| inputs.to_vec());
    for input in files {
        if std::fs::metadata(&input).is_ok_and(|read| same_file(&written, &read, out, &input)) {
            return Err(WriteError::OutputIsInput {
                out: out.display().to_string(),
                input: input.display().to_string(),
            });
        }
    }
    Ok(())
}

/// Whether two files' metadata are of one file: device and inode on Unix; elsewhere their
/// canonical paths.
#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata, _: &Path, _: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata, a: &Path, b: &Path) -> bool {
    matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(a), Ok(b)) if a == b)
}

/// Create the directory `path` is to be written in, if it has one and it does not exist.
fn create_parent(path: &Path) -> Result<(), WriteError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| WriteError::Io {
            file: dir.display().to_string(),
            source,
        })?;
    }
    Ok(())
}

/// What a previous run (or eval) left in the file.
#[derive(Debug, Default)]
pub struct Existing {
    /// The episode ids already written, per run id.
    pub runs: BTreeMap<String, HashSet<String>>,
    /// The run ids in the order their first episode appears in the file.
    pub(crate) run_order: Vec<String>,
    /// A cut-off last line was found (and removed, when repairing).
    pub repaired: bool,
    /// That line: where it started, its length and why it was taken for a cut-off one — what
    /// a command that cuts it says ([`Existing::cut_note`]).
    pub cut: Option<Cut>,
    /// Lines whose episode an earlier line already has (`super::duplicates`): left by two
    /// writers at once before files were locked, or by hand. `--resume` reports them.
    pub duplicates: Duplicates,
    /// The records that carry belief probes (`probes`): a resume checks that its `[probes]`
    /// agree, probes being no part of the run id.
    pub probed: usize,
}

impl Existing {
    /// Episodes in the file (distinct (run id, episode id) pairs).
    pub fn episodes(&self) -> usize {
        self.runs.values().map(HashSet::len).sum()
    }

    /// The file holds no episode.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The episode ids of run `run_id` already written (none if the run is not in the file).
    pub fn episode_ids_of(&self, run_id: &str) -> HashSet<String> {
        self.runs.get(run_id).cloned().unwrap_or_default()
    }

    /// What a command that cut the file's last line says: the file, the byte offset, the
    /// bytes cut and why; `None` when nothing was cut.
    pub fn cut_note(&self, file: &Path) -> Option<String> {
        self.cut.as_ref().map(|cut| cut_note(file, cut))
    }

    /// Everything a writer that opened the file for appending must say about what it found:
    /// the line it cut ([`Existing::cut_note`]) and the episodes written twice
    /// ([`Duplicates::warning`]). A server opening its log and Python's `RecordWriter` say
    /// each, so nothing is cut or passed over silently.
    pub fn notes(&self, file: &Path) -> Vec<String> {
        append_notes(file, self.cut.as_ref(), &self.duplicates)
    }

    /// The first run of the file (in file order) that `expected` does not name.
    fn first_other_run(&self, expected: impl Fn(&str) -> bool) -> Option<&String> {
        self.run_order.iter().find(|id| !expected(id))
    }
}

/// What a writer says of the cut-off last line it removed from `file`: the file, the bytes cut
/// and why, and the byte offset the file now ends at. The one wording of every writer (a run,
/// an eval, a server's log, Python's `RecordWriter`, annotate's answer cache).
pub fn cut_note(file: &Path, cut: &Cut) -> String {
    format!(
        "{}: removed a cut-off last line: {cut}; the file now ends at byte offset {}",
        file.display(),
        cut.offset
    )
}

/// Everything a writer that opened `file` for appending says about what it found there: the
/// line it cut ([`cut_note`]) and the episodes written twice ([`Duplicates::warning`]), for the
/// commands that keep the two in their summaries as for [`Existing::notes`].
pub fn append_notes(file: &Path, cut: Option<&Cut>, duplicates: &Duplicates) -> Vec<String> {
    [cut.map(|cut| cut_note(file, cut)), duplicates.warning(file)]
        .into_iter()
        .flatten()
        .collect()
}

/// The part of a record the scan needs.
#[derive(Deserialize)]
struct Ids {
    run_id: String,
    episode_id: String,
    /// Present only where the record has belief probes.
    #[serde(default)]
    probes: Option<serde::de::IgnoredAny>,
}

/// Read the episode ids already in `path` (if it exists), records of every kind. With
/// `repair`, a cut-off last line is truncated away (and a whole last record without its
/// newline given one); without, the file is left as it is (and `repaired` says one was found).
/// A last line is cut off when it does not parse, or has no newline and is not a whole record;
/// a bad line anywhere else is an error. A path that is not a regular file (`/dev/null`,
/// `/dev/full`, a pipe) holds nothing to resume and is not read: reading `/dev/full` or
/// `/dev/zero` never ends, a pipe blocks.
pub fn scan_existing(path: &Path, repair: bool) -> Result<Existing, WriteError> {
    let io = |source| WriteError::Io {
        file: path.display().to_string(),
        source,
    };
    let mut existing = Existing::default();
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => return Ok(existing),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(existing),
        Err(e) => return Err(io(e)),
    }
    let mut file = match OpenOptions::new().read(true).write(repair).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(existing),
        Err(e) => return Err(io(e)),
    };
    let name = path.display().to_string();
    let tail = read_appended::<Ids>(&file, &name, |ids, number| {
        existing.probed += usize::from(ids.probes.is_some());
        if !existing.runs.contains_key(&ids.run_id) {
            existing.run_order.push(ids.run_id.clone());
        }
        let run = existing.runs.entry(ids.run_id.clone()).or_default();
        if run.contains(&ids.episode_id) {
            let key = EpisodeKey {
                run_id: ids.run_id,
                episode_id: ids.episode_id,
            };
            existing.duplicates.add(&key, || format!("{name}:{number}"));
        } else {
            run.insert(ids.episode_id);
        }
    })?;
    existing.repaired = tail.cut_off();
    existing.cut = tail.cut.clone();
    if repair {
        cut_off_tail(&mut file, &tail).map_err(io)?;
    }
    Ok(existing)
}

/// Without `resume`, a file that holds episodes (or a cut-off line) is refused.
fn refuse_unless_resuming(
    path: &Path,
    existing: &Existing,
    resume: bool,
) -> Result<(), WriteError> {
    if !resume && (!existing.is_empty() || existing.repaired) {
        return Err(WriteError::Exists {
            file: path.display().to_string(),
            episodes: existing.episodes(),
        });
    }
    Ok(())
}

/// Appends one record per line; each line is written whole with one `write_all` and flushed.
pub struct RecordWriter {
    file: File,
    path: PathBuf,
    written: usize,
    /// The longest line written ([`MAX_RECORD_LINE`], the readers' limit).
    max_line: usize,
    /// The file's [`OutputLock`], for a writer that appends to a command's output.
    _lock: Option<OutputLock>,
}

impl RecordWriter {
    /// Open the record file of run `run_id` for appending, with what is already in it. Without
    /// `resume` a file that holds episodes (or a cut-off line) is refused, so nothing is ever
    /// appended to a file by mistake; with it, a cut-off last line is repaired first. Either way
    /// a file of another run is refused. The file is locked ([`OutputLock`]) before it is
    /// read, and stays locked while the writer lives.
    pub fn open_run(
        path: &Path,
        run_id: &str,
        resume: bool,
    ) -> Result<(RecordWriter, Existing), WriteError> {
        let lock = OutputLock::acquire(path)?;
        let existing = scan_existing(path, resume)?;
        refuse_unless_resuming(path, &existing, resume)?;
        if let Some(found) = existing.first_other_run(|id| id == run_id) {
            return Err(WriteError::OtherRun {
                file: path.display().to_string(),
                found: found.clone(),
                expected: run_id.to_string(),
            });
        }
        Ok((RecordWriter::append_locked(path, Some(lock))?, existing))
    }

    /// [`RecordWriter::open_run`] for an eval, whose one file holds one run per pairing: a
    /// file holding an episode of a run not in `run_ids` is refused.
    pub fn open_runs(
        path: &Path,
        run_ids: &HashSet<String>,
        resume: bool,
    ) -> Result<(RecordWriter, Existing), WriteError> {
        let lock = OutputLock::acquire(path)?;
        let existing = scan_existing(path, resume)?;
        refuse_unless_resuming(path, &existing, resume)?;
        if let Some(found) = existing.first_other_run(|id| run_ids.contains(id)) {
            return Err(WriteError::NotOfEval {
                file: path.display().to_string(),
                found: found.clone(),
                runs: run_ids.len(),
            });
        }
        Ok((RecordWriter::append_locked(path, Some(lock))?, existing))
    }

    /// Open a server's log for appending: locked like a command's output (a second server
    /// on one log is refused, naming the first), a cut-off last line repaired, and what it
    /// holds returned (a server never reuses an episode id of its log).
    pub fn open_log(path: &Path) -> Result<(RecordWriter, Existing), WriteError> {
        let lock = OutputLock::acquire(path)?;
        let existing = scan_existing(path, true)?;
        Ok((RecordWriter::append_locked(path, Some(lock))?, existing))
    }

    /// Open `path` for appending records, creating it (and its directory) if needed. No lock
    /// is taken: for a file of the caller's own (a temporary file, a server's log).
    pub fn append(path: &Path) -> Result<RecordWriter, WriteError> {
        RecordWriter::append_locked(path, None)
    }

    fn append_locked(path: &Path, lock: Option<OutputLock>) -> Result<RecordWriter, WriteError> {
        create_parent(path)?;
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
            max_line: MAX_RECORD_LINE,
            _lock: lock,
        })
    }

    /// Refuse lines longer than `max` bytes instead of [`MAX_RECORD_LINE`].
    #[cfg(test)]
    pub(crate) fn max_line(mut self, max: usize) -> Self {
        self.max_line = max;
        self
    }

    /// Append one record as one whole line, flushed. A record longer than the readers read
    /// ([`MAX_RECORD_LINE`]) is refused ([`WriteError::TooLong`]) and nothing is written: the
    /// file stays as it was, and the writer takes the next record. If the write fails (a full
    /// disk), what was written of the line is taken back (a regular file is cut to its length
    /// before), so the file still ends with a whole record, and the error names the file; the
    /// caller stops.
    pub fn write(&mut self, record: &impl serde::Serialize) -> Result<(), WriteError> {
        let mut line = serde_json::to_vec(record).map_err(|e| WriteError::Encode(e.to_string()))?;
        if line.len() > self.max_line {
            return Err(WriteError::TooLong {
                file: self.path.display().to_string(),
                bytes: line.len(),
                limit: self.max_line,
            });
        }
        line.push(b'\n');
        let before = self
            .file
            .metadata()
            .ok()
            .filter(|m| m.is_file())
            .map(|m| m.len());
        if let Err(source) = self.file.write_all(&line).and_then(|_| self.file.flush()) {
            if let Some(len) = before {
                // Best effort: what is left is a cut-off last line, which `--resume` repairs.
                let _ = self.file.set_len(len);
            }
            return Err(WriteError::Append {
                file: self.path.display().to_string(),
                source,
            });
        }
        self.written += 1;
        Ok(())
    }

    /// Records written by this writer.
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
        assert_eq!(seen.episodes(), 2);
        assert_eq!(seen.run_order, ["r1"]);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{A}\n{B}\n")
        );
    }

    #[test]
    fn a_whole_last_record_without_newline_is_kept_and_given_one() {
        // A record is one JSON object: a line that closes one is whole, so it is never cut.
        let path = file("nonl", &format!("{A}\n{B}"));
        let seen = scan_existing(&path, true).unwrap();
        assert_eq!(seen.episodes(), 2);
        assert!(!seen.repaired && seen.cut.is_none());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{A}\n{B}\n")
        );
    }

    #[test]
    fn a_cut_says_the_file_the_offset_the_bytes_and_why() {
        let torn = r#"{"run_id":"r1","epi"#;
        let path = file("said", &format!("{A}\n{torn}"));
        let seen = scan_existing(&path, true).unwrap();
        let note = seen.cut_note(&path).unwrap();
        let at = A.len() + 1;
        assert_eq!(
            note,
            format!(
                "{}: removed a cut-off last line: {} bytes from byte offset {at}; it has no \
                 newline and is not a whole record (an interrupted write); the file now ends at \
                 byte offset {at}",
                path.display(),
                torn.len()
            )
        );
        assert_eq!(scan_existing(&path, true).unwrap().cut_note(&path), None);
    }

    #[test]
    fn a_log_of_both_kinds_keeps_every_line_whatever_the_order() {
        const T: &str = r#"{"schema":1,"run_id":"r1","episode_id":"t0","kind":"table"}"#;
        const S: &str = r#"{"schema":1,"run_id":"r1","episode_id":"s0"}"#;
        let s1 = S.replace("s0", "s1");
        for (text, episodes) in [
            (format!("{S}\n{T}\n"), 2),
            (format!("{T}\n{S}\n"), 2),
            (format!("{S}\n{T}\n{s1}\n"), 3),
        ] {
            let path = file("kinds", &text);
            let seen = scan_existing(&path, true).unwrap();
            assert_eq!(seen.episodes(), episodes, "{text}");
            assert!(seen.cut.is_none(), "{text}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
    }

    #[test]
    fn a_run_refuses_a_used_file_without_resume_and_another_runs_file_always() {
        let path = file("open", &format!("{A}\n{B}\n"));
        let err = RecordWriter::open_run(&path, "r1", false).err().unwrap();
        assert!(
            matches!(err, WriteError::Exists { episodes: 2, .. }),
            "{err}"
        );
        let err = RecordWriter::open_run(&path, "r2", true).err().unwrap();
        assert!(
            err.to_string().contains("run r1, not of this run (r2)"),
            "{err}"
        );
        let (writer, existing) = RecordWriter::open_run(&path, "r1", true).unwrap();
        assert_eq!((writer.written(), existing.episodes()), (0, 2));
        let fresh = path.with_file_name("fresh.jsonl");
        let _ = std::fs::remove_file(&fresh);
        let (_, existing) = RecordWriter::open_run(&fresh, "r1", false).unwrap();
        assert!(existing.is_empty() && fresh.exists());
    }

    #[test]
    fn an_eval_file_keys_episodes_by_run_and_refuses_a_run_not_of_the_eval() {
        const C: &str = r#"{"run_id":"r2","episode_id":"g0-m0"}"#;
        let path = file("eval", &format!("{A}\n{C}\n{B}\n"));
        let seen = scan_existing(&path, false).unwrap();
        assert_eq!(seen.episodes(), 3, "g0-m0 of r1 and of r2 are two episodes");
        assert_eq!(seen.run_order, ["r1", "r2"]);
        assert_eq!(seen.episode_ids_of("r2").len(), 1);
        assert!(seen.episode_ids_of("r3").is_empty());
        let runs = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<HashSet<_>>();
        let err = RecordWriter::open_runs(&path, &runs(&["r1", "r2"]), false)
            .err()
            .unwrap();
        assert!(
            matches!(err, WriteError::Exists { episodes: 3, .. }),
            "{err}"
        );
        let err = RecordWriter::open_runs(&path, &runs(&["r1", "r3"]), true)
            .err()
            .unwrap();
        assert!(
            err.to_string()
                .contains("episodes of run r2, which is none of the 2 runs of this eval"),
            "{err}"
        );
        let err = RecordWriter::open_run(&path, "r1", true).err().unwrap();
        assert!(
            err.to_string().contains("run r2, not of this run (r1)"),
            "{err}"
        );
        let (_, existing) =
            RecordWriter::open_runs(&path, &runs(&["r1", "r2", "r3"]), true).unwrap();
        assert_eq!(existing.episode_ids_of("r1").len(), 2);
    }

    #[test]
    fn repeated_episodes_are_counted_and_the_first_named() {
        const C: &str = r#"{"run_id":"r2","episode_id":"g0-m0"}"#;
        let path = file("dups", &format!("{A}\n{B}\n{C}\n{B}\n{A}\n{B}\n"));
        let seen = scan_existing(&path, true).unwrap();
        assert_eq!(seen.episodes(), 3);
        assert_eq!(seen.duplicates.lines, 3);
        let (key, at) = seen.duplicates.first.clone().unwrap();
        assert_eq!(
            (key.episode_id.as_str(), key.run_id.as_str()),
            ("g1-m0", "r1")
        );
        assert!(at.ends_with("e.jsonl:4"), "{at}");
        let warning = seen.duplicates.warning(&path).unwrap();
        assert!(
            warning.contains("holds 3 lines that repeat")
                && warning.contains("episode g1-m0 at")
                && warning.contains("--duplicates skip"),
            "{warning}"
        );
        let clean = file("nodups", &format!("{A}\n{C}\n"));
        let seen = scan_existing(&clean, true).unwrap();
        assert_eq!(seen.duplicates.warning(&clean), None);
    }

    #[test]
    fn a_log_opened_for_appending_says_its_cut_and_its_repeats_and_nothing_else() {
        let torn = r#"{"run_id":"r1","epi"#;
        let path = file("notes", &format!("{A}\n{A}\n{torn}"));
        let (_, existing) = RecordWriter::open_log(&path).unwrap();
        let notes = existing.notes(&path);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("removed a cut-off last line"),
            "{notes:?}"
        );
        assert!(notes[1].contains("repeat"), "{notes:?}");
        let (_, existing) = RecordWriter::open_log(&file("clean", &format!("{A}\n{B}"))).unwrap();
        assert!(existing.notes(&path).is_empty());
    }

    #[test]
    fn a_second_writer_is_refused_naming_the_holder_until_the_first_ends() {
        let path = file("locked", &format!("{A}\n"));
        let (first, _) = RecordWriter::open_run(&path, "r1", true).unwrap();
        let held = std::fs::read_to_string(lock_path(&path)).unwrap();
        assert!(
            held.starts_with(&format!("pid {}: ", std::process::id())),
            "{held}"
        );
        // flock locks belong to an open file, so a second open in this process is refused too.
        let err = RecordWriter::open_run(&path, "r1", true).err().unwrap();
        let message = err.to_string();
        assert!(matches!(err, WriteError::Locked { .. }), "{message}");
        assert!(
            message.contains("e.jsonl is being written by another process"),
            "{message}"
        );
        assert!(
            message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        assert!(OutputLock::acquire(&path).is_err());
        drop(first);
        let (_, existing) = RecordWriter::open_run(&path, "r1", true).unwrap();
        assert_eq!(existing.episodes(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn the_lock_is_on_the_file_whatever_name_reaches_it() {
        let path = file("linked", &format!("{A}\n"));
        let dir = path.parent().unwrap();
        let symlink = dir.join("symlink.jsonl");
        let hard = dir.join("hard.jsonl");
        let _ = std::fs::remove_file(&symlink);
        let _ = std::fs::remove_file(&hard);
        std::os::unix::fs::symlink(&path, &symlink).unwrap();
        std::fs::hard_link(&path, &hard).unwrap();
        let (first, _) = RecordWriter::open_run(&path, "r1", true).unwrap();
        let err = RecordWriter::open_run(&symlink, "r1", true).err().unwrap();
        let message = err.to_string();
        assert!(
            message.contains("symlink.jsonl is being written by another process")
                && message.contains(&format!("pid {}", std::process::id())),
            "{message}"
        );
        assert!(matches!(
            OutputLock::acquire(&hard),
            Err(WriteError::Locked { .. })
        ));
        drop(first);
        assert!(
            !lock_path(&path).exists(),
            "the holder's sidecar goes with it"
        );
        let _second = OutputLock::acquire(&hard).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn an_output_that_is_an_input_by_any_name_is_refused() {
        let input = file("inputs", &format!("{A}\n"));
        let dir = input.parent().unwrap();
        let symlink = dir.join("symlink.jsonl");
        let hard = dir.join("hard.jsonl");
        let _ = std::fs::remove_file(&symlink);
        let _ = std::fs::remove_file(&hard);
        std::os::unix::fs::symlink(&input, &symlink).unwrap();
        std::fs::hard_link(&input, &hard).unwrap();
        let inputs = [input.clone()];
        for out in [&input, &symlink, &hard] {
            let err = refuse_output_among_inputs(out, &inputs).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with(&format!("{} is also an input", out.display())),
                "{err}"
            );
        }
        // An input named by its directory is an input too.
        assert!(refuse_output_among_inputs(&hard, &[dir.to_path_buf()]).is_err());
        let other = dir.join("other.md");
        assert!(
            refuse_output_among_inputs(&other, &inputs).is_ok(),
            "not yet made"
        );
        std::fs::write(&other, "x").unwrap();
        assert!(refuse_output_among_inputs(&other, &inputs).is_ok());
        assert!(
            refuse_output_among_inputs(Path::new("/dev/null"), &[PathBuf::from("/dev/null")])
                .is_ok()
        );
    }

    /// A record of a short CaSiNo episode.
    fn a_record() -> super::super::EpisodeRecord {
        use crate::fixtures::{casino, learner_first_as, play, record_of, turn};
        let s = casino();
        let setup = learner_first_as(&s, crate::scenario::Role::Agent1);
        record_of(play(&s, setup, &[turn("Bye.", "[WALK_AWAY]")]))
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_device_is_written_but_never_read_and_a_full_one_stops_the_writer_by_name() {
        // `run --out /dev/full` read the device's endless zeros as one line, growing to GBs.
        let full = Path::new("/dev/full");
        let seen = scan_existing(full, true).unwrap();
        assert!(seen.is_empty() && !seen.repaired);
        let (mut writer, _) = RecordWriter::open_run(full, "r1", false).unwrap();
        let err = writer.write(&a_record()).unwrap_err();
        assert!(
            matches!(&err, WriteError::Append { source, .. }
            if source.raw_os_error() == Some(28)),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .starts_with("/dev/full: cannot write a record (No space left"),
            "{err}"
        );
        assert_eq!(writer.written(), 0);
        assert!(!lock_path(full).exists(), "a device is no file to lock");
    }

    #[test]
    fn a_record_longer_than_the_readers_read_is_refused_and_nothing_else_lost() {
        let path = file("long", &format!("{A}\n"));
        let mut writer = RecordWriter::append(&path).unwrap().max_line(64);
        let long =
            serde_json::json!({"run_id": "r1", "episode_id": "g1-m0", "raw": "x".repeat(64)});
        let err = writer.write(&long).unwrap_err();
        assert!(
            matches!(err, WriteError::TooLong { limit: 64, .. }),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("at most 64 bytes, the most every reader reads"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{A}\n"));
        writer
            .write(&serde_json::json!({"run_id": "r1", "episode_id": "g2-m0"}))
            .unwrap();
        assert_eq!(writer.written(), 1);
        assert_eq!(scan_existing(&path, false).unwrap().episodes(), 2);
    }

    #[test]
    fn a_broken_line_in_the_middle_is_an_error() {
        let path = file("mid", &format!("{A}\nnot json\n{B}\n"));
        let err = scan_existing(&path, true).unwrap_err().to_string();
        assert!(err.contains("e.jsonl:2: field `(line)`"), "{err}");
        assert!(err.contains("not the last line"), "{err}");
        assert!(
            scan_existing(Path::new("/nonexistent/dealgym/x.jsonl"), true)
                .unwrap()
                .is_empty()
        );
    }
}
