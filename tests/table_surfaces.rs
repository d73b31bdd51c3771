//! The surfaces over table records (n-party games): a six-party run with one model seat (the
//! built-in mock on 127.0.0.1) and five scripted parties, then `replay --verify` (clean, then a
//! tampered record named), `replay --render`, `export` (a trajectory per seat, views rebuilt by
//! the engine), `report` (per-seat tables and a chart per party), and a file mixing kinds.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::{dealgym_cli, json_lines, succeeded, temp_dir, threaded_mock};
use dealgym_mock::MockConfig;

const GAME: &str = "tests/fixtures/table/six_party.jsonl";

/// A six-party run: `party_0` the mock model, the rest scripted; 2 groups of 2 would need 2
/// scenarios, so one scenario played 3 times.
fn played(name: &str) -> (PathBuf, PathBuf) {
    let dir = temp_dir(name);
    let mock = threaded_mock(MockConfig::default());
    let out = dir.join("tables.jsonl");
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        GAME,
        "--seat",
        &format!("party_0=openai:mock@{}", mock.url),
        "--group-size",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]));
    (dir, out)
}

#[test]
fn a_table_run_verifies_renders_exports_and_reports() {
    let (dir, out) = played("table-surfaces");
    let records = json_lines(&out);
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r["kind"] == "table"));

    // replay --verify: clean.
    let verified = succeeded(dealgym_cli([
        "replay",
        "--verify",
        "--scenarios",
        GAME,
        out.to_str().unwrap(),
    ]));
    let text = String::from_utf8_lossy(&verified.stdout);
    assert!(
        text.contains("3 episodes in 1 files replay identically"),
        "{text}"
    );

    // A tampered reward, ρ and completion: each named by its field, with its episode.
    // (The executor writes tables as they end, so records are found by id.)
    let mut tampered = records.clone();
    let at = |id: &str| records.iter().position(|r| r["episode_id"] == id).unwrap();
    tampered[at("g0-m1")]["rewards"]["party_3"] = Value::from(0.123);
    tampered[at("g0-m0")]["outcome"]["rho"]["party_4"] = Value::from(0.77);
    let edited = &mut tampered[at("g0-m2")]["turns"][0]["completion"]["text"];
    let t = edited.as_str().unwrap().to_string();
    *edited = Value::from(t.replace("Talk:", "Talk: (edited)"));
    let bad = dir.join("tampered.jsonl");
    let body: String = tampered.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&bad, body).unwrap();
    let failed = dealgym_cli([
        "replay",
        "--verify",
        "--scenarios",
        GAME,
        bad.to_str().unwrap(),
    ]);
    assert_eq!(failed.status.code(), Some(1));
    let text = String::from_utf8_lossy(&failed.stdout);
    assert!(text.contains("rewards.party_3"), "{text}");
    assert!(text.contains("g0-m1"), "{text}");
    // The edited turn is named by its field and turn (1-based in the table), like a two-party
    // record's.
    assert!(
        text.contains("turn.parsed") && text.contains("g0-m2 turn 1"),
        "{text}"
    );
    assert!(text.contains("outcome.rho.party_4"), "{text}");
    assert!(text.contains("3 of 3 episodes"), "{text}");

    // --rescore is two-party: refused, saying so.
    let rescore = dealgym_cli([
        "replay",
        "--rescore",
        "--preset",
        "batna-threshold",
        "--out",
        dir.join("rescored.jsonl").to_str().unwrap(),
        out.to_str().unwrap(),
    ]);
    assert!(!rescore.status.success());
    assert!(
        String::from_utf8_lossy(&rescore.stderr).contains("--rescore is for two-party records"),
        "{}",
        String::from_utf8_lossy(&rescore.stderr)
    );

    // replay --render: the public transcript, no thought and no score table.
    let rendered = succeeded(dealgym_cli([
        "replay",
        "--render",
        "md",
        "--episode",
        "g0-m0",
        "--scenarios",
        GAME,
        out.to_str().unwrap(),
    ]));
    let md = String::from_utf8_lossy(&rendered.stdout);
    assert!(md.contains("**Outcome:**"), "{md}");
    assert!(!md.contains("Thought:"), "{md}");

    // export: a trajectory per seat.
    let sft = dir.join("sft.jsonl");
    succeeded(dealgym_cli([
        "export",
        "--format",
        "messages",
        "--scenarios",
        GAME,
        "--out",
        sft.to_str().unwrap(),
        out.to_str().unwrap(),
    ]));
    let seats = json_lines(&sft);
    assert_eq!(seats.len(), 3 * 6, "every seat of every episode");
    for line in &seats {
        let messages = line["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(messages.last().unwrap()["role"], "assistant");
        let role = line["role"].as_str().unwrap();
        let record = records
            .iter()
            .find(|r| r["episode_id"] == line["episode_id"])
            .unwrap();
        assert_eq!(line["reward"], record["rewards"][role]);
        // The seat's own system prompt is the record's for that seat.
        let seat = line["seat"].as_u64().unwrap() as usize;
        assert_eq!(
            messages[0]["content"],
            record["setup"]["seats"][seat]["system_prompt"]
        );
        // Nothing of another seat's confidential block reaches this seat's trajectory.
        let text = line["messages"].to_string();
        for other in (0..6).filter(|k| *k != seat) {
            assert!(!text.contains(&format!("SECRET-INSTRUCTIONS-OF-{other}")));
        }
        assert!(text.contains(&format!("SECRET-INSTRUCTIONS-OF-{seat}")));
    }
    let pc = dir.join("pc.jsonl");
    succeeded(dealgym_cli([
        "export",
        "--format",
        "prompt-completion",
        "--role",
        "party_0",
        "--scenarios",
        GAME,
        "--out",
        pc.to_str().unwrap(),
        out.to_str().unwrap(),
    ]));
    let turns = json_lines(&pc);
    let party_0_turns: usize = records
        .iter()
        .map(|r| {
            r["turns"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["role"] == "party_0")
                .count()
        })
        .sum();
    assert_eq!(turns.len(), party_0_turns);
    assert!(turns.iter().all(|l| l["role"] == "party_0"));
    for l in &turns {
        let record = records
            .iter()
            .find(|r| r["episode_id"] == l["episode_id"])
            .unwrap();
        let turn = &record["turns"][l["turn_index"].as_u64().unwrap() as usize];
        assert_eq!(l["completion"][0]["content"], turn["completion"]["text"]);
    }

    // report: per-seat tables, the paper's metrics, a chart per party.
    let report_dir = dir.join("report");
    succeeded(dealgym_cli([
        "report",
        "--scenarios",
        GAME,
        "--out",
        report_dir.to_str().unwrap(),
        out.to_str().unwrap(),
    ]));
    let md = std::fs::read_to_string(report_dir.join("report.md")).unwrap();
    assert!(md.contains("| party_0 | 3 |"), "{md}");
    assert!(md.contains("deal final round %"), "{md}");
    for p in 0..6 {
        assert!(report_dir
            .join(format!("charts/rho_party_{p}.svg"))
            .exists());
    }
    let roles_csv = std::fs::read_to_string(report_dir.join("tables/table_roles.csv")).unwrap();
    assert_eq!(roles_csv.lines().count(), 7, "{roles_csv}");
    assert!(std::fs::read_to_string(report_dir.join("report.html"))
        .unwrap()
        .contains("<svg"));
}

