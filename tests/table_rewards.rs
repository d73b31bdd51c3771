//! `[rewards]` at n-party tables (issue 41): `dealgym run --scenarios scenarios/deliberation.jsonl`
//! with `--config` holding `[rewards] kind = "threshold"` pays −γ to every seat whose ρ of a
//! deal is below τ, keeps the config in the record for `replay --verify`, and a setting a table
//! cannot honour is refused before anything is played, naming its key.

use std::path::{Path, PathBuf};

use crate::common::{dealgym_cli, succeeded, temp_dir, threaded_mock};
use dealgym::game::OutcomeKind;
use dealgym::record::{RecordReader, TableRecord};
use dealgym_mock::MockConfig;

const SCENARIOS: &str = "scenarios/deliberation.jsonl";
/// τ at its top: every seat short of its best deal is below it.
const TAU: f64 = 1.0;
const GAMMA: f64 = 0.3;

/// A run of the first two deliberation games, twice each, `sportco` the built-in mock and the
/// other parties scripted, under `config` (a `--config` file's text); its output.
fn run_with(dir: &Path, config: &str) -> (PathBuf, std::process::Output) {
    let mock = threaded_mock(MockConfig::default());
    let config_file = dir.join("config.toml");
    std::fs::write(&config_file, config).unwrap();
    let out = dir.join("tables.jsonl");
    let output = dealgym_cli([
        "run",
        "--scenarios",
        SCENARIOS,
        "--limit",
        "2",
        "--group-size",
        "2",
        "--seat",
        &format!("sportco=openai:mock@{}", mock.url),
        "--config",
        config_file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    (out, output)
}

#[test]
fn a_table_run_under_threshold_pays_minus_gamma_below_tau() {
    let dir = temp_dir("table-rewards-threshold");
    let (out, output) = run_with(
        &dir,
        &format!("[rewards]\nkind = \"threshold\"\ntau = {TAU:.1}\ngamma = {GAMMA}\n"),
    );
    succeeded(output);
    let records: Vec<TableRecord> = RecordReader::open(&out)
        .unwrap()
        .read_as::<TableRecord>()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(records.len(), 4);
    let mut deals = 0;
    let mut below = 0;
    for r in &records {
        let config = r.reward_config.as_ref().expect("the run's [rewards] kept");
        assert_eq!((config.tau, config.gamma), (TAU, GAMMA));
        let forfeiter = match r.outcome.outcome.kind {
            OutcomeKind::FormatForfeit => r.outcome.outcome.by,
            _ => None,
        };
        for (seat, role) in r.roles().into_iter().enumerate() {
            let rho = r.outcome.rho[role];
            let expected = match r.outcome.outcome.kind {
                OutcomeKind::Deal if rho < TAU => -GAMMA,
                OutcomeKind::Deal => rho,
                OutcomeKind::FormatForfeit if forfeiter == Some(seat) => -1.0,
                _ => 0.0,
            };
            assert_eq!(
                r.rewards[role], expected,
                "{} {role}: ρ {rho}",
                r.episode_id
            );
            below += usize::from(r.outcome.outcome.kind == OutcomeKind::Deal && rho < TAU);
        }
        deals += usize::from(r.outcome.outcome.kind == OutcomeKind::Deal);
    }
    assert!(deals > 0, "no table reached a deal: {records:?}");
    assert!(below > 0, "no seat fell below τ on a deal");

    // The record keeps its config: `replay --verify` checks the rewards under it.
    let verified = succeeded(dealgym_cli([
        "replay",
        "--verify",
        "--scenarios",
        SCENARIOS,
        out.to_str().unwrap(),
    ]));
    let text = String::from_utf8_lossy(&verified.stdout);
    assert!(
        text.contains("4 episodes in 1 files replay identically"),
        "{text}"
    );
}

#[test]
fn a_rewards_setting_a_table_cannot_honour_is_refused_by_key() {
    let dir = temp_dir("table-rewards-refused");
    let (out, output) = run_with(&dir, "[rewards.weights]\nterminal = 1.0\nformat = 0.1\n");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("[rewards.weights] format cannot be honoured in a table run"),
        "{stderr}"
    );
    assert!(!out.exists() || std::fs::read_to_string(&out).unwrap().is_empty());
}
