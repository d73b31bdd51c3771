//! `dealgym replay` through the binary, on runs made with rule and script players (no server):
//! every kind of ending over all five families, a format retry, an illegal accept, a forfeit
//! and a regulation event. `--verify` passes on them and names the field of an edited record;
//! `--rescore` changes rewards as computed by hand; `--render` writes readable, escaped
//! transcripts; `--branch-from` writes GRPO groups of branches that start with their parent's
//! turns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use dealgym::game::{OutcomeKind, Seat};
use dealgym::protocol::ErrorKind;
use dealgym::record::{EpisodeRecord, RecordReader};
use dealgym::replay::{self, VerifyOptions};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

// `dealgym` runs from the crate's root, so `scenarios/FAMILY.jsonl` is found by default.
use crate::common::{dealgym_cli as dealgym, succeeded as ok};

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn read(path: &Path) -> Vec<EpisodeRecord> {
    RecordReader::open(path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The runs every test reads, made once per test process.
struct Runs {
    dir: PathBuf,
    /// rule:linear vs rule:boulware, 2 scenarios of each family, groups of 2: deals.
    rules: PathBuf,
    /// AHP, the learner first: an illegal accept (corrected), an offer of 1, the regulated
    /// seller's accept of it replaced by a reject (its talk has a `<script>`), then two
    /// unreadable replies: a format retry and a format forfeit.
    forfeit: PathBuf,
    /// CaSiNo, the learner walks away at once.
    walk: PathBuf,
    /// Craigslist, three rounds each without agreement: the turn cap.
    max_turns: PathBuf,
    /// Job Interview, the learner's script runs out on its second call: a backend-style error.
    error: PathBuf,
    /// CaSiNo, the learner asks for everything and the opponent accepts: ρ = (1, 0).
    take: PathBuf,
    /// CaSiNo, the learner asks for everything three times running: a reject loop (the rule
    /// players no longer repeat themselves).
    repeat: PathBuf,
}

impl Runs {
    fn all(&self) -> Vec<PathBuf> {
        vec![
            self.rules.clone(),
            self.forfeit.clone(),
            self.walk.clone(),
            self.max_turns.clone(),
            self.error.clone(),
            self.take.clone(),
            self.repeat.clone(),
        ]
    }
}

fn script(dir: &Path, name: &str, completions: &[&str]) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string(completions).unwrap()).unwrap();
    format!("script:{}", path.display())
}

fn run(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(format!("{name}.jsonl"));
    let mut all = vec!["run", "--quiet", "--out", path_str(&out)];
    all.extend(args);
    ok(dealgym(&all));
    out
}

const OFFER_ONE: &str =
    "Thought: I will lowball.\nTalk: One dollar, final.\nAction: [SUBMIT_DEAL] price:1";
const SCRIPT_TALK: &str = "<script>alert('x')</script> Sold!";