#[test]
fn a_file_mixing_kinds_reads_both_its_table_records_first() {
    let (dir, out) = played("table-mixed");
    let two = dir.join("two.jsonl");
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        "scenarios/casino.jsonl",
        "--limit",
        "1",
        "--learner",
        "rule:tough",
        "--opponent",
        "rule:conceder",
        "--out",
        two.to_str().unwrap(),
    ]));
    let two_party = std::fs::read_to_string(&two).unwrap();
    let two_party = two_party.lines().next().unwrap().to_string();
    let mixed = dir.join("mixed.jsonl");
    let table = std::fs::read_to_string(&out).unwrap();
    std::fs::write(&mixed, format!("{table}{two_party}\n")).unwrap();
    let casino = "scenarios/casino.jsonl";
    for args in [
        vec![
            "replay",
            "--verify",
            "--scenarios",
            GAME,
            "--scenarios",
            casino,
        ],
        vec![
            "export",
            "--format",
            "messages",
            "--scenarios",
            GAME,
            "--scenarios",
            casino,
        ],
        vec![
            "export",
            "--format",
            "transitions",
            "--scenarios",
            GAME,
            "--scenarios",
            casino,
        ],
    ] {
        let mut args: Vec<&str> = args;
        args.push(mixed.to_str().unwrap());
        // A file may hold both kinds (a server's log): both are read, the tables first.
        let output = succeeded(dealgym_cli(&args));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("passed over"), "{stderr}");
    }
    // A format tables have no lines in: the two-party record exports (empty: it is no
    // campaign's), the tables are named, whichever kind comes first.
    let output = succeeded(dealgym_cli([
        "export",
        "--format",
        "campaigns",
        "--allow-empty",
        "--scenarios",
        casino,
        mixed.to_str().unwrap(),
    ]));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("passed over"), "{stderr}");
}

#[test]
fn an_eval_seats_each_entrant_at_one_role_and_rates_them() {
    let dir = temp_dir("table-eval");
    let mock = threaded_mock(MockConfig::default());
    let out = dir.join("eval.jsonl");
    let output = succeeded(dealgym_cli([
        "eval",
        "--scenarios",
        GAME,
        "--player",
        &format!("model=openai:mock@{}", mock.url),
        "--player",
        "scripted=rule:deliberation",
        "--table-role",
        "party_2",
        "--group-size",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]));
    let records = json_lines(&out);
    assert_eq!(records.len(), 4, "2 entrants × 2 members");
    // Each entrant is its own run; at party_2 sits the entrant, elsewhere the scripted parties.
    let runs: std::collections::HashSet<&str> = records
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(runs.len(), 2);
    let model_seats = records
        .iter()
        .filter(|r| {
            r["seats"][2]["player"]
                .as_str()
                .unwrap()
                .starts_with("openai:")
        })
        .count();
    assert_eq!(model_seats, 2);
    for r in &records {
        for (i, s) in r["seats"].as_array().unwrap().iter().enumerate() {
            if i != 2 {
                assert_eq!(s["player"], "rule:deliberation");
            }
        }
    }
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("| model | 2 | 0 |"), "{text}");
    assert!(text.contains("| scripted | 2 | 0 |"), "{text}");
    assert!(text.contains("rule:deliberation (party_0)"), "{text}");
    // The same setups: member m of both entrants has the same schedule.
    let schedule = |run: &str, ep: &str| {
        records
            .iter()
            .find(|r| r["run_id"] == run && r["episode_id"] == ep)
            .unwrap()["setup"]["schedule"]
            .clone()
    };
    let runs: Vec<&str> = runs.into_iter().collect();
    assert_eq!(schedule(runs[0], "g0-m1"), schedule(runs[1], "g0-m1"));
    // A role the game does not have is refused.
    let bad = dealgym_cli([
        "eval",
        "--scenarios",
        GAME,
        "--player",
        "a=rule:deliberation",
        "--table-role",
        "nobody",
        "--out",
        dir.join("bad.jsonl").to_str().unwrap(),
    ]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--table-role nobody"));
}
