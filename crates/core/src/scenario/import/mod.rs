//! `dealgym scenarios import`: turn the raw public datasets into scenario files.
//!
//! One file per family reads that dataset's own format and writes [`Scenario`]s with the
//! dataset's identifiers, splits and recorded human outcomes. The importer is the only code that
//! knows the raw formats; everything else reads scenario files.

// The raw formats' readers are public for `dealgym::dialogues`, which replays the people's
// dialogues from the same files.
mod ahp;
pub mod casino;
pub mod craigslist;
pub mod deliberation;
pub mod dnd;
pub mod job_interview;

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{validate, Family, InvalidScenario, Scenario};
use crate::limits::{read_file, MAX_INPUT_FILE};

/// An error reading a raw dataset file.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Format { file: String, message: String },
    #[error("{file}: record {record}: {message}")]
    Record {
        file: String,
        record: String,
        message: String,
    },
}

impl ImportError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        ImportError::Io {
            file: path.display().to_string(),
            source,
        }
    }

    pub(crate) fn format(path: &Path, message: impl Into<String>) -> Self {
        ImportError::Format {
            file: path.display().to_string(),
            message: message.into(),
        }
    }

    pub(crate) fn record(
        path: &Path,
        record: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ImportError::Record {
            file: path.display().to_string(),
            record: record.into(),
            message: message.into(),
        }
    }
}

/// The scenarios of one import and what the importer has to say about the data (dropped
/// records and why).
#[derive(Debug, Default)]
pub struct ImportReport {
    pub scenarios: Vec<Scenario>,
    pub notes: Vec<String>,
}

/// Import the raw files of one family. Every scenario is validated before it is returned.
pub fn import(family: Family, files: &[PathBuf]) -> Result<ImportReport, ImportError> {
    if files.is_empty() {
        return Err(ImportError::Format {
            file: "(none)".into(),
            message: "no raw files given".into(),
        });
    }
    let report = match family {
        Family::Ahp => ahp::import(files)?,
        Family::Craigslist => craigslist::import(files)?,
        Family::Casino => casino::import(files)?,
        Family::Dnd => dnd::import(files)?,
        Family::JobInterview => job_interview::import(files)?,
        Family::Bundle => {
            return Err(ImportError::Format {
                file: "(bundle)".into(),
                message: "the bundle family has no public data set to import: run `dealgym scenarios generate bundle`".into(),
            })
        }
        Family::Hotel => {
            return Err(ImportError::Format {
                file: files[0].display().to_string(),
                message: "the hotel family has no public data set to import: it is generated \
                          (`dealgym scenarios generate hotel`)"
                    .into(),
            })
        }
    };
    check_report(report)
}

/// Every scenario valid, no id twice.
fn check_report(report: ImportReport) -> Result<ImportReport, ImportError> {
    for s in &report.scenarios {
        validate(s).map_err(|InvalidScenario { field, message }| ImportError::Record {
            file: s.source.clone(),
            record: s.id.clone(),
            message: format!("produced an invalid scenario: field `{field}`: {message}"),
        })?;
    }
    let mut seen = std::collections::HashSet::new();
    for s in &report.scenarios {
        if !seen.insert(s.id.as_str()) {
            return Err(ImportError::Record {
                file: s.source.clone(),
                record: s.id.clone(),
                message: "two scenarios with the same id".into(),
            });
        }
    }
    Ok(report)
}

/// Write scenarios (two-party or table) as JSONL, one per line, replacing the file atomically.
pub fn write_jsonl<T: serde::Serialize>(path: &Path, scenarios: &[T]) -> Result<(), ImportError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| ImportError::io(dir, e))?;
    }
    let tmp = path.with_extension("jsonl.tmp");
    let mut out =
        std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(|e| ImportError::io(&tmp, e))?);
    for s in scenarios {
        let line =
            serde_json::to_string(s).map_err(|e| ImportError::format(path, e.to_string()))?;
        writeln!(out, "{line}").map_err(|e| ImportError::io(&tmp, e))?;
    }
    out.flush().map_err(|e| ImportError::io(&tmp, e))?;
    drop(out);
    std::fs::rename(&tmp, path).map_err(|e| ImportError::io(path, e))
}

/// Read a whole file as JSON of type `T`, naming the file and the JSON path on error.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ImportError> {
    let text = read_file(path, MAX_INPUT_FILE).map_err(|e| ImportError::io(path, e))?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(de)
        .map_err(|e| ImportError::format(path, format!("at `{}`: {}", e.path(), e.inner())))
}

/// The dataset split a file holds, from its name: `casino_train.json` → `train`,
/// `validation.json` / `val.txt` → `valid`, `ji.test.json` → `test`.
pub(crate) fn split_from_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let words: Vec<&str> = name.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    for (split, aliases) in [
        ("train", &["train"][..]),
        ("valid", &["valid", "val", "validation", "dev"]),
        ("test", &["test"]),
    ] {
        if words.iter().any(|w| aliases.contains(w)) {
            return Some(split.to_string());
        }
    }
    None
}

/// A file's own name (`casino_test.json`), for `source` fields.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Round away floating-point noise from derived amounts (0.8 · 16.09 = 12.872, not 12.8720000001).
pub(crate) fn tidy(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_from_file_names() {
        assert_eq!(
            split_from_name(Path::new("a/casino_train.json")).as_deref(),
            Some("train")
        );
        assert_eq!(
            split_from_name(Path::new("validation.json")).as_deref(),
            Some("valid")
        );
        assert_eq!(
            split_from_name(Path::new("val.txt")).as_deref(),
            Some("valid")
        );
        assert_eq!(
            split_from_name(Path::new("ji.test.json")).as_deref(),
            Some("test")
        );
        assert_eq!(split_from_name(Path::new("books.json")), None);
    }
}
