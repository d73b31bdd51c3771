//! Which kind of episode a record file holds: two-party records ([`super::EpisodeRecord`], no
//! `kind` field) or n-party ones ([`super::TableRecord`], `"kind": "table"`). The one rule every
//! surface (replay, export, report, eval) tells the two apart by: the first record of each file
//! says; files of different kinds given together are refused here, and a file whose later line
//! is of another kind than its first is refused by the reader ([`ReadError::MixedKinds`]).

use std::path::PathBuf;

use serde::Deserialize;

use super::reader::{ReadError, RecordReader};
use super::RecordKind;

/// The kind of episode a record file (or a set of them) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordsKind {
    /// Two seats, `learner` and `opponent` ([`super::EpisodeRecord`]).
    TwoParty,
    /// A table of n parties named by role ([`super::TableRecord`]).
    Table,
}

impl RecordsKind {
    /// The kind a record's `kind` field names (absent: a two-party record).
    pub fn of_kind_field(kind: Option<&str>) -> RecordsKind {
        match kind {
            Some("table") => RecordsKind::Table,
            _ => RecordsKind::TwoParty,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RecordsKind::TwoParty => "two-party",
            RecordsKind::Table => "table",
        }
    }
}

/// The one field read to tell the kinds apart.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    kind: Option<RecordKind>,
}

/// The kind of the first record of `file`; `None` for a file with no record. Reading stops at
/// the first record (a bad first line is its error, naming the file and line).
pub fn file_kind(file: &std::path::Path) -> Result<Option<RecordsKind>, ReadError> {
    let mut reader = RecordReader::open(file)?.read_as::<Peek>();
    match reader.next() {
        None => Ok(None),
        Some(Err(e)) => Err(e),
        Some(Ok(peek)) => Ok(Some(match peek.kind {
            Some(RecordKind::Table) => RecordsKind::Table,
            None => RecordsKind::TwoParty,
        })),
    }
}

/// The kind of every record of `files` (the first record of each; a directory is its `*.jsonl`
/// files): two-party when they hold none. Files of different kinds are an error naming the first of each.
pub fn records_kind(files: &[PathBuf]) -> Result<RecordsKind, ReadError> {
    let files = super::record_files_in(files)?;
    let mut first: Option<(RecordsKind, &PathBuf)> = None;
    for file in &files {
        let Some(kind) = file_kind(file)? else {
            continue;
        };
        match first {
            None => first = Some((kind, file)),
            Some((k, at)) if k != kind => {
                return Err(ReadError::Line {
                    file: file.display().to_string(),
                    line: 1,
                    field: "kind".into(),
                    message: format!(
                        "this file holds {} records and {} holds {} records: give files of one kind at a time",
                        kind.name(),
                        at.display(),
                        k.name()
                    ),
                });
            }
            Some(_) => {}
        }
    }
    Ok(first.map_or(RecordsKind::TwoParty, |(k, _)| k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const TWO: &str = r#"{"schema":1,"run_id":"r","episode_id":"g0-m0","group_id":"g0"}"#;
    const TABLE: &str =
        r#"{"schema":1,"run_id":"r","episode_id":"g0-m1","kind":"table","group_id":"g0"}"#;

    fn file(lines: &[&str]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        f
    }

    #[test]
    fn the_first_record_says_the_kind_and_files_of_two_kinds_are_refused() {
        let two = file(&[TWO]);
        let table = file(&[TABLE]);
        let empty = file(&[]);
        assert_eq!(file_kind(two.path()).unwrap(), Some(RecordsKind::TwoParty));
        assert_eq!(file_kind(table.path()).unwrap(), Some(RecordsKind::Table));
        assert_eq!(file_kind(empty.path()).unwrap(), None);
        let paths = |fs: &[&tempfile::NamedTempFile]| -> Vec<PathBuf> {
            fs.iter().map(|f| f.path().to_path_buf()).collect()
        };
        assert_eq!(
            records_kind(&paths(&[&empty, &table])).unwrap(),
            RecordsKind::Table
        );
        let mixed = records_kind(&paths(&[&two, &table])).unwrap_err();
        assert!(mixed.to_string().contains("two-party"), "{mixed}");
    }

    #[derive(Deserialize)]
    struct Ids {
        #[allow(dead_code)]
        episode_id: String,
    }

    #[test]
    fn a_line_of_another_kind_than_the_files_first_is_an_error_naming_it() {
        let mixed = file(&[TWO, TABLE]);
        let mut reader = RecordReader::open(mixed.path()).unwrap().read_as::<Ids>();
        assert!(reader.next().unwrap().is_ok());
        let e = reader
            .next()
            .unwrap()
            .err()
            .expect("the table line is refused");
        assert!(matches!(e, ReadError::MixedKinds { line: 2, .. }), "{e}");
        assert!(
            e.to_string()
                .contains("a table record in a file whose first record is a two-party record"),
            "{e}"
        );
        // A file of one kind reads as before.
        let same = file(&[TABLE, TABLE.replace("m1", "m2").as_str()]);
        let read = RecordReader::open(same.path()).unwrap().read_as::<Ids>();
        assert_eq!(read.filter(Result::is_ok).count(), 2);
    }
}
