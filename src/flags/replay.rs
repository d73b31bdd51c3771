//! `dealgym replay`: record files and exactly one of `--verify`, `--rescore`, `--render` or
//! `--branch-from`, turned into what it asks for ([`Mode`]) with the config file merged in.

use std::path::PathBuf;

use clap::{ArgGroup, Args};

use super::shared::{
    help, named, ConcurrencyFlag, ConfigFlags, DuplicatesFlag, GraceFlag, GroupSizeFlag, QuietFlag,
    RecordFiles, RecordLookup, ResumeFlag,
};
use super::values::one_of;
use dealgym::replay::{
    BranchOptions, Error, RenderFormat, RenderOptions, RescoreOptions, VerifyOptions,
};
use dealgym::run::RunOptions;

/// The flags of `dealgym replay`.
#[derive(Debug, Clone, Args)]
#[command(
    group(
        ArgGroup::new("mode")
            .required(true)
            .args(["verify", "rescore", "render", "branch_from"])
    ),
    mut_arg("scenarios", named("FILE",
        "Scenario file(s) holding the records' scenarios; repeat the flag for several \
         (default: scenarios/FAMILY.jsonl of each record's family)")),
    mut_arg("prompts_dir", named("DIR",
        "The prompts directory of a run played with custom templates (default: the config's \
         prompts_dir, else the built-in templates)")),
    mut_arg("config", named("FILE",
        "TOML config as for `dealgym run`: its [rewards] for --verify (default: each record's \
         own reward settings) and --rescore; also its named players, seed and group size for \
         --branch-from")),
    mut_arg("preset", help(
        "A paper's settings by name (`dealgym presets list`), under --config: its [rewards] \
         for --verify and --rescore, its rules and players for --branch-from")),
    mut_arg("group_size", named("G",
        "--branch-from: branches per episode, with different sampling seeds, 1 to 4,096 \
         (default: the config's group_size, else 1)")),
    mut_arg("concurrency", named("N",
        "--branch-from: episodes in flight at once, 1 to 65,536 (default: the config's, else \
         64)")),
)]
pub struct ReplayFlags {
    #[command(flatten)]
    pub files: RecordFiles,
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
    #[arg(
        long,
        value_name = "md|html",
        requires = "episode",
        value_parser = one_of(&RenderFormat::ALL, RenderFormat::name, render_about)
    )]
    pub render: Option<RenderFormat>,
    /// Replay the first N turns (attempts, in record order) of each episode, then let
    /// --learner and --opponent play on; --group-size branches per episode form one GRPO group.
    /// Table records: --seat ROLE=SPEC players (unnamed roles play rule:deliberation) play on.
    #[arg(long, value_name = "N", requires = "out")]
    pub branch_from: Option<usize>,
    /// Only the episode with this id (the first found).
    #[arg(long, value_name = "ID")]
    pub episode: Option<String>,
    #[command(flatten)]
    pub lookup: RecordLookup,
    #[command(flatten)]
    pub config: ConfigFlags,
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
    /// --branch-from on table records: who plays on in role ROLE's seat (repeatable; same
    /// forms as `dealgym run --seat`).
    #[arg(long = "seat", value_name = "ROLE=SPEC")]
    pub seats: Vec<String>,
    #[command(flatten)]
    pub group_size: GroupSizeFlag,
    /// --branch-from: the seed the branches' sampling seeds come from (default: the config's,
    /// else 0).
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub concurrency: ConcurrencyFlag,
    #[command(flatten)]
    pub duplicates: DuplicatesFlag,
    /// --branch-from: a branch is played as a run is, so it resumes, stops and shows progress
    /// like one.
    #[command(flatten)]
    pub resume: ResumeFlag,
    #[command(flatten)]
    pub grace: GraceFlag,
    #[command(flatten)]
    pub quiet: QuietFlag,
}

/// What each `--render` format is, as `--help` lists it.
fn render_about(format: RenderFormat) -> Option<&'static str> {
    Some(match format {
        RenderFormat::Md => "Markdown",
        RenderFormat::Html => "One self-contained HTML page",
    })
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
        let file = self.config.resolve()?;
        let configured = self.config.given();
        let files = &self.files.files;
        let scenarios = &self.lookup.scenarios;
        let prompts_dir = self.lookup.prompts_dir.clone().or(file.prompts_dir.clone());
        let missing = |flag: &str| Error::Options(format!("this mode needs {flag}"));
        let on_duplicate = self.duplicates.duplicates;
        if self.verify {
            return Ok(Mode::Verify(VerifyOptions {
                files: files.clone(),
                episode: self.episode.clone(),
                scenarios: scenarios.clone(),
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
                files: files.clone(),
                episode: self.episode.clone(),
                scenarios: scenarios.clone(),
                rewards: file.rewards,
                out: self.out.clone().ok_or_else(|| missing("--out"))?,
                on_duplicate,
            }));
        }
        if let Some(format) = self.render {
            return Ok(Mode::Render(RenderOptions {
                files: files.clone(),
                episode: self.episode.clone().ok_or_else(|| missing("--episode"))?,
                format,
                out: self.out.clone(),
                on_duplicate,
                scenarios: scenarios.clone(),
            }));
        }
        let Some(prefix) = self.branch_from else {
            return Err(Error::Options(
                "say what to do: --verify, --rescore, --render or --branch-from".into(),
            ));
        };
        // Two-party branches need --learner and --opponent, table branches take --seat: which
        // is asked of the records' kind where the branch is planned (`replay::branch`,
        // `replay::branch_tables`).
        let mut run = RunOptions::new(
            Vec::new(),
            self.learner.as_deref().unwrap_or(""),
            self.opponent.as_deref().unwrap_or(""),
            self.out.clone().ok_or_else(|| missing("--out"))?,
        )
        .with_config(file);
        run.seats = dealgym::run::parse_seats(&self.seats).map_err(Error::Run)?;
        run.prompts_dir = prompts_dir;
        run.seed = self.seed.unwrap_or(run.seed);
        run.group_size = self.group_size.group_size.unwrap_or(run.group_size);
        run.concurrency = self.concurrency.concurrency.unwrap_or(run.concurrency);
        run.resume = self.resume.resume;
        run.grace = self.grace.grace().map_err(Error::Options)?;
        run.progress = !self.quiet.quiet;
        Ok(Mode::Branch(Box::new(BranchOptions {
            files: files.clone(),
            episode: self.episode.clone(),
            scenarios: scenarios.clone(),
            prefix,
            run,
            on_duplicate,
        })))
    }
}
