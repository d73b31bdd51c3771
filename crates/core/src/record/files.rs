//! Reading the records of several files as one stream, each episode once: what `report`,
//! `export`, `replay`, `eval` and `annotate` read their record files with. Each file is read
//! by a [`RecordReader`] in turn (so a bad line, a line past the limit or a record of an
//! unknown version ends the read, naming its file and line), and the duplicate rule of
//! [`super::duplicates`] is applied across all of them. One kind of record is read (two-party
//! unless [`RecordFiles::of_kind`] says otherwise); records of the other kind are passed over
//! and counted ([`RecordFiles::passed_over`]).

use std::path::PathBuf;

use serde::de::DeserializeOwned;

use super::duplicates::{Duplicates, OnDuplicate, Place, SeenEpisodes};
use super::reader::{ReadError, RecordReader};
use super::{EpisodeRecord, PassedOver, RecordsKind};

/// The record files `paths` name: a file as it is, a directory as every `*.jsonl` file directly
/// in it, sorted by name (its subdirectories are not read). Fails on a directory that cannot be
/// listed or holds no such file, naming it.
pub fn record_files_in(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ReadError> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let listed = |e| ReadError::Io {
            file: path.display().to_string(),
            source: e,
        };
        let mut found: Vec<PathBuf> = Vec::new();
        for entry in std::fs::read_dir(path).map_err(listed)? {
            let file = entry.map_err(listed)?.path();
            if file.extension().is_some_and(|e| e == "jsonl") && file.is_file() {
                found.push(file);
            }
        }
        if found.is_empty() {
            return Err(ReadError::NoRecordFiles {
                dir: path.display().to_string(),
            });
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// A record and where it was read.
#[derive(Debug, Clone)]
pub struct Located<T = EpisodeRecord> {
    pub record: T,
    pub file: String,
    /// 1-based line of the record in its file.
    pub line: usize,
    /// The index of its file among those read.
    pub file_index: usize,
}

impl<T> Located<T> {
    /// `FILE:LINE`, for messages.
    pub fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// The records of `files`, in order, one at a time; an iterator of [`Located`] records that
/// stops after the first error. A record whose episode an earlier one had is refused or
/// skipped and counted, as [`OnDuplicate`] says.
pub struct RecordFiles<T = EpisodeRecord> {
    files: Vec<PathBuf>,
    /// Names of the files opened so far, as errors give them.
    names: Vec<String>,
    reader: Option<RecordReader<T>>,
    /// Bytes of the files read to their end.
    done_bytes: u64,
    on_duplicate: OnDuplicate,
    seen: SeenEpisodes,
    duplicates: Duplicates,
    failed: bool,
    /// The kind of record read; the other kind is passed over.
    kind: RecordsKind,
    /// Records of the other kinds passed over in the files read to their end, per kind.
    passed_over: [usize; 3],
}

impl RecordFiles {
    /// Read the two-party records of `files` ([`RecordFiles::of_kind`] for table records).
    pub fn open(files: &[PathBuf], on_duplicate: OnDuplicate) -> RecordFiles {
        RecordFiles {
            files: files.to_vec(),
            names: Vec::new(),
            reader: None,
            done_bytes: 0,
            on_duplicate,
            seen: SeenEpisodes::default(),
            duplicates: Duplicates::default(),
            failed: false,
            kind: RecordsKind::TwoParty,
            passed_over: [0; 3],
        }
    }
}

impl<T: DeserializeOwned> RecordFiles<T> {
    /// Read each line as a `U` instead (a few fields of each record, say), with the same
    /// errors and the same duplicate rule. Call it before reading.
    pub fn read_as<U: DeserializeOwned>(self) -> RecordFiles<U> {
        RecordFiles {
            files: self.files,
            names: self.names,
            reader: self.reader.map(RecordReader::read_as),
            done_bytes: self.done_bytes,
            on_duplicate: self.on_duplicate,
            seen: self.seen,
            duplicates: self.duplicates,
            failed: self.failed,
            kind: self.kind,
            passed_over: self.passed_over,
        }
    }

    /// Read the records of `kind` (and pass over the others). Call it before reading.
    pub fn of_kind(mut self, kind: RecordsKind) -> Self {
        self.kind = kind;
        self
    }

    /// The records of the other kind passed over so far.
    pub fn passed_over(&self) -> PassedOver {
        let mut over = PassedOver::default();
        over.add(self.kind, self.passed_over);
        if let Some(reader) = &self.reader {
            over.add(self.kind, reader.passed_over_by_kind());
        }
        over
    }

    /// Bytes read so far over every file: what a progress bar over their sizes shows.
    pub fn position(&self) -> u64 {
        self.done_bytes + self.reader.as_ref().map_or(0, RecordReader::position)
    }

    /// The duplicates skipped so far (with [`OnDuplicate::Skip`]).
    pub fn duplicates(&self) -> &Duplicates {
        &self.duplicates
    }

    /// Open the next file, if any is left; `false` when none is.
    fn open_next(&mut self) -> Result<bool, ReadError> {
        let Some(path) = self.files.get(self.names.len()) else {
            return Ok(false);
        };
        let reader = RecordReader::open(path)?.read_as::<T>().only(self.kind);
        self.names.push(reader.file().to_string());
        self.reader = Some(reader);
        Ok(true)
    }

    fn next_record(&mut self) -> Option<Result<Located<T>, ReadError>> {
        loop {
            let Some(reader) = &mut self.reader else {
                match self.open_next() {
                    Ok(true) => continue,
                    Ok(false) => return None,
                    Err(e) => return Some(Err(e)),
                }
            };
            let Some(line) = reader.next_line() else {
                self.done_bytes += RecordReader::position(reader);
                for (mine, n) in self
                    .passed_over
                    .iter_mut()
                    .zip(reader.passed_over_by_kind())
                {
                    *mine += n;
                }
                self.reader = None;
                continue;
            };
            let line = match line {
                Ok(line) => line,
                Err(e) => return Some(Err(e)),
            };
            let record = match line.value {
                Ok(record) => record,
                Err(e) => return Some(Err(e)),
            };
            let file_index = self.names.len() - 1;
            let here = Place {
                file: file_index,
                line: line.number,
            };
            if let Some(key) = &line.key {
                if let Some(first) = self.seen.first_seen(key, here) {
                    let first = format!("{}:{}", self.names[first.file], first.line);
                    match self.on_duplicate {
                        OnDuplicate::Refuse => {
                            return Some(Err(ReadError::Duplicate {
                                file: self.names[file_index].clone(),
                                line: line.number,
                                key: key.clone(),
                                first,
                            }))
                        }
                        OnDuplicate::Skip => {
                            let at = || format!("{}:{}", self.names[file_index], line.number);
                            self.duplicates.add(key, at);
                            continue;
                        }
                    }
                }
            }
            return Some(Ok(Located {
                record,
                file: self.names[file_index].clone(),
                line: line.number,
                file_index,
            }));
        }
    }
}

impl<T: DeserializeOwned> Iterator for RecordFiles<T> {
    type Item = Result<Located<T>, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.next_record();
        self.failed = matches!(next, Some(Err(_)));
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Ids {
        episode_id: String,
    }

    fn files(name: &str, texts: &[&str]) -> Vec<PathBuf> {
        let dir = std::env::temp_dir().join(format!("dealgym-files-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let path = dir.join(format!("{i}.jsonl"));
                std::fs::write(&path, text).unwrap();
                path
            })
            .collect()
    }

    const A: &str = "{\"schema\":1,\"run_id\":\"r1\",\"episode_id\":\"g0-m0\"}\n";
    const B: &str = "{\"schema\":1,\"run_id\":\"r1\",\"episode_id\":\"g1-m0\"}\n";
    const A_OF_R2: &str = "{\"schema\":1,\"run_id\":\"r2\",\"episode_id\":\"g0-m0\"}\n";

    fn ids(paths: &[PathBuf], on: OnDuplicate) -> RecordFiles<Ids> {
        RecordFiles::open(paths, on).read_as::<Ids>()
    }

    #[test]
    fn a_duplicate_in_the_same_or_a_later_file_is_refused_naming_both_places() {
        let paths = files("refuse", &[&format!("{A}{B}{A_OF_R2}"), &format!("\n{B}")]);
        let mut read = ids(&paths, OnDuplicate::Refuse);
        for _ in 0..3 {
            read.next().unwrap().unwrap();
        }
        let err = read.next().unwrap().unwrap_err();
        let (first, again) = (paths[0].display(), paths[1].display());
        assert_eq!(
            err.to_string(),
            format!(
                "{again}:2: episode g1-m0 of run r1 is already at {first}:2 (the files hold it \
                 twice): pass --duplicates skip to read each episode once, or `dealgym merge` \
                 the files into one"
            )
        );
        assert!(read.next().is_none(), "stops after an error");
    }

    #[test]
    fn skipping_reads_each_episode_once_and_counts_the_rest() {
        let paths = files("skip", &[&format!("{A}{B}{A}"), &format!("{B}{A_OF_R2}")]);
        let mut read = ids(&paths, OnDuplicate::Skip);
        let got: Vec<(String, usize, usize)> = (&mut read)
            .map(|r| r.map(|l| (l.record.episode_id, l.file_index, l.line)))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            got,
            [
                ("g0-m0".to_string(), 0, 1),
                ("g1-m0".to_string(), 0, 2),
                ("g0-m0".to_string(), 1, 2),
            ]
        );
        assert_eq!(read.duplicates().lines, 2);
        let note = read.duplicates().skipped_note().unwrap();
        assert!(
            note.starts_with("skipped 2 duplicated records (the first: run r1 episode g0-m0 at ")
                && note.contains("0.jsonl:3"),
            "{note}"
        );
        let total: u64 = paths
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        assert_eq!(read.position(), total);
    }
}
