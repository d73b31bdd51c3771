//! `[rewards]` at n-party tables (issue 41): `dealgym run --scenarios scenarios/deliberation.jsonl`
//! with `--config` holding `[rewards] kind = "threshold"` pays −γ to every seat whose ρ of a
//! deal is below τ, keeps the config in the record for `replay --verify`, and a setting a table
//! cannot honour is refused before anything is played, naming its key.

use std::path::{Path, PathBuf};

use crate::common::{dealgym_cli, succeeded, temp_dir, threaded_mock};
use dealgym::game::OutcomeKind;
use dealgym::record::{RecordReader, TableRecord};
use dealgym::reward::Component;
use dealgym_mock::MockConfig;

const SCENARIOS: &str = "scenarios/deliberation.jsonl";
/// τ at its top: every seat short of its best deal is below it.
const TAU: f64 = 1.0;
const GAMMA: f64 = 0.3;

/// A run of the first two deliberation games, twice each, `sportco` the built-in mock and the
/// other parties scripted, under `config` (a `--config` file's text); its output.
fn run_with(dir: &Path, config: &str) -> (PathBuf, std::process::Output) {
    run_judged(dir, |_| config.to_string())
}

/// [`run_with`] where the config names the mock (its base URL given), for a judge.
fn run_judged(dir: &Path, config: impl FnOnce(&str) -> String) -> (PathBuf, std::process::Output) {
    let mock = threaded_mock(MockConfig::default());
    let config_file = dir.join("config.toml");
    std::fs::write(&config_file, config(&mock.url)).unwrap();
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
    let (out, output) = run_with(&dir, "[rewards.weights]\nterminal = 1.0\nstrategic = 0.1\n");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("[rewards.weights] strategic cannot be honoured in a table run"),
        "{stderr}"
    );
    assert!(!out.exists() || std::fs::read_to_string(&out).unwrap().is_empty());
}

