//! Rule tests that drive whole episodes through `step`.

use super::*;
use crate::fixtures::{casino, price, scenario, setup_with, turn};
use crate::observation::EndingRules;
use crate::protocol::{Action, ErrorKind, Terms, TurnFormat};
use crate::scenario::{Role, Scenario};
use std::sync::Arc;

fn setup(s: &Scenario, config: EpisodeConfig) -> Setup {
    setup_with(s, &config)
}

fn learner_first() -> EpisodeConfig {
    EpisodeConfig {
        first_mover: FirstMover::Learner,
        ..EpisodeConfig::default()
    }
}

#[test]
fn accept_right_after_a_submit_makes_that_deal() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    assert_eq!(e.to_move(), Some(Seat::Learner));
    e.step(turn("How about 120?", "[SUBMIT_DEAL] price:120"))
        .unwrap();
    let step = e.step(turn("Fine.", "[ACCEPT_DEAL]")).unwrap();
    assert!(step.terminated && !step.truncated);
    let o = step.outcome.unwrap();
    assert_eq!(o.kind, OutcomeKind::Deal);
    assert_eq!(o.by, Some(Seat::Opponent));
    assert_eq!(o.terms, Some(Terms::Price(12000)));
    assert_eq!(o.utility, PerSeat::new(60.0, 20.0));
    assert!((o.rho.learner - 0.75).abs() < 1e-12 && (o.rho.opponent - 0.25).abs() < 1e-12);
    assert_eq!(e.to_move(), None);
    assert!(
        e.step("Action: [ACCEPT_DEAL]").is_err(),
        "no step after the end"
    );
}

/// The talk ablation: each seat reads the other's action and terms, never its Talk; the turn
/// keeps its own Talk (the record shows what was said and withheld), and the deal is the same.
#[test]
fn talk_off_forwards_the_action_and_its_terms_without_the_talk() {
    let s = casino();
    let config = EpisodeConfig {
        talk: Talk::Off,
        ..learner_first()
    };
    let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
    assert!(e.system_prompt(Seat::Opponent).contains("withheld"));
    e.step(turn(
        "SECRET-ONE",
        "[SUBMIT_DEAL] food:3 water:1 firewood:0",
    ))
    .unwrap();
    let seen = e.view(Seat::Opponent).last().unwrap().content.clone();
    assert_eq!(seen, "Action: [SUBMIT_DEAL] food:0 water:2 firewood:3");
    let step = e.step(turn("SECRET-TWO", "[ACCEPT_DEAL]")).unwrap();
    assert_eq!(step.outcome.unwrap().kind, OutcomeKind::Deal);
    for seat in Seat::BOTH {
        assert!(e.view(seat).iter().all(
            |m| !m.content.contains("SECRET") || m.role == crate::vocab::MessageRole::Assistant
        ));
    }
    assert_eq!(e.turns()[0].parsed.talk.as_deref(), Some("SECRET-ONE"));
    assert_eq!(e.turns()[0].forwarded.as_deref(), Some(seen.as_str()));
}

#[test]
fn accept_without_a_standing_offer_is_illegal_then_forfeits() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    let step = e.step(turn("Deal!", "[ACCEPT_DEAL]")).unwrap();
    assert!(step.retry, "one correction by default");
    assert_eq!(
        step.parsed.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Illegal)
    );
    assert_eq!(e.to_move(), Some(Seat::Learner));
    assert!(e
        .view(Seat::Learner)
        .last()
        .unwrap()
        .content
        .contains("could not be used"));
    let step = e.step(turn("Deal!", "[ACCEPT_DEAL]")).unwrap();
    let o = step.outcome.unwrap();
    assert_eq!(
        (o.kind, o.by),
        (OutcomeKind::FormatForfeit, Some(Seat::Learner))
    );
}

#[test]
fn reject_clears_the_standing_offer() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    e.step(turn("120?", "[SUBMIT_DEAL] price:120")).unwrap();
    assert!(e.standing_offer().is_some());
    e.step(turn("No.", "[REJECT_DEAL]")).unwrap();
    assert!(e.standing_offer().is_none());
    let step = e.step(turn("Then I accept.", "[ACCEPT_DEAL]")).unwrap();
    assert_eq!(step.parsed.error.map(|e| e.kind), Some(ErrorKind::Illegal));
}

#[test]
fn a_counter_offer_replaces_the_standing_offer_and_accept_takes_the_latest() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    e.step(turn("120?", "[SUBMIT_DEAL] price:120")).unwrap();
    e.step(turn("170.", "[SUBMIT_DEAL] price:170")).unwrap();
    assert_eq!(e.standing_offer().map(|o| o.by), Some(Seat::Opponent));
    let o = e
        .step(turn("ok", "[ACCEPT_DEAL]"))
        .unwrap()
        .outcome
        .unwrap();
    assert_eq!(o.terms, Some(Terms::Price(17000)));
}

