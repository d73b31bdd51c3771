//! Exact replay of a run's records with the prompt templates the run used (a `prompts_dir`),
//! and refusal, saying what differs, when the templates or the scenario are not those. Rule
//! players only: no endpoint is needed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dealgym::game::{Episode, MessageRole, Prompts, Seat};
use dealgym::record::{EpisodeRecord, RecordReader, ReplayError};
use dealgym::run::{run, RunOptions};
use dealgym::scenario::{load_scenarios, DealSpace, LoadOptions, Scenario};

const OPENING: &str = "Custom opening ({{ format }}): the floor is yours.";

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dealgym-replay-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A prompts directory: the built-in CaSiNo system prompt with a house rule added, and another
/// opening message.
fn write_prompts(dir: &Path, opening: &str) {
    let casino = std::fs::read_to_string(manifest().join("prompts/casino_agent.j2")).unwrap();
    std::fs::write(
        dir.join("casino_agent.j2"),
        format!("{casino}\nHouse rule: keep every message under fifty words."),
    )
    .unwrap();
    std::fs::write(dir.join("opening.j2"), opening).unwrap();
}

fn casino_file() -> PathBuf {
    manifest().join("scenarios/casino.jsonl")
}

fn scenarios() -> BTreeMap<String, Arc<Scenario>> {
    load_scenarios(&casino_file(), LoadOptions::default())
        .unwrap()
        .scenarios
        .into_iter()
        .map(|s| (s.id.clone(), Arc::new(s)))
        .collect()
}

/// Run rule players on a few CaSiNo scenarios with the custom prompts; the records it wrote and
/// the prompts directory.
async fn run_with_custom_prompts(name: &str) -> (PathBuf, Vec<EpisodeRecord>) {
    let dir = temp_dir(name);
    let prompts_dir = dir.join("prompts");
    std::fs::create_dir_all(&prompts_dir).unwrap();
    write_prompts(&prompts_dir, OPENING);
    let out = dir.join("episodes.jsonl");
    let mut options = RunOptions::new(vec![casino_file()], "rule:linear", "rule:boulware", out);
    options.limit = Some(4);
    options.group_size = 2;
    options.concurrency = 4;
    options.progress = false;
    options.prompts_dir = Some(prompts_dir.clone());
    let summary = run(&options, std::future::pending()).await.unwrap();
    assert_eq!(summary.written, 8);
    let records: Vec<EpisodeRecord> = RecordReader::open(&options.out)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(records.len(), 8);
    (prompts_dir, records)
}

fn user_messages(episode: &Episode, seat: Seat) -> Vec<&str> {
    episode
        .view(seat)
        .iter()
        .filter(|m| m.role == MessageRole::User)
        .map(|m| m.content.as_str())
        .collect()
}

#[tokio::test]
async fn records_of_a_run_with_a_prompts_dir_replay_exactly_with_those_templates() {
    let (prompts_dir, records) = run_with_custom_prompts("exact").await;
    let prompts = Arc::new(Prompts::with_overrides(&prompts_dir).unwrap());
    let scenarios = scenarios();
    for r in &records {
        assert_eq!(r.prompts_digest, Some(prompts.fingerprint()));
        assert_eq!(
            r.prompt_overrides.keys().collect::<Vec<_>>(),
            ["casino_agent.j2", "opening.j2"],
            "the record names the templates that were not built-ins"
        );
        let scenario = &scenarios[&r.scenario_id];
        assert_eq!(r.scenario_digest, Some(scenario.digest()));
        let episode = r
            .replay(scenario, &prompts)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            episode.turns().to_vec(),
            r.turns.iter().map(|t| t.turn.clone()).collect::<Vec<_>>(),
            "{}",
            r.episode_id
        );
        assert_eq!(episode.outcome(), Some(&r.outcome.outcome));
        for seat in Seat::BOTH {
            let system = episode.system_prompt(seat);
            assert_eq!(system, r.seats[seat].system_prompt);
            assert!(system.ends_with("House rule: keep every message under fifty words."));
            // What the seat was sent: the opening if it moved first, then exactly what its
            // counterpart's turns forwarded (rule players make no turn that needs correcting).
            let forwarded: Vec<&str> = r
                .turns
                .iter()
                .filter(|t| t.seat == seat.other())
                .filter_map(|t| t.forwarded.as_deref())
                .collect();
            let mut expected = Vec::new();
            if r.first_mover == seat {
                expected.push("Custom opening (tagged): the floor is yours.");
            }
            expected.extend(&forwarded);
            assert_eq!(user_messages(&episode, seat), expected, "{}", r.episode_id);
            if let Some(last) = forwarded.last() {
                let in_view = episode
                    .view(seat)
                    .iter()
                    .rev()
                    .find(|m| m.role == MessageRole::User);
                assert_eq!(in_view.map(|m| m.content.as_str()), Some(*last));
            }
        }
        // The same completions with the built-in templates give other views: the check matters.
        let unchecked =
            Episode::replay(scenario.clone(), r.setup.clone(), r.completions()).unwrap();
        assert_eq!(
            unchecked.turns().to_vec(),
            r.turns.iter().map(|t| t.turn.clone()).collect::<Vec<_>>()
        );
        assert_ne!(
            unchecked.view(r.first_mover)[1].content,
            episode.view(r.first_mover)[1].content
        );
    }
}

