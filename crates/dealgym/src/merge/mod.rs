//! `dealgym merge OUT FILE…`: join the record files of a run's shards (or of an eval's) into
//! one, and say whether that one is the whole run — every planned episode exactly once.
//!
//! The inputs are streamed through [`RecordReader`] and the output written through
//! [`RecordWriter`], one record at a time; what is kept in memory is the (run id, episode id)
//! of each episode seen with a digest of its content, never a record. It checks:
//! - the run ids agree: every file that holds episodes holds the same set of run ids (one for
//!   a run, one per pairing for an eval), unless `allow_mixed`;
//! - duplicates (episodes known by [`EpisodeKey`], the rule of every record reader): an episode
//!   in the files twice is written once and reported — a problem unless `--duplicates skip`
//!   says a requeued shard's repeats are expected; twice with other content (timing aside) is
//!   a conflict, reported apart (the first is kept), always a problem;
//! - missing episodes, when the plan is known (`--scenarios` or `--expect`): every run id must
//!   hold every planned episode id, and no other;
//! - bad lines (a shard killed and never resumed leaves a cut-off last line): skipped, reported;
//! - both kinds of record (a server's log holds two-party episodes and tables): each is joined
//!   by the same checks, under the same keys. A file's records of its first record's kind are
//!   written first, in their order, then (read in a second pass, only when the first passed
//!   some over) those of the other kind, in theirs.
//!
//! The output is written whatever is found, to `OUT.merging` and renamed into place at the
//! end; [`MergeReport::is_clean`] says whether it is the whole run, and `main` exits non-zero
//! when it is not. Files that hold no record at all are refused (nothing is written). `OUT` is
//! locked ([`OutputLock`]) from before it is looked at, and the file renamed into place from
//! before it is written, so a second merge into it is refused; an `OUT` that is one of the
//! inputs (by file, not name) is refused.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::digest::{digest_json, Digest};
use crate::limits::{check_episodes, MAX_EPISODES};
pub(crate) use crate::record::EpisodeKey;
use crate::record::{
    records_kind, refuse_output_among_inputs, EpisodeRecord, OnDuplicate, OutputLock, ReadError,
    RecordReader, RecordWriter, RecordsKind, TableRecord, WriteError,
};
use crate::run::{planned_ids, ConfigError, RunError};

/// How many ids a report lists per kind of problem (it counts them all).
pub(crate) const LISTED: usize = 10;

/// What to merge.
#[derive(Debug, Clone)]
pub struct MergeOptions {
    pub out: PathBuf,
    pub files: Vec<PathBuf>,
    /// The episode ids every run of the files must hold, when the plan is known.
    pub expected: Option<Expected>,
    /// Join files whose run ids differ.
    pub allow_mixed: bool,
    /// Replace `out` if it exists.
    pub force: bool,
    /// Whether episodes found again with the same content make the merge unclean (`refuse`)
    /// or are only counted (`skip`).
    pub on_duplicate: OnDuplicate,
}

/// The plan each run of the files played, as far as its episode ids go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected {
    pub size: PlanSize,
    /// The run's group size; `None`: read from the files (the largest member index, plus one).
    pub group_size: Option<u64>,
}

impl Expected {
    /// The episodes of the plan with groups of `group_size` (the run's, or read from the
    /// files), refused past [`MAX_EPISODES`] (as `run` refuses such a plan) before its ids are
    /// listed.
    fn episodes(&self, group_size: u64) -> Result<usize, MergeError> {
        let factors = match self.size {
            PlanSize::Groups(groups) => vec![
                (groups as u64, "scenarios"),
                (group_size, "members per group"),
            ],
            PlanSize::Episodes(n) => vec![(n as u64, "episodes")],
        };
        let n = check_episodes(&factors, MAX_EPISODES).map_err(MergeError::Options)?;
        Ok(n as usize)
    }
}