#[test]
fn regulated_seller_cannot_accept_or_submit_below_cost_but_learner_may_overpay() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    assert_eq!(e.setup().seats.opponent.role, Role::Seller);
    e.step(turn("50?", "[SUBMIT_DEAL] price:50")).unwrap();
    let step = e.step(turn("Yes!", "[ACCEPT_DEAL]")).unwrap();
    let event = step.event.expect("regulated");
    assert_eq!(event.original, Action::Accept);
    assert_eq!(step.played, Some(Action::Reject));
    assert!(step.outcome.is_none());
    assert!(
        e.turns().last().unwrap().regulation.is_some(),
        "the event is recorded"
    );
    assert!(e
        .view(Seat::Learner)
        .last()
        .unwrap()
        .content
        .contains("[REJECT_DEAL]"));
    let learner_saw = e.view(Seat::Learner).last().unwrap().content.clone();
    assert!(
        !learner_saw.contains("limit"),
        "the learner is not told about the seller's limit"
    );
    // The learner is unregulated: it may offer above its budget, and the seller takes it.
    e.step(turn("OK, 95?", "[SUBMIT_DEAL] price:95")).unwrap();
    let told = e.view(Seat::Opponent).last().unwrap().content.clone();
    assert!(
        told.starts_with("(Your last move, [ACCEPT_DEAL],")
            && told.ends_with("[SUBMIT_DEAL] price:95"),
        "the regulated seller learns its accept was replaced: {told}"
    );
    let step = e.step(turn("Only 90.", "[SUBMIT_DEAL] price:90")).unwrap();
    assert_eq!(
        step.played,
        Some(Action::Reject),
        "a submit below cost is regulated too"
    );
    e.step(turn("Then 190.", "[SUBMIT_DEAL] price:190"))
        .unwrap();
    let o = e
        .step(turn("Deal.", "[ACCEPT_DEAL]"))
        .unwrap()
        .outcome
        .unwrap();
    assert_eq!(o.kind, OutcomeKind::Deal);
    assert_eq!(
        o.utility.learner, -10.0,
        "the learner overpaid, and nothing stopped it"
    );
}

#[test]
fn walk_away_ends_by_that_seat() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    e.step(turn("120?", "[SUBMIT_DEAL] price:120")).unwrap();
    let step = e.step(turn("Bye.", "[WALK_AWAY]")).unwrap();
    let o = step.outcome.unwrap();
    assert!(step.terminated);
    assert_eq!(
        (o.kind, o.by),
        (OutcomeKind::WalkAway, Some(Seat::Opponent))
    );
    assert_eq!(o.utility, PerSeat::new(0.0, 0.0));
}

#[test]
fn completions_past_the_end_are_an_error_or_counted_as_the_replay_asks() {
    let s = price();
    let moves = || {
        ["[SUBMIT_DEAL] price:120", "[WALK_AWAY]", "[TALK]", "[TALK]"]
            .into_iter()
            .map(|a| Completion::from(turn("…", a)))
    };
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    let mut seen = Vec::new();
    let left = e
        .step_all(moves(), Leftover::Stop, |e| seen.push(e.turns().len()))
        .unwrap();
    assert_eq!((left, seen), (2, vec![0, 1]));
    assert_eq!(e.outcome().unwrap().kind, OutcomeKind::WalkAway);
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    assert!(e.step_all(moves(), Leftover::Refuse, |_| {}).is_err());
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    assert_eq!(
        e.step_all(moves().take(2), Leftover::Refuse, |_| {})
            .unwrap(),
        0
    );
}

#[test]
fn reject_loop_on_canonical_terms_not_raw_strings() {
    let s = casino();
    let config = EpisodeConfig {
        learner_role: Some(Role::Agent1),
        ..learner_first()
    };
    let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
    // The same terms written three different ways.
    let spellings = [
        "food:3 water:2 firewood:0",
        "Water = 2, FOOD=3, firewoods: 0",
        "firewood:0 foods:3 water:2",
    ];
    for (i, terms) in spellings.iter().enumerate() {
        let step = e
            .step(turn("Mine.", &format!("[SUBMIT_DEAL] {terms}")))
            .unwrap();
        if i < 2 {
            assert!(step.outcome.is_none());
            e.step(turn("No.", "[SUBMIT_DEAL] food:0 water:0 firewood:3"))
                .unwrap();
        } else {
            let o = step.outcome.unwrap();
            assert_eq!(
                (o.kind, o.by),
                (OutcomeKind::RejectLoop, Some(Seat::Learner))
            );
        }
    }
}

#[test]
fn reject_loop_of_k_rejects() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    e.step(turn("hm", "[REJECT_DEAL]")).unwrap();
    e.step(turn("hm", "[REJECT_DEAL]")).unwrap();
    let o = e
        .step(turn("hm", "[REJECT_DEAL]"))
        .unwrap()
        .outcome
        .unwrap();
    assert_eq!(o.kind, OutcomeKind::RejectLoop);
}

