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
            branches_written(
                "tables",
                &run.run_id,
                (run.written, summary.parents),
                &options.run.out,
                (run.planned, run.skipped),
                run.stopped.as_ref(),
                || {},
            );
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
            branches_written(
                "episodes",
                &run.run_id,
                (run.written, summary.parents),
                &options.run.out,
                (run.planned, run.skipped),
                run.stopped.as_ref(),
                || skipped_note(&summary.duplicates, &summary.passed_over),
            );
            exit_as(run);
        }
    }
    Ok(())
}

/// What a branch run wrote (`written` branches of `parents` episodes of kind `what`), then
/// its `notes`, then where it stopped early, if it did.
fn branches_written(
    what: &str,
    run_id: &str,
    (written, parents): (usize, usize),
    out: &std::path::Path,
    (planned, skipped): (usize, usize),
    stopped: Option<&dealgym::run::Stopped>,
    notes: impl FnOnce(),
) {
    let already = match skipped {
        0 => String::new(),
        n => format!(" ({n} already there)"),
    };
    eprintln!(
        "{run_id}: {written} branches of {parents} {what} written to {}{already}",
        out.display()
    );
    notes();
    if let Some(stopped) = stopped {
        eprintln!(
            "{}",
            written_line(run_id, written, out, (planned, skipped), "", Some(stopped))
        );
    }
}
