//! `dealgym annotate`: a record file, the endpoint that writes the thoughts, and how.

use std::path::PathBuf;

use clap::Args;

use super::shared::{
    help, ConcurrencyFlag, DuplicatesFlag, GraceFlag, QuietFlag, RecordLookup, ResumeFlag,
};
use dealgym::annotate::{AnnotateError, AnnotateOptions};

/// The flags of `dealgym annotate`.
#[derive(Debug, Clone, Args)]
#[command(
    mut_arg("concurrency", |a| a
        .default_value("64")
        .help("At most this many requests in flight (1 to 65,536)")),
    mut_arg("resume", help(
        "Continue into an output that holds episodes: those already there are not annotated \
         again (and a cut-off last line is repaired)")),
    mut_arg("scenarios", help(
        "Scenario files the records were played on (default: scenarios/FAMILY.jsonl)")),
    mut_arg("prompts_dir", help("The prompts directory the records were played with, if any")),
    mut_arg("grace_s", help(
        "After SIGINT (Ctrl-C) or SIGTERM no new episode starts and those being annotated get \
         this many seconds to finish; then (or at a second signal) they are abandoned, \
         unwritten, for --resume. Exits 130 after SIGINT, 143 after SIGTERM")),
)]
pub struct AnnotateFlags {
    /// The record file whose people's turns (seats played by `human:<id>`) get thoughts, e.g.
    /// dialogues/casino.jsonl.
    pub file: PathBuf,
    /// The model that writes the thoughts: openai:MODEL@URL (e.g. vLLM at
    /// http://127.0.0.1:8000/v1).
    #[arg(long, value_name = "SPEC")]
    pub endpoint: String,
    /// The annotated record file to write (refused if it holds episodes, unless --resume).
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub concurrency: ConcurrencyFlag,
    #[command(flatten)]
    pub resume: ResumeFlag,
    #[command(flatten)]
    pub quiet: QuietFlag,
    /// A minijinja template instead of the built-in prompts/annotate/thought.j2 (its
    /// fingerprint is recorded on each turn and keys the cache).
    #[arg(long, value_name = "PATH")]
    pub template: Option<PathBuf>,
    /// Where the answers are kept, so a resumed or repeated annotation asks nothing twice
    /// (default: OUT.cache).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    #[command(flatten)]
    pub lookup: RecordLookup,
    #[command(flatten)]
    pub grace: GraceFlag,
    #[command(flatten)]
    pub duplicates: DuplicatesFlag,
}

impl AnnotateFlags {
    pub fn options(&self) -> Result<AnnotateOptions, AnnotateError> {
        let mut o = AnnotateOptions::new(self.file.clone(), &self.endpoint, self.out.clone());
        o.concurrency = self.concurrency.concurrency.unwrap_or(o.concurrency);
        o.resume = self.resume.resume;
        o.progress = !self.quiet.quiet;
        o.template = self.template.clone();
        o.cache = self.cache.clone();
        o.scenarios = self.lookup.scenarios.clone();
        o.prompts_dir = self.lookup.prompts_dir.clone();
        o.grace = self.grace.grace().map_err(AnnotateError::Options)?;
        o.on_duplicate = self.duplicates.duplicates;
        Ok(o)
    }
}
