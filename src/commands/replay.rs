//! `dealgym replay`: verify, rescore, render or branch, then what was done.

use anyhow::{Context, Result};

use super::{runtime, skipped_note};
use crate::flags::replay::{Mode, ReplayFlags};
use dealgym::replay;

pub fn replay_command(flags: &ReplayFlags) -> Result<()> {
    match flags.mode()? {
        Mode::Verify(options) => {
            let report = replay::verify(&options)?;
            print!("{}", report.table());
            skipped_note(&report.duplicates);
            if !report.is_clean() {
                std::process::exit(1);
            }
        }
        Mode::Rescore(options) => {
            let summary = replay::rescore_files(&options)?;
            eprintln!(
                "{} episodes rescored into {} ({} with other rewards, {} with other metrics)",
                summary.written,
                options.out.display(),
                summary.rewards_changed,
                summary.metrics_changed
            );
            skipped_note(&summary.duplicates);
        }
        Mode::Render(options) => {
            let text = replay::render_episode(&options)?;
            match &options.out {
                Some(path) => std::fs::write(path, text)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => print!("{text}"),
            }
        }
        Mode::Branch(options) => {
            let summary = runtime()?.block_on(replay::branch(&options))?;
            eprintln!(
                "{}: {} branches of {} episodes written to {}",
                summary.run_id,
                summary.written,
                summary.parents,
                options.run.out.display()
            );
            skipped_note(&summary.duplicates);
        }
    }
    Ok(())
}
