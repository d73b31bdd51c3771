//! `dealgym annotate` against the mock endpoint over real HTTP: 50 CaSiNo dialogues annotated
//! by a process SIGKILLed twice mid-run and resumed give each episode once, each person's turn
//! asked for once (repeats only for requests a kill cut off, never for a cached answer), the
//! cached answers reused exactly, and records `replay --verify` passes; an unusable answer is
//! counted and its Thought left empty; SIGTERM lets the episodes being annotated finish and
//! exits 143.

use crate::common;

use std::collections::{BTreeMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::Ordering;

use common::{read_log, temp_dir, threaded_mock, wait_for_lines, whole_lines, ThreadedMock};
use dealgym::annotate::{annotate, AnnotateOptions, ANSWERS_FILE};
use dealgym::record::EpisodeRecord;
use dealgym_mock::{MockConfig, MockServer};

const CASINO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/casino.jsonl");

/// The first `n` of CaSiNo's people's dialogues (`dealgym dialogues import`), copied into
/// `dir`; `None` (the test returns early, `SKIPPED` printed) where the datasets are absent.
fn people_dialogues(dir: &Path, n: usize) -> Option<PathBuf> {
    let all = common::dialogues("casino")?;
    let text = std::fs::read_to_string(all).unwrap();
    let head: String = text.lines().take(n).map(|l| format!("{l}\n")).collect();
    assert_eq!(head.lines().count(), n, "CaSiNo has {n} people's dialogues");
    let path = dir.join("people.jsonl");
    std::fs::write(&path, head).unwrap();
    Some(path)
}

fn slow_mock(latency_ms: u64) -> ThreadedMock {
    threaded_mock(MockConfig {
        latency_ms,
        ..MockConfig::default()
    })
}

/// `dealgym annotate --resume` of `input` into `out` against the mock at `url`, at most
/// `concurrency` requests at a time.
fn annotate_cmd(url: &str, input: &Path, out: &Path, cache: &Path, concurrency: usize) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dealgym"));
    cmd.arg("annotate")
        .arg(input)
        .arg("--endpoint")
        .arg(format!("openai:mock@{url}"))
        .arg("--out")
        .arg(out)
        .arg("--cache")
        .arg(cache)
        .args([
            "--scenarios",
            CASINO,
            "--quiet",
            "--resume",
            "--concurrency",
            &concurrency.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

fn finish(cmd: &mut Command) -> String {
    let output = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(output.status.success(), "{stderr}");
    stderr
}

/// Each record by (run, episode) id, timing dropped; every line whole, no episode twice.
fn by_episode(path: &Path) -> BTreeMap<String, serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "a cut-off last line");
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        v.as_object_mut().unwrap().remove("timing");
        let id = format!("{}/{}", v["run_id"], v["episode_id"]);
        assert!(out.insert(id.clone(), v).is_none(), "{id} twice");
    }
    out
}

/// The cached answers' keys, each checked to be there once.
fn cached_keys(cache: &Path) -> HashSet<String> {
    let text = std::fs::read_to_string(cache.join(ANSWERS_FILE)).unwrap();
    let mut keys = HashSet::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let key = v["key"].as_str().unwrap().to_string();
        assert!(keys.insert(key.clone()), "answer {key} cached twice");
    }
    keys
}

fn verify_clean(path: &Path) {
    let output = Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .args(["replay", "--verify", "--scenarios", CASINO])
        .arg(path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("replay identically"), "{stdout}");
}

/// People's turns in `records` and those with a thought.
fn people_turns(records: &[EpisodeRecord]) -> (usize, usize) {
    let annotated: Vec<_> = records
        .iter()
        .flat_map(|r| &r.turns)
        .filter_map(|t| t.annotation.as_ref().map(|a| (t, a)))
        .collect();
    let with_thought = annotated
        .iter()
        .filter(|(t, a)| a.unusable.is_none() && t.parsed.thought.as_deref() != Some(""))
        .count();
    (annotated.len(), with_thought)
}

