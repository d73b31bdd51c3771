//! Inputs past their bounds, through the real binary (issue 20, items 6, 9 and 10): scenario
//! values far past the datasets' are refused where the file is loaded, by `scenarios validate`
//! and `run` alike; a line with no end (`/dev/zero`) is refused at its limit; a full disk stops
//! a run by name, keeping every record written before whole; a record file holding an episode
//! twice, or a record of an unknown version, is refused by every reader, and read once each
//! with `--duplicates skip`; an export that would write no line fails, saying why, unless
//! `--allow-empty`. Scenario lines come from `scenarios/` and are changed here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{dealgym_cli as dealgym, read_log, succeeded as ok, temp_dir, whole_lines};
use dealgym::limits::{MAX_INPUT_LINE, MAX_OUTCOME_SPACE, MAX_RECORD_LINE};
use dealgym::scenario::{load_scenarios, LoadOptions};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn failed(output: Output) -> String {
    assert!(
        !output.status.success(),
        "expected a failure:\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    stderr(&output)
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The first line of `scenarios/FAMILY.jsonl`, changed by `change`, written alone to `dir`.
fn changed_scenario(dir: &Path, family: &str, change: impl FnOnce(&mut Value)) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{family}.jsonl"));
    let text = std::fs::read_to_string(source).unwrap();
    let mut line: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    change(&mut line);
    let path = dir.join(format!("{family}.jsonl"));
    std::fs::write(&path, format!("{line}\n")).unwrap();
    path
}

fn rule_run(scenarios: &Path, out: &Path) -> Vec<String> {
    [
        "run",
        "--scenarios",
        arg(scenarios),
        "--learner",
        "rule:linear",
        "--opponent",
        "rule:boulware",
        "--quiet",
        "--out",
        arg(out),
    ]
    .map(String::from)
    .to_vec()
}

// ---- item 6: scenario values ----

#[test]
fn an_item_count_of_u32_max_is_refused_by_validate_and_by_run_naming_the_limit() {
    let dir = temp_dir("limits-item-count");
    let file = changed_scenario(&dir, "casino", |s| {
        s["game"]["items"]["items"][0]["count"] = u32::MAX.into();
    });
    let said = failed(dealgym(["scenarios", "validate", arg(&file)]));
    let expected = format!(
        "{}:1: field `game.items.items[0].count`: count must be from 1 to 1000; it is 4294967295",
        file.display()
    );
    assert!(said.contains(&expected), "{said}");
    // `run` aborted on a 3.3 TB allocation; it loads through the same check.
    let started = Instant::now();
    let said = failed(dealgym(rule_run(&file, &dir.join("e.jsonl"))));
    assert!(said.contains(&expected), "{said}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn an_outcome_space_past_the_limit_is_refused_though_each_count_is_within_it() {
    let dir = temp_dir("limits-outcome-space");
    // 101³ splits: every Pareto flag would enumerate them, a rule player hold them all.
    // (u32::MAX of every item, whose (2^32)^3 deals wrapped to 0 so that every deal read as
    // Pareto-optimal, is refused by its counts already; `score` never flags such a space.)
    let file = changed_scenario(&dir, "dnd", |s| {
        for item in s["game"]["items"]["items"].as_array_mut().unwrap() {
            item["count"] = 100.into();
        }
    });
    let said = failed(dealgym(["scenarios", "validate", arg(&file)]));
    assert!(
        said.contains(&format!(
            "field `game.items.items`: the outcome space (every split of the items) must hold \
             at most {MAX_OUTCOME_SPACE} deals; it holds 1030301"
        )),
        "{said}"
    );
}

#[test]
fn every_scenario_file_loads_with_its_largest_values_far_below_the_limits() {
    let mut largest_space = 0;
    for family in ["ahp", "craigslist", "casino", "dnd", "job_interview"] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(format!("{family}.jsonl"));
        let report =
            load_scenarios(&path, LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!report.scenarios.is_empty());
        for s in &report.scenarios {
            largest_space = largest_space.max(s.term_space().size().unwrap_or(0));
        }
        let longest = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(str::len)
            .max()
            .unwrap();
        assert!(
            longest * 100 < MAX_INPUT_LINE,
            "{family}: a line of {longest} bytes"
        );
    }
    // Job Interview's 31 × 4 × 4 × 4 × 5 contracts.
    assert_eq!(largest_space, 9_920);
    assert!(largest_space * 10 <= MAX_OUTCOME_SPACE);
}

// ---- item 9: lines and writes ----

#[cfg(target_os = "linux")]
#[test]
fn an_endless_line_is_refused_at_the_limit_by_the_record_and_scenario_readers() {
    let said = failed(dealgym(["replay", "/dev/zero", "--verify"]));
    assert!(
        said.contains(&format!(
            "/dev/zero:1: the line is longer than {MAX_RECORD_LINE} bytes, the most a record may hold"
        )),
        "{said}"
    );
    let said = failed(dealgym(["scenarios", "validate", "/dev/zero"]));
    assert!(
        said.contains(&format!(
            "/dev/zero:1: the line is longer than {MAX_INPUT_LINE} bytes, the most a scenario line may hold"
        )),
        "{said}"
    );
}

/// Six CaSiNo scenarios × groups of 2, rule players, one episode at a time: about 10 kB a
/// record.
fn casino_run(out: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dealgym"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "run",
            "--scenarios",
            "scenarios/casino.jsonl",
            "--limit",
            "6",
        ])
        .args(["--group-size", "2", "--concurrency", "1", "--seed", "4"])
        .args(["--learner", "rule:linear", "--opponent", "rule:boulware"])
        .args(["--quiet", "--out"])
        .arg(out)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_device_stops_the_run_at_once_naming_it() {
    // The run read /dev/full (zeros, without end) as the file to resume and grew to 10 GB.
    let started = Instant::now();
    let said = failed(casino_run(Path::new("/dev/full"), &[]).output().unwrap());
    assert!(
        said.contains("/dev/full: cannot write a record (No space left on device"),
        "{said}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[cfg(target_os = "linux")]
#[test]
fn a_write_cut_short_keeps_every_whole_record_and_resume_finishes_the_run() {
    let dir = temp_dir("limits-write-cut-short");
    let whole = dir.join("whole.jsonl");
    ok(casino_run(&whole, &[]).output().unwrap());
    // A file size limit of 50 KiB cuts the fifth record short, as a full disk would: the
    // write fails part way (EFBIG; the signal ignored, as a full disk sends none).
    let cut = dir.join("cut.jsonl");
    let limited = casino_run(&cut, &[]);
    let program = limited.get_program().to_owned();
    let args: Vec<_> = limited.get_args().map(|a| a.to_owned()).collect();
    let mut shell = Command::new("bash");
    shell
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 50; exec \"$@\"")
        .arg("dealgym")
        .arg(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let said = failed(shell.output().unwrap());
    assert!(
        said.contains(&format!("{}: cannot write a record", cut.display())),
        "{said}"
    );
    let text = std::fs::read(&cut).unwrap();
    assert!(text.ends_with(b"\n"), "the cut-off line was taken back");
    let kept = read_log(&cut);
    assert_eq!(kept.len(), whole_lines(&cut));
    assert!((1..12).contains(&kept.len()), "{} records", kept.len());
    // Resumed without the limit, the run ends with every episode once, as an uncut run.
    ok(casino_run(&cut, &["--resume"]).output().unwrap());
    let ids = |path: &Path| {
        let mut ids: Vec<String> = read_log(path).into_iter().map(|r| r.episode_id).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&cut), ids(&whole));
}

// ---- item 10: duplicates and versions ----

/// A run of rule players (casino, 2 scenarios × groups of 3), made once: the records the
/// duplicate tests copy.
fn records() -> &'static Path {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| {
        let out = temp_dir("limits-duplicates-run").join("run.jsonl");
        ok(dealgym([
            "run",
            "--scenarios",
            "scenarios/casino.jsonl",
            "--limit",
            "2",
            "--group-size",
            "3",
            "--learner",
            "rule:linear",
            "--opponent",
            "rule:boulware",
            "--quiet",
            "--out",
            arg(&out),
        ]));
        out
    })
}