/// How big the plan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanSize {
    /// This many groups (the scenarios of `--scenarios`, after `--limit`).
    Groups(usize),
    /// This many episodes (`--expect N`): the first N ids of the plan.
    Episodes(usize),
}

/// A merge that could not be done (problems in the records are reported, not errors).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{0}")]
    Options(String),
}

/// One input file, counted.
#[derive(Debug, Clone, Default)]
pub struct FileCount {
    pub(crate) file: PathBuf,
    /// Records read (duplicates included).
    pub(crate) records: usize,
    /// Records of this file already seen (in it or an earlier file).
    pub(crate) duplicates: usize,
    /// Lines that are not records, skipped.
    pub(crate) bad_lines: usize,
    /// Of `records`, those of n-party tables.
    pub(crate) tables: usize,
    /// The run ids the file holds.
    pub(crate) run_ids: BTreeSet<String>,
}

/// A list that counts everything but keeps only the first `LISTED`.
#[derive(Debug, Clone)]
pub struct Listed<T> {
    pub(crate) count: usize,
    pub(crate) first: Vec<T>,
}

impl<T> Default for Listed<T> {
    fn default() -> Self {
        Listed {
            count: 0,
            first: Vec::new(),
        }
    }
}

impl<T> Listed<T> {
    fn push(&mut self, item: T) {
        self.count += 1;
        if self.first.len() < LISTED {
            self.first.push(item);
        }
    }
}

/// What a merge found.
#[derive(Debug, Clone, Default)]
pub struct MergeReport {
    pub(crate) files: Vec<FileCount>,
    /// Episodes written to the output (each once).
    pub written: usize,
    /// Episodes per run id in the output.
    pub runs: BTreeMap<String, usize>,
    /// Episodes found again with the same content (timing aside): written once.
    pub(crate) duplicates: Listed<(EpisodeKey, PathBuf)>,
    /// What was asked of them: with `skip` they leave the merge clean.
    pub(crate) on_duplicate: OnDuplicate,
    /// Episodes found again with other content: the first is written.
    pub(crate) conflicts: Listed<(EpisodeKey, PathBuf)>,
    /// Planned episodes no file holds (`None`: the plan was not given, so not checked).
    pub(crate) missing: Option<Listed<EpisodeKey>>,
    /// Episodes that are not in the plan given.
    pub(crate) unplanned: Listed<EpisodeKey>,
    /// The files' run ids disagree (and `allow_mixed` was not given).
    pub(crate) mixed_runs: bool,
    /// The first bad lines, with where they are.
    pub(crate) bad_lines: Listed<String>,
}

impl MergeReport {
    /// Whether the output is the whole run: every planned episode exactly once (as far as the
    /// plan is known), one set of run ids, no bad line.
    pub fn is_clean(&self) -> bool {
        (self.duplicates.count == 0 || self.on_duplicate == OnDuplicate::Skip)
            && self.conflicts.count == 0
            && self.missing.as_ref().is_none_or(|m| m.count == 0)
            && self.unplanned.count == 0
            && !self.mixed_runs
            && self.bad_lines.count == 0
    }

