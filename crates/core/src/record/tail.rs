//! The one rule for a JSON-lines file that is only ever appended to, one whole line at a time
//! with its newline (the record files of `run`, `eval` and `serve`; the annotator's answers):
//! a last line that does not parse, or that is not a whole JSON object and has no newline, was
//! left by an interrupted write, and is cut away before the file is appended to again; a last
//! line that is a whole object without its newline is kept, and its newline written; a bad line
//! anywhere else is damage no kill leaves, so it is an error naming the file, the line and the
//! field. Whatever is cut is said: [`Tail::cut`] names the offset, the bytes and why.

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom, Write};

use serde::de::DeserializeOwned;

use super::reader::{ReadError, RecordReader};

/// What reading an appended file found at its end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tail {
    /// The offset just past the last whole, readable line: where the next line belongs.
    pub(crate) good_end: u64,
    /// The last line was cut off by an interrupted write (and ignored): what is cut, and why.
    pub cut: Option<Cut>,
    /// The last line is a whole record without its newline: kept (and read), and the newline
    /// is written before the next line ([`cut_off_tail`]).
    pub(crate) unterminated: bool,
}

impl Tail {
    /// The last line was cut off by an interrupted write.
    pub(crate) fn cut_off(&self) -> bool {
        self.cut.is_some()
    }
}

/// A cut-off last line: where it starts, how long it is and why it is taken for one — what a
/// command that cuts it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The byte offset the line starts at (the file is cut to this length).
    pub(crate) offset: u64,
    /// Its length in bytes.
    pub(crate) bytes: u64,
    pub(crate) why: String,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes from byte offset {}; {}",
            self.bytes, self.offset, self.why
        )
    }
}

/// Why an appended file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TailError {
    /// Reading failed: I/O, a line over the limit, a record of a newer schema.
    #[error(transparent)]
    Read(ReadError),
    /// A bad line that is not the last: not left by an interrupted write.
    #[error("{source}; it is not the last line, so it was not left by an interrupted write: fix or remove it")]
    Corrupt { source: ReadError },
}

/// Read every whole line of `file` (named `name` in errors) as a `T`, from the start, handing
/// each to `each` with its 1-based line number. Memory stays bounded by the longest line.
pub fn read_appended<T: DeserializeOwned>(
    file: &File,
    name: &str,
    mut each: impl FnMut(T, usize),
) -> Result<Tail, TailError> {
    let mut tail = Tail::default();
    let mut from_start = file;
    from_start.seek(SeekFrom::Start(0)).map_err(|source| {
        TailError::Read(ReadError::Io {
            file: name.to_string(),
            source,
        })
    })?;
    let mut lines = RecordReader::new(BufReader::new(file), name).read_as::<T>();
    while let Some(line) = lines.next_line() {
        let line = line.map_err(TailError::Read)?;
        let start = tail.good_end;
        match line.value {
            Ok(value) if line.terminated || line.closed => {
                each(value, line.number);
                tail.good_end = line.end;
                tail.unterminated = !line.terminated;
            }
            Err(source) if line.terminated && !lines.at_end().map_err(TailError::Read)? => {
                return Err(TailError::Corrupt { source })
            }
            // The last line, unreadable or not whole: an interrupted write.
            value => {
                let why = match value {
                    Ok(_) | Err(ReadError::CutOff { .. }) => {
                        "it has no newline and is not a whole record (an interrupted write)"
                            .to_string()
                    }
                    Err(e) => format!("it is not a record (an interrupted write): {e}"),
                };
                tail.cut = Some(Cut {
                    offset: start,
                    bytes: line.end - start,
                    why,
                });
                break;
            }
        }
    }
    Ok(tail)
}

/// Make the file end where the next line belongs: cut a cut-off last line away, or write the
/// newline a whole last line lacks. `file` must be open for writing.
pub fn cut_off_tail(file: &mut File, tail: &Tail) -> std::io::Result<()> {
    if tail.cut.is_some() {
        file.set_len(tail.good_end)?;
        file.seek(SeekFrom::End(0))?;
    } else if tail.unterminated {
        file.seek(SeekFrom::End(0))?;
        file.write_all(b"\n")?;
        file.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(name: &str, text: &str) -> File {
        let path = std::env::temp_dir().join(format!("dealgym-tail-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .unwrap()
    }

    fn read(file: &File) -> (Result<Tail, TailError>, Vec<(u32, usize)>) {
        let mut seen = Vec::new();
        let tail = read_appended::<u32>(file, "f.jsonl", |v, n| seen.push((v, n)));
        (tail, seen)
    }

    #[test]
    fn a_last_line_that_is_not_a_whole_record_is_cut_off_and_said() {
        for (text, cut) in [
            ("1\n2\n", false),
            ("1\n2", true),
            ("1\n{\"a", true),
            ("1\nx\n", true),
        ] {
            let mut file = file_with("cut", text);
            let (tail, seen) = read(&file);
            let tail = tail.unwrap();
            assert_eq!(
                seen,
                vec![(1, 1)]
                    .into_iter()
                    .chain((!cut).then_some((2, 2)))
                    .collect::<Vec<_>>(),
                "{text:?}"
            );
            assert_eq!(tail.good_end, if cut { 2 } else { 4 }, "{text:?}");
            assert_eq!(tail.cut_off(), cut, "{text:?}");
            if let Some(c) = &tail.cut {
                assert_eq!((c.offset, c.bytes), (2, text.len() as u64 - 2), "{text:?}");
                let said = c.to_string();
                assert!(
                    said.starts_with(&format!("{} bytes from byte offset 2; ", c.bytes))
                        && said.contains("interrupted write"),
                    "{said}"
                );
            }
            cut_off_tail(&mut file, &tail).unwrap();
            writeln!(file, "3").unwrap();
            let (_, seen) = read(&file);
            assert_eq!(seen.last(), Some(&(3, if cut { 2 } else { 3 })), "{text:?}");
        }
    }

    #[test]
    fn a_whole_record_without_its_newline_is_kept_and_the_newline_written() {
        let mut seen = Vec::new();
        let text = "{\"n\":1}\n{\"n\":2}  ";
        let mut file = file_with("whole", text);
        #[derive(serde::Deserialize)]
        struct N {
            n: u32,
        }
        let tail = read_appended::<N>(&file, "f.jsonl", |v, _| seen.push(v.n)).unwrap();
        assert_eq!(seen, [1, 2]);
        assert!(tail.unterminated && !tail.cut_off());
        assert_eq!(tail.good_end, text.len() as u64);
        cut_off_tail(&mut file, &tail).unwrap();
        writeln!(file, "{{\"n\":3}}").unwrap();
        let mut seen = Vec::new();
        let tail = read_appended::<N>(&file, "f.jsonl", |v, _| seen.push(v.n)).unwrap();
        assert_eq!(seen, [1, 2, 3]);
        assert!(!tail.unterminated && !tail.cut_off());
    }

    #[test]
    fn a_bad_line_before_the_last_is_an_error_naming_its_line() {
        let file = file_with("bad", "1\nx\n3\n");
        let err = read(&file).0.unwrap_err();
        assert!(
            matches!(err, TailError::Corrupt { ref source } if source.line() == Some(2)),
            "{err}"
        );
        assert!(err.to_string().starts_with("f.jsonl:2: "), "{err}");
    }
}
