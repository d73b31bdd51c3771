//! Whole episodes driven from lists of raw completions through the library API, one realistic
//! transcript per family, on scenarios the importer wrote. Expected values are computed here from
//! the scenario's own numbers with the book's `design/scenarios.md`'s formulas.

use std::path::Path;
use std::sync::Arc;

use dealgym::game::{
    Episode, EpisodeConfig, EpisodeSeed, FirstMover, OutcomeKind, PerSeat, Prompts, Seat, Setup,
};
use dealgym::protocol::{format_cents, to_cents, TurnFormat};
use dealgym::record::{EpisodeRecord, PlayerInfo, RecordMeta, Timing};
use dealgym::reward::RewardConfig;
use dealgym::scenario::{
    load_scenarios, DealSpace, Family, LoadOptions, Role, Scenario, ScenarioFlag,
};

fn scenarios(family: Family) -> Vec<Scenario> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{}.jsonl", family.name()));
    load_scenarios(&path, LoadOptions::default())
        .unwrap()
        .scenarios
}

fn start(s: &Scenario, config: EpisodeConfig) -> Episode {
    let seed = EpisodeSeed {
        run: 11,
        group: 0,
        member: 0,
    };
    let setup = Setup::draw(s, &config, PerSeat::default(), &mut seed.setup_rng()).unwrap();
    Episode::new(Arc::new(s.clone()), setup).unwrap()
}

fn play(e: &mut Episode, completions: &[String]) {
    for (i, c) in completions.iter().enumerate() {
        assert!(e.to_move().is_some(), "episode ended before completion {i}");
        e.step(c.as_str()).unwrap();
    }
}

fn price_of(s: &Scenario) -> (f64, f64, f64) {
    match &s.game {
        DealSpace::Price {
            listing_price,
            buyer,
            seller,
        } => (*listing_price, buyer.budget, seller.cost),
        _ => panic!("not a price scenario"),
    }
}

fn money(v: f64) -> String {
    format_cents(to_cents(v))
}

#[test]
fn ahp_buyer_and_seller_meet_in_the_middle() {
    let s = scenarios(Family::Ahp)
        .into_iter()
        .find(|s| {
            !s.flags.contains(&ScenarioFlag::ConflictingInterest)
                && price_of(s).1 - price_of(s).2 > 20.0
        })
        .unwrap();
    let (l, b, c) = price_of(&s);
    let deal = to_cents((b + c) / 2.0) as f64 / 100.0;
    let mut e = start(
        &s,
        EpisodeConfig {
            first_mover: FirstMover::Learner,
            ..EpisodeConfig::default()
        },
    );
    assert_eq!(e.setup().seats.learner.role, Role::Buyer);
    play(
        &mut e,
        &[
            format!("Thought: Open low, well under my budget.\nTalk: I like it, but ${} is all I want to spend.\nAction: [SUBMIT_DEAL] price:{}", money(c * 0.9), money(c * 0.9)),
            format!("Thought: Far below what I paid.\nTalk: That is too low for an item in this condition. I can do ${}.\nAction: [SUBMIT_DEAL] price: ${}", money(l), money(l)),
            format!("**Thought:** Move up a little.\n**Talk:** Let us be reasonable — ${}?\n**Action:** [SUBMIT_DEAL] price = {}", money(c), money(c)),
            format!("Thought: Close; ask for the middle.\nTalk: Meet me at ${}, and it is yours.\nAction: [SUBMIT_DEAL] price:{}", money(deal), money(deal)),
            "Thought: That is under my budget.\nTalk: Deal, thank you!\nAction: [ACCEPT_DEAL]".to_string(),
        ],
    );
    let o = e.outcome().unwrap();
    assert_eq!((o.kind, o.by), (OutcomeKind::Deal, Some(Seat::Learner)));
    let spread = (b - c).abs().max(1.0);
    assert!((o.rho.learner - (b - deal) / spread).abs() < 1e-9);
    assert!((o.rho.opponent - (deal - c) / spread).abs() < 1e-9);
    assert!((o.utility.learner - (b - deal)).abs() < 1e-9);
}

#[test]
fn craigslist_buyer_walks_away() {
    let s = scenarios(Family::Craigslist).into_iter().next().unwrap();
    let (l, b, _) = price_of(&s);
    let mut e = start(
        &s,
        EpisodeConfig {
            first_mover: FirstMover::Opponent,
            ..EpisodeConfig::default()
        },
    );
    play(
        &mut e,
        &[
            format!("Thought: Ask the listing.\nTalk: It is in great shape. ${} firm.\nAction: [SUBMIT_DEAL] price:{}", money(l), money(l)),
            format!("Thought: Too much.\nTalk: Would you take ${}?\nAction: [SUBMIT_DEAL] price:{}", money(b * 0.8), money(b * 0.8)),
            format!("Thought: Hold.\nTalk: Sorry, I said firm.\nAction: [SUBMIT_DEAL] price:{}", money(l)),
            "Thought: Not worth it.\nTalk: Then I will look elsewhere.\nAction: [WALK_AWAY]".to_string(),
        ],
    );
    let o = e.outcome().unwrap();
    assert_eq!((o.kind, o.by), (OutcomeKind::WalkAway, Some(Seat::Learner)));
    assert_eq!(o.rho, PerSeat::new(0.0, 0.0));
}