    /// The report as lines of text: a count per file, then each problem with its first ids.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for f in &self.files {
            let runs: Vec<&str> = f.run_ids.iter().map(String::as_str).collect();
            let tables = match f.tables {
                0 => String::new(),
                n => format!(" ({n} of them tables)"),
            };
            out.push_str(&format!(
                "{}: {} episodes{tables}, {} duplicates, {} bad lines; runs: {}\n",
                f.file.display(),
                f.records,
                f.duplicates,
                f.bad_lines,
                if runs.is_empty() {
                    "none".to_string()
                } else {
                    runs.join(", ")
                }
            ));
        }
        if self.mixed_runs {
            out.push_str(
                "run ids disagree: the files are not shards of one run (or one is incomplete); \
                 pass --allow-mixed to join them anyway\n",
            );
        }
        let keyed = |title: &str, list: &Listed<(EpisodeKey, PathBuf)>, out: &mut String| {
            if list.count > 0 {
                out.push_str(&format!("{title}: {}\n", list.count));
                for (key, file) in &list.first {
                    out.push_str(&format!("  {key} (again in {})\n", file.display()));
                }
                if list.count > list.first.len() {
                    out.push_str(&format!("  … and {} more\n", list.count - list.first.len()));
                }
            }
        };
        let title = match self.on_duplicate {
            OnDuplicate::Refuse => "duplicated episodes (written once)",
            OnDuplicate::Skip => "duplicated episodes (written once; --duplicates skip)",
        };
        keyed(title, &self.duplicates, &mut out);
        keyed(
            "conflicting episodes (same id, other content; the first is written)",
            &self.conflicts,
            &mut out,
        );
        let plain = |title: &str, list: &Listed<EpisodeKey>, out: &mut String| {
            if list.count > 0 {
                out.push_str(&format!("{title}: {}\n", list.count));
                for key in &list.first {
                    out.push_str(&format!("  {key}\n"));
                }
                if list.count > list.first.len() {
                    out.push_str(&format!("  … and {} more\n", list.count - list.first.len()));
                }
            }
        };
        match &self.missing {
            Some(missing) => plain("missing episodes", missing, &mut out),
            None => out.push_str(
                "missing episodes: not checked (give --scenarios as the run had them, or --expect N)\n",
            ),
        }
        plain("episodes not in the plan given", &self.unplanned, &mut out);
        if self.bad_lines.count > 0 {
            out.push_str(&format!("bad lines (skipped): {}\n", self.bad_lines.count));
            for line in &self.bad_lines.first {
                out.push_str(&format!("  {line}\n"));
            }
        }
        out
    }
}

