//! Every flag of the `dealgym` command line, declared once with its help text, and turned
//! into the plain option structs the library takes: the library crates never see clap.
//!
//! - `shared.rs`: the groups several commands flatten (the plan, the scenario choice, the
//!   config and preset, record files and where their scenarios are, `--duplicates`,
//!   `--concurrency`, `--group-size`, `--resume`, `--grace-s`, `--quiet`), each flag once;
//! - `values.rs`: flags whose value is one of a library enum's names;
//! - one file per subcommand: its own flags, and the conversion into the library's options
//!   (each flag over the config file's value over the default);
//! - `docs.rs`: the hidden `dealgym docs PAGE`, the book's generated reference pages (this
//!   command line's from the definitions here).

pub mod annotate;
pub mod demo;
pub mod dialogues;
pub mod docs;
pub mod eval;
pub mod export;
pub mod merge;
pub mod mock;
pub mod presets;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenarios;
pub mod serve;
mod shared;
mod values;

use clap::{Parser, Subcommand};

use annotate::AnnotateFlags;
use demo::DemoFlags;
use dialogues::DialoguesCommand;
use docs::DocsCommand;
use eval::EvalFlags;
use export::ExportFlags;
use merge::MergeFlags;
use mock::MockFlags;
use presets::PresetsCommand;
use replay::ReplayFlags;
use report::ReportFlags;
use run::RunFlags;
use scenarios::ScenariosCommand;
use serve::ServeFlags;

#[derive(Debug, Parser)]
#[command(
    name = "dealgym",
    version,
    about = "Runs two-party negotiations between language models and turns them into data"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play episodes between a learner and an opponent and write one JSON line per episode.
    Run(RunFlags),
    /// Play named players against named opponents (or each other) on the same setups; print
    /// the cross-play matrix and Bradley–Terry ratings.
    Eval(EvalFlags),
    /// Give every turn a person played (seats `human:<id>`) the private reasoning that led to
    /// it, written by a model; unusable answers leave the Thought empty and are counted.
    Annotate(AnnotateFlags),
    /// A short run of every family against the built-in mock endpoint; no setup needed.
    Demo(DemoFlags),
    /// An OpenAI-compatible endpoint with a built-in negotiator, latency and fault injection.
    Mock(MockFlags),
    /// Verify, rescore, render or branch recorded episodes.
    Replay(ReplayFlags),
    /// Tables (Markdown, CSV), charts (SVG) and one self-contained HTML page with searchable
    /// transcripts, from record files, in flat memory.
    Report(ReportFlags),
    /// Write records as trainer data (messages, prompt-completion, verl, trl-rollout, tinker,
    /// transitions), with each line's group statistics and advantages.
    Export(ExportFlags),
    /// An environment server: OpenEnv's protocol (WS /ws), REST episodes and a rollout service.
    Serve(ServeFlags),
    /// People at the table: `serve` with its play page on, and the built-in mock endpoint
    /// offered as an opponent; open http://127.0.0.1:8100/play.
    Play(serve::PlayCommandFlags),
    /// Join the record files of a run's shards into one; report missing and duplicated
    /// episodes (exits 1 if any, or if the run ids disagree).
    Merge(MergeFlags),
    /// Import, check and count scenario files.
    #[command(subcommand)]
    Scenarios(ScenariosCommand),
    /// The datasets' own human dialogues as episode records.
    #[command(subcommand)]
    Dialogues(DialoguesCommand),
    /// The built-in presets: one paper's settings under one name (`--preset NAME`).
    #[command(subcommand)]
    Presets(PresetsCommand),
    /// Write the book's generated reference pages (Markdown, to stdout).
    #[command(subcommand, hide = true)]
    Docs(DocsCommand),
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
