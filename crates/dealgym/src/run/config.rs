//! The run configuration: a TOML file ([`FileConfig`]), under a preset, and what it sets in a
//! run's options ([`RunOptions::with_config`]). The command line's flags go over it; they are
//! declared, and merged with it, in the binary (`src/flags/`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::preset::Preset;
use super::select::SelectConfig;
use super::RunOptions;
use crate::agents::{PersonaConfig, PlayerConfig, SamplingConfig};
use crate::game::EpisodeConfig;
use crate::limits::{check_count, read_file, MAX_CONCURRENCY, MAX_GROUP_SIZE, MAX_TEXT_FILE};
use crate::llm::check_url;
use crate::reward::judge::{builtin_rubric, Rubric};
use crate::reward::RewardConfig;

impl RunOptions {
    /// These options with everything the config file sets: its seed, concurrency and group size
    /// where it gives them, and its rules, rewards, personas, named players and prompts
    /// directory. Flags are applied after this, so they win. (Its `[scenarios]` table is merged
    /// with the flags by [`SelectConfig::selection_over`], which needs the final seed.)
    pub fn with_config(mut self, file: FileConfig) -> RunOptions {
        self.seed = file.seed.unwrap_or(self.seed);
        self.concurrency = file.concurrency.unwrap_or(self.concurrency);
        self.group_size = file.group_size.unwrap_or(self.group_size);
        self.preset = file.preset;
        self.episode = file.episode;
        self.rewards = file.rewards;
        self.personas = file.personas;
        self.sampling = file.sampling;
        self.players = file.players;
        self.prompts_dir = file.prompts_dir;
        self.probes = file.probes;
        self
    }
}

/// The `--config FILE.toml` file. Every table is optional.
///
/// ```toml
/// preset = "batna-threshold"  # a paper's settings under this file's (`dealgym presets list`)
/// seed = 1
/// concurrency = 64
/// group_size = 8
///
/// [scenarios]               # which scenarios of each file (flags win; see run::select)
/// # family = "hotel"        # only this family (with no --scenarios: scenarios/hotel.jsonl)
/// split = "test"            # --scenario-split: only this split
/// sample = 100              # --sample: a seeded random sample of N per file
/// # sample_seed = 7         # --sample-seed (default: the run's seed); limit = 50: --limit
///
/// [episode]                 # rules (the book's `design/episode.md`)
/// max_rounds = 6
/// reject_loop = 3         # the same terms proposed 3 times in a row end it (0: off)
/// reject_streak = 3       # 3 rejections in a row with no proposal end it (0: off)
/// format_retries = 1
/// regulate_opponent = true
///
/// [rewards]                 # the book's `design/metrics.md`; docs/src/guide/rewards.md
/// kind = "threshold"        # terminal reward: "surplus" (default) or "threshold"
/// tau = 0.4                 # threshold τ; gamma = 0.5 is −γ below it; psi = 1.0 the forfeit −ψ
/// combine = "sum"           # "sum" (Σ weight · component) or "enhance" (see [rewards.enhance])
///
/// [rewards.weights]         # component → weight; absent: terminal alone, weight 1
/// terminal = 1.0            # also: format, length, points, strategic, rules, judge, reward_model
/// format = 0.1
///
/// [rewards.length]          # Talk words: 1 at min, linearly 0 at max, `outside` beyond
/// min = 5
/// max = 60
/// outside = -1.0
///
/// [[rewards.rules]]         # a regex on talk | thought | action | raw; score per matching turn
/// name = "budget"
/// pattern = "(?i)my budget"
/// target = "talk"
/// score = -1.0
///
/// [rewards.judge]           # LLM judge at an OpenAI-compatible endpoint; score in [0, 1]
/// endpoint = "http://127.0.0.1:8000/v1"
/// model = "Qwen/Qwen3-8B"
/// rubric = "negotiation"    # a built-in (prompts/judges/NAME.j2) or a .j2 file
/// labels = { strategy = ["anchor", "concede", "hold"] }   # per-turn annotation sets
/// # api_key_env, temperature = 0, max_tokens = 512, timeout_s = 60, retries = 2,
/// # backoff_s = 0.5, cache = 4096
///
/// [rewards.reward_model]    # a scalar reward model
/// url = "http://127.0.0.1:8001/pooling"
/// api = "vllm_pooling"      # "vllm_pooling" | "vllm_score" | "plain"
/// model = "internlm/internlm2-1_8b-reward"
/// # api_key_env, timeout_s = 60, retries = 2, backoff_s = 0.5, cache = 4096
///
/// [rewards.enhance]         # with combine = "enhance": R = R_m·(1 + sign(R_m)·clip(E,−n,n)/n)
/// primary = "reward_model"
/// auxiliary = ["rules", "judge"]   # E = Σ weight · auxiliary (weight 1 where not given)
/// n = 100.0                 # REPO's (the default)
///
/// [personas]
/// seats = "opponent"        # who draws a persona: "both" (default), "opponent" or "learner"
///
/// [personas.weights]
/// cooperative = 1.0
/// uncompromising = 1.0
///
/// [sampling.learner]        # defaults for a model seat's player where it sets none
/// temperature = 1.0         # also top_p, max_tokens; [sampling.opponent] likewise
///
/// [probes]                 # belief probes (the book's guide/eval.md); off by default
/// beliefs = true            # ask model seats for the other side's private values
/// turns = [2, 4, 6]         # before these of the seat's own turns; or every = 2 (the default)
///
/// [players.qwen]
/// endpoint = "http://127.0.0.1:8000/v1"
/// model = "Qwen/Qwen3-8B"
/// temperature = 0.7
/// max_tokens = 512
/// api_key_env = "VLLM_API_KEY"
/// extra_body = { chat_template_kwargs = { enable_thinking = false } }
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FileConfig {
    /// The preset this config builds on (`--preset` wins over it); see [`super::preset`].
    pub preset: Option<String>,
    /// The seed of the setups (`--seed` wins); 0 when neither sets it.
    pub seed: Option<u64>,
    /// Episodes in flight at once, 1 to 65,536 (`--concurrency` wins); 64 when neither sets it.
    pub concurrency: Option<usize>,
    /// Episodes per scenario sharing one setup with different sampling seeds (GRPO groups of 1
    /// to 4,096; `--group-size` wins); 1 when neither sets it.
    pub group_size: Option<u32>,
    /// `[episode]`: the rules every episode is played by.
    pub episode: EpisodeConfig,
    /// `[rewards]`: how each seat's reward is made.
    pub rewards: RewardConfig,
    /// `[personas]`: the personas the seats draw.
    pub personas: PersonaConfig,
    /// Sampling defaults for each seat's model ([`SamplingConfig`]).
    pub sampling: SamplingConfig,
    /// `[players.NAME]`: model players a player spec can name (`--learner NAME`).
    pub players: BTreeMap<String, PlayerConfig>,
    /// A directory of `*.j2` templates replacing the built-in prompts of the same name.
    pub prompts_dir: Option<PathBuf>,
    /// Which scenarios of each file are played (`[scenarios]`: split, sample, sample_seed,
    /// limit); the flags win.
    #[serde(skip_serializing_if = "SelectConfig::is_empty")]
    pub scenarios: SelectConfig,
    /// `[probes]`: belief probes of the model seats (off by default).
    #[serde(skip_serializing_if = "ProbesConfig::is_off")]
    pub probes: ProbesConfig,
}