/// Merge `options.files` into `options.out` and report what was found.
pub fn merge(options: &MergeOptions) -> Result<MergeReport, MergeError> {
    if options.files.is_empty() {
        return Err(MergeError::Options(
            "give at least one FILE to merge".into(),
        ));
    }
    if let Some(expected) = &options.expected {
        if let Some(group_size) = expected.group_size {
            expected.episodes(group_size)?;
        }
    }
    refuse_output_among_inputs(&options.out, &options.files)?;
    let _lock = OutputLock::acquire_existing(&options.out)?;
    if options.out.exists() && !options.force {
        return Err(MergeError::Options(format!(
            "{} exists: choose another OUT, or pass --force to replace it",
            options.out.display()
        )));
    }
    for file in &options.files {
        if !file.is_file() {
            return Err(MergeError::Options(format!(
                "{}: no such record file",
                file.display()
            )));
        }
    }
    let partial = partial_path(&options.out);
    // Locked before it is emptied, and kept locked once it is renamed into place: a second
    // merge into `OUT` is refused, from the first look at it to the end.
    let _partial_lock = OutputLock::acquire(&partial)?;
    let report = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&partial)
        .map_err(|source| {
            MergeError::Write(WriteError::Io {
                file: partial.display().to_string(),
                source,
            })
        })
        .and_then(|_| merge_into(options, &partial))
        .and_then(|report| {
            if report.files.iter().any(|f| f.records > 0) {
                return Ok(report);
            }
            Err(MergeError::Options(format!(
                "{}: no record in {}: nothing to merge, and nothing was written",
                crate::run::list_files(&options.files),
                if options.files.len() == 1 {
                    "it"
                } else {
                    "any of them"
                }
            )))
        });
    match report {
        Ok(report) => {
            std::fs::rename(&partial, &options.out).map_err(|source| {
                MergeError::Write(WriteError::Io {
                    file: options.out.display().to_string(),
                    source,
                })
            })?;
            Ok(report)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}

/// Merge `options.files` into `partial`; checks as [`merge`] says.
fn merge_into(options: &MergeOptions, partial: &Path) -> Result<MergeReport, MergeError> {
    let mut writer = RecordWriter::append(partial)?;

    let mut report = MergeReport {
        on_duplicate: options.on_duplicate,
        ..MergeReport::default()
    };
    let mut seen: HashMap<EpisodeKey, Digest> = HashMap::new();
    let mut largest_member = 0u64;
    let mut joined = Joined {
        writer: &mut writer,
        report: &mut report,
        seen: &mut seen,
        largest_member: &mut largest_member,
    };
    for file in &options.files {
        let mut count = FileCount {
            file: file.clone(),
            ..FileCount::default()
        };
        // The kind of its first record; a first line that is no record (a shard killed while
        // writing it) is a bad line of the passes below, which read either kind whichever
        // comes first.
        let first = match records_kind(std::slice::from_ref(file)) {
            Err(ReadError::Line { .. } | ReadError::CutOff { .. }) => RecordsKind::TwoParty,
            kind => kind?,
        };
        let passed_over = match first {
            RecordsKind::TwoParty => joined.file::<EpisodeRecord>(file, false, &mut count)?,
            RecordsKind::Table => joined.file::<TableRecord>(file, false, &mut count)?,
            RecordsKind::Market => return Err(markets_not_merged(file)),
        };
        if passed_over > 0 {
            match first {
                RecordsKind::TwoParty => joined.file::<TableRecord>(file, true, &mut count)?,
                RecordsKind::Table => joined.file::<EpisodeRecord>(file, true, &mut count)?,
                RecordsKind::Market => unreachable!("refused above"),
            };
        }
        joined.report.files.push(count);
    }
    report.written = writer.written();
    drop(writer);

    let sets: HashSet<&BTreeSet<String>> = report
        .files
        .iter()
        .filter(|f| !f.run_ids.is_empty())
        .map(|f| &f.run_ids)
        .collect();
    report.mixed_runs = sets.len() > 1 && !options.allow_mixed;

    if let Some(expected) = &options.expected {
        let group_size = expected
            .group_size
            .unwrap_or(largest_member.saturating_add(1));
        let episodes = expected.episodes(group_size)?;
        let ids = planned_ids(episodes, group_size);
        let planned: HashSet<&str> = ids.iter().map(String::as_str).collect();
        let mut missing = Listed::default();
        for run_id in report.runs.keys() {
            for id in &ids {
                let key = EpisodeKey {
                    run_id: run_id.clone(),
                    episode_id: id.clone(),
                };
                if !seen.contains_key(&key) {
                    missing.push(key);
                }
            }
        }
        let mut unplanned: Vec<&EpisodeKey> = seen
            .keys()
            .filter(|k| !planned.contains(k.episode_id.as_str()))
            .collect();
        unplanned.sort();
        for key in unplanned {
            report.unplanned.push(key.clone());
        }
        if report.runs.is_empty() && !ids.is_empty() {
            // No run at all: every planned episode is missing (of a run nobody wrote).
            for id in &ids {
                missing.push(EpisodeKey {
                    run_id: "(no run)".into(),
                    episode_id: id.clone(),
                });
            }
        }
        report.missing = Some(missing);
    }
    Ok(report)
}

/// A record of either kind as the merge joins it: its key, its member index and the digest
/// of its content with its timing left out (the same episode played again differs in it).
trait Joinable: serde::de::DeserializeOwned + serde::Serialize {
    const KIND: RecordsKind;
    fn key(&self) -> EpisodeKey;
    fn member(&self) -> u64;
    fn content_digest(&mut self) -> Digest;
}

impl Joinable for EpisodeRecord {
    const KIND: RecordsKind = RecordsKind::TwoParty;

    fn key(&self) -> EpisodeKey {
        EpisodeKey {
            run_id: self.run_id.clone(),
            episode_id: self.episode_id.clone(),
        }
    }

    fn member(&self) -> u64 {
        self.seeds.member
    }

    fn content_digest(&mut self) -> Digest {
        let timing = std::mem::take(&mut self.timing);
        let digest = digest_json(self);
        self.timing = timing;
        digest
    }
}

impl Joinable for TableRecord {
    const KIND: RecordsKind = RecordsKind::Table;

    fn key(&self) -> EpisodeKey {
        EpisodeKey {
            run_id: self.run_id.clone(),
            episode_id: self.episode_id.clone(),
        }
    }

    fn member(&self) -> u64 {
        self.seeds.member
    }

    /// A table keeps its timing per turn: each call's latency and its endpoint retries.
    fn content_digest(&mut self) -> Digest {
        let timing: Vec<(u64, u32)> = self
            .turns
            .iter_mut()
            .map(|t| {
                (
                    std::mem::take(&mut t.latency_ms),
                    std::mem::take(&mut t.retries),
                )
            })
            .collect();
        let digest = digest_json(self);
        for (turn, (latency_ms, retries)) in self.turns.iter_mut().zip(timing) {
            turn.latency_ms = latency_ms;
            turn.retries = retries;
        }
        digest
    }
}

/// What the merge keeps as it reads: the output, the report, the keys seen with their
/// content's digest, the largest member index.
struct Joined<'a> {
    writer: &'a mut RecordWriter,
    report: &'a mut MergeReport,
    seen: &'a mut HashMap<EpisodeKey, Digest>,
    largest_member: &'a mut u64,
}

