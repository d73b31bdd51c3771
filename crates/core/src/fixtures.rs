//! Test fixtures, for the unit tests, the integration tests under `tests/` and the benches — not
//! for users, hence hidden from the docs. It is public (not `cfg(test)`) because integration
//! tests and benches compile against the normal library.
//!
//! The one home of the small deal spaces and scenarios tests build: CaSiNo's items, one Job
//! Interview issue list, the tiny scenarios with round numbers (price, casino, job) whose
//! utilities tests work out by hand, builders for scenarios with drawn values (property tests),
//! and a driver that plays completions through a scenario. Every scenario is checked like a
//! scenario file's line. The functions `expect` on their own literals: they take no outside
//! input.

use std::sync::Arc;

use crate::game::{Episode, EpisodeConfig, EpisodeSeed, FirstMover, PerSeat, Setup};
use crate::protocol::{BundlePart, BundleSpec, IssueSpec, ItemSpec};
use crate::scenario::{
    parse_scenario_line, validate, BundleValues, BuyerPrivate, DealSpace, Family, IssuePreferences,
    ItemValues, PublicInfo, Role, Scenario, SellerPrivate, SCENARIO_SCHEMA,
};

/// A scenario from one JSONL line, validated like a scenario file's line.
pub fn scenario(json: &str) -> Arc<Scenario> {
    Arc::new(parse_scenario_line("test", 1, json).expect("test scenario"))
}

/// A scenario with the fields a test does not care about filled in, validated like a scenario
/// file's line.
fn build(
    id: &str,
    family: Family,
    title: &str,
    description: &str,
    game: DealSpace,
) -> Arc<Scenario> {
    let s = Scenario {
        schema: SCENARIO_SCHEMA,
        id: id.into(),
        family,
        split: None,
        source: "t".into(),
        public: PublicInfo {
            title: title.into(),
            category: None,
            description: description.into(),
        },
        game,
        no_deal_value: 0.0,
        flags: vec![],
        human: vec![],
    };
    validate(&s).expect("test scenario");
    Arc::new(s)
}

// ---- deal spaces ----

/// CaSiNo's items: 3 units each of food, water and firewood.
pub fn casino_items() -> Vec<ItemSpec> {
    ["food", "water", "firewood"]
        .iter()
        .map(|name| ItemSpec {
            name: name.to_string(),
            count: 3,
        })
        .collect()
}

/// Deal or No Deal-style items with the given counts, named book, hat and ball in that order
/// (at most three).
pub fn dnd_items(counts: &[u32]) -> Vec<ItemSpec> {
    assert!(counts.len() <= 3, "dnd_items names at most three items");
    ["book", "hat", "ball"]
        .iter()
        .zip(counts)
        .map(|(name, &count)| ItemSpec {
            name: name.to_string(),
            count,
        })
        .collect()
}

/// The Job Interview issues every test uses, in this order:
/// - `salary` ("Salary"): a whole number from 20 to 50;
/// - `company` ("Company"): Google, Apple or Amazon;
/// - `position` ("Position"): Engineer or Sales;
/// - `holiday` ("Weekly holiday"): a whole number from 2 to 6.
pub fn job_issues() -> Vec<IssueSpec> {
    serde_json::from_str(
        r#"[{"key":"salary","label":"Salary","type":"integer","min":20,"max":50},
            {"key":"company","label":"Company","type":"discrete","options":["Google","Apple","Amazon"]},
            {"key":"position","label":"Position","type":"discrete","options":["Engineer","Sales"]},
            {"key":"holiday","label":"Weekly holiday","type":"integer","min":2,"max":6}]"#,
    )
    .expect("job issues")
}

/// A TV (list 60000) with a TV stand (1500) and an extension cord (800), delivery 500.
pub fn bundle_spec() -> BundleSpec {
    let part = |key: &str, name: &str, list_price: f64| BundlePart {
        key: key.into(),
        name: name.into(),
        list_price,
    };
    BundleSpec {
        main: part("tv", "Skyworth Q71 TV", 60000.0),
        accessories: vec![
            part("tv_stand", "WALI Universal TV Stand", 1500.0),
            part("extension_cord", "AmazonBasics Extension Cord", 800.0),
        ],
        delivery_fee: 500.0,
    }
}

// ---- scenarios worked by hand ----