fn read(out: &Path) -> Vec<TableRecord> {
    RecordReader::open(out)
        .unwrap()
        .read_as::<TableRecord>()
        .map(|r| r.unwrap())
        .collect()
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// A seat's turns' values of the per-turn signal `name`.
fn signals(r: &TableRecord, role: &str, name: &str) -> Vec<f64> {
    r.turns
        .iter()
        .filter(|t| t.role == role)
        .filter_map(|t| t.rewards.get(name).copied())
        .collect()
}

#[test]
fn a_per_turn_component_weight_counts_in_a_table_seats_total() {
    let dir = temp_dir("table-rewards-format");
    let (out, output) = run_with(
        &dir,
        "[rewards.weights]\nterminal = 1.0\nformat = 0.5\nlength = 0.25\n",
    );
    succeeded(output);
    let records = read(&out);
    assert_eq!(records.len(), 4);
    for r in &records {
        for role in r.roles() {
            let parts = &r.reward_parts[role];
            // Each part is the mean of the seat's turns' signals, the total their weighted sum.
            let format = mean(&signals(r, role, "format"));
            let length = mean(&signals(r, role, "length"));
            assert_eq!(parts.get(Component::Format), Some(format), "{role}");
            assert_eq!(parts.get(Component::Length), Some(length), "{role}");
            let terminal = parts[Component::Terminal];
            let total = terminal + 0.5 * format + 0.25 * length;
            assert!((r.rewards[role] - total).abs() < 1e-12, "{role}");
        }
        assert!(r.turn_rewards.is_empty());
        for t in &r.turns {
            let ok = t.turn.parsed.counts_as_format_ok() && t.turn.error.is_none();
            assert_eq!(t.rewards["format"], if ok { 1.0 } else { 0.0 });
        }
    }
    // The rewards are recomputed from the record alone on replay.
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
fn every_turn_rewards_reach_the_table_record_and_its_per_call_rewards() {
    let dir = temp_dir("table-rewards-every-turn");
    let (out, output) = run_with(
        &dir,
        "[rewards]\nturn_reward = \"every_turn\"\n[rewards.weights]\nterminal = 1.0\nformat = 0.5\n",
    );
    succeeded(output);
    let records = read(&out);
    for r in &records {
        assert_eq!(r.turn_rewards.len(), r.turns.len());
        for (i, t) in r.turns.iter().enumerate() {
            // A turn's reward: its own format signal, and its seat's terminal part.
            let terminal = r.reward_parts[t.role.as_str()][Component::Terminal];
            let expected = terminal + 0.5 * t.rewards["format"];
            let got = r.turn_rewards[i].expect("a played turn has its reward");
            assert!(
                (got - expected).abs() < 1e-12,
                "turn {i}: {got} vs {expected}"
            );
        }
    }
    // The per-call rewards the token exports (verl, trl-rollout, tinker) carry are the
    // turns' own.
    let first = &records[0];
    let seat = first.turns[0].turn.seat;
    let role = &first.turns[0].role;
    let expected: Vec<f64> = first.call_rewards(seat);
    assert_eq!(expected.len(), first.own_calls(seat).count());
    let own: Vec<f64> = first
        .own_calls(seat)
        .map(|(i, _)| first.turn_rewards[i].unwrap())
        .collect();
    assert_eq!(expected, own, "{role}");
}

#[test]
fn the_mock_judge_grades_each_table_seat() {
    let dir = temp_dir("table-rewards-judge");
    let (out, output) = run_judged(&dir, |url| {
        format!(
            "[rewards.weights]\nterminal = 1.0\njudge = 0.5\n\
             [rewards.judge]\nendpoint = \"{url}\"\nmodel = \"mock-judge\"\n\
             retries = 1\nbackoff_s = 0.01\ntimeout_s = 5\n"
        )
    });
    succeeded(output);
    let records = read(&out);
    assert_eq!(records.len(), 4);
    for r in &records {
        assert!(r.reward_issues.is_empty(), "{:?}", r.reward_errors);
        for role in r.roles() {
            let parts = &r.reward_parts[role];
            let judge = parts.get(Component::Judge).expect("every seat judged");
            assert!((0.0..=1.0).contains(&judge), "{role}: {judge}");
            let total = parts[Component::Terminal] + 0.5 * judge;
            assert!((r.rewards[role] - total).abs() < 1e-12, "{role}");
        }
    }
    // Replay keeps the judge's parts it cannot recompute, and checks the rest.
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

/// `points` at a table: each proposal scores its mover's ρ of the deal it proposes, each
/// acceptance the ρ of the numbered offer it accepts, clipped to [0, 1] then · 2 − 0.5 (the
/// two-party rule); every other turn 0. Recomputed here from the record's offers and the
/// scenario's scores, and summed into each seat's total as the mean of its turns' points.
#[test]
fn points_score_a_table_seats_proposals_and_acceptances_by_the_two_party_rule() {
    let dir = temp_dir("table-rewards-points");
    let (out, output) = run_with(&dir, "[rewards.weights]\nterminal = 1.0\npoints = 0.5\n");
    succeeded(output);
    let scenarios = dealgym::scenario::load_table_scenarios(
        Path::new(SCENARIOS),
        dealgym::scenario::LoadOptions::default(),
    )
    .unwrap()
    .scenarios;
    let (mut proposals, mut acceptances) = (0, 0);
    for r in read(&out) {
        let scenario = scenarios.iter().find(|s| s.id == r.scenario_id).unwrap();
        let rho = |seat: usize, id: Option<u32>| {
            let offer = r.offers.iter().find(|o| Some(o.id) == id).unwrap();
            let rows = &scenario.parties[seat].private.scores;
            let score: i64 = rows.iter().zip(&offer.deal).map(|(row, &i)| row[i]).sum();
            let best: i64 = rows.iter().map(|row| *row.iter().max().unwrap()).sum();
            score as f64 / best.max(1) as f64
        };
        for t in &r.turns {
            let expected = match t.turn.played() {
                Some(dealgym::protocol::Action::Submit(_)) => {
                    proposals += 1;
                    rho(t.turn.seat, t.turn.offer).clamp(0.0, 1.0) * 2.0 - 0.5
                }
                Some(dealgym::protocol::Action::Accept) => {
                    acceptances += 1;
                    rho(t.turn.seat, t.turn.accepts).clamp(0.0, 1.0) * 2.0 - 0.5
                }
                _ => 0.0,
            };
            let got = t.rewards[Component::Points.name()];
            assert!(
                (got - expected).abs() < 1e-9,
                "{} turn {:?}: {got} vs {expected}",
                r.episode_id,
                t.turn.slot
            );
        }
        for (seat, role) in r.roles().into_iter().enumerate() {
            let mine: Vec<f64> = r
                .turns
                .iter()
                .filter(|t| t.turn.seat == seat)
                .map(|t| t.rewards[Component::Points.name()])
                .collect();
            let part = r.reward_parts[role].get(Component::Points).unwrap_or(0.0);
            let mean = mine.iter().sum::<f64>() / mine.len().max(1) as f64;
            assert!(
                (part - mean).abs() < 1e-9,
                "{role}: part {part}, mean {mean}"
            );
        }
    }
    assert!(
        proposals > 0 && acceptances > 0,
        "{proposals} proposals, {acceptances} acceptances"
    );
}
