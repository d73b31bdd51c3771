//! Property tests: the parser never panics, flipping is an involution, terms round-trip through
//! their canonical text, views only grow, and no seat's view carries the other seat's private
//! values, Thought or reasoning.

use std::sync::Arc;

use proptest::prelude::*;

use dealgym::game::{
    Completion, Episode, EpisodeConfig, EpisodeSeed, FirstMover, PerSeat, Seat, Setup,
};
use dealgym::protocol::{parse, parse_terms, IssueValue, ItemSpec, TermSpace, Terms, TurnFormat};
use dealgym::scenario::{
    BundleValues, IssuePreference, IssuePreferences, ItemValues, Scenario, Valuation,
};
use dealgym_core::fixtures::{
    bundle_scenario, bundle_spec, casino_items, dnd_items, issues_scenario, items_scenario,
    job_issues, price_task,
};

/// One to three of book, hat and ball, one to five of each.
fn items_space() -> impl Strategy<Value = Vec<ItemSpec>> {
    prop::collection::vec(1u32..6, 1..4).prop_map(|counts| dnd_items(&counts))
}

proptest! {
    #[test]
    fn parser_never_panics(text in "\\PC{0,300}", tagged in any::<bool>()) {
        let items = casino_items();
        let issues = job_issues();
        let bundle = bundle_spec();
        let text = if tagged { format!("Thought: {text}\nTalk: x\nAction: [SUBMIT_DEAL] {text}") } else { text };
        for space in [TermSpace::Price, TermSpace::Items(&items), TermSpace::Issues(&issues), TermSpace::Bundle(&bundle)] {
            let p = parse(&text, space, Some(&text));
            prop_assert!(p.action.is_some() || p.error.is_some());
            prop_assert!(!(p.format_ok && p.error.is_some()));
        }
    }

    #[test]
    fn flipping_twice_is_the_identity((items, shares) in items_space().prop_flat_map(|items| {
        let shares = items.iter().map(|i| 0..=i.count).collect::<Vec<_>>();
        (Just(items), shares)
    })) {
        let t = Terms::Items(shares);
        let space = TermSpace::Items(&items);
        prop_assert_eq!(t.flipped(space).flipped(space), t.clone());
        let (back, ok) = parse_terms(&t.render(space), space).unwrap();
        prop_assert!(ok);
        prop_assert_eq!(back, t);
    }

    #[test]
    fn prices_and_contracts_round_trip(cents in 0i64..10_000_000, salary in 20i64..=50, c in 0usize..3, p in 0usize..2, h in 2i64..=6) {
        let t = Terms::Price(cents);
        prop_assert_eq!(parse_terms(&t.render(TermSpace::Price), TermSpace::Price).unwrap().0, t);
        let issues = job_issues();
        let t = Terms::Issues(vec![IssueValue::Number(salary), IssueValue::Option(c), IssueValue::Option(p), IssueValue::Number(h)]);
        let space = TermSpace::Issues(&issues);
        prop_assert_eq!(t.flipped(space), t.clone());
        prop_assert_eq!(parse_terms(&t.render(space), space).unwrap().0, t.clone());
        let json = serde_json::to_string(&t).unwrap();
        prop_assert_eq!(serde_json::from_str::<Terms>(&json).unwrap(), t, "records keep numbers and options apart");
    }
}

/// A scenario of one of the four domains with both sides' private blocks drawn from `values`.
fn scenario(domain: usize, items: &[ItemSpec], a: &[u32], b: &[u32]) -> Arc<Scenario> {
    let weights = |v: &[u32]| -> IssuePreferences {
        let w = |i: usize| f64::from(v[i % v.len()] + 1);
        let total = w(0) + w(1) + w(2) + w(5);
        IssuePreferences {
            issues: vec![
                IssuePreference {
                    weight: w(0) / total,
                    valuation: Valuation::Rising,
                },
                IssuePreference {
                    weight: w(1) / total,
                    valuation: Valuation::Options {
                        weights: vec![w(3) / 10.0, w(4) / 10.0, w(5) / 10.0],
                    },
                },
                IssuePreference {
                    weight: w(2) / total,
                    valuation: Valuation::Joint {
                        with: "company".into(),
                        weights: vec![
                            vec![w(1) / 10.0, w(2) / 10.0, 0.5],
                            vec![0.1, w(0) / 10.0, 0.3],
                        ],
                    },
                },
                IssuePreference {
                    weight: w(5) / total,
                    valuation: Valuation::Rising,
                },
            ],
        }
    };
    let falling = |mut p: IssuePreferences| {
        p.issues[0].valuation = Valuation::Falling;
        p
    };
    let values = |v: &[u32], reason: String| ItemValues {
        values: v.iter().cycle().take(items.len()).copied().collect(),
        reasons: vec![reason],
    };
    match domain {
        // Private amounts with cents, so they never appear inside an integer offer.
        0 => price_task(
            500.0,
            7000.0 + f64::from(a[0]) + 0.37,
            3000.0 + f64::from(b[0]) + 0.59,
        ),
        1 => items_scenario(
            items.to_vec(),
            values(a, format!("REASON-ONE-{}", a[0])),
            values(b, format!("REASON-TWO-{}", b[0])),
        ),
        2 => issues_scenario(weights(a), falling(weights(b))),
        // Private amounts with cents, so they never appear inside an integer offer.
        _ => {
            let own = |v: &[u32], base: f64| BundleValues {
                main: base + f64::from(v[0]) + 0.37,
                accessories: vec![f64::from(v[1]) * 10.0 + 0.41, f64::from(v[2]) * 10.0 + 0.43],
                delivery: f64::from(v[3]) * 10.0 + 0.47,
            };
            bundle_scenario(own(a, 50000.0), own(b, 40000.0))
        }
    }
}