/// [`bundle_spec`]'s TV. The buyer values the TV at 58000, the stand at nothing, the cord at
/// 700 and delivery at nothing; the seller's costs are 45000, 1100, 600 and 400. The full
/// bundle's joint surplus is 58700 − 47100 = 11600; the best bundle (TV and cord, no delivery)
/// makes 58700 − 45600 = 13100.
pub fn bundle() -> Arc<Scenario> {
    bundle_scenario(
        BundleValues {
            main: 58000.0,
            accessories: vec![0.0, 700.0],
            delivery: 0.0,
        },
        BundleValues {
            main: 45000.0,
            accessories: vec![1100.0, 600.0],
            delivery: 400.0,
        },
    )
}

/// A bundle scenario on [`bundle_spec`] with the buyer's worth and the seller's cost per part.
pub fn bundle_scenario(buyer: BundleValues, seller: BundleValues) -> Arc<Scenario> {
    build(
        "t:bundle",
        Family::Bundle,
        "Skyworth Q71 TV bundle",
        "A 65-inch 4K TV with a stand and an extension cord",
        DealSpace::Bundle {
            bundle: bundle_spec(),
            buyer,
            seller,
        },
    )
}

/// A Craigslist-style price task: listing price L, buyer budget B, seller cost C.
pub fn price_task(listing: f64, budget: f64, cost: f64) -> Arc<Scenario> {
    build(
        "t:price",
        Family::Craigslist,
        "Bike",
        "A red bike",
        DealSpace::Price {
            listing_price: listing,
            buyer: BuyerPrivate { budget },
            seller: SellerPrivate { cost },
        },
    )
}

/// L = 200, B = 180, C = 100.
pub fn price() -> Arc<Scenario> {
    price_task(200.0, 180.0, 100.0)
}

/// CaSiNo ([`casino_items`]): agent_1 values food/water/firewood 5/4/3 per unit, agent_2
/// 3/4/5. Each side's best is 3·(5+4+3) = 36.
pub fn casino() -> Arc<Scenario> {
    let values = |values: Vec<u32>| ItemValues {
        values,
        reasons: vec![],
    };
    build(
        "t:casino",
        Family::Casino,
        "Camp",
        "",
        DealSpace::Items {
            items: casino_items(),
            agent_1: values(vec![5, 4, 3]),
            agent_2: values(vec![3, 4, 5]),
        },
    )
}

/// A job interview over [`job_issues`] where only salary and company matter (position and
/// holiday weigh 0, so contracts that differ only there tie):
/// - worker: 0.6 · (s − 20)/30 + 0.2 · {Google: 1, Apple: 0.5, Amazon: 0} — best
///   100 · (0.6 + 0.2) = 80 at 50/Google;
/// - recruiter: 0.5 · (50 − s)/30 + 0.5 · {Google: 0, Apple: 1, Amazon: 0} — best 100 at
///   20/Apple.
///
/// Amazon is worth no more than Google to either side, so an Amazon contract is never
/// Pareto-optimal.
pub fn job() -> Arc<Scenario> {
    let preferences =
        |json: &str| -> IssuePreferences { serde_json::from_str(json).expect("job preferences") };
    issues_scenario(
        preferences(
            r#"{"issues":[{"weight":0.6,"valuation":{"kind":"rising"}},
                {"weight":0.2,"valuation":{"kind":"options","weights":[1.0,0.5,0.0]}},
                {"weight":0.0,"valuation":{"kind":"options","weights":[0.0,0.0]}},
                {"weight":0.0,"valuation":{"kind":"rising"}}]}"#,
        ),
        preferences(
            r#"{"issues":[{"weight":0.5,"valuation":{"kind":"falling"}},
                {"weight":0.5,"valuation":{"kind":"options","weights":[0.0,1.0,0.0]}},
                {"weight":0.0,"valuation":{"kind":"options","weights":[0.0,0.0]}},
                {"weight":0.0,"valuation":{"kind":"falling"}}]}"#,
        ),
    )
}

// ---- builders for drawn values ----

/// A Deal or No Deal scenario over `items` with each side's private values (and reasons).
pub fn items_scenario(
    items: Vec<ItemSpec>,
    agent_1: ItemValues,
    agent_2: ItemValues,
) -> Arc<Scenario> {
    build(
        "t:items",
        Family::Dnd,
        "Items",
        "",
        DealSpace::Items {
            items,
            agent_1,
            agent_2,
        },
    )
}

/// A Job Interview scenario over [`job_issues`] with each side's preferences, one per issue in
/// that order.
pub fn issues_scenario(worker: IssuePreferences, recruiter: IssuePreferences) -> Arc<Scenario> {
    build(
        "t:job",
        Family::JobInterview,
        "Job",
        "",
        DealSpace::Issues {
            issues: job_issues(),
            worker,
            recruiter,
        },
    )
}