#[test]
fn killed_twice_and_resumed_annotates_each_turn_once_and_replays() {
    const EPISODES: usize = 50;
    let dir = temp_dir("annotate-kill");
    let Some(input) = people_dialogues(&dir, EPISODES) else {
        return;
    };
    let server = slow_mock(15);

    // The reference: one uninterrupted annotation with its own cache.
    let reference = dir.join("reference.jsonl");
    let reference_cache = dir.join("reference.cache");
    finish(&mut annotate_cmd(
        &server.url,
        &input,
        &reference,
        &reference_cache,
        4,
    ));
    let expected = by_episode(&reference);
    assert_eq!(expected.len(), EPISODES);
    let turns = cached_keys(&reference_cache).len();
    assert_eq!(
        server.stats.annotate_requests.load(Ordering::SeqCst) as usize,
        turns,
        "one request per person's turn"
    );
    let (annotated, with_thought) = people_turns(&read_log(&reference));
    assert_eq!((annotated, with_thought), (turns, turns));
    assert!(turns > 2 * EPISODES, "{turns} turns");

    // Killed twice mid-run (SIGKILL), then resumed to the end.
    let out = dir.join("annotated.jsonl");
    let cache = dir.join("annotated.cache");
    let before = server.stats.annotate_requests.load(Ordering::SeqCst) as usize;
    for at in [8, 30] {
        let mut child = annotate_cmd(&server.url, &input, &out, &cache, 4)
            .spawn()
            .unwrap();
        wait_for_lines(&mut child, &out, at);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(whole_lines(&out) < EPISODES, "killed after the end");
    }
    let stderr = finish(&mut annotate_cmd(&server.url, &input, &out, &cache, 4));
    assert!(stderr.contains("already there"), "{stderr}");
    let asked = server.stats.annotate_requests.load(Ordering::SeqCst) as usize - before;

    let got = by_episode(&out);
    assert_eq!(got.len(), EPISODES, "each episode once");
    assert_eq!(got, expected, "the records of the uninterrupted annotation");
    assert_eq!(cached_keys(&cache), cached_keys(&reference_cache));
    // Every turn asked; a repeat only where a kill cut off a request in flight (4 at once).
    assert!(asked >= turns, "{asked} < {turns}");
    assert!(asked <= turns + 2 * 4, "{asked} requests for {turns} turns");
    verify_clean(&out);

    // Annotating again from the cache asks nothing and gives the same records.
    let again = dir.join("again.jsonl");
    let before = server.stats.annotate_requests.load(Ordering::SeqCst);
    let stderr = finish(&mut annotate_cmd(&server.url, &input, &again, &cache, 4));
    assert_eq!(
        server.stats.annotate_requests.load(Ordering::SeqCst),
        before
    );
    assert!(
        stderr.contains(&format!("0 prompts asked, {turns} answered from the cache")),
        "{stderr}"
    );
    assert_eq!(by_episode(&again), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_answer_is_counted_and_its_thought_left_empty() {
    let dir = temp_dir("annotate-unusable");
    let input = {
        let dir = dir.clone();
        tokio::task::spawn_blocking(move || people_dialogues(&dir, 6))
            .await
            .unwrap()
    };
    let Some(input) = input else {
        return;
    };
    let server = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig {
            annotate_unusable_rate: 0.4,
            record_requests: true,
            ..MockConfig::default()
        },
    )
    .await
    .unwrap();
    let out = dir.join("annotated.jsonl");
    let mut options = AnnotateOptions::new(
        input.clone(),
        &format!("openai:mock@{}", server.base_url()),
        out.clone(),
    );
    options.scenarios = vec![PathBuf::from(CASINO)];
    options.progress = false;
    let summary = annotate(&options, std::future::pending()).await.unwrap();

    let injected = server.stats.annotate_unusable.load(Ordering::SeqCst) as usize;
    assert!(injected > 0 && injected < summary.turns, "{injected}");
    assert_eq!(summary.unusable.get("wrong_move"), Some(&injected));
    assert_eq!(summary.unusable_total(), injected);
    assert_eq!(summary.thoughts + injected, summary.turns);
    let records = read_log(&out);
    let unusable: Vec<_> = records
        .iter()
        .flat_map(|r| &r.turns)
        .filter(|t| t.annotation.as_ref().is_some_and(|a| a.unusable.is_some()))
        .collect();
    assert_eq!(unusable.len(), injected);
    for t in &unusable {
        assert_eq!(
            t.annotation.as_ref().unwrap().unusable.as_deref(),
            Some("wrong_move")
        );
        assert_eq!(t.parsed.thought.as_deref(), Some(""), "{}", t.raw);
        // The people's records are in the XML spelling; the annotated turn keeps it.
        assert!(t.raw.starts_with("<thought></thought>\n"), "{}", t.raw);
    }
    assert_eq!(people_turns(&records), (summary.turns, summary.thoughts));
    assert_eq!(server.stats.bodies.lock().unwrap().len(), summary.turns);
    // Annotating the annotated file again: the model is never shown a Thought, the ones just
    // written included.
    let written = records
        .iter()
        .flat_map(|r| &r.turns)
        .filter_map(|t| t.parsed.thought.clone())
        .find(|thought| !thought.is_empty())
        .expect("some thought was written");
    let again = MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig {
            record_requests: true,
            ..MockConfig::default()
        },
    )
    .await
    .unwrap();
    let mut twice = AnnotateOptions::new(
        out.clone(),
        &format!("openai:mock@{}", again.base_url()),
        dir.join("annotated-twice.jsonl"),
    );
    twice.scenarios = vec![PathBuf::from(CASINO)];
    twice.progress = false;
    annotate(&twice, std::future::pending()).await.unwrap();
    let bodies = again.stats.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), summary.turns);
    let shown = |b: &serde_json::Value| -> String {
        b["body"]["messages"]
            .as_array()
            .expect("a chat request")
            .iter()
            .filter_map(|m| m["content"].as_str())
            .collect()
    };
    assert!(bodies.iter().all(|b| !shown(b).is_empty()));
    assert!(
        bodies.iter().all(|b| !shown(b).contains(&written)),
        "{written}"
    );
    // Resuming with another template is refused: one file, one annotator.
    let other = dir.join("other.j2");
    std::fs::write(&other, "DEALGYM ANNOTATE THOUGHT\nMOVE TAKEN: {{ move }}").unwrap();
    options.resume = true;
    options.template = Some(other);
    let err = annotate(&options, std::future::pending())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("was annotated by model mock with template"),
        "{err}"
    );
    tokio::task::spawn_blocking(move || verify_clean(&out))
        .await
        .unwrap();
}

