//! The `dealgym` command line as a library: parses flags (`flags/`, every flag declared once)
//! and calls the runtime (`commands/`, one call per subcommand). Two entry points run it: the
//! binary (`src/main.rs`) and the Python package's console script (`dealgym._core.main`,
//! crates/python's feature `cli`), so `pip install .` gives the same command as `cargo install`.
//!
//! No `#[global_allocator]` here: the binary chooses its own (feature `mimalloc`), and the
//! Python extension has its own, and a program may hold only one.

mod commands;
mod flags;

use std::ffi::OsString;

use anyhow::Result;
use clap::Parser;

use commands::*;
use flags::{Cli, Command};

/// Run the command line on `args` (the program's name first, as `std::env::args_os` gives
/// them) and answer its exit status: 0, or 1 after printing the error as a Rust `main`
/// returning `Err` prints it (`Error: ` and the chain). `--help`, `--version` and a flag clap
/// refuses end the process as clap does (its output flushed); so do the commands whose status
/// says more than success (a stopped run, a verification that found differences).
pub fn main_from(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> u8 {
    match run(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("Error: {e:?}");
            1
        }
    }
}

/// The subcommand `args` name, with its flags, run to its end.
fn run(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> Result<()> {
    match Cli::parse_from(args).command {
        Command::Run(flags) => run::run_command(flags),
        Command::Eval(flags) => eval::eval_command(flags),
        Command::Annotate(flags) => annotate::annotate_command(flags),
        Command::Demo(flags) => run::demo_command(flags),
        Command::Mock(flags) => serve::mock_command(flags),
        Command::Replay(flags) => replay::replay_command(&flags),
        Command::Report(flags) => report::report_command(&flags),
        Command::Export(flags) => export::export_command(&flags),
        Command::Serve(flags) => serve::serve_command(&flags),
        Command::Play(flags) => serve::play_command(&flags),
        Command::Merge(flags) => merge::merge_command(&flags),
        Command::Scenarios(command) => scenarios::scenarios_command(command),
        Command::Dialogues(command) => scenarios::dialogues_command(command),
        Command::Presets(command) => presets::presets_command(command),
        Command::Docs(command) => presets::docs_command(command),
    }
}
