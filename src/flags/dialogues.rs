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
    /// Read LLM-Deliberation's published logs (the GPT-4 folders and the zip files, in memory)
    /// on the `deliberation` scenarios, write the sessions as JSONL and print per experiment the
    /// sessions found and complete and the paper's four metrics, re-scored by dealgym.
    Deliberation {
        /// The dataset's folder (holding `logs/`).
        #[arg(long, default_value = "../shared/datasets/llm-deliberation")]
        dataset: PathBuf,
        /// The table scenario file the experiments were played on.
        #[arg(long, default_value = "scenarios/deliberation.jsonl")]
        scenarios: PathBuf,
        /// Where the sessions are written (one per line, with its experiment).
        #[arg(long, default_value = "dialogues/deliberation_logs.jsonl")]
        out: PathBuf,
        /// Where the complete sessions are written as table records.
        #[arg(long, default_value = "dialogues/deliberation.jsonl")]
        records: PathBuf,
    },
}

impl DialoguesCommand {
    /// The people's dialogues' import options (`None` for the deliberation logs).
    pub fn options(self) -> Option<ImportOptions> {
        Some(match self {
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
            DialoguesCommand::Deliberation { .. } => return None,
        })
    }
}
