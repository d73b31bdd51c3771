//! What each subcommand does once its flags are parsed: one library call, and the lines it
//! prints about the result. Nothing here decides anything the library could.

pub mod annotate;
pub mod eval;
pub mod export;
pub mod merge;
pub mod presets;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenarios;
pub mod serve;

use anyhow::{Context, Result};

use dealgym::record::{Cut, Duplicates, PassedOver};

/// Say how many duplicated records a command read past (`--duplicates skip`), and how many
/// records of the other kind (table or two-party) it passed over, if any.
fn skipped_note(duplicates: &Duplicates, passed_over: &PassedOver) {
    if let Some(note) = duplicates.skipped_note() {
        eprintln!("{note}");
    }
    if let Some(note) = passed_over.note() {
        eprintln!("{note}");
    }
}

/// What a command found in the output file it appends to: a cut-off last line it removed
/// (where, how long, and why), and episodes the file already held more than once.
fn existing_file_notes(out: &std::path::Path, cut: Option<&Cut>, duplicates: &Duplicates) {
    for note in dealgym::record::append_notes(out, cut, duplicates) {
        eprintln!("{note}");
    }
}

/// End the process as a run that was stopped by a signal (130, 143) or in which episodes
/// panicked (70, with the line counting them) ends; return when it ended otherwise.
fn exit_as(summary: &dealgym::run::RunSummary) {
    if let Some(stopped) = summary.stopped {
        std::process::exit(stopped.signal.exit_code());
    }
    if let Some(line) = summary.stats.internal_error_line() {
        eprintln!("{line}");
        std::process::exit(dealgym::run::INTERNAL_ERROR_EXIT);
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// The runtime a plan of episodes is played on (`--threads`): one thread by default (a
/// current-thread runtime: no episode is woken on another thread), else that many workers.
fn plan_runtime(threads: Option<usize>) -> Result<tokio::runtime::Runtime> {
    match threads.unwrap_or(1) {
        1 => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the async runtime"),
        n => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(n)
            .enable_all()
            .build()
            .context("starting the async runtime"),
    }
}

async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// SIGTERM or Ctrl-C, whichever comes first.
async fn terminate() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = ctrl_c() => {}
            }
            return;
        }
    }
    ctrl_c().await
}