/// An endpoint that fails (after its retries) leaves its episodes unwritten — never a record
/// with thoughts missing for an outage — says so and exits 1; `--resume` against a working
/// endpoint then annotates exactly those.
#[test]
fn an_endpoint_failure_writes_nothing_for_its_episodes_and_resume_asks_again() {
    let dir = temp_dir("annotate-failing");
    let (first, all) = (
        temp_dir("annotate-failing-2"),
        temp_dir("annotate-failing-4"),
    );
    let (Some(first), Some(all)) = (people_dialogues(&first, 2), people_dialogues(&all, 4)) else {
        return;
    };
    let out = dir.join("annotated.jsonl");
    let cache = dir.join("cache");
    let healthy = threaded_mock(MockConfig::default());
    finish(&mut annotate_cmd(&healthy.url, &first, &out, &cache, 4));
    assert_eq!(by_episode(&out).len(), 2);

    let failing = threaded_mock(MockConfig {
        error_rate: 1.0,
        ..MockConfig::default()
    });
    let output = annotate_cmd(&failing.url, &all, &out, &cache, 64)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("2 episodes not written: the endpoint failed after its retries"),
        "{stderr}"
    );
    assert!(stderr.contains("rerun with --resume"), "{stderr}");
    assert_eq!(by_episode(&out).len(), 2, "nothing written for the outage");

    finish(&mut annotate_cmd(&healthy.url, &all, &out, &cache, 4));
    let records = read_log(&out);
    assert_eq!(by_episode(&out).len(), 4);
    let (turns, with_thought) = people_turns(&records);
    assert!(turns > 0);
    assert_eq!(
        with_thought, turns,
        "every turn of the resumed episodes answered"
    );
    verify_clean(&out);
}

#[test]
fn sigterm_lets_the_episodes_being_annotated_finish_then_exits_143() {
    const EPISODES: usize = 12;
    let dir = temp_dir("annotate-term");
    let Some(input) = people_dialogues(&dir, EPISODES) else {
        return;
    };
    let server = slow_mock(60);
    let out = dir.join("annotated.jsonl");
    let cache = dir.join("cache");
    let mut child = annotate_cmd(&server.url, &input, &out, &cache, 4)
        .spawn()
        .unwrap();
    wait_for_lines(&mut child, &out, 2);
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let output: Output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("interrupted by SIGTERM"), "{stderr}");
    assert!(stderr.contains(" 0 abandoned"), "{stderr}");
    let written = by_episode(&out).len();
    assert!(written < EPISODES, "no new episode started: {written}");
    finish(&mut annotate_cmd(&server.url, &input, &out, &cache, 4));
    assert_eq!(by_episode(&out).len(), EPISODES);
    verify_clean(&out);
}
