//! Which kind of episode a record holds: two-party records ([`super::EpisodeRecord`], no
//! `kind` field), n-party tables ([`super::TableRecord`], `"kind": "table"`) or markets
//! ([`super::MarketRecord`], `"kind": "market"`). The one rule every surface (replay, export,
//! report, eval) tells them apart by. A file may hold several (a server logs every episode it
//! plays to one file): a surface reads the kind of the first record of its files
//! ([`records_kind`]) and passes over the records of the other kinds, counting each kind
//! ([`super::RecordReader::only`]), and says how many it passed over.

use std::path::PathBuf;

use serde::Deserialize;

use super::reader::{ReadError, RecordReader};

/// The kind of episode a record file (or a set of them) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordsKind {
    /// Two seats, `learner` and `opponent` ([`super::EpisodeRecord`]).
    TwoParty,
    /// A table of n parties named by role ([`super::TableRecord`]).
    Table,
    /// A market of buyers and sellers named by role ([`super::MarketRecord`]).
    Market,
}

impl RecordsKind {
    /// The kind a record's `kind` field names (absent: a two-party record).
    pub(crate) fn of_kind_field(kind: Option<&str>) -> RecordsKind {
        match kind {
            Some("table") => RecordsKind::Table,
            Some("market") => RecordsKind::Market,
            _ => RecordsKind::TwoParty,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RecordsKind::TwoParty => "two-party",
            RecordsKind::Table => "table",
            RecordsKind::Market => "market",
        }
    }

    /// Every kind, in the order a count of each is kept ([`PassedOver`]).
    pub const ALL: [RecordsKind; 3] = [
        RecordsKind::TwoParty,
        RecordsKind::Table,
        RecordsKind::Market,
    ];

    /// Its place in [`RecordsKind::ALL`] (and in a count per kind).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The one field read to tell the kinds apart.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    kind: Option<String>,
}

/// The kind of the first record of `file`; `None` for a file with no record. Reading stops at
/// the first record (a bad first line is its error, naming the file and line).
pub(crate) fn file_kind(file: &std::path::Path) -> Result<Option<RecordsKind>, ReadError> {
    let mut reader = RecordReader::open(file)?.read_as::<Peek>();
    match reader.next() {
        None => Ok(None),
        Some(Err(e)) => Err(e),
        Some(Ok(peek)) => Ok(Some(RecordsKind::of_kind_field(peek.kind.as_deref()))),
    }
}

/// The kind of record `files` are read as: the kind of their first record (a directory is its
/// `*.jsonl` files); two-party when they hold none. Records of the other kind in them are
/// passed over by the readers, and counted.
pub fn records_kind(files: &[PathBuf]) -> Result<RecordsKind, ReadError> {
    for file in super::record_files_in(files)? {
        if let Some(kind) = file_kind(&file)? {
            return Ok(kind);
        }
    }
    Ok(RecordsKind::TwoParty)
}

/// The kind of the first record of episode `episode_id` in `files` (`None` when none has that
/// id): what a command about one episode (`replay --render`, `--verify --episode`) reads the
/// files as, whichever kind their first record is.
pub fn episode_kind(files: &[PathBuf], episode_id: &str) -> Result<Option<RecordsKind>, ReadError> {
    #[derive(Deserialize)]
    struct Id {
        episode_id: String,
        #[serde(default)]
        kind: Option<String>,
    }
    for file in super::record_files_in(files)? {
        for id in RecordReader::open(&file)?.read_as::<Id>() {
            let id = id?;
            if id.episode_id == episode_id {
                return Ok(Some(RecordsKind::of_kind_field(id.kind.as_deref())));
            }
        }
    }
    Ok(None)
}

/// Whether `files` hold records of more than one kind (a server's log): a reader that reads
/// them all decides what each option means for each kind before it writes anything. Reads
/// every record's `kind` field, and stops at the first record of a second kind.
pub fn holds_both_kinds(files: &[PathBuf]) -> Result<bool, ReadError> {
    let mut seen: Option<RecordsKind> = None;
    for file in super::record_files_in(files)? {
        for peek in RecordReader::open(&file)?.read_as::<Peek>() {
            let kind = RecordsKind::of_kind_field(peek?.kind.as_deref());
            match seen {
                None => seen = Some(kind),
                Some(first) if first != kind => return Ok(true),
                Some(_) => {}
            }
        }
    }
    Ok(false)
}

