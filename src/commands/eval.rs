//! `dealgym eval`: play the grid, then the matrix and the ratings.

use anyhow::{Context, Result};

use super::{existing_file_notes, plan_runtime};
use crate::flags::eval::EvalFlags;
use dealgym::eval::eval;
use dealgym::run::{written_line, Stop};

pub fn eval_command(flags: EvalFlags) -> Result<()> {
    let played = flags.plan.options_with(
        "",
        "",
        flags.out.clone(),
        flags.campaigns.campaigns.is_none(),
    )?;
    if dealgym::run::is_market_run(&played.scenarios) {
        return market_eval_command(&flags);
    }
    if let Some(role) = &flags.table_role {
        return table_eval_command(&flags, role);
    }
    plan_runtime(flags.plan.threads)?.block_on(async {
        let options = flags.options()?;
        let summary = eval(&options, Stop::on_signals(options.run.grace)).await?;
        print!("{}", summary.tables.markdown());
        if let Some(warning) = summary.played.rewards.warning() {
            eprintln!("{warning}");
        }
        let out = &options.run.out;
        existing_file_notes(
            out,
            summary.repaired_last_line.as_ref(),
            &summary.duplicates,
        );
        if let Some(path) = &flags.summary_json {
            let text = format!("{}\n", summary.tables.json());
            std::fs::write(path, text)
                .with_context(|| format!("writing the summary to {}", path.display()))?;
        }
        if let Some(line) = summary.selection.describe() {
            eprintln!("{line}");
        }
        let shard = summary
            .shard
            .as_ref()
            .map(|s| format!(" of {s}"))
            .unwrap_or_default();
        eprintln!(
            "{}",
            written_line(
                &format!("{} pairings", summary.runs.len()),
                summary.written,
                out,
                (summary.planned, summary.skipped),
                &shard,
                summary.stopped.as_ref(),
            )
        );
        eprintln!("{:.1} s", summary.elapsed.as_secs_f64());
        stop_as_signalled(summary.stopped);
        if let Some(line) = summary.played.internal_error_line() {
            eprintln!("{line}");
            std::process::exit(dealgym::run::INTERNAL_ERROR_EXIT);
        }
        Ok(())
    })
}

/// `dealgym eval --table-role ROLE`: every entrant at ROLE in turn on n-party scenarios.
fn table_eval_command(flags: &EvalFlags, role: &str) -> Result<()> {
    plan_runtime(flags.plan.threads)?.block_on(async {
        let options = flags.table_options(role)?;
        let s = dealgym::eval::eval_tables(&options, Stop::on_signals(options.run.grace)).await?;
        let counts = (s.written, s.planned, s.skipped);
        seated_summary(
            "tables",
            &s.markdown(),
            counts,
            options.entrants.len(),
            &options.run,
        );
        stop_as_signalled(s.stopped);
        Ok(())
    })
}

/// `dealgym eval` over market scenarios: every entrant at a buyer seat and at a seller seat in
/// turn, the other traders scripted.
fn market_eval_command(flags: &EvalFlags) -> Result<()> {
    plan_runtime(flags.plan.threads)?.block_on(async {
        let options = flags.market_options()?;
        let s = dealgym::eval::eval_markets(&options, Stop::on_signals(options.run.grace)).await?;
        let counts = (s.written, s.planned, s.skipped);
        seated_summary(
            "markets",
            &s.markdown(),
            counts,
            options.entrants.len(),
            &options.run,
        );
        stop_as_signalled(s.stopped);
        Ok(())
    })
}

/// A seated eval's table on stdout and what it wrote on stderr: `(written, planned, skipped)`
/// games of `what` (tables, markets).
fn seated_summary(
    what: &str,
    markdown: &str,
    (written, planned, skipped): (usize, usize, usize),
    entrants: usize,
    run: &dealgym::run::RunOptions,
) {
    print!("{markdown}");
    eprintln!(
        "{written} {what} of {entrants} entrants written to {} ({planned} planned, {skipped} already there)",
        run.out.display()
    );
}

/// Exit as the signal that stopped an eval asks, once what it wrote is said.
fn stop_as_signalled(stopped: Option<dealgym::run::Stopped>) {
    if let Some(stopped) = stopped {
        std::process::exit(stopped.signal.exit_code());
    }
}
