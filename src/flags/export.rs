//! `dealgym export`: record files, the trainer format and whose data.

use std::path::PathBuf;

use clap::Args;

use super::shared::{named, DuplicatesFlag, RecordFiles, RecordLookup};
use super::values::{one_of, undescribed};
use dealgym::export::{ExportError, ExportOptions, Format, Seats};

/// The flags of `dealgym export`.
#[derive(Debug, Clone, Args)]
#[command(mut_arg(
    "files",
    named(
        "FILES",
        "Record files (JSONL, as `dealgym run` writes them), read in the order given"
    )
))]
pub struct ExportFlags {
    #[command(flatten)]
    pub files: RecordFiles,
    /// The trainer format (docs/src/guide/export.md): messages, prompt-completion, verl,
    /// trl-rollout, tinker or transitions. verl, trl-rollout and tinker need token-exact records.
    #[arg(long, value_parser = one_of(&Format::ALL, Format::name, format_about))]
    pub format: Format,
    /// Whose data to write: learner, opponent or both.
    #[arg(
        long,
        default_value_t = Seats::Learner,
        value_parser = one_of(&Seats::ALL, Seats::name, undescribed)
    )]
    pub seats: Seats,
    /// Table records (n-party games): only this role's seat (by default every seat). Two-party
    /// records choose with --seats.
    #[arg(long, value_name = "ROLE")]
    pub role: Option<String>,
    /// Write to this file (it appears only once the export has succeeded) instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// prompt-completion only: keep the system prompt and the last N messages the seat
    /// received (with its own replies between them) as each prompt's context.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub last_k: Option<u32>,
    /// Succeed even when no line is written (by default an export that would write nothing
    /// fails, saying what was skipped, and writes no file).
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub lookup: RecordLookup,
    #[command(flatten)]
    pub duplicates: DuplicatesFlag,
}

/// What each trainer format writes, as `--help` lists it.
fn format_about(format: Format) -> Option<&'static str> {
    Some(match format {
        Format::Messages => {
            "Per seat and episode: `{\"messages\": [...]}`, the seat's chat as sent (TRL/HF SFT)"
        }
        Format::PromptCompletion => {
            "Per seat and turn: `{\"prompt\": [...], \"completion\": [...]}` (TRL SFT and GRPO)"
        }
        Format::Verl => "Per seat and episode: verl's `AgentLoopOutput` (token-exact records only)",
        Format::TrlRollout => {
            "Per seat and episode: the keys TRL's GRPO `rollout_func` returns (token-exact only)"
        }
        Format::Tinker => "Per seat and episode: Tinker transitions (token-exact only)",
        Format::Transitions => {
            "Per seat and turn: a planner's transition (state, candidates, chosen, reward, next state, status)"
        }
        Format::Campaigns => {
            "Per campaign played and seat: its deals in order, each with its chat, reward and ledger (run --campaigns)"
        }
    })
}

impl ExportFlags {
    pub fn options(&self) -> Result<ExportOptions, ExportError> {
        if self.last_k.is_some() && self.format != Format::PromptCompletion {
            return Err(ExportError::Options(format!(
                "--last-k applies to --format prompt-completion, not {}",
                self.format.name()
            )));
        }
        Ok(ExportOptions {
            files: self.files.files.clone(),
            format: self.format,
            seats: self.seats,
            last_k: self.last_k.map(|k| k as usize),
            scenarios: self.lookup.scenarios.clone(),
            scenario_dir: PathBuf::from(dealgym_core::scenario::SCENARIO_DIR),
            prompts_dir: self.lookup.prompts_dir.clone(),
            on_duplicate: self.duplicates.duplicates,
            allow_empty: self.allow_empty,
            role: self.role.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::flags::{Cli, Command};

    #[test]
    fn last_k_is_refused_for_a_format_other_than_prompt_completion() {
        let cli = Cli::try_parse_from([
            "dealgym", "export", "--format", "verl", "--last-k", "2", "x.jsonl",
        ])
        .unwrap();
        let Command::Export(flags) = cli.command else {
            panic!("export's flags");
        };
        let err = flags.options().unwrap_err().to_string();
        assert_eq!(
            err,
            "--last-k applies to --format prompt-completion, not verl"
        );
    }
}
