//! A six-party test game with made-up scores (the real games are read from the importer's
//! `scenarios/deliberation.jsonl` by the integration tests), and whole-episode tests.

use std::sync::Arc;

use crate::game::{Completion, OutcomeKind};
use crate::protocol::{ErrorKind, IssueRange, IssueSpec};
use crate::scenario::{
    AgreementRule, Incentive, Party, PartyPosition, PartyPrivate, ScheduleSpec, TableFamily,
    TablePublic, TableRules, TableScenario,
};
use crate::vocab::MessageRole;

use super::*;

/// Six parties, five issues of 3, 3, 4, 4 and 5 options; `lead` is seat 0, the veto seat 1.
pub(crate) fn six_party() -> TableScenario {
    let sizes = [3usize, 3, 4, 4, 5];
    let issues: Vec<IssueSpec> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let key = ((b'A' + i as u8) as char).to_string();
            IssueSpec {
                key: key.clone(),
                label: format!("Issue {key}"),
                range: IssueRange::Discrete {
                    options: (1..=n).map(|o| format!("{key}{o}")).collect(),
                },
            }
        })
        .collect();
    // Party p prefers option (p + i) % n of issue i, with 10 points a step away from it.
    let party = |p: usize, minimum: i64, position: PartyPosition| {
        let scores = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let best = (p + i) % n;
                (0..n)
                    .map(|o| 30 - 10 * (o as i64 - best as i64).abs())
                    .map(|v| v.max(0))
                    .collect()
            })
            .collect();
        Party {
            role: format!("party_{p}"),
            name: format!("Party {p}"),
            position,
            incentive: Incentive::Cooperative,
            private: PartyPrivate {
                scores,
                minimum,
                instructions: format!("SECRET-INSTRUCTIONS-OF-{p}"),
            },
        }
    };
    let positions = [
        PartyPosition::Lead,
        PartyPosition::Veto,
        PartyPosition::Player,
        PartyPosition::Player,
        PartyPosition::Player,
        PartyPosition::Player,
    ];
    TableScenario {
        schema: crate::scenario::SCENARIO_SCHEMA,
        id: "deliberation:test:cooperative".into(),
        family: TableFamily::Deliberation,
        source: "made up for the tests".into(),
        game: "test".into(),
        variant: "cooperative".into(),
        public: TablePublic {
            title: "A test project".into(),
            instructions: "Six parties negotiate five issues.".into(),
        },
        issues,
        parties: (0..6)
            .map(|p| party(p, if p == 0 { 85 } else { 70 }, positions[p]))
            .collect(),
        initial_deal: vec![0, 1, 2, 3, 4],
        rules: TableRules {
            agreement: AgreementRule::Quorum {
                at_least: 5,
                veto: vec!["party_0".into(), "party_1".into()],
                lead_bonus: 10,
            },
            schedule: ScheduleSpec::Cycles {
                rounds: 4,
                lead: "party_0".into(),
            },
        },
    }
}

/// A six-party fixture table seeded `seed` (the tests of the record and the trajectory play it
/// too).
pub(crate) fn episode(seed: u64, options: &TableOptions) -> TableEpisode {
    let s = Arc::new(six_party());
    let setup = TableSetup::new(&s, options, seed).expect("setup");
    TableEpisode::new(s, setup).unwrap()
}

fn say(text: &str) -> Completion {
    Completion::from(text)
}

#[test]
fn the_scenario_is_valid() {
    crate::scenario::validate_table(&six_party()).expect("valid");
}