/// `[probes]`: belief probes (the book's `guide/eval.md`, "Does it know what the other side
/// wants?"). With `beliefs = true`, each model seat (`openai:` or a `[players.NAME]` endpoint)
/// of a two-party episode is asked, before the chosen ones of its own turns, for its estimate
/// of the other side's private values with its confidence, in one extra call that is never
/// forwarded, kept in its history or trajectory, and never changes the episode; the record's
/// `probes` keep the answers and their scores.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProbesConfig {
    /// Ask the model seats for their beliefs (`--belief-probes`).
    pub beliefs: bool,
    /// The seat's own turns (1 for its first move) before which it is asked; or `every`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<Vec<u32>>,
    /// Ask before every N-th of its own turns (N, 2N, …); 2 where neither this nor `turns` is
    /// given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every: Option<u32>,
}

/// The probes' interval where the config gives neither `turns` nor `every`.
const DEFAULT_PROBE_EVERY: u32 = 2;

impl ProbesConfig {
    fn is_off(&self) -> bool {
        *self == ProbesConfig::default()
    }

    /// Whether a seat is asked before its own turn `turn` (1-based).
    pub(crate) fn asks_before(&self, turn: u32) -> bool {
        if !self.beliefs || turn == 0 {
            return false;
        }
        match (&self.turns, self.every) {
            (Some(turns), _) => turns.contains(&turn),
            (None, every) => turn.is_multiple_of(every.unwrap_or(DEFAULT_PROBE_EVERY).max(1)),
        }
    }