/// A random completion: valid moves of every kind, garbage and ambiguity, with secret markers in
/// the Thought, a `<think>` block and the server reasoning.
fn completion(kind: u8, n: u32, talk: &str, space: TermSpace<'_>) -> Completion {
    let terms = match space {
        TermSpace::Price => format!("price:{}", 100 + n % 900),
        TermSpace::Items(items) => items
            .iter()
            .map(|i| format!("{}:{}", i.name, n % (i.count + 1)))
            .collect::<Vec<_>>()
            .join(" "),
        TermSpace::Bundle(_) => format!(
            "price:{} tv_stand:{} extension_cord:in delivery:{}",
            100 + n % 900,
            ["in", "out"][n as usize % 2],
            ["out", "in"][n as usize % 2]
        ),
        TermSpace::Issues(_) => {
            format!(
                "salary:{} company:{} position:{} holiday:{}",
                20 + n % 31,
                ["Google", "Apple", "Amazon"][n as usize % 3],
                ["Engineer", "Sales"][n as usize % 2],
                2 + n % 5
            )
        }
        TermSpace::Tickets(tickets) => tickets
            .iter()
            .map(|t| {
                if n.is_multiple_of(3) {
                    format!("{}:unchanged", t.key)
                } else {
                    format!("{}:{}", t.key, 1 + n % 60)
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
    };
    let action = match kind % 8 {
        0..=2 => format!("[SUBMIT_DEAL] {terms}"),
        3 => "[ACCEPT_DEAL]".into(),
        4 => "[REJECT_DEAL]".into(),
        5 => "[WALK_AWAY]".into(),
        6 => "[ACCEPT_DEAL] [REJECT_DEAL]".into(),
        _ => String::new(),
    };
    Completion {
        text: format!("<think>THINK-MARKER-{n}</think>Thought: THOUGHT-MARKER-{n}\nTalk: {talk}\nAction: {action}"),
        reasoning: Some(format!("SERVER-MARKER-{n}")),
        ..Default::default()
    }
}

fn run(
    s: Arc<Scenario>,
    config: &EpisodeConfig,
    moves: &[(u8, u32, String)],
) -> (Episode, Vec<PerSeat<usize>>) {
    let seed = EpisodeSeed {
        run: 3,
        group: 1,
        member: 0,
    };
    let setup = Setup::draw(&s, config, PerSeat::default(), &mut seed.setup_rng()).unwrap();
    let mut e = Episode::new(s.clone(), setup).unwrap();
    let mut lengths = Vec::new();
    for (kind, n, talk) in moves {
        if e.to_move().is_none() {
            break;
        }
        let before = PerSeat::from_fn(|seat| e.view(seat).to_vec());
        e.step(completion(*kind, *n, talk, s.term_space())).unwrap();
        for seat in Seat::BOTH {
            let now = e.view(seat);
            assert!(
                now.len() >= before[seat].len() && now[..before[seat].len()] == before[seat][..],
                "view of {seat} is append-only"
            );
        }
        lengths.push(PerSeat::from_fn(|seat| e.view(seat).len()));
    }
    (e, lengths)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn views_carry_no_private_values_thought_or_reasoning(
        domain in 0usize..4,
        items in items_space(),
        own in prop::collection::vec(0u32..10, 6),
        other_a in prop::collection::vec(0u32..10, 6),
        other_b in prop::collection::vec(0u32..10, 6),
        learner_first in any::<bool>(),
        xml in any::<bool>(),
        moves in prop::collection::vec((any::<u8>(), any::<u32>(), "[a-z ,.?]{0,30}"), 1..14),
    ) {
        // Regulation is a rule of the game whose effect the counterpart sees by design; switch it
        // off so that any difference below could only be a leak.
        let config = EpisodeConfig {
            first_mover: if learner_first { FirstMover::Learner } else { FirstMover::Opponent },
            regulate_opponent: false,
            learner_format: if xml { TurnFormat::Xml } else { TurnFormat::Tagged },
            ..EpisodeConfig::default()
        };
        // A seat's view must not depend on the other seat's private block: play the same
        // completions against two different private blocks of the other role, both ways round.
        let (e1, _) = run(scenario(domain, &items, &own, &other_a), &config, &moves);
        let (e2, _) = run(scenario(domain, &items, &own, &other_b), &config, &moves);
        let first_role_seat = e1.setup().seat_of(e1.scenario().roles()[0]).unwrap();
        prop_assert_eq!(e1.view(first_role_seat), e2.view(first_role_seat));
        let (e3, _) = run(scenario(domain, &items, &other_a, &own), &config, &moves);
        let (e4, _) = run(scenario(domain, &items, &other_b, &own), &config, &moves);
        let second_role_seat = e3.setup().seat_of(e3.scenario().roles()[1]).unwrap();
        prop_assert_eq!(e3.view(second_role_seat), e4.view(second_role_seat));
        for seat in Seat::BOTH {
            let text: String = e1.view(seat).iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n");
            for t in e1.turns().iter().filter(|t| t.seat != seat) {
                let n = t.raw.split("THOUGHT-MARKER-").nth(1).and_then(|r| r.split('\n').next()).unwrap_or("");
                prop_assert!(!text.contains(&format!("THOUGHT-MARKER-{n}")), "thought crossed to {}", seat);
                prop_assert!(!text.contains("THINK-MARKER") && !text.contains("SERVER-MARKER"), "reasoning reached {}", seat);
            }
            let other_role = e1.setup().seats[seat.other()].role;
            let other_reason = if other_role == e1.scenario().roles()[0] { "REASON-ONE" } else { "REASON-TWO" };
            prop_assert!(!text.contains(other_reason));
        }
    }
}
