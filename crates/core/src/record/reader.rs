//! Reading a record file one line at a time: every surface that reads records (resume, replay,
//! report, export) goes through [`RecordReader`], so a bad line is reported the same way
//! everywhere — the file, the 1-based line number and the field — and memory stays bounded by
//! the longest line, not the file.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::marker::PhantomData;
use std::path::Path;

use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::duplicates::EpisodeKey;
use super::{EpisodeRecord, RecordsKind, RECORD_SCHEMA};
use crate::limits::{read_line, LineRead, MAX_RECORD_LINE};

/// How many bad lines a reader that keeps going remembers; it counts them all.
pub(crate) const KEPT_BAD_LINES: usize = 100;

/// A problem reading a record file, naming where it happened.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    /// A line that is not a record: `field` is the JSON path serde stopped at (`(line)` when
    /// the line is not JSON at all).
    #[error("{file}:{line}: field `{field}`: {message}")]
    Line {
        file: String,
        line: usize,
        field: String,
        message: String,
    },
    /// The last line has no newline and does not parse: a write that was cut off.
    #[error("{file}:{line}: the last line is cut off (the run writing the file was interrupted, or is still writing); `dealgym run --resume` removes it")]
    CutOff { file: String, line: usize },
    /// A line longer than the reader's limit ([`MAX_RECORD_LINE`]): nothing after it is read,
    /// as its end cannot be found without reading it all.
    #[error("{file}:{line}: the line is longer than {limit} bytes, the most a record may hold (is this a record file?)")]
    LineTooLong {
        file: String,
        line: usize,
        limit: usize,
    },
    /// A record of a format version this build does not read (written by a newer dealgym, or
    /// edited): nothing after it is read.
    #[error("{file}:{line}: the record's schema version is {found}; this build reads version {RECORD_SCHEMA} (a newer dealgym wrote it? read it with that one)")]
    Schema {
        file: String,
        line: usize,
        found: u64,
    },
    /// A record whose episode an earlier record already had, read with
    /// [`OnDuplicate::Refuse`](super::OnDuplicate).
    #[error("{file}:{line}: episode {} of run {} is already at {first} (the files hold it twice): pass --duplicates skip to read each episode once, or `dealgym merge` the files into one", key.episode_id, key.run_id)]
    Duplicate {
        file: String,
        line: usize,
        key: EpisodeKey,
        first: String,
    },
    /// A directory given among the record files that holds no `*.jsonl` file.
    #[error("{dir}: the directory holds no record file (*.jsonl); name the files, or a directory that holds some")]
    NoRecordFiles { dir: String },
}

impl ReadError {
    /// The 1-based line the error is about, if it is about one.
    #[cfg(test)]
    pub(crate) fn line(&self) -> Option<usize> {
        match self {
            ReadError::Io { .. } | ReadError::NoRecordFiles { .. } => None,
            ReadError::Line { line, .. }
            | ReadError::CutOff { line, .. }
            | ReadError::LineTooLong { line, .. }
            | ReadError::Schema { line, .. }
            | ReadError::Duplicate { line, .. } => Some(*line),
        }
    }
}

/// One non-blank line of a record file, as read, whether or not it parsed.
#[derive(Debug)]
pub(crate) struct Line<T> {
    /// 1-based, counting blank lines.
    pub number: usize,
    /// Byte offset just past the line (past its newline, if it has one).
    pub end: u64,
    /// The line ends with a newline. Records are written whole with their newline, so a last
    /// line without one was left by an interrupted write — unless it is a whole record
    /// (`closed`), cut off only before its newline.
    pub terminated: bool,
    /// The line is one JSON object, whole: it parses (as what it is read as, or passed over as
    /// a record of another kind) and its last byte that is not blank closes the object. A
    /// record is an object, so a line that closes one holds all of it (no longer line starts
    /// with a whole object), with or without its newline.
    pub closed: bool,
    /// The episode the line is a record of, where it names one (its `run_id` and
    /// `episode_id`), whatever it is read as.
    pub key: Option<EpisodeKey>,
    pub value: Result<T, ReadError>,
}

