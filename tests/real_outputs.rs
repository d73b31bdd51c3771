//! Raw completions a real model wrote (tests/fixtures/real/, from `scripts/real-model.sh`
//! against llama.cpp with SmolLM2-135M-Instruct), each with the parse and error kind the engine
//! must give it. They are what taught the parser its rules for real outputs: replies that go on
//! after their turn, made-up labels and tokens, replies cut at max_tokens, copied instructions.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use dealgym::game::{Episode, EpisodeConfig, FirstMover, Seat};
use dealgym::protocol::{
    copies_instructions, parse, render_action, ErrorKind, Instructions, ParseNote,
};
use dealgym::scenario::{load_scenarios, LoadOptions, Role, Scenario};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    failure: String,
    family: String,
    scenario_id: String,
    role: Role,
    raw: String,
    #[serde(default)]
    system_prompt: Option<String>,
    expect: Expect,
}

#[derive(Deserialize)]
struct Expect {
    format_ok: bool,
    error_kind: Option<ErrorKind>,
    action: Option<String>,
    #[serde(default)]
    note: Option<ParseNote>,
    #[serde(default)]
    copies_instructions: bool,
}

fn fixtures() -> Vec<Fixture> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real/smollm2.json");
    serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture file")).expect("fixtures")
}

fn scenarios(families: impl Iterator<Item = String>) -> HashMap<String, Arc<Scenario>> {
    let mut all = HashMap::new();
    for family in families {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{family}.jsonl"));
        for s in load_scenarios(&file, LoadOptions::default())
            .expect("scenario file")
            .scenarios
        {
            all.insert(s.id.clone(), Arc::new(s));
        }
    }
    all
}

#[test]
fn every_real_completion_gets_its_expected_parse_and_error_kind() {
    let fixtures = fixtures();
    assert!(fixtures.len() >= 10);
    let mut families: Vec<String> = fixtures.iter().map(|f| f.family.clone()).collect();
    families.dedup();
    let scenarios = scenarios(families.into_iter());
    for f in &fixtures {
        let scenario = &scenarios[&f.scenario_id];
        let space = scenario.term_space();
        let p = parse(&f.raw, space, None);
        let what = format!("{} ({}): {:?}", f.failure, f.scenario_id, p);
        assert_eq!(p.format_ok, f.expect.format_ok, "{what}");
        assert_eq!(
            p.error.as_ref().map(|e| e.kind),
            f.expect.error_kind,
            "{what}"
        );
        assert_eq!(
            p.action.as_ref().map(|a| render_action(a, space, true)),
            f.expect.action,
            "{what}"
        );
        assert_eq!(p.note, f.expect.note, "{what}");
        if let Some(prompt) = &f.system_prompt {
            assert_eq!(
                copies_instructions(&p, &Instructions::new(prompt)),
                f.expect.copies_instructions,
                "{what}"
            );
        }
    }
}

/// Through the engine, a turn that copies its instructions is played and format-ok (its format
/// is as asked), and noted as a copy.
#[test]
fn the_engine_marks_a_turn_that_copies_its_instructions() {
    let fixtures = fixtures();
    let copied = fixtures
        .iter()
        .find(|f| f.expect.copies_instructions)
        .expect("a copied-instructions fixture");
    let scenarios = scenarios(std::iter::once(copied.family.clone()));
    let scenario = scenarios[&copied.scenario_id].clone();
    let config = EpisodeConfig {
        learner_role: Some(copied.role),
        first_mover: FirstMover::Learner,
        ..EpisodeConfig::default()
    };
    let setup = dealgym_core::fixtures::setup_with(&scenario, &config);
    let mut episode = Episode::new(scenario, setup).expect("episode");
    assert_eq!(episode.to_move(), Some(Seat::Learner));
    let step = episode.step(copied.raw.as_str()).expect("step");
    assert!(step.played.is_some(), "a readable move is played");
    assert!(step.parsed.format_ok, "the format is as asked");
    assert_eq!(step.parsed.note, Some(ParseNote::CopiedInstructions));
    // A turn in the model's own words is not flagged.
    let own = "Thought: I want the firewood most.\nTalk: Could I have all the firewood?\nAction: [REJECT_DEAL]";
    let step = episode.step(own).expect("step");
    assert!(
        step.parsed.format_ok && step.parsed.note.is_none(),
        "{:?}",
        step.parsed
    );
}