#[test]
fn casino_campers_trade_down_to_a_deal() {
    let s = scenarios(Family::Casino).into_iter().next().unwrap();
    let DealSpace::Items {
        agent_1, agent_2, ..
    } = &s.game
    else {
        panic!()
    };
    let config = EpisodeConfig {
        learner_role: Some(Role::Agent1),
        first_mover: FirstMover::Learner,
        ..EpisodeConfig::default()
    };
    let mut e = start(&s, config);
    play(
        &mut e,
        &[
            "Thought: Ask for a lot first.\nTalk: Hi! We are a big group; could we take most of the supplies?\nAction: [SUBMIT_DEAL] food:3 water:2 firewood:3".into(),
            "Thought: No way.\nTalk: That leaves me almost nothing. I really need water.\nAction: [REJECT_DEAL]".into(),
            "Thought: Give up water.\nTalk: Fair enough, keep all the water then.\nAction: [SUBMIT_DEAL] food:3 water:0 firewood:2".into(),
            "Thought: Ask for one firewood too.\nTalk: I will need a bit of firewood as well.\nAction: [SUBMIT_DEAL] food:1 water:3 firewood:2".into(),
            "Thought: Acceptable.\nTalk: Alright, that works for me.\nAction: [ACCEPT_DEAL]".into(),
        ],
    );
    let o = e.outcome().unwrap();
    assert_eq!(o.kind, OutcomeKind::Deal);
    // The learner accepted the opponent's offer (food 1, water 3, firewood 2 for the opponent).
    let learner_share = [2u32, 0, 1];
    let opponent_share = [1u32, 3, 2];
    let dot = |share: &[u32], values: &[u32]| {
        share
            .iter()
            .zip(values)
            .map(|(x, v)| f64::from(x * v))
            .sum::<f64>()
    };
    assert_eq!(o.utility.learner, dot(&learner_share, &agent_1.values));
    assert_eq!(o.utility.opponent, dot(&opponent_share, &agent_2.values));
    let total = |values: &[u32]| f64::from(values.iter().sum::<u32>() * 3);
    assert!((o.rho.learner - o.utility.learner / total(&agent_1.values)).abs() < 1e-12);
}

