//! The one rule for a JSON-lines file that is only ever appended to, one whole line at a time
//! with its newline (the record files of `run`, `eval` and `serve`; the annotator's answers):
//! a last line without its newline, or one that does not parse, was left by an interrupted
//! write, and is cut away before the file is appended to again; a bad line anywhere else is
//! damage no kill leaves, so it is an error naming the file, the line and the field.

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};

use serde::de::DeserializeOwned;

use super::reader::{ReadError, RecordReader};

/// What reading an appended file found at its end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tail {
    /// The offset just past the last whole, readable line: where the next line belongs.
    pub good_end: u64,
    /// The last line was cut off by an interrupted write (and ignored).
    pub cut_off: bool,
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
        match line.value {
            Ok(value) if line.terminated => {
                each(value, line.number);
                tail.good_end = line.end;
            }
            Err(source) if line.terminated && !lines.at_end().map_err(TailError::Read)? => {
                return Err(TailError::Corrupt { source })
            }
            // The last line, without its newline or unreadable: an interrupted write.
            _ => {
                tail.cut_off = true;
                break;
            }
        }
    }
    Ok(tail)
}

/// Cut a cut-off last line away, so the next line appended starts where the last whole one
/// ended. `file` must be open for writing.
pub fn cut_off_tail(file: &mut File, tail: Tail) -> std::io::Result<()> {
    if tail.cut_off {
        file.set_len(tail.good_end)?;
        file.seek(SeekFrom::End(0))?;
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
    fn a_last_line_without_newline_or_unreadable_is_cut_off_even_when_it_parses() {
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
            assert_eq!(
                tail,
                Tail {
                    good_end: if cut { 2 } else { 4 },
                    cut_off: cut
                },
                "{text:?}"
            );
            cut_off_tail(&mut file, tail).unwrap();
            writeln!(file, "3").unwrap();
            let (_, seen) = read(&file);
            assert_eq!(seen.last(), Some(&(3, if cut { 2 } else { 3 })), "{text:?}");
        }
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