/// `records()` with its first two lines written again at the end (a file appended to twice).
fn with_duplicates(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(records()).unwrap();
    let again: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    let path = dir.join("twice.jsonl");
    std::fs::write(&path, format!("{text}{again}")).unwrap();
    path
}

fn first_episode() -> String {
    read_log(records())[0].episode_id.clone()
}

#[test]
fn export_refuses_a_duplicated_episode_and_skipping_exports_as_if_it_were_once() {
    let dir = temp_dir("limits-duplicates-export");
    let twice = with_duplicates(&dir);
    let said = failed(dealgym(["export", arg(&twice), "--format", "messages"]));
    assert!(
        said.contains(&format!(
            "{}:7: episode {} of run",
            twice.display(),
            first_episode()
        )) && said.contains(&format!("is already at {}:1", twice.display()))
            && said.contains("--duplicates skip"),
        "{said}"
    );
    // Counted twice, the episode's group had 4 members, not 3, and wrong statistics.
    let once = ok(dealgym(["export", arg(records()), "--format", "messages"]));
    let skipped = ok(dealgym([
        "export",
        arg(&twice),
        "--format",
        "messages",
        "--duplicates",
        "skip",
    ]));
    assert_eq!(
        String::from_utf8_lossy(&skipped.stdout),
        String::from_utf8_lossy(&once.stdout)
    );
    let line: Value = serde_json::from_str(
        String::from_utf8_lossy(&once.stdout)
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["group_size"], 3, "{line}");
    assert!(
        stderr(&skipped).contains("skipped 2 duplicated records (the first: run "),
        "{}",
        stderr(&skipped)
    );
}

