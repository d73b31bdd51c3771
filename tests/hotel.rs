//! The `hotel` family (REPO's multi-ticket price-chasing) through the CLI: the generated
//! scenario file is the project's own command's output; rule-vs-rule and mock runs over calls
//! of several tickets record per-ticket success and ρ that agree with the scenarios, replay with
//! `--verify`, export and report; a scripted agent that swaps a take-home price for a selling
//! price, names the work-order and leaves a ticket out is caught by the guardrails.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{dealgym_cli, read_log, succeeded, temp_dir, threaded_mock};
use dealgym::game::{OutcomeKind, Seat};
use dealgym::record::EpisodeRecord;
use dealgym::scenario::{load_scenarios, DealSpace, LoadOptions, Role, Scenario};
use dealgym_mock::MockConfig;

fn hotel_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/hotel.jsonl")
}

/// The first calls of the family with at least two tickets each, written to `dir`.
fn multi_ticket_calls(dir: &Path, n: usize) -> (PathBuf, HashMap<String, Scenario>) {
    let all = load_scenarios(&hotel_file(), LoadOptions::default()).unwrap();
    let chosen: Vec<Scenario> = all
        .scenarios
        .into_iter()
        .filter(|s| matches!(&s.game, DealSpace::Tickets { tickets, .. } if tickets.len() >= 2))
        .take(n)
        .collect();
    assert_eq!(chosen.len(), n);
    let path = dir.join("calls.jsonl");
    let text: String = chosen
        .iter()
        .map(|s| format!("{}\n", serde_json::to_string(s).unwrap()))
        .collect();
    std::fs::write(&path, text).unwrap();
    (
        path,
        chosen.into_iter().map(|s| (s.id.clone(), s)).collect(),
    )
}

/// Every record's per-ticket outcome agrees with its scenario: one entry per ticket, a
/// success exactly when the agreed selling price is at or below the agent's acceptable one.
/// Returns (tickets, successes).
fn check_tickets(
    records: &[EpisodeRecord],
    scenarios: &HashMap<String, Scenario>,
) -> (usize, usize) {
    let (mut tickets, mut successes) = (0, 0);
    for r in records {
        assert_ne!(r.kind(), OutcomeKind::Error, "{:?}", r.outcome);
        assert_eq!(
            r.seats[Seat::Learner].role,
            Role::Bd,
            "the agent is the default learner"
        );
        let s = &scenarios[&r.scenario_id];
        let DealSpace::Tickets {
            tickets: specs, bd, ..
        } = &s.game
        else {
            panic!("a hotel call")
        };
        let v = serde_json::to_value(&r.outcome).unwrap();
        let per_ticket = v["metrics"]["tickets"].as_array().unwrap();
        assert_eq!(per_ticket.len(), specs.len(), "{v}");
        for (t, (spec, own)) in per_ticket.iter().zip(specs.iter().zip(bd)) {
            assert_eq!(t["key"], spec.key.as_str());
            let price = t["price"].as_f64();
            if r.kind() != OutcomeKind::Deal {
                assert_eq!(price, None, "no deal, no price: {v}");
            }
            let success = t["success"].as_bool().unwrap();
            assert_eq!(
                success,
                price.is_some_and(|p| p <= own.acceptable.selling),
                "{t}"
            );
            tickets += 1;
            successes += usize::from(success);
        }
    }
    (tickets, successes)
}

