//! The `dealgym` command in the wheel (feature `cli`): the command line of dealgym-cli, the
//! same code as the binary, run in this process for the console script `dealgym._cli`.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Run the `dealgym` command line on `argv` (the program's name first, as `sys.argv`) and
/// answer its exit status. The GIL is released while it runs. `--help`, `--version`, a refused
/// flag and the commands whose status says more than success end the process themselves, as
/// the binary does: this is for the console script, not for calling from a program.
#[pyfunction]
pub fn main(py: Python<'_>, argv: Vec<OsString>) -> i32 {
    i32::from(py.detach(move || dealgym_cli::main_from(argv)))
}
