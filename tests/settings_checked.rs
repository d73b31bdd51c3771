//! Settings `dealgym serve` accepts are honoured or refused where they enter, naming the key
//! or flag, never passed on to fail later or ignored (issue 42, items 10, 14, 16, and the
//! `[scenarios]` table of a server's config).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use crate::common::{
    dealgym_cli, error_message as message, post_status as post, scenario_files, temp_dir,
};
use dealgym::run::Selection;
use dealgym::scenario::{load_scenarios, LoadOptions};
use dealgym::serve::{ServeOptions, Server};

fn options(dir: &Path) -> ServeOptions {
    ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        scenario_files(dir, 20),
        dir.join("serve.jsonl"),
    )
}

#[tokio::test]
async fn a_bad_default_opponent_is_refused_at_startup_not_blamed_on_each_client() {
    // Item 14: the server started, and every reset without an opponent then failed with a
    // 422 saying the client's opponent was wrong.
    let dir = temp_dir("checked-opponent");
    for (spec, says) in [
        ("rule:no_such_rule", "no_such_rule"),
        ("nobody", "nobody"),
        ("script:/no/such/file.json", "/no/such/file.json"),
    ] {
        let mut o = options(&dir);
        o.opponent = spec.to_string();
        let e = Server::start(o).await.err().expect("refused at startup");
        let e = format!("{e:#}");
        assert!(e.contains("--opponent") && e.contains(says), "{spec}: {e}");
    }
    // From the command line: a non-zero exit naming the flag, before anything is served.
    let out = dealgym_cli([
        "serve",
        "--port",
        "0",
        "--scenarios",
        &dir.join("casino.jsonl").display().to_string(),
        "--log",
        &dir.join("cli.jsonl").display().to_string(),
        "--opponent",
        "rule:no_such_rule",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("--opponent") && stderr.contains("no_such_rule"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // A good one still starts, and its resets play.
    let mut o = options(&dir);
    o.opponent = "rule:tough".into();
    o.log = dir.join("good.jsonl");
    let server = Server::start(o).await.unwrap();
    let (status, answer) = post(&server, "/v1/episodes", &json!({"family": "casino"})).await;
    assert_eq!(status, 201, "{answer}");
    server.shutdown().await;
}

#[tokio::test]
async fn a_client_setting_past_its_bound_is_refused_naming_the_key() {
    let dir = temp_dir("checked-client");
    let mut o = options(&dir);
    o.policy.endpoints = vec!["*".into()];
    let server = Server::start(o).await.unwrap();
    // Item 16: a no-deal value of 1e308 made ρ near 1e306 and the intervals NaN.
    let (status, answer) = post(
        &server,
        "/v1/episodes",
        &json!({"family": "casino", "rules": {"no_deal_value": 1e308}}),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        message(&answer).contains("no_deal_value must be a finite number from -1e9 to 1e9"),
        "{answer}"
    );
    // Item 10: a rollout learner's `extra_body` may not replace what the server builds from
    // the checked settings (`max_tokens`, `n`, `model`).
    for (key, value) in [
        ("max_tokens", json!(1u64 << 40)),
        ("n", json!(512)),
        ("model", json!("another")),
    ] {
        let (status, answer) = post(
            &server,
            "/v1/rollouts",
            &json!({
                "scenarios": {"family": "casino", "count": 1},
                "learner": {
                    "endpoint": "http://127.0.0.1:9/v1",
                    "model": "m",
                    "sampling": {"extra_body": {key: value}},
                },
            }),
        )
        .await;
        assert_eq!(status, 422, "{key}: {answer}");
        assert!(
            message(&answer).contains(&format!("extra_body.{key}")),
            "{key}: {answer}"
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_prompt_the_servers_templates_cannot_render_is_the_servers_error_not_the_clients() {
    // Item 19: a reset whose system prompt the operator's template (`prompts_dir`) failed to
    // render was a 422 VALIDATION_ERROR, as if the client's request were wrong.
    let dir = temp_dir("checked-prompts");
    let prompts = dir.join("prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(prompts.join("casino_agent.j2"), "{{ no_such_function() }}").unwrap();
    let mut o = options(&dir);
    o.prompts = std::sync::Arc::new(dealgym::game::Prompts::with_overrides(&prompts).unwrap());
    let server = Server::start(o).await.unwrap();
    let (status, answer) = post(&server, "/v1/episodes", &json!({"family": "casino"})).await;
    assert_eq!(status, 500, "{answer}");
    assert_eq!(answer["error"]["code"], "EXECUTION_ERROR", "{answer}");
    assert!(
        message(&answer).contains("the server's prompt templates")
            && message(&answer).contains("casino_agent.j2"),
        "{answer}"
    );
    server.shutdown().await;
}

/// The ids of the scenarios `selection` keeps of `file`, as `run` would play them.
fn selected(file: &Path, selection: &Selection) -> Vec<String> {
    let all = load_scenarios(file, LoadOptions::default())
        .unwrap()
        .scenarios;
    selection
        .apply(&file.display().to_string(), all)
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect()
}

fn casino_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl")
}

#[tokio::test]
async fn a_servers_scenario_selection_is_the_one_run_makes() {
    // `[scenarios] split`, `sample` and `limit` were read from a server's config and ignored:
    // it served every scenario of its files.
    let dir = temp_dir("checked-select");
    let casino = casino_file();
    let selection = Selection {
        split: Some("test".into()),
        sample: Some(dealgym::run::Sample { size: 12, seed: 5 }),
        limit: Some(7),
        ..Selection::default()
    };
    let mut o = options(&dir);
    o.scenarios = vec![casino.clone()];
    o.selection = selection.clone();
    let server = Server::start(o).await.unwrap();
    let served: Vec<String> = server
        .state
        .hub
        .catalog
        .scenarios
        .iter()
        .map(|s| s.id.clone())
        .collect();
    assert_eq!(served, selected(&casino, &selection));
    assert_eq!(served.len(), 7);
    server.shutdown().await;
    // A selection no file can give is refused at startup, naming the file.
    let mut o = options(&dir);
    o.scenarios = vec![casino.clone()];
    o.log = dir.join("bad-split.jsonl");
    o.selection = Selection {
        split: Some("no-such-split".into()),
        ..Selection::default()
    };
    let e = format!("{:#}", Server::start(o).await.err().expect("refused"));
    assert!(
        e.contains("no-such-split") && e.contains("casino.jsonl"),
        "{e}"
    );
}

#[test]
fn a_servers_config_scenarios_table_chooses_what_it_serves() {
    // From the command line: `[scenarios]` of `--config` (its sample seeded by the config's
    // `seed`, as `run` seeds it) is what the server says it serves.
    let dir = temp_dir("checked-select-cli");
    let config = dir.join("serve.toml");
    std::fs::write(
        &config,
        "seed = 3\n[scenarios]\nsplit = \"test\"\nsample = 9\nlimit = 5\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["serve", "--port", "0", "--config"])
        .arg(&config)
        .arg("--scenarios")
        .arg(casino_file())
        .arg("--log")
        .arg(dir.join("serve.jsonl"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("http://") {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("(5 scenarios;"), "{line}");
}

#[test]
fn a_table_run_refuses_a_split_or_a_sample_it_cannot_take() {
    // `run` over a table file (n-party games) takes `--limit` and refuses `--scenario-split` and
    // `--sample`, naming the file, as the server does: a table scenario has no split and tables
    // are not sampled. Before, both were accepted and every table of the file was played.
    let dir = temp_dir("checked-table-select");
    let table = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/deliberation.jsonl");
    for flags in [
        ["--scenario-split", "test"].as_slice(),
        ["--sample", "2"].as_slice(),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_dealgym"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .arg("run")
            .arg("--scenarios")
            .arg(&table)
            .args(flags)
            .arg("--out")
            .arg(dir.join("tables.jsonl"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} was accepted: {stderr}");
        assert!(
            stderr.contains("deliberation.jsonl") && stderr.contains(flags[0]),
            "{flags:?}: {stderr}"
        );
    }
}

#[test]
fn serve_starts_under_every_preset_with_its_default_scenarios() {
    // A preset's `[scenarios] split` or `sample` with no --scenarios: the server's default
    // list is every family's file, and the files that cannot take the choice (ahp has no
    // split, a table file neither split nor sample) are left out, said — not the whole server
    // refused. Before, `serve --preset casino-harness-eval` and `--preset batna-eval` did not
    // start at all.
    let dir = temp_dir("checked-presets-serve");
    let list = Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .args(["presets", "list"])
        .output()
        .unwrap();
    let names: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    assert!(names.len() >= 10, "{names:?}");
    let mut started = Vec::new();
    for name in names {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dealgym"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["serve", "--port", "0", "--preset", &name, "--log"])
            .arg(dir.join(format!("{name}.jsonl")))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let (mut line, mut said) = (String::new(), String::new());
        while !line.contains("http://") {
            line.clear();
            if stderr.read_line(&mut line).unwrap() == 0 {
                break;
            }
            said.push_str(&line);
        }
        let _ = child.kill();
        let _ = child.wait();
        if said.contains("needs its endpoint in your --config") {
            // A preset that weights a judge or a reward model needs its endpoint from the
            // user's config: refused for that, as it should be, before any scenario is read.
            continue;
        }
        assert!(
            line.contains("http://"),
            "serve --preset {name} did not start: {said}"
        );
        started.push(name);
    }
    for name in ["casino-harness-eval", "batna-eval"] {
        assert!(started.iter().any(|s| s == name), "{name}: {started:?}");
    }
}
