//! The flags of `dealgym annotate`, declared here once with their help text, and turned into
//! [`AnnotateOptions`] here, so `main.rs` only maps them through.

use std::path::PathBuf;

use super::{AnnotateError, AnnotateOptions};
use crate::limits::{count_flag, MAX_CONCURRENCY};
use crate::replay::DuplicatesFlag;
use crate::run::grace_period;

/// The flags of `dealgym annotate`.
#[derive(Debug, Clone, clap::Args)]
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
    /// At most this many requests in flight (1 to 65,536).
    #[arg(long, default_value_t = 64, value_parser = count_flag::<usize>(1, MAX_CONCURRENCY))]
    pub concurrency: usize,
    /// Continue into an output that holds episodes: those already there are not annotated
    /// again (and a cut-off last line is repaired).
    #[arg(long)]
    pub resume: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// A minijinja template instead of the built-in prompts/annotate/thought.j2 (its
    /// fingerprint is recorded on each turn and keys the cache).
    #[arg(long, value_name = "PATH")]
    pub template: Option<PathBuf>,
    /// Where the answers are kept, so a resumed or repeated annotation asks nothing twice
    /// (default: OUT.cache).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Scenario files the records were played on (default: scenarios/FAMILY.jsonl).
    #[arg(long)]
    pub scenarios: Vec<PathBuf>,
    /// The prompts directory the records were played with, if any.
    #[arg(long)]
    pub prompts_dir: Option<PathBuf>,
    /// After SIGINT (Ctrl-C) or SIGTERM no new episode starts and those being annotated get
    /// this many seconds to finish; then (or at a second signal) they are abandoned, unwritten,
    /// for --resume. Exits 130 after SIGINT, 143 after SIGTERM.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub grace_s: f64,
    #[command(flatten)]
    pub duplicates: DuplicatesFlag,
}

impl AnnotateFlags {
    pub fn options(&self) -> Result<AnnotateOptions, AnnotateError> {
        let mut o = AnnotateOptions::new(self.file.clone(), &self.endpoint, self.out.clone());
        o.concurrency = self.concurrency;
        o.resume = self.resume;
        o.progress = !self.quiet;
        o.template = self.template.clone();
        o.cache = self.cache.clone();
        o.scenarios = self.scenarios.clone();
        o.prompts_dir = self.prompts_dir.clone();
        o.grace = grace_period(self.grace_s).map_err(AnnotateError::Options)?;
        o.on_duplicate = self.duplicates.duplicates;
        Ok(o)
    }
}
