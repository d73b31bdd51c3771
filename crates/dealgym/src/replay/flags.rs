//! The flags of `dealgym replay`, declared once with their help text, and what they ask for
//! ([`Mode`]) after the config file is merged in. `main.rs` only maps them through.

use std::path::PathBuf;

use super::{BranchOptions, Error, RescoreOptions, VerifyOptions};
use crate::limits::{count_flag, MAX_CONCURRENCY, MAX_GROUP_SIZE};
use crate::record::OnDuplicate;
use crate::run::{FileConfig, RunOptions};

/// `--duplicates`, one flag with one meaning on every command that reads records (`replay`,
/// `report`, `export`, `eval`, `annotate`, `merge`); the rule itself is
/// [`crate::record::OnDuplicate`]'s.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct DuplicatesFlag {
    /// A record whose episode (its run id and episode id) an earlier record of the files
    /// already has: refuse (stop, naming both lines; merge reports it and exits 1) or skip
    /// (read each episode once and say how many records were skipped).
    #[arg(long, value_name = "refuse|skip", default_value_t = OnDuplicate::Refuse)]
    pub duplicates: OnDuplicate,
}

/// The flags of `dealgym replay`: record files and exactly one of `--verify`, `--rescore`,
/// `--render` or `--branch-from`.
#[derive(Debug, Clone, clap::Args)]
#[command(group(
    clap::ArgGroup::new("mode")
        .required(true)
        .args(["verify", "rescore", "render", "branch_from"])
))]
pub struct ReplayFlags {
    /// Record files (JSONL) as `dealgym run` writes them, read one record at a time.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Re-run every episode from its recorded completions through this build's engine and
    /// list each field that differs (parse, regulation, forwarded text, played action, outcome,
    /// utilities, ρ, metrics, rewards); exits 1 on any difference or unreplayable record.
    #[arg(long)]
    pub verify: bool,
    /// Recompute metrics and rewards under the [rewards] of --config (or of --preset) and
    /// write the records, otherwise unchanged, to --out.
    #[arg(long, requires = "out")]
    pub rescore: bool,
    /// Write one episode (--episode) as a transcript: md (Markdown) or html (one
    /// self-contained page); to --out, else to stdout.
    #[arg(long, value_name = "md|html", requires = "episode")]
    pub render: Option<RenderFormat>,
    /// Replay the first N turns (attempts, in record order) of each episode, then let
    /// --learner and --opponent play on; --group-size branches per episode form one GRPO group.
    #[arg(long, value_name = "N", requires_all = ["learner", "opponent", "out"])]
    pub branch_from: Option<usize>,
    /// Only the episode with this id (the first found).
    #[arg(long, value_name = "ID")]
    pub episode: Option<String>,
    /// Scenario file(s) holding the records' scenarios; repeat the flag for several (default:
    /// scenarios/FAMILY.jsonl of each record's family).
    #[arg(long, value_name = "FILE")]
    pub scenarios: Vec<PathBuf>,
    /// The prompts directory of a run played with custom templates (default: the config's
    /// prompts_dir, else the built-in templates).
    #[arg(long, value_name = "DIR")]
    pub prompts_dir: Option<PathBuf>,
    /// TOML config as for `dealgym run`: its [rewards] for --verify (default: each record's
    /// own reward settings) and --rescore; also its named players, seed and group size for
    /// --branch-from.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A paper's settings by name (`dealgym presets list`), under --config: its [rewards] for
    /// --verify and --rescore, its rules and players for --branch-from.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Where to write: a new record file (--rescore, --branch-from), or the transcript
    /// (--render).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// --branch-from: who plays on in the learner's seat (same forms as `dealgym run`).
    #[arg(long, value_name = "SPEC")]
    pub learner: Option<String>,
    /// --branch-from: who plays on in the opponent's seat.
    #[arg(long, value_name = "SPEC")]
    pub opponent: Option<String>,
    /// --branch-from: branches per episode, with different sampling seeds, 1 to 4,096
    /// (default: the config's group_size, else 1).
    #[arg(long, value_name = "G", value_parser = count_flag::<u32>(1, MAX_GROUP_SIZE))]
    pub group_size: Option<u32>,
    /// --branch-from: the seed the branches' sampling seeds come from (default: the config's,
    /// else 0).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// --branch-from: episodes in flight at once, 1 to 65,536 (default: the config's, else
    /// 64).
    #[arg(long, value_name = "N", value_parser = count_flag::<usize>(1, MAX_CONCURRENCY))]
    pub concurrency: Option<usize>,
    #[command(flatten)]
    pub duplicates: DuplicatesFlag,
}