/// The XML format's [TALK] is conversation: three (and more) TALK turns in a row play on, where
/// they used to end the episode as a reject loop; three identical SUBMITs by one seat end it
/// (the CaSiNo harness, §3.3.3 and §4.2).
#[test]
fn talk_turns_play_on_and_three_identical_submits_end_it() {
    let s = casino();
    let config = EpisodeConfig {
        learner_role: Some(Role::Agent1),
        learner_format: TurnFormat::Xml,
        opponent_format: TurnFormat::Xml,
        ..learner_first()
    };
    let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
    let xml = |talk: &str, action: &str| {
        format!("<thought>t</thought><talk>{talk}</talk><action>{action}</action>")
    };
    for i in 0..6 {
        let step = e.step(xml("Hello there.", "[TALK]")).unwrap();
        assert!(step.outcome.is_none(), "TALK {i} ended the episode");
    }
    // The learner now proposes the same split three times; the opponent talks in between.
    for i in 0..3 {
        let step = e
            .step(xml("Mine.", "[SUBMIT_DEAL] food:3 water:2 firewood:0"))
            .unwrap();
        if i < 2 {
            assert!(step.outcome.is_none());
            e.step(xml("Hm.", "[TALK]")).unwrap();
        } else {
            let o = step.outcome.unwrap();
            assert_eq!(
                (o.kind, o.by),
                (OutcomeKind::RejectLoop, Some(Seat::Learner))
            );
            assert_eq!(
                o.detail.as_deref(),
                Some("the same terms proposed 3 times in a row")
            );
        }
    }
}

/// Each reject-loop rule is configured apart: with the same-offer rule off, three rejections
/// still end the episode; with the rejection rule off, they play on.
#[test]
fn the_two_reject_loop_rules_are_set_apart() {
    let s = price();
    let rejections = |config: EpisodeConfig| {
        let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
        for _ in 0..3 {
            e.step(turn("hm", "[REJECT_DEAL]")).unwrap();
        }
        e.outcome().map(|o| (o.kind, o.detail.clone()))
    };
    let no_same_offer = EpisodeConfig {
        reject_loop: 0,
        reject_streak: Some(3),
        ..learner_first()
    };
    assert_eq!(
        rejections(no_same_offer),
        Some((
            OutcomeKind::RejectLoop,
            Some("3 rejections in a row without a proposal".to_string())
        ))
    );
    let no_streak = EpisodeConfig {
        reject_streak: Some(0),
        ..learner_first()
    };
    assert_eq!(rejections(no_streak), None);
}

#[test]
fn turn_cap_counts_rounds_per_seat_and_truncates() {
    let s = price();
    let config = EpisodeConfig {
        max_rounds: 2,
        reject_loop: 0,
        reject_streak: Some(0),
        ..learner_first()
    };
    let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
    let offers = ["110", "190", "120", "180"];
    for (i, p) in offers.iter().enumerate() {
        // A malformed attempt does not use up a round.
        if i == 1 {
            assert!(e.step("no action here").unwrap().retry);
        }
        let step = e
            .step(turn("?", &format!("[SUBMIT_DEAL] price:{p}")))
            .unwrap();
        if i < 3 {
            assert!(step.outcome.is_none(), "turn {i}");
        } else {
            assert!(step.truncated && !step.terminated);
            assert_eq!(step.outcome.unwrap().kind, OutcomeKind::MaxTurns);
        }
    }
    assert_eq!(e.moves(), PerSeat::new(2, 2));
}

#[test]
fn format_retries_then_forfeit() {
    let s = price();
    let config = EpisodeConfig {
        format_retries: 2,
        ..learner_first()
    };
    let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
    assert!(e.step("garbage").unwrap().retry);
    assert!(e.step("more garbage").unwrap().retry);
    let step = e.step("[ACCEPT_DEAL] [WALK_AWAY]").unwrap();
    let o = step.outcome.unwrap();
    assert_eq!(
        (o.kind, o.by),
        (OutcomeKind::FormatForfeit, Some(Seat::Learner))
    );
    assert_eq!(e.turns().len(), 3);
    assert!(e.turns().iter().all(|t| t.played.is_none()));
    // No retry at all when retries are 0.
    let config = EpisodeConfig {
        format_retries: 0,
        ..learner_first()
    };
    let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
    assert_eq!(
        e.step("garbage").unwrap().outcome.map(|o| o.kind),
        Some(OutcomeKind::FormatForfeit)
    );
}

#[test]
fn items_are_flipped_for_the_receiver_and_the_deal_is_exactly_the_offer() {
    let s = casino();
    let config = EpisodeConfig {
        learner_role: Some(Role::Agent1),
        ..learner_first()
    };
    let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
    e.step(turn(
        "I need food.",
        "[SUBMIT_DEAL] food:3 water:1 firewood:0",
    ))
    .unwrap();
    let seen = &e.view(Seat::Opponent).last().unwrap().content;
    assert!(
        seen.ends_with("[SUBMIT_DEAL] food:0 water:2 firewood:3"),
        "{seen}"
    );
    let o = e
        .step(turn("OK.", "[ACCEPT_DEAL]"))
        .unwrap()
        .outcome
        .unwrap();
    assert_eq!(o.terms, Some(Terms::Items(vec![3, 1, 0])));
    assert_eq!(o.utility, PerSeat::new(19.0, 23.0));
}

#[test]
fn backend_failure_ends_with_error_and_is_not_a_move() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    e.step(turn("120?", "[SUBMIT_DEAL] price:120")).unwrap();
    let o = e
        .fail_backend(Seat::Opponent, "HTTP 500 after 3 tries")
        .unwrap();
    assert_eq!((o.kind, o.by), (OutcomeKind::Error, Some(Seat::Opponent)));
    assert_eq!(e.turns().len(), 1);
}

