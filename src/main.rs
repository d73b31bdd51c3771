//! The `dealgym` binary: the command line of the library (`src/lib.rs`) on this process's
//! arguments. Nothing else lives here.

use std::process::ExitCode;

/// With `--features mimalloc`: mimalloc, not the system's malloc (a turn makes many small,
/// short-lived allocations; BENCHMARKS.md, "What a turn costs", weighs the two).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(dealgym_cli::main_from(std::env::args_os()))
}