fn runs() -> &'static Runs {
    static RUNS: OnceLock<Runs> = OnceLock::new();
    RUNS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("dealgym-replay-cli-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let family = |f: &str| format!("scenarios/{f}.jsonl");
        let mut every = Vec::new();
        for f in ["ahp", "craigslist", "casino", "dnd", "job_interview"] {
            every.push("--scenarios".to_string());
            every.push(family(f));
        }
        let mut args: Vec<&str> = every.iter().map(String::as_str).collect();
        args.extend([
            "--limit",
            "2",
            "--group-size",
            "2",
            "--learner",
            "rule:linear",
            "--opponent",
            "rule:boulware",
        ]);
        let rules = run(&dir, "rules", &args);

        let accept = format!("Thought: take it\nTalk: {SCRIPT_TALK}\nAction: [ACCEPT_DEAL]");
        let learner = script(
            &dir,
            "forfeit",
            &[
                "Thought: I accept whatever is there.\nTalk: Deal!\nAction: [ACCEPT_DEAL]",
                OFFER_ONE,
                "I have no idea what to write",
                "still nothing readable",
            ],
        );
        let opponent = script(&dir, "accept", &[&accept]);
        let first = ["--first-mover", "learner", "--limit", "1"];
        let with = |scenarios: &str, learner: &str, opponent: &str, extra: &[&str]| {
            let mut a: Vec<String> = vec![
                "--scenarios".into(),
                family(scenarios),
                "--learner".into(),
                learner.into(),
                "--opponent".into(),
                opponent.into(),
            ];
            a.extend(first.iter().chain(extra).map(|s| s.to_string()));
            a
        };
        let args = with("ahp", &learner, &opponent, &[]);
        let forfeit = run(&dir, "forfeit", &args.iter().map(String::as_str).collect::<Vec<_>>());

        let walker = script(&dir, "walk", &["Thought: no\nTalk: Goodbye.\nAction: [WALK_AWAY]"]);
        let args = with("casino", &walker, "rule:boulware", &[]);
        let walk = run(&dir, "walk", &args.iter().map(String::as_str).collect::<Vec<_>>());

        let lowball = script(
            &dir,
            "lowball",
            &[
                "Thought: a\nTalk: 1?\nAction: [SUBMIT_DEAL] price:1",
                "Thought: b\nTalk: 2?\nAction: [SUBMIT_DEAL] price:2",
                "Thought: c\nTalk: 3?\nAction: [SUBMIT_DEAL] price:3",
            ],
        );
        let args = with("craigslist", &lowball, "rule:boulware", &["--max-rounds", "3"]);
        let max_turns = run(&dir, "max_turns", &args.iter().map(String::as_str).collect::<Vec<_>>());

        let short = script(&dir, "short", &["Thought: wait\nTalk: Not yet.\nAction: [REJECT_DEAL]"]);
        let args = with("job_interview", &short, "rule:boulware", &[]);
        let error = run(&dir, "error", &args.iter().map(String::as_str).collect::<Vec<_>>());

        let greedy = script(
            &dir,
            "greedy",
            &["Thought: everything\nTalk: I take it all.\nAction: [SUBMIT_DEAL] food:3 water:3 firewood:3"],
        );
        let args = with("casino", &greedy, &opponent, &[]);
        let take = run(&dir, "take", &args.iter().map(String::as_str).collect::<Vec<_>>());

        let all = "Thought: everything\nTalk: All of it.\nAction: [SUBMIT_DEAL] food:3 water:3 firewood:3";
        let stubborn = script(&dir, "stubborn", &[all, all, all]);
        let args = with("casino", &stubborn, "rule:boulware", &[]);
        let repeat = run(&dir, "repeat", &args.iter().map(String::as_str).collect::<Vec<_>>());

        Runs {
            dir,
            rules,
            forfeit,
            walk,
            max_turns,
            error,
            take,
            repeat,
        }
    })
}

fn one(path: &Path) -> EpisodeRecord {
    let mut records = read(path);
    assert_eq!(records.len(), 1);
    records.remove(0)
}

#[test]
fn every_ending_over_all_families_verifies() {
    let runs = runs();
    let records: Vec<EpisodeRecord> = runs.all().iter().flat_map(|f| read(f)).collect();
    let kinds: BTreeSet<OutcomeKind> = records.iter().map(EpisodeRecord::kind).collect();
    assert_eq!(
        kinds,
        OutcomeKind::ALL.into_iter().collect(),
        "every ending"
    );
    let families: BTreeSet<String> = records.iter().map(|r| r.family.to_string()).collect();
    assert_eq!(families.len(), 5);
    let turns = || records.iter().flat_map(|r| &r.turns);
    assert!(
        turns().any(|t| t.regulation.is_some()),
        "a regulation event"
    );
    let kind_of = |k| turns().any(|t| t.parsed.error.as_ref().is_some_and(|e| e.kind == k));
    assert!(kind_of(ErrorKind::Illegal) && kind_of(ErrorKind::Format));
    assert!(turns().any(|t| t.attempt == 1), "a retry");
    assert!(records.iter().all(|r| r.parent.is_none()));
    assert!(!std::fs::read_to_string(&runs.rules)
        .unwrap()
        .contains("\"parent\""));

    let mut args = vec!["replay".to_string(), "--verify".into()];
    args.extend(runs.all().iter().map(|p| p.display().to_string()));
    let out = ok(dealgym(&args));
    assert!(
        stdout(&out).contains(&format!(
            "{} episodes in 7 files replay identically",
            records.len()
        )),
        "{}",
        stdout(&out)
    );

    // The same through the library, with the scenario files named.
    let report = replay::verify(&VerifyOptions {
        files: runs.all(),
        episode: None,
        scenarios: ["ahp", "craigslist", "casino", "dnd", "job_interview"]
            .iter()
            .map(|f| manifest().join(format!("scenarios/{f}.jsonl")))
            .collect(),
        prompts_dir: None,
        rewards: None,
        on_duplicate: Default::default(),
    })
    .unwrap();
    assert!(report.is_clean(), "{}", report.table());
    assert_eq!(report.episodes, records.len());
}