#[test]
fn report_refuses_a_duplicated_episode_and_skipping_reports_it_once() {
    let dir = temp_dir("limits-duplicates-report");
    let twice = with_duplicates(&dir);
    let said = failed(dealgym([
        "report",
        arg(&twice),
        "--out",
        arg(&dir.join("refused")),
        "--quiet",
    ]));
    assert!(said.contains("is already at"), "{said}");
    // Every table, as a sorted list of (name, content).
    let tables = |out: &Path| {
        let mut all: Vec<(String, String)> = std::fs::read_dir(out.join("tables"))
            .unwrap()
            .map(|e| {
                let path = e.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&path).unwrap())
            })
            .collect();
        all.sort();
        all
    };
    ok(dealgym([
        "report",
        arg(records()),
        "--out",
        arg(&dir.join("once")),
        "--quiet",
    ]));
    let skipped = ok(dealgym([
        "report",
        arg(&twice),
        "--out",
        arg(&dir.join("skipped")),
        "--quiet",
        "--duplicates",
        "skip",
    ]));
    let once = tables(&dir.join("once"));
    assert!(once.iter().any(|(name, _)| name == "by_all.csv"));
    assert_eq!(tables(&dir.join("skipped")), once);
    assert!(stderr(&skipped).contains("skipped 2 duplicated records"));
}

