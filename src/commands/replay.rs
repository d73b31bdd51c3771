//! `dealgym replay`: verify, rescore, render or branch, then what was done.

use anyhow::{Context, Result};

use super::{existing_file_notes, exit_as, runtime, skipped_note};
use crate::flags::replay::{Mode, ReplayFlags};
use dealgym::replay;
use dealgym::run::{written_line, Stop};

pub fn replay_command(flags: &ReplayFlags) -> Result<()> {
    match flags.mode()? {
        Mode::Verify(options) => {
            let report = replay::verify(&options)?;
            print!("{}", report.table());
            skipped_note(&report.duplicates, &report.passed_over);
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
            skipped_note(&summary.duplicates, &summary.passed_over);
        }
        Mode::Render(options) => {
            let text = replay::render_episode(&options)?;
            match &options.out {
                Some(path) => std::fs::write(path, text)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => print!("{text}"),
            }
        }
        Mode::Branch(options)
            if dealgym::record::records_kind(&options.files)?
                == dealgym::record::RecordsKind::Table =>
        {
            let summary = runtime()?.block_on(async {
                replay::branch_tables(&options, Stop::on_signals(options.run.grace)).await
            })?;
            let run = &summary.run;
            eprintln!(
                "{}: {} branches of {} tables written to {}{}",
                run.run_id,
                run.written,
                summary.parents,
                options.run.out.display(),
                match run.skipped {
                    0 => String::new(),
                    n => format!(" ({n} already there)"),
                }
            );
            if let Some(stopped) = &run.stopped {
                eprintln!(
                    "{}",
                    written_line(
                        &run.run_id,
                        run.written,
                        &options.run.out,
                        (run.planned, run.skipped),
                        "",
                        Some(stopped),
                    )
                );
            }
            if run.stats.internal_errors > 0 {
                std::process::exit(dealgym::run::INTERNAL_ERROR_EXIT);
            }
        }
        Mode::Branch(options) => {
            let summary = runtime()?.block_on(async {
                replay::branch(&options, Stop::on_signals(options.run.grace)).await
            })?;
            let run = &summary.run;
            existing_file_notes(
                &options.run.out,
                run.repaired_last_line.as_ref(),
                &run.duplicates,
            );
            eprintln!(
                "{}: {} branches of {} episodes written to {}{}",
                run.run_id,
                run.written,
                summary.parents,
                options.run.out.display(),
                match run.skipped {
                    0 => String::new(),
                    n => format!(" ({n} already there)"),
                }
            );
            skipped_note(&summary.duplicates, &summary.passed_over);
            if let Some(stopped) = &run.stopped {
                eprintln!(
                    "{}",
                    written_line(
                        &run.run_id,
                        run.written,
                        &options.run.out,
                        (run.planned, run.skipped),
                        "",
                        Some(stopped),
                    )
                );
            }
            exit_as(run);
        }
    }
    Ok(())
}