/// Reads JSONL records one line at a time. As an iterator it yields each record, or the error
/// of a bad line and then stops; with [`RecordReader::keep_going`] it skips bad lines instead,
/// counting them. Blank lines are ignored. An I/O error, a line longer than
/// [`MAX_RECORD_LINE`] and a record of a schema version this build does not read always end it.
///
/// ```no_run
/// use dealgym_core::record::RecordReader;
///
/// let mut reader = RecordReader::open("runs/episodes.jsonl".as_ref())?.keep_going();
/// for record in &mut reader {
///     let record = record?; // only I/O errors are left
///     println!("{} {}", record.episode_id, record.kind().name());
/// }
/// eprintln!("{} bad lines skipped", reader.skipped());
/// # Ok::<(), dealgym_core::record::ReadError>(())
/// ```
pub struct RecordReader<T = EpisodeRecord, R = BufReader<File>> {
    input: R,
    file: String,
    line: usize,
    offset: u64,
    buf: Vec<u8>,
    max_line: usize,
    keep_going: bool,
    skipped: usize,
    bad_lines: Vec<ReadError>,
    done: bool,
    /// The kind of record read: lines of another kind are passed over, not parsed
    /// ([`RecordReader::only`]); `None` reads every line.
    only: Option<RecordsKind>,
    /// Records of another kind than `only` passed over so far, per kind
    /// ([`RecordsKind::ALL`]'s order).
    passed_over: [usize; 3],
    /// The second pass over a file of both kinds ([`RecordReader::second_pass`]).
    second_pass: bool,
    _reads: PhantomData<fn() -> T>,
}

impl RecordReader {
    /// Open a record file for reading.
    pub fn open(path: &Path) -> Result<RecordReader, ReadError> {
        let file = File::open(path).map_err(|source| ReadError::Io {
            file: path.display().to_string(),
            source,
        })?;
        Ok(RecordReader::new(
            BufReader::new(file),
            path.display().to_string(),
        ))
    }
}

impl<R: BufRead> RecordReader<EpisodeRecord, R> {
    /// Read records from `input`; `file` names it in errors.
    pub fn new(input: R, file: impl Into<String>) -> Self {
        RecordReader {
            input,
            file: file.into(),
            line: 0,
            offset: 0,
            buf: Vec::new(),
            max_line: MAX_RECORD_LINE,
            keep_going: false,
            skipped: 0,
            bad_lines: Vec::new(),
            done: false,
            only: None,
            passed_over: [0; 3],
            second_pass: false,
            _reads: PhantomData,
        }
    }
}

impl<T: DeserializeOwned, R: BufRead> RecordReader<T, R> {
    /// Read each line as a `U` instead (a few fields of each record, say), with the same line
    /// numbers and errors.
    pub fn read_as<U: DeserializeOwned>(self) -> RecordReader<U, R> {
        RecordReader {
            input: self.input,
            file: self.file,
            line: self.line,
            offset: self.offset,
            buf: self.buf,
            max_line: self.max_line,
            keep_going: self.keep_going,
            skipped: self.skipped,
            bad_lines: self.bad_lines,
            done: self.done,
            only: self.only,
            passed_over: self.passed_over,
            second_pass: self.second_pass,
            _reads: PhantomData,
        }
    }

    /// Skip bad lines instead of stopping at the first: each is counted in
    /// [`RecordReader::skipped`] and the first `KEPT_BAD_LINES` are kept in
    /// [`RecordReader::bad_lines`].
    pub fn keep_going(mut self) -> Self {
        self.keep_going = true;
        self
    }

    /// Read the records of `kind` only: a whole record of another kind is passed over without
    /// being parsed, and counted ([`RecordReader::passed_over`]), so a file that holds several
    /// kinds (a server's log: two-party episodes and tables) reads as the records of one.
    pub fn only(mut self, kind: RecordsKind) -> Self {
        self.only = Some(kind);
        self
    }

    /// Read `kind` as the second pass over a file whose first pass read the other kind: a bad
    /// line that pass met too (one that is not a whole record of `kind`, so it was not passed
    /// over) is skipped without being counted or kept again. Only a whole record of `kind`
    /// that does not read as one is a bad line of this pass.
    pub fn second_pass(mut self, kind: RecordsKind) -> Self {
        self.only = Some(kind);
        self.second_pass = true;
        self
    }

    /// Records of another kind than [`RecordReader::only`]'s passed over so far.
    pub fn passed_over(&self) -> usize {
        self.passed_over.iter().sum()
    }

    /// [`RecordReader::passed_over`] per kind ([`RecordsKind::ALL`]'s order).
    pub fn passed_over_by_kind(&self) -> [usize; 3] {
        self.passed_over
    }

    /// Refuse lines longer than `max` bytes instead of [`MAX_RECORD_LINE`].
    #[cfg(test)]
    pub(crate) fn max_line(mut self, max: usize) -> Self {
        self.max_line = max;
        self
    }

    /// The name of the file, as errors give it.
    pub(crate) fn file(&self) -> &str {
        &self.file
    }

