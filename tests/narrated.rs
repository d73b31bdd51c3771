//! Narrated players (issue 47) through the binary and the built-in mock as narrator: a
//! `narrate:DECIDER+MODEL` seat plays every two-party family and a table seat, each of its
//! turns the decider's move in the narrator's words; its records replay identically; a
//! token-exact narrator's forced action ids are marked and masked out of the trainer exports;
//! every way of forcing the action line is honoured or refused; the eval rates a narrated
//! player against the bare rule and the bare model, and the report shows its consistency.

use crate::common;

use std::path::{Path, PathBuf};

use common::{dealgym_cli, json_lines, read_log, succeeded, temp_dir, threaded_mock, FAMILIES};
use dealgym::game::Seat;
use dealgym_mock::MockConfig;
use serde_json::Value;

fn scenarios(family: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{family}.jsonl"))
}

/// `dealgym report` of `out` into `dir/report`: its Markdown.
fn report(dir: &Path, out: &Path) -> String {
    let report = dir.join("report");
    succeeded(dealgym_cli([
        "report",
        "--out",
        report.to_str().unwrap(),
        out.to_str().unwrap(),
    ]));
    std::fs::read_to_string(report.join("report.md")).unwrap()
}

fn verify(out: &Path) {
    let verify = succeeded(dealgym_cli(["replay", "--verify", out.to_str().unwrap()]));
    assert!(
        String::from_utf8_lossy(&verify.stdout).contains("replay identically"),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[test]
fn a_narrated_seat_plays_every_two_party_family_with_its_deciders_moves() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("narrated-families");
    let narrated = format!("narrate:rule:linear+openai:mock@{}", mock.url);
    // The family's first two scenarios, `learner` against `rule:boulware`, the learner first.
    let play = |family: &str, learner: &str, out: &Path| {
        succeeded(dealgym_cli([
            "run",
            "--scenarios",
            scenarios(family).to_str().unwrap(),
            "--limit",
            "2",
            "--learner",
            learner,
            "--opponent",
            "rule:boulware",
            "--first-mover",
            "learner",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]));
    };
    for family in FAMILIES {
        let out = dir.join(format!("{family}.jsonl"));
        play(family, &narrated, &out);
        // The same episodes with the bare rule as learner: the moves are the decider's.
        let bare = dir.join(format!("{family}-rule.jsonl"));
        play(family, "rule:linear", &bare);
        // Episodes over HTTP finish in any order: paired by episode.
        let sorted = |path: &Path| {
            let mut records = read_log(path);
            records.sort_by(|a, b| a.episode_id.cmp(&b.episode_id));
            records
        };
        let (records, rule_records) = (sorted(&out), sorted(&bare));
        assert_eq!(records.len(), 2, "{family}");
        for (record, rule) in records.iter().zip(&rule_records) {
            assert_eq!(record.seats[Seat::Learner].player.to_string(), narrated);
            let played = |r: &dealgym::record::EpisodeRecord| -> Vec<_> {
                r.turns.iter().map(|t| t.played.clone()).collect()
            };
            assert_eq!(
                played(record),
                played(rule),
                "{family}: the decider's moves"
            );
            assert_eq!(
                record.outcome.outcome.kind, rule.outcome.outcome.kind,
                "{family}"
            );
            for turn in record.turns.iter().filter(|t| t.seat == Seat::Learner) {
                let n = turn
                    .narration
                    .as_ref()
                    .expect("every learner turn is narrated");
                assert!(
                    turn.raw.trim_end().ends_with(&n.decided),
                    "{family}: {}",
                    turn.raw
                );
                assert!(n.brief.contains(&n.decided), "{family}");
                assert!(turn.parsed.format_ok, "{family}: {}", turn.raw);
                // The mock narrates faithfully: its Talk names the offered price, if any.
                assert!(
                    n.contradictions.is_empty(),
                    "{family}: {n:?} in {}",
                    turn.raw
                );
            }
            assert!(record
                .turns
                .iter()
                .all(|t| t.seat == Seat::Learner || t.narration.is_none()));
            let m = &record.outcome.metrics.seats[Seat::Learner];
            assert_eq!(m.narrated, m.turns + m.malformed, "{family}");
            assert_eq!(m.contradicted, 0, "{family}");
        }
        verify(&out);
    }
}

#[test]
fn a_narrated_table_seat_plays_its_scripted_partys_moves_and_replays() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("narrated-table");
    let out = dir.join("table.jsonl");
    let seat = format!("sportco=narrate:rule:deliberation+openai:mock@{}", mock.url);
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        scenarios("deliberation").to_str().unwrap(),
        "--limit",
        "2",
        "--seat",
        &seat,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));
    let records = json_lines(&out);
    assert_eq!(records.len(), 2);
    for record in &records {
        let sportco = record["seats"]
            .as_array()
            .unwrap()
            .iter()
            .position(|s| s["role"] == "sportco")
            .unwrap();
        let turns: Vec<&Value> = record["turns"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["seat"] == sportco)
            .collect();
        assert!(!turns.is_empty());
        for turn in turns {
            let n = &turn["completion"]["narration"];
            let decided = n["decided"].as_str().expect("a narrated table turn");
            assert!(turn["completion"]["text"]
                .as_str()
                .unwrap()
                .ends_with(decided));
        }
    }
    verify(&out);
    let md = report(&dir, &out);
    assert!(md.contains("narration consistent %"), "{md}");
}