#[test]
fn thought_and_reasoning_stay_with_their_seat() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    let c = Completion {
        text: "<think>SECRET-THINK</think>Thought: SECRET-THOUGHT\nTalk: Hello\nAction: [SUBMIT_DEAL] price:100".into(),
        reasoning: Some("SECRET-SERVER".into()),
        ..Default::default()
    };
    e.step(c).unwrap();
    let other: String = e
        .view(Seat::Opponent)
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    for secret in ["SECRET-THINK", "SECRET-THOUGHT", "SECRET-SERVER"] {
        assert!(!other.contains(secret), "{secret} leaked");
    }
    let own: String = e
        .view(Seat::Learner)
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert!(own.contains("SECRET-THOUGHT") && !own.contains("SECRET-THINK"));
}

#[test]
fn same_seed_same_setup_and_group_members_share_it() {
    let s = casino();
    let config = EpisodeConfig::default();
    let draw = |group, member| {
        let seed = EpisodeSeed {
            run: 7,
            group,
            member,
        };
        Setup::draw(&s, &config, PerSeat::default(), &mut seed.setup_rng()).unwrap()
    };
    assert_eq!(draw(3, 0), draw(3, 5), "a GRPO group shares its setup");
    let setups: Vec<Setup> = (0..32).map(|g| draw(g, 0)).collect();
    assert!(
        setups.iter().any(|x| x.first_mover == Seat::Learner)
            && setups.iter().any(|x| x.first_mover == Seat::Opponent)
    );
    assert!(
        setups.iter().any(|x| x.seats.learner.role == Role::Agent1)
            && setups.iter().any(|x| x.seats.learner.role == Role::Agent2)
    );
    let a = EpisodeSeed {
        run: 7,
        group: 3,
        member: 0,
    };
    let b = EpisodeSeed {
        run: 7,
        group: 3,
        member: 1,
    };
    assert_ne!(
        a.sampling_seed(Seat::Learner),
        b.sampling_seed(Seat::Learner)
    );
}

#[test]
fn xml_spelling_end_to_end() {
    let s = casino();
    let config = EpisodeConfig {
        learner_role: Some(Role::Agent2),
        learner_format: crate::protocol::TurnFormat::Xml,
        opponent_format: crate::protocol::TurnFormat::Xml,
        ..learner_first()
    };
    let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
    assert!(e.system_prompt(Seat::Learner).contains("<thought>"));
    let step = e
        .step("<thought>x</thought><talk>Hi there</talk><action>[TALK]</action>")
        .unwrap();
    assert!(step.parsed.format_ok);
    assert_eq!(
        e.view(Seat::Opponent).last().unwrap().content,
        "<talk>Hi there</talk>\n<action>[TALK]</action>"
    );
}