    /// The settings checked: `turns` and `every` only with `beliefs = true`, never both, no
    /// turn 0, no empty list, `every` at least 1.
    pub fn check(&self) -> Result<(), String> {
        let given = self.turns.is_some() || self.every.is_some();
        if given && !self.beliefs {
            return Err(
                "[probes] turns/every are set but beliefs is not: add beliefs = true \
                        (or --belief-probes), or drop them"
                    .into(),
            );
        }
        if self.turns.is_some() && self.every.is_some() {
            return Err("[probes] give turns or every, not both".into());
        }
        if let Some(turns) = &self.turns {
            if turns.is_empty() || turns.contains(&0) {
                return Err(
                    "[probes] turns: list the seat's own turns, from 1 (its first \
                            move), e.g. turns = [2, 4, 6]"
                        .into(),
                );
            }
        }
        if self.every == Some(0) {
            return Err("[probes] every: 1 or more (every = 2 asks before turns 2, 4, …)".into());
        }
        Ok(())
    }
}

/// A config file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Invalid { file: String, message: String },
    /// A flag (or the scheduler variable standing in for one) that cannot be used.
    #[error("{0}")]
    Flag(String),
}

impl FileConfig {
    /// Read and check a config file.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        FileConfig::resolve(Some(path), None)
    }

    /// The config a command runs with: the preset (`preset`, else the file's own `preset =`),
    /// with the file at `path` over it; the defaults for what neither sets. Checked
    /// whole: an error names the file (or the preset) and the key.
    pub fn resolve(path: Option<&Path>, preset: Option<&str>) -> Result<FileConfig, ConfigError> {
        let (source, table) = match path {
            Some(path) => {
                let file = path.display().to_string();
                let text = read_file(path, MAX_TEXT_FILE).map_err(|source| ConfigError::Io {
                    file: file.clone(),
                    source,
                })?;
                // The file alone first, so an unknown key or a bad value is named with its line.
                toml::from_str::<FileConfig>(&text).map_err(|e| ConfigError::Invalid {
                    file: file.clone(),
                    message: e.to_string(),
                })?;
                let table: toml::Table =
                    toml::from_str(&text).map_err(|e| ConfigError::Invalid {
                        file: file.clone(),
                        message: e.to_string(),
                    })?;
                (file, table)
            }
            None => (String::new(), toml::Table::new()),
        };
        let named = preset.map(str::to_string).or_else(|| {
            table
                .get("preset")
                .and_then(|v| v.as_str())
                .map(str::to_string)
        });
        let (source, table) = match &named {
            Some(name) => {
                let preset = Preset::builtin(name).map_err(|e| ConfigError::Invalid {
                    file: if source.is_empty() {
                        "--preset".into()
                    } else {
                        source.clone()
                    },
                    message: e.to_string(),
                })?;
                let mut merged = preset.under(table);
                merged.insert("preset".into(), toml::Value::String(name.clone()));
                let source = if source.is_empty() {
                    format!("preset {name}")
                } else {
                    format!("{source} (over preset {name})")
                };
                (source, merged)
            }
            None => (source, table),
        };
        if source.is_empty() {
            return Ok(FileConfig::default());
        }
        let invalid = |message: String| ConfigError::Invalid {
            file: source.clone(),
            message,
        };
        // Named after the typed checks below, which name the keys they know in their own
        // words; this catches what they cannot see.
        let not_finite = first_not_finite(&table, "");
        let mut config: FileConfig = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
        let base = path.unwrap_or_else(|| Path::new("."));
        check_rewards(&mut config.rewards, base).map_err(|message| match &named {
            // A paper's judge or reward model is the user's to give: say where — only when
            // that is what is missing, not beside every other [rewards] refusal.
            Some(name) if config.rewards.lacks_a_service_endpoint() => invalid(format!(
                "{message} (with preset {name}, which sets part of [rewards]: a judge or reward model it weights needs its endpoint in your --config)"
            )),
            _ => invalid(message),
        })?;
        config.personas.validate().map_err(invalid)?;
        config.sampling.validate().map_err(invalid)?;
        config.check_counts().map_err(invalid)?;
        config
            .rewards
            .check_against(&config.episode)
            .map_err(invalid)?;
        if let Some(message) = not_finite {
            return Err(invalid(message));
        }
        Ok(config)
    }
}

/// The first number of `table` (the table at `path`, `""` for the top) that is NaN or
/// infinite, as an error naming its key. TOML can write them (`nan`, `inf`) but no setting
/// means them, and a `[players.NAME]` table, read through JSON (which has no NaN), would
/// otherwise lose one silently: `temperature = nan` would read as no temperature.
fn first_not_finite(table: &toml::Table, path: &str) -> Option<String> {
    fn walk(value: &toml::Value, path: &str, key: &str) -> Option<String> {
        match value {
            toml::Value::Float(x) if !x.is_finite() => {
                let name = if path.is_empty() {
                    key.to_string()
                } else {
                    format!("[{path}] {key}")
                };
                Some(format!("{name} must be a finite number; it is {x}"))
            }
            toml::Value::Table(t) if path.is_empty() => first_not_finite(t, key),
            toml::Value::Table(t) => first_not_finite(t, &format!("{path}.{key}")),
            toml::Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, v)| walk(v, path, &format!("{key}[{i}]"))),
            _ => None,
        }
    }
    table.iter().find_map(|(key, value)| walk(value, path, key))
}