    /// Bytes read so far (the offset just past the last line read): what a progress bar over
    /// the file's size shows.
    pub(crate) fn position(&self) -> u64 {
        self.offset
    }

    /// Bad lines skipped so far (with `keep_going`).
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// The first `KEPT_BAD_LINES` bad lines skipped, in order.
    pub fn bad_lines(&self) -> &[ReadError] {
        &self.bad_lines
    }

    /// Whether nothing is left to read.
    pub(crate) fn at_end(&mut self) -> Result<bool, ReadError> {
        match self.input.fill_buf() {
            Ok(rest) => Ok(rest.is_empty()),
            Err(source) => Err(self.io(source)),
        }
    }

    /// The next non-blank line, parsed or not; `None` at the end of the input, an error when
    /// reading fails, the line is longer than the limit or its record is of a schema version
    /// this build does not read (each ends the reader). What [`Iterator::next`] is built on,
    /// for readers that must know where a line lies in the file (resume truncates a cut-off
    /// last line).
    pub(crate) fn next_line(&mut self) -> Option<Result<Line<T>, ReadError>> {
        if self.done {
            return None;
        }
        let line = self.read_next_line();
        if matches!(line, Some(Err(_))) {
            self.done = true;
        }
        line
    }

    fn read_next_line(&mut self) -> Option<Result<Line<T>, ReadError>> {
        loop {
            let read = match read_line(&mut self.input, &mut self.buf, self.max_line) {
                Ok(LineRead::End) => return None,
                Ok(LineRead::Line(n)) => n as u64,
                Ok(LineRead::TooLong) => {
                    return Some(Err(ReadError::LineTooLong {
                        file: self.file.clone(),
                        line: self.line + 1,
                        limit: self.max_line,
                    }))
                }
                Err(source) => return Some(Err(self.io(source))),
            };
            self.line += 1;
            self.offset += read;
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let terminated = self.buf.last() == Some(&b'\n');
            let head = Head::of(&self.buf);
            let kind = head.records_kind();
            let other_kind = matches!((self.only, kind), (Some(only), Some(k)) if only != k);
            if other_kind && head.schema.is_none_or(|v| v == u64::from(RECORD_SCHEMA)) {
                // A whole record of another kind is passed over unparsed; a broken one is
                // reported below, as any broken line is.
                if crate::jsonl::from_line::<IgnoredAny>(&self.buf).is_ok() {
                    if let Some(k) = kind {
                        self.passed_over[k.index()] += 1;
                    }
                    continue;
                }
            }
            let value = match self.parse() {
                Ok(v) => Ok(v),
                Err(_) if !terminated => Err(ReadError::CutOff {
                    file: self.file.clone(),
                    line: self.line,
                }),
                Err(e) => Err(e),
            };
            // A whole line of another version is refused, parsed or not: a newer record may
            // read as this build's and mean something else, or fail on a field it changed.
            let cut_off = matches!(value, Err(ReadError::CutOff { .. }));
            if let Some(found) = head.schema.filter(|&v| v != u64::from(RECORD_SCHEMA)) {
                if !cut_off {
                    return Some(Err(ReadError::Schema {
                        file: self.file.clone(),
                        line: self.line,
                        found,
                    }));
                }
            }
            if self.second_pass
                && value.is_err()
                && !(kind == self.only && crate::jsonl::from_line::<IgnoredAny>(&self.buf).is_ok())
            {
                // The first pass met it, and counted it.
                continue;
            }
            let closed = value.is_ok()
                && self
                    .buf
                    .iter()
                    .rev()
                    .find(|b| !b.is_ascii_whitespace())
                    .is_some_and(|&b| b == b'}');
            return Some(Ok(Line {
                number: self.line,
                end: self.offset,
                terminated,
                closed,
                key: head.key(),
                value,
            }));
        }
    }

    fn parse(&self) -> Result<T, ReadError> {
        let at = |field: String, message: String| ReadError::Line {
            file: self.file.clone(),
            line: self.line,
            field,
            message,
        };
        crate::jsonl::from_line(&self.buf).map_err(|fault| at(fault.field, fault.message))
    }

    fn io(&self, source: std::io::Error) -> ReadError {
        ReadError::Io {
            file: self.file.clone(),
            source,
        }
    }
}

/// The fields of a record a reader checks whatever it reads the line as: its format version
/// and its episode. Records write them first (`schema`, `run_id`, `episode_id`), so reading
/// them stops there instead of going through the line a second time.
#[derive(Debug, Default)]
struct Head {
    schema: Option<u64>,
    run_id: Option<String>,
    episode_id: Option<String>,
    /// `kind`, where it follows the ids (table records write it fourth).
    kind: Option<String>,
    /// The key after the ids was read.
    past_ids: bool,
}