/// A hotel call of two tickets (`hotel` family): t1 Comfort King Room today, selling 168 /
/// take-home 143, the agent's target 140 / 119 and acceptable 152 / 129, the hotel's floor 145;
/// t2 Twin Room tomorrow, selling 120 / take-home 102, target 97 / 82, acceptable 105 / 89,
/// floor 110 (above the acceptable price: t2 cannot succeed).
pub fn hotel() -> Arc<Scenario> {
    scenario(
        r#"{"schema":1,"id":"t:hotel","family":"hotel","source":"t","public":{"title":"Riverside Hotel","description":""},
        "game":{"tickets":{"tickets":[
            {"key":"t1","room":"Comfort King Room","date":"today","selling":168,"take_home":143},
            {"key":"t2","room":"Twin Room","date":"tomorrow","selling":120,"take_home":102}],
          "bd":[{"target":{"selling":140,"take_home":119},"acceptable":{"selling":152,"take_home":129}},
                {"target":{"selling":97,"take_home":82},"acceptable":{"selling":105,"take_home":89}}],
          "hotel":[{"floor":145,"occupancy":0.4,"competitor":150},
                   {"floor":110,"occupancy":0.9,"competitor":125}]}}}"#,
    )
}

// ---- playing episodes ----

/// The setup of an episode under `config`, drawn from a fixed seed.
pub fn setup_with(s: &Scenario, config: &EpisodeConfig) -> Setup {
    let seed = EpisodeSeed {
        run: 1,
        group: 0,
        member: 0,
    };
    Setup::draw(s, config, PerSeat::default(), &mut seed.setup_rng()).expect("setup")
}

/// The default rules with the learner in `role`, moving first.
pub fn learner_first_as(s: &Scenario, role: Role) -> Setup {
    setup_with(
        s,
        &EpisodeConfig {
            learner_role: Some(role),
            first_mover: FirstMover::Learner,
            ..EpisodeConfig::default()
        },
    )
}

/// A well-formed completion in the tagged spelling.
pub fn turn(talk: &str, action: &str) -> String {
    format!("Thought: thinking\nTalk: {talk}\nAction: {action}")
}

/// Play `completions` in order from the start; each must be taken (the episode may end only
/// after the last).
pub fn play(s: &Arc<Scenario>, setup: Setup, completions: &[String]) -> Episode {
    let mut e = Episode::new(s.clone(), setup).expect("episode");
    for (i, c) in completions.iter().enumerate() {
        assert!(e.to_move().is_some(), "episode ended before completion {i}");
        e.step(c.as_str()).expect("step");
    }
    e
}

/// A training record on [`price_task`]`(125, 100, 60)`, the learner buying and moving first:
/// a deal at `price` (ρ = (100 − price)/40) or, with `None`, a walk-away; run `{run}-step{step}`,
/// group `g{g}`, episode `g{g}-m0`, its `training` the run and step — for tests of the
/// report's training section.
pub fn training_record(
    run: &str,
    step: u64,
    g: usize,
    price: Option<u32>,
) -> crate::record::EpisodeRecord {
    let s = price_task(125.0, 100.0, 60.0);
    let moves = match price {
        Some(p) => vec![
            turn(&format!("{p}?"), &format!("[SUBMIT_DEAL] price:{p}")),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ],
        None => vec![turn("Bye.", "[WALK_AWAY]")],
    };
    let mut r = record_of(play(&s, learner_first_as(&s, Role::Buyer), &moves));
    r.run_id = format!("{run}-step{step}");
    r.group_id = format!("g{g}");
    r.episode_id = format!("g{g}-m0");
    r.training = Some(crate::record::TrainingStep {
        run: run.to_string(),
        step,
    });
    r
}

/// The record of an ended episode with default rewards, run `r`, seeds (1, 0, 0) and players
/// with no spec — for tests of what reads records.
pub fn record_of(episode: Episode) -> crate::record::EpisodeRecord {
    use crate::record::{EpisodeRecord, PlayerInfo, RecordMeta, Timing};
    let meta = RecordMeta {
        run_id: "r".into(),
        seeds: EpisodeSeed {
            run: 1,
            group: 0,
            member: 0,
        },
        scenario_digest: episode.scenario().digest(),
        players: PerSeat::new(PlayerInfo::default(), PlayerInfo::default()),
    };
    EpisodeRecord::from_episode(
        episode,
        meta,
        &crate::reward::RewardConfig::default(),
        Timing::default(),
        [],
    )
    .expect("the episode has ended")
}
