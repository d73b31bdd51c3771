//! Presets: one named config per paper dealgym reproduces, so "the BATNA paper's threshold run"
//! or "the CaSiNo harness's self-play stage" is one word, not a page of settings to get right.
//!
//! A preset is a file in `presets/` (built into the binary) with two tables: `[config]`, a
//! fragment of the `--config` file (`FileConfig`), and `[about]`, the paper it comes from and
//! one row per parameter — what the paper says, where, and the config key that holds it. The
//! docs' table (`dealgym presets doc`, `docs/presets.md`) is rendered from these files and the
//! config the preset resolves to, so the preset's column cannot drift from what it sets.
//!
//! A preset may also say whom the paper plays against, which no config file says: its opponent
//! (`[play]`, [`Play`]). `run` plays it when it is given no `--opponent` (an eval's opponents
//! are its own grid); an explicit flag always wins. The scenarios a paper plays are config
//! (`[config.scenarios] family`): every command that plays or sizes a plan honours them.
//!
//! Layering: the defaults, then the preset, then the `--config` file, then the flags. A
//! config file's table merges key by key into the preset's, except the tables whose keys are
//! names (`personas.weights`, `personas.texts`, `rewards.weights`, `players`): one given in
//! the file replaces the preset's whole, so a file can drop a component or a persona.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// The tables a config file replaces whole instead of merging into the preset's: their keys
/// are names a user chooses, not settings.
const REPLACED_WHOLE: &[&str] = &[
    "personas.weights",
    "personas.texts",
    "rewards.weights",
    "players",
];

/// The built-in presets: name and file.
const BUILTIN: &[(&str, &str)] = &[
    (
        "batna-threshold",
        include_str!("../../../../presets/batna-threshold.toml"),
    ),
    (
        "batna-surplus",
        include_str!("../../../../presets/batna-surplus.toml"),
    ),
    (
        "batna-eval",
        include_str!("../../../../presets/batna-eval.toml"),
    ),
    (
        "casino-harness-sft",
        include_str!("../../../../presets/casino-harness-sft.toml"),
    ),
    (
        "casino-harness-annotated",
        include_str!("../../../../presets/casino-harness-annotated.toml"),
    ),
    (
        "casino-harness-selfplay",
        include_str!("../../../../presets/casino-harness-selfplay.toml"),
    ),
    (
        "casino-harness-eval",
        include_str!("../../../../presets/casino-harness-eval.toml"),
    ),
    ("repo", include_str!("../../../../presets/repo.toml")),
    ("ina", include_str!("../../../../presets/ina.toml")),
    (
        "dialogxpert",
        include_str!("../../../../presets/dialogxpert.toml"),
    ),
];

/// The built-in presets' names, in the order the docs list them.
pub fn preset_names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|(name, _)| *name)
}

/// One preset, read from its file.
#[derive(Debug, Clone)]
pub struct Preset {
    pub(crate) name: String,
    pub about: About,
    /// The `[config]` table: a fragment of a `--config` file.
    pub config: toml::Table,
    /// The `[play]` table: the paper's game and opponent.
    pub play: Play,
}

/// `[play]`: what a paper plays that a config file does not say — the opponent. A default under
/// the flag: `--opponent` replaces it (`run`). The scenarios a paper plays are a config's
/// (`[config.scenarios] family`), which every command honours.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Play {
    /// The opponent's player spec when no `--opponent` is given (`rule:ina`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opponent: Option<String>,
}

impl Play {
    /// What the preset named `preset` plays (nothing without a preset).
    pub fn of(preset: Option<&str>) -> Result<Play, PresetError> {
        match preset {
            Some(name) => Ok(Preset::builtin(name)?.play),
            None => Ok(Play::default()),
        }
    }

    /// The opponent to play: `given` (the flag), else this one.
    pub fn opponent_under(&self, given: Option<&str>) -> Option<String> {
        given.map(str::to_string).or_else(|| self.opponent.clone())
    }

    fn is_empty(&self) -> bool {
        self.opponent.is_none()
    }
}

/// What a preset is and where each of its values comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct About {
    pub title: String,
    /// The paper's file in `../shared/papers/`.
    pub paper: String,
    /// When to use it, in a sentence or two.
    pub summary: String,
    #[serde(default)]
    pub rows: Vec<Row>,
}

/// One parameter of the paper.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    pub parameter: String,
    /// What the paper gives for it, in its own terms.
    pub paper: String,
    /// Where the paper says so.
    pub section: String,
    /// The config key the preset sets it with (`rewards.tau`); absent where dealgym does not
    /// model it (a trainer's setting), then `note` says what to do.
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
}

