//! `dealgym presets …`: the built-in presets.

use clap::Subcommand;

/// `dealgym presets …`.
#[derive(Debug, Clone, Subcommand)]
pub enum PresetsCommand {
    /// One line per preset: its name and what it is.
    List,
    /// A preset's table (parameter, paper's value, section, preset) and the config it sets.
    Show { name: String },
    /// The docs' page of every preset (docs/presets.md), in Markdown.
    Doc,
}