#[tokio::test]
async fn other_templates_are_refused_naming_those_that_differ() {
    let (prompts_dir, records) = run_with_custom_prompts("templates").await;
    let scenarios = scenarios();
    let r = &records[0];
    let scenario = &scenarios[&r.scenario_id];

    let err = r
        .replay(scenario, &Prompts::builtin())
        .err()
        .expect("refused");
    let shown = err.to_string();
    let ReplayError::TemplatesChanged {
        episode,
        expected,
        found,
        differing,
    } = err
    else {
        panic!("{shown}")
    };
    assert_eq!(episode, r.episode_id);
    assert_eq!(Some(expected), r.prompts_digest);
    assert_eq!(found, Prompts::builtin().fingerprint());
    let names: Vec<_> = differing.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["casino_agent.j2", "opening.j2"]);
    assert!(differing
        .iter()
        .all(|d| d.recorded.is_some() && d.here_builtin));
    assert!(
        shown.contains("opening.j2 (played with a prompts-directory template")
            && shown.contains("here the built-in"),
        "{shown}"
    );

    // A further change to one template names that one only.
    let changed = temp_dir("templates-changed");
    write_prompts(&changed, "Another opening: go ahead.");
    let other = Arc::new(Prompts::with_overrides(&changed).unwrap());
    let err = r.replay(scenario, &other).err().expect("refused");
    let ReplayError::TemplatesChanged { differing, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(differing.len(), 1, "{err}");
    assert_eq!(differing[0].name, "opening.j2");
    assert!(!differing[0].here_builtin && differing[0].here.is_some());

    // An extra template counts too, even one no message uses.
    std::fs::write(prompts_dir.join("_unused.j2"), "unused").unwrap();
    let extra = Arc::new(Prompts::with_overrides(&prompts_dir).unwrap());
    let err = r.replay(scenario, &extra).err().expect("refused");
    assert!(
        err.to_string()
            .contains("_unused.j2 (played with its build's built-in, if any, here a prompts-directory template"),
        "{err}"
    );
}

#[tokio::test]
async fn a_changed_scenario_is_refused_naming_it() {
    let (prompts_dir, records) = run_with_custom_prompts("scenario").await;
    let prompts = Arc::new(Prompts::with_overrides(&prompts_dir).unwrap());
    let scenarios = scenarios();
    let r = &records[0];
    let mut changed = (*scenarios[&r.scenario_id]).clone();
    let DealSpace::Items { agent_1, .. } = &mut changed.game else {
        panic!("CaSiNo is an items game")
    };
    agent_1.values[0] += 1;
    let err = r
        .replay(&Arc::new(changed), &prompts)
        .err()
        .expect("refused");
    let shown = err.to_string();
    match err {
        ReplayError::ScenarioChanged {
            scenario,
            expected,
            found,
            ..
        } => {
            assert_eq!(scenario, r.scenario_id);
            assert_eq!(Some(expected), r.scenario_digest);
            assert_ne!(expected, found);
        }
        other => panic!("{other}"),
    }
    assert!(
        shown.contains(&format!("scenario {} is not the one", r.scenario_id)),
        "{shown}"
    );

    let another = scenarios.values().find(|s| s.id != r.scenario_id).unwrap();
    let err = r.replay(another, &prompts).err().expect("refused");
    assert!(
        matches!(&err, ReplayError::WrongScenario { expected, found, .. }
            if *expected == r.scenario_id && *found == another.id),
        "{err}"
    );
}

#[tokio::test]
async fn a_record_older_than_the_digests_still_reads_and_replays_unchecked() {
    let (prompts_dir, records) = run_with_custom_prompts("old").await;
    let prompts = Arc::new(Prompts::with_overrides(&prompts_dir).unwrap());
    let r = &records[0];
    let mut old = serde_json::to_value(r).unwrap();
    for key in ["scenario_digest", "prompts_digest", "prompt_overrides"] {
        assert!(old.as_object_mut().unwrap().remove(key).is_some(), "{key}");
    }
    let line = format!("{old}\n");
    let back: Vec<EpisodeRecord> = RecordReader::new(line.as_bytes(), "old.jsonl")
        .collect::<Result<_, _>>()
        .unwrap();
    let back = &back[0];
    assert!(back.scenario_digest.is_none() && back.prompts_digest.is_none());
    assert!(back.prompt_overrides.is_empty());
    let episode = back
        .replay(&scenarios()[&back.scenario_id], &prompts)
        .unwrap();
    assert_eq!(
        episode.turns().to_vec(),
        r.turns.iter().map(|t| t.turn.clone()).collect::<Vec<_>>()
    );
}