impl FileConfig {
    /// Each count of the top level, `[scenarios]` and `[episode]` within its limit
    /// ([`crate::limits`]). (A `[players.NAME]` table is checked as it is read, the
    /// `[rewards]` by [`check_rewards`].)
    fn check_counts(&self) -> Result<(), String> {
        if let Some(n) = self.concurrency {
            check_count("concurrency", n as u64, 1, MAX_CONCURRENCY)?;
        }
        if let Some(n) = self.group_size {
            check_count("group_size", n.into(), 1, MAX_GROUP_SIZE)?;
        }
        self.scenarios.check()?;
        self.probes.check()?;
        self.episode.validate()
    }
}

impl Preset {
    /// The whole config this preset stands for, defaults included, as JSON (unchecked: a
    /// preset that needs the user's endpoints still resolves here), with its `[play]` table
    /// under `play` (so a row can name `play.opponent`).
    pub fn resolved(&self) -> Result<serde_json::Value, String> {
        let config: FileConfig = toml::Value::Table(self.under(toml::Table::new()))
            .try_into()
            .map_err(|e: toml::de::Error| e.to_string())?;
        let mut value = serde_json::to_value(&config).map_err(|e| e.to_string())?;
        value["play"] = serde_json::to_value(&self.play).map_err(|e| e.to_string())?;
        Ok(value)
    }
}

/// The docs' page of the presets (`dealgym presets doc`, `docs/presets.md`).
pub fn presets_doc() -> Result<String, String> {
    super::preset::doc_markdown(Preset::resolved)
}

