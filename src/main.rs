//! The `dealgym` command line: parses flags and calls the library. Nothing else lives here.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use dealgym::scenario::{self, import, Family, LoadOptions};

#[derive(Parser)]
#[command(
    name = "dealgym",
    version,
    about = "Runs two-party negotiations between language models and turns them into data"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Import, check and count scenario files.
    #[command(subcommand)]
    Scenarios(ScenariosCommand),
}

#[derive(Subcommand)]
enum ScenariosCommand {
    /// Turn a family's raw dataset files into a scenario file (JSONL).
    Import {
        /// ahp, craigslist, casino, dnd or job_interview.
        family: Family,
        /// The raw files, as found in the dataset (the split is read from each file's name).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where to write the scenarios (default: scenarios/FAMILY.jsonl).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check every line of a scenario file; exits non-zero if any line is bad.
    Validate { file: PathBuf },
    /// Count the scenarios of a file per family and split.
    List { file: PathBuf },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Scenarios(cmd) => scenarios(cmd),
    }
}

fn scenarios(cmd: ScenariosCommand) -> Result<()> {
    match cmd {
        ScenariosCommand::Import { family, files, out } => {
            let report = import::import(family, &files)?;
            let out =
                out.unwrap_or_else(|| PathBuf::from(format!("scenarios/{}.jsonl", family.name())));
            import::write_jsonl(&out, &report.scenarios)?;
            for note in &report.notes {
                eprintln!("{note}");
            }
            eprintln!(
                "wrote {} scenarios to {}",
                report.scenarios.len(),
                out.display()
            );
            Ok(())
        }
        ScenariosCommand::Validate { file } => {
            let report = scenario::load_scenarios(&file, LoadOptions { skip_bad: true })
                .with_context(|| format!("reading {}", file.display()))?;
            for e in &report.skipped {
                eprintln!("{e}");
            }
            if !report.skipped.is_empty() {
                bail!(
                    "{} bad lines, {} good scenarios in {}",
                    report.skipped.len(),
                    report.scenarios.len(),
                    file.display()
                );
            }
            println!(
                "{}: {} scenarios, all valid",
                file.display(),
                report.scenarios.len()
            );
            Ok(())
        }
        ScenariosCommand::List { file } => {
            let report = scenario::load_scenarios(&file, LoadOptions { skip_bad: true })
                .with_context(|| format!("reading {}", file.display()))?;
            print!("{}", scenario::count_table(&report.scenarios));
            if !report.skipped.is_empty() {
                eprintln!(
                    "({} bad lines skipped; run `dealgym scenarios validate` to see them)",
                    report.skipped.len()
                );
            }
            Ok(())
        }
    }
}