fn run_args(scenarios: &Path, learner: &str, opponent: &str, out: &Path) -> Vec<String> {
    [
        "run",
        "--scenarios",
        &scenarios.display().to_string(),
        "--learner",
        learner,
        "--opponent",
        opponent,
        "--first-mover",
        "learner",
        "--seed",
        "3",
        "--quiet",
        "--out",
        &out.display().to_string(),
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn the_committed_file_is_the_generators_output() {
    let dir = temp_dir("hotel-generate");
    let out = dir.join("hotel.jsonl");
    succeeded(dealgym_cli([
        "scenarios",
        "generate",
        "hotel",
        "--out",
        &out.display().to_string(),
    ]));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(hotel_file()).unwrap(),
        "scenarios/hotel.jsonl is `dealgym scenarios generate hotel` (count 600, seed 26)"
    );
    // A family with a data set is imported, not generated, and says so.
    let other = dealgym_cli(["scenarios", "generate", "casino", "--out", "x.jsonl"]);
    assert!(!other.status.success());
    assert!(String::from_utf8_lossy(&other.stderr).contains("imported"));
}

#[test]
fn rule_against_rule_settles_tickets_one_by_one_and_every_surface_reads_it() {
    let dir = temp_dir("hotel-rules");
    let (scenarios, by_id) = multi_ticket_calls(&dir, 30);
    let out = dir.join("rules.jsonl");
    // Under every guardrail at its default score.
    let config = dir.join("guard.toml");
    std::fs::write(
        &config,
        "[rewards]\nweights = { terminal = 1.0, rules = 1.0 }\n[rewards.guardrails]\n",
    )
    .unwrap();
    let mut args = run_args(&scenarios, "rule:linear", "rule:linear", &out);
    args.extend(["--config".into(), config.display().to_string()]);
    let run = succeeded(dealgym_cli(args));
    let summary = String::from_utf8_lossy(&run.stdout);
    assert!(
        summary.contains("hotel: tickets agreed at or below the acceptable price"),
        "{summary}"
    );
    let records = read_log(&out);
    assert_eq!(records.len(), 30);
    let (tickets_n, successes) = check_tickets(&records, &by_id);
    assert!(tickets_n >= 60);
    // The rule players' own talk names every price's type and no internal word: no guardrail
    // fires on them.
    for r in &records {
        for t in &r.turns {
            assert!(
                t.rewards.keys().all(|k| !k.starts_with("rule:guard")),
                "{:?}: {:?}",
                t.parsed.talk,
                t.rewards
            );
        }
    }
    // Some tickets won, some not: the floors sometimes sit above the acceptable price.
    assert!(
        successes > 0 && successes < tickets_n,
        "{successes} of {tickets_n}"
    );
    // A deal that leaves one ticket unchanged and settles another: partial agreement.
    assert!(records.iter().any(|r| {
        r.kind() == OutcomeKind::Deal
            && r.outcome.outcome.terms_text.as_deref().is_some_and(|t| {
                t.contains("unchanged") && t.split(' ').any(|p| !p.ends_with("unchanged"))
            })
    }));

    let path = out.display().to_string();
    let scen = scenarios.display().to_string();
    succeeded(dealgym_cli([
        "replay",
        "--verify",
        "--scenarios",
        &scen,
        &path,
    ]));
    let exported = dir.join("messages.jsonl");
    succeeded(dealgym_cli([
        "export",
        "--format",
        "messages",
        "--scenarios",
        &scen,
        &path,
        "--out",
        &exported.display().to_string(),
    ]));
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(&exported)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(first["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("take-home price"));
    let report = dir.join("report");
    succeeded(dealgym_cli([
        "report",
        &path,
        "--out",
        &report.display().to_string(),
    ]));
    assert!(std::fs::read_to_string(report.join("report.md"))
        .unwrap()
        .contains("| hotel |"));
    // The per-ticket table: the family's row and each player's, with their intervals.
    let tickets = std::fs::read_to_string(report.join("tables/tickets.csv")).unwrap();
    let family_row = tickets
        .lines()
        .find(|l| l.starts_with("family: hotel,30,"))
        .unwrap_or_else(|| panic!("{tickets}"));
    let share: f64 = family_row.split(',').nth(2).unwrap().parse().unwrap();
    let expected = 100.0 * successes as f64 / tickets_n as f64;
    assert!((share - expected).abs() < 1e-4, "{tickets}");
}

#[test]
fn a_mock_agent_plays_several_ticket_calls_against_the_rule_hotel() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("hotel-mock");
    let (scenarios, by_id) = multi_ticket_calls(&dir, 20);
    let out = dir.join("mock.jsonl");
    let learner = format!("openai:mock@{}", mock.url);
    succeeded(dealgym_cli(run_args(
        &scenarios,
        &learner,
        "rule:conceder",
        &out,
    )));
    let records = read_log(&out);
    assert_eq!(records.len(), 20);
    let (tickets, successes) = check_tickets(&records, &by_id);
    assert!(successes > 0, "{successes} of {tickets}");
    assert!(records.iter().any(|r| r.kind() == OutcomeKind::Deal));
    // The mock read its prompt: every turn it wrote was well-formed ticket terms.
    for r in &records {
        assert!(
            r.outcome.metrics.seats.learner.format_ok_rate == 1.0,
            "{:?}",
            r.outcome
        );
    }
    succeeded(dealgym_cli([
        "replay",
        "--verify",
        "--scenarios",
        &scenarios.display().to_string(),
        &out.display().to_string(),
    ]));
}

#[test]
fn the_guardrails_catch_a_scripted_agent_through_the_cli() {
    let dir = temp_dir("hotel-guardrails");
    // A call of several tickets with a take-home price that is no selling price of it and that
    // no ticket could sell at (two kinds of price may coincide, and a number that could be a
    // fresh selling ask is no swap the rule can prove): quote it as a selling price, name the
    // work-order, and never propose a price for the tickets after the first.
    let (_, by_id) = multi_ticket_calls(&dir, 40);
    let mut found: Vec<(Scenario, f64)> = by_id
        .into_values()
        .filter_map(|s| {
            let DealSpace::Tickets { tickets, bd, .. } = &s.game else {
                return None;
            };
            let selling: Vec<f64> = tickets
                .iter()
                .map(|t| t.selling)
                .chain(
                    bd.iter()
                        .flat_map(|b| [b.target.selling, b.acceptable.selling]),
                )
                .collect();
            let take_home = tickets
                .iter()
                .map(|t| t.take_home)
                .chain(
                    bd.iter()
                        .flat_map(|b| [b.target.take_home, b.acceptable.take_home]),
                )
                .find(|v| {
                    selling.iter().all(|x| (x - v).abs() >= 0.5) && !s.plausible_selling(*v)
                })?;
            Some((s.clone(), take_home))
        })
        .collect();
    found.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    let (s, take_home) = found.into_iter().next().expect("such a call");
    let scenarios = dir.join("one.jsonl");
    std::fs::write(&scenarios, serde_json::to_string(&s).unwrap() + "\n").unwrap();
    let DealSpace::Tickets { tickets, bd, .. } = &s.game else {
        panic!()
    };
    let ask = bd[0].acceptable.selling;
    let rest: Vec<String> = tickets[1..]
        .iter()
        .map(|t| format!("{}:unchanged", t.key))
        .collect();
    let bad = format!(
        "Thought: push\nTalk: Your room sells at a selling price of {take_home} on the work-order; could it be {ask}?\nAction: [SUBMIT_DEAL] t1:{ask} {}",
        rest.join(" ")
    );
    let bye = "Thought: done\nTalk: Thank you, goodbye.\nAction: [WALK_AWAY]";
    let script = dir.join("agent.json");
    std::fs::write(
        &script,
        serde_json::to_string(&[bad.as_str(), bye]).unwrap(),
    )
    .unwrap();
    let config = dir.join("guard.toml");
    std::fs::write(
        &config,
        "[rewards]\nweights = { terminal = 1.0, rules = 1.0 }\n[rewards.guardrails]\nprice_type = -0.5\n",
    )
    .unwrap();
    let out = dir.join("guard.jsonl");
    let mut args = run_args(
        &scenarios,
        &format!("script:{}", script.display()),
        "rule:boulware",
        &out,
    );
    args.extend(["--config".into(), config.display().to_string()]);
    succeeded(dealgym_cli(args));
    let records = read_log(&out);
    let r = &records[0];
    let agent: Vec<_> = r.turns.iter().filter(|t| t.seat == Seat::Learner).collect();
    let first = &agent[0].rewards;
    assert_eq!(first.get("rule:guard_price_type"), Some(&-0.5), "{first:?}");
    assert_eq!(
        first.get("rule:guard_internal_terms"),
        Some(&-1.0),
        "{first:?}"
    );
    assert_eq!(first.get("rule:guard_promises"), None, "{first:?}");
    let last = &agent.last().unwrap().rewards;
    assert_eq!(last.get("rule:guard_every_ticket"), Some(&-1.0), "{last:?}");
    // The hotel's turns are never checked.
    assert!(r
        .turns
        .iter()
        .filter(|t| t.seat == Seat::Opponent)
        .all(|t| t.rewards.keys().all(|k| !k.starts_with("rule:guard"))));
    succeeded(dealgym_cli([
        "replay",
        "--verify",
        "--scenarios",
        &scenarios.display().to_string(),
        &out.display().to_string(),
    ]));
}
