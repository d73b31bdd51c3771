//! Prefix runs (`run --prefixes`): GRPO prompts cut from logged dialogues. The source records
//! are made here by a normal run of rule (and script) players on CaSiNo; the helpers take any
//! record file; the last test continues people's dialogues (`dealgym dialogues import`).

use crate::common;

use common::{out_file, read_log, run_to_end, temp_dir};

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use dealgym::game::{OutcomeKind, Seat};
use dealgym::record::EpisodeRecord;
use dealgym::replay::{BranchOptions, VerifyOptions};
use dealgym::reward::{Component, RewardConfig};
use dealgym::run::{Cut, PrefixOptions, RunOptions, SkipReason, Targets};
use dealgym_mock::{MockConfig, MockServer};

/// The first `n` CaSiNo scenarios, in a file of their own.
fn casino(dir: &Path, n: usize) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl");
    let text = std::fs::read_to_string(source).unwrap();
    let head: String = text.lines().take(n).map(|l| format!("{l}\n")).collect();
    let path = dir.join("casino.jsonl");
    std::fs::write(&path, head).unwrap();
    path
}

/// A log of `n` CaSiNo episodes between two players: the source records of a prefix run.
/// The rules let the rule players talk long (no reject loop, 8 rounds each).
async fn source_log(name: &str, n: usize, learner: &str, opponent: &str) -> PathBuf {
    let dir = temp_dir(&format!("prefix-source-{name}"));
    let mut o = RunOptions::new(
        vec![casino(&dir, n)],
        learner,
        opponent,
        dir.join("source.jsonl"),
    );
    o.progress = false;
    o.seed = 5;
    o.episode.reject_loop = 0;
    o.episode.max_rounds = 8;
    run_to_end(&o).await;
    o.out
}

/// A prefix run over `sources` with `cut`, continued by `learner` and `opponent`.
fn prefix_run(
    sources: &Path,
    cut: Cut,
    continue_turns: Option<u32>,
    (learner, opponent): (&str, &str),
    out: PathBuf,
) -> RunOptions {
    let mut o = RunOptions::new(Vec::new(), learner, opponent, out);
    o.scenarios = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl")];
    o.progress = false;
    o.concurrency = 8;
    o.group_size = 3;
    o.prefixes = Some(PrefixOptions {
        files: vec![sources.to_path_buf()],
        cut,
        targets: Targets::First,
        continue_turns,
    });
    o
}

fn by_id(records: &[EpisodeRecord]) -> BTreeMap<String, &EpisodeRecord> {
    records.iter().map(|r| (r.episode_id.clone(), r)).collect()
}

