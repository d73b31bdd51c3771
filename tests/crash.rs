//! Crash safety of `dealgym run` as a real process: killed with SIGKILL again and again and
//! resumed each time, a run ends with every planned episode exactly once, every line whole and
//! the records of an uninterrupted run (timing aside). SIGTERM and SIGINT stop new episodes,
//! let those in flight finish within the grace period (or abandon them at its end, or at a
//! second signal), and exit 143 and 130; resuming finishes the plan.

use crate::common;

use common::{out_file, threaded_mock, wait_until, whole_lines, ThreadedMock};

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use dealgym_mock::MockConfig;

fn mock(latency_ms: u64) -> ThreadedMock {
    threaded_mock(MockConfig {
        latency_ms,
        ..MockConfig::default()
    })
}

/// `dealgym run --resume` of `limit` CaSiNo scenarios × groups of 4 against the mock.
fn run_cmd(url: &str, out: &Path, limit: usize, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dealgym"));
    cmd.arg("run")
        .arg("--scenarios")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl"))
        .args(["--limit", &limit.to_string(), "--group-size", "4"])
        .args(["--seed", "11", "--quiet", "--resume"])
        .arg("--learner")
        .arg(format!("openai:mock@{url}"))
        .args(["--opponent", "rule:boulware", "--out"])
        .arg(out)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for var in ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"] {
        cmd.env_remove(var);
    }
    cmd
}

fn finish(cmd: &mut Command) -> Output {
    let output = cmd.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Each record by episode id, timing dropped; every line must parse and be whole, and no id
/// may appear twice.
fn records(path: &Path) -> BTreeMap<String, serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a cut-off last line"
    );
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {} is not a record: {e}", n + 1));
        v.as_object_mut().unwrap().remove("timing");
        let id = v["episode_id"].as_str().unwrap().to_string();
        assert!(out.insert(id.clone(), v).is_none(), "{id} twice");
    }
    out
}

#[test]
fn sigkill_at_many_moments_then_resume_gives_the_uninterrupted_run() {
    const LIMIT: usize = 60; // × 4 = 240 episodes
    let server = mock(3);
    let reference = out_file("kill-reference");
    finish(&mut run_cmd(
        &server.url,
        &reference,
        LIMIT,
        &["--concurrency", "16"],
    ));
    let expected = records(&reference);
    assert_eq!(expected.len(), 4 * LIMIT);

    let out = out_file("crash-kill");
    // Kill points: right after start (maybe before the first write), then after more and more
    // whole lines; each life resumes the last.
    let kills: [usize; 6] = [0, 7, 40, 41, 120, 190];
    for (life, &at) in kills.iter().enumerate() {
        let mut child = run_cmd(&server.url, &out, LIMIT, &["--concurrency", "16"])
            .spawn()
            .unwrap();
        if at == 0 {
            std::thread::sleep(Duration::from_millis(30));
        } else {
            wait_until(&mut child, "it could be killed", || whole_lines(&out) >= at);
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let text = std::fs::read(&out).unwrap_or_default();
        let whole = text.iter().filter(|b| **b == b'\n').count();
        eprintln!("life {life}: killed at {whole} whole lines");
        assert!(whole < 4 * LIMIT, "life {life}: killed after the end");
        if life == 3 {
            // A kill in the middle of a write: what `write_all` may leave.
            let last = std::fs::read_to_string(&reference).unwrap();
            let line = last.lines().next().unwrap();
            let mut cut = text.clone();
            cut.extend_from_slice(&line.as_bytes()[..line.len() / 2]);
            std::fs::write(&out, cut).unwrap();
        }
    }
    let finished = finish(&mut run_cmd(
        &server.url,
        &out,
        LIMIT,
        &["--concurrency", "16"],
    ));
    let stderr = String::from_utf8_lossy(&finished.stderr);
    assert!(
        stderr.contains(&format!("({} planned", 4 * LIMIT)),
        "{stderr}"
    );
    let got = records(&out);
    assert_eq!(got.len(), 4 * LIMIT, "every planned episode");
    assert_eq!(got, expected, "the records of the uninterrupted run");
}

/// A run against a mock with `latency_ms`, stopped by `signals` once the mock has had a few
/// requests (the run is then playing, its handlers installed).
fn signalled(
    name: &str,
    latency_ms: u64,
    extra: &[&str],
    signals: &[i32],
) -> (Output, PathBuf, ThreadedMock, usize) {
    let server = mock(latency_ms);
    let out = out_file(name);
    let mut child = run_cmd(
        &server.url,
        &out,
        8,
        &[&["--concurrency", "6"], extra].concat(),
    )
    .spawn()
    .unwrap();
    let stats = server.stats.clone();
    wait_until(&mut child, "a signal", || {
        stats.requests.load(Ordering::Relaxed) >= 12
    });
    let before = whole_lines(&out);
    for (i, &signal) in signals.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    }
    let output = child.wait_with_output().unwrap();
    (output, out, server, before)
}

/// Resume and check the plan (8 groups × 4) ends up complete, each episode once.
fn resume_completes(server: &ThreadedMock, out: &Path) {
    finish(&mut run_cmd(&server.url, out, 8, &["--concurrency", "6"]));
    let got = records(out);
    let ids: HashSet<&String> = got.keys().collect();
    assert_eq!(ids.len(), 32);
}

#[test]
fn sigterm_lets_episodes_in_flight_finish_then_exits_143() {
    let (output, out, server, before) = signalled("term", 25, &[], &[libc::SIGTERM]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert!(
        stderr.contains("SIGTERM: starting no new episodes"),
        "{stderr}"
    );
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    assert!(stderr.contains(" 0 abandoned"), "{stderr}");
    let after = records(&out).len();
    assert!(
        after > before,
        "episodes in flight were finished: {before} → {after}"
    );
    assert!(after < 32, "no new episode started: {after}");
    resume_completes(&server, &out);
}

#[test]
fn sigint_abandons_what_the_grace_period_cannot_finish_then_exits_130() {
    let started = Instant::now();
    let (output, out, server, _) = signalled("int", 150, &["--grace-s", "0.1"], &[libc::SIGINT]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("grace period over"), "{stderr}");
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
    assert!(!stderr.contains(" 0 abandoned"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20));
    records(&out);
    resume_completes(&server, &out);
}

#[test]
fn a_second_signal_abandons_at_once() {
    let (output, out, server, _) = signalled("twice", 150, &[], &[libc::SIGTERM, libc::SIGTERM]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert!(
        stderr.contains("SIGTERM: abandoning the episodes in flight"),
        "{stderr}"
    );
    assert!(!stderr.contains(" 0 abandoned"), "{stderr}");
    records(&out);
    resume_completes(&server, &out);
}
