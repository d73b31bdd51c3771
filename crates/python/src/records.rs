//! [`RecordWriter`]: finished games appended to a record file, as `dealgym run` writes one
//! (`replay`, `export` and `report` read it).

use std::ffi::CString;
use std::path::PathBuf;

use dealgym_core::record::{Existing, RecordWriter as Writer};
use pyo3::exceptions::{PyOSError, PyRuntimeWarning, PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::game::{Game, Kind};

/// Appends the records of finished games to `path`, one JSON line each, creating the file and
/// any missing folder above it. While open it holds the command line's lock on the file
/// (`record::OutputLock`): a second writer is refused, named from the sidecar `PATH.lock`,
/// which goes when this writer lets go (`close()`, the context manager's exit, the writer
/// dropped) — the core's one rule, the same for `dealgym run`. A last line a crash cut off is
/// removed first, with a `RuntimeWarning` naming the file, the byte offset and the bytes cut;
/// a whole last record is never cut (only given the newline it lacks). Use it as a context
/// manager, or call `close()`.
#[pyclass(module = "dealgym._core")]
pub struct RecordWriter {
    writer: Option<Writer>,
    written: usize,
    path: PathBuf,
    /// The episodes in the file, those it held when opened and those written since: an
    /// episode written twice makes the file one that `replay`, `export` and `report` refuse.
    episodes: Existing,
}

#[pymethods]
impl RecordWriter {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<RecordWriter> {
        let (writer, episodes) =
            Writer::open_log(&path).map_err(|e| PyOSError::new_err(e.to_string()))?;
        // What the file held that was cut or is there twice is said, never passed over.
        for note in episodes.notes(&path) {
            let note = CString::new(note.replace('\0', " "))?;
            PyErr::warn(py, &py.get_type::<PyRuntimeWarning>(), &note, 1)?;
        }
        Ok(RecordWriter {
            writer: Some(writer),
            written: 0,
            path,
            episodes,
        })
    }

    /// Append `game`'s record (of either kind); the game must have ended, and
    /// its episode must not be in the file yet (games of one seed and scenario are one episode
    /// unless their `member` differs).
    fn write(&mut self, game: &Bound<'_, PyAny>) -> PyResult<()> {
        let game = game
            .cast::<Game>()
            .map_err(|_| PyTypeError::new_err("a record writer writes a Game's record"))?;
        let game = game.borrow();
        match game.kind() {
            Kind::Pair(g) => {
                let record = g.ended_record()?;
                self.append(&record.run_id, &record.episode_id, record)
            }
            Kind::Table(g) => {
                let (run, episode, record) = g.record_for_writer()?;
                self.append(run, episode, record)
            }
            Kind::Market(g) => {
                let (run, episode, record) = g.record_for_writer()?;
                self.append(run, episode, record)
            }
        }
    }

    /// Records written by this writer.
    #[getter]
    fn written(&self) -> usize {
        self.written
    }

    /// Release the file (and its lock); writing after it is an error.
    fn close(&mut self) {
        self.writer = None;
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }
}

impl RecordWriter {
    /// Append one ended episode's record, unless its episode is in the file already.
    fn append(
        &mut self,
        run_id: &str,
        episode_id: &str,
        record: &impl serde::Serialize,
    ) -> PyResult<()> {
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the record writer is closed"))?;
        let episodes = self.episodes.runs.entry(run_id.to_string()).or_default();
        if episodes.contains(episode_id) {
            return Err(PyValueError::new_err(format!(
                "episode {episode_id} of run {run_id} is in {} already: games of one seed and scenario are one episode; give each its own seed, or its own member (Game(member=k), a GRPO group on one setup)",
                self.path.display()
            )));
        }
        writer
            .write(record)
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        episodes.insert(episode_id.to_string());
        self.written += 1;
        Ok(())
    }
}
