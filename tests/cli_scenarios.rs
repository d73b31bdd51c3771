//! `dealgym scenarios import|validate|list` through the real binary.

use std::path::{Path, PathBuf};
use std::process::Command;

fn dealgym() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dealgym"))
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dealgym-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn validate_and_list_the_committed_files() {
    for family in ["ahp", "craigslist", "casino", "dnd", "job_interview"] {
        let file = repo(&format!("scenarios/{family}.jsonl"));
        let out = dealgym()
            .args(["scenarios", "validate"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{family}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = dealgym()
            .args(["scenarios", "list"])
            .arg(&file)
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && table.contains(&format!("| {family} |")),
            "{table}"
        );
    }
    let out = dealgym()
        .args(["scenarios", "list"])
        .arg(repo("scenarios/casino.jsonl"))
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    for row in [
        "| casino | train | 900 |",
        "| casino | valid | 30 |",
        "| casino | test | 100 |",
    ] {
        assert!(table.contains(row), "{table}");
    }
}

#[test]
fn a_bad_line_is_named_by_file_line_and_field_and_the_rest_still_counts() {
    let good = std::fs::read_to_string(repo("scenarios/job_interview.jsonl")).unwrap();
    let mut lines: Vec<String> = good.lines().take(3).map(String::from).collect();
    lines[1] = lines[1].replacen("\"min\":20", "\"min\":\"twenty\"", 1);
    let file = tmp("bad").join("ji.jsonl");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let out = dealgym()
        .args(["scenarios", "validate"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("{}:2: field `game.issues.issues", file.display())),
        "{err}"
    );
    assert!(err.contains("1 bad lines, 2 good scenarios"), "{err}");
    let out = dealgym()
        .args(["scenarios", "list"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("| job_interview | test | 2 |"));
}

#[test]
fn import_writes_what_is_committed() {
    let raw = repo("../shared/datasets/job_interview/ji.test.json");
    if !raw.exists() {
        eprintln!("SKIPPED: ../shared/datasets is not present here");
        return;
    }
    let out_file = tmp("import").join("ji.jsonl");
    let out = dealgym()
        .args(["scenarios", "import", "ji"])
        .arg(&raw)
        .arg("--out")
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote 109 scenarios"));
    let same = std::fs::read(&out_file).unwrap()
        == std::fs::read(repo("scenarios/job_interview.jsonl")).unwrap();
    assert!(
        same,
        "the import differs from scenarios/job_interview.jsonl; rerun scripts/import-scenarios.sh"
    );
    let out = dealgym()
        .args(["scenarios", "import", "nonsense"])
        .arg(&raw)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown family"));
}