impl Head {
    /// The head of a line; what is missing or unreadable is left out (the line's own parse
    /// reports it).
    fn of(line: &[u8]) -> Head {
        let mut head = Head::default();
        let mut de = serde_json::Deserializer::from_slice(line);
        // Stopping early leaves the map unfinished, which serde_json reports as an error:
        // what was read is in `head` either way.
        let _ = (&mut de).deserialize_map(HeadVisitor(&mut head));
        head
    }

    /// The kind of record the line is, where its head was read (a line with no `schema` is
    /// no record, and its own parse reports it).
    fn records_kind(&self) -> Option<RecordsKind> {
        self.episode_id.as_ref()?;
        Some(RecordsKind::of_kind_field(self.kind.as_deref()))
    }

    fn key(self) -> Option<EpisodeKey> {
        Some(EpisodeKey {
            run_id: self.run_id?,
            episode_id: self.episode_id?,
        })
    }
}

struct HeadVisitor<'a>(&'a mut Head);

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum HeadKey {
    Schema,
    RunId,
    EpisodeId,
    Kind,
    #[serde(other)]
    Other,
}

impl<'de> Visitor<'de> for HeadVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a record")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let head = self.0;
        while let Some(key) = map.next_key::<HeadKey>()? {
            match key {
                HeadKey::Schema => head.schema = Some(map.next_value()?),
                HeadKey::RunId => head.run_id = Some(map.next_value()?),
                HeadKey::EpisodeId => head.episode_id = Some(map.next_value()?),
                HeadKey::Kind => head.kind = Some(map.next_value()?),
                HeadKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            // Records write `kind` right after the ids, if they have one: one key more.
            if head.schema.is_some() && head.run_id.is_some() && head.episode_id.is_some() {
                if head.kind.is_some() || head.past_ids {
                    break;
                }
                head.past_ids = true;
            }
        }
        Ok(())
    }
}

