//! Planner hooks (issue 26 part 4) through the binary and the built-in mock: a scripted
//! propose-k planner whose value model the mock serves beats the same proposers committing their
//! first candidate on a seeded eval, by intervals that do not meet; its records keep every
//! candidate and the choice, replay identically, export as transitions and report SL and AT; a
//! seat asked for dialogue-act labels is held to its family's catalog.

use crate::common;

use std::path::Path;

use common::{dealgym_cli, read_log, succeeded, temp_dir, threaded_mock};
use dealgym::game::Seat;
use dealgym_mock::MockConfig;
use serde_json::Value;

const PROPOSERS: &str = r#"["rule:conceder", "rule:linear", "rule:boulware", "rule:tough"]"#;

fn write_config(dir: &Path, value_url: &str) -> std::path::PathBuf {
    let config = dir.join("planner.toml");
    std::fs::write(
        &config,
        format!(
            "[players.planner]\nplanner = {{ k = 4, propose = {PROPOSERS}, value = \"{value_url}/value\" }}\n\
             [players.first]\nplanner = {{ k = 4, propose = {PROPOSERS} }}\n"
        ),
    )
    .unwrap();
    config
}

fn cell<'a>(summary: &'a Value, learner: &str) -> &'a Value {
    summary["matrix"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["family"] == "all")
        .and_then(|m| {
            m["cells"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["learner"] == learner)
        })
        .unwrap_or_else(|| panic!("no cell for {learner}: {summary}"))
}

#[test]
fn a_value_model_planner_beats_its_first_candidate_on_a_seeded_eval() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("planner-eval");
    let config = write_config(&dir, &mock.url);
    let out = dir.join("eval.jsonl");
    let summary_path = dir.join("summary.json");
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/craigslist.jsonl");
    succeeded(dealgym_cli([
        "eval",
        "--config",
        config.to_str().unwrap(),
        "--player",
        "planner=planner",
        "--player",
        "first=first",
        "--opponent",
        "boulware=rule:boulware",
        "--no-baseline",
        "--scenarios",
        scenarios.to_str().unwrap(),
        "--limit",
        "40",
        "--seed",
        "1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--summary-json",
        summary_path.to_str().unwrap(),
    ]));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_path).unwrap()).unwrap();
    let (planner, first) = (cell(&summary, "planner"), cell(&summary, "first"));
    assert_eq!(planner["episodes"], 40);
    for c in [planner, first] {
        assert!(
            c["sl"]["value"].is_number() && c["average_turns"]["value"].is_number(),
            "{c}"
        );
    }
    let low = planner["mean_rho"]["low"].as_f64().unwrap();
    let high = first["mean_rho"]["high"].as_f64().unwrap();
    assert!(
        low > high,
        "the planner's ρ interval lies above the first candidate's: {planner} vs {first}"
    );

    // Every planner turn holds its four candidates and the one committed; the first-candidate
    // planner commits candidate 0 without values, the value planner the highest value.
    let records = read_log(&out);
    let mut chose_other = 0;
    for record in &records {
        let planner_seat = record.seats[Seat::Learner].name.as_deref().unwrap();
        for turn in record.turns.iter().filter(|t| t.seat == Seat::Learner) {
            let planning = turn
                .planning
                .as_ref()
                .expect("a planner turn has candidates");
            assert_eq!(planning.candidates.len(), 4);
            assert_eq!(planning.candidates[planning.chosen].raw, turn.raw);
            let values: Vec<Option<f64>> = planning.candidates.iter().map(|c| c.value).collect();
            if planner_seat == "first" {
                assert_eq!(planning.chosen, 0);
                assert!(values.iter().all(Option::is_none));
            } else {
                let values: Vec<f64> = values.into_iter().map(Option::unwrap).collect();
                let best = values.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                assert_eq!(values[planning.chosen], best);
                assert_eq!(
                    values.iter().position(|v| *v == best),
                    Some(planning.chosen)
                );
                chose_other += usize::from(planning.chosen != 0);
            }
        }
        assert!(record
            .turns
            .iter()
            .all(|t| t.seat == Seat::Learner || t.planning.is_none()));
    }
    assert!(
        chose_other > 0,
        "the value model moved some choices off the first candidate"
    );

    // The records replay identically; the transitions export has one line per learner turn.
    let verify = succeeded(dealgym_cli(["replay", "--verify", out.to_str().unwrap()]));
    assert!(String::from_utf8_lossy(&verify.stdout).contains("replay identically"));
    let transitions = dir.join("transitions.jsonl");
    succeeded(dealgym_cli([
        "export",
        "--format",
        "transitions",
        "--out",
        transitions.to_str().unwrap(),
        out.to_str().unwrap(),
    ]));
    let lines: Vec<Value> = std::fs::read_to_string(&transitions)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let learner_turns: usize = records
        .iter()
        .map(|r| r.turns.iter().filter(|t| t.seat == Seat::Learner).count())
        .sum();
    assert_eq!(lines.len(), learner_turns);
    for line in &lines {
        let chosen = line["chosen"].as_u64().unwrap() as usize;
        assert_eq!(line["candidates"][chosen]["raw"], line["action"]);
        assert!(line["state"].as_str().unwrap().starts_with("State: {"));
        assert!(line["next_state"].as_str().unwrap().starts_with("State: {"));
        let done = line["done"].as_bool().unwrap();
        let status = line["status"].as_str().unwrap();
        match (done, line["outcome"].as_str().unwrap()) {
            (false, _) => assert_eq!((status, line["reward"].as_f64()), ("ongoing", Some(0.0))),
            (true, "deal") => assert_eq!(status, "completed"),
            (true, _) => assert_eq!(status, "failed"),
        }
    }

    // The report's tables carry SR (deal %), SL and AT beside ρ.
    let report_dir = dir.join("report");
    succeeded(dealgym_cli([
        "report",
        "--out",
        report_dir.to_str().unwrap(),
        out.to_str().unwrap(),
    ]));
    let md = std::fs::read_to_string(report_dir.join("report.md")).unwrap();
    assert!(md.contains("SL (no deal = 0)") && md.contains("AT (no deal = cap)"));
}

