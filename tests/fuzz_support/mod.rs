//! Inputs for fuzzing the three readers of untrusted bytes — the turn parser, the scenario
//! loader and the config loader — and the checks run on each input. Shared by the proptest
//! suite (`tests/fuzz.rs`) and the long soak (`examples/fuzz_soak.rs`, which includes this file
//! by path), so both drive the same targets the same way.
//!
//! Inputs are arbitrary bytes or near-valid ones: a valid seed (a well-formed completion, a line
//! of `scenarios/*.jsonl` read at run time, a valid config) mutated by byte edits, splices,
//! dictionary tokens of the format, and — for JSON — edits of the parsed value (a leaf replaced
//! by an extreme or another type, a key dropped), so most inputs get past the first syntax
//! check and reach validation.
#![allow(dead_code)]

pub mod serve;

use std::path::{Path, PathBuf};

use rand::seq::IndexedRandom;
use rand::Rng;
use serde_json::Value;

use dealgym::protocol::{parse, IssueSpec, ItemSpec, TermSpace};
use dealgym::run::FileConfig;
use dealgym::scenario::{load_scenarios_from_reader, LoadOptions, ScenarioError};
use dealgym_core::fixtures::{casino_items, dnd_items, job_issues};

/// The three targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Parse,
    Scenario,
    Config,
}

impl Target {
    pub const ALL: [Target; 3] = [Target::Parse, Target::Scenario, Target::Config];

    pub fn name(self) -> &'static str {
        match self {
            Target::Parse => "turn parser",
            Target::Scenario => "scenario loader",
            Target::Config => "config loader",
        }
    }
}

/// Well-formed seeds for each target.
pub struct Corpus {
    pub completions: Vec<String>,
    /// Lines of the repository's scenario files, read when the corpus is built.
    pub scenario_lines: Vec<String>,
    pub configs: Vec<String>,
    items: Vec<ItemSpec>,
    dnd: Vec<ItemSpec>,
    issues: Vec<IssueSpec>,
}

const FAMILIES: [&str; 5] = ["ahp", "craigslist", "casino", "dnd", "job_interview"];

/// Tokens of the three formats, spliced into inputs so mutations hit the readers' branches.
pub const DICTIONARY: &[&str] = &[
    "Thought:",
    "Talk:",
    "Action:",
    "**Thought:**",
    "__Talk__ :",
    "ACTION：",
    "<think>",
    "</think>",
    "<thought>",
    "</thought>",
    "<talk>",
    "</talk>",
    "<action>",
    "</action>",
    "[SUBMIT_DEAL]",
    "[ACCEPT_DEAL]",
    "[REJECT_DEAL]",
    "[WALK_AWAY]",
    "[TALK]",
    "[submit deal]",
    "[ Accept-Deal ]",
    "price:",
    "price = $1,250.00",
    "$-0.00",
    "1e308",
    "99999999999999999999999",
    "NaN",
    "food:",
    "water:3",
    "firewood=",
    "book:",
    "hats:2",
    "ball",
    "salary:",
    "position:",
    "company:",
    "workplace:",
    "holiday:",
    "Tokyo",
    "<|im_end|>",
    "<|eot_id|>",
    "</s>",
    "\n",
    "\r\n",
    "\t",
    " | ",
    ",",
    "\u{0}",
    "\u{feff}",
    "\u{202e}",
    "ß",
    "💥",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "\\",
    "\\u0000",
    "\\ud800",
    ":",
    "null",
    "true",
    "-1",
    "0",
    "1.5",
    "-1e999",
    "18446744073709551616",
    "\"schema\":",
    "\"family\":",
    "\"game\":",
    "\"items\":",
    "\"issues\":",
    "\"price\":",
    "\"options\":",
    "\"joint\":",
    "[players.x]",
    "[rewards]",
    "[[rewards.rules]]",
    "[episode]",
    "=",
    "\"\"\"",
    "'''",
    "inf",
    "nan",
    "1979-05-27T07:32:00Z",
    "0x7f",
];