#[test]
fn replay_verify_refuses_duplicates_and_a_record_of_an_unknown_version() {
    let dir = temp_dir("limits-duplicates-verify");
    let twice = with_duplicates(&dir);
    let said = failed(dealgym(["replay", arg(&twice), "--verify"]));
    assert!(
        said.contains(&format!("{}:7: episode", twice.display())),
        "{said}"
    );
    let skipped = ok(dealgym([
        "replay",
        arg(&twice),
        "--verify",
        "--duplicates",
        "skip",
    ]));
    assert!(
        String::from_utf8_lossy(&skipped.stdout)
            .starts_with("6 episodes in 1 files replay identically"),
        "{}",
        String::from_utf8_lossy(&skipped.stdout)
    );
    assert!(stderr(&skipped).contains("skipped 2 duplicated records"));

    // One record of schema 99: not a version this build reads.
    let text = std::fs::read_to_string(records()).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    lines[3]["schema"] = 99.into();
    let future = dir.join("future.jsonl");
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&future, body).unwrap();
    let expected = format!(
        "{}:4: the record's schema version is 99; this build reads version 1",
        future.display()
    );
    for args in [
        vec!["replay", arg(&future), "--verify"],
        vec!["export", arg(&future), "--format", "messages"],
        vec!["report", arg(&future), "--out", arg(&dir), "--quiet"],
    ] {
        let said = failed(dealgym(&args));
        assert!(said.contains(&expected), "{args:?}: {said}");
    }
}

#[test]
fn merge_reports_duplicates_as_a_problem_unless_asked_to_skip_them() {
    let dir = temp_dir("limits-duplicates-merge");
    let twice = with_duplicates(&dir);
    let refused = dealgym(["merge", arg(&dir.join("a.jsonl")), arg(&twice)]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("duplicated episodes (written once): 2"));
    let skipped = ok(dealgym([
        "merge",
        arg(&dir.join("b.jsonl")),
        arg(&twice),
        "--duplicates",
        "skip",
    ]));
    assert!(stderr(&skipped).contains("duplicated episodes (written once; --duplicates skip): 2"));
    assert_eq!(read_log(&dir.join("b.jsonl")).len(), 6);
}

#[test]
fn eval_refuses_a_file_holding_an_episode_twice_before_playing_and_skips_when_asked() {
    let dir = temp_dir("limits-duplicates-eval");
    let out = dir.join("eval.jsonl");
    let eval = |extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--scenarios",
            "scenarios/casino.jsonl",
            "--limit",
            "2",
            "--player",
            "linear=rule:linear",
            "--opponent",
            "boulware=rule:boulware",
            "--quiet",
            "--out",
            arg(&out),
        ];
        args.extend(extra);
        dealgym(args)
    };
    let first = ok(eval(&[]));
    let text = std::fs::read_to_string(&out).unwrap();
    let again = text.lines().next().unwrap();
    std::fs::write(&out, format!("{text}{again}\n")).unwrap();
    let said = failed(eval(&["--resume"]));
    assert!(
        said.contains(&format!(
            "{} holds 1 records that repeat an episode already in it",
            out.display()
        )) && said.contains("--duplicates skip"),
        "{said}"
    );
    let skipped = ok(eval(&["--resume", "--duplicates", "skip"]));
    // The same matrix as before the line was repeated.
    assert_eq!(
        String::from_utf8_lossy(&skipped.stdout),
        String::from_utf8_lossy(&first.stdout)
    );
}

#[test]
fn an_export_that_would_write_nothing_fails_and_says_why_unless_allowed() {
    // Rule players' turns carry no token ids: a token format has nothing to write.
    let dir = temp_dir("limits-empty-export");
    let out = dir.join("verl.jsonl");
    let said = failed(dealgym([
        "export",
        arg(records()),
        "--format",
        "verl",
        "--out",
        arg(&out),
    ]));
    assert!(
        said.contains("no line to write as verl from 6 episodes")
            && said.contains("without token ids on every turn of the seat")
            && said.contains("--allow-empty"),
        "{said}"
    );
    assert!(!out.exists() && !dir.join("verl.jsonl.partial").exists());
    // To stdout too.
    let said = failed(dealgym(["export", arg(records()), "--format", "tinker"]));
    assert!(said.contains("no line to write as tinker"), "{said}");
    // Asked to allow it: an empty file and exit 0, with the skipped line.
    let said = stderr(&ok(dealgym([
        "export",
        arg(records()),
        "--format",
        "trl-rollout",
        "--allow-empty",
        "--out",
        arg(&out),
    ])));
    assert!(
        said.contains("0 lines") && said.contains("skipped 6"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "");
}