/// A token-exact narrator (vLLM's token API, then llama.cpp's): what it sampled, then the
/// decided line's ids marked forced; the trainer exports mask them; the sequence does not
/// drift (the brief is in the seat's history, so each call extends the last).
#[test]
fn a_token_exact_narrators_forced_ids_are_marked_and_masked() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("narrated-exact");
    for api in ["vllm", "llama_cpp"] {
        let config = dir.join(format!("{api}.toml"));
        std::fs::write(
            &config,
            format!(
                "[players.narrator]\nmodel = \"mock\"\nendpoint = \"{}\"\ntokens = \"exact\"\ntoken_api = \"{api}\"\n\
                 [players.narrated]\ndecider = \"rule:linear\"\nnarrator = \"narrator\"\n",
                mock.url
            ),
        )
        .unwrap();
        let out = dir.join(format!("{api}.jsonl"));
        succeeded(dealgym_cli([
            "run",
            "--config",
            config.to_str().unwrap(),
            "--scenarios",
            scenarios("casino").to_str().unwrap(),
            "--limit",
            "3",
            "--learner",
            "narrated",
            "--opponent",
            "rule:linear",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]));
        let mut forced_total = 0;
        for record in read_log(&out) {
            for turn in record.turns.iter().filter(|t| t.seat == Seat::Learner) {
                let tokens = turn.tokens.as_ref().expect("token-exact");
                let at = tokens
                    .forced_from
                    .expect("the decided line's ids are marked");
                assert!(at > 0 && at < tokens.completion_ids.len(), "{api}");
                assert_eq!(tokens.logprobs.len(), tokens.completion_ids.len());
                assert!(tokens.logprobs[at..].iter().all(|p| *p == 0.0));
                assert_eq!(
                    tokens.drift, None,
                    "{api}: the sequence extends turn by turn"
                );
                // The mock's toy tokenizer is byte-level: the forced ids spell the text
                // written after the narrator's words, which ends with the decided line.
                let forced: Vec<u8> = tokens.completion_ids[at..]
                    .iter()
                    .map(|id| u8::try_from(*id).unwrap())
                    .collect();
                let forced = String::from_utf8(forced).unwrap();
                let decided = &turn.narration.as_ref().unwrap().decided;
                assert!(forced.ends_with(decided.as_str()), "{api}: {forced:?}");
                assert!(turn.raw.ends_with(&forced), "{api}");
                forced_total += tokens.completion_ids.len() - at;
            }
        }
        verify(&out);
        let export = dir.join(format!("{api}-trl.jsonl"));
        succeeded(dealgym_cli([
            "export",
            "--format",
            "trl-rollout",
            "--out",
            export.to_str().unwrap(),
            out.to_str().unwrap(),
        ]));
        // Masked: every learner line's forced ids count as environment ids (0), never sampled.
        let masked_forced: usize = json_lines(&export)
            .iter()
            .filter(|l| l["seat"] == "learner")
            .map(|l| {
                let mask = l["env_mask"].as_array().unwrap();
                let ids = l["completion_ids"].as_array().unwrap();
                assert_eq!(mask.len(), ids.len());
                mask.iter().filter(|m| m.as_u64() == Some(0)).count()
            })
            .sum();
        assert!(
            masked_forced >= forced_total,
            "{api}: {masked_forced} < {forced_total}"
        );
    }
}