/// The first few lines of each scenario file and a spread of the rest.
fn scenario_lines(root: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for family in FAMILIES {
        let path = root.join("scenarios").join(format!("{family}.jsonl"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let stride = (all.len() / 20).max(1);
        lines.extend(all.iter().step_by(stride).map(|l| l.to_string()));
    }
    lines
}

fn completions() -> Vec<String> {
    let actions = [
        "[SUBMIT_DEAL] price: $1,250.00",
        "[SUBMIT_DEAL] price=120",
        "[SUBMIT_DEAL] food:2 water:1 firewood:0",
        "[SUBMIT_DEAL] books=1, hats: 2, ball:0",
        "[SUBMIT_DEAL] salary:35 position:engineer company:Google workplace:Tokyo holiday:3",
        "[ACCEPT_DEAL]",
        "[REJECT_DEAL]",
        "[WALK_AWAY]",
        "[TALK]",
        "[SUBMIT_DEAL] price:10 [ACCEPT_DEAL]",
    ];
    let mut out = Vec::new();
    for action in actions {
        out.push(format!(
            "Thought: I want more.\nTalk: How about this?\nAction: {action}"
        ));
        out.push(format!(
            "<think>They value water.</think>\n**Thought:** fine\n**Talk:** ok\n**Action:** {action}"
        ));
        out.push(format!(
            "<thought>mine</thought><talk>yours</talk><action>{action}</action>"
        ));
        out.push(format!(
            "Thought: a\nTalk: b\nAction: {action}\nThought: again\nTalk: c\nAction: [WALK_AWAY]<|im_end|>"
        ));
    }
    out
}

fn configs() -> Vec<String> {
    vec![
        String::new(),
        "seed = 3\nconcurrency = 16\ngroup_size = 4\n".into(),
        r#"seed = 1
[episode]
max_rounds = 8
learner_role = "seller"
first_mover = "random"
reject_loop = 3
format_retries = 1
[rewards]
kind = "threshold"
tau = 0.4
gamma = 0.5
[personas.weights]
cooperative = 2.0
none = 1.0
[players.qwen]
endpoint = "http://127.0.0.1:8000/v1"
model = "Qwen/Qwen3-8B"
temperature = 0.7
max_tokens = 512
timeout_s = 5
retries = 2
extra_body = { chat_template_kwargs = { enable_thinking = false } }
"#
        .into(),
        r#"[rewards]
combine = "sum"
[rewards.weights]
terminal = 1.0
format = 0.1
rules = 1.0
judge = 0.5
[[rewards.rules]]
name = "polite"
pattern = "(?i)please|thank"
target = "talk"
score = 0.1
[rewards.judge]
endpoint = "http://127.0.0.1:8000/v1"
model = "judge"
rubric = "negotiation"
"#
        .into(),
        r#"[players.a]
endpoint = "http://127.0.0.1:8000/v1"
model = "m"
constrain = "vllm"
persona = "selfish"
seed_policy = "none"
tokens = "exact"
"#
        .into(),
    ]
}

impl Corpus {
    /// Seeds from the repository at `root` (its `scenarios/` directory).
    pub fn load(root: &Path) -> Corpus {
        Corpus {
            completions: completions(),
            scenario_lines: scenario_lines(root),
            configs: configs(),
            items: casino_items(),
            dnd: dnd_items(&[1, 2, 3]),
            issues: job_issues(),
        }
    }

    fn seeds(&self, target: Target) -> &[String] {
        match target {
            Target::Parse => &self.completions,
            Target::Scenario => &self.scenario_lines,
            Target::Config => &self.configs,
        }
    }

    /// One input for `target`: a fifth arbitrary bytes, the rest mutated seeds (several lines of
    /// a scenario file at times, so the loader's per-line bookkeeping is reached).
    pub fn input(&self, target: Target, rng: &mut impl Rng) -> Vec<u8> {
        if rng.random_ratio(1, 5) {
            return arbitrary_bytes(rng, 300);
        }
        let seed = self.seeds(target).choose(rng).expect("seeds").clone();
        let mut bytes = if target == Target::Scenario && rng.random_ratio(1, 3) {
            match mutate_json(&seed, rng) {
                Some(text) => text.into_bytes(),
                None => seed.into_bytes(),
            }
        } else {
            seed.into_bytes()
        };
        let edits = rng.random_range(0..=4);
        for _ in 0..edits {
            self.edit(target, &mut bytes, rng);
        }
        if target == Target::Scenario && rng.random_ratio(1, 4) {
            let other = self.scenario_lines.choose(rng).expect("seeds");
            bytes.push(b'\n');
            if rng.random_bool(0.5) {
                bytes.extend_from_slice(b"\n  \n");
            }
            bytes.extend_from_slice(other.as_bytes());
        }
        bytes
    }

    /// One byte-level or token-level edit.
    fn edit(&self, target: Target, bytes: &mut Vec<u8>, rng: &mut impl Rng) {
        let len = bytes.len();
        let at = |rng: &mut dyn rand::RngCore| {
            if len == 0 {
                0
            } else {
                rng.random_range(0..=len)
            }
        };
        match rng.random_range(0..9) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                bytes[i] ^= 1 << rng.random_range(0..8);
            }
            1 => {
                let i = at(rng);
                bytes.insert(i, rng.random());
            }
            2 if len > 0 => {
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(1..=16)).min(len);
                bytes.drain(a..b);
            }
            3 | 4 => {
                let i = at(rng);
                let token = DICTIONARY.choose(rng).expect("dictionary");
                bytes.splice(i..i, token.bytes());
            }
            5 if len > 0 => {
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(1..=64)).min(len);
                let piece = bytes[a..b].to_vec();
                let i = at(rng);
                bytes.splice(i..i, piece);
            }
            6 => {
                bytes.truncate(at(rng));
            }
            7 => {
                // Splice in part of another seed of the same target.
                let other = self.seeds(target).choose(rng).expect("seeds").as_bytes();
                if !other.is_empty() {
                    let a = rng.random_range(0..other.len());
                    let b = (a + rng.random_range(1..=80)).min(other.len());
                    let i = at(rng);
                    bytes.splice(i..i, other[a..b].iter().copied());
                }
            }
            _ => {
                // A token replacing a short run.
                if len > 0 {
                    let a = rng.random_range(0..len);
                    let b = (a + rng.random_range(1..=8)).min(len);
                    let token = DICTIONARY.choose(rng).expect("dictionary");
                    bytes.splice(a..b, token.bytes());
                }
            }
        }
    }
}

