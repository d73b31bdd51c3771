//! The `dealgym` command line: parses flags (`flags/`, every flag declared once) and calls the
//! library (`commands/`, one call per subcommand). Nothing else lives here.

mod commands;
mod flags;

use anyhow::Result;
use clap::Parser;

use commands::*;
use flags::{Cli, Command};

/// With `--features mimalloc`: mimalloc, not the system's malloc (a turn makes many small,
/// short-lived allocations; BENCHMARKS.md, "What a turn costs", weighs the two).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Run(flags) => run::run_command(flags),
        Command::Eval(flags) => eval::eval_command(flags),
        Command::Annotate(flags) => annotate::annotate_command(flags),
        Command::Demo(flags) => run::demo_command(flags),
        Command::Mock(flags) => serve::mock_command(flags),
        Command::Replay(flags) => replay::replay_command(&flags),
        Command::Report(flags) => report::report_command(&flags),
        Command::Export(flags) => export::export_command(&flags),
        Command::Serve(flags) => serve::serve_command(&flags),
        Command::Merge(flags) => merge::merge_command(&flags),
        Command::Scenarios(command) => scenarios::scenarios_command(command),
        Command::Dialogues(command) => scenarios::dialogues_command(command),
        Command::Presets(command) => presets::presets_command(command),
        Command::Docs(command) => presets::docs_command(command),
    }
}