/// The transcript formats of `--render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RenderFormat {
    /// Markdown.
    Md,
    /// One self-contained HTML page.
    Html,
}

/// What `--render` writes.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    pub files: Vec<PathBuf>,
    pub episode: String,
    pub format: RenderFormat,
    /// `None`: stdout.
    pub out: Option<PathBuf>,
    pub on_duplicate: OnDuplicate,
}

/// What a `dealgym replay` command asks for.
#[derive(Debug, Clone)]
pub enum Mode {
    Verify(VerifyOptions),
    Rescore(RescoreOptions),
    Render(RenderOptions),
    Branch(Box<BranchOptions>),
}

impl ReplayFlags {
    /// The command, with the config file merged in (flags over the file over the defaults).
    pub fn mode(&self) -> Result<Mode, Error> {
        let file = FileConfig::resolve(self.config.as_deref(), self.preset.as_deref())?;
        let configured = self.config.is_some() || self.preset.is_some();
        let prompts_dir = self.prompts_dir.clone().or(file.prompts_dir.clone());
        let missing = |flag: &str| Error::Options(format!("this mode needs {flag}"));
        let on_duplicate = self.duplicates.duplicates;
        if self.verify {
            return Ok(Mode::Verify(VerifyOptions {
                files: self.files.clone(),
                episode: self.episode.clone(),
                scenarios: self.scenarios.clone(),
                prompts_dir,
                rewards: configured.then_some(file.rewards),
                on_duplicate,
            }));
        }
        if self.rescore {
            if !configured {
                return Err(missing(
                    "--config FILE or --preset NAME (the new [rewards])",
                ));
            }
            return Ok(Mode::Rescore(RescoreOptions {
                files: self.files.clone(),
                episode: self.episode.clone(),
                scenarios: self.scenarios.clone(),
                rewards: file.rewards,
                out: self.out.clone().ok_or_else(|| missing("--out"))?,
                on_duplicate,
            }));
        }
        if let Some(format) = self.render {
            return Ok(Mode::Render(RenderOptions {
                files: self.files.clone(),
                episode: self.episode.clone().ok_or_else(|| missing("--episode"))?,
                format,
                out: self.out.clone(),
                on_duplicate,
            }));
        }
        let Some(prefix) = self.branch_from else {
            return Err(Error::Options(
                "say what to do: --verify, --rescore, --render or --branch-from".into(),
            ));
        };
        let mut run = RunOptions::new(
            Vec::new(),
            self.learner
                .as_deref()
                .ok_or_else(|| missing("--learner"))?,
            self.opponent
                .as_deref()
                .ok_or_else(|| missing("--opponent"))?,
            self.out.clone().ok_or_else(|| missing("--out"))?,
        )
        .with_config(file);
        run.prompts_dir = prompts_dir;
        run.seed = self.seed.unwrap_or(run.seed);
        run.group_size = self.group_size.unwrap_or(run.group_size);
        run.concurrency = self.concurrency.unwrap_or(run.concurrency);
        run.progress = false;
        Ok(Mode::Branch(Box::new(BranchOptions {
            files: self.files.clone(),
            episode: self.episode.clone(),
            scenarios: self.scenarios.clone(),
            prefix,
            run,
            on_duplicate,
        })))
    }
}