/// The records of the other kinds a reader passed over ([`super::RecordReader::only`]), by
/// kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassedOver {
    /// The kind read (`None` until a record was passed over).
    pub(crate) read: Option<RecordsKind>,
    /// Records passed over, per kind ([`RecordsKind::ALL`]'s order).
    pub(crate) counts: [usize; 3],
}

impl PassedOver {
    /// How many records of the other kinds were passed over.
    pub fn records(&self) -> usize {
        self.counts.iter().sum()
    }

    /// How many records of `kind` were passed over.
    pub fn of(&self, kind: RecordsKind) -> usize {
        self.counts[kind.index()]
    }

    /// The kinds passed over, in [`RecordsKind::ALL`]'s order.
    pub fn kinds(&self) -> impl Iterator<Item = RecordsKind> + '_ {
        RecordsKind::ALL.into_iter().filter(|k| self.of(*k) > 0)
    }

    /// Only the records of `kinds` among these: those a command passed over and did not read
    /// in a later pass either.
    pub fn keep(&self, kinds: &[RecordsKind]) -> PassedOver {
        let mut kept = PassedOver::default();
        for k in kinds {
            kept.counts[k.index()] = self.of(*k);
        }
        if kept.records() > 0 {
            kept.read = self.read;
        }
        kept
    }

    /// Count `counts` (per kind) as passed over by a reader of `read`.
    pub(crate) fn add(&mut self, read: RecordsKind, counts: [usize; 3]) {
        for (mine, n) in self.counts.iter_mut().zip(counts) {
            *mine += n;
        }
        if self.records() > 0 {
            self.read = Some(read);
        }
    }

    /// What a command says when it passed over records of other kinds, if it did: how many
    /// of each, and which kind it read.
    pub fn note(&self) -> Option<String> {
        let read = self.read.filter(|_| self.records() > 0)?;
        let passed: Vec<String> = self
            .kinds()
            .map(|k| {
                let n = self.of(k);
                let plural = if n == 1 { "" } else { "s" };
                format!("{n} {} record{plural}", k.name())
            })
            .collect();
        Some(format!(
            "passed over {} in the files: this command read their {} records (the kind of the \
             first record)",
            passed.join(" and "),
            read.name()
        ))
    }
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
    fn the_first_record_says_the_kind_of_the_files() {
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
        assert_eq!(
            records_kind(&paths(&[&two, &table])).unwrap(),
            RecordsKind::TwoParty
        );
        assert_eq!(
            records_kind(&paths(&[&empty])).unwrap(),
            RecordsKind::TwoParty
        );
    }

    #[derive(Deserialize)]
    struct Ids {
        episode_id: String,
    }

    fn ids(reader: RecordReader<Ids>) -> Vec<String> {
        reader.map(|r| r.unwrap().episode_id).collect()
    }

    #[test]
    fn a_file_of_both_kinds_reads_whole_or_as_the_records_of_one_kind() {
        // The server's log holds two-party episodes and tables, in any order.
        let table_2 = TABLE.replace("m1", "m2");
        let mixed = file(&[TWO, TABLE, &table_2]);
        let open = || RecordReader::open(mixed.path()).unwrap().read_as::<Ids>();
        assert_eq!(ids(open()), ["g0-m0", "g0-m1", "g0-m2"], "every line read");
        let mut two = open().only(RecordsKind::TwoParty);
        assert_eq!(ids_of(&mut two), ["g0-m0"]);
        assert_eq!(two.passed_over(), 2);
        let mut tables = open().only(RecordsKind::Table);
        assert_eq!(ids_of(&mut tables), ["g0-m1", "g0-m2"]);
        assert_eq!(tables.passed_over(), 1);
        let mut over = PassedOver::default();
        assert_eq!(over.note(), None);
        over.add(RecordsKind::TwoParty, [0, 2, 0]);
        assert_eq!(
            over.note().unwrap(),
            "passed over 2 table records in the files: this command read their two-party \
             records (the kind of the first record)"
        );
        // A broken line of the other kind is a broken line, not passed over.
        let broken = file(&[
            TWO,
            r#"{"schema":1,"run_id":"r","episode_id":"x","kind":"table""#,
            TWO,
        ]);
        let mut reader = RecordReader::open(broken.path())
            .unwrap()
            .read_as::<Ids>()
            .only(RecordsKind::TwoParty);
        assert!(reader.next().unwrap().is_ok());
        let e = reader.next().unwrap().err().expect("the broken line");
        assert_eq!(e.line(), Some(2), "{e}");
    }

    #[test]
    fn a_market_record_is_a_third_kind_passed_over_and_named_by_the_others() {
        const MARKET: &str =
            r#"{"schema":1,"run_id":"r","episode_id":"g1-m0","kind":"market","x":1}"#;
        let mixed = file(&[TWO, MARKET, TABLE, MARKET]);
        assert_eq!(
            file_kind(file(&[MARKET]).path()).unwrap(),
            Some(RecordsKind::Market)
        );
        let path = [mixed.path().to_path_buf()];
        assert!(holds_both_kinds(&path).unwrap());
        assert_eq!(
            episode_kind(&path, "g1-m0").unwrap(),
            Some(RecordsKind::Market)
        );
        let open = || RecordReader::open(mixed.path()).unwrap().read_as::<Ids>();
        let mut two = open().only(RecordsKind::TwoParty);
        assert_eq!(ids_of(&mut two), ["g0-m0"]);
        assert_eq!(two.passed_over_by_kind(), [0, 1, 2]);
        let mut markets = open().only(RecordsKind::Market);
        assert_eq!(ids_of(&mut markets), ["g1-m0", "g1-m0"]);
        let mut over = PassedOver::default();
        over.add(RecordsKind::TwoParty, two.passed_over_by_kind());
        assert_eq!(
            over.kinds().collect::<Vec<_>>(),
            [RecordsKind::Table, RecordsKind::Market]
        );
        assert_eq!(
            over.note().unwrap(),
            "passed over 1 table record and 2 market records in the files: this command read \
             their two-party records (the kind of the first record)"
        );
        assert_eq!(over.keep(&[RecordsKind::Market]).records(), 2);
    }

    #[test]
    fn a_second_pass_counts_only_the_bad_lines_the_first_passed_over() {
        #[derive(Deserialize)]
        struct Strict {
            #[allow(dead_code)]
            group_id: u32,
        }
        // A line that is no record (both passes meet it), a whole table record that does not
        // read (only the table pass meets it: the two-party pass passes it over).
        let mixed = file(&[TWO, "not a record", TABLE, TWO]);
        let open = || {
            RecordReader::open(mixed.path())
                .unwrap()
                .read_as::<Strict>()
                .keep_going()
        };
        let mut first = open().only(RecordsKind::TwoParty);
        assert_eq!(first.by_ref().count(), 0);
        assert_eq!((first.skipped(), first.passed_over()), (3, 1));
        let mut second = open().second_pass(RecordsKind::Table);
        assert_eq!(second.by_ref().count(), 0);
        assert_eq!(second.skipped(), 1, "only the table line");
        assert_eq!(second.bad_lines()[0].line(), Some(3));
    }

    #[test]
    fn one_episode_is_read_as_its_own_kind() {
        let mixed = file(&[TWO, TABLE]);
        let files = [mixed.path().to_path_buf()];
        assert_eq!(
            episode_kind(&files, "g0-m1").unwrap(),
            Some(RecordsKind::Table)
        );
        assert_eq!(
            episode_kind(&files, "g0-m0").unwrap(),
            Some(RecordsKind::TwoParty)
        );
        assert_eq!(episode_kind(&files, "nope").unwrap(), None);
    }

    fn ids_of(reader: &mut RecordReader<Ids>) -> Vec<String> {
        reader.map(|r| r.unwrap().episode_id).collect()
    }
}