impl Joined<'_> {
    /// Join the records of `R`'s kind in `file`, counting them in `count`; the number of
    /// records of the other kind passed over. `second`: the file's first pass read the other
    /// kind, and counted the lines that are no whole record.
    fn file<R: Joinable>(
        &mut self,
        file: &Path,
        second: bool,
        count: &mut FileCount,
    ) -> Result<usize, MergeError> {
        let reader = RecordReader::open(file)?.read_as::<R>();
        let mut reader = match second {
            false => reader.only(R::KIND),
            true => reader.second_pass(R::KIND),
        }
        .keep_going();
        for record in &mut reader {
            let mut record = record?;
            count.records += 1;
            if R::KIND == RecordsKind::Table {
                count.tables += 1;
            }
            let key = record.key();
            count.run_ids.insert(key.run_id.clone());
            *self.largest_member = (*self.largest_member).max(record.member());
            let digest = record.content_digest();
            match self.seen.get(&key) {
                Some(first) => {
                    count.duplicates += 1;
                    if *first == digest {
                        self.report.duplicates.push((key, file.to_path_buf()));
                    } else {
                        self.report.conflicts.push((key, file.to_path_buf()));
                    }
                }
                None => {
                    self.writer.write(&record)?;
                    *self.report.runs.entry(key.run_id.clone()).or_default() += 1;
                    self.seen.insert(key, digest);
                }
            }
        }
        count.bad_lines += reader.skipped();
        for bad in reader.bad_lines() {
            self.report.bad_lines.push(bad.to_string());
        }
        // Keep the count right past the kept lines.
        self.report.bad_lines.count += reader.skipped() - reader.bad_lines().len();
        if reader.passed_over_by_kind()[RecordsKind::Market.index()] > 0 {
            return Err(markets_not_merged(file));
        }
        Ok(reader.passed_over())
    }
}

/// Where the output is written until it is complete.
/// `merge` joins two-party and table shards; a market record is refused by name, never
/// dropped.
fn markets_not_merged(file: &Path) -> MergeError {
    MergeError::Options(format!(
        "{}: holds market records (`\"kind\": \"market\"`): `merge` does not join market shards yet",
        file.display()
    ))
}

fn partial_path(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".merging");
    out.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_counts_everything_and_keeps_the_first() {
        let mut list = Listed::default();
        for i in 0..(LISTED + 5) {
            list.push(i);
        }
        assert_eq!((list.count, list.first.len()), (LISTED + 5, LISTED));
    }
}