/// Up to `max` random bytes, sometimes valid UTF-8 text.
pub fn arbitrary_bytes(rng: &mut impl Rng, max: usize) -> Vec<u8> {
    let n = rng.random_range(0..=max);
    if rng.random_bool(0.5) {
        (0..n).map(|_| rng.random()).collect()
    } else {
        (0..n)
            .map(|_| rng.random_range(0x20u8..0x7f))
            .collect::<Vec<u8>>()
    }
}

/// The seed line parsed as JSON with one to three values inside it changed; `None` if the line
/// is not JSON.
pub fn mutate_json(line: &str, rng: &mut impl Rng) -> Option<String> {
    let mut value: Value = serde_json::from_str(line).ok()?;
    for _ in 0..rng.random_range(1..=3) {
        mutate_value(&mut value, rng);
    }
    Some(value.to_string())
}

/// Walk to a random node and change it.
fn mutate_value(value: &mut Value, rng: &mut impl Rng) {
    let descend = rng.random_ratio(4, 5);
    match value {
        Value::Object(map) if descend && !map.is_empty() => {
            let keys: Vec<String> = map.keys().cloned().collect();
            let key = keys.choose(rng).expect("non-empty").clone();
            if rng.random_ratio(1, 10) {
                map.remove(&key);
            } else if let Some(child) = map.get_mut(&key) {
                mutate_value(child, rng);
            }
        }
        Value::Array(items) if descend && !items.is_empty() => {
            let i = rng.random_range(0..items.len());
            match rng.random_range(0..10) {
                0 => {
                    items.remove(i);
                }
                1 => {
                    let copy = items[i].clone();
                    items.push(copy);
                }
                _ => mutate_value(&mut items[i], rng),
            }
        }
        _ => *value = extreme(rng),
    }
}

