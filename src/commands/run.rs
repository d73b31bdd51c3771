//! `dealgym run` and `dealgym demo`: play a plan, then the summary.

use anyhow::{Context, Result};

use super::{ctrl_c, existing_file_notes, exit_as, plan_runtime, runtime};
use crate::flags::demo::DemoFlags;
use crate::flags::run::RunFlags;
use dealgym::run::{
    is_market_run, run, run_markets, run_tables, written_line, MarketRunSummary, RunSummary, Stop,
    TableRunSummary,
};
use dealgym_mock::demo::{demo, DemoOptions};

pub fn run_command(flags: RunFlags) -> Result<()> {
    plan_runtime(flags.plan.threads)?.block_on(async {
        let options = flags.options()?;
        if is_market_run(&options.scenarios) {
            if flags.summary_json.is_some() {
                anyhow::bail!(
                    "--summary-json writes a two-party run's summary; a market run prints its \
                     table, and `dealgym report` gives each player's figures"
                );
            }
            let summary = run_markets(&options, Stop::on_signals(options.grace)).await?;
            market_summary_lines(&summary, &options.out);
            if summary.stats.internal_errors > 0 {
                std::process::exit(dealgym::run::INTERNAL_ERROR_EXIT);
            }
            return Ok(());
        }
        if options.is_table_run() {
            let summary = run_tables(&options, Stop::on_signals(options.grace)).await?;
            table_summary_lines(&summary, &options.out);
            if summary.stats.internal_errors > 0 {
                std::process::exit(dealgym::run::INTERNAL_ERROR_EXIT);
            }
            return Ok(());
        }
        let summary = run(&options, Stop::on_signals(options.grace)).await?;
        summary_lines(&summary, &options.out);
        if let Some(path) = &flags.summary_json {
            summary
                .write_json(path)
                .with_context(|| format!("writing the summary to {}", path.display()))?;
        }
        exit_as(&summary);
        Ok(())
    })
}

pub fn demo_command(flags: DemoFlags) -> Result<()> {
    runtime()?.block_on(async {
        let options = DemoOptions::from(flags);
        let summary = demo(&options, ctrl_c()).await?;
        summary_lines(&summary, &options.out);
        Ok(())
    })
}

/// A run's summary: its tables (the key figures) on stdout; where the others are, what else it
/// found and its throughput on stderr.
fn summary_lines(summary: &RunSummary, out: &std::path::Path) {
    print!("{}", summary.stats.table());
    print!("{}", summary.replica_table());
    eprintln!(
        "every figure for both seats, with its interval: `dealgym report {}`, or `run --summary-json FILE`",
        out.display()
    );
    if let Some(prefixes) = &summary.prefixes {
        eprintln!("{}", prefixes.line());
    }
    if let Some(line) = summary.selection.describe() {
        eprintln!("{line}");
    }
    for warning in [
        summary.constraint_warning(),
        summary.drift_warning(),
        summary.stats.rewards.warning(),
    ]
    .into_iter()
    .flatten()
    {
        eprintln!("{warning}");
    }
    existing_file_notes(
        out,
        summary.repaired_last_line.as_ref(),
        &summary.duplicates,
    );
    let (episodes_per_s, turns_per_s) = summary.throughput();
    let shard = summary
        .shard
        .as_ref()
        .map(|s| format!(" of {s}; {} in the whole plan", summary.whole_plan))
        .unwrap_or_default();
    eprintln!(
        "{}",
        written_line(
            &summary.run_id,
            summary.written,
            out,
            (summary.planned, summary.skipped),
            &shard,
            summary.stopped.as_ref(),
        )
    );
    eprintln!(
        "{:.1} s: {episodes_per_s:.1} episodes/s, {turns_per_s:.1} turns/s",
        summary.elapsed.as_secs_f64()
    );
}

/// A market run's summary: endings, trades and efficiency on stdout, the closing line on
/// stderr.
fn market_summary_lines(summary: &MarketRunSummary, out: &std::path::Path) {
    print!("{}", summary.stats.table());
    eprintln!(
        "each trade, the metrics and every turn: the records in {}; `dealgym replay --verify` \
         replays them, `dealgym export --format verl` exports each token-exact seat",
        out.display()
    );
    closing_lines(
        written_line(
            &summary.run_id,
            summary.written,
            out,
            (summary.planned, summary.skipped),
            "",
            summary.stopped.as_ref(),
        ),
        summary.elapsed,
        summary.written,
        summary.stats.turns,
    );
}

/// A seated run's last lines on stderr: what was written, and the rate.
fn closing_lines(written: String, elapsed: std::time::Duration, episodes: usize, turns: usize) {
    eprintln!("{written}");
    let secs = elapsed.as_secs_f64().max(1e-9);
    eprintln!(
        "{:.1} s: {:.1} episodes/s, {:.1} turns/s",
        secs,
        episodes as f64 / secs,
        turns as f64 / secs
    );
}

/// A table run's summary: the endings and the paper's metrics on stdout, the closing line on
/// stderr.
fn table_summary_lines(summary: &TableRunSummary, out: &std::path::Path) {
    print!("{}", summary.stats.table());
    if let Some(prefixes) = &summary.prefixes {
        eprintln!("{}", prefixes.line());
    }
    eprintln!(
        "per seat and per party, with charts: `dealgym report {} --out DIR`",
        out.display()
    );
    closing_lines(
        written_line(
            &summary.run_id,
            summary.written,
            out,
            (summary.planned, summary.skipped),
            "",
            summary.stopped.as_ref(),
        ),
        summary.elapsed,
        summary.stats.episodes(),
        summary.stats.turns,
    );
}