/// Rewrite lines of a record file: `edit(index, record)` changes the records it wants.
fn edited(from: &Path, to: &Path, mut edit: impl FnMut(usize, &mut serde_json::Value)) {
    let text = std::fs::read_to_string(from).unwrap();
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        edit(i, &mut v);
        out.push_str(&v.to_string());
        out.push('\n');
    }
    std::fs::write(to, out).unwrap();
}

#[test]
fn an_edited_record_is_caught_and_the_field_named() {
    let runs = runs();
    let records = read(&runs.rules);
    // Line 1: the raw text of its third turn now rejects instead of offering; line 2: the
    // parsed action of its second turn says walk-away; line 3: the learner's utility + 1.
    let submit = |r: &EpisodeRecord, i: usize| r.turns[i].raw.contains("[SUBMIT_DEAL]");
    assert!(submit(&records[0], 2) && submit(&records[1], 1));
    let path = runs.dir.join("edited.jsonl");
    edited(&runs.rules, &path, |i, v| match i {
        0 => {
            let raw = v["turns"][2]["raw"].as_str().unwrap();
            let cut = raw.find("[SUBMIT_DEAL]").unwrap();
            v["turns"][2]["raw"] = format!("{}[REJECT_DEAL]", &raw[..cut]).into();
        }
        1 => v["turns"][1]["action"] = serde_json::json!({"type": "walk_away"}),
        2 => {
            let u = v["outcome"]["utility"]["learner"].as_f64().unwrap();
            v["outcome"]["utility"]["learner"] = (u + 1.0).into();
        }
        _ => {}
    });
    let out = dealgym(["replay", "--verify", path_str(&path)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let table = stdout(&out);
    let row = |field: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(field))
            .unwrap_or_else(|| panic!("no row {field}:\n{table}"))
            .to_string()
    };
    let action = row("turn.action");
    assert_eq!(action.split_whitespace().nth(1), Some("2"), "{action}");
    assert!(
        action.contains(&format!(
            "{} turn 3 ({}:1)",
            records[0].episode_id,
            path.display()
        )),
        "{action}"
    );
    assert!(row("turn.played").contains(&records[0].episode_id));
    let utility = row("outcome.utility.learner");
    assert_eq!(utility.split_whitespace().nth(1), Some("1"), "{utility}");
    assert!(utility.contains(&records[2].episode_id), "{utility}");
    assert!(table.contains("3 of 20 episodes"), "{table}");

    // The library names the same fields.
    let report = replay::verify(&VerifyOptions {
        files: vec![path.clone()],
        episode: Some(records[1].episode_id.clone()),
        scenarios: Vec::new(),
        prompts_dir: None,
        rewards: None,
        on_duplicate: Default::default(),
    });
    // Run from the test's working directory (the crate root), the default scenario files
    // are found.
    let report = report.unwrap();
    assert_eq!(report.episodes, 1);
    assert_eq!(report.rows[0].field, "turn.action");
    assert_eq!(report.rows[0].first.turn, Some(1));
}