#[test]
fn each_way_of_forcing_the_action_is_honoured_or_refused_naming_why() {
    let mock = threaded_mock(MockConfig::default());
    let dir = temp_dir("narrated-force");
    let config = dir.join("force.toml");
    std::fs::write(
        &config,
        format!(
            "[players.free]\nmodel = \"mock\"\nendpoint = \"{url}\"\n\
             [players.gbnf]\nmodel = \"mock\"\nendpoint = \"{url}\"\nconstrain = \"gbnf\"\n\
             [players.exact_gbnf]\nmodel = \"mock\"\nendpoint = \"{url}\"\nconstrain = \"gbnf\"\ntokens = \"exact\"\ntoken_api = \"llama_cpp\"\n\
             [players.prompted]\ndecider = \"rule:tough\"\nnarrator = \"free\"\nforce = \"prompt\"\n\
             [players.grammar]\ndecider = \"rule:tough\"\nnarrator = \"gbnf\"\n\
             [players.grammar_free]\ndecider = \"rule:tough\"\nnarrator = \"free\"\nforce = \"grammar\"\n\
             [players.grammar_exact]\ndecider = \"rule:tough\"\nnarrator = \"exact_gbnf\"\nforce = \"grammar\"\n\
             [players.constrained_appended]\ndecider = \"rule:tough\"\nnarrator = \"gbnf\"\nforce = \"appended\"\n\
             [players.loop_a]\ndecider = \"loop_b\"\nnarrator = \"free\"\n\
             [players.loop_b]\ndecider = \"loop_a\"\nnarrator = \"free\"\n\
             [players.model_decides]\ndecider = \"free\"\nnarrator = \"free\"\n\
             [players.rule_narrates]\ndecider = \"rule:tough\"\nnarrator = \"rule:linear\"\n",
            url = mock.url
        ),
    )
    .unwrap();
    let run_with = |config: &Path, learner: &str| {
        let stem = config.file_stem().unwrap().to_string_lossy();
        let out = dir.join(format!("{stem}-{learner}.jsonl"));
        let output = dealgym_cli([
            "run",
            "--config",
            config.to_str().unwrap(),
            "--scenarios",
            scenarios("craigslist").to_str().unwrap(),
            "--limit",
            "2",
            "--learner",
            learner,
            "--opponent",
            "rule:linear",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        (output, out)
    };
    let run = |learner: &str| run_with(&config, learner);
    // `grammar` is the default of a narrator with a `constrain`.
    for (learner, force) in [("prompted", "prompt"), ("grammar", "grammar")] {
        let (output, out) = run(learner);
        succeeded(output);
        for record in read_log(&out) {
            for turn in record.turns.iter().filter(|t| t.seat == Seat::Learner) {
                let n = turn.narration.as_ref().unwrap();
                assert_eq!(n.force.name(), force);
                assert!(turn.raw.ends_with(&n.decided));
                // Under the grammar the turn is checked against it (the mock writes the line).
                assert_eq!(
                    turn.constraint.map(|c| c.admitted),
                    (force == "grammar").then_some(true),
                    "{}",
                    turn.raw
                );
            }
        }
        verify(&out);
    }
    // A narrated seat writes text: a learner asked to act through tools is refused at setup.
    let tools = dir.join("tools.toml");
    std::fs::write(
        &tools,
        format!(
            "[episode]\nlearner_format = \"tools\"\n{}",
            std::fs::read_to_string(&config).unwrap()
        ),
    )
    .unwrap();
    let (output, out) = run_with(&tools, "prompted");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not tools"), "{stderr}");
    assert_eq!(common::whole_lines(&out), 0, "nothing was played");
    for (learner, why) in [
        ("grammar_free", "needs the narrator's `constrain`"),
        ("grammar_exact", "use force = \"appended\""),
        ("constrained_appended", "set `constrain = \"none\"`"),
        (
            "model_decides",
            "a decider is a rule player, a planner or a script",
        ),
        ("rule_narrates", "is not a model"),
        ("loop_a", "name each other in a cycle"),
        (
            "narrate:rule:deliberation+openai:mock@http://127.0.0.1:9/v1",
            "decides an n-party table's seat",
        ),
        ("narrate:rule:linear", "expected narrate:DECIDER+MODEL"),
    ] {
        let (output, _) = run(learner);
        assert!(!output.status.success(), "{learner} is refused");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(why), "{learner}: {stderr}");
    }
}

/// The book's eval example: a narrated player rated against the bare rule and the bare model
/// on the same setups, with the narrated seat's consistency beside it in the report.
#[test]
fn the_eval_rates_a_narrated_player_beside_the_bare_rule_and_the_bare_model() {
    let mock = threaded_mock(MockConfig::default());
    let conceder = threaded_mock(MockConfig {
        tactic: dealgym::agents::Tactic::Conceder,
        ..MockConfig::default()
    });
    let dir = temp_dir("narrated-eval");
    let out = dir.join("eval.jsonl");
    let summary_path = dir.join("summary.json");
    succeeded(dealgym_cli([
        "eval",
        "--player",
        &format!("narrated=narrate:rule:linear+openai:mock@{}", conceder.url),
        "--player",
        &format!("bare=openai:mock@{}", conceder.url),
        "--player",
        "linear=rule:linear",
        "--opponent",
        &format!("seller=openai:mock@{}", mock.url),
        "--no-baseline",
        "--scenarios",
        scenarios("ahp").to_str().unwrap(),
        "--limit",
        "60",
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
    let cells = summary["matrix"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["family"] == "all")
        .unwrap()["cells"]
        .as_array()
        .unwrap()
        .clone();
    let cell = |name: &str| {
        cells
            .iter()
            .find(|c| c["learner"] == name)
            .unwrap_or_else(|| panic!("no {name} cell"))
            .clone()
    };
    let (narrated, bare, linear) = (cell("narrated"), cell("bare"), cell("linear"));
    // The decider's moves, so the rule's outcome; above the conceding model's, intervals apart.
    let value = |c: &Value| c["rho_deals"]["value"].as_f64().unwrap();
    assert!(
        (value(&narrated) - value(&linear)).abs() < 1e-12,
        "{narrated} vs {linear}"
    );
    assert!(
        narrated["rho_deals"]["low"].as_f64().unwrap()
            > bare["rho_deals"]["high"].as_f64().unwrap(),
        "{narrated} vs {bare}"
    );
    let md = report(&dir, &out);
    assert!(md.contains("narration consistent % learner"), "{md}");
}

/// `dealgym serve`: a client names a narrated opponent (its narrator an endpoint the operator
/// allows); the rollout's records carry the opponent's narrations and the server's log
/// replays identically.
#[tokio::test]
async fn a_served_rollout_plays_a_narrated_opponent() {
    use dealgym::serve::{ServeOptions, Server};
    use dealgym_mock::MockServer;
    let mock = MockServer::start("127.0.0.1:0".parse().unwrap(), MockConfig::default())
        .await
        .unwrap();
    let dir = temp_dir("narrated-serve");
    let log = dir.join("serve.jsonl");
    let mut options = ServeOptions::new(
        "127.0.0.1:0".parse().unwrap(),
        vec![scenarios("casino"), scenarios("ahp")],
        log.clone(),
    );
    options.policy.endpoints = vec![mock.base_url()];
    let server = Server::start(options).await.unwrap();
    let body = serde_json::json!({
        "scenarios": [{"family": "casino", "count": 2}, {"family": "ahp", "count": 1}],
        "seed": 5,
        "learner": {"endpoint": mock.base_url(), "model": "mock"},
        "opponent": format!("narrate:rule:boulware+openai:mock@{}", mock.base_url()),
    });
    let response = reqwest::Client::new()
        .post(format!("{}/v1/rollouts", server.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.unwrap();
    let records: Vec<dealgym::record::EpisodeRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3);
    for record in &records {
        let opponent: Vec<_> = record
            .turns
            .iter()
            .filter(|t| t.seat == Seat::Opponent)
            .collect();
        assert!(!opponent.is_empty());
        assert!(opponent.iter().all(|t| t.narration.is_some()), "{text}");
        assert!(record
            .turns
            .iter()
            .all(|t| t.seat == Seat::Opponent || t.narration.is_none()));
    }
    server.shutdown().await;
    mock.stop();
    let verify = succeeded(dealgym_cli([
        "replay",
        "--verify",
        log.to_str().unwrap(),
        "--scenarios",
        scenarios("casino").to_str().unwrap(),
        "--scenarios",
        scenarios("ahp").to_str().unwrap(),
    ]));
    assert!(String::from_utf8_lossy(&verify.stdout).contains("replay identically"));
}

/// A narrator whose Talk contradicts half its moves (the mock's `narrate_unfaithful_rate`): its
/// moves are still the decider's, each contradiction is kept on its turn, and the seat's
/// consistency in the summary and the report is what the turns say.
#[test]
fn an_unfaithful_narrators_contradictions_are_counted_and_reported() {
    let mock = threaded_mock(MockConfig {
        narrate_unfaithful_rate: 0.5,
        ..MockConfig::default()
    });
    let dir = temp_dir("narrated-unfaithful");
    let out = dir.join("ahp.jsonl");
    succeeded(dealgym_cli([
        "run",
        "--scenarios",
        scenarios("ahp").to_str().unwrap(),
        "--limit",
        "20",
        "--learner",
        &format!("narrate:rule:linear+openai:mock@{}", mock.url),
        "--opponent",
        "rule:boulware",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));
    let (mut narrated, mut contradicted) = (0, 0);
    for record in read_log(&out) {
        for turn in record.turns.iter().filter(|t| t.seat == Seat::Learner) {
            let n = turn.narration.as_ref().unwrap();
            narrated += 1;
            contradicted += usize::from(!n.contradictions.is_empty());
            // Whatever the Talk says, the move is the decided one.
            assert!(turn.raw.ends_with(&n.decided));
        }
        let m = &record.outcome.metrics.seats[Seat::Learner];
        let mine = record.turns.iter().filter(|t| t.seat == Seat::Learner);
        assert_eq!(
            m.contradicted as usize,
            mine.filter(|t| !t.narration.as_ref().unwrap().contradictions.is_empty())
                .count()
        );
    }
    assert!(
        0 < contradicted && contradicted < narrated,
        "{contradicted} of {narrated}"
    );
    let expected = 100.0 * (narrated - contradicted) as f64 / narrated as f64;
    let md = report(&dir, &out);
    assert!(
        md.contains(&format!("{expected:.1}")),
        "{expected:.1} in\n{md}"
    );
}
