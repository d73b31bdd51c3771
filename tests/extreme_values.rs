//! Extreme and bad values on the command line and in a config (issue 20, items 1 and 11): each
//! is refused where it enters, naming the flag or the key, the limit and what was given —
//! clap's exit status 2 for a flag, 1 for a config or a player spec — and never a panic, an
//! abort or a run that starts and fails later with a message about something else.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::temp_dir;

/// A scenario file of the checkout.
fn scenarios(family: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{family}.jsonl"))
        .display()
        .to_string()
}

/// `dealgym args…`, killed if it has not ended within a minute: a refused value ends at once;
/// a value let through would start a run, a merge or a server that may never end.
fn dealgym(args: &[String]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "`dealgym {}` was not refused: still running after a minute\n{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Assert `dealgym args…` exits with `code` (no panic, no abort) and its error says each of
/// `says`.
fn refused(args: &[String], code: i32, says: &[&str]) {
    let out = dealgym(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown = format!("`dealgym {}`:\n{stderr}", args.join(" "));
    assert!(!stderr.contains("panicked"), "a panic: {shown}");
    assert_eq!(out.status.code(), Some(code), "{shown}");
    for said in says {
        assert!(stderr.contains(said), "no `{said}` in {shown}");
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// `run` of two CaSiNo scenarios between two rule players, writing into `dir`, with `extra`.
fn run_args(dir: &Path, extra: &[&str]) -> Vec<String> {
    let out = dir.join("episodes.jsonl").display().to_string();
    let casino = scenarios("casino");
    let mut args = strings(&["run", "--scenarios", &casino, "--limit", "2"]);
    args.extend(strings(&[
        "--learner",
        "rule:tough",
        "--opponent",
        "rule:linear",
        "--out",
        &out,
        "--quiet",
    ]));
    args.extend(strings(extra));
    args
}

#[test]
fn counts_past_their_limits_are_refused_as_the_flags_are_parsed() {
    let dir = temp_dir("extreme-count-flags");
    for (flag, value, limit) in [
        ("--concurrency", "18446744073709551615", "from 1 to 65536"),
        ("--concurrency", "0", "from 1 to 65536"),
        ("--group-size", "4294967295", "from 1 to 4096"),
        ("--group-size", "0", "from 1 to 4096"),
        ("--max-rounds", "4294967295", "from 1 to 10000"),
        ("--limit", "18446744073709551615", "from 0 to 10000000"),
        ("--sample", "0", "from 1 to 10000000"),
    ] {
        let mut args = run_args(&dir, &[]);
        if flag == "--limit" {
            args[4] = value.to_string();
        } else {
            args.extend(strings(&[flag, value]));
        }
        refused(&args, 2, &[flag, limit, &format!("it is {value}")]);
    }
    assert!(!dir.join("episodes.jsonl").exists(), "nothing was started");

    // Every other command that takes a count checks it the same way.
    let file = dir.join("any.jsonl").display().to_string();
    let out = dir.join("out.jsonl").display().to_string();
    let casino = scenarios("casino");
    let huge_group = ["--group-size", "4294967295"];
    let mut eval = strings(&["eval", "--player", "a=rule:tough", "--opponent"]);
    eval.extend(strings(&[
        "b=rule:linear",
        "--scenarios",
        &casino,
        "--out",
        &out,
    ]));
    eval.extend(strings(&huge_group));
    refused(&eval, 2, &["--group-size", "from 1 to 4096"]);
    let mut merge = strings(&["merge", &out, &file, "--scenarios", &casino]);
    merge.extend(strings(&huge_group));
    refused(&merge, 2, &["--group-size", "from 1 to 4096"]);
    let merge = strings(&["merge", &out, &file, "--expect", "18446744073709551615"]);
    refused(&merge, 2, &["--expect", "from 1 to 10000000"]);
    let mut annotate = strings(&[
        "annotate",
        &file,
        "--endpoint",
        "openai:m@http://127.0.0.1:9/v1",
    ]);
    annotate.extend(strings(&[
        "--out",
        &out,
        "--concurrency",
        "18446744073709551615",
    ]));
    refused(&annotate, 2, &["--concurrency", "from 1 to 65536"]);
    let mut branch = strings(&[
        "replay",
        &file,
        "--branch-from",
        "1",
        "--learner",
        "rule:tough",
    ]);
    branch.extend(strings(&["--opponent", "rule:linear", "--out", &out]));
    branch.extend(strings(&huge_group));
    refused(&branch, 2, &["--group-size", "from 1 to 4096"]);
}

#[test]
fn a_plan_past_the_episode_limit_is_refused_before_it_is_made() {
    // 10,404 DnD scenarios in groups of 1,000: 10.4 million episodes, more than a run may plan.
    let dir = temp_dir("extreme-plan-size");
    let dnd = scenarios("dnd");
    let mut args = run_args(&dir, &["--group-size", "1000"]);
    args[2] = dnd.clone();
    args[4] = "10404".into();
    let says = [
        "10404 scenarios × 1000 members per group = 10404000 episodes",
        "at most 10000000",
    ];
    refused(&args, 1, &says);
    assert!(!dir.join("episodes.jsonl").exists(), "nothing was started");
    // `merge` sizes the plan it checks the files against by the same rule.
    let file = dir.join("shard.jsonl");
    std::fs::write(&file, "").unwrap();
    let out = dir.join("merged.jsonl").display().to_string();
    let file = file.display().to_string();
    let merge = strings(&[
        "merge",
        &out,
        &file,
        "--scenarios",
        &dnd,
        "--group-size",
        "1000",
    ]);
    refused(&merge, 1, &says);
    assert!(!Path::new(&out).exists(), "nothing was written");
}

#[test]
fn numbers_that_are_not_finite_or_out_of_range_are_refused_by_flag() {
    let dir = temp_dir("extreme-number-flags");
    let file = dir.join("any.jsonl").display().to_string();
    let report_dir = dir.join("report").display().to_string();
    for tau in ["NaN", "1.5", "inf"] {
        let args = strings(&["report", &file, "--out", &report_dir, "--tau", tau]);
        refused(&args, 2, &["--tau", "from 0 to 1", &format!("it is {tau}")]);
    }
    let args = strings(&["report", &file, "--out", &report_dir, "--tau", "0.2,NaN"]);
    refused(&args, 2, &["--tau", "it is NaN"]);
    // The mock's shares of faults: a probability each.
    for rate in ["--error-rate", "--hang-rate", "--garbage-rate"] {
        let args = strings(&["mock", "--port", "0", rate, "NaN"]);
        refused(&args, 2, &[rate, "from 0 to 1"]);
    }
    let args = strings(&["mock", "--port", "0", "--error-rate", "2"]);
    refused(&args, 2, &["--error-rate", "it is 2"]);
}

/// `run` with a config of `text`, refused (exit 1) naming the file and each of `says`.
fn config_refused(dir: &Path, name: &str, text: &str, learner: &str, says: &[&str]) {
    let path: PathBuf = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    let mut args = run_args(dir, &["--config", &path.display().to_string()]);
    args[6] = learner.to_string();
    let mut all = vec![path.file_name().unwrap().to_str().unwrap()];
    all.extend_from_slice(says);
    refused(&args, 1, &all);
    assert!(
        !dir.join("episodes.jsonl").exists(),
        "{name}: nothing was started"
    );
}

#[test]
fn config_counts_and_numbers_past_their_limits_are_refused_by_key() {
    let dir = temp_dir("extreme-config");
    let rule = "rule:tough";
    for (name, text, says) in [
        (
            "group",
            "group_size = 4294967295\n",
            "group_size must be from 1 to 4096; it is 4294967295",
        ),
        (
            "concurrency",
            "concurrency = 100000000\n",
            "concurrency must be from 1 to 65536; it is 100000000",
        ),
        (
            "limit",
            "[scenarios]\nlimit = 100000000\n",
            "[scenarios] limit must be from 0 to 10000000",
        ),
        (
            "rounds",
            "[episode]\nmax_rounds = 4294967295\n",
            "[episode] max_rounds must be from 1 to 10000; it is 4294967295",
        ),
        (
            "format-retries",
            "[episode]\nformat_retries = 4294967295\n",
            "[episode] format_retries must be from 0 to 100",
        ),
        (
            "floor",
            "[episode]\nfloor_fraction = nan\n",
            "[episode] floor_fraction must be a finite number from 0 to 1; it is NaN",
        ),
        (
            "no-deal",
            "[episode]\nno_deal_value = inf\n",
            "[episode] no_deal_value must be a finite number",
        ),
        (
            "tau",
            "[rewards]\nkind = \"threshold\"\ntau = 1.5\n",
            "[rewards] tau must be a finite number from 0 to 1; it is 1.5",
        ),
        (
            "gamma",
            "[rewards]\ngamma = -1.0\n",
            "[rewards] gamma must be a finite number from 0 to 1000000; it is -1",
        ),
        (
            "personas",
            "[personas.weights]\ncooperative = 1e308\nuncompromising = 1e308\n",
            "persona weights must add up to a finite number",
        ),
    ] {
        config_refused(&dir, name, text, rule, &[says]);
    }
}

#[test]
fn a_players_table_with_a_bad_endpoint_or_count_is_refused_naming_it() {
    let dir = temp_dir("extreme-players");
    let table = |key_lines: &str| format!("[players.qwen]\nmodel = \"m\"\n{key_lines}\n");
    let at = "endpoint = \"http://127.0.0.1:9/v1\"\n";
    for (name, lines, says) in [
        (
            "not-a-url",
            "endpoint = \"not a url\"".to_string(),
            "endpoint `not a url` is not an http(s) URL",
        ),
        (
            "port",
            "endpoint = \"http://127.0.0.1:99999/v1\"".to_string(),
            "endpoint `http://127.0.0.1:99999/v1` is not an http(s) URL: invalid port number",
        ),
        (
            "scheme",
            "endpoint = \"ftp://127.0.0.1:21/v1\"".to_string(),
            "endpoint `ftp://127.0.0.1:21/v1` is not an http(s) URL",
        ),
        (
            "replica",
            "endpoints = [\"http://127.0.0.1:9/v1\", \"http//b/v1\"]".to_string(),
            "endpoints[1] `http//b/v1` is not an http(s) URL",
        ),
        (
            "in-flight",
            format!("{at}max_in_flight_per_replica = 0"),
            "max_in_flight_per_replica must be from 1 to 65536; it is 0",
        ),
        (
            "retries",
            format!("{at}retries = 4294967295"),
            "retries must be from 0 to 100; it is 4294967295",
        ),
        (
            "temperature",
            format!("{at}temperature = nan"),
            "[players.qwen] temperature must be a finite number; it is NaN",
        ),
        (
            "max-tokens",
            format!("{at}max_tokens = 0"),
            "max_tokens must be from 1 to 16777216; it is 0",
        ),
        (
            "health",
            format!("{at}health_interval_s = 1e300"),
            "health_interval_s must be 0 or more and at most 86400 seconds",
        ),
    ] {
        // The error is the TOML reader's: it quotes the table, `[players.qwen]`.
        config_refused(
            &dir,
            name,
            &table(&lines),
            "qwen",
            &["[players.qwen]", says],
        );
    }
    let judge = "[rewards.weights]\nterminal = 1.0\njudge = 1.0\n\
                 [rewards.judge]\nendpoint = \"not a url\"\nmodel = \"j\"\n";
    config_refused(
        &dir,
        "judge",
        judge,
        "rule:tough",
        &["[rewards.judge] endpoint `not a url` is not an http(s) URL"],
    );
    let judge = judge.replace("not a url", "http://127.0.0.1:9/v1") + "temperature = nan\n";
    config_refused(
        &dir,
        "judge-temperature",
        &judge,
        "rule:tough",
        &["[rewards.judge] temperature must be a finite number from 0 to 2; it is NaN"],
    );
    let reward_model = "[rewards.weights]\nterminal = 1.0\nreward_model = 1.0\n\
                        [rewards.reward_model]\nurl = \"http://127.0.0.1:99999/score\"\n";
    config_refused(
        &dir,
        "reward-model",
        reward_model,
        "rule:tough",
        &["[rewards.reward_model] url `http://127.0.0.1:99999/score` is not an http(s) URL"],
    );
}

#[test]
fn a_player_spec_with_a_bad_url_is_refused_before_any_episode() {
    let dir = temp_dir("extreme-spec");
    for (spec, says) in [
        ("openai:m@http://127.0.0.1:99999/v1", "invalid port number"),
        ("openai:m@http://127.0.0.1:9/v1,ftp://b/v1", "`ftp://b/v1`"),
    ] {
        let mut args = run_args(&dir, &[]);
        args[6] = spec.to_string();
        refused(&args, 1, &[&format!("player `{spec}`"), says]);
        assert!(
            !dir.join("episodes.jsonl").exists(),
            "{spec}: nothing was started"
        );
    }
}