impl<T: DeserializeOwned, R: BufRead> Iterator for RecordReader<T, R> {
    type Item = Result<T, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            let line = match self.next_line()? {
                Ok(line) => line,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            match line.value {
                Ok(v) => return Some(Ok(v)),
                Err(e) if self.keep_going => {
                    self.skipped += 1;
                    if self.bad_lines.len() < KEPT_BAD_LINES {
                        self.bad_lines.push(e);
                    }
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Ids {
        episode_id: String,
        #[serde(default)]
        turns: Vec<u32>,
    }

    fn ids(text: &str) -> RecordReader<Ids, &[u8]> {
        RecordReader::new(text.as_bytes(), "e.jsonl").read_as::<Ids>()
    }

    const A: &str = r#"{"episode_id":"g0-m0"}"#;
    const B: &str = r#"{"episode_id":"g1-m0","turns":[1,2]}"#;

    #[test]
    fn records_are_read_line_by_line_skipping_blank_lines() {
        let text = format!("{A}\n\n  \r\n{B}\r\n");
        let read: Vec<Ids> = ids(&text).collect::<Result<_, _>>().unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(read[1].turns, vec![1, 2]);
        let mut lines = ids(&text);
        let first = lines.next_line().unwrap().unwrap();
        assert_eq!((first.number, first.end), (1, A.len() as u64 + 1));
        let second = lines.next_line().unwrap().unwrap();
        assert_eq!(second.number, 4, "blank lines count");
        assert_eq!(second.end, text.len() as u64);
        assert!(lines.next_line().is_none() && lines.at_end().unwrap());
    }

    #[test]
    fn a_bad_line_names_the_file_the_line_and_the_field_and_stops_the_reader() {
        let text = format!("{A}\n{{\"episode_id\":\"x\",\"turns\":[1,\"two\"]}}\n{B}\n");
        let mut reader = ids(&text);
        assert!(reader.next().unwrap().is_ok());
        let err = reader.next().unwrap().unwrap_err();
        assert_eq!(err.line(), Some(2));
        let shown = err.to_string();
        assert!(shown.starts_with("e.jsonl:2: field `turns[1]`:"), "{shown}");
        assert!(reader.next().is_none(), "stops after a bad line");

        let err = ids("not json\n").next().unwrap().unwrap_err().to_string();
        assert!(err.starts_with("e.jsonl:1: field `(line)`"), "{err}");
        let err = ids(&format!("{A} {A}\n")).next().unwrap().unwrap_err();
        assert!(err.to_string().contains("trailing"), "{err}");
    }

    #[test]
    fn keep_going_skips_and_counts_bad_lines() {
        let text = format!("{A}\nnot json\n{{\"turns\":[]}}\n{B}\n{{\"episode_id\":\"g2");
        let mut reader = ids(&text).keep_going();
        let read: Vec<Ids> = (&mut reader).collect::<Result<_, _>>().unwrap();
        assert_eq!(read.len(), 2);
        assert_eq!(reader.skipped(), 3);
        let lines: Vec<_> = reader.bad_lines().iter().map(|e| e.line()).collect();
        assert_eq!(lines, vec![Some(2), Some(3), Some(5)]);
        assert!(
            matches!(reader.bad_lines()[2], ReadError::CutOff { line: 5, .. }),
            "{:?}",
            reader.bad_lines()[2]
        );
        assert!(reader.bad_lines()[1].to_string().contains("episode_id"));
    }

    #[test]
    fn a_complete_last_line_without_newline_is_read_but_marked() {
        let mut lines = ids(A);
        let line = lines.next_line().unwrap().unwrap();
        assert!(!line.terminated);
        assert_eq!(line.value.unwrap().episode_id, "g0-m0");
    }

    #[test]
    fn a_line_past_the_limit_ends_the_reader_naming_file_line_and_limit() {
        let text = format!("{A}\n\n{}\n{B}\n", "x".repeat(100));
        let mut reader = ids(&text).max_line(64).keep_going();
        assert!(reader.next().unwrap().is_ok());
        let err = reader.next().unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            "e.jsonl:3: the line is longer than 64 bytes, the most a record may hold (is this a \
             record file?)"
        );
        assert!(
            reader.next().is_none(),
            "even keep_going stops: the line has no known end"
        );
        // `replay /dev/zero` read one endless line into memory until it aborted.
        let zeros = BufReader::new(std::io::repeat(0));
        let mut endless = RecordReader::new(zeros, "/dev/zero").max_line(1 << 16);
        let err = endless.next().unwrap().unwrap_err();
        assert!(
            matches!(err, ReadError::LineTooLong { line: 1, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_record_of_another_schema_version_is_refused_whole_or_not() {
        let future = r#"{"schema":99,"run_id":"r1","episode_id":"g2-m0"}"#;
        let text = format!("{A}\n{future}\n{B}\n");
        let mut reader = ids(&text).keep_going();
        assert!(reader.next().unwrap().is_ok());
        let err = reader.next().unwrap().unwrap_err();
        assert_eq!(
            err.to_string(),
            "e.jsonl:2: the record's schema version is 99; this build reads version 1 (a newer \
             dealgym wrote it? read it with that one)"
        );
        assert!(reader.next().is_none(), "even keep_going stops");
        // The version is found wherever the key is, and read as a number of any size.
        let late = r#"{"episode_id":"x","turns":[],"schema":4294967296}"#;
        let err = ids(&format!("{late}\n")).next().unwrap().unwrap_err();
        assert!(
            matches!(
                err,
                ReadError::Schema {
                    found: 4294967296,
                    ..
                }
            ),
            "{err}"
        );
        // A cut-off last line is a cut-off line, whatever its version says so far.
        let cut = r#"{"schema":9"#;
        let err = ids(&format!("{A}\n{cut}")).nth(1).unwrap().unwrap_err();
        assert!(matches!(err, ReadError::CutOff { line: 2, .. }), "{err}");
        // This build's version, and none at all (a few fields read as their own type), read.
        let current = r#"{"schema":1,"run_id":"r1","episode_id":"g0-m0"}"#;
        assert!(ids(&format!("{current}\n{A}\n")).all(|r| r.is_ok()));
    }

    #[test]
    fn each_line_names_its_episode_whatever_it_is_read_as() {
        let text = "{\"schema\":1,\"run_id\":\"r\\u0031\",\"episode_id\":\"g0-m0\",\"turns\":[]}\n";
        let mut reader = ids(text);
        let line = reader.next_line().unwrap().unwrap();
        let key = line.key.unwrap();
        assert_eq!(
            (key.run_id.as_str(), key.episode_id.as_str()),
            ("r1", "g0-m0")
        );
        let text = format!("{A}\n");
        assert!(ids(&text).next_line().unwrap().unwrap().key.is_none());
    }

    #[test]
    fn a_missing_file_is_an_io_error_naming_it() {
        let err = RecordReader::open(Path::new("/nonexistent/dealgym/e.jsonl"))
            .err()
            .unwrap();
        assert!(matches!(err, ReadError::Io { .. }));
        assert!(err
            .to_string()
            .starts_with("/nonexistent/dealgym/e.jsonl: "));
    }
}
