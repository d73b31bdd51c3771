//! `dealgym run` as a process: killed mid-way (SIGKILL, and Ctrl-C), then resumed, ends with
//! every episode exactly once; an existing file is never appended to without `--resume`.

use crate::common;

use common::{out_file, wait_for_lines};

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use dealgym_mock::{MockConfig, MockServer};

fn dealgym() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dealgym"))
}

fn run_args(cmd: &mut Command, url: &str, out: &Path) {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl");
    cmd.arg("run")
        .arg("--scenarios")
        .arg(scenarios)
        .args([
            "--limit",
            "15",
            "--group-size",
            "2",
            "--concurrency",
            "3",
            "--seed",
            "5",
            "--quiet",
        ])
        .arg("--learner")
        .arg(format!("openai:mock@{url}"))
        .args(["--opponent", "rule:boulware", "--out"])
        .arg(out);
}

fn episode_ids(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("a broken line ({e})"));
            v["episode_id"].as_str().unwrap().to_string()
        })
        .collect()
}

fn resume(url: &str, out: &Path) -> std::process::Output {
    let mut cmd = dealgym();
    run_args(&mut cmd, url, out);
    cmd.arg("--resume").output().unwrap()
}

fn assert_complete(out: &Path) {
    let ids = episode_ids(out);
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(ids.len(), 30, "15 scenarios × 2 members");
    assert_eq!(unique.len(), 30, "every episode exactly once");
}

/// A mock with 40 ms latency and a `dealgym run` against it that has written a few episodes.
async fn start_slow_run(name: &str) -> (MockServer, PathBuf, Child) {
    let config = MockConfig {
        latency_ms: 40,
        ..MockConfig::default()
    };
    let server = MockServer::start(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)), config)
        .await
        .unwrap();
    let out = out_file(name);
    let mut cmd = dealgym();
    run_args(&mut cmd, &server.base_url(), &out);
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_lines(&mut child, &out, 4);
    (server, out, child)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_then_resumed_gives_every_episode_once() {
    let (server, out, mut child) = start_slow_run("kill").await;
    let url = server.base_url();
    child.kill().unwrap();
    child.wait().unwrap();
    // Simulate a write cut off by the kill.
    let mut text = std::fs::read_to_string(&out).unwrap();
    text.push_str("{\"schema\":1,\"run_id\":\"run-");
    std::fs::write(&out, text).unwrap();

    let refused = {
        let mut cmd = dealgym();
        run_args(&mut cmd, &url, &out);
        cmd.output().unwrap()
    };
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--resume"));

    let resumed = tokio::task::spawn_blocking({
        let (url, out) = (url.clone(), out.clone());
        move || resume(&url, &out)
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(stderr.contains("removed a cut-off last line"), "{stderr}");
    assert_complete(&out);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_leaves_whole_lines_and_resume_finishes() {
    let (server, out, child) = start_slow_run("sigint").await;
    let url = server.base_url();
    // What Ctrl-C sends.
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(sent, 0);
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("interrupted"));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.ends_with('\n'), "no half line");
    let before = episode_ids(&out).len();
    assert!(before < 30);
    let resumed = tokio::task::spawn_blocking({
        let (url, out) = (url.clone(), out.clone());
        move || resume(&url, &out)
    })
    .await
    .unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(String::from_utf8_lossy(&resumed.stderr).contains(&format!("{before} already there")));
    assert_complete(&out);
    server.stop();
}

#[test]
fn demo_runs_every_family_with_no_setup() {
    let out = out_file("demo");
    let output = dealgym()
        .args(["demo", "--per-family", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for family in crate::common::FAMILIES {
        assert!(table.contains(&format!("| {family} | 2 |")), "{table}");
    }
    assert_eq!(episode_ids(&out).len(), 2 * crate::common::FAMILIES.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_players_personas_and_scripts() {
    let server = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig::default(),
    )
    .await
    .unwrap();
    let dir = out_file("config").parent().unwrap().to_path_buf();
    let config = dir.join("run.toml");
    std::fs::write(
        &config,
        format!(
            r#"
seed = 9
group_size = 2
[episode]
max_rounds = 4
first_mover = "opponent"
[personas.weights]
cooperative = 1.0
uncompromising = 1.0
[players.local]
endpoint = "{}"
model = "mock-7b"
temperature = 0.6
max_tokens = 300
extra_body = {{ chat_template_kwargs = {{ enable_thinking = false }} }}
"#,
            server.base_url()
        ),
    )
    .unwrap();
    let script = dir.join("script.json");
    std::fs::write(&script, r#"["Thought: open\nTalk: Hello!\nAction: [SUBMIT_DEAL] price:10", "Thought: stop\nTalk: Bye.\nAction: [WALK_AWAY]"]"#).unwrap();
    let out = dir.join("episodes.jsonl");
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/craigslist.jsonl");
    let output = tokio::task::spawn_blocking({
        let (config, script, out) = (config.clone(), script.clone(), out.clone());
        move || {
            dealgym()
                .arg("run")
                .arg("--scenarios")
                .arg(scenarios)
                .args(["--limit", "4", "--learner", "local", "--quiet", "--config"])
                .arg(config)
                .arg("--opponent")
                .arg(format!("script:{}", script.display()))
                .arg("--out")
                .arg(out)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut records: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Records are written as episodes end; put them back in plan order.
    records.sort_by_key(|r| r["episode_id"].as_str().unwrap().to_string());
    assert_eq!(records.len(), 8);
    let mut personas = HashSet::new();
    for r in &records {
        let persona = r["seats"]["learner"]["persona"]
            .as_str()
            .expect("the LLM seat has a persona");
        personas.insert(persona.to_string());
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("prompts/personas/{persona}.txt")),
        )
        .unwrap();
        assert!(r["seats"]["learner"]["system_prompt"]
            .as_str()
            .unwrap()
            .contains(text.trim()));
        assert!(
            r["seats"]["opponent"]["persona"].is_null(),
            "scripted players take no persona"
        );
        assert_eq!(r["seats"]["learner"]["model"], "mock-7b");
        assert_eq!(r["first_mover"], "opponent");
        assert_eq!(r["outcome"]["kind"], "walk_away");
        assert_eq!(
            r["turns"][0]["raw"],
            "Thought: open\nTalk: Hello!\nAction: [SUBMIT_DEAL] price:10"
        );
    }
    for pair in records.chunks(2) {
        assert_eq!(pair[0]["group_id"], pair[1]["group_id"]);
        assert_eq!(
            pair[0]["seats"]["learner"]["persona"], pair[1]["seats"]["learner"]["persona"],
            "a group shares its persona"
        );
    }
    assert!(!personas.is_empty());
    let broken = dir.join("broken.toml");
    std::fs::write(&broken, "[episode]\nmax_round = 3\n").unwrap();
    let output = dealgym()
        .args([
            "run",
            "--scenarios",
            "x.jsonl",
            "--learner",
            "rule:linear",
            "--opponent",
            "rule:linear",
            "--out",
            "y.jsonl",
            "--config",
        ])
        .arg(&broken)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && err.contains("broken.toml") && err.contains("max_round"),
        "{err}"
    );
    server.stop();
}
