//! [`RecordWriter`]: finished games appended to a record file, as `dealgym run` writes one
//! (`replay`, `export` and `report` read it).

use std::path::PathBuf;

use dealgym_core::record::RecordWriter as Writer;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::game::Game;

/// Appends the records of finished games to `path`, one JSON line each, locked against a
/// second writer while open (a cut-off last line left by a crash is repaired first). Use it
/// as a context manager, or call `close()`.
#[pyclass(module = "dealgym._core")]
pub struct RecordWriter {
    writer: Option<Writer>,
    written: usize,
}

#[pymethods]
impl RecordWriter {
    #[new]
    fn new(path: PathBuf) -> PyResult<RecordWriter> {
        let (writer, _existing) =
            Writer::open_log(&path).map_err(|e| PyOSError::new_err(e.to_string()))?;
        Ok(RecordWriter {
            writer: Some(writer),
            written: 0,
        })
    }

    /// Append `game`'s record; the game must have ended.
    fn write(&mut self, game: &Bound<'_, Game>) -> PyResult<()> {
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the record writer is closed"))?;
        let game = game.borrow();
        writer
            .write(game.finished_record()?)
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        self.written += 1;
        Ok(())
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
