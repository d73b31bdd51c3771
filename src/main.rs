//! The `dealgym` command line: parses flags and calls the library. Nothing else lives here.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};

use dealgym::annotate::{annotate, AnnotateFlags};
use dealgym::eval::{eval, EvalFlags};
use dealgym::export::{export_to, ExportError, ExportFlags};
use dealgym::merge::MergeFlags;
use dealgym::replay::{self, ReplayFlags};
use dealgym::report::ReportFlags;
use dealgym::run::{run, written_line, RunFlags, RunSummary, Stop};
use dealgym::scenario::{self, import, Family, LoadOptions};
use dealgym::serve::ServeFlags;
use dealgym_mock::demo::{demo, DemoOptions};
use dealgym_mock::MockConfig;

#[derive(Parser)]
#[command(
    name = "dealgym",
    version,
    about = "Runs two-party negotiations between language models and turns them into data"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Play episodes between a learner and an opponent and write one JSON line per episode.
    Run(RunFlags),
    /// Play named players against named opponents (or each other) on the same setups; print
    /// the cross-play matrix and Bradley–Terry ratings.
    Eval(EvalFlags),
    /// Give every turn a person played (seats `human:<id>`) the private reasoning that led to
    /// it, written by a model; unusable answers leave the Thought empty and are counted.
    Annotate(AnnotateFlags),
    /// A short run of every family against the built-in mock endpoint; no setup needed.
    Demo {
        /// Scenarios per family.
        #[arg(long, default_value_t = 8)]
        per_family: usize,
        #[arg(long, default_value = "runs/demo.jsonl")]
        out: PathBuf,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// An OpenAI-compatible endpoint with a built-in negotiator, latency and fault injection.
    Mock(MockArgs),
    /// Verify, rescore, render or branch recorded episodes.
    Replay(ReplayFlags),
    /// Tables (Markdown, CSV), charts (SVG) and one self-contained HTML page with searchable
    /// transcripts, from record files, in flat memory.
    Report(ReportFlags),
    /// Write records as trainer data (messages, prompt-completion, verl, trl-rollout, tinker),
    /// with each line's group statistics and advantages.
    Export(ExportFlags),
    /// An environment server: OpenEnv's protocol (WS /ws), REST episodes and a rollout service.
    Serve(ServeFlags),
    /// Join the record files of a run's shards into one; report missing and duplicated
    /// episodes (exits 1 if any, or if the run ids disagree).
    Merge(MergeFlags),
    /// Import, check and count scenario files.
    #[command(subcommand)]
    Scenarios(ScenariosCommand),
    /// The datasets' own human dialogues as episode records.
    #[command(subcommand)]
    Dialogues(DialoguesCommand),
    /// The built-in presets: one paper's settings under one name (`--preset NAME`).
    #[command(subcommand)]
    Presets(PresetsCommand),
}

#[derive(Subcommand)]
enum PresetsCommand {
    /// One line per preset: its name and what it is.
    List,
    /// A preset's table (parameter, paper's value, section, preset) and the config it sets.
    Show { name: String },
    /// The docs' page of every preset (docs/presets.md), in Markdown.
    Doc,
}

#[derive(Subcommand)]
enum DialoguesCommand {
    /// Play each dataset dialogue through the engine on its scenario and write one episode
    /// record per dialogue to OUT/FAMILY.jsonl; print per family the dialogues read,
    /// imported and outcome-matched, and each kind of skip or mismatch.
    Import {
        /// The raw datasets, one folder per dataset.
        #[arg(long, default_value = "../shared/datasets")]
        datasets: PathBuf,
        /// The folder of the scenario files the dialogues are played on.
        #[arg(long, default_value = "scenarios")]
        scenarios: PathBuf,
        /// Where FAMILY.jsonl is written (replaced whole).
        #[arg(long, default_value = "dialogues")]
        out: PathBuf,
        /// Only these families (repeatable; default: all).
        #[arg(long = "family")]
        families: Vec<Family>,
    },
}

#[derive(Args)]
struct MockArgs {
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Address to bind (loopback by default).
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
    #[command(flatten)]
    config: MockConfig,
}