async fn mock() -> MockServer {
    MockServer::start(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        MockConfig::default(),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_shares_its_prefix_and_the_record_names_the_source() {
    let sources = source_log("groups", 6, "rule:linear", "rule:boulware").await;
    let source = read_log(&sources);
    let source = by_id(&source);
    let mock = mock().await;
    let learner = format!("openai:mock@{}", mock.base_url());
    let o = prefix_run(
        &sources,
        Cut::split(0.5).unwrap(),
        None,
        (&learner, "rule:linear"),
        out_file("prefix-groups"),
    );
    let summary = run_to_end(&o).await;
    mock.stop();
    let records = read_log(&o.out);
    assert_eq!(records.len(), 6 * 3);
    let report = summary.prefixes.expect("a prefix run reports its sources");
    assert_eq!((report.sources, report.groups), (6, 6));
    let mut groups: BTreeMap<&str, Vec<&EpisodeRecord>> = BTreeMap::new();
    for r in &records {
        groups.entry(r.group_id.as_str()).or_default().push(r);
    }
    assert_eq!(groups.len(), 6);
    for members in groups.values() {
        let parent = members[0].parent.clone().expect("a parent");
        let logged = source[&parent.episode_id];
        assert_eq!(parent.run_id, logged.run_id);
        // ceil(T / 2), T − 1 at most.
        let t = logged.turns.len();
        assert_eq!(parent.prefix_turns, t.div_ceil(2).min(t - 1));
        let n = parent.prefix_turns;
        let mut seeds = BTreeSet::new();
        for r in members {
            assert_eq!(r.parent.as_ref(), Some(&parent), "one prefix per group");
            assert_eq!(r.scenario_id, logged.scenario_id);
            // The prefix is the log's, turn for turn, in the same roles.
            for (new, old) in r.turns[..n].iter().zip(&logged.turns) {
                assert_eq!(new.raw, old.raw);
                assert_eq!(
                    r.setup.seats[new.seat].role,
                    logged.setup.seats[old.seat].role
                );
            }
            // The learner writes the first new turn: the seat of the next speaker.
            assert_eq!(r.turns[n].seat, Seat::Learner);
            assert_eq!(
                r.setup.seats.learner.role,
                logged.setup.seats[logged.turns[n].seat].role
            );
            assert!(r.seats.learner.player.as_str().starts_with("openai:mock"));
            assert_eq!(r.setup.rules.continuation.unwrap().prefix_turns, n);
            assert!(seeds.insert(r.seats.learner.sampling_seed));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_step_run_scores_one_learner_turn_per_episode() {
    let sources = source_log("one-step", 6, "rule:linear", "rule:conceder").await;
    let mut o = prefix_run(
        &sources,
        Cut::split(0.4).unwrap(),
        Some(1),
        ("rule:tough", "rule:linear"),
        out_file("prefix-one-step"),
    );
    o.rewards = RewardConfig {
        weights: [
            (Component::Terminal, 1.0),
            (Component::Format, 0.1),
            (Component::Points, 0.5),
        ]
        .into(),
        ..RewardConfig::default()
    };
    run_to_end(&o).await;
    let records = read_log(&o.out);
    assert_eq!(records.len(), 6 * 3);
    for r in &records {
        let n = r.parent.as_ref().unwrap().prefix_turns;
        assert_eq!(
            r.turns.len(),
            n + 1,
            "{}: one move after the prefix",
            r.episode_id
        );
        let scored: Vec<usize> = (0..r.turns.len())
            .filter(|i| !r.turns[*i].rewards.is_empty())
            .collect();
        assert_eq!(scored, [n], "{}: only the learner's turn", r.episode_id);
        assert_eq!(r.turns[n].seat, Seat::Learner);
        match r.kind() {
            OutcomeKind::MaxTurns => assert_eq!(r.outcome.outcome.by, None),
            OutcomeKind::Deal | OutcomeKind::WalkAway => {}
            other => panic!("{}: {other:?}", r.episode_id),
        }
        // Its metrics are of that one turn too, never the logged prefix's.
        let metrics = &r.outcome.metrics.seats;
        assert_eq!(metrics.learner.turns, 1, "{}", r.episode_id);
        assert_eq!(metrics.opponent.turns, 0, "{}", r.episode_id);
        // The learner's per-turn parts are its one turn's.
        let turn = &r.turns[n].rewards;
        assert_eq!(r.reward_parts.learner[Component::Points], turn["points"]);
        assert_eq!(
            r.reward_parts.opponent[Component::Format],
            0.0,
            "no opponent turn"
        );
    }
    assert!(records.iter().any(|r| r.kind() == OutcomeKind::MaxTurns));
    // The engine replays them as written, continuation and per-turn rewards included.
    let report = dealgym::replay::verify(&VerifyOptions {
        files: vec![o.out.clone()],
        episode: None,
        scenarios: o.scenarios.clone(),
        prompts_dir: None,
        rewards: Some(o.rewards.clone()),
        on_duplicate: Default::default(),
    })
    .unwrap();
    assert!(report.is_clean(), "{}", report.table());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_over_every_target_turn_makes_one_group_per_turn_after_the_cut() {
    // The CaSiNo harness's prompt_split (§3.3.2): every turn after the first ceil(S·T) of a
    // dialogue of T turns is a target, with everything before it as context — T − ceil(S·T)
    // one-step GRPO groups per dialogue, not one.
    let sources = source_log("every", 4, "rule:linear", "rule:boulware").await;
    let source = read_log(&sources);
    let mut o = prefix_run(
        &sources,
        Cut::split(0.5).unwrap(),
        Some(1),
        ("rule:tough", "rule:linear"),
        out_file("prefix-every"),
    );
    o.prefixes.as_mut().unwrap().targets = Targets::Every;
    let summary = run_to_end(&o).await;
    let want: BTreeMap<String, BTreeSet<usize>> = source
        .iter()
        .map(|r| {
            let t = r.turns.len();
            (
                r.episode_id.clone(),
                (t.div_ceil(2).min(t - 1)..t).collect(),
            )
        })
        .collect();
    let groups: usize = want.values().map(BTreeSet::len).sum();
    assert!(groups > source.len(), "more prompts than dialogues");
    let report = summary.prefixes.expect("a prefix run reports its sources");
    assert_eq!((report.sources, report.groups), (source.len(), groups));
    let records = read_log(&o.out);
    assert_eq!(records.len(), groups * 3);
    // Each target turn of each dialogue is one group's prefix, and every member writes that
    // turn's place as the learner, scored alone.
    let mut got: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    let mut per_group: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
    for r in &records {
        let parent = r.parent.as_ref().expect("a parent");
        got.entry(parent.episode_id.clone())
            .or_default()
            .insert(parent.prefix_turns);
        per_group
            .entry(r.group_id.as_str())
            .or_default()
            .insert(parent.prefix_turns);
        assert_eq!(r.turns[parent.prefix_turns].seat, Seat::Learner);
        assert_eq!(r.turns.len(), parent.prefix_turns + 1);
    }
    assert_eq!(got, want);
    assert!(
        per_group.values().all(|cuts| cuts.len() == 1),
        "one target per group"
    );
    assert_eq!(per_group.len(), groups);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_prefix_run_plays_only_what_is_missing_and_gives_the_same_records() {
    let sources = source_log("resume", 5, "rule:linear", "rule:boulware").await;
    let whole = prefix_run(
        &sources,
        Cut::Turns(3),
        Some(2),
        ("rule:conceder", "rule:tough"),
        out_file("prefix-whole"),
    );
    run_to_end(&whole).await;
    let expected = read_log(&whole.out);
    let mut part = whole.clone();
    part.out = out_file("prefix-part");
    let lines: Vec<String> = std::fs::read_to_string(&whole.out)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    std::fs::write(&part.out, format!("{}\n", lines[..7].join("\n"))).unwrap();
    part.resume = true;
    let summary = run_to_end(&part).await;
    assert_eq!((summary.skipped, summary.written), (7, expected.len() - 7));
    let comparable = |records: Vec<EpisodeRecord>| -> BTreeMap<String, serde_json::Value> {
        records
            .into_iter()
            .map(|mut r| {
                r.timing = Default::default();
                (r.episode_id.clone(), serde_json::to_value(r).unwrap())
            })
            .collect()
    };
    assert_eq!(comparable(read_log(&part.out)), comparable(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_and_ended_sources_are_skipped_and_counted() {
    let sources = source_log("skips", 8, "rule:linear", "rule:boulware").await;
    let source = read_log(&sources);
    let lengths: Vec<usize> = source.iter().map(|r| r.turns.len()).collect();
    // A cut at the median length: some sources are shorter, some end exactly there.
    let mut sorted = lengths.clone();
    sorted.sort();
    let n = sorted[sorted.len() / 2];
    let too_short = lengths.iter().filter(|t| **t < n).count();
    let ended = lengths.iter().filter(|t| **t == n).count();
    assert!(ended > 0, "lengths {lengths:?}");
    let o = prefix_run(
        &sources,
        Cut::Turns(n),
        None,
        ("rule:linear", "rule:linear"),
        out_file("prefix-skips"),
    );
    let summary = run_to_end(&o).await;
    let report = summary.prefixes.unwrap();
    let count = |reason| report.skipped.get(&reason).map_or(0, |s| s.count);
    assert_eq!(
        count(SkipReason::TooShort),
        too_short,
        "lengths {lengths:?}"
    );
    assert_eq!(count(SkipReason::Ended), ended, "lengths {lengths:?}");
    assert_eq!(report.sources, 8);
    assert_eq!(report.groups, 8 - too_short - ended);
    assert_eq!(summary.written, report.groups * 3);
    let line = report.line();
    assert!(line.contains("already_ended"), "{line}");
    // Every planned source is one the cut leaves open.
    for r in read_log(&o.out) {
        let parent = r.parent.unwrap();
        assert!(source
            .iter()
            .any(|s| s.episode_id == parent.episode_id && s.turns.len() > n));
    }
    // A split never skips a source of two turns or more: it leaves the last turn out.
    let mut o = o.clone();
    o.out = out_file("prefix-skips-split");
    o.prefixes.as_mut().unwrap().cut = Cut::split(1.0).unwrap();
    let summary = run_to_end(&o).await;
    assert_eq!(summary.prefixes.unwrap().skipped_total(), 0);
    for r in read_log(&o.out) {
        let parent = r.parent.unwrap();
        let logged = source
            .iter()
            .find(|s| s.episode_id == parent.episode_id)
            .unwrap();
        assert_eq!(parent.prefix_turns, logged.turns.len() - 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_players_get_the_runs_cap_and_corrections_raised_where_the_prefix_needs_more() {
    let sources = source_log("rules", 6, "rule:linear", "rule:boulware").await;
    let source = read_log(&sources);
    let source = by_id(&source);
    let most_moves = |r: &EpisodeRecord, n: usize| {
        Seat::BOTH
            .into_iter()
            .map(|seat| r.turns[..n].iter().filter(|t| t.seat == seat).count() as u32)
            .max()
            .unwrap()
    };
    // A cap below every prefix's longer side, then one above them all.
    for cap in [1, 20] {
        let mut o = prefix_run(
            &sources,
            Cut::Turns(4),
            None,
            ("rule:linear", "rule:linear"),
            out_file(&format!("prefix-cap-{cap}")),
        );
        o.episode.max_rounds = cap;
        o.episode.format_retries = 3;
        let summary = run_to_end(&o).await;
        assert_eq!(summary.prefixes.unwrap().skipped_total(), 0);
        for r in read_log(&o.out) {
            let parent = r.parent.as_ref().unwrap();
            let logged = source[&parent.episode_id];
            let rules = r.setup.rules;
            let raised = most_moves(logged, 4) + 1;
            assert_eq!(rules.max_rounds, cap.max(raised), "cap {cap}");
            assert!(cap > raised || rules.max_rounds == raised);
            assert_eq!(rules.format_retries, 3, "the run's corrections");
            // The rest of the rules are the record's.
            assert_eq!(rules.reject_loop, logged.setup.rules.reject_loop);
            assert_eq!(r.setup.no_deal_value, logged.setup.no_deal_value);
            // The system prompt is the engine's for the new cap.
            assert_ne!(r.seats.learner.system_prompt, "");
            assert!(r.turns.len() > 4, "the players moved after the prefix");
        }
    }

    // A model log whose prefix used corrections: a run allowing none replays it anyway, with
    // its corrections raised to what the prefix used.
    let dir = temp_dir("prefix-corrections");
    let good =
        "Thought: food first.\nTalk: I need food.\nAction: [SUBMIT_DEAL] food:3 water:2 firewood:1";
    let script = dir.join("script.json");
    std::fs::write(
        &script,
        serde_json::to_string(&[
            "no format",
            "still none",
            good,
            good,
            good,
            good,
            good,
            good,
        ])
        .unwrap(),
    )
    .unwrap();
    let mut o = RunOptions::new(
        vec![casino(&dir, 3)],
        &format!("script:{}", script.display()),
        "rule:boulware",
        dir.join("source.jsonl"),
    );
    o.progress = false;
    o.episode.format_retries = 2;
    o.episode.first_mover = "learner".parse().unwrap();
    run_to_end(&o).await;
    let logged = read_log(&o.out);
    assert_eq!(logged[0].turns[1].attempt, 1);
    assert_eq!(logged[0].turns[2].attempt, 2);
    let mut p = prefix_run(
        &o.out,
        Cut::Turns(3),
        Some(1),
        ("rule:linear", "rule:linear"),
        dir.join("prefix.jsonl"),
    );
    p.episode.format_retries = 0;
    run_to_end(&p).await;
    let records = read_log(&p.out);
    assert_eq!(records.len(), 3 * 3);
    for r in &records {
        assert_eq!(r.setup.rules.format_retries, 2, "raised to the prefix's");
        assert_eq!(
            r.turns[..3].iter().map(|t| t.attempt).collect::<Vec<_>>(),
            [0, 1, 2]
        );
    }
}

#[test]
fn the_flags_need_a_cut_and_say_what_was_skipped() {
    let dir = temp_dir("prefix-cli");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let sources = runtime.block_on(source_log("cli", 4, "rule:linear", "rule:boulware"));
    let dealgym = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_dealgym"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = dir.join("pre.jsonl");
    let common = [
        "run",
        "--prefixes",
        sources.to_str().unwrap(),
        "--learner",
        "rule:linear",
        "--opponent",
        "rule:tough",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    let refused = dealgym(&common);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("--split S or --prefix-turns N"), "{err}");
    let done = dealgym(&[&common[..], &["--prefix-turns", "100", "--group-size", "2"]].concat());
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    assert!(
        err.contains("4 source episodes read, 0 planned as groups, 4 skipped (too_short 4"),
        "{err}"
    );
    let done = dealgym(
        &[
            &common[..],
            &["--split", "0.5", "--continue-turns", "1", "--resume"],
        ]
        .concat(),
    );
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    assert!(err.contains("4 planned as groups, 0 skipped"), "{err}");
    assert_eq!(read_log(&out).len(), 4);
    // `--targets every`: one group per turn after the cut.
    let every = dir.join("every.jsonl");
    let mut args = common.to_vec();
    *args.last_mut().unwrap() = every.to_str().unwrap();
    let done = dealgym(
        &[
            &args[..],
            &[
                "--split",
                "0.5",
                "--continue-turns",
                "1",
                "--targets",
                "every",
            ],
        ]
        .concat(),
    );
    let err = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "{err}");
    let groups: usize = read_log(&sources)
        .iter()
        .map(|r| r.turns.len() - r.turns.len().div_ceil(2).min(r.turns.len() - 1))
        .sum();
    assert!(
        err.contains(&format!("{groups} planned as groups, 0 skipped")),
        "{err}"
    );
    assert_eq!(read_log(&every).len(), groups);
    let refused = dealgym(&[
        "run",
        "--learner",
        "rule:linear",
        "--opponent",
        "rule:tough",
        "--scenarios",
        "scenarios/casino.jsonl",
        "--targets",
        "every",
        "--out",
        every.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("need --prefixes"),
        "{err}"
    );
}

/// People's dialogues as prefixes: Craigslist dialogues the people left with no accept or
/// walk-away (their records end as `max_turns` at a cap on both sides' moves) are continued
/// by rule players under the run's cap alone — the people's cap is dropped, so the players go
/// on past where the people stopped — and the engine replays the continuations as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peoples_stopped_dialogue_is_continued_past_where_they_stopped() {
    let Some(people) = tokio::task::spawn_blocking(|| common::dialogues("craigslist"))
        .await
        .unwrap()
    else {
        return;
    };
    let dir = temp_dir("prefix-people");
    let stopped: Vec<EpisodeRecord> = read_log(&people)
        .into_iter()
        .filter(|r| r.setup.rules.max_moves.is_some())
        .take(12)
        .collect();
    assert_eq!(
        stopped.len(),
        12,
        "Craigslist has dialogues the people left"
    );
    let sources = dir.join("stopped.jsonl");
    let text: String = stopped
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(&sources, text).unwrap();
    let source = by_id(&stopped);

    let mut o = RunOptions::new(
        Vec::new(),
        "rule:linear",
        "rule:boulware",
        dir.join("continued.jsonl"),
    );
    o.progress = false;
    o.group_size = 2;
    o.episode.max_rounds = 30;
    o.prefixes = Some(PrefixOptions {
        files: vec![sources],
        cut: Cut::split(0.5).unwrap(),
        targets: Targets::First,
        continue_turns: None,
    });
    let summary = run_to_end(&o).await;
    let report = summary.prefixes.unwrap();
    assert_eq!((report.sources, report.skipped_total()), (12, 0));
    let records = read_log(&o.out);
    assert_eq!(records.len(), 12 * 2);
    let mut went_past = 0;
    for r in &records {
        let parent = r.parent.as_ref().unwrap();
        let logged = source[&parent.episode_id];
        assert!(logged.played_by_person(Seat::Learner) && logged.played_by_person(Seat::Opponent));
        assert_eq!(parent.run_id, "human-craigslist");
        let n = parent.prefix_turns;
        for (new, old) in r.turns[..n].iter().zip(&logged.turns) {
            assert_eq!(new.raw, old.raw);
            assert_eq!(new.dataset_labels, old.dataset_labels);
        }
        assert_eq!(r.setup.rules.max_moves, None, "{}", r.episode_id);
        assert_eq!(r.setup.rules.max_rounds, 30);
        assert!(r.seats.learner.player.as_str().starts_with("rule:"));
        assert!(!r.played_by_person(Seat::Learner) && !r.played_by_person(Seat::Opponent));
        if r.turns.len() > logged.turns.len() {
            went_past += 1;
        }
    }
    assert!(went_past > 0, "no continuation went past the people's stop");

    // `replay --branch-from 2` continues them (those longer than 2 turns: a branch, like a
    // prefix, takes a logged turn's place) under the same setup rule.
    let longer: Vec<&EpisodeRecord> = stopped.iter().filter(|r| r.turns.len() > 2).collect();
    assert!(longer.len() >= 4, "{}", longer.len());
    let text: String = longer
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(dir.join("longer.jsonl"), text).unwrap();
    let mut run = RunOptions::new(
        Vec::new(),
        "rule:linear",
        "rule:boulware",
        dir.join("branches.jsonl"),
    );
    run.progress = false;
    let branched = dealgym::replay::branch(
        &BranchOptions {
            files: vec![dir.join("longer.jsonl")],
            episode: None,
            scenarios: Vec::new(),
            prefix: 2,
            run,
            on_duplicate: Default::default(),
        },
        std::future::pending::<()>(),
    )
    .await
    .unwrap();
    let branches = read_log(&dir.join("branches.jsonl"));
    assert_eq!(branches.len(), longer.len());
    assert_eq!(branched.run.written, longer.len());
    for r in &branches {
        assert_eq!(r.setup.rules.max_moves, None, "{}", r.episode_id);
        // The people's two turns are marked as logged: the players' figures leave them out.
        assert_eq!(r.setup.rules.continuation.unwrap().prefix_turns, 2);
        for seat in Seat::BOTH {
            let own = r.turns[2..]
                .iter()
                .filter(|t| t.seat == seat && t.played.is_some())
                .count();
            assert_eq!(r.outcome.metrics.seats[seat].turns as usize, own);
        }
    }
    assert!(
        branches
            .iter()
            .any(|r| r.turns.len() > source[&r.parent.as_ref().unwrap().episode_id].turns.len()),
        "no branch went past the people's stop"
    );
    let verified = dealgym::replay::verify(&VerifyOptions {
        files: vec![o.out.clone()],
        episode: None,
        scenarios: vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/craigslist.jsonl")],
        prompts_dir: None,
        rewards: None,
        on_duplicate: Default::default(),
    })
    .unwrap();
    assert!(verified.is_clean(), "{}", verified.table());
}
