//! Sharding and `dealgym merge`, through the binary: n shards of a run (chosen by `--shard`,
//! a Slurm array's variables or a Kubernetes Indexed Job's) are the unsharded run's records,
//! byte for byte but for timing; an eval shards the same way; merge joins shards and catches a
//! missing and a duplicated episode.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn dealgym() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dealgym"));
    // A scheduler's variables in the test's own environment must not pick a shard.
    for var in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_MIN",
        "JOB_COMPLETION_INDEX",
        "DEALGYM_SHARD_COUNT",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dealgym-merge-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn scenarios() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl")
}

/// `dealgym run` of 7 scenarios × groups of 3 with rule players, into `out`.
fn run(out: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = dealgym();
    cmd.arg("run")
        .arg("--scenarios")
        .arg(scenarios())
        .args([
            "--limit",
            "7",
            "--group-size",
            "3",
            "--seed",
            "4",
            "--quiet",
        ])
        .args(["--learner", "rule:linear", "--opponent", "rule:boulware"])
        .arg("--out")
        .arg(out)
        .args(extra)
        .envs(env.iter().copied());
    let output = cmd.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Each line of `path` as written (timing dropped), by (run id, episode id).
fn records(path: &Path) -> BTreeMap<(String, String), String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            v.as_object_mut().unwrap().remove("timing");
            let key = (
                v["run_id"].as_str().unwrap().to_string(),
                v["episode_id"].as_str().unwrap().to_string(),
            );
            (key, v.to_string())
        })
        .collect()
}

