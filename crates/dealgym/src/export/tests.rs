//! The text formats against the engine's own views, on hand-played episodes with a correction,
//! a regulated move, a `<think>` block and a format forfeit; token-format skipping. The group
//! arithmetic has its own tests in `groups.rs`; tests/export.rs runs every format through the
//! command line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::*;
use crate::fixtures::{casino, setup_with, turn};
use crate::game::{
    Episode, EpisodeConfig, EpisodeSeed, FirstMover, Message, MessageRole, TurnTokens,
};
use crate::record::{PlayerInfo, RecordMeta, Timing};
use crate::reward::RewardConfig;
use crate::scenario::{Role, Scenario};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dealgym-export-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn record(scenario: &Arc<Scenario>, member: u64, completions: &[String]) -> EpisodeRecord {
    let setup = setup_with(
        scenario,
        &EpisodeConfig {
            learner_role: Some(Role::Agent1),
            first_mover: FirstMover::Learner,
            floor_fraction: Some(0.5),
            ..EpisodeConfig::default()
        },
    );
    let mut episode = Episode::new(scenario.clone(), setup).unwrap();
    for c in completions {
        episode.step(c.as_str()).unwrap();
    }
    assert!(episode.outcome().is_some(), "the episode must end");
    let meta = RecordMeta {
        run_id: "run-test".into(),
        seeds: EpisodeSeed {
            run: 1,
            group: 0,
            member,
        },
        scenario_digest: scenario.digest(),
        players: PerSeat::new(
            PlayerInfo {
                spec: "script:learner.json".into(),
                model: None,
            },
            PlayerInfo {
                spec: "script:opponent.json".into(),
                model: None,
            },
        ),
    };
    EpisodeRecord::from_episode(
        episode,
        meta,
        &RewardConfig::default(),
        Timing::default(),
        [],
    )
    .unwrap()
}

/// Episode 0 (learner agent_1, values 5/4/3; opponent agent_2, values 3/4/5, regulated with a
/// floor of 0.5 · 36 = 18):
/// 0. learner, with a `<think>` block: food 3, water 3 for itself (the opponent would get
///    firewood 3 = 15 points);
/// 1. opponent: unreadable → a correction;
/// 2. opponent accepts the 15-point deal → regulation replaces it by REJECT_DEAL (15 < 18);
/// 3. learner: food 3, water 1 (the opponent would get water 2 + firewood 3 = 8 + 15 = 23);
/// 4. opponent accepts: a deal.
///
/// Episode 1: the learner writes nonsense twice and forfeits; the opponent never moves.
fn write_records(dir: &Path) -> (PathBuf, PathBuf, Vec<EpisodeRecord>) {
    let scenario = casino();
    let deal = record(
        &scenario,
        0,
        &[
            format!(
                "<think>they want firewood</think>\n{}",
                turn("Hi", "[SUBMIT_DEAL] food:3 water:3 firewood:0")
            ),
            "gibberish".to_string(),
            turn("Fine", "[ACCEPT_DEAL]"),
            turn("Then this", "[SUBMIT_DEAL] food:3 water:1 firewood:0"),
            turn("Deal", "[ACCEPT_DEAL]"),
        ],
    );
    assert_eq!(deal.kind(), OutcomeKind::Deal);
    assert!(deal.turns[2].regulation.is_some());
    let forfeit = record(
        &scenario,
        1,
        &["nonsense".to_string(), "more nonsense".to_string()],
    );
    assert_eq!(forfeit.kind(), OutcomeKind::FormatForfeit);
    let records = vec![deal, forfeit];
    let file = dir.join("episodes.jsonl");
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&file, text).unwrap();
    let scenarios = dir.join("scenarios.jsonl");
    std::fs::write(
        &scenarios,
        serde_json::to_string(&*scenario).unwrap() + "\n",
    )
    .unwrap();
    (file, scenarios, records)
}

fn run(options: &ExportOptions) -> (Vec<Value>, ExportSummary) {
    let mut out = Vec::new();
    let summary = export(options, &mut out).unwrap_or_else(|e| panic!("{e}"));
    let lines = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, summary)
}

