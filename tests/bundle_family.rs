//! The bundle family (INA) through every surface: the generated file is what the generator
//! writes and the book's statistics are its own; rule-vs-rule and mock runs through the CLI
//! count the integrative gain; bad bundle terms get the malformed-turn policy; replay --verify,
//! export, eval and report read the records.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{dealgym_cli, read_log, succeeded, temp_dir, threaded_mock};
use dealgym::game::{OutcomeKind, Seat};
use dealgym::protocol::ErrorKind;
use dealgym::scenario::generate::stats_table;
use dealgym::scenario::{load_scenarios, BundleSpace, Family, Role};
use dealgym_core::fixtures::{bundle, learner_first_as, play, turn};
use dealgym_mock::MockConfig;

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/bundle.jsonl")
}

fn summary_rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The shipped file is what `scenarios generate bundle` writes, byte for byte, and the book's
/// table is the statistics it prints.
#[test]
fn the_shipped_file_and_the_books_statistics_are_the_generators() {
    let dir = temp_dir("bundle-generate");
    let out = dir.join("bundle.jsonl");
    let printed = succeeded(dealgym_cli([
        "scenarios",
        "generate",
        "bundle",
        "--out",
        out.to_str().unwrap(),
    ]));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(shipped()).unwrap(),
        "scenarios/bundle.jsonl is stale: run `dealgym scenarios generate bundle`"
    );
    let table = String::from_utf8(printed.stdout).unwrap();
    let scenarios = load_scenarios(&shipped(), Default::default())
        .unwrap()
        .scenarios;
    assert!(scenarios.len() >= 1000);
    assert_eq!(
        stats_table(Family::Bundle, &scenarios).as_deref(),
        Some(table.as_str())
    );
    let book = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/data/bundle.md"),
    )
    .unwrap();
    let shown = book
        .split("<!-- bundle-stats -->\n")
        .nth(1)
        .and_then(|rest| rest.split("<!-- /bundle-stats -->").next())
        .unwrap();
    assert_eq!(
        shown, table,
        "docs/src/data/bundle.md's statistics are stale"
    );
    // Another seed gives another set; a family with a data set is imported, not generated.
    let other = dir.join("other.jsonl");
    succeeded(dealgym_cli([
        "scenarios",
        "generate",
        "bundle",
        "--seed",
        "7",
        "--count",
        "20",
        "--out",
        other.to_str().unwrap(),
    ]));
    assert_eq!(std::fs::read_to_string(&other).unwrap().lines().count(), 20);
    let refused = dealgym_cli(["scenarios", "generate", "casino", "--out", "/dev/null"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("imported"));
}

/// `rule:ina` against itself: every deal's integrative gain is its bundle's joint surplus over
/// the full bundle's, and the summary counts the deals where dropping parts grew the pie.
#[test]
fn a_rule_run_counts_the_integrative_gain_and_replays_exports_and_reports() {
    let dir = temp_dir("bundle-rules");
    let out = dir.join("episodes.jsonl");
    let summary = dir.join("summary.json");
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        shipped().to_str().unwrap(),
        "--limit",
        "120",
        "--learner",
        "rule:ina",
        "--opponent",
        "rule:ina",
        "--out",
        out.to_str().unwrap(),
        "--summary-json",
        summary.to_str().unwrap(),
    ]));
    let records = read_log(&out);
    assert_eq!(records.len(), 120);
    let scenarios = load_scenarios(&shipped(), Default::default())
        .unwrap()
        .scenarios;
    let (mut deals, mut grew, mut dropped) = (0, 0, 0);
    for r in &records {
        let o = &r.outcome.outcome;
        let gain = r.outcome.metrics.integrative_gain;
        if o.kind != OutcomeKind::Deal {
            assert_eq!(gain, None);
            continue;
        }
        deals += 1;
        let s = scenarios.iter().find(|s| s.id == r.scenario_id).unwrap();
        let game = BundleSpace::of(s).unwrap();
        let Some(dealgym::protocol::Terms::Bundle { parts, .. }) = &o.terms else {
            panic!("a bundle deal without bundle terms: {:?}", o.terms)
        };
        let expected = game.integrative_gain(parts);
        assert!((gain.unwrap() - expected).abs() < 1e-9);
        grew += usize::from(expected > 0.0);
        dropped += usize::from(parts.size() < 2 + game.spec.accessories.len());
        // The Pareto flag is the bundle's joint surplus being the best.
        assert_eq!(
            r.outcome.metrics.pareto_optimal,
            Some((game.joint(parts) - game.best().1).abs() < 1e-9)
        );
    }
    assert!(
        deals > 60 && grew > 0 && dropped >= grew,
        "{deals} {grew} {dropped}"
    );
    let all = summary_rows(&summary)
        .into_iter()
        .find(|r| r["family"] == "all")
        .unwrap();
    let share = all["integrative_pct"]["value"].as_f64().unwrap();
    assert!((share - 100.0 * grew as f64 / deals as f64).abs() < 1e-9);
    assert!(all["price_to_list"]["value"].as_f64().unwrap() > 0.0);

    // Replay verifies every record exactly; export and report read them.
    succeeded(dealgym_cli(["replay", "--verify", out.to_str().unwrap()]));
    let exported = succeeded(dealgym_cli([
        "export",
        out.to_str().unwrap(),
        "--format",
        "messages",
    ]));
    let lines = String::from_utf8(exported.stdout).unwrap();
    assert_eq!(lines.lines().count(), 120);
    assert!(
        lines.contains("delivery:in|out"),
        "the grammar in the prompt"
    );
    let report_dir = dir.join("report");
    succeeded(dealgym_cli([
        "report",
        out.to_str().unwrap(),
        "--out",
        report_dir.to_str().unwrap(),
    ]));
    let csv = std::fs::read_to_string(report_dir.join("tables/by_family.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().contains("integrative_pct"),
        "{csv}"
    );
}