/// A preset that cannot be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PresetError {
    #[error("unknown preset `{name}` (built in: {known})")]
    Unknown { name: String, known: String },
    #[error("preset `{name}` is broken: {message}")]
    Broken { name: String, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PresetFile {
    about: About,
    config: toml::Table,
    #[serde(default)]
    play: Play,
}

impl Preset {
    /// The built-in preset of that name.
    pub fn builtin(name: &str) -> Result<Preset, PresetError> {
        let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name) else {
            return Err(PresetError::Unknown {
                name: name.to_string(),
                known: preset_names().collect::<Vec<_>>().join(", "),
            });
        };
        let file: PresetFile = toml::from_str(text).map_err(|e| PresetError::Broken {
            name: name.to_string(),
            message: e.to_string(),
        })?;
        Ok(Preset {
            name: name.to_string(),
            about: file.about,
            config: file.config,
            play: file.play,
        })
    }

    /// `file` (a config file's table) over this preset's config: key by key, except the
    /// tables in `REPLACED_WHOLE`, which the file's replace whole.
    ///
    /// A file that replaces `[rewards.weights]` and drops the judge or the reward model from a
    /// sum drops the preset's table of it too (unless the file gives that table itself): a
    /// component that counts for nothing is a config error, and TOML cannot delete a table.
    pub(crate) fn under(&self, file: toml::Table) -> toml::Table {
        let own = |table: &str| file.get("rewards").and_then(|r| r.get(table)).is_some();
        let (own_weights, own_judge, own_model) =
            (own("weights"), own("judge"), own("reward_model"));
        let mut merged = self.config.clone();
        merge(&mut merged, file, "");
        if let (true, Some(toml::Value::Table(rewards))) = (own_weights, merged.get_mut("rewards"))
        {
            let sum = rewards
                .get("combine")
                .and_then(|c| c.as_str())
                .unwrap_or("sum")
                == "sum";
            let weighted = |name: &str| rewards.get("weights").and_then(|w| w.get(name)).is_some();
            let drop_judge = sum && !own_judge && !weighted("judge");
            let drop_model = sum && !own_model && !weighted("reward_model");
            if drop_judge {
                rewards.remove("judge");
            }
            if drop_model {
                rewards.remove("reward_model");
            }
        }
        merged
    }
}

fn merge(base: &mut toml::Table, over: toml::Table, path: &str) {
    for (key, value) in over {
        let here = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o))
                if !REPLACED_WHOLE.contains(&here.as_str()) =>
            {
                merge(b, o, &here);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The value at a dotted `key` of a resolved config (as JSON), shown for the docs' table.
fn value_at<'a>(config: &'a serde_json::Value, key: &str) -> Option<&'a serde_json::Value> {
    key.split('.').try_fold(config, |v, part| v.get(part))
}

fn show(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => format!("`{s}`"),
        serde_json::Value::Null => "—".into(),
        other => format!("`{other}`"),
    }
}

/// The docs' page of every preset: per preset, what it is and the table parameter | paper's
/// value | section | preset. `resolve` turns a preset into the full config it stands for (as
/// JSON), so the last column is what the preset really sets, defaults included.
pub(crate) fn doc_markdown(
    resolve: impl Fn(&Preset) -> Result<serde_json::Value, String>,
) -> Result<String, String> {
    let mut out = String::from(
        "# Presets\n\n\
         <!-- Generated by `dealgym presets doc` from `presets/*.toml`; a test keeps it current. -->\n\n\
         A preset is one paper's settings under one name: `--preset NAME` on `run`, `eval`, \
         `serve`, `replay` (`--verify`, `--rescore`, `--branch-from`) and `merge` (or `preset = \"NAME\"` at the top of a `--config` file). \
         Settings come from dealgym's defaults, then the preset, then the config file, then the \
         flags. A config file's table merges key by key into the preset's, but a \
         `[rewards.weights]`, `[personas.weights]`, `[personas.texts]` or `[players]` table in \
         the file replaces the preset's whole (and weights that leave out the judge or the \
         reward model drop the preset's table of it). Every record names its preset (`preset`) and the \
         rules and reward settings it was played under (`setup.rules`, `reward_config`).\n\n\
         Where a rule has more than one reasonable form, dealgym's default is what most users \
         expect and the preset gives the paper's. The last column is the value the preset \
         resolves to (defaults included), read from the config it builds.\n",
    );
    for name in preset_names() {
        let preset = Preset::builtin(name).map_err(|e| e.to_string())?;
        let resolved = resolve(&preset).map_err(|e| format!("preset `{name}`: {e}"))?;
        out.push('\n');
        out.push_str(&preset.section(&resolved)?);
    }
    Ok(out)
}