#[test]
fn records_that_cannot_be_replayed_have_their_own_rows() {
    let runs = runs();
    let take = one(&runs.take);
    // Scenario changed: the same id with another description.
    let casino = std::fs::read_to_string(manifest().join("scenarios/casino.jsonl")).unwrap();
    let changed = runs.dir.join("casino-changed.jsonl");
    let line = casino
        .lines()
        .find(|l| l.contains(&format!("\"id\":\"{}\"", take.scenario_id)))
        .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
    v["public"]["title"] = "Another camp".into();
    std::fs::write(&changed, format!("{v}\n")).unwrap();
    let out = dealgym([
        "replay",
        "--verify",
        path_str(&runs.take),
        "--scenarios",
        path_str(&changed),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("scenario changed"),
        "{}",
        stdout(&out)
    );

    // Scenario missing: not in the file given.
    let out = dealgym([
        "replay",
        "--verify",
        path_str(&runs.take),
        "--scenarios",
        "scenarios/ahp.jsonl",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let table = stdout(&out);
    assert!(table.contains("could not check 1 of 1 episodes"), "{table}");
    assert!(!table.contains("differ"), "{table}");
    assert!(table.contains(&take.scenario_id), "{table}");

    // Templates changed: a prompts directory the run did not use.
    let prompts = runs.dir.join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(prompts.join("opening.j2"), "Your move ({{ format }}).").unwrap();
    let out = dealgym([
        "replay",
        "--verify",
        path_str(&runs.take),
        path_str(&runs.walk),
        "--prompts-dir",
        path_str(&prompts),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let table = stdout(&out);
    assert!(table.contains("templates changed"), "{table}");
    assert!(table.contains("opening.j2"), "{table}");
    assert!(table.contains("2 of 2 episodes"), "{table}");

    // A line that is not a record stops the command, naming the file and the line.
    let broken = runs.dir.join("broken.jsonl");
    let text = std::fs::read_to_string(&runs.walk).unwrap();
    std::fs::write(&broken, format!("{text}{{\"schema\": 1}}\n")).unwrap();
    let out = dealgym(["replay", "--verify", path_str(&broken)]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(&format!("{}:2: field", broken.display())),
        "{}",
        stderr(&out)
    );
}

#[test]
fn rescoring_under_threshold_changes_rewards_as_computed_by_hand() {
    let runs = runs();
    let take = one(&runs.take);
    // The learner took all 9 units: 3·(5+4+3) = 36 of 36 whatever its priorities, ρ = 1; the
    // opponent has 0, ρ = 0. Surplus: (1, 0).
    assert_eq!(take.kind(), OutcomeKind::Deal);
    assert_eq!(take.outcome.outcome.utility.learner, 36.0);
    assert_eq!(take.outcome.outcome.rho.opponent, 0.0);
    assert_eq!((take.rewards.learner, take.rewards.opponent), (1.0, 0.0));
    // Threshold (τ = 0.4, γ = 0.5): 1 ≥ τ → 1; 0 < τ → −γ = −0.5.
    let config = runs.dir.join("threshold.toml");
    std::fs::write(&config, "[rewards]\nkind = \"threshold\"\n").unwrap();
    let out_file = runs.dir.join("take-threshold.jsonl");
    let out = ok(dealgym([
        "replay",
        path_str(&runs.take),
        "--rescore",
        "--config",
        path_str(&config),
        "--out",
        path_str(&out_file),
    ]));
    assert!(
        stderr(&out).contains("1 episodes rescored"),
        "{}",
        stderr(&out)
    );
    let rescored = one(&out_file);
    assert_eq!(
        (rescored.rewards.learner, rescored.rewards.opponent),
        (1.0, -0.5)
    );
    let mut back = rescored.clone();
    back.rewards = take.rewards;
    back.reward_config = take.reward_config.clone();
    assert_eq!(
        back, take,
        "only the rewards and the settings they were scored under changed"
    );

    // The rescored file verifies under its config, and on its own (each record names the
    // reward settings it was scored under), but not under the built-in rewards.
    ok(dealgym([
        "replay",
        "--verify",
        path_str(&out_file),
        "--config",
        path_str(&config),
    ]));
    ok(dealgym(["replay", "--verify", path_str(&out_file)]));
    let builtin = runs.dir.join("builtin.toml");
    std::fs::write(&builtin, "").unwrap();
    let out = dealgym([
        "replay",
        "--verify",
        path_str(&out_file),
        "--config",
        path_str(&builtin),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("rewards.opponent"),
        "{}",
        stdout(&out)
    );
    assert!(
        !stdout(&out).contains("rewards.learner"),
        "{}",
        stdout(&out)
    );

    // An existing output file is never appended to.
    let out = dealgym([
        "replay",
        path_str(&runs.take),
        "--rescore",
        "--config",
        path_str(&config),
        "--out",
        path_str(&out_file),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("choose another --out"),
        "{}",
        stderr(&out)
    );

    // A whole run: every record's rewards are the threshold design's.
    let all = runs.dir.join("rules-threshold.jsonl");
    ok(dealgym([
        "replay",
        path_str(&runs.rules),
        "--rescore",
        "--config",
        path_str(&config),
        "--out",
        path_str(&all),
    ]));
    for (before, after) in read(&runs.rules).iter().zip(read(&all)) {
        assert_eq!(before.episode_id, after.episode_id);
        for seat in Seat::BOTH {
            let rho = before.outcome.outcome.rho[seat];
            let items = !matches!(before.family.to_string().as_str(), "ahp" | "craigslist");
            // The BATNA paper, §2.1: only a closed deal meets τ; no deal is 0 on every task.
            let expected = match (items, before.kind()) {
                (true, OutcomeKind::Deal) if rho >= 0.4 => rho,
                (true, OutcomeKind::Deal) => -0.5,
                (false, OutcomeKind::Deal) => rho.clamp(-1.0, 1.0),
                (_, _) => 0.0,
            };
            assert_eq!(
                after.rewards[seat], expected,
                "{} {seat}",
                before.episode_id
            );
        }
    }
}

#[test]
fn markdown_transcripts_show_the_forwarded_text_and_the_utilities_and_fold_the_thought() {
    let runs = runs();
    let record = one(&runs.forfeit);
    let out = ok(dealgym([
        "replay",
        path_str(&runs.forfeit),
        "--render",
        "md",
        "--episode",
        &record.episode_id,
    ]));
    let md = stdout(&out);
    // What the opponent was sent, line by line, marked as forwarded.
    let forwarded = record.turns[1].forwarded.as_deref().unwrap();
    assert_eq!(
        forwarded,
        "Talk: One dollar, final.\nAction: [SUBMIT_DEAL] price:1"
    );
    let block = md.split("**Forwarded to the opponent**").nth(1).unwrap();
    for line in forwarded.lines() {
        assert!(block.contains(&format!("> {line}")), "{line}\n{md}");
    }
    assert!(md.contains("**Forwarded to the learner**"), "{md}");
    // Regulation, the illegal accept, the retry and the forfeit are marked.
    assert!(
        md.contains("**Regulated** `[ACCEPT_DEAL]` → `[REJECT_DEAL]`"),
        "{md}"
    );
    assert!(md.contains("**Illegal move**"), "{md}");
    assert!(md.contains("· attempt 2 (after a correction)"), "{md}");
    assert!(md.contains("no retry left: the seat forfeits"), "{md}");
    // The outcome with each side's utility, ρ and reward.
    assert!(md.contains("`format_forfeit`"), "{md}");
    assert!(md.contains("| utility | 0 | 0 |"), "{md}");
    assert!(md.contains("| ρ | 0 | 0 |"), "{md}");
    assert!(md.contains("| reward | -1 | 0 |"), "{md}");
    // Thoughts appear only inside collapsed blocks, never among the talk.
    for thought in record
        .turns
        .iter()
        .filter_map(|t| t.parsed.thought.as_deref())
    {
        for (at, _) in md.match_indices(thought) {
            let open = md[..at]
                .rfind("<details>")
                .expect("a fold before the thought");
            assert!(
                md[..at].rfind("</details>").is_none_or(|c| c < open),
                "{thought}"
            );
        }
    }
    // The model's markup is shown, not interpreted.
    assert!(!md.contains("<script>"), "{md}");
    assert!(md.contains("&lt;script&gt;"), "{md}");

    // A deal shows its terms and utilities; --out writes the file instead.
    let take = one(&runs.take);
    let file = runs.dir.join("take.md");
    ok(dealgym([
        "replay",
        path_str(&runs.take),
        "--render",
        "md",
        "--episode",
        &take.episode_id,
        "--out",
        path_str(&file),
    ]));
    let md = std::fs::read_to_string(&file).unwrap();
    assert!(md.contains("`food:3 water:3 firewood:3`"), "{md}");
    assert!(md.contains("| utility | 36 | 0 |"), "{md}");
    assert!(md.contains("| ρ | 1 | 0 |"), "{md}");
    // The library gives the same text.
    assert_eq!(md, replay::render::markdown(&take));
}

#[test]
fn html_transcripts_are_escaped_and_well_formed() {
    let runs = runs();
    let record = one(&runs.forfeit);
    let out = ok(dealgym([
        "replay",
        path_str(&runs.forfeit),
        "--render",
        "html",
        "--episode",
        &record.episode_id,
    ]));
    let page = stdout(&out);
    assert_eq!(page, replay::render::html(&record));
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(!page.contains("<script"), "a talk's <script> is escaped");
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; Sold!"));
    assert!(!page.contains("src=") && !page.contains("href=") && !page.contains("@import"));
    assert!(page.contains("<details><summary>Thought</summary>"));
    let mut open: Vec<String> = Vec::new();
    for tag in page.split('<').skip(1) {
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        assert!(!name.is_empty() || tag.starts_with('!'), "a stray <: {tag}");
        if tag.starts_with('!') || name == "meta" {
            continue;
        }
        if tag.starts_with('/') {
            assert_eq!(open.pop().as_deref(), Some(name.as_str()), "</{name}>");
        } else {
            open.push(name);
        }
    }
    assert!(open.is_empty(), "unclosed {open:?}");

    let out = dealgym([
        "replay",
        path_str(&runs.forfeit),
        "--render",
        "html",
        "--episode",
        "g9-m9",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no episode g9-m9"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn branches_of_a_prefix_form_a_group_that_starts_with_the_parents_turns() {
    let runs = runs();
    let parents: BTreeMap<String, EpisodeRecord> = read(&runs.rules)
        .into_iter()
        .map(|r| (r.episode_id.clone(), r))
        .collect();
    let out_file = runs.dir.join("branches.jsonl");
    ok(dealgym([
        "replay",
        path_str(&runs.rules),
        "--branch-from",
        "2",
        "--group-size",
        "3",
        "--learner",
        "rule:conceder",
        "--opponent",
        "rule:linear",
        "--seed",
        "9",
        "--out",
        path_str(&out_file),
    ]));
    let branches = read(&out_file);
    assert_eq!(branches.len(), 3 * parents.len());
    let mut groups: BTreeMap<String, Vec<&EpisodeRecord>> = BTreeMap::new();
    for b in &branches {
        groups.entry(b.group_id.clone()).or_default().push(b);
    }
    assert_eq!(groups.len(), parents.len());
    for (group, members) in &groups {
        assert_eq!(members.len(), 3, "{group}");
        let parent_id = &members[0].parent.as_ref().unwrap().episode_id;
        let parent = &parents[parent_id];
        assert_eq!(*group, replay::branch_group_id(parent_id, 2));
        let seeds: BTreeSet<u64> = members
            .iter()
            .map(|m| m.seats.learner.sampling_seed)
            .collect();
        assert_eq!(seeds.len(), 3, "members sample differently");
        for m in members {
            let p = m.parent.as_ref().unwrap();
            assert_eq!(
                (p.run_id.as_str(), p.episode_id.as_str(), p.prefix_turns),
                (parent.run_id.as_str(), parent_id.as_str(), 2)
            );
            assert_eq!(m.turns[..2], parent.turns[..2], "{}", m.episode_id);
            // The parent's setup, its first 2 turns marked as logged (not the new players').
            assert_eq!(m.setup, parent.setup.to_continue(2, None));
            assert_eq!(m.setup.rules.continuation.unwrap().prefix_turns, 2);
            assert_eq!(m.scenario_id, parent.scenario_id);
            assert_eq!(m.seats.learner.player, "rule:conceder");
            assert!(m.episode_id.starts_with(group.as_str()));
        }
    }
    // Branches are records like any other: they replay identically.
    let out = ok(dealgym(["replay", "--verify", path_str(&out_file)]));
    assert!(
        stdout(&out).contains("replay identically"),
        "{}",
        stdout(&out)
    );

    // An episode that ended on a backend error can be continued from its last turn.
    let error = one(&runs.error);
    let n = error.turns.len().to_string();
    let continued = runs.dir.join("continued.jsonl");
    ok(dealgym([
        "replay",
        path_str(&runs.error),
        "--branch-from",
        &n,
        "--learner",
        "rule:linear",
        "--opponent",
        "rule:boulware",
        "--out",
        path_str(&continued),
    ]));
    let continued = one(&continued);
    assert_ne!(continued.kind(), OutcomeKind::Error);
    assert_eq!(continued.turns[..error.turns.len()], error.turns[..]);
}

#[test]
fn a_prefix_too_long_or_that_ends_the_episode_is_an_error_naming_it() {
    let runs = runs();
    let walk = one(&runs.walk);
    let branch = |n: &str, out: &str| {
        dealgym([
            "replay",
            path_str(&runs.walk),
            "--branch-from",
            n,
            "--learner",
            "rule:linear",
            "--opponent",
            "rule:linear",
            "--out",
            path_str(&runs.dir.join(out)),
        ])
    };
    let out = branch("5", "too-long.jsonl");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("episode {} (", walk.episode_id)) && err.contains("has 1 turns"),
        "{err}"
    );
    let out = branch("1", "ended.jsonl");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("episode {}", walk.episode_id))
            && err.contains("already end it (walk_away)"),
        "{err}"
    );
    // From the start (N = 0) it plays the episode again with the new players.
    let out = branch("0", "again.jsonl");
    ok(out);
    let again = one(&runs.dir.join("again.jsonl"));
    assert_eq!(again.setup, walk.setup);
    assert_eq!(again.parent.as_ref().unwrap().prefix_turns, 0);
}

/// A branch is played as a run is: a second branch into the same file is refused unless it
/// resumes, and a resumed branch plays only what is missing — here, after the last record was
/// torn off as a kill would leave it — giving the records an uninterrupted branch gives.
#[test]
fn a_branch_resumes_like_a_run_and_repairs_a_torn_last_line() {
    let runs = runs();
    let out_file = runs.dir.join("branch-resume.jsonl");
    let branch = |extra: &[&str]| {
        let mut args = vec![
            "replay",
            path_str(&runs.rules),
            "--branch-from",
            "1",
            "--group-size",
            "2",
            "--learner",
            "rule:tough",
            "--opponent",
            "rule:linear",
            "--quiet",
            "--out",
            path_str(&out_file),
        ];
        args.extend_from_slice(extra);
        dealgym(args)
    };
    ok(branch(&[]));
    let whole = std::fs::read_to_string(&out_file).unwrap();
    let lines: Vec<&str> = whole.lines().collect();
    assert!(lines.len() >= 4, "{} branches", lines.len());

    let again = branch(&[]);
    assert!(!again.status.success(), "a second branch without --resume");
    assert!(stderr(&again).contains("--resume"), "{}", stderr(&again));

    // Keep all but the last two records, and half of the next: a kill mid-write.
    let kept = lines[..lines.len() - 2].join("\n");
    let torn = &lines[lines.len() - 2][..lines[lines.len() - 2].len() / 2];
    std::fs::write(&out_file, format!("{kept}\n{torn}")).unwrap();
    let resumed = ok(branch(&["--resume"]));
    let said = stderr(&resumed);
    assert!(said.contains("2 branches of"), "{said}");
    assert!(
        said.contains(&format!("({} already there)", lines.len() - 2)),
        "{said}"
    );
    let mut got: Vec<String> = read(&out_file)
        .iter()
        .map(|r| serde_json::to_string(&without_timing(r)).unwrap())
        .collect();
    let mut expected: Vec<String> = whole
        .lines()
        .map(|l| {
            let r: EpisodeRecord = serde_json::from_str(l).unwrap();
            serde_json::to_string(&without_timing(&r)).unwrap()
        })
        .collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected, "the resumed branch is the uninterrupted one");
}

fn without_timing(r: &EpisodeRecord) -> EpisodeRecord {
    let mut r = r.clone();
    r.timing = Default::default();
    r
}

// Issue 42, items 8 and 18: what the commands that read record files do with an output that
// is one of their inputs, and with a file that holds no record.

/// A directory of its own and one CaSiNo episode of rule players in `input.jsonl` there.
fn one_episode(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("dealgym-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let input = run(
        &dir,
        "input",
        &[
            "--scenarios",
            "scenarios/casino.jsonl",
            "--limit",
            "1",
            "--learner",
            "rule:linear",
            "--opponent",
            "rule:boulware",
        ],
    );
    (dir, input)
}

/// `export --out`, `replay --render --out` and `merge OUT` refuse an output that is one of
/// their inputs, known by the file (device and inode), not by its name: the input itself, a
/// symbolic link to it and a hard link to it are each refused, exit non-zero, naming both,
/// and the input is left byte for byte as it was.
#[test]
fn an_output_that_is_an_input_is_refused_however_it_is_named() {
    let (dir, input) = one_episode("out-is-in");
    let before = std::fs::read(&input).unwrap();
    let episode = read(&input)[0].episode_id.clone();
    let symlink = dir.join("symlink.jsonl");
    std::os::unix::fs::symlink(&input, &symlink).unwrap();
    let hard = dir.join("hard.jsonl");
    std::fs::hard_link(&input, &hard).unwrap();
    for out in [&input, &symlink, &hard] {
        let export = dealgym([
            "export",
            path_str(&input),
            "--format",
            "messages",
            "--out",
            path_str(out),
        ]);
        let render = dealgym([
            "replay",
            path_str(&input),
            "--render",
            "md",
            "--episode",
            &episode,
            "--out",
            path_str(out),
        ]);
        let merge = dealgym(["merge", "--force", path_str(out), path_str(&input)]);
        for (command, output) in [("export", export), ("render", render), ("merge", merge)] {
            let said = stderr(&output);
            assert!(
                !output.status.success(),
                "{command} --out {}: {said}",
                out.display()
            );
            assert!(
                said.contains("is also an input") && said.contains(path_str(out)),
                "{command}: {said}"
            );
            assert_eq!(
                std::fs::read(&input).unwrap(),
                before,
                "{command} wrote its input"
            );
        }
    }
    // Another file is written as before.
    let other = dir.join("transcript.md");
    ok(dealgym([
        "replay",
        path_str(&input),
        "--render",
        "md",
        "--episode",
        &episode,
        "--out",
        path_str(&other),
    ]));
    assert!(std::fs::read_to_string(&other).unwrap().contains(&episode));
}

/// `replay --verify` and `merge` of a file that holds no record say so and exit non-zero:
/// nothing verified is not a clean verification, and a merge of nothing is no run. (A shard
/// with no episode beside others is no error: its count line says 0.)
#[test]
fn verify_and_merge_of_a_file_with_no_record_say_so_and_fail() {
    let (dir, input) = one_episode("empty-in");
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let verify = dealgym(["replay", "--verify", path_str(&empty)]);
    let said = format!("{}{}", stdout(&verify), stderr(&verify));
    assert!(!verify.status.success(), "verify of an empty file: {said}");
    assert!(
        said.contains("no record") && said.contains(path_str(&empty)),
        "{said}"
    );

    let out = dir.join("merged.jsonl");
    let merge = dealgym(["merge", path_str(&out), path_str(&empty)]);
    let said = format!("{}{}", stdout(&merge), stderr(&merge));
    assert!(!merge.status.success(), "merge of an empty file: {said}");
    assert!(
        said.contains("no record") && said.contains(path_str(&empty)),
        "{said}"
    );
    assert!(!out.exists(), "a merge of nothing wrote {}", out.display());
    // A file with a record still verifies and merges cleanly.
    ok(dealgym(["replay", "--verify", path_str(&input)]));
    let merged = dir.join("merged-whole.jsonl");
    ok(dealgym(["merge", path_str(&merged), path_str(&input)]));
}