/// The mock endpoint reads the bundle prompt and plays the family, several scenarios at once.
#[test]
fn the_mock_plays_bundles_from_the_prompt_alone() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("bundle-mock");
    let out = dir.join("episodes.jsonl");
    let learner = format!("openai:mock@{}", mock.url);
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        shipped().to_str().unwrap(),
        "--limit",
        "12",
        "--learner",
        learner.as_str(),
        "--opponent",
        "rule:ina",
        "--out",
        out.to_str().unwrap(),
    ]));
    let records = read_log(&out);
    assert_eq!(records.len(), 12);
    let deals = records
        .iter()
        .filter(|r| r.outcome.outcome.kind == OutcomeKind::Deal)
        .count();
    assert!(deals >= 6, "{deals} deals of 12");
    for r in &records {
        assert!(
            r.turns.iter().all(|t| t.parsed.format_ok),
            "{}",
            r.episode_id
        );
    }
}

/// Bad bundle terms get the malformed-turn policy, each with the error kind the grammar gives
/// it: a part not in the scenario and a part removed twice cannot be read (`format`); a negative
/// price is readable but not allowed (`illegal`).
#[test]
fn bad_bundle_terms_get_the_malformed_turn_policy() {
    let s = bundle();
    for (terms, kind, says) in [
        (
            "price:50000 tv_stand:out extension_cord:in delivery:out mouse:out",
            ErrorKind::Format,
            "unknown part",
        ),
        (
            "price:50000 tv_stand:out tv_stand:out extension_cord:in delivery:out",
            ErrorKind::Format,
            "given twice",
        ),
        (
            "price:-5 tv_stand:out extension_cord:in delivery:out",
            ErrorKind::Illegal,
            "negative",
        ),
    ] {
        let bad = turn("how about this", &format!("[SUBMIT_DEAL] {terms}"));
        let ep = play(&s, learner_first_as(&s, Role::Buyer), &[bad.clone(), bad]);
        let first = &ep.turns()[0];
        let error = first.parsed.error.as_ref().unwrap();
        assert_eq!(error.kind, kind, "{terms}");
        assert!(error.message.contains(says), "{terms}: {}", error.message);
        // One retry (the default), then the episode is forfeited by the seat.
        let outcome = ep.outcome().unwrap();
        assert_eq!(outcome.kind, OutcomeKind::FormatForfeit, "{terms}");
        assert_eq!(outcome.by, Some(Seat::Learner));
    }
}

/// A bundle campaign under the best-offer ledger: each deal's BATNA is the best deal so far, the
/// rule buyer holds out for it (its limit moves with the BATNA), and its prompt says so.
#[test]
fn a_bundle_campaign_holds_each_deal_to_the_best_offer_so_far() {
    let dir = temp_dir("bundle-campaign");
    let campaigns = dir.join("campaigns.jsonl");
    std::fs::write(
        &campaigns,
        r#"{"id": "bundle-best", "ledger": {"kind": "best_offer"}, "deals": ["bundle:26:0", "bundle:26:1", "bundle:26:2", "bundle:26:3"]}"#,
    )
    .unwrap();
    let out = dir.join("episodes.jsonl");
    succeeded(dealgym_cli([
        "run",
        "--campaigns",
        campaigns.to_str().unwrap(),
        "--scenarios",
        shipped().to_str().unwrap(),
        "--learner",
        "rule:ina",
        "--opponent",
        "rule:ina",
        "--out",
        out.to_str().unwrap(),
    ]));
    let records = read_log(&out);
    assert_eq!(records.len(), 4);
    let mut best = 0.0f64;
    for r in &records {
        let standing = r.setup.seats.learner.campaign.as_ref().unwrap();
        assert_eq!(standing.batna, best, "{}", r.scenario_id);
        let utility = r.outcome.outcome.utility.learner;
        if r.outcome.outcome.kind == OutcomeKind::Deal {
            assert!(utility >= best, "{}: {utility} < {best}", r.scenario_id);
        }
        if best > 0.0 {
            let prompt = &r.seats.learner.system_prompt;
            let told = format!("{}", best as i64);
            assert!(prompt.contains(&told), "{}: {prompt}", r.scenario_id);
        }
        best = best.max(utility);
    }
    assert!(best > 0.0);
    succeeded(dealgym_cli(["replay", "--verify", out.to_str().unwrap()]));
}