/// Check the `[rewards]` table of the config file at `path`: [`RewardConfig::validate`], then
/// the judge's rubric — a built-in name, or a file (a relative path is made relative to the
/// config file's directory here) that must read and compile.
fn check_rewards(rewards: &mut RewardConfig, path: &Path) -> Result<(), String> {
    rewards.validate()?;
    // The endpoints' URLs, by the one rule of every model endpoint (the pure check above
    // does not know HTTP).
    if let Some(judge) = &rewards.judge {
        check_url("[rewards.judge] endpoint", &judge.endpoint)?;
    }
    if let Some(rm) = &rewards.reward_model {
        check_url("[rewards.reward_model] url", &rm.url)?;
    }
    if let Some(judge) = &mut rewards.judge {
        if builtin_rubric(&judge.rubric, judge.mode).is_none() {
            let rubric = Path::new(&judge.rubric);
            if rubric.is_relative() {
                if let Some(dir) = path.parent() {
                    judge.rubric = dir.join(rubric).display().to_string();
                }
            }
        }
        let source = super::rewarding::rubric_source(judge)?;
        Rubric::new(source)
            .map_err(|e| format!("[rewards.judge] rubric `{}`: {e}", judge.rubric))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Probes ask before the turns listed, or every N-th (2 by default), and only with
    /// `beliefs = true`; settings that cannot be honoured are refused with the key.
    #[test]
    fn probes_choose_their_turns_and_refuse_what_cannot_be_honoured() {
        let read = |text: &str| toml::from_str::<FileConfig>(text).unwrap().probes;
        let default = read("[probes]\nbeliefs = true\n");
        assert_eq!(
            (1..=6)
                .filter(|t| default.asks_before(*t))
                .collect::<Vec<_>>(),
            [2, 4, 6]
        );
        let listed = read("[probes]\nbeliefs = true\nturns = [1, 5]\n");
        assert_eq!(
            (1..=6)
                .filter(|t| listed.asks_before(*t))
                .collect::<Vec<_>>(),
            [1, 5]
        );
        let every = read("[probes]\nbeliefs = true\nevery = 3\n");
        assert_eq!(
            (1..=7)
                .filter(|t| every.asks_before(*t))
                .collect::<Vec<_>>(),
            [3, 6]
        );
        assert!(!ProbesConfig::default().asks_before(2), "off by default");
        for bad in [
            "[probes]\nturns = [2]\n",
            "[probes]\nbeliefs = true\nturns = [2]\nevery = 2\n",
            "[probes]\nbeliefs = true\nturns = []\n",
            "[probes]\nbeliefs = true\nevery = 0\n",
        ] {
            let err = read(bad).check().unwrap_err();
            assert!(err.contains("[probes]"), "{bad}: {err}");
        }
        assert!(toml::from_str::<FileConfig>("[probes]\nbelief = true\n").is_err());
    }

    #[test]
    fn a_full_config_parses_and_a_typo_is_named() {
        let text = r#"
            seed = 3
            group_size = 4
            [scenarios]
            split = "test"
            sample = 20
            [episode]
            max_rounds = 8
            learner_role = "seller"
            [rewards]
            kind = "threshold"
            [personas.weights]
            cooperative = 2.0
            none = 1.0
            [players.qwen]
            endpoint = "http://127.0.0.1:8000/v1"
            model = "Qwen/Qwen3-8B"
            extra_body = { chat_template_kwargs = { enable_thinking = false } }
        "#;
        let c: FileConfig = toml::from_str(text).unwrap();
        assert_eq!(c.episode.max_rounds, 8);
        assert_eq!(
            (c.scenarios.split.as_deref(), c.scenarios.sample),
            (Some("test"), Some(20))
        );
        assert_eq!(
            c.players["qwen"].endpoint.extra_body["chat_template_kwargs"]["enable_thinking"],
            false
        );
        let err = toml::from_str::<FileConfig>("[episode]\nmax_round = 3")
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_round"), "{err}");
    }

    #[test]
    fn a_player_table_names_a_typo_and_a_missing_endpoint() {
        let err = toml::from_str::<FileConfig>(
            "[players.q]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\ntemprature = 0.5",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("temprature"), "{err}");
        let err = toml::from_str::<FileConfig>("[players.q]\nmodel = \"m\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`endpoint` is required"), "{err}");
        let ok: FileConfig = toml::from_str(
            "[players.q]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\ntimeout_s = 5\npersona = \"selfish\"",
        )
        .unwrap();
        let q = &ok.players["q"];
        assert_eq!(q.endpoint.base_url, "http://x/v1");
        assert_eq!(q.endpoint.timeout_s, 5.0);
        assert_eq!(
            q.endpoint.retries,
            crate::llm::EndpointSettings::default().retries
        );
        assert_eq!(q.persona.as_deref(), Some("selfish"));
    }

    #[test]
    fn a_duration_that_is_no_timeout_is_refused_at_load_naming_its_key() {
        let player = |key: &str| {
            format!("[players.q]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\n{key} = 1e300\n")
        };
        for key in [
            "timeout_s",
            "backoff_s",
            "backoff_max_s",
            "health_interval_s",
        ] {
            let path = config_file(&format!("long-{key}"), &player(key));
            let err = FileConfig::load(&path).unwrap_err().to_string();
            assert!(err.contains("config.toml"), "{err}");
            assert!(
                err.contains(&format!("{key} must be")) && err.contains("at most 86400 seconds"),
                "{err}"
            );
            assert!(err.contains("players"), "the table is named: {err}");
        }
        let judge = "[rewards.weights]\nterminal = 1.0\njudge = 1.0\n\
                     [rewards.judge]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\ntimeout_s = 1e300\n";
        let err = FileConfig::load(&config_file("long-judge", judge))
            .unwrap_err()
            .to_string();
        assert!(err.contains("[rewards.judge] timeout_s must be"), "{err}");
        assert!(FileConfig::load(&config_file(
            "day",
            &player("timeout_s").replace("1e300", "86400")
        ))
        .is_ok());
    }

    #[test]
    fn a_number_that_is_not_finite_is_refused_where_the_typed_checks_cannot_see_it() {
        let player = "[players.q]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\n";
        for (extra, says) in [
            (
                "temperature = nan",
                "[players.q] temperature must be a finite number; it is NaN",
            ),
            (
                "top_p = -inf",
                "[players.q] top_p must be a finite number; it is -inf",
            ),
            (
                "extra_body = { guided = { weight = inf } }",
                "[players.q.extra_body.guided] weight must be a finite number; it is inf",
            ),
        ] {
            let path = config_file(
                &format!("nan-{}", extra.len()),
                &format!("{player}{extra}\n"),
            );
            let err = FileConfig::load(&path).unwrap_err().to_string();
            assert!(err.ends_with(says), "{err}");
        }
        // Where a typed check knows the key, its own words come first.
        let path = config_file("nan-tau", "[rewards]\ntau = nan\n");
        let err = FileConfig::load(&path).unwrap_err().to_string();
        assert!(err.ends_with("[rewards] tau must be a finite number from 0 to 1; it is NaN"));
        let path = config_file("nan-none", player);
        assert!(FileConfig::load(&path).is_ok());
    }

    #[test]
    fn counts_past_their_limits_are_refused_naming_the_key() {
        for (text, says) in [
            (
                "group_size = 4294967295",
                "group_size must be from 1 to 4096; it is 4294967295",
            ),
            (
                "concurrency = 0",
                "concurrency must be from 1 to 65536; it is 0",
            ),
            (
                "[scenarios]\nsample = 0",
                "[scenarios] sample must be from 1 to 10000000; it is 0",
            ),
            (
                "[episode]\nmax_rounds = 0",
                "[episode] max_rounds must be from 1 to 10000; it is 0",
            ),
        ] {
            let path = config_file(&format!("count-{}", text.len()), text);
            let err = FileConfig::load(&path).unwrap_err().to_string();
            assert!(err.ends_with(says), "{err}");
        }
    }

    #[test]
    fn an_extra_body_that_would_replace_a_checked_field_is_refused_at_load() {
        // Issue 42, item 10: merged in last, it went past `max_tokens`' own bound.
        let text = "[players.q]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\nmax_tokens = 512\n\
                    extra_body = { max_tokens = 1099511627776 }\n";
        let err = FileConfig::load(&config_file("extra-body", text))
            .unwrap_err()
            .to_string();
        assert!(err.contains("config.toml"), "{err}");
        assert!(
            err.contains("players") && err.contains("extra_body.max_tokens"),
            "{err}"
        );
        assert!(err.contains("set `max_tokens`"), "{err}");
    }

    #[test]
    fn reward_numbers_that_can_overflow_a_total_are_refused_at_load() {
        // Issue 42, item 12: two finite weights whose weighted sum is infinite wrote records
        // with `null` rewards, and the run exited 0.
        for (text, says) in [
            (
                "[rewards.weights]\nterminal = 1e308\nformat = 1e308\n",
                "must be a finite number from -1000000 to 1000000; it is 1e308",
            ),
            (
                "[rewards]\npsi = 1e300\n",
                "[rewards] psi must be a finite number from 0 to 1000000; it is 1e300",
            ),
            (
                "[rewards.weights]\nterminal = 1.0\nrules = 1.0\n\
                 [[rewards.rules]]\nname = \"r\"\npattern = \"x\"\ntarget = \"talk\"\nscore = 1e308\n",
                "score must be a finite number from -1000000 to 1000000; it is 1e308",
            ),
        ] {
            let path = config_file(&format!("overflow-{}", text.len()), text);
            let err = FileConfig::load(&path).unwrap_err().to_string();
            assert!(err.ends_with(says), "{err}");
        }
        let fine = "[rewards.weights]\nterminal = 1000000\nformat = -1000000\n";
        assert!(FileConfig::load(&config_file("overflow-fine", fine)).is_ok());
    }

    #[test]
    fn a_no_deal_value_past_the_scenarios_bound_is_refused_at_load() {
        // Issue 42, item 16: 1e308 made ρ near 1e306 and the intervals NaN.
        let path = config_file("no-deal", "[episode]\nno_deal_value = 1e308\n");
        let err = FileConfig::load(&path).unwrap_err().to_string();
        assert!(
            err.ends_with(
                "[episode] no_deal_value must be a finite number from -1e9 to 1e9; it is 1e308"
            ),
            "{err}"
        );
        let path = config_file("no-deal-ok", "[episode]\nno_deal_value = -1000000000\n");
        assert!(FileConfig::load(&path).is_ok());
    }

    #[test]
    fn a_config_or_rubric_file_past_the_size_limit_is_refused_without_reading_it_whole() {
        // Issue 42, item 13: `--config /dev/zero` was read until memory ran out (16 GB). A
        // sparse file one byte over the limit costs no disk.
        let dir = config_file("huge", "").parent().unwrap().to_path_buf();
        let huge = dir.join("huge.toml");
        let file = std::fs::File::create(&huge).unwrap();
        file.set_len(crate::limits::MAX_TEXT_FILE + 1).unwrap();
        drop(file);
        let err = FileConfig::load(&huge).unwrap_err().to_string();
        assert!(err.contains("huge.toml"), "{err}");
        assert!(
            err.contains(&crate::limits::MAX_TEXT_FILE.to_string()),
            "{err}"
        );
        let err = FileConfig::load(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/dev/zero") && err.contains("longer than"),
            "{err}"
        );
        // A judge's rubric file, the same.
        let rubric = dir.join("huge.j2");
        std::fs::File::create(&rubric)
            .unwrap()
            .set_len(crate::limits::MAX_TEXT_FILE + 1)
            .unwrap();
        let text = format!(
            "[rewards.weights]\nterminal = 1.0\njudge = 1.0\n[rewards.judge]\n\
             endpoint = \"http://x/v1\"\nmodel = \"m\"\nrubric = \"{}\"\n",
            rubric.display()
        );
        let err = FileConfig::load(&config_file("huge-rubric", &text))
            .unwrap_err()
            .to_string();
        assert!(err.contains("huge.j2"), "{err}");
        assert!(
            err.contains(&crate::limits::MAX_TEXT_FILE.to_string()),
            "{err}"
        );
    }

    #[test]
    fn a_rewards_refusal_under_a_preset_points_at_an_endpoint_only_when_one_is_missing() {
        // Issue 42, item 19: every [rewards] refusal under a preset told the user to give a
        // judge's or reward model's endpoint, even `tau = 2` under a preset that has neither.
        let path = config_file(
            "preset-tau",
            "preset = \"batna-threshold\"\n[rewards]\ntau = 2\n",
        );
        let err = FileConfig::load(&path).unwrap_err().to_string();
        assert!(err.contains("[rewards] tau must be"), "{err}");
        assert!(!err.contains("endpoint"), "{err}");
        // A preset that weights a judge and a reward model, with neither given: the hint.
        let err = FileConfig::resolve(None, Some("repo"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("needs its endpoint in your --config"), "{err}");
    }

    #[test]
    fn an_old_constraint_name_is_refused_with_the_new_one() {
        for old in ["vllm_regex", "vllm_structured"] {
            let text = format!(
                "[players.q]\nendpoint = \"http://127.0.0.1:8000/v1\"\nmodel = \"m\"\nconstrain = \"{old}\""
            );
            let err = toml::from_str::<FileConfig>(&text).unwrap_err().to_string();
            assert!(
                err.contains(&format!("constrain = \"{old}\" is no longer accepted")),
                "{err}"
            );
            assert!(err.contains("write constrain = \"vllm\""), "{err}");
            assert!(err.contains("vllm_legacy"), "{err}");
        }
        for (name, want) in [
            ("vllm", crate::agents::Constrain::Vllm),
            ("vllm_legacy", crate::agents::Constrain::VllmLegacy),
            ("gbnf", crate::agents::Constrain::Gbnf),
            ("none", crate::agents::Constrain::None),
        ] {
            let text = format!(
                "[players.q]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\nconstrain = \"{name}\""
            );
            assert_eq!(
                toml::from_str::<FileConfig>(&text).unwrap().players["q"].constrain,
                want
            );
        }
        let err = toml::from_str::<FileConfig>(
            "[players.q]\nendpoint = \"http://x/v1\"\nmodel = \"m\"\nconstrain = \"xgrammar\"",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("none, gbnf, vllm, vllm_legacy"), "{err}");
    }

    #[test]
    fn the_slurm_recipes_config_is_valid() {
        let c: FileConfig =
            toml::from_str(include_str!("../../../../deploy/slurm/run.toml")).unwrap();
        assert_eq!(c.group_size, Some(8));
        assert!(c.players.contains_key("qwen"));
    }

    /// Every TOML example of the README and the book is a config this build reads (a
    /// `[players]`-only fragment included): docs whose examples drift fail here. Another
    /// program's TOML (a trainer's config) is fenced `toml,not-dealgym` and is not read.
    #[test]
    fn every_toml_example_of_the_readme_and_the_book_is_a_valid_config() {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let mut pages = vec![root.join("README.md")];
        let mut dirs = vec![root.join("docs/src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "md") {
                    pages.push(path);
                }
            }
        }
        let mut examples = 0;
        for page in &pages {
            let text = std::fs::read_to_string(page).unwrap();
            for block in text.split("```toml\n").skip(1) {
                let block = block.split("```").next().unwrap();
                let c: FileConfig = toml::from_str(block)
                    .unwrap_or_else(|e| panic!("{}: a TOML example: {e}\n{block}", page.display()));
                c.personas.validate().unwrap();
                examples += 1;
            }
        }
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        assert!(
            readme.contains("```toml\n[players.qwen]"),
            "the README's example"
        );
        assert!(examples >= 2, "{examples} examples found");
    }

    /// A config file in a fresh temporary directory of this test's own.
    fn config_file(name: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("dealgym-config-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_preset_sits_under_the_file_and_the_flag_names_it() {
        let base = FileConfig::resolve(None, Some("batna-threshold")).unwrap();
        assert_eq!(base.preset.as_deref(), Some("batna-threshold"));
        assert_eq!(base.rewards.kind, crate::reward::RewardKind::Threshold);
        assert_eq!(base.episode.format_retries, 0);
        assert_eq!(base.group_size, Some(8));
        assert_eq!(base.sampling.learner.temperature, Some(1.0));
        assert_eq!(base.sampling.opponent.temperature, Some(0.7));
        // The file's values go over the preset's, key by key; the rest stays the preset's.
        let path = config_file("over", "[episode]\nmax_rounds = 4\n[rewards]\ntau = 0.6\n");
        let c = FileConfig::resolve(Some(&path), Some("batna-threshold")).unwrap();
        assert_eq!((c.episode.max_rounds, c.episode.format_retries), (4, 0));
        assert_eq!((c.rewards.tau, c.rewards.gamma), (0.6, 0.5));
        assert_eq!(c.rewards.kind, crate::reward::RewardKind::Threshold);
        // A file may name its preset itself; the flag wins over it.
        let path = config_file("named", "preset = \"batna-surplus\"\nseed = 5\n");
        let c = FileConfig::resolve(Some(&path), None).unwrap();
        assert_eq!(
            (c.preset.as_deref(), c.rewards.kind, c.seed),
            (
                Some("batna-surplus"),
                crate::reward::RewardKind::Surplus,
                Some(5)
            )
        );
        let c = FileConfig::resolve(Some(&path), Some("batna-threshold")).unwrap();
        assert_eq!(c.preset.as_deref(), Some("batna-threshold"));
        // Without a preset nothing changes: the defaults, and no preset named.
        let c = FileConfig::resolve(None, None).unwrap();
        assert_eq!(c, FileConfig::default());
    }

    #[test]
    fn a_preset_that_needs_an_endpoint_says_so_and_a_wrong_name_lists_the_presets() {
        let err = FileConfig::resolve(None, Some("casino-harness-selfplay"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("preset casino-harness-selfplay"), "{err}");
        assert!(err.contains("[rewards.judge] needs an endpoint"), "{err}");
        // With the judge's endpoint in the file it resolves.
        let path = config_file(
            "judge",
            "[rewards.judge]\nendpoint = \"http://127.0.0.1:9/v1\"\nmodel = \"j\"\n",
        );
        let c = FileConfig::resolve(Some(&path), Some("casino-harness-selfplay")).unwrap();
        assert_eq!(
            c.personas.seats,
            crate::agents::persona::PersonaSeats::Opponent
        );
        assert_eq!(c.rewards.weights.len(), 5);
        // A file's [rewards.weights] replaces the preset's whole.
        let path = config_file("weights", "[rewards.weights]\nterminal = 1.0\n");
        let c = FileConfig::resolve(Some(&path), Some("casino-harness-selfplay")).unwrap();
        assert_eq!(
            c.rewards.weights,
            BTreeMap::from([(crate::reward::Component::Terminal, 1.0)])
        );
        let err = FileConfig::resolve(None, Some("batna"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown preset `batna`"), "{err}");
        assert!(err.contains("batna-threshold"), "{err}");
        // A typo in the file is still named with its line, preset or not.
        let path = config_file("typo", "[episode]\nmax_round = 4\n");
        let err = FileConfig::resolve(Some(&path), Some("batna-threshold"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_round") && err.contains("line 2"), "{err}");
    }

    #[test]
    fn every_preset_resolves_once_the_user_gives_what_is_theirs() {
        for name in super::super::preset::preset_names() {
            let preset = Preset::builtin(name).unwrap();
            let rewards = preset.config.get("rewards");
            let has = |t: &str| rewards.and_then(|r| r.get(t)).is_some();
            let mut text = String::new();
            if has("judge") {
                text.push_str(
                    "[rewards.judge]\nendpoint = \"http://127.0.0.1:9/v1\"\nmodel = \"j\"\n",
                );
            }
            if rewards
                .and_then(|r| r.get("combine"))
                .and_then(|c| c.as_str())
                == Some("enhance")
            {
                text.push_str("[rewards.reward_model]\nurl = \"http://127.0.0.1:9/score\"\n");
                text.push_str("[[rewards.rules]]\nname = \"r\"\npattern = \"x\"\ntarget = \"talk\"\nscore = -1.0\n");
            }
            let path = config_file(&format!("every-{name}"), &text);
            let c = FileConfig::resolve(Some(&path), Some(name))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(c.preset.as_deref(), Some(name));
        }
    }

    #[test]
    fn the_presets_page_of_the_docs_is_current() {
        let doc = presets_doc().unwrap();
        assert!(
            include_str!("../../../../docs/presets.md") == doc,
            "docs/presets.md is not what the presets say: run `dealgym presets doc > docs/presets.md`"
        );
    }
}
