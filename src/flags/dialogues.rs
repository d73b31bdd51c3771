//! `dealgym dialogues …`: the datasets' own human dialogues as episode records.

use std::path::PathBuf;

use clap::Subcommand;

use dealgym::dialogues::deliberation::Scoring;
use dealgym::dialogues::ImportOptions;
use dealgym::scenario::Family;

use super::values::one_of;

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
    /// sessions found and complete and the paper's four metrics, re-scored by the game's rule,
    /// by the authors' notebooks, or both (--scoring).
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
        /// Where the complete sessions are written as table records (the same in every
        /// scoring: their metrics are the rule's, which replay recomputes).
        #[arg(long, default_value = "dialogues/deliberation.jsonl")]
        records: PathBuf,
        /// How the figures are scored.
        #[arg(
            long,
            default_value_t = Scoring::Rule,
            value_parser = one_of(&Scoring::ALL, Scoring::name, scoring_about)
        )]
        scoring: Scoring,
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

fn scoring_about(scoring: Scoring) -> Option<&'static str> {
    Some(match scoring {
        Scoring::Rule => {
            "The game's stated rule: a party accepts at or above its minimum, the lead with its bonus of 10; the complete sessions"
        }
        Scoring::Paper => {
            "The authors' notebooks exactly (evaluate_deals.ipynb for the history folders, the earlier deals_evaluation.ipynb for the zipped logs): strictly above the minimum, the lead's last full verdict carried to the final round, their own score tables and session filters; with --out, each session's verdicts"
        }
        Scoring::Both => "Both, side by side (the book's table)",
    })
}
