//! Regret against a known opponent (issue 44 item 1), as `dealgym eval` shows it: a model (the
//! mock endpoint) against `rule:boulware` on every family. Each record against the rule on a
//! family the oracle searches carries the oracle's ρ with the regret = oracle ρ − achieved ρ;
//! bundle and hotel records carry none (the oracle refuses them); the eval's table has a regret
//! column, and its JSON the mean regret per pairing with its interval.

use crate::common;

use common::{read_log, scenario_files, temp_dir, threaded_mock};
use dealgym::game::Seat;
use dealgym::scenario::Family;
use dealgym_mock::MockConfig;

#[test]
fn an_eval_against_boulware_reports_each_episodes_regret_and_the_mean_per_pairing() {
    let dir = temp_dir("regret-eval");
    let files = scenario_files(&dir, 2);
    let mock = threaded_mock(MockConfig::default());
    let out = dir.join("eval.jsonl");
    let summary = dir.join("summary.json");
    let mut args = vec!["eval".to_string()];
    for f in &files {
        args.extend(["--scenarios".to_string(), f.display().to_string()]);
    }
    args.extend(
        [
            "--player",
            &format!("mock=openai:mock@{}", mock.url),
            "--opponent",
            "boulware=rule:boulware",
            "--seed",
            "5",
            // The mock's pairing alone: the baseline row (`rule:fixed-concession`) is an eval's
            // default and would double the episodes counted below.
            "--no-baseline",
            "--quiet",
            "--out",
            &out.display().to_string(),
            "--summary-json",
            &summary.display().to_string(),
        ]
        .map(String::from),
    );
    let done = common::succeeded(common::dealgym_cli(&args));
    let stdout = String::from_utf8_lossy(&done.stdout).into_owned();

    let records = read_log(&out);
    assert_eq!(records.len(), 2 * common::FAMILIES.len());
    let mut regrets = Vec::new();
    for r in &records {
        let searched = !matches!(r.family, Family::Bundle | Family::Hotel);
        let Some(oracle) = &r.oracle else {
            assert!(
                !searched,
                "{}: no oracle against rule:boulware",
                r.scenario_id
            );
            continue;
        };
        assert!(
            searched,
            "{}: the oracle refuses {}",
            r.scenario_id, r.family
        );
        assert_eq!(oracle.seat, Seat::Learner, "the seat facing the rule");
        let achieved = r.outcome.outcome.rho.learner;
        assert!(
            (oracle.regret - (oracle.rho - achieved)).abs() < 1e-12,
            "{}: regret {} is not oracle {} − achieved {achieved}",
            r.scenario_id,
            oracle.regret,
            oracle.rho
        );
        assert!(
            oracle.regret >= -1e-9,
            "{}: the mock did better ({achieved}) than the best play ({})",
            r.scenario_id,
            oracle.rho
        );
        regrets.push(oracle.regret);
    }
    assert_eq!(
        regrets.len(),
        2 * 5,
        "two scenarios of five searched families"
    );

    // The table: a regret column beside ρ, and its mean over the pairing's episodes.
    assert!(stdout.contains("| regret [95% CI] |"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let all = json["matrix"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["family"] == "all")
        .unwrap();
    let cell = &all["cells"][0];
    assert_eq!(
        (cell["learner"].as_str(), cell["opponent"].as_str()),
        (Some("mock"), Some("boulware"))
    );
    let mean = regrets.iter().sum::<f64>() / regrets.len() as f64;
    let regret = &cell["regret"];
    assert!(
        (regret["value"].as_f64().unwrap() - mean).abs() < 1e-9,
        "{regret}"
    );
    assert_eq!(regret["n"].as_u64(), Some(regrets.len() as u64), "{regret}");
    assert!(regret["low"].as_f64().unwrap() <= regret["value"].as_f64().unwrap());
    assert!(regret["high"].as_f64().unwrap() >= regret["value"].as_f64().unwrap());
}