#[test]
fn an_offer_accepted_by_the_quorum_is_the_deal() {
    let mut ep = episode(3, &TableOptions::default());
    let s = ep.scenario().clone();
    let deal = s
        .all_deals()
        .find(|d| would_accept(&s, d).len() == 6)
        .expect("a deal for all");
    let text = format!(
        "Thought: open\nTalk: here\nAction: [SUBMIT_DEAL] {}",
        s.render_deal(&deal)
    );
    let lead = ep.to_move().unwrap();
    ep.step(lead, say(&text)).unwrap();
    let mut accepted = 1;
    while ep.outcome().is_none() {
        let seat = ep.to_move().unwrap();
        if seat == lead {
            ep.step(seat, say("Thought: wait\nTalk: well?\nAction: [TALK]"))
                .unwrap();
            continue;
        }
        ep.step(
            seat,
            say("Thought: fine\nTalk: yes\nAction: [ACCEPT_DEAL] #1"),
        )
        .unwrap();
        accepted += 1;
    }
    let out = ep.outcome().unwrap();
    assert_eq!(out.kind, OutcomeKind::Deal);
    assert_eq!(out.offer, Some(1));
    assert_eq!(out.deal.as_deref(), Some(&deal[..]));
    assert!(
        accepted >= 5,
        "five acceptors at least, the lead among them"
    );
    let acceptors = &ep.offers()[0].acceptors;
    assert!(acceptors.contains(&0) && acceptors.contains(&1));
}

#[test]
fn a_seat_acting_out_of_turn_is_an_error_naming_both_roles() {
    let mut ep = episode(1, &TableOptions::default());
    let next = ep.to_move().unwrap();
    let other = (next + 1) % 6;
    let e = ep
        .step(other, say("Thought: a\nTalk: b\nAction: [TALK]"))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "a seat acted out of turn: `party_{other}` moved while it is `party_{next}`'s turn"
        )
    );
    assert!(ep.turns().is_empty());
}

#[test]
fn accepting_an_offer_that_does_not_exist_retries_then_forfeits() {
    let mut ep = episode(1, &TableOptions::default());
    let seat = ep.to_move().unwrap();
    let step = ep
        .step(seat, say("Thought: a\nTalk: b\nAction: [ACCEPT_DEAL] #7"))
        .unwrap();
    assert!(step.retry);
    assert_eq!(
        step.error.as_ref().map(|e| e.kind),
        Some(ErrorKind::Illegal)
    );
    assert!(step.error.unwrap().message.contains("no offer #7"));
    assert_eq!(ep.to_move(), Some(seat), "the same seat tries again");
    let view = ep.view(seat);
    assert!(view.last().unwrap().content.contains("could not be used"));
    let step = ep
        .step(
            seat,
            say("Thought: a\nTalk: b\nAction: [SUBMIT_DEAL] A9 B1 C1 D1 E1"),
        )
        .unwrap();
    assert!(step.ended());
    let out = ep.outcome().unwrap();
    assert_eq!(out.kind, OutcomeKind::FormatForfeit);
    assert_eq!(out.by, Some(seat));
}

#[test]
fn a_veto_party_walking_out_ends_the_table_and_another_only_leaves() {
    let mut ep = episode(5, &TableOptions::default());
    // Play talk until a non-veto party moves, and let it leave.
    loop {
        let seat = ep.to_move().unwrap();
        if seat >= 2 {
            ep.step(seat, say("Thought: a\nTalk: bye\nAction: [WALK_AWAY]"))
                .unwrap();
            assert!(ep.outcome().is_none(), "a party without a veto only leaves");
            assert!(!ep.present()[seat]);
            break;
        }
        ep.step(seat, say("Thought: a\nTalk: hm\nAction: [TALK]"))
            .unwrap();
    }
    let gone = (0..6).find(|&s| !ep.present()[s]).unwrap();
    while ep.outcome().is_none() {
        let seat = ep.to_move().unwrap();
        assert_ne!(seat, gone, "a party that left is not asked again");
        if seat <= 1 {
            ep.step(seat, say("Thought: a\nTalk: no\nAction: [WALK_AWAY]"))
                .unwrap();
            break;
        }
        ep.step(seat, say("Thought: a\nTalk: hm\nAction: [TALK]"))
            .unwrap();
    }
    let out = ep.outcome().unwrap();
    assert_eq!(out.kind, OutcomeKind::WalkAway);
    assert!(out.by.unwrap() <= 1);
}

#[test]
fn the_schedule_running_out_is_max_turns() {
    let mut ep = episode(9, &TableOptions::default());
    let mut steps = 0;
    while let Some(seat) = ep.to_move() {
        ep.step(seat, say("Thought: a\nTalk: hm\nAction: [TALK]"))
            .unwrap();
        steps += 1;
    }
    assert_eq!(steps, 1 + 24 + 1 + 5);
    assert_eq!(ep.outcome().unwrap().kind, OutcomeKind::MaxTurns);
}

