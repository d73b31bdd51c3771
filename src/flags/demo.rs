//! `dealgym demo`: a short run of every family against the built-in mock.

use std::path::PathBuf;

use clap::Args;

use dealgym_mock::demo::DemoOptions;

/// The flags of `dealgym demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoFlags {
    /// Scenarios per family.
    #[arg(long, default_value_t = 8)]
    pub per_family: usize,
    #[arg(long, default_value = "runs/demo.jsonl")]
    pub out: PathBuf,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

impl From<DemoFlags> for DemoOptions {
    fn from(flags: DemoFlags) -> DemoOptions {
        DemoOptions {
            per_family: flags.per_family,
            out: flags.out,
            seed: flags.seed,
            ..DemoOptions::default()
        }
    }
}
