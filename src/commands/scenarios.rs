//! `dealgym scenarios …` and `dealgym dialogues import`: the scenario files and the datasets'
//! dialogues.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::flags::dialogues::DialoguesCommand;
use crate::flags::scenarios::ScenariosCommand;
use dealgym::scenario::{self, import, LoadOptions};

pub fn scenarios_command(cmd: ScenariosCommand) -> Result<()> {
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
        ScenariosCommand::Generate {
            family,
            count,
            seed,
            out,
        } => {
            let report = import::generate(family, count, seed)?;
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

pub fn dialogues_command(cmd: DialoguesCommand) -> Result<()> {
    let summary = dealgym::dialogues::import(&cmd.options())?;
    print!("{}", summary.table());
    std::io::Write::flush(&mut std::io::stdout())?;
    for f in summary.families.iter().filter_map(|f| f.file.as_ref()) {
        eprintln!("wrote {}", f.display());
    }
    Ok(())
}