#[test]
fn a_regulated_seat_cannot_accept_below_its_minimum() {
    let options = TableOptions {
        regulated: vec!["party_1".into()],
        ..TableOptions::default()
    };
    let mut ep = episode(2, &options);
    let s = ep.scenario().clone();
    let bad = s
        .all_deals()
        .find(|d| !counts_toward(&s, 1, d))
        .expect("a deal below party_1's minimum");
    let lead = ep.to_move().unwrap();
    ep.step(
        lead,
        say(&format!(
            "Thought: a\nTalk: b\nAction: [SUBMIT_DEAL] {}",
            s.render_deal(&bad)
        )),
    )
    .unwrap();
    while ep.to_move() != Some(1) {
        let seat = ep.to_move().unwrap();
        ep.step(seat, say("Thought: a\nTalk: hm\nAction: [TALK]"))
            .unwrap();
    }
    ep.step(1, say("Thought: a\nTalk: ok\nAction: [ACCEPT_DEAL] #1"))
        .unwrap();
    let turn = ep.turns().last().unwrap();
    let reg = turn.regulation.as_ref().expect("regulated");
    assert_eq!(reg.replacement, crate::protocol::Action::Reject);
    assert!(reg.score < reg.minimum);
    assert!(!ep.offers()[0].acceptors.contains(&1));
}

#[test]
fn no_view_holds_another_seats_scores_minimum_instructions_or_thoughts() {
    let mut ep = episode(11, &TableOptions::default());
    let s = ep.scenario().clone();
    let mut i = 0;
    while let Some(seat) = ep.to_move() {
        i += 1;
        let deal = s.all_deals().nth(i * 37 % 720).unwrap();
        let text = format!(
            "Thought: THOUGHT-{seat}-{i}\nTalk: talk {i}\nAction: [SUBMIT_DEAL] {}",
            s.render_deal(&deal)
        );
        ep.step(seat, say(&text)).unwrap();
    }
    for seat in 0..6 {
        let view = ep.view(seat);
        let seen: String = view
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        for other in (0..6).filter(|&o| o != seat) {
            assert!(!seen.contains(&format!("SECRET-INSTRUCTIONS-OF-{other}")));
            assert!(
                !seen.contains(&format!("THOUGHT-{other}-")),
                "seat {seat} saw {other}'s thought"
            );
            assert!(
                !seen.contains(&format!("minimum is {}", s.parties[other].private.minimum))
                    || s.parties[other].private.minimum == s.parties[seat].private.minimum
            );
        }
        assert!(seen.contains(&format!("SECRET-INSTRUCTIONS-OF-{seat}")));
        // Only this seat's system prompt; its own replies are its own.
        assert_eq!(
            view.iter()
                .filter(|m| m.role == MessageRole::System)
                .count(),
            1
        );
        let own = ep.turns().iter().filter(|t| t.seat == seat).count();
        assert_eq!(
            view.iter()
                .filter(|m| m.role == MessageRole::Assistant)
                .count(),
            own
        );
    }
}

#[test]
fn views_only_grow() {
    let mut ep = episode(4, &TableOptions::default());
    let mut before: Vec<Vec<crate::vocab::Message>> = (0..6).map(|s| ep.view(s).to_vec()).collect();
    while let Some(seat) = ep.to_move() {
        ep.step(seat, say("Thought: a\nTalk: hm\nAction: [TALK]"))
            .unwrap();
        for (s, old) in before.iter_mut().enumerate() {
            let now = ep.view(s).to_vec();
            assert_eq!(now, ep.rebuilt_view(s), "the kept view is the rebuilt one");
            // Everything but a trailing prompt for a turn not yet played stays as it was.
            let keep = old.len()
                - usize::from(
                    old.last().is_some_and(|m| m.role == MessageRole::User) && old.len() > 1,
                );
            assert_eq!(&now[..keep], &old[..keep], "seat {s}");
            *old = now;
        }
    }
}

