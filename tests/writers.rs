//! Who may write an output file, and what a bug inside an episode leaves, through the real
//! binary: a second `run --resume --out F` (a requeued job while the first still runs), an
//! `annotate` or a `merge` into F is refused at once naming the first's pid, and F ends with
//! every episode once; an episode that panics becomes an `error` record saying so, counted,
//! and the run exits 70.

use crate::common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{out_file, read_log, threaded_mock, wait_for_lines, whole_lines};
use dealgym_mock::MockConfig;

const CASINO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/casino.jsonl");

/// `dealgym run --resume` of `limit` CaSiNo scenarios × groups of 4, two episodes at a time,
/// the learner at the mock `url`.
fn run_cmd(url: &str, out: &Path, limit: usize) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dealgym"));
    cmd.args(["run", "--scenarios", CASINO])
        .args(["--limit", &limit.to_string(), "--group-size", "4"])
        .args(["--concurrency", "2", "--seed", "5", "--quiet", "--resume"])
        .arg("--learner")
        .arg(format!("openai:mock@{url}"))
        .args(["--opponent", "rule:boulware", "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for var in [
        "SLURM_ARRAY_TASK_ID",
        "JOB_COMPLETION_INDEX",
        "DEALGYM_PANIC_IN_EPISODE",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// The episode ids of `path`, asserting none is there twice.
fn distinct_ids(path: &Path) -> HashSet<String> {
    let mut ids = HashSet::new();
    for record in read_log(path) {
        assert!(
            ids.insert(record.episode_id.clone()),
            "{} twice",
            record.episode_id
        );
    }
    ids
}

/// `output` failed, and its stderr names `file` and the pid holding it.
fn refused_naming(output: &Output, file: &Path, pid: u32) {
    let said = stderr(output);
    assert!(!output.status.success(), "a second writer ran: {said}");
    assert!(said.contains(&file.display().to_string()), "{said}");
    assert!(said.contains("being written by another process"), "{said}");
    assert!(said.contains(&format!("pid {pid}:")), "{said}");
}

#[test]
fn a_second_writer_is_refused_naming_the_first_and_every_episode_is_written_once() {
    const LIMIT: usize = 20; // × 4 = 80 episodes, two at a time
    let server = threaded_mock(MockConfig {
        latency_ms: 30,
        ..MockConfig::default()
    });
    let out = out_file("writers-twice");
    let mut first = run_cmd(&server.url, &out, LIMIT).spawn().unwrap();
    // A line written means the first holds the lock (taken before the file is read).
    wait_for_lines(&mut first, &out, 2);

    let second = run_cmd(&server.url, &out, LIMIT).output().unwrap();
    refused_naming(&second, &out, first.id());

    let annotate = Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .arg("annotate")
        .arg(&out)
        .arg("--endpoint")
        .arg(format!("openai:mock@{}", server.url))
        .arg("--out")
        .arg(&out)
        .args(["--scenarios", CASINO, "--quiet", "--resume"])
        .output()
        .unwrap();
    refused_naming(&annotate, &out, first.id());

    let copy = PathBuf::from(format!("{}.copy", out.display()));
    std::fs::copy(&out, &copy).unwrap();
    let merge = Command::new(env!("CARGO_BIN_EXE_dealgym"))
        .args(["merge", "--force"])
        .arg(&out)
        .arg(&copy)
        .output()
        .unwrap();
    refused_naming(&merge, &out, first.id());

    // Killed, the first holds nothing: a resume finishes the plan, each episode once.
    first.kill().unwrap();
    first.wait().unwrap();
    let resumed = run_cmd(&server.url, &out, LIMIT).output().unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(distinct_ids(&out).len(), LIMIT * 4);
    assert_eq!(whole_lines(&out), LIMIT * 4);
}

#[test]
fn a_panic_inside_an_episode_is_an_error_record_counted_and_exit_70() {
    let server = threaded_mock(MockConfig::default());
    let out = out_file("writers-panic");
    let output = run_cmd(&server.url, &out, 2)
        .env("DEALGYM_PANIC_IN_EPISODE", "g1-m2")
        .output()
        .unwrap();
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(70), "{said}");
    assert!(
        said.contains("1 episodes ended in an internal error"),
        "{said}"
    );
    assert!(said.contains("8 episodes written"), "none lost: {said}");
    let records = read_log(&out);
    let failed: Vec<_> = records
        .iter()
        .filter(|r| r.outcome.outcome.error_kind == Some(dealgym::game::ErrorCause::Internal))
        .collect();
    assert_eq!(failed.len(), 1, "{said}");
    let line = std::fs::read_to_string(&out).unwrap();
    assert_eq!(line.matches(r#""error_kind":"internal""#).count(), 1);
    let record = failed[0];
    assert_eq!(record.episode_id, "g1-m2");
    assert_eq!(record.outcome.outcome.kind.name(), "error");
    let detail = record.outcome.outcome.detail.as_deref().unwrap();
    assert!(
        detail.starts_with(dealgym::run::INTERNAL_ERROR)
            && detail.contains("injected by DEALGYM_PANIC_IN_EPISODE"),
        "{detail}"
    );
    assert!(record.turns.is_empty() && record.outcome.outcome.by.is_none());
    assert_eq!(distinct_ids(&out).len(), 8);
}

/// Issue 42, item 9: the lock is on the file, not on its name. While a run writes F, a
/// second `run --resume` into a symbolic link to F or into a hard link of F is refused (it
/// would otherwise append every episode a second time), and F ends with every episode once.
#[test]
fn a_second_writer_through_a_link_to_the_file_is_refused() {
    const LIMIT: usize = 20; // × 4 = 80 episodes, two at a time
    let server = threaded_mock(MockConfig {
        latency_ms: 30,
        ..MockConfig::default()
    });
    let out = out_file("writers-links");
    let dir = out.parent().unwrap().to_path_buf();
    let mut first = run_cmd(&server.url, &out, LIMIT).spawn().unwrap();
    wait_for_lines(&mut first, &out, 2);

    let symlink = dir.join("symlink.jsonl");
    std::os::unix::fs::symlink(&out, &symlink).unwrap();
    let hard = dir.join("hard.jsonl");
    std::fs::hard_link(&out, &hard).unwrap();
    for link in [&symlink, &hard] {
        let second = run_cmd(&server.url, link, LIMIT).output().unwrap();
        let said = stderr(&second);
        assert!(
            !second.status.success(),
            "{}: a second writer ran: {said}",
            link.display()
        );
        assert!(said.contains("being written by another process"), "{said}");
        assert!(said.contains(&link.display().to_string()), "{said}");
    }
    // The link through the same name as the first names its pid.
    let second = run_cmd(&server.url, &symlink, LIMIT).output().unwrap();
    assert!(
        stderr(&second).contains(&format!("pid {}:", first.id())),
        "{}",
        stderr(&second)
    );

    let status = first.wait().unwrap();
    assert!(status.success());
    assert_eq!(distinct_ids(&out).len(), LIMIT * 4);
    assert_eq!(whole_lines(&out), LIMIT * 4);
}
