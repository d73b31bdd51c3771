//! DialogXpert under its preset (`--preset dialogxpert`), through the binary with scripted
//! players on the committed Craigslist file: the learner (the buyer) is paid the paper's SL —
//! "if a deal is reached, the sale-to-list price ratio ... if no deal is made, 0" (App. E) — not
//! ρ, and the report's AT counts the paper's turns (one exchange each, App. C), a failure at the
//! cap of 8 (App. C: "a maximum of 8 dialogue turns"). Every expected value is computed here
//! from the paper's formulas and the scenario file's numbers.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{dealgym_cli, read_log, succeeded, temp_dir};
use dealgym::game::OutcomeKind;
use dealgym::record::EpisodeRecord;

fn craigslist() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/craigslist.jsonl")
}

/// The first Craigslist scenario's listing price L and buyer target B, as the importer wrote
/// them.
fn listing_and_target() -> (f64, f64) {
    let text = std::fs::read_to_string(craigslist()).unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let price = &first["game"]["price"];
    (
        price["listing_price"].as_f64().unwrap(),
        price["buyer"]["budget"].as_f64().unwrap(),
    )
}

fn tagged(action: &str) -> String {
    format!("Thought: t\nTalk: Here it is.\nAction: {action}")
}

fn script(dir: &Path, name: &str, turns: &[String]) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string(turns).unwrap()).unwrap();
    format!("script:{}", path.display())
}

/// One episode of the first Craigslist scenario under the preset; its file and record.
fn run_one(dir: &Path, name: &str, learner: &str, opponent: &str) -> (PathBuf, EpisodeRecord) {
    let out = dir.join(format!("{name}.jsonl"));
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        craigslist().to_str().unwrap(),
        "--limit",
        "1",
        "--learner",
        learner,
        "--opponent",
        opponent,
        "--preset",
        "dialogxpert",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));
    let mut records = read_log(&out);
    assert_eq!(records.len(), 1, "{name}");
    (out, records.remove(0))
}

fn csv(path: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn the_dialogxpert_learner_is_paid_sl_and_at_counts_exchanges_with_a_failure_at_eight() {
    let dir = temp_dir("dialogxpert");
    let (l, b) = listing_and_target();
    let silent = script(&dir, "silent", &[]);

    // A deal: the buyer (first, as the preset has it) offers halfway between the listing
    // price and its target, the seller accepts: 2 moves, one exchange.
    let p = ((l + b) / 2.0).round();
    let offer = script(
        &dir,
        "offer",
        &[tagged(&format!("[SUBMIT_DEAL] price:{p}"))],
    );
    let accept = script(&dir, "accept", &[tagged("[ACCEPT_DEAL]")]);
    let (deal_file, deal) = run_one(&dir, "deal", &offer, &accept);
    assert_eq!(deal.kind(), OutcomeKind::Deal);
    assert_eq!(deal.preset.as_deref(), Some("dialogxpert"));
    assert_eq!(deal.setup.rules.max_rounds, 8);
    assert_eq!(deal.turns.len(), 2);
    // SL = (P − L)/(B − L) for the buyer (§4.3); the seller's mirror (P − B)/(L − B).
    let sl = (p - l) / (b - l);
    let seller_sl = (p - b) / (l - b);
    assert!(
        (deal.rewards.learner - sl).abs() < 1e-9,
        "{} vs SL {sl}",
        deal.rewards.learner
    );
    assert!((deal.rewards.opponent - seller_sl).abs() < 1e-9);
    // Not ρ: the buyer paid above its target, so its ρ = (B − P)/|B − C| is negative.
    let rho = (b - p) / (b - 0.5 * l).abs();
    assert!((deal.outcome.outcome.rho.learner - rho).abs() < 1e-9);
    assert!(rho < 0.0 && sl > 0.0);

    // A failure: the buyer walks away at once (1 move) — SL 0, AT the cap, 8.
    let walk = script(&dir, "walk", &[tagged("[WALK_AWAY]")]);
    let (walk_file, walked) = run_one(&dir, "walk", &walk, &silent);
    assert_eq!(walked.kind(), OutcomeKind::WalkAway);
    assert_eq!(
        (walked.rewards.learner, walked.rewards.opponent),
        (0.0, 0.0)
    );

    // The turn cap: 8 offers each, all different (no reject loop), the seller's above its
    // cost (regulation lets them stand) — 16 moves, 8 exchanges, no deal.
    let low: Vec<String> = (0..8)
        .map(|i| tagged(&format!("[SUBMIT_DEAL] price:{}", 1 + i)))
        .collect();
    let high: Vec<String> = (0..8)
        .map(|i| tagged(&format!("[SUBMIT_DEAL] price:{}", l.ceil() + f64::from(i))))
        .collect();
    let (low, high) = (script(&dir, "low", &low), script(&dir, "high", &high));
    let (cap_file, capped) = run_one(&dir, "cap", &low, &high);
    assert_eq!(capped.kind(), OutcomeKind::MaxTurns);
    assert_eq!(capped.turns.len(), 16);
    assert_eq!(capped.rewards.learner, 0.0);

    // The report over the three: AT in the paper's turns (1 + 8 + 8)/3, the same in moves
    // (2 + 16 + 16)/3 beside it; SR 1/3; SL (SL + 0 + 0)/3.
    let report = dir.join("report");
    succeeded(dealgym_cli([
        "report",
        "--quiet",
        "--out",
        report.to_str().unwrap(),
        deal_file.to_str().unwrap(),
        walk_file.to_str().unwrap(),
        cap_file.to_str().unwrap(),
    ]));
    let rows = csv(&report.join("tables").join("by_family.csv"));
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    let six = |x: f64| format!("{x:.6}");
    assert_eq!(row["average_turns"], six((1.0 + 8.0 + 8.0) / 3.0));
    assert_eq!(row["average_moves"], six((2.0 + 16.0 + 16.0) / 3.0));
    assert_eq!(row["deal_pct"], six(100.0 / 3.0));
    assert_eq!(row["sl_learner"], six(sl / 3.0));

    // Each record verifies under the settings it names.
    for file in [&deal_file, &walk_file, &cap_file] {
        succeeded(dealgym_cli(["replay", "--verify", file.to_str().unwrap()]));
    }
}