impl Preset {
    /// This preset's part of the docs: title, summary and the table parameter | paper's value
    /// | section | preset, the last column read from `resolved` (the whole config it stands
    /// for, as JSON).
    pub fn section(&self, resolved: &serde_json::Value) -> Result<String, String> {
        let (name, about) = (&self.name, &self.about);
        let mut out = format!(
            "## `{name}` — {}\n\n{}\n\nPaper: `../shared/papers/{}`.\n\n",
            about.title, about.summary, about.paper
        );
        if !self.play.is_empty() {
            if let Some(opponent) = &self.play.opponent {
                let _ = write!(
                    out,
                    "`run --preset {name}` plays against `{opponent}` where it is given no \
                     `--opponent`; an explicit flag wins.\n\n"
                );
            }
        }
        out.push_str("| parameter | paper's value | section | preset |\n|---|---|---|---|\n");
        for row in &about.rows {
            let value = match &row.key {
                Some(key) => {
                    let v = value_at(resolved, key).ok_or_else(|| {
                        format!(
                            "preset `{name}`: row `{}` names `{key}`, which is no config key",
                            row.parameter
                        )
                    })?;
                    let shown = format!("{} (`{key}`)", show(v));
                    match &row.note {
                        Some(note) => format!("{shown}; {note}"),
                        None => shown,
                    }
                }
                None => row
                    .note
                    .clone()
                    .unwrap_or_else(|| "not modelled".to_string()),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                cell(&row.parameter),
                cell(&row.paper),
                cell(&row.section),
                cell(&value)
            );
        }
        Ok(out)
    }
}

/// A Markdown table cell: pipes escaped, one line, `<` written so `<thought>` is shown, not
/// taken for HTML.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    /// A preset of nothing but this config.
    fn preset_of(config: toml::Table) -> Preset {
        Preset {
            name: "t".into(),
            about: About {
                title: String::new(),
                paper: String::new(),
                summary: String::new(),
                rows: Vec::new(),
            },
            config,
            play: Play::default(),
        }
    }

    #[test]
    fn every_builtin_preset_reads() {
        for name in preset_names() {
            let p = Preset::builtin(name).unwrap();
            assert!(!p.about.rows.is_empty(), "{name} has no rows");
        }
        assert!(matches!(
            Preset::builtin("nope"),
            Err(PresetError::Unknown { .. })
        ));
    }

    #[test]
    fn a_file_merges_into_the_preset_key_by_key() {
        let preset = preset_of(table(
                "group_size = 8\n[episode]\nmax_rounds = 9\nreject_streak = 0\n\
                 [rewards]\nkind = \"threshold\"\n[rewards.weights]\nformat = 0.5\npoints = 1.0\n\
                 [personas]\nseats = \"opponent\"\n[personas.weights]\nselfish = 1.0\ncooperative = 1.0\n",
        ));
        let merged = preset.under(table(
            "[episode]\nmax_rounds = 6\n[rewards]\ntau = 0.6\n[rewards.weights]\nterminal = 1.0\n\
             [personas.weights]\ncooperative = 1.0\n",
        ));
        let want = table(
            "group_size = 8\n[episode]\nmax_rounds = 6\nreject_streak = 0\n\
             [rewards]\nkind = \"threshold\"\ntau = 0.6\n[rewards.weights]\nterminal = 1.0\n\
             [personas]\nseats = \"opponent\"\n[personas.weights]\ncooperative = 1.0\n",
        );
        assert_eq!(merged, want);
    }

    #[test]
    fn weights_without_the_judge_drop_the_presets_judge_table() {
        let preset = preset_of(table(
                "[rewards.weights]\njudge = 0.5\npoints = 1.0\n[rewards.judge]\nrubric = \"negotiation\"\n",
        ));
        let merged = preset.under(table("[rewards.weights]\npoints = 1.0\n"));
        assert_eq!(merged, table("[rewards.weights]\npoints = 1.0\n"));
        // Kept where the file weights the judge, or gives its table.
        let merged = preset.under(table("[rewards.weights]\njudge = 1.0\n"));
        assert!(merged["rewards"].get("judge").is_some());
        let merged = preset.under(table(
            "[rewards.weights]\npoints = 1.0\n[rewards.judge]\nmodel = \"m\"\n",
        ));
        assert!(merged["rewards"].get("judge").is_some());
    }
}