fn options(dir: &str, format: Format) -> (ExportOptions, Vec<EpisodeRecord>) {
    let dir = temp_dir(dir);
    let (file, scenarios, records) = write_records(&dir);
    let mut options = ExportOptions::new(vec![file], format);
    options.scenarios = vec![scenarios];
    options.seats = Seats::Both;
    (options, records)
}

fn messages(value: &Value) -> Vec<Message> {
    serde_json::from_value(value.clone()).unwrap()
}

fn replay(record: &EpisodeRecord) -> Episode {
    record.replay(&casino(), &Prompts::builtin()).unwrap()
}

#[test]
fn messages_are_the_conversation_the_engine_sent_up_to_the_seats_last_completion() {
    let (options, records) = options("messages", Format::Messages);
    let (lines, summary) = run(&options);
    assert_eq!(lines.len(), 3, "the forfeit's opponent never moved");
    assert_eq!(summary.no_turns, 1);
    assert_eq!((summary.episodes, summary.written), (2, 3));

    // A seat whose last turn took effect: its view, up to and including its last own message
    // (the counterpart's answer after it was never sent to the seat).
    let deal = replay(&records[0]);
    for (line, seat) in lines[..2].iter().zip(Seat::BOTH) {
        assert_eq!(line["seat"], seat.name());
        let view = deal.view(seat);
        let last_own = view
            .iter()
            .rposition(|m| m.role == MessageRole::Assistant)
            .unwrap();
        assert_eq!(messages(&line["messages"]), view[..=last_own].to_vec());
    }
    // The assistant message is the completion minus its <think> block, Thought included.
    let first_reply = &lines[0]["messages"][2]["content"];
    assert_eq!(
        first_reply.as_str().unwrap(),
        records[0].turns[0].raw[33..].trim()
    );
    assert!(first_reply
        .as_str()
        .unwrap()
        .starts_with("Thought: thinking"));

    // A forfeit: the last completion never entered the view; it closes the conversation.
    let forfeit = replay(&records[1]);
    let mut expected = forfeit.view(Seat::Learner).to_vec();
    expected.push(Message::new(MessageRole::Assistant, "more nonsense"));
    assert_eq!(messages(&lines[2]["messages"]), expected);
    assert_eq!(lines[2]["outcome"], "format_forfeit");
    assert_eq!(lines[2]["reward"], -1.0);
}

#[test]
fn prompt_completion_gives_each_turn_what_its_call_was_sent_and_its_signals() {
    let (mut options, records) = options("prompt-completion", Format::PromptCompletion);
    options.seats = Seats::Opponent;
    let (lines, _) = run(&options);
    let deal = replay(&records[0]);
    let view = deal.view(Seat::Opponent);
    assert_eq!(lines.len(), 3, "the opponent's three attempts");
    for line in &lines {
        // Every call's prompt and its answer are a prefix of the final view; the prompt ends
        // with what the seat was last sent.
        let mut sent = messages(&line["prompt"]);
        assert_eq!(sent.last().unwrap().role, MessageRole::User);
        sent.extend(messages(&line["completion"]));
        assert_eq!(sent[..], view[..sent.len()]);
    }
    let signals = |l: &Value| {
        (
            l["turn_index"].as_u64().unwrap(),
            l["seat_turn"].as_u64().unwrap(),
            l["attempt"].as_u64().unwrap(),
            l["format_ok"].as_bool().unwrap(),
            l["error_kind"].clone(),
            l["played"].clone(),
        )
    };
    assert_eq!(
        signals(&lines[0]),
        (1, 0, 0, false, "format".into(), Value::Null)
    );
    assert_eq!(
        signals(&lines[1]),
        (2, 1, 1, true, Value::Null, "[REJECT_DEAL]".into())
    );
    assert_eq!(
        lines[1]["regulation"],
        serde_json::json!({"original": "[ACCEPT_DEAL]", "replacement": "[REJECT_DEAL]",
                           "utility": 15.0, "floor": 18.0})
    );
    assert_eq!(lines[2]["regulation"], Value::Null);
    assert_eq!(lines[2]["played"], "[ACCEPT_DEAL]");
    // The correction made the second prompt two messages longer than the first.
    let len = |l: &Value| l["prompt"].as_array().unwrap().len();
    assert_eq!(len(&lines[1]), len(&lines[0]) + 2);

    options.last_k = Some(1);
    let (short, _) = run(&options);
    for line in &short {
        let prompt = messages(&line["prompt"]);
        assert_eq!(prompt.len(), 2);
        assert_eq!(prompt[0].role, MessageRole::System);
        assert_eq!(prompt[1].role, MessageRole::User);
    }
    assert_eq!(
        messages(&short[1]["prompt"])[1].content,
        messages(&lines[1]["prompt"]).last().unwrap().content,
        "the one kept message is the correction"
    );
}

