//! `dealgym demo`: a short run of every family with no setup. The mock endpoint starts in
//! process on a free loopback port; the learner talks to it over HTTP and plays a built-in
//! concession negotiator.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use crate::{MockConfig, MockServer};
use dealgym::run::{run, RunError, RunOptions, RunSummary, Stop};
use dealgym::scenario::Family;

/// What the demo runs.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Scenarios per family.
    pub per_family: usize,
    pub out: PathBuf,
    pub seed: u64,
    /// The directory holding the scenario files.
    pub scenarios_dir: PathBuf,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            per_family: 8,
            out: PathBuf::from("runs/demo.jsonl"),
            seed: 0,
            scenarios_dir: scenarios_dir(),
        }
    }
}

/// `scenarios/` in the working directory, else the one shipped with the source.
pub(crate) fn scenarios_dir() -> PathBuf {
    let here = PathBuf::from("scenarios");
    if here.join("casino.jsonl").exists() {
        here
    } else {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("scenarios")
    }
}

/// Start the mock, run every family against it, and stop it. The output file is replaced.
pub async fn demo<'s>(
    options: &DemoOptions,
    stop: impl Into<Stop<'s>>,
) -> Result<RunSummary, RunError> {
    let mock = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig::default(),
    )
    .await
    .map_err(|e| RunError::Options(format!("cannot start the mock endpoint: {e}")))?;
    let files = Family::ALL
        .iter()
        .map(|f| options.scenarios_dir.join(format!("{}.jsonl", f.name())))
        .collect();
    let mut run_options = RunOptions::new(
        files,
        &format!("openai:mock@{}", mock.base_url()),
        "rule:linear",
        options.out.clone(),
    );
    run_options.limit = Some(options.per_family);
    run_options.seed = options.seed;
    match std::fs::remove_file(&options.out) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(RunError::Options(format!(
                "cannot replace {}: {e}",
                options.out.display()
            )))
        }
    }
    let summary = run(&run_options, stop).await;
    mock.stop();
    summary
}