#[test]
fn a_seat_asked_for_act_labels_records_them_and_an_unknown_label_is_malformed() {
    let dir = temp_dir("planner-acts");
    let script = dir.join("script.json");
    std::fs::write(
        &script,
        serde_json::to_string(&[
            "Thought: open\nTalk: Hello, is it still there?\nAction: [SUBMIT_DEAL] price:50 #haggle",
            "Thought: open\nTalk: Hello, is it still there?\nAction: [SUBMIT_DEAL] price:50 #Init_Price",
            "Thought: fine\nTalk: Deal.\nAction: [WALK_AWAY] #disagree",
        ])
        .unwrap(),
    )
    .unwrap();
    let config = dir.join("acts.toml");
    std::fs::write(
        &config,
        "[episode]\nlearner_acts = true\nfirst_mover = \"learner\"\nformat_retries = 1\n",
    )
    .unwrap();
    let out = dir.join("run.jsonl");
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/craigslist.jsonl");
    succeeded(dealgym_cli([
        "run",
        "--config",
        config.to_str().unwrap(),
        "--scenarios",
        scenarios.to_str().unwrap(),
        "--limit",
        "1",
        "--learner",
        &format!("script:{}", script.display()),
        "--opponent",
        "rule:tough",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));
    let records = read_log(&out);
    let record = &records[0];
    assert!(record.seats[Seat::Learner]
        .system_prompt
        .contains("#counter-price"));
    let learner: Vec<_> = record
        .turns
        .iter()
        .filter(|t| t.seat == Seat::Learner)
        .collect();
    let error = learner[0]
        .parsed
        .error
        .as_ref()
        .expect("an unknown label is malformed");
    assert!(error.message.contains("`#haggle`"), "{}", error.message);
    assert_eq!(learner[1].parsed.act.as_deref(), Some("init-price"));
    assert!(learner[1].played.is_some());
    let line = std::fs::read_to_string(&out).unwrap();
    assert!(line.contains(r#""act":"init-price""#));
    succeeded(dealgym_cli(["replay", "--verify", out.to_str().unwrap()]));
}

#[tokio::test]
async fn the_rollout_service_streams_a_planner_learners_transitions() {
    use dealgym::agents::{PlannerConfig, PlayerConfig, Proposers};
    use dealgym::serve::{ServeOptions, Server};
    use dealgym_mock::MockServer;

    let mock = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
        .await
        .unwrap();
    let dir = temp_dir("planner-serve");
    let scenarios = common::scenario_files(&dir, 3);
    let log = dir.join("serve.jsonl");
    let mut options = ServeOptions::new("127.0.0.1:0".parse().unwrap(), scenarios, log.clone());
    let planner = PlannerConfig {
        k: Some(4),
        propose: Proposers::Each(
            [
                "rule:conceder",
                "rule:linear",
                "rule:boulware",
                "rule:tough",
            ]
            .map(String::from)
            .to_vec(),
        ),
        value: Some(format!("{}/value", mock.base_url())),
    };
    options.players.insert(
        "planner".into(),
        PlayerConfig {
            planner: Some(planner),
            ..PlayerConfig::default()
        },
    );
    let server = Server::start(options).await.unwrap();
    let text = reqwest::Client::new()
        .post(format!("{}/v1/rollouts", server.base_url()))
        .json(&serde_json::json!({
            "scenarios": {"family": "craigslist", "count": 3},
            "seed": 2,
            "learner": "planner",
            "opponent": "rule:boulware",
            "format": "transitions",
        }))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty(), "{text}");
    for line in &lines {
        assert_eq!(
            line["candidates"].as_array().map(Vec::len),
            Some(4),
            "{line}"
        );
        assert!(line["candidates"][0]["value"].is_number(), "{line}");
        assert_eq!(line["player"], "planner");
    }
    let records = read_log(&log);
    assert_eq!(records.len(), 3);
    assert!(records
        .iter()
        .flat_map(|r| &r.turns)
        .filter(|t| t.seat == Seat::Learner)
        .all(|t| t.planning.is_some()));
    server.shutdown().await;
    mock.stop();
}

#[test]
fn built_in_players_asked_for_act_labels_give_them_in_every_format() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("planner-acts-builtin");
    let files = common::scenario_files(&dir, 2);
    for format in ["tagged", "xml", "tools"] {
        let config = dir.join(format!("{format}.toml"));
        std::fs::write(
            &config,
            format!(
                "[episode]\nlearner_acts = true\nopponent_acts = true\nlearner_format = \"{format}\"\n\
                 opponent_format = \"{format}\"\n"
            ),
        )
        .unwrap();
        let out = dir.join(format!("{format}.jsonl"));
        let mut args = vec![
            "run".to_string(),
            "--config".into(),
            config.display().to_string(),
            "--learner".into(),
            format!("openai:mock@{}", mock.url),
            "--opponent".into(),
            "rule:linear".into(),
            "--quiet".into(),
            "--out".into(),
            out.display().to_string(),
        ];
        for f in &files {
            args.extend(["--scenarios".to_string(), f.display().to_string()]);
        }
        succeeded(dealgym_cli(&args));
        let records = read_log(&out);
        assert_eq!(records.len(), 2 * common::FAMILIES.len(), "{format}");
        for record in &records {
            for turn in &record.turns {
                assert!(
                    turn.parsed.error.is_none(),
                    "{format}: {:?}",
                    turn.parsed.error
                );
                let act = turn.parsed.act.as_deref().expect("every turn is labelled");
                assert!(
                    dealgym::scenario::find_act(record.family, act).is_some(),
                    "{format}: {act}"
                );
            }
        }
        succeeded(dealgym_cli(["replay", "--verify", out.to_str().unwrap()]));
    }
}

#[test]
fn a_planner_sits_at_a_table_seat_and_its_planning_goes_on_the_record() {
    use dealgym::planner::{choose, state_text};
    use dealgym::record::{RecordReader, TableRecord};
    use dealgym::scenario::{load_table_scenarios, LoadOptions};
    use dealgym::table::TableEpisode;
    use std::sync::Arc;

    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("planner-table");
    // Two proposers: a script that always rejects (worth 0 to the mock's value model) first,
    // then the mock model (a deal it proposes or supports, worth its points over its minimum),
    // so the value model moves the choice off the first candidate.
    let script = dir.join("reject.json");
    let reject = "Thought: not yet\nTalk: I need more.\nAction: [REJECT_DEAL]";
    std::fs::write(&script, serde_json::to_string(&vec![reject; 64]).unwrap()).unwrap();
    let config = dir.join("planner.toml");
    std::fs::write(
        &config,
        format!(
            "[players.seated]\nplanner = {{ propose = [\"script:{script}\", \"openai:mock@{url}\"], \
             value = \"{url}/value\" }}\n\
             [players.two_party]\nplanner = {{ propose = [\"rule:linear\", \"rule:tough\"] }}\n\
             [players.grammar]\nendpoint = \"{url}\"\nmodel = \"mock\"\nconstrain = \"gbnf\"\n",
            url = mock.url,
            script = script.display()
        ),
    )
    .unwrap();
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/deliberation.jsonl");
    let out = dir.join("table.jsonl");
    let run = |seat: &str, out: &Path| {
        dealgym_cli([
            "run",
            "--config",
            config.to_str().unwrap(),
            "--scenarios",
            scenarios.to_str().unwrap(),
            "--limit",
            "1",
            "--seed",
            "3",
            "--seat",
            seat,
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    succeeded(run("other_cities=seated", &out));
    let records: Vec<TableRecord> = RecordReader::open(&out)
        .unwrap()
        .read_as::<TableRecord>()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(records.len(), 1);
    let record = &records[0];
    let scenario = Arc::new(
        load_table_scenarios(&scenarios, LoadOptions::default())
            .unwrap()
            .scenarios
            .into_iter()
            .find(|s| s.id == record.scenario_id)
            .unwrap(),
    );
    let seat = scenario.seat_of("other_cities").unwrap();
    // The table as it stood before each turn, to rebuild the state text the value model was
    // sent and ask the mock's value model itself.
    let mut episode = TableEpisode::new(scenario.clone(), record.setup.clone()).unwrap();
    let (mut planned, mut chose_other) = (0, 0);
    let mut states = Vec::new();
    for t in &record.turns {
        states.push(state_text(&episode, t.turn.seat));
        if t.turn.seat != seat {
            assert!(t.planning.is_none(), "only the planner's turns plan");
        } else {
            let planning = t.planning.as_ref().expect("a planner turn has candidates");
            assert_eq!(planning.candidates.len(), 2);
            assert_eq!(
                planning.candidates[planning.chosen].raw,
                t.turn.completion.text
            );
            assert_eq!(planning.candidates[0].raw, reject);
            let raws: Vec<String> = planning.candidates.iter().map(|c| c.raw.clone()).collect();
            let expected =
                dealgym_mock::planner_values(&state_text(&episode, seat), &raws).unwrap();
            let values: Vec<f64> = planning
                .candidates
                .iter()
                .map(|c| c.value.unwrap())
                .collect();
            assert_eq!(values, expected, "the values are the mock value model's");
            assert_eq!(Some(planning.chosen), choose(&values));
            planned += 1;
            chose_other += usize::from(planning.chosen != 0);
        }
        episode
            .step(t.turn.seat, t.turn.completion.clone())
            .unwrap();
    }
    assert!(planned > 0, "the planner's seat moved");
    assert!(
        chose_other > 0,
        "the value model moved some choices off the first candidate"
    );
    let verify = succeeded(dealgym_cli(["replay", "--verify", out.to_str().unwrap()]));
    assert!(String::from_utf8_lossy(&verify.stdout).contains("replay identically"));
    // A record whose committed candidate is not the turn's completion does not verify.
    let line = std::fs::read_to_string(&out).unwrap();
    assert!(line.contains(r#""chosen":1"#), "{line}");
    let tampered = dir.join("tampered.jsonl");
    std::fs::write(
        &tampered,
        line.replacen(r#""chosen":1"#, r#""chosen":0"#, 1),
    )
    .unwrap();
    let verify = dealgym_cli(["replay", "--verify", tampered.to_str().unwrap()]);
    assert!(!verify.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    assert!(said.contains("turn.chosen"), "{said}");

    // The transitions export writes every seat's turns through the two-party writer, with the
    // table head: the states are those the value model was sent, the planner's candidates are
    // the record's, and the seat's reward comes on its last line.
    let export = |extra: &[&str]| -> Vec<Value> {
        let mut args = vec!["export", "--format", "transitions"];
        args.extend(extra);
        args.push(out.to_str().unwrap());
        let exported = succeeded(dealgym_cli(args));
        let said = String::from_utf8_lossy(&exported.stderr).to_string();
        assert!(!said.contains("passed over"), "{said}");
        String::from_utf8_lossy(&exported.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let lines = export(&[]);
    assert_eq!(
        lines.len(),
        record.turns.len(),
        "one line per seat and turn"
    );
    let deal = record.outcome.outcome.kind == dealgym::game::OutcomeKind::Deal;
    for line in &lines {
        let i = line["turn"].as_u64().unwrap() as usize;
        let t = &record.turns[i];
        let at = t.turn.seat;
        assert_eq!(line["kind"], "table");
        assert_eq!(line["seat"].as_u64(), Some(at as u64));
        assert_eq!(line["role"], t.role.as_str());
        assert_eq!(line["state"], states[i].as_str(), "turn {i}");
        assert_eq!(line["action"], t.turn.completion.text.as_str());
        match &t.planning {
            Some(p) => {
                assert_eq!(
                    line["candidates"],
                    serde_json::to_value(&p.candidates).unwrap()
                );
                assert_eq!(line["chosen"].as_u64(), Some(p.chosen as u64));
            }
            None => {
                assert_eq!(line["candidates"].as_array().unwrap().len(), 1);
                assert_eq!(line["chosen"], 0);
            }
        }
        // The seat's next line starts where this one's next_state says; its last ends the
        // table as it stood at the end, with the seat's reward and the ending's status.
        let next = record.turns[i + 1..].iter().position(|n| n.turn.seat == at);
        let done = line["done"].as_bool().unwrap();
        assert_eq!(done, next.is_none(), "turn {i}");
        match next {
            Some(k) => {
                assert_eq!(line["next_state"], states[i + 1 + k].as_str());
                assert_eq!(line["status"], "ongoing");
                assert_eq!(line["reward"].as_f64(), Some(0.0));
            }
            None => {
                assert_eq!(line["next_state"], state_text(&episode, at).as_str());
                assert_eq!(line["status"], if deal { "completed" } else { "failed" });
                assert_eq!(line["reward"].as_f64(), Some(record.rewards[&t.role]));
            }
        }
    }
    assert!(
        lines.iter().any(|l| l["chosen"] == 1),
        "the planner's choices"
    );
    // `--role` picks the planner's seat alone.
    let planner_lines = export(&["--role", "other_cities"]);
    assert_eq!(planner_lines.len(), planned);
    assert!(planner_lines.iter().all(|l| l["role"] == "other_cities"));

    // A planner proposing with two-party tactics is refused at a table, naming the proposer.
    let refused = run("other_cities=two_party", &dir.join("refused.jsonl"));
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("`rule:linear` plays two-party games"),
        "{stderr}"
    );
    // A constrained seat is refused at a table (its grammar is a two-party turn's), not
    // played unconstrained.
    let refused = run("other_cities=grammar", &dir.join("constrained.jsonl"));
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("set `constrain = \"none\"`"), "{stderr}");
}