fn extreme(rng: &mut impl Rng) -> Value {
    let choices = [
        Value::Null,
        Value::Bool(true),
        0.into(),
        (-1).into(),
        u64::MAX.into(),
        i64::MIN.into(),
        serde_json::json!(1e308),
        serde_json::json!(-0.0),
        serde_json::json!(0.5),
        "".into(),
        " ".into(),
        "price".into(),
        "x".repeat(300).into(),
        serde_json::json!([]),
        serde_json::json!({}),
        serde_json::json!([1, 2, 3]),
        serde_json::json!({"integer": {"min": 5, "max": 1}}),
    ];
    choices.choose(rng).expect("choices").clone()
}

/// Run the turn parser on `bytes` (as text, lossily) in every term space, with and without a
/// server reasoning field; panics (the failure a fuzzer looks for) if a reply comes back that
/// breaks the parser's contract.
pub fn check_parse(corpus: &Corpus, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let spaces = [
        TermSpace::Price,
        TermSpace::Items(&corpus.items),
        TermSpace::Items(&corpus.dnd),
        TermSpace::Issues(&corpus.issues),
    ];
    for (i, space) in spaces.into_iter().enumerate() {
        let reasoning = (i % 2 == 1).then_some(text.as_ref());
        let p = parse(&text, space, reasoning);
        assert!(
            p.action.is_some() || p.error.is_some(),
            "neither a move nor an error"
        );
        assert!(
            !(p.format_ok && p.error.is_some()),
            "format-ok with an error"
        );
    }
}

/// Load `bytes` as a scenario file, stopping at the first bad line and skipping bad lines; the
/// answer must be scenarios that validate or a named error.
pub fn check_scenarios(bytes: &[u8]) {
    for skip_bad in [false, true] {
        match load_scenarios_from_reader("fuzz.jsonl", bytes, LoadOptions { skip_bad }) {
            Ok(report) => {
                for s in &report.scenarios {
                    assert!(
                        dealgym::scenario::validate(s).is_ok(),
                        "loaded an invalid scenario"
                    );
                }
                assert!(!report.scenarios.is_empty() || !report.skipped.is_empty());
                for e in &report.skipped {
                    assert_named(e);
                }
            }
            Err(e) => assert_named(&e),
        }
    }
}

fn assert_named(e: &ScenarioError) {
    let text = e.to_string();
    assert!(
        text.starts_with("fuzz.jsonl"),
        "error without the file: {text}"
    );
    if let ScenarioError::Line { line, field, .. } = e {
        assert!(
            *line >= 1 && !field.is_empty(),
            "error without a place: {text}"
        );
    }
}

/// A file for [`check_config`] to write inputs to: the config loader reads a path, so each
/// input goes through a real file (under `/dev/shm` where there is one).
pub fn config_path(tag: &str) -> PathBuf {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("dealgym-fuzz-{}-{tag}.toml", std::process::id()))
}

/// Load `bytes` as a config file at `path` (written, loaded, removed): a config or a named
/// error.
pub fn check_config(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write the config input");
    let loaded = FileConfig::load(path);
    // Removed before checking, so a failed check leaves nothing behind either.
    let _ = std::fs::remove_file(path);
    if let Err(e) = loaded {
        let text = e.to_string();
        assert!(
            text.starts_with(&path.display().to_string()),
            "error without the file: {text}"
        );
    }
}
