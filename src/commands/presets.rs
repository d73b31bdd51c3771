//! `dealgym presets …` and `dealgym docs …`: pages printed from what the code holds.

use anyhow::Result;

use crate::flags::docs::DocsCommand;
use crate::flags::presets::PresetsCommand;
use dealgym::run::preset::{preset_names, Preset};

pub fn presets_command(command: PresetsCommand) -> Result<()> {
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
            if preset.play != Default::default() {
                println!("\nWhat it plays (under --scenarios and --opponent):\n");
                println!("```toml\n{}```", toml::to_string(&preset.play)?);
            }
        }
        PresetsCommand::Doc => print!(
            "{}",
            dealgym::run::presets_doc().map_err(anyhow::Error::msg)?
        ),
    }
    Ok(())
}

pub fn docs_command(command: DocsCommand) -> Result<()> {
    print!("{}", command.page());
    Ok(())
}