/// Every record of `files`, checked to appear once.
fn union(files: &[PathBuf]) -> BTreeMap<(String, String), String> {
    let mut all = BTreeMap::new();
    for f in files {
        for (k, v) in records(f) {
            assert!(all.insert(k.clone(), v).is_none(), "{k:?} in two shards");
        }
    }
    all
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn shards_from_the_flag_slurm_or_kubernetes_are_the_unsharded_run() {
    let d = dir("run");
    let whole = d.join("whole.jsonl");
    run(&whole, &[], &[]);
    let expected = records(&whole);
    assert_eq!(expected.len(), 21);

    // --shard i/3
    let by_flag: Vec<PathBuf> = (0..3)
        .map(|i| {
            let out = d.join(format!("flag-{i}.jsonl"));
            let o = run(&out, &["--shard", &format!("{i}/3")], &[]);
            assert!(
                stderr(&o).contains(&format!(
                    "of shard {i}/3 (from --shard); 21 in the whole plan"
                )),
                "{}",
                stderr(&o)
            );
            out
        })
        .collect();
    let sizes: Vec<usize> = by_flag.iter().map(|f| records(f).len()).collect();
    assert_eq!(sizes, [9, 6, 6], "groups 0,3,6 | 1,4 | 2,5 of 3 members");
    assert_eq!(union(&by_flag), expected);

    // A Slurm array --array=1-2 (two tasks, ids from 1).
    let slurm: Vec<PathBuf> = ["1", "2"]
        .iter()
        .map(|id| {
            let out = d.join(format!("slurm-{id}.jsonl"));
            let env = [
                ("SLURM_ARRAY_TASK_ID", *id),
                ("SLURM_ARRAY_TASK_MIN", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "2"),
            ];
            let o = run(&out, &[], &env);
            assert!(
                stderr(&o).contains("(from SLURM_ARRAY_TASK_ID)"),
                "{}",
                stderr(&o)
            );
            out
        })
        .collect();
    assert_eq!(union(&slurm), expected);

    // A Kubernetes Indexed Job of 4 completions: the count from the flag or the variable.
    let k8s: Vec<PathBuf> = (0..4)
        .map(|i| {
            let out = d.join(format!("k8s-{i}.jsonl"));
            let index = i.to_string();
            if i % 2 == 0 {
                run(
                    &out,
                    &["--shard-count", "4"],
                    &[("JOB_COMPLETION_INDEX", &index)],
                );
            } else {
                run(
                    &out,
                    &[],
                    &[
                        ("JOB_COMPLETION_INDEX", &index),
                        ("DEALGYM_SHARD_COUNT", "4"),
                    ],
                );
            }
            out
        })
        .collect();
    assert_eq!(union(&k8s), expected);

    // The shards merge into the whole run, checked against the plan.
    let merged = d.join("merged.jsonl");
    let o = dealgym()
        .arg("merge")
        .arg(&merged)
        .args(&k8s)
        .arg("--scenarios")
        .arg(scenarios())
        .args(["--limit", "7", "--group-size", "3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(records(&merged), expected);
    assert!(
        stderr(&o).contains("21 episodes of 1 runs"),
        "{}",
        stderr(&o)
    );

    // A bad scheduler value is named.
    let o = dealgym()
        .args(["run", "--scenarios"])
        .arg(scenarios())
        .args([
            "--learner",
            "rule:linear",
            "--opponent",
            "rule:linear",
            "--out",
        ])
        .arg(d.join("bad.jsonl"))
        .env("JOB_COMPLETION_INDEX", "4")
        .env("DEALGYM_SHARD_COUNT", "4")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("JOB_COMPLETION_INDEX: shard index 4 is not below the shard count 4"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_eval_shards_whole_groups_across_every_pairing() {
    let d = dir("eval");
    let eval = |out: &Path, extra: &[&str]| {
        let o = dealgym()
            .arg("eval")
            .arg("--scenarios")
            .arg(scenarios())
            .args(["--limit", "5", "--group-size", "2", "--quiet"])
            .args([
                "--player",
                "lin=rule:linear",
                "--player",
                "con=rule:conceder",
            ])
            .args(["--opponent", "tough=rule:tough", "--no-baseline"])
            .arg("--out")
            .arg(out)
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    };
    let whole = d.join("whole.jsonl");
    eval(&whole, &[]);
    let expected = records(&whole);
    assert_eq!(expected.len(), 20, "2 pairings × 5 groups × 2");
    let shards: Vec<PathBuf> = (0..2)
        .map(|i| {
            let out = d.join(format!("s{i}.jsonl"));
            eval(&out, &["--shard", &format!("{i}/2")]);
            out
        })
        .collect();
    for s in &shards {
        let runs: std::collections::BTreeSet<String> =
            records(s).keys().map(|(run, _)| run.clone()).collect();
        assert_eq!(runs.len(), 2, "every pairing plays in every shard");
    }
    assert_eq!(union(&shards), expected);
    let merged = d.join("merged.jsonl");
    let o = dealgym()
        .arg("merge")
        .arg(&merged)
        .args(&shards)
        .args(["--expect", "10", "--group-size", "2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(records(&merged), expected);
}

#[test]
fn merge_catches_a_missing_and_a_duplicated_episode() {
    let d = dir("catch");
    let shards: Vec<PathBuf> = (0..2)
        .map(|i| {
            let out = d.join(format!("s{i}.jsonl"));
            run(&out, &["--shard", &format!("{i}/2")], &[]);
            out
        })
        .collect();
    // Shard 0 loses its first episode; shard 1 holds one of its episodes twice.
    let text = std::fs::read_to_string(&shards[0]).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let lost: serde_json::Value = serde_json::from_str(first).unwrap();
    let lost = lost["episode_id"].as_str().unwrap().to_string();
    std::fs::write(&shards[0], rest).unwrap();
    let text = std::fs::read_to_string(&shards[1]).unwrap();
    let again = text.lines().nth(2).unwrap();
    let twice: serde_json::Value = serde_json::from_str(again).unwrap();
    let twice = twice["episode_id"].as_str().unwrap().to_string();
    std::fs::write(&shards[1], format!("{text}{again}\n")).unwrap();

    let merged = d.join("merged.jsonl");
    let merge = |extra: &[&str]| {
        dealgym()
            .arg("merge")
            .arg(&merged)
            .args(&shards)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = merge(&[
        "--scenarios",
        scenarios().to_str().unwrap(),
        "--limit",
        "7",
        "--group-size",
        "3",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("missing episodes: 1\n"), "{err}");
    assert!(err.contains(&format!(" {lost}\n")), "{err}");
    assert!(
        err.contains("duplicated episodes (written once): 1\n"),
        "{err}"
    );
    assert!(err.contains(&format!(" {twice} (again in ")), "{err}");
    assert!(err.contains("s1.jsonl: 10 episodes, 1 duplicates"), "{err}");
    assert_eq!(records(&merged).len(), 20, "each episode written once");

    // The output is refused, then replaced with --force; --expect finds the same hole (the
    // group size read from the files).
    let o = merge(&["--expect", "21"]);
    assert!(stderr(&o).contains("exists"), "{}", stderr(&o));
    let o = merge(&["--expect", "21", "--force"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&format!(" {lost}\n")), "{}", stderr(&o));

    // A conflicting copy (same id, other content) and another run's file are named too.
    // (s1 holds that episode twice: both copies conflict with the changed one.)
    let conflict = d.join("conflict.jsonl");
    let mut changed: serde_json::Value = serde_json::from_str(again).unwrap();
    changed["rewards"]["learner"] = serde_json::json!(0.123);
    std::fs::write(&conflict, format!("{changed}\n")).unwrap();
    let o = dealgym()
        .args(["merge", "--force"])
        .arg(&merged)
        .arg(&conflict)
        .arg(&shards[1])
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("conflicting episodes (same id, other content; the first is written): 2\n"),
        "{err}"
    );
    let other = d.join("other.jsonl");
    run(&other, &["--shard", "0/2", "--max-rounds", "3"], &[]);
    let o = dealgym()
        .args(["merge", "--force"])
        .arg(&merged)
        .arg(&shards[0])
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("run ids disagree"), "{}", stderr(&o));
    let o = dealgym()
        .args(["merge", "--force", "--allow-mixed"])
        .arg(&merged)
        .arg(&shards[0])
        .arg(&other)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
}