#[test]
fn the_templates_fingerprint_follows_the_sources_in_effect() {
    let builtin = Prompts::builtin();
    assert!(builtin.overrides().is_empty());
    let dir = std::env::temp_dir().join(format!("dealgym-prompts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A copy of a built-in changes nothing.
    let opening = include_str!("../../../../prompts/opening.j2");
    std::fs::write(dir.join("opening.j2"), opening).unwrap();
    let same = Prompts::with_overrides(&dir).unwrap();
    assert_eq!(same.fingerprint(), builtin.fingerprint());
    assert!(same.overrides().is_empty());
    // A changed one does, and is named with the digest of its source.
    std::fs::write(dir.join("opening.j2"), "Go first.").unwrap();
    let changed = Prompts::with_overrides(&dir).unwrap();
    assert_ne!(changed.fingerprint(), builtin.fingerprint());
    assert_eq!(
        changed.overrides().get("opening.j2"),
        Some(&crate::digest::digest_bytes(b"Go first."))
    );
    assert_eq!(
        changed.template_digest("opening.j2"),
        changed.overrides().get("opening.j2").copied()
    );
    assert_eq!(
        changed.template_digest("correction.j2"),
        builtin.template_digest("correction.j2")
    );
    // The same sources give the same fingerprint every time.
    assert_eq!(
        Prompts::with_overrides(&dir).unwrap().fingerprint(),
        changed.fingerprint()
    );
}

#[test]
fn the_templates_before_the_talk_sentence_render_talk_on_prompts_as_todays() {
    // The talk ablation's sentence changed `_format.j2`, so the built-in fingerprint: a record
    // of the earlier templates must still replay, and does because every prompt with talk on
    // renders as it did (every family's seats, in every format).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/prompts/before-talk");
    let before = Arc::new(Prompts::with_overrides(&dir).unwrap());
    let today = Prompts::builtin();
    assert_ne!(before.fingerprint(), today.fingerprint());
    assert_eq!(
        super::prompt::EARLIER_DIGESTS,
        &[before.fingerprint()],
        "the earlier fingerprint listed is the fixture's"
    );
    assert!(today.renders_as(before.fingerprint(), true));
    assert!(!today.renders_as(before.fingerprint(), false));
    assert!(!before.renders_as(today.fingerprint(), true));
    let mut compared = 0;
    for s in [
        price(),
        casino(),
        crate::fixtures::job(),
        crate::fixtures::bundle(),
        crate::fixtures::hotel(),
    ] {
        for format in [TurnFormat::Tagged, TurnFormat::Xml, TurnFormat::Tools] {
            for first in [true, false] {
                let config = EpisodeConfig {
                    learner_format: format,
                    ..if first {
                        learner_first()
                    } else {
                        EpisodeConfig::default()
                    }
                };
                let set = setup(&s, config);
                let old = Episode::with_prompts(s.clone(), set.clone(), before.clone()).unwrap();
                let new = Episode::with_prompts(s.clone(), set, today.clone()).unwrap();
                for seat in Seat::BOTH {
                    assert_eq!(old.system_prompt(seat), new.system_prompt(seat));
                    compared += 1;
                }
            }
        }
    }
    assert_eq!(compared, 60);
}

#[test]
fn a_prompt_template_past_the_size_limit_is_refused_naming_the_file() {
    // Issue 42, item 13: a template (`prompts_dir`) was read whole, whatever its size.
    let dir = std::env::temp_dir().join(format!("dealgym-prompts-huge-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::File::create(dir.join("opening.j2"))
        .unwrap()
        .set_len(crate::limits::MAX_TEXT_FILE + 1)
        .unwrap();
    let err = Prompts::with_overrides(&dir)
        .expect_err("refused")
        .to_string();
    assert!(err.contains("opening.j2"), "{err}");
    assert!(
        err.contains(&crate::limits::MAX_TEXT_FILE.to_string()),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_scenario_digest_follows_its_values_not_its_spelling() {
    let a = casino();
    let respelled = scenario(
        r#"{"family":"casino","schema":1,"id":"t:casino","source":"t","public":{"title":"Camp"},
            "game":{"items":{"agent_2":{"values":[3,4,5]},"items":[{"name":"food","count":3},{"name":"water","count":3},{"name":"firewood","count":3}],
            "agent_1":{"values":[5,4,3]}}}}"#,
    );
    assert_eq!(a.digest(), respelled.digest());
    let mut changed = (*a).clone();
    changed.no_deal_value = 5.0;
    assert_ne!(changed.digest(), a.digest());
}

#[test]
fn a_continuation_truncates_k_moves_after_the_prefix() {
    let s = price();
    let mut setup = setup(&s, learner_first());
    setup.rules.continuation = Some(Continuation {
        prefix_turns: 1,
        moves: Some(2),
    });
    let mut e = Episode::new(s.clone(), setup).unwrap();
    e.step(turn("120?", "[SUBMIT_DEAL] price:120")).unwrap();
    // A correction is no move.
    let step = e.step("no format").unwrap();
    assert!(step.retry && step.outcome.is_none());
    e.step(turn("170.", "[SUBMIT_DEAL] price:170")).unwrap();
    assert_eq!(e.to_move(), Some(Seat::Learner));
    let step = e.step(turn("130?", "[SUBMIT_DEAL] price:130")).unwrap();
    assert!(step.truncated && !step.terminated);
    assert_eq!(step.outcome.unwrap().kind, OutcomeKind::MaxTurns);
    assert!(e.setup().rules.is_logged_turn(0) && !e.setup().rules.is_logged_turn(1));
}

#[test]
fn each_seat_is_told_the_rules_the_engine_applies() {
    // The prompt and the observation read one build of the rules from the episode's setup.
    let s = price();
    let config = EpisodeConfig {
        max_rounds: 4,
        reject_loop: 2,
        reject_streak: Some(0),
        format_retries: 0,
        ..learner_first()
    };
    let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
    for seat in [Seat::Learner, Seat::Opponent] {
        let told = e.system_prompt(seat);
        assert!(told.contains("You have at most 4 turns."), "{told}");
        assert!(told.contains("the same deal 2 times in a row"), "{told}");
        assert!(!told.contains("are [REJECT_DEAL]"), "{told}");
        assert!(told.contains("not allowed) forfeits:"), "{told}");
        assert_eq!(
            e.seat_state(seat).rules,
            EndingRules::from(&e.setup().rules)
        );
    }
    // And the engine ends the episode where the prompt said it would.
    e.step(turn("120?", "[SUBMIT_DEAL] price:120")).unwrap();
    e.step(turn("170.", "[SUBMIT_DEAL] price:170")).unwrap();
    let step = e.step(turn("120.", "[SUBMIT_DEAL] price:120")).unwrap();
    assert_eq!(step.outcome.unwrap().kind, OutcomeKind::RejectLoop);
}

#[test]
fn a_kept_system_prompt_is_the_one_its_inputs_render() {
    // One template set renders for every case in turn, so each is answered from its memo when
    // the inputs match an earlier case's; a fresh set (no overrides: the built-in templates)
    // renders each from scratch. A field of the
    // seat's context that the memo's key left out would hand an earlier case's prompt on.
    let shared = Prompts::builtin();
    let empty = std::env::temp_dir().join(format!("dealgym-prompts-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let persona = |text: &str| {
        Some(Persona {
            name: "p".into(),
            text: text.into(),
        })
    };
    let (a, b) = (casino(), casino());
    let base = setup(&a, EpisodeConfig::default()).seats.learner;
    let six = EndingRules::from(&setup(&a, EpisodeConfig::default()).rules);
    let cases: Vec<(Arc<Scenario>, SeatSetup, EndingRules, f64)> = vec![
        (a.clone(), base.clone(), six, 0.0),
        (a.clone(), base.clone(), six, 0.0),
        (b.clone(), base.clone(), six, 0.0),
        (
            price(),
            setup(&price(), EpisodeConfig::default()).seats.learner,
            six,
            0.0,
        ),
        (
            a.clone(),
            base.clone(),
            EndingRules {
                max_rounds: 9,
                ..six
            },
            0.0,
        ),
        (a.clone(), base.clone(), six, 5.0),
        (
            a.clone(),
            SeatSetup {
                role: base.role.counterpart(),
                ..base.clone()
            },
            six,
            0.0,
        ),
        (
            a.clone(),
            SeatSetup {
                format: TurnFormat::Xml,
                ..base.clone()
            },
            six,
            0.0,
        ),
        (
            a.clone(),
            SeatSetup {
                persona: persona("Be brief."),
                ..base.clone()
            },
            six,
            0.0,
        ),
        (
            a.clone(),
            SeatSetup {
                persona: persona("Be warm."),
                ..base.clone()
            },
            six,
            0.0,
        ),
        // Each rule that can end the episode is an input of its own.
        (
            a.clone(),
            base.clone(),
            EndingRules {
                reject_loop: 4,
                ..six
            },
            0.0,
        ),
        (
            a.clone(),
            base.clone(),
            EndingRules {
                reject_streak: 0,
                ..six
            },
            0.0,
        ),
        (
            a.clone(),
            base.clone(),
            EndingRules {
                format_retries: 2,
                ..six
            },
            0.0,
        ),
    ];
    let mut texts = Vec::new();
    for (scenario, seat, rules, no_deal) in &cases {
        let kept = shared
            .system_prompt(scenario, seat, rules, *no_deal)
            .unwrap();
        let own = Prompts::with_overrides(&empty)
            .unwrap()
            .system_prompt(scenario, seat, rules, *no_deal)
            .unwrap();
        assert_eq!(*kept, *own);
        assert_eq!(
            kept.instructions.as_str(),
            crate::protocol::normalize_for_copy(&kept.text)
        );
        texts.push(kept.text.clone());
    }
    // Each input that changes the context changes the text (the second case repeats the first,
    // the third is the same content in another allocation).
    assert_eq!(texts[0], texts[1]);
    assert_eq!(texts[0], texts[2]);
    for (i, text) in texts.iter().enumerate().skip(3) {
        assert_ne!(text, &texts[0], "case {i}");
    }
    assert_ne!(texts[8], texts[9]);
    for i in 10..texts.len() {
        for j in 10..i {
            assert_ne!(texts[i], texts[j], "cases {j} and {i}");
        }
    }
    // The same inputs are rendered once.
    let again = shared.system_prompt(&a, &base, &six, 0.0).unwrap();
    assert!(Arc::ptr_eq(
        &again,
        &shared.system_prompt(&a, &base, &six, 0.0).unwrap()
    ));
    let _ = std::fs::remove_dir_all(&empty);
}

/// A completion made of tool calls, with `text` written beside them.
fn calls(text: &str, calls: &[(&str, &str)]) -> Completion {
    Completion {
        text: text.into(),
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| crate::vocab::ToolCall::new(format!("c{i}"), *name, *args))
            .collect(),
        ..Completion::default()
    }
}

fn tools_first() -> EpisodeConfig {
    EpisodeConfig {
        learner_format: TurnFormat::Tools,
        ..learner_first()
    }
}

/// A seat acting through tools plays by the same rules as one writing text: its offer stands
/// and is flipped for a text-playing counterpart, ACCEPT takes exactly that offer, and its own
/// history keeps the calls, each answered, so a chat endpoint can be sent it again.
#[test]
fn a_seat_acting_through_tools_plays_by_the_same_rules() {
    let s = casino();
    let mut e = Episode::new(s.clone(), setup(&s, tools_first())).unwrap();
    assert!(e
        .system_prompt(Seat::Learner)
        .contains("make_offer(terms, message)"));
    assert!(!e.system_prompt(Seat::Opponent).contains("make_offer"));
    let step = e
        .step(calls(
            "I want the food.",
            &[(
                "make_offer",
                r#"{"terms": {"food": 3, "water": 1, "firewood": 0}, "message": "Food for me?"}"#,
            )],
        ))
        .unwrap();
    assert_eq!(
        step.played,
        Some(Action::Submit(Terms::Items(vec![3, 1, 0])))
    );
    assert_eq!(step.parsed.thought.as_deref(), Some("I want the food."));
    let forwarded = e.view(Seat::Opponent).last().unwrap().content.clone();
    assert_eq!(
        forwarded,
        "Talk: Food for me?\nAction: [SUBMIT_DEAL] food:0 water:2 firewood:3"
    );
    let own = &e.view(Seat::Learner)[e.view(Seat::Learner).len() - 2..];
    assert_eq!(own[0].tool_calls.len(), 1);
    assert_eq!(own[0].content, "I want the food.");
    assert_eq!(
        (
            own[1].role,
            own[1].tool_call_id.as_deref(),
            own[1].content.as_str()
        ),
        (MessageRole::Tool, Some("c0"), "ok")
    );
    e.step(turn("No.", "[SUBMIT_DEAL] food:1 water:1 firewood:1"))
        .unwrap();
    let step = e.step(calls("", &[("accept", "{}")])).unwrap();
    let outcome = step.outcome.unwrap();
    assert_eq!(outcome.kind, OutcomeKind::Deal);
    assert_eq!(outcome.terms, Some(Terms::Items(vec![2, 2, 2])));
    assert_eq!(e.turns()[2].tool_calls.len(), 1, "the turn keeps its calls");
}

/// Every malformed tool call gets the malformed-turn policy — a correction (answering the call
/// with what was wrong), then the forfeit — and is never a move or a panic.
#[test]
fn malformed_tool_calls_get_the_malformed_turn_policy() {
    let s = casino();
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], ErrorKind);
    let cases: [Case; 6] = [
        ("", &[("haggle", "{}")], ErrorKind::Format),
        ("", &[("make_offer", "{}")], ErrorKind::Format),
        (
            "",
            &[("walk_away", r#"{"why": "bored"}"#)],
            ErrorKind::Format,
        ),
        (
            "",
            &[(
                "make_offer",
                r#"{"terms": {"food": 4, "water": 0, "firewood": 0}}"#,
            )],
            ErrorKind::Illegal,
        ),
        ("", &[("accept", "{}")], ErrorKind::Illegal),
        (
            "Action: [WALK_AWAY]",
            &[("walk_away", "{}")],
            ErrorKind::Format,
        ),
    ];
    for (text, bad, kind) in cases {
        let mut e = Episode::new(s.clone(), setup(&s, tools_first())).unwrap();
        let step = e.step(calls(text, bad)).unwrap();
        let error = step.parsed.error.clone().expect("an error");
        assert_eq!(error.kind, kind, "{bad:?}: {error:?}");
        assert!(step.retry && step.played.is_none(), "{bad:?}");
        let view = e.view(Seat::Learner);
        let answer = &view[view.len() - 2];
        assert_eq!(answer.role, MessageRole::Tool, "{bad:?}");
        assert_eq!(answer.content, error.message, "{bad:?}");
        assert!(view
            .last()
            .unwrap()
            .content
            .contains("calling one of the tools"));
        let step = e.step(calls(text, bad)).unwrap();
        let outcome = step.outcome.expect("the second try forfeits");
        assert_eq!(
            (outcome.kind, outcome.by),
            (OutcomeKind::FormatForfeit, Some(Seat::Learner)),
            "{bad:?}"
        );
    }
}

/// A turn is format-ok only in the mode its seat was asked for: text from a tools seat is read
/// (its move counts) but is not format-ok, and unreadable text is told it made no call.
#[test]
fn a_turn_is_format_ok_only_in_the_mode_asked() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, tools_first())).unwrap();
    let step = e.step(turn("Cheap?", "[SUBMIT_DEAL] price:100")).unwrap();
    assert_eq!(step.played, Some(Action::Submit(Terms::Price(10000))));
    assert!(!step.parsed.format_ok);
    let mut e = Episode::new(s.clone(), setup(&s, tools_first())).unwrap();
    let step = e.step("I will make the first move.").unwrap();
    let error = step.parsed.error.unwrap();
    assert!(
        error
            .message
            .starts_with("no tool call: call one of the tools"),
        "{}",
        error.message
    );
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    let step = e.step(calls("", &[("walk_away", "{}")])).unwrap();
    assert_eq!(step.played, Some(Action::WalkAway));
    assert!(!step.parsed.format_ok, "a text seat that calls a tool");
}

#[test]
fn a_seat_asked_for_act_labels_is_told_the_catalog_and_held_to_it() {
    let s = price();
    let config = EpisodeConfig {
        learner_acts: true,
        ..learner_first()
    };
    let mut e = Episode::new(s.clone(), setup(&s, config)).unwrap();
    let prompt = e.system_prompt(Seat::Learner).to_string();
    assert!(prompt.contains("#counter-price"), "{prompt}");
    assert!(
        prompt.contains("[SUBMIT_DEAL] price:120 #init-price"),
        "{prompt}"
    );
    assert!(
        !e.system_prompt(Seat::Opponent).contains("#counter-price"),
        "a seat not asked is not told"
    );
    let step = e
        .step(turn("Hi.", "[SUBMIT_DEAL] price:120 #haggle"))
        .unwrap();
    assert!(step.retry, "an unknown label is a malformed turn");
    assert!(e
        .view(Seat::Learner)
        .last()
        .unwrap()
        .content
        .contains("`#haggle`"));
    let step = e
        .step(turn("Hi.", "[SUBMIT_DEAL] price:120 #Init_Price"))
        .unwrap();
    assert_eq!(step.played, Some(Action::Submit(Terms::Price(12000))));
    assert_eq!(e.turns()[1].parsed.act.as_deref(), Some("init-price"));
    // The opponent, not asked, is not held to it; the label never reaches the other side.
    e.step(turn("No.", "[REJECT_DEAL]")).unwrap();
    assert_eq!(e.turns()[2].parsed.act, None);
    assert!(!e
        .view(Seat::Opponent)
        .iter()
        .any(|m| m.content.contains("#init")));
    // The prompt of a seat not asked is the one it always was.
    let plain = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    let plain = plain.system_prompt(Seat::Learner);
    assert!(!plain.contains("Label every turn") && !plain.contains("#init-price"));
}

/// A seat's exact sequence, kept as its turns come, is what `token_sequence` reads from the
/// turns at every step: a malformed turn's ids included (the model sampled them), the other
/// seat's left out, and none once a turn of the seat comes without ids.
#[test]
fn the_kept_token_sequence_is_the_one_read_from_the_turns() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    let exact = |text: &str, base: u32| Completion {
        text: text.into(),
        tokens: Some(crate::vocab::TurnTokens {
            prompt_ids: vec![base, base + 1],
            completion_ids: vec![base + 2, base + 3, base + 4],
            logprobs: vec![-0.1; 3],
            finish_reason: None,
            drift: None,
            forced_from: None,
        }),
        ..Completion::default()
    };
    let check = |e: &Episode| {
        for seat in Seat::BOTH {
            assert_eq!(
                e.token_sequence(seat).map(<[u32]>::to_vec),
                token_sequence(e.turns(), seat, &e.setup().rules),
                "{seat:?} after {} turns",
                e.turns().len()
            );
        }
    };
    check(&e);
    e.step(exact(
        "Thought: t\nTalk: 120?\nAction: [SUBMIT_DEAL] price:120",
        10,
    ))
    .unwrap();
    check(&e);
    // A turn that cannot be read is still the seat's call.
    e.step(exact("no turn here", 20)).unwrap();
    check(&e);
    e.step(exact(
        "Thought: t\nTalk: 110?\nAction: [SUBMIT_DEAL] price:110",
        30,
    ))
    .unwrap();
    check(&e);
    assert_eq!(
        e.token_sequence(Seat::Opponent),
        Some(&[20, 21, 22, 23, 24, 30, 31, 32, 33, 34][..])
    );
    // A text turn: the learner's sequence is gone for good.
    e.step(turn("115?", "[SUBMIT_DEAL] price:115")).unwrap();
    check(&e);
    assert_eq!(e.token_sequence(Seat::Learner), None);
    e.step(exact("Thought: t\nTalk: ok\nAction: [ACCEPT_DEAL]", 40))
        .unwrap();
    check(&e);
}

/// A narrated completion: `talk` around `action`, with the decided line `decided` and its brief.
fn narrated(talk: &str, action: &str, decided: &str) -> Completion {
    Completion {
        narration: Some(crate::narration::Narration {
            decided: decided.to_string(),
            brief: format!("Your move is decided: {decided}"),
            force: crate::narration::Force::Prompt,
            contradictions: Vec::new(),
        }),
        ..Completion::from(turn(talk, action))
    }
}

#[test]
fn a_narrated_turn_plays_its_decided_move_keeps_its_brief_and_counts_its_contradictions() {
    let s = price();
    let mut e = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    // The narrator wrote another price than the decided one: refused as illegal, corrected.
    let step = e
        .step(narrated(
            "I offer $130.",
            "[SUBMIT_DEAL] price:130",
            "[SUBMIT_DEAL] price:120",
        ))
        .unwrap();
    assert!(step.retry && step.played.is_none());
    let error = step.parsed.error.clone().expect("refused");
    assert_eq!(error.kind, ErrorKind::Illegal);
    assert!(
        error.message.contains("[SUBMIT_DEAL] price:120"),
        "{}",
        error.message
    );
    // The seat's history holds the brief before each reply, the refused one included.
    let view = e.view(Seat::Learner);
    let briefs = view
        .iter()
        .filter(|m| m.content == "Your move is decided: [SUBMIT_DEAL] price:120")
        .count();
    assert_eq!(briefs, 1);
    let brief_at = view
        .iter()
        .position(|m| m.content.starts_with("Your move is decided"))
        .unwrap();
    assert_eq!(
        view[brief_at + 1].role,
        crate::vocab::MessageRole::Assistant
    );
    // The decided move, its Talk naming another price: played, and the contradiction kept.
    let step = e
        .step(narrated(
            "I can pay $150.",
            "[SUBMIT_DEAL] price:120",
            "[SUBMIT_DEAL] price:120",
        ))
        .unwrap();
    assert_eq!(step.played, Some(Action::Submit(Terms::Price(12_000))));
    let kept = e.turns().last().unwrap().narration.clone().unwrap();
    assert_eq!(
        kept.contradictions,
        vec![crate::narration::Contradiction::OtherPrice {
            named: vec![15_000]
        }]
    );
    // The opponent accepts; the learner's metrics count two narrated attempts, both
    // contradicted (the refused one named $130 too).
    let step = e.step(turn("Fine.", "[ACCEPT_DEAL]")).unwrap();
    assert!(step.terminated);
    let o = crate::record::RecordOutcome::of(&e).unwrap();
    let m = &o.metrics.seats.learner;
    assert_eq!((m.narrated, m.contradicted), (2, 2));
    assert_eq!(o.metrics.seats.opponent.narrated, 0);
    // Replay: stepping the recorded turns again gives the same views.
    let mut again = Episode::new(s.clone(), setup(&s, learner_first())).unwrap();
    for t in e.turns() {
        again.step(t.completion()).unwrap();
    }
    assert_eq!(again.view(Seat::Learner), e.view(Seat::Learner));
    assert_eq!(again.turns(), e.turns());
}
