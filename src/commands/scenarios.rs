//! `dealgym scenarios …` and `dealgym dialogues import`: the scenario files and the datasets'
//! dialogues.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::flags::dialogues::DialoguesCommand;
use crate::flags::scenarios::{GeneratedFamily, ScenariosCommand};
use std::sync::Arc;

use dealgym::campaign::example_campaigns;
use dealgym::scenario::{self, import, Family, LoadOptions};

pub fn scenarios_command(cmd: ScenariosCommand) -> Result<()> {
    match cmd {
        ScenariosCommand::Import { family, files, out } => {
            let out =
                out.unwrap_or_else(|| PathBuf::from(format!("scenarios/{}.jsonl", family.name())));
            dealgym::record::refuse_output_among_inputs(&out, &files)?;
            let report = import::import(family, &files)?;
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
        ScenariosCommand::ImportDeliberation { dataset, out } => {
            let scenarios = import::deliberation::import(&dataset)?;
            import::write_jsonl(&out, &scenarios)?;
            eprintln!("wrote {} scenarios to {}", scenarios.len(), out.display());
            Ok(())
        }
        ScenariosCommand::Generate {
            family: GeneratedFamily::Market,
            seed,
            count,
            out,
        } => {
            if count == Some(0) {
                bail!("--count must be at least 1");
            }
            let markets = scenario::generate::generate_markets(seed, count);
            let out = out.unwrap_or_else(|| PathBuf::from("scenarios/market.jsonl"));
            import::write_jsonl(&out, &markets)?;
            print!("{}", scenario::generate::market_stats_table(&markets));
            eprintln!("wrote {} markets to {}", markets.len(), out.display());
            Ok(())
        }
        ScenariosCommand::Generate {
            family: GeneratedFamily::TwoParty(family),
            seed,
            count,
            out,
        } => {
            let scenarios = scenario::generate::generate(family, seed, count)?;
            let out =
                out.unwrap_or_else(|| PathBuf::from(format!("scenarios/{}.jsonl", family.name())));
            import::write_jsonl(&out, &scenarios)?;
            if let Some(table) = scenario::generate::stats_table(family, &scenarios) {
                print!("{table}");
            }
            eprintln!("wrote {} scenarios to {}", scenarios.len(), out.display());
            Ok(())
        }
        ScenariosCommand::Validate { file } if scenario::is_table_file(&file) => {
            let report = scenario::load_table_scenarios(&file, LoadOptions { skip_bad: true })
                .with_context(|| format!("reading {}", file.display()))?;
            validated(
                &file,
                &report.skipped,
                report.scenarios.len(),
                "table scenarios",
            )
        }
        ScenariosCommand::Validate { file } if scenario::is_market_file(&file) => {
            let report = scenario::load_market_scenarios(&file, LoadOptions { skip_bad: true })
                .with_context(|| format!("reading {}", file.display()))?;
            validated(&file, &report.skipped, report.scenarios.len(), "markets")
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
        ScenariosCommand::Campaigns { dir, out } => {
            let mut scenarios = Vec::new();
            for family in [
                Family::Ahp,
                Family::Craigslist,
                Family::Casino,
                Family::JobInterview,
            ] {
                let file = dir.join(format!("{}.jsonl", family.name()));
                let report = scenario::load_scenarios(&file, LoadOptions::default())
                    .with_context(|| format!("reading {}", file.display()))?;
                scenarios.extend(report.scenarios.into_iter().map(Arc::new));
            }
            let campaigns = example_campaigns(&scenarios);
            let out = out.unwrap_or_else(|| dir.join("campaigns.jsonl"));
            let mut text = String::new();
            for c in &campaigns {
                text.push_str(&serde_json::to_string(c)?);
                text.push('\n');
            }
            std::fs::write(&out, text).with_context(|| format!("writing {}", out.display()))?;
            eprintln!("wrote {} campaigns to {}", campaigns.len(), out.display());
            Ok(())
        }
        ScenariosCommand::List { file } if scenario::is_market_file(&file) => {
            let report = scenario::load_market_scenarios(&file, LoadOptions { skip_bad: true })
                .with_context(|| format!("reading {}", file.display()))?;
            let mut kinds = std::collections::BTreeMap::<(String, String), usize>::new();
            for m in &report.scenarios {
                let variant = match m.variant {
                    scenario::MarketVariant::Unit => "unit",
                    scenario::MarketVariant::MultiUnit => "multi-unit",
                };
                *kinds
                    .entry((m.shape.name().to_string(), variant.to_string()))
                    .or_default() += 1;
            }
            println!("| family | shape | variant | markets |\n|---|---|---|---:|");
            for ((shape, variant), n) in &kinds {
                println!("| market | {shape} | {variant} | {n} |");
            }
            println!("| all | | | {} |", report.scenarios.len());
            if !report.skipped.is_empty() {
                eprintln!(
                    "({} bad lines skipped; run `dealgym scenarios validate` to see them)",
                    report.skipped.len()
                );
            }
            Ok(())
        }
        ScenariosCommand::List { file } if scenario::is_table_file(&file) => {
            let report = scenario::load_table_scenarios(&file, LoadOptions { skip_bad: true })
                .with_context(|| format!("reading {}", file.display()))?;
            let mut games = std::collections::BTreeMap::<(String, usize), usize>::new();
            for s in &report.scenarios {
                *games.entry((s.game.clone(), s.parties.len())).or_default() += 1;
            }
            println!("| family | game | parties | scenarios |\n|---|---|---:|---:|");
            for ((game, parties), n) in &games {
                println!("| deliberation | {game} | {parties} | {n} |");
            }
            println!("| all | | | {} |", report.scenarios.len());
            if !report.skipped.is_empty() {
                eprintln!(
                    "({} bad lines skipped; run `dealgym scenarios validate` to see them)",
                    report.skipped.len()
                );
            }
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

pub fn dialogues_command(cmd: DialoguesCommand) -> Result<()> {
    if let DialoguesCommand::Deliberation {
        dataset,
        scenarios,
        out,
        records,
        scoring,
    } = &cmd
    {
        use dealgym::dialogues::deliberation::{import_logs, report_table, LogOptions};
        let reports = import_logs(&LogOptions {
            dataset: dataset.clone(),
            scenarios: scenarios.clone(),
            out: Some(out.clone()),
            records: Some(records.clone()),
            scoring: *scoring,
        })?;
        print!("{}", report_table(&reports, *scoring));
        std::io::Write::flush(&mut std::io::stdout())?;
        for r in reports.iter().filter(|r| r.not_recorded > 0) {
            eprintln!(
                "{}: {} complete sessions not recorded (first: {})",
                r.experiment,
                r.not_recorded,
                r.not_recorded_example.as_deref().unwrap_or("")
            );
        }
        let scenarios = dealgym::dialogues::deliberation::records_scenarios(records);
        eprintln!(
            "wrote {}, {} and the scenarios its records name, {} (`dealgym replay {} --verify --scenarios {}`)",
            out.display(),
            records.display(),
            scenarios.display(),
            records.display(),
            scenarios.display()
        );
        return Ok(());
    }
    let Some(options) = cmd.options() else {
        return Ok(());
    };
    let summary = dealgym::dialogues::import(&options)?;
    print!("{}", summary.table());
    std::io::Write::flush(&mut std::io::stdout())?;
    for f in summary.families.iter().filter_map(|f| f.file.as_ref()) {
        eprintln!("wrote {}", f.display());
    }
    Ok(())
}

/// `scenarios validate`'s answer for a file read with its bad lines skipped: each bad line on
/// stderr and an error counting them, or the count of good ones (`what`: "markets", …).
fn validated(
    file: &std::path::Path,
    skipped: &[impl std::fmt::Display],
    good: usize,
    what: &str,
) -> Result<()> {
    for e in skipped {
        eprintln!("{e}");
    }
    if !skipped.is_empty() {
        bail!(
            "{} bad lines, {good} good {what} in {}",
            skipped.len(),
            file.display()
        );
    }
    println!("{}: {good} {what}, all valid", file.display());
    Ok(())
}