/// The test game as the integration tests and the Python tests read it
/// (`tests/fixtures/table/six_party.jsonl`): the file must stay this game.
#[test]
fn the_fixture_file_is_the_test_game() {
    let text = include_str!("../../../../tests/fixtures/table/six_party.jsonl");
    let read = crate::scenario::parse_table_line("six_party.jsonl", 1, text.trim()).unwrap();
    assert_eq!(read, six_party());
}

#[test]
fn kept_views_are_the_rebuilt_ones_through_retries_forfeits_and_leaving() {
    for seed in 0..30u64 {
        let mut ep = episode(seed, &TableOptions::default());
        let s = ep.scenario().clone();
        let mut i = 0u64;
        while let Some(seat) = ep.to_move() {
            i += 1;
            let text = match (seed + i) % 7 {
                0 => "Thought: a\nTalk: b\nAction: [ACCEPT_DEAL] #99".to_string(),
                1 => "no format at all".to_string(),
                2 if seat >= 2 => "Thought: a\nTalk: bye\nAction: [WALK_AWAY]".to_string(),
                3 => format!(
                    "Thought: a\nTalk: ok\nAction: [ACCEPT_DEAL] #{}",
                    ep.offers().len().max(1)
                ),
                _ => {
                    let deal = s
                        .all_deals()
                        .nth(((seed * 31 + i * 17) % 720) as usize)
                        .unwrap();
                    format!(
                        "Thought: t\nTalk: here\nAction: [SUBMIT_DEAL] {}",
                        s.render_deal(&deal)
                    )
                }
            };
            ep.step(seat, say(&text)).unwrap();
            for v in 0..6 {
                assert_eq!(
                    ep.view(v),
                    ep.rebuilt_view(v).as_slice(),
                    "seed {seed} seat {v}"
                );
            }
        }
    }
}

#[test]
fn the_cycles_lead_and_the_lead_position_are_one_party() {
    let mut s = six_party();
    s.rules.schedule = ScheduleSpec::Cycles {
        rounds: 4,
        lead: "party_1".into(),
    };
    let e = crate::scenario::validate_table(&s).unwrap_err();
    assert_eq!(e.field, "rules.schedule.lead");
    assert!(e.message.contains("`party_0`"), "{}", e.message);
}

/// A seat's turn made through the table's tools: `name(arguments)` beside `thought`.
fn call(thought: &str, name: &str, arguments: &str) -> Completion {
    Completion {
        text: thought.into(),
        tool_calls: vec![crate::vocab::ToolCall::new(
            format!("call_{name}"),
            name,
            arguments,
        )],
        ..Completion::default()
    }
}

fn tools() -> TableOptions {
    TableOptions {
        format: crate::protocol::TurnFormat::Tools,
        ..TableOptions::default()
    }
}