#[test]
fn token_formats_skip_seats_without_exact_ids_and_never_re_tokenize() {
    let (mut options, mut records) = options("tokens", Format::TrlRollout);
    // Exact ids on the deal's learner turns only.
    for (k, t) in records[0]
        .turns
        .iter_mut()
        .filter(|t| t.seat == Seat::Learner)
        .enumerate()
    {
        let k = k as u32;
        t.tokens = Some(TurnTokens {
            prompt_ids: vec![10 * k + 1],
            completion_ids: vec![10 * k + 5, 10 * k + 6],
            logprobs: vec![-0.5, -0.25],
            ..TurnTokens::default()
        });
    }
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&options.files[0], text).unwrap();
    let (lines, summary) = run(&options);
    assert_eq!(lines.len(), 1);
    // learner: [1] | [5, 6] · [11] · [15, 16]
    assert_eq!(lines[0]["prompt_ids"], serde_json::json!([1]));
    assert_eq!(
        lines[0]["completion_ids"],
        serde_json::json!([5, 6, 11, 15, 16])
    );
    assert_eq!(lines[0]["env_mask"], serde_json::json!([1, 1, 0, 1, 1]));
    assert_eq!(
        lines[0]["logprobs"],
        serde_json::json!([-0.5, -0.25, 0.0, -0.5, -0.25])
    );
    // The deal's opponent has no ids (skipped), the forfeit's learner neither, and the
    // forfeit's opponent made no call.
    assert_eq!(
        (summary.no_tokens, summary.no_turns, summary.written),
        (2, 1, 1)
    );
    let said = summary.skipped_line(Format::TrlRollout).unwrap();
    assert!(
        said.starts_with("skipped 3 seat-episodes: 2 without token ids"),
        "{said}"
    );
    assert!(said.contains("never re-tokenizes"), "{said}");

    records[0].turns[0].tokens.as_mut().unwrap().logprobs.pop();
    let text = serde_json::to_string(&records[0]).unwrap() + "\n";
    std::fs::write(&options.files[0], text).unwrap();
    options.seats = Seats::Learner;
    let (lines, summary) = run(&options);
    assert!(lines.is_empty());
    assert_eq!(summary.bad_tokens, 1);
}

#[test]
fn a_missing_scenario_is_an_error_that_says_where_it_looked() {
    let (mut options, _) = options("missing", Format::Messages);
    let dir = temp_dir("missing-dir");
    options.scenarios.clear();
    options.scenario_dir = dir.clone();
    std::fs::write(dir.join("casino.jsonl"), {
        let mut other = (*casino()).clone();
        other.id = "t:other".into();
        serde_json::to_string(&other).unwrap() + "\n"
    })
    .unwrap();
    let err = export(&options, &mut Vec::new()).unwrap_err().to_string();
    // The words of the one finder `replay` and `run --prefixes` use too.
    assert!(err.contains("scenario t:casino is in none of "), "{err}");
    assert!(err.contains("casino.jsonl"), "{err}");
    options.scenario_dir = dir.join("nowhere");
    let err = export(&options, &mut Vec::new()).unwrap_err().to_string();
    assert!(err.contains("nowhere/casino.jsonl (not found)"), "{err}");
    assert!(err.contains("--scenarios"), "{err}");
}

#[test]
fn a_format_is_read_back_by_its_name_and_an_unknown_one_lists_them() {
    for format in Format::ALL {
        assert_eq!(format.name().parse::<Format>(), Ok(format));
        assert_eq!(format.to_string(), format.name());
    }
    assert_eq!(
        "Verl".parse::<Format>().unwrap_err(),
        "unknown format `Verl`: messages, prompt-completion, verl, trl-rollout, tinker, transitions or campaigns"
    );
    for seats in Seats::ALL {
        assert_eq!(seats.name().parse::<Seats>(), Ok(seats));
    }
    assert!("all".parse::<Seats>().is_err());
}