#[derive(Subcommand)]
enum ScenariosCommand {
    /// Turn a family's raw dataset files into a scenario file (JSONL).
    Import {
        /// ahp, craigslist, casino, dnd or job_interview.
        family: Family,
        /// The raw files, as found in the dataset (the split is read from each file's name).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where to write the scenarios (default: scenarios/FAMILY.jsonl).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check every line of a scenario file; exits non-zero if any line is bad.
    Validate { file: PathBuf },
    /// Count the scenarios of a file per family and split.
    List { file: PathBuf },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => runtime()?.block_on(run_command(args)),
        Command::Eval(flags) => runtime()?.block_on(eval_command(flags)),
        Command::Annotate(flags) => runtime()?.block_on(annotate_command(flags)),
        Command::Demo {
            per_family,
            out,
            seed,
        } => runtime()?.block_on(async {
            let options = DemoOptions {
                per_family,
                out,
                seed,
                ..DemoOptions::default()
            };
            let summary = demo(&options, ctrl_c()).await?;
            report(&summary, &options.out);
            Ok(())
        }),
        Command::Mock(args) => runtime()?.block_on(async {
            dealgym_mock::serve(SocketAddr::new(args.host, args.port), args.config)
                .await
                .with_context(|| format!("serving on {}:{}", args.host, args.port))
        }),
        Command::Export(flags) => export_command(&flags),
        Command::Serve(flags) => runtime()?.block_on(async {
            let options = flags.options()?;
            dealgym::serve::serve(options, terminate()).await
        }),
        Command::Scenarios(cmd) => scenarios(cmd),
        Command::Dialogues(DialoguesCommand::Import {
            datasets,
            scenarios,
            out,
            families,
        }) => {
            let options = dealgym::dialogues::ImportOptions {
                datasets,
                scenarios,
                out,
                families,
            };
            let summary = dealgym::dialogues::import(&options)?;
            print!("{}", summary.table());
            std::io::Write::flush(&mut std::io::stdout())?;
            for f in summary.families.iter().filter_map(|f| f.file.as_ref()) {
                eprintln!("wrote {}", f.display());
            }
            Ok(())
        }
        Command::Presets(command) => presets_command(command),
        Command::Merge(flags) => {
            let report = dealgym::merge::merge(&flags.options()?)?;
            eprint!("{}", report.text());
            eprintln!(
                "{} episodes of {} runs written to {}",
                report.written,
                report.runs.len(),
                flags.out.display()
            );
            if !report.is_clean() {
                eprintln!("not the whole run: see above");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Replay(flags) => replay_command(&flags),
        Command::Report(flags) => {
            let summary = dealgym::report::report(&flags.options())?;
            eprintln!(
                "{} episodes reported in {} ({} transcripts, {} files)",
                summary.episodes,
                flags.out.display(),
                summary.transcripts,
                summary.written.len()
            );
            skipped_note(&summary.duplicates);
            Ok(())
        }
    }
}

fn replay_command(flags: &ReplayFlags) -> Result<()> {
    match flags.mode()? {
        replay::Mode::Verify(options) => {
            let report = replay::verify(&options)?;
            print!("{}", report.table());
            skipped_note(&report.duplicates);
            if !report.is_clean() {
                std::process::exit(1);
            }
        }
        replay::Mode::Rescore(options) => {
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
        replay::Mode::Render(options) => {
            let text = replay::render_episode(&options)?;
            match &options.out {
                Some(path) => std::fs::write(path, text)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => print!("{text}"),
            }
        }
        replay::Mode::Branch(options) => {
            let stop = || Stop::on_signals(options.run.grace);
            let summary = runtime()?.block_on(async { replay::branch(&options, stop()).await })?;
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

fn export_command(flags: &ExportFlags) -> Result<()> {
    let options = flags.options()?;
    let summary = match export_to(&options, flags.out.as_deref()) {
        Ok(summary) => summary,
        // The reader of stdout went away (`| head`): stop quietly, as Unix tools do.
        Err(ExportError::Write { source, .. })
            if flags.out.is_none() && source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            return Ok(())
        }
        Err(e) => return Err(e.into()),
    };
    let to = match &flags.out {
        Some(path) => path.display().to_string(),
        None => "stdout".to_string(),
    };
    eprintln!(
        "{} lines ({} seat-episodes of {} episodes in {} groups) written to {to} as {}",
        summary.lines,
        summary.written,
        summary.episodes,
        summary.groups,
        options.format.name()
    );
    if let Some(line) = summary.skipped_line(options.format) {
        eprintln!("{line}");
    }
    skipped_note(&summary.duplicates);
    Ok(())
}

/// Say how many duplicated records a command read past (`--duplicates skip`), if any.
fn skipped_note(duplicates: &dealgym::record::Duplicates) {
    if let Some(note) = duplicates.skipped_note() {
        eprintln!("{note}");
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
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

async fn run_command(flags: RunFlags) -> Result<()> {
    let options = flags.options()?;
    let summary = run(&options, Stop::on_signals(options.grace)).await?;
    report(&summary, &options.out);
    if let Some(path) = &flags.summary_json {
        summary
            .write_json(path)
            .with_context(|| format!("writing the summary to {}", path.display()))?;
    }
    if let Some(stopped) = summary.stopped {
        std::process::exit(stopped.signal.exit_code());
    }
    if let Some(line) = summary.stats.internal_error_line() {
        eprintln!("{line}");
        std::process::exit(dealgym::run::INTERNAL_ERROR_EXIT);
    }
    Ok(())
}

async fn annotate_command(flags: AnnotateFlags) -> Result<()> {
    let options = flags.options()?;
    let summary = annotate(&options, Stop::on_signals(options.grace)).await?;
    existing_file_notes(
        &options.out,
        summary.repaired_last_line,
        &summary.duplicates,
    );
    eprintln!("{}", summary.text(&options.out));
    if let Some(stopped) = summary.stopped {
        std::process::exit(stopped.signal.exit_code());
    }
    if summary.failed > 0 {
        bail!(
            "{} episodes were not annotated (the endpoint failed)",
            summary.failed
        );
    }
    Ok(())
}

async fn eval_command(flags: EvalFlags) -> Result<()> {
    let options = flags.options()?;
    let summary = eval(&options, Stop::on_signals(options.run.grace)).await?;
    print!("{}", summary.tables.markdown());
    if let Some(warning) = summary.played.rewards.warning() {
        eprintln!("{warning}");
    }
    let out = &options.run.out;
    existing_file_notes(out, summary.repaired_last_line, &summary.duplicates);
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
    if let Some(stopped) = summary.stopped {
        std::process::exit(stopped.signal.exit_code());
    }
    if let Some(line) = summary.played.internal_error_line() {
        eprintln!("{line}");
        std::process::exit(dealgym::run::INTERNAL_ERROR_EXIT);
    }
    Ok(())
}

/// What a command found in the output file it appends to: a cut-off last line it removed, and
/// episodes the file already held more than once.
fn existing_file_notes(
    out: &std::path::Path,
    repaired: bool,
    duplicates: &dealgym::record::Duplicates,
) {
    if repaired {
        eprintln!(
            "repaired: removed a cut-off last line from {}",
            out.display()
        );
    }
    if let Some(warning) = duplicates.warning(out) {
        eprintln!("{warning}");
    }
}

fn report(summary: &RunSummary, out: &std::path::Path) {
    print!("{}", summary.stats.table());
    print!("{}", summary.replica_table());
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
    existing_file_notes(out, summary.repaired_last_line, &summary.duplicates);
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

fn scenarios(cmd: ScenariosCommand) -> Result<()> {
    match cmd {
        ScenariosCommand::Import { family, files, out } => {
            let report = import::import(family, &files)?;
            let out =
                out.unwrap_or_else(|| PathBuf::from(format!("scenarios/{}.jsonl", family.name())));
            import::write_jsonl(&out, &report.scenarios)?;
            for note in &report.notes {
                eprintln!("{note}");
            }
            eprintln!(
                "wrote {} scenarios to {}",
                report.scenarios.len(),
                out.display()
            );
            Ok(())
        }
        ScenariosCommand::Validate { file } => {
            let report = scenario::load_scenarios(&file, LoadOptions { skip_bad: true })
                .with_context(|| format!("reading {}", file.display()))?;
            for e in &report.skipped {
                eprintln!("{e}");
            }
            if !report.skipped.is_empty() {
                bail!(
                    "{} bad lines, {} good scenarios in {}",
                    report.skipped.len(),
                    report.scenarios.len(),
                    file.display()
                );
            }
            println!(
                "{}: {} scenarios, all valid",
                file.display(),
                report.scenarios.len()
            );
            Ok(())
        }
        ScenariosCommand::List { file } => {
            let report = scenario::load_scenarios(&file, LoadOptions { skip_bad: true })
                .with_context(|| format!("reading {}", file.display()))?;
            print!("{}", scenario::count_table(&report.scenarios));
            if !report.skipped.is_empty() {
                eprintln!(
                    "({} bad lines skipped; run `dealgym scenarios validate` to see them)",
                    report.skipped.len()
                );
            }
            Ok(())
        }
    }
}

fn presets_command(command: PresetsCommand) -> Result<()> {
    use dealgym::run::preset::{preset_names, Preset};
    match command {
        PresetsCommand::List => {
            for name in preset_names() {
                let preset = Preset::builtin(name)?;
                println!("{name:<26} {}", preset.about.title);
            }
        }
        PresetsCommand::Show { name } => {
            let preset = Preset::builtin(&name)?;
            let resolved = preset.resolved().map_err(anyhow::Error::msg)?;
            print!("{}", preset.section(&resolved).map_err(anyhow::Error::msg)?);
            println!("\nWhat it sets (under your --config and flags):\n");
            println!("```toml\n{}```", toml::to_string(&preset.config)?);
        }
        PresetsCommand::Doc => print!(
            "{}",
            dealgym::run::presets_doc().map_err(anyhow::Error::msg)?
        ),
    }
    Ok(())
}