#[test]
fn a_table_played_through_tools_reads_moves_from_the_calls_and_keeps_them_in_histories() {
    let mut ep = episode(3, &tools());
    let s = ep.scenario().clone();
    let deal = s
        .all_deals()
        .find(|d| would_accept(&s, d).len() == 6)
        .expect("a deal for all");
    let terms: serde_json::Map<String, serde_json::Value> = s
        .issues
        .iter()
        .zip(s.render_deal(&deal).split(' '))
        .map(|(issue, option)| (issue.key.clone(), option.into()))
        .collect();
    let lead = ep.to_move().unwrap();
    let step = ep
        .step(
            lead,
            call(
                "my own plan",
                "make_offer",
                &serde_json::json!({"terms": terms, "message": "A start."}).to_string(),
            ),
        )
        .unwrap();
    assert!(step.error.is_none(), "{step:?}");
    let turn = &ep.turns()[0];
    assert!(turn.parsed.format_ok);
    assert_eq!(turn.offer, Some(1));
    assert_eq!(ep.offers()[0].deal, deal);
    // The seat's history keeps its call (answered), and its thought; the others read the
    // talk and the move, never the thought.
    let own = &ep.view(lead)[2];
    assert_eq!(own.tool_calls.len(), 1);
    assert_eq!(own.content, "my own plan");
    assert_eq!(ep.view(lead)[3].role, MessageRole::Tool);
    while ep.outcome().is_none() {
        let seat = ep.to_move().unwrap();
        let step = if seat == lead {
            ep.step(seat, call("", "say", r#"{"text": "well?"}"#))
        } else {
            ep.step(
                seat,
                call("", "accept", r#"{"offer": 1, "message": "yes"}"#),
            )
        }
        .unwrap();
        assert!(step.error.is_none(), "{step:?}");
    }
    assert_eq!(ep.outcome().unwrap().kind, OutcomeKind::Deal);
    let news = &ep.view(1)[1].content;
    assert!(
        !ep.view(1).iter().any(|m| m.content.contains("my own plan")),
        "{news}"
    );
    // The system prompt tells the tools, not the text actions.
    let system = &ep.view(lead)[0].content;
    assert!(system.contains("accept(offer, message)"), "{system}");
    assert!(!system.contains("Action: exactly one action"), "{system}");
}

#[test]
fn a_wrong_call_at_a_table_is_a_format_error_and_an_option_not_in_the_game_illegal() {
    for (completion, kind, says) in [
        (call("", "accept", "{}"), ErrorKind::Format, "needs `offer`"),
        (
            call("", "accept", r#"{"offer": "first"}"#),
            ErrorKind::Format,
            "must be a proposal's number",
        ),
        (
            call("", "bid", "{}"),
            ErrorKind::Format,
            "unknown tool `bid`",
        ),
        (
            call(
                "",
                "make_offer",
                r#"{"terms": {"A": "A9", "B": "B1", "C": "C1", "D": "D1", "E": "E1"}}"#,
            ),
            ErrorKind::Illegal,
            "A9",
        ),
        (
            call("", "make_offer", r#"{"terms": {"A": "A1"}}"#),
            ErrorKind::Format,
            "missing",
        ),
        (
            call("", "accept", r#"{"offer": 7}"#),
            ErrorKind::Illegal,
            "no offer #7",
        ),
    ] {
        let mut ep = episode(1, &tools());
        let seat = ep.to_move().unwrap();
        let step = ep.step(seat, completion.clone()).unwrap();
        let error = step
            .error
            .unwrap_or_else(|| panic!("{completion:?} was played"));
        assert_eq!(error.kind, kind, "{completion:?}: {error:?}");
        assert!(error.message.contains(says), "{}", error.message);
        assert!(step.retry);
        // The correction says to call a tool.
        let last = &ep.view(seat).last().unwrap().content;
        assert!(last.contains("calling one of the tools"), "{last}");
    }
}

#[test]
fn the_scripted_party_plays_a_tools_table_through_calls_to_the_same_end_as_in_text() {
    use crate::negotiator::deliberation::scripted_table_completion;
    for seed in 0..6u64 {
        let mut text = episode(seed, &TableOptions::default());
        let mut called = episode(seed, &tools());
        while let Some(seat) = text.to_move() {
            let t = scripted_table_completion(&text, seat);
            assert!(t.tool_calls.is_empty());
            text.step(seat, t).unwrap();
            let c = scripted_table_completion(&called, seat);
            assert_eq!(c.tool_calls.len(), 1, "{c:?}");
            let step = called.step(seat, c).unwrap();
            assert!(step.error.is_none(), "seed {seed}: {step:?}");
            let (a, b) = (text.turns().last().unwrap(), called.turns().last().unwrap());
            assert_eq!(a.played(), b.played(), "seed {seed}");
            assert_eq!(a.accepts, b.accepts, "seed {seed}");
            assert_eq!(a.parsed.talk, b.parsed.talk, "seed {seed}");
            assert!(b.parsed.format_ok);
        }
        assert_eq!(text.outcome(), called.outcome(), "seed {seed}");
    }
}

#[test]
fn a_text_turn_at_a_tools_table_plays_but_is_not_format_ok() {
    let mut ep = episode(1, &tools());
    let seat = ep.to_move().unwrap();
    ep.step(seat, say("Thought: a\nTalk: b\nAction: [TALK]"))
        .unwrap();
    let turn = &ep.turns()[0];
    assert_eq!(turn.played(), Some(&crate::protocol::Action::Talk));
    assert!(!turn.parsed.format_ok, "asked for tools, written as text");
}

/// The table templates before they learnt the tools format render every text-format table as
/// today's do: a table played under each, in `tagged` and `xml`, gives every seat the same view,
/// and the earlier templates' digest is the one `Prompts::renders_table_as` accepts — so a table
/// record made under them replays under today's.
#[test]
fn the_templates_before_tools_render_text_tables_as_todays() {
    use crate::game::Prompts;
    use crate::negotiator::deliberation::scripted_table_completion;
    use crate::protocol::TurnFormat;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/prompts/tables-before-tools");
    let before = Arc::new(Prompts::with_overrides(&dir).expect("the earlier templates load"));
    let today = Prompts::builtin();
    assert_ne!(before.table_digest(), today.table_digest());
    for format in [TurnFormat::Tagged, TurnFormat::Xml] {
        assert!(today.renders_table_as(before.table_digest(), format));
        assert!(!today.renders_table_as(before.table_digest(), TurnFormat::Tools));
        assert!(!before.renders_table_as(today.table_digest(), format));
        let options = TableOptions {
            format,
            ..TableOptions::default()
        };
        for seed in 0..4u64 {
            let s = Arc::new(six_party());
            let play = |prompts: &Arc<Prompts>| {
                let setup = TableSetup::with_prompts(&s, &options, seed, prompts).unwrap();
                let mut ep = TableEpisode::with_prompts(s.clone(), setup, prompts.clone()).unwrap();
                while let Some(seat) = ep.to_move() {
                    let completion = scripted_table_completion(&ep, seat);
                    ep.step(seat, completion).unwrap();
                }
                (0..s.parties.len())
                    .map(|seat| ep.view(seat).to_vec())
                    .collect::<Vec<_>>()
            };
            assert_eq!(play(&before), play(&today), "{format:?}, seed {seed}");
        }
    }
}

/// A narrated table turn (`narration`): accepting another offer than the decided one is another
/// move, refused as illegal; the Talk is read for contradictions on every attempt, the refused
/// one too.
#[test]
fn a_narrated_table_turn_plays_its_decided_move_and_the_offer_it_names() {
    use crate::narration::{Contradiction, Force, Narration};
    let narrated = |talk: &str, action: &str, decided: &str| Completion {
        narration: Some(Narration {
            decided: decided.into(),
            brief: "Your move is decided.".into(),
            force: Force::Prompt,
            contradictions: Vec::new(),
        }),
        ..say(&format!("Thought: t\nTalk: {talk}\nAction: {action}"))
    };
    let mut ep = episode(3, &TableOptions::default());
    let s = ep.scenario().clone();
    let deals: Vec<_> = s.all_deals().take(2).collect();
    let lead = ep.to_move().unwrap();
    for deal in &deals {
        let text = format!(
            "Thought: o\nTalk: h\nAction: [SUBMIT_DEAL] {}",
            s.render_deal(deal)
        );
        ep.step(lead, say(&text)).unwrap();
        if ep.to_move() != Some(lead) {
            break;
        }
    }
    let seat = ep.to_move().unwrap();
    assert_ne!(seat, lead);
    let step = ep
        .step(
            seat,
            narrated("We have a deal!", "[ACCEPT_DEAL] #1", "[ACCEPT_DEAL] #2"),
        )
        .unwrap();
    assert!(step.retry);
    let error = step.error.expect("another offer is another move");
    assert_eq!(error.kind, ErrorKind::Illegal);
    assert!(
        error.message.contains("[ACCEPT_DEAL] #2"),
        "{}",
        error.message
    );
    let last_narration = |ep: &TableEpisode| {
        let turn = ep.turns().last().expect("a turn");
        turn.completion.narration.clone().expect("narrated")
    };
    let refused = last_narration(&ep);
    assert!(
        refused.contradictions.is_empty(),
        "an acceptance may say so"
    );
    let step = ep
        .step(seat, narrated("We have a deal!", "[TALK]", "[TALK]"))
        .unwrap();
    assert!(!step.retry && step.error.is_none());
    let kept = last_narration(&ep);
    assert_eq!(
        kept.contradictions,
        vec![Contradiction::AcceptsWithoutAccepting]
    );
}