#[test]
fn dnd_in_xml_runs_out_of_rounds() {
    let s = scenarios(Family::Dnd)
        .into_iter()
        .find(|s| s.split.as_deref() == Some("test"))
        .unwrap();
    let config = EpisodeConfig {
        learner_role: Some(Role::Agent2),
        first_mover: FirstMover::Opponent,
        max_rounds: 3,
        regulate_opponent: false,
        learner_format: TurnFormat::Xml,
        opponent_format: TurnFormat::Xml,
        ..EpisodeConfig::default()
    };
    let mut e = start(&s, config);
    let DealSpace::Items { items, .. } = &s.game else {
        panic!()
    };
    let all = |n: &dyn Fn(u32) -> u32| {
        items
            .iter()
            .map(|i| format!("{}:{}", i.name, n(i.count)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    play(
        &mut e,
        &[
            format!("<thought>Claim everything.</thought><talk>I would like all of it.</talk><action>[SUBMIT_DEAL] {}</action>", all(&|c| c)),
            "<thought>Hm.</thought><talk>That does not work for me. Tell me what you value?</talk><action>[TALK]</action>".into(),
            format!("<thought>Still greedy.</thought><talk>Fine, you can have one of each kind.</talk><action>[SUBMIT_DEAL] {}</action>", all(&|c| c - 1)),
            format!("<thought>Split.</thought><talk>Half each?</talk><action>[SUBMIT_DEAL] {}</action>", all(&|c| c / 2)),
            format!("<thought>No.</thought><talk>I keep my offer.</talk><action>[SUBMIT_DEAL] {}</action>", all(&|c| c - 1)),
            "<thought>Stuck.</thought><talk>We are not getting anywhere.</talk><action>[REJECT_DEAL]</action>".into(),
        ],
    );
    let o = e.outcome().unwrap();
    assert_eq!((o.kind, o.by), (OutcomeKind::MaxTurns, None));
    assert_eq!(e.moves(), PerSeat::new(3, 3));
    let view = e.view(Seat::Learner);
    assert!(
        view[1]
            .content
            .starts_with("<talk>I would like all of it.</talk>"),
        "the learner reads the opponent in XML"
    );
    assert!(
        view[1].content.contains(&all(&|_| 0)),
        "and the offer flipped to its own side"
    );
}

#[test]
fn job_interview_contract_with_independently_computed_utility() {
    let s = scenarios(Family::JobInterview).into_iter().next().unwrap();
    let mut e = start(
        &s,
        EpisodeConfig {
            first_mover: FirstMover::Learner,
            ..EpisodeConfig::default()
        },
    );
    assert_eq!(e.setup().seats.learner.role, Role::Worker);
    play(
        &mut e,
        &[
            "Thought: Ask high.\nTalk: I'd love to join as a designer at Google in Beijing.\nAction: [SUBMIT_DEAL] salary:50 position:designer company:google workplace:beijing holiday:6".into(),
            "Thought: Too expensive.\nTalk: We can offer the engineering role in Tokyo.\nAction: [SUBMIT_DEAL] salary:30 position:Engineer company:Facebook workplace:Tokyo holiday:2".into(),
            "Thought: Compromise.\nTalk: Engineer is fine, but at Google, and with more days off.\nAction: [SUBMIT_DEAL] salary:40 position:Engineer company:Google workplace:Tokyo holiday:4".into(),
            "Thought: Reasonable.\nTalk: Welcome aboard.\nAction: [ACCEPT_DEAL]".into(),
        ],
    );
    let o = e.outcome().unwrap();
    assert_eq!(o.kind, OutcomeKind::Deal);
    assert_eq!(
        o.terms_text.as_deref(),
        Some("salary:40 position:Engineer company:Google workplace:Tokyo holiday:4")
    );
    // Recompute the worker's score from the scenario's raw JSON, not through the engine.
    let json = serde_json::to_value(&s).unwrap();
    let issues = &json["game"]["issues"]["issues"];
    let prefs = &json["game"]["issues"]["worker"]["issues"];
    let option = |issue: usize, name: &str| {
        issues[issue]["options"]
            .as_array()
            .unwrap()
            .iter()
            .position(|o| o == name)
            .unwrap()
    };
    let w = |i: usize| prefs[i]["weight"].as_f64().unwrap();
    let salary = (40.0 - 20.0) / 30.0;
    let position = prefs[1]["valuation"]["weights"][option(1, "Engineer")][option(2, "Google")]
        .as_f64()
        .unwrap();
    let company = prefs[2]["valuation"]["weights"][option(2, "Google")]
        .as_f64()
        .unwrap();
    let workplace = prefs[3]["valuation"]["weights"][option(3, "Tokyo")]
        .as_f64()
        .unwrap();
    let holiday = (4.0 - 2.0) / 4.0;
    let expected = 100.0
        * (w(0) * salary + w(1) * position + w(2) * company + w(3) * workplace + w(4) * holiday);
    assert!(
        (o.utility.learner - expected).abs() < 1e-9,
        "{} vs {expected}",
        o.utility.learner
    );
    assert!(o.rho.learner > 0.0 && o.rho.learner <= 1.0);
}

#[test]
fn a_record_rebuilds_the_same_episode() {
    let s = scenarios(Family::Casino).into_iter().nth(3).unwrap();
    let mut e = start(&s, EpisodeConfig::default());
    let moves = [
        "Thought: a\nTalk: hello\nAction: [SUBMIT_DEAL] food:2 water:2 firewood:2",
        "nonsense without an action",
        "Thought: b\nTalk: no\nAction: [SUBMIT_DEAL] food:3 water:3 firewood:0",
        "Thought: c\nTalk: ok\nAction: [ACCEPT_DEAL]",
    ];
    play(&mut e, &moves.map(String::from));
    let views = PerSeat::from_fn(|seat| e.view(seat).to_vec());
    let meta = RecordMeta {
        run_id: "r".into(),
        seeds: EpisodeSeed {
            run: 11,
            group: 0,
            member: 0,
        },
        scenario_digest: s.digest(),
        players: PerSeat::new(PlayerInfo::default(), PlayerInfo::default()),
    };
    let record =
        EpisodeRecord::from_episode(e, meta, &RewardConfig::default(), Timing::default(), [])
            .unwrap();
    let line = serde_json::to_string(&record).unwrap();
    let back: EpisodeRecord = serde_json::from_str(&line).unwrap();
    assert_eq!(back, record, "records round-trip through JSON");
    let rebuilt = back.replay(&Arc::new(s), &Prompts::builtin()).unwrap();
    assert_eq!(
        rebuilt.turns().to_vec(),
        back.turns
            .iter()
            .map(|t| t.turn.clone())
            .collect::<Vec<_>>()
    );
    assert_eq!(rebuilt.outcome(), Some(&back.outcome.outcome));
    for seat in Seat::BOTH {
        assert_eq!(rebuilt.view(seat), views[seat].as_slice());
    }
    let fields = serde_json::to_value(&record).unwrap();
    for key in [
        "schema",
        "run_id",
        "episode_id",
        "group_id",
        "seeds",
        "scenario_id",
        "family",
        "first_mover",
        "turns",
        "rewards",
        "scenario_digest",
        "prompts_digest",
    ] {
        assert!(fields.get(key).is_some(), "record lacks {key}");
    }
    assert!(
        fields["outcome"]["kind"].is_string()
            && fields["outcome"]["utility"]["learner"].is_number()
    );
    assert!(
        fields["outcome"]["rho"]["opponent"].is_number()
            && fields["rewards"]["learner"].is_number()
    );
    assert!(fields["seats"]["learner"]["system_prompt"].is_string());
}
