//! `dealgym dialogues …`: the datasets' own human dialogues as episode records.

use std::path::PathBuf;

use clap::Subcommand;

use dealgym::dialogues::ImportOptions;
use dealgym::scenario::Family;

/// `dealgym dialogues …`.
#[derive(Debug, Clone, Subcommand)]
pub enum DialoguesCommand {
    /// Play each dataset dialogue through the engine on its scenario and write one episode
    /// record per dialogue to OUT/FAMILY.jsonl; print per family the dialogues read,
    /// imported and outcome-matched, and each kind of skip or mismatch.
    Import {
        /// The raw datasets, one folder per dataset.
        #[arg(long, default_value = "../shared/datasets")]
        datasets: PathBuf,
        // A folder, not scenario files: the one flag named `--scenarios` that is not one of
        // the shared groups.
        /// The folder of the scenario files the dialogues are played on.
        #[arg(long, default_value = "scenarios")]
        scenarios: PathBuf,
        /// Where FAMILY.jsonl is written (replaced whole).
        #[arg(long, default_value = "dialogues")]
        out: PathBuf,
        /// Only these families (repeatable; default: all).
        #[arg(long = "family")]
        families: Vec<Family>,
    },
}

impl DialoguesCommand {
    pub fn options(self) -> ImportOptions {
        match self {
            DialoguesCommand::Import {
                datasets,
                scenarios,
                out,
                families,
            } => ImportOptions {
                datasets,
                scenarios,
                out,
                families,
            },
        }
    }
}
