//! Every per-episode metric of the book's `design/metrics.md`, worked by hand on the tiny scenarios
//! of `crate::fixtures`. Each test writes its arithmetic beside the numbers it asserts.

use super::*;
use crate::fixtures::{casino, job, learner_first_as, play, price_task, setup_with, turn};
use crate::game::{Completion, Episode, EpisodeConfig, FirstMover, Turn};
use crate::protocol::constraint::{Constrain, ConstraintCheck};
use crate::protocol::IssueValue;
use crate::scenario::bargained_ratio;

const TOL: f64 = 1e-9;

fn close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() < TOL,
        "{actual} is not {expected}"
    );
}

fn close_opt(actual: Option<f64>, expected: f64) {
    match actual {
        Some(a) => close(a, expected),
        None => panic!("no value where {expected} was expected"),
    }
}

/// The metrics the record of an ended episode gets.
fn metrics_of(e: &Episode) -> EpisodeMetrics {
    let o = e.outcome().expect("the episode has ended");
    episode_metrics(
        e.scenario(),
        e.setup(),
        e.turns(),
        o.kind,
        o.terms.as_ref(),
        &o.utility,
    )
}

/// A contract on the fixtures' job with `salary` and `company` (0 Google, 1 Apple, 2 Amazon);
/// position (Engineer) and holiday (2) weigh nothing there.
fn contract(salary: i64, company: usize) -> Terms {
    Terms::Issues(vec![
        IssueValue::Number(salary),
        IssueValue::Option(company),
        IssueValue::Option(0),
        IssueValue::Number(2),
    ])
}

// ---- bargained ratio ρ ----

#[test]
fn price_rho_for_buyer_and_seller() {
    // L = 125, B = 100, C = 60; deal P = 70.
    let s = price_task(125.0, 100.0, 60.0);
    let setup = learner_first_as(&s, Role::Buyer);
    let (u, rho) = seat_values(&s, &setup, Some(&Terms::Price(7000)));
    // buyer u = B − P = 30, ρ_buyer = 30/|100 − 60| = 0.75
    close(u.learner, 30.0);
    close(rho.learner, 0.75);
    // seller u = P − C = 10, ρ_seller = 10/40 = 0.25
    close(u.opponent, 10.0);
    close(rho.opponent, 0.25);
}

#[test]
fn price_rho_when_the_learner_is_the_seller() {
    // Same numbers, seats swapped: the learner sells at P = 70.
    let s = price_task(125.0, 100.0, 60.0);
    let setup = learner_first_as(&s, Role::Seller);
    let (u, rho) = seat_values(&s, &setup, Some(&Terms::Price(7000)));
    // learner (seller): u = 70 − 60 = 10, ρ = 10/40 = 0.25; opponent (buyer): 30/40 = 0.75
    close(u.learner, 10.0);
    close(rho.learner, 0.25);
    close(rho.opponent, 0.75);
}

#[test]
fn price_rho_divides_by_one_when_budget_and_cost_are_less_than_one_apart() {
    // B = 50.5, C = 50, |B − C| = 0.5 < 1, so ρ divides by 1; P = 50.25.
    let s = price_task(60.0, 50.5, 50.0);
    let setup = learner_first_as(&s, Role::Buyer);
    let (_, rho) = seat_values(&s, &setup, Some(&Terms::Price(5025)));
    // ρ_buyer = (50.5 − 50.25)/1 = 0.25 (not 0.25/0.5 = 0.5); ρ_seller = (50.25 − 50)/1 = 0.25
    close(rho.learner, 0.25);
    close(rho.opponent, 0.25);
    // B = C = 50: the spread is 0, still divided by 1. P = 49 gives the buyer 1/1.
    let s = price_task(60.0, 50.0, 50.0);
    close(bargained_ratio(&s, Role::Buyer, 50.0 - 49.0), 1.0);
    close(bargained_ratio(&s, Role::Seller, 49.0 - 50.0), -1.0);
}

#[test]
fn price_rho_with_cost_above_budget_is_negative_for_both() {
    // B = 60, C = 100 (conflicting interest), |B − C| = 40; P = 80.
    let s = price_task(120.0, 60.0, 100.0);
    let setup = learner_first_as(&s, Role::Buyer);
    let (_, rho) = seat_values(&s, &setup, Some(&Terms::Price(8000)));
    // ρ_buyer = (60 − 80)/40 = −0.5; ρ_seller = (80 − 100)/40 = −0.5
    close(rho.learner, -0.5);
    close(rho.opponent, -0.5);
}

#[test]
fn items_rho_is_own_points_over_best_points() {
    // CaSiNo, learner agent_1 (5/4/3), opponent agent_2 (3/4/5); best 36 each.
    // The learner takes food 3, water 3, firewood 0; the opponent gets 0/0/3.
    let s = casino();
    let setup = learner_first_as(&s, Role::Agent1);
    let (u, rho) = seat_values(&s, &setup, Some(&Terms::Items(vec![3, 3, 0])));
    // learner: 3·5 + 3·4 + 0·3 = 27, ρ = 27/36 = 0.75 (the book's `design/scenarios.md` example)
    close(u.learner, 27.0);
    close(rho.learner, 0.75);
    // opponent: 0·3 + 0·4 + 3·5 = 15, ρ = 15/36
    close(u.opponent, 15.0);
    close(rho.opponent, 15.0 / 36.0);

    // The learner as agent_2 taking the same shares: 3·3 + 3·4 = 21 → 21/36;
    // agent_1 gets firewood 3·3 = 9 → 9/36 = 0.25.
    let setup = learner_first_as(&s, Role::Agent2);
    let (_, rho) = seat_values(&s, &setup, Some(&Terms::Items(vec![3, 3, 0])));
    close(rho.learner, 21.0 / 36.0);
    close(rho.opponent, 0.25);
}

#[test]
fn issues_rho_is_own_score_over_best_score() {
    // Job: salary 35 (t = (35 − 20)/30 = 0.5), company Apple.
    let s = job();
    let setup = learner_first_as(&s, Role::Worker);
    let (u, rho) = seat_values(&s, &setup, Some(&contract(35, 1)));
    // worker: 100·(0.6·0.5 + 0.2·0.5) = 40; best 100·(0.6 + 0.2) = 80 → ρ = 0.5
    close(u.learner, 40.0);
    close(rho.learner, 0.5);
    // recruiter: 100·(0.5·(1 − 0.5) + 0.5·1) = 75; best 100·(0.5 + 0.5) = 100 → ρ = 0.75
    close(u.opponent, 75.0);
    close(rho.opponent, 0.75);
}

#[test]
fn no_deal_gives_each_side_the_no_deal_value() {
    let s = casino();
    // Default no-deal value 0: u = 0, ρ = 0.
    let (u, rho) = seat_values(&s, &learner_first_as(&s, Role::Agent1), None);
    assert_eq!((u, rho), (PerSeat::new(0.0, 0.0), PerSeat::new(0.0, 0.0)));
    // CaSiNo's own walk-away rule, 5 each: ρ = 5/36.
    let setup = setup_with(
        &s,
        &EpisodeConfig {
            learner_role: Some(Role::Agent1),
            no_deal_value: Some(5.0),
            ..EpisodeConfig::default()
        },
    );
    let (u, rho) = seat_values(&s, &setup, None);
    assert_eq!(u, PerSeat::new(5.0, 5.0));
    close(rho.learner, 5.0 / 36.0);
    close(rho.opponent, 5.0 / 36.0);
}

// ---- score ratio ----

#[test]
fn score_ratio_is_each_seats_share_of_the_summed_utility() {
    // CaSiNo, the learner (agent_1) offers food 3 water 3 firewood 0 and the opponent accepts:
    // u = (27, 15) as above; score ratio 27/(27 + 15) = 27/42 and 15/42.
    let s = casino();
    let e = play(
        &s,
        learner_first_as(&s, Role::Agent1),
        &[
            turn(
                "All food and water for me?",
                "[SUBMIT_DEAL] food:3 water:3 firewood:0",
            ),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ],
    );
    let m = metrics_of(&e);
    close_opt(m.seats.learner.score_ratio, 27.0 / 42.0);
    close_opt(m.seats.opponent.score_ratio, 15.0 / 42.0);

    // A walk-away with no-deal value 0: u = (0, 0), the sum is 0 and there is no ratio.
    let e = play(
        &s,
        learner_first_as(&s, Role::Agent1),
        &[turn("Bye.", "[WALK_AWAY]")],
    );
    let m = metrics_of(&e);
    assert_eq!(m.seats.learner.score_ratio, None);
    assert_eq!(m.seats.opponent.score_ratio, None);
}

// ---- first-bid ratio and sale-to-list ----

#[test]
fn first_bid_ratio_is_the_buyers_first_offer_over_its_budget() {
    // L = 125, B = 100, C = 60. The buyer's first try cannot be read; its first offer that took
    // effect is 50, later 65. First bid = 50/100 = 0.5; the seller has none.
    let s = price_task(125.0, 100.0, 60.0);
    let e = play(
        &s,
        learner_first_as(&s, Role::Buyer),
        &[
            "nonsense".to_string(),
            turn("50?", "[SUBMIT_DEAL] price:50"),
            turn("90.", "[SUBMIT_DEAL] price:90"),
            turn("65?", "[SUBMIT_DEAL] price:65"),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ],
    );
    let m = metrics_of(&e);
    close_opt(m.seats.learner.first_bid_ratio, 0.5);
    assert_eq!(
        m.seats.opponent.first_bid_ratio, None,
        "the seller's offers"
    );

    // The learner sells; the opponent buys and opens at 40: 40/100 = 0.4 on the opponent's seat.
    let setup = setup_with(
        &s,
        &EpisodeConfig {
            learner_role: Some(Role::Seller),
            first_mover: FirstMover::Opponent,
            ..EpisodeConfig::default()
        },
    );
    let e = play(
        &s,
        setup,
        &[
            turn("40?", "[SUBMIT_DEAL] price:40"),
            turn("No.", "[WALK_AWAY]"),
        ],
    );
    let m = metrics_of(&e);
    close_opt(m.seats.opponent.first_bid_ratio, 0.4);
    assert_eq!(m.seats.learner.first_bid_ratio, None);
}

#[test]
fn sale_to_list_is_price_minus_listing_over_budget_minus_listing() {
    // L = 125, B = 100, C = 60; the seller accepts the buyer's 65.
    let s = price_task(125.0, 100.0, 60.0);
    let e = play(
        &s,
        learner_first_as(&s, Role::Buyer),
        &[
            turn("65?", "[SUBMIT_DEAL] price:65"),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ],
    );
    let m = metrics_of(&e);
    // (P − L)/(B − L) = (65 − 125)/(100 − 125) = −60/−25 = 2.4, for the buyer only
    close_opt(m.seats.learner.sale_to_list, 2.4);
    assert_eq!(m.seats.opponent.sale_to_list, None);
    // The seller's SL (the `sale_to_list` reward's; the metric is the buyer's only) mirrors
    // it: (P − B)/(L − B) = (65 − 100)/(125 − 100) = −35/25 = −1.4 = 1 − 2.4.
    close_opt(super::sale_to_list(&s, Role::Seller, 65.0), -1.4);
    close_opt(super::sale_to_list(&s, Role::Buyer, 65.0), 2.4);
    assert_eq!(super::sale_to_list(&casino(), Role::Agent1, 3.0), None);

    // No deal: no sale.
    let e = play(
        &s,
        learner_first_as(&s, Role::Buyer),
        &[turn("Bye.", "[WALK_AWAY]")],
    );
    assert_eq!(metrics_of(&e).seats.learner.sale_to_list, None);

    // B = L: the ratio's denominator is 0, so there is none.
    let s = price_task(100.0, 100.0, 60.0);
    let e = play(
        &s,
        learner_first_as(&s, Role::Buyer),
        &[
            turn("65?", "[SUBMIT_DEAL] price:65"),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ],
    );
    assert_eq!(metrics_of(&e).seats.learner.sale_to_list, None);
}

// ---- turns, format-ok rate, malformed count ----

#[test]
fn format_ok_rate_turns_and_malformed_count_per_seat() {
    // L = 125, B = 100, C = 60, the learner (buyer) first:
    //   1 L "nonsense"                      unreadable: not format-ok, malformed (retried)
    //   2 L Talk + Action, no Thought       played, but not format-ok
    //   3 O [REJECT_DEAL]                   played, format-ok
    //   4 L [ACCEPT_DEAL] with no offer     illegal: malformed (retried), and not format-ok
    //                                       (`Parsed::counts_as_format_ok`, as the format reward)
    //   5 L [SUBMIT_DEAL] price:65          played, format-ok
    //   6 O [ACCEPT_DEAL]                   played, format-ok: deal at 65
    let s = price_task(125.0, 100.0, 60.0);
    let e = play(
        &s,
        learner_first_as(&s, Role::Buyer),
        &[
            "nonsense".to_string(),
            "Talk: 50?\nAction: [SUBMIT_DEAL] price:50".to_string(),
            turn("No.", "[REJECT_DEAL]"),
            turn("Deal!", "[ACCEPT_DEAL]"),
            turn("65?", "[SUBMIT_DEAL] price:65"),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ],
    );
    let m = metrics_of(&e);
    let (l, o) = (&m.seats.learner, &m.seats.opponent);
    // learner: attempts 1, 2, 4, 5; played 2 and 5 → turns 2; 1 and 4 unused → malformed 2;
    // format-ok only 5 (4's ACCEPT had no offer to accept) → 1/4 = 0.25, the share of its
    // turns the harness's format reward pays (§3.4: 0, 0, 0, 1 → mean 0.25)
    assert_eq!((l.turns, l.malformed), (2, 2));
    close(l.format_ok_rate, 0.25);
    // opponent: attempts 3 and 6, both played and format-ok → 2 turns, 0 malformed, 2/2 = 1
    assert_eq!((o.turns, o.malformed), (2, 0));
    close(o.format_ok_rate, 1.0);
}

// ---- regulation events ----

#[test]
fn regulation_events_are_counted_on_the_regulated_seat() {
    // L = 125, B = 100, C = 60; the opponent (seller) is regulated with floor u ≥ 0 (P ≥ 60).
    //   L submits 50; O accepts: u = 50 − 60 = −10 < 0 → replaced by REJECT   (event 1)
    //   L submits 55; O submits 58: u = −2 < 0 → replaced by REJECT           (event 2)
    //   L submits 62; O accepts: u = 2 ≥ 0 → deal at 62
    let s = price_task(125.0, 100.0, 60.0);
    let e = play(
        &s,
        learner_first_as(&s, Role::Buyer),
        &[
            turn("50?", "[SUBMIT_DEAL] price:50"),
            turn("Yes.", "[ACCEPT_DEAL]"),
            turn("55?", "[SUBMIT_DEAL] price:55"),
            turn("58.", "[SUBMIT_DEAL] price:58"),
            turn("62?", "[SUBMIT_DEAL] price:62"),
            turn("Yes.", "[ACCEPT_DEAL]"),
        ],
    );
    assert_eq!(e.outcome().unwrap().terms, Some(Terms::Price(6200)));
    let m = metrics_of(&e);
    assert_eq!(m.seats.opponent.regulation_events, 2);
    assert_eq!(
        m.seats.opponent.turns, 3,
        "a replaced move still took effect"
    );
    assert_eq!(m.seats.learner.regulation_events, 0, "the learner is free");
}

// ---- constrained attempts and constraint violations ----

#[test]
fn constrained_attempts_and_violations_per_seat() {
    // The learner's two attempts were decoded under a constraint: the first is one the
    // constraint does not admit (the server ignored it), the second is admitted. The
    // opponent's one attempt was not constrained. Learner: constrained 2, violations 1.
    let s = price_task(125.0, 100.0, 60.0);
    let constrained = |text: String, admitted: bool| Completion {
        text,
        constraint: Some(ConstraintCheck {
            via: Constrain::Vllm,
            admitted,
            cut: false,
        }),
        ..Completion::default()
    };
    let mut e = Episode::new(s.clone(), learner_first_as(&s, Role::Buyer)).unwrap();
    e.step(constrained("nonsense".into(), false)).unwrap();
    e.step(constrained(turn("80?", "[SUBMIT_DEAL] price:80"), true))
        .unwrap();
    e.step(turn("Yes.", "[ACCEPT_DEAL]")).unwrap();
    let m = metrics_of(&e);
    assert_eq!(
        (
            m.seats.learner.constrained,
            m.seats.learner.constraint_violations
        ),
        (2, 1)
    );
    assert_eq!(
        (
            m.seats.opponent.constrained,
            m.seats.opponent.constraint_violations
        ),
        (0, 0)
    );
}

// ---- Pareto optimality ----

#[test]
fn pareto_flag_on_items_deals() {
    // CaSiNo, learner agent_1 (5/4/3) keeps (f, w, x); agent_2 (3/4/5) gets the rest.
    // u1 + u2 = 5f + 4w + 3x + 3(3 − f) + 4(3 − w) + 5(3 − x) = 36 + 2f − 2x, at most 42
    // (f = 3, x = 0). Water is worth 4 to both, so moving it helps one side only at the
    // other's cost.
    let s = casino();
    let setup = learner_first_as(&s, Role::Agent1);
    // (3, 2, 0): u1 = 15 + 8 = 23, u2 = 4 + 15 = 19, sum 42 = the most any split gives:
    // a split better for one side and no worse for the other would sum to more → optimal.
    assert_eq!(
        is_pareto_optimal(&s, &setup, &Terms::Items(vec![3, 2, 0])),
        Some(true)
    );
    // (2, 2, 1): u1 = 10 + 8 + 3 = 21, u2 = 3 + 4 + 10 = 17; (3, 2, 0) gives 23 ≥ 21 and
    // 19 ≥ 17 → dominated.
    assert_eq!(
        is_pareto_optimal(&s, &setup, &Terms::Items(vec![2, 2, 1])),
        Some(false)
    );
    // (0, 0, 0): u1 = 0, u2 = 36, agent_2's best: nothing gives agent_2 more → optimal.
    assert_eq!(
        is_pareto_optimal(&s, &setup, &Terms::Items(vec![0, 0, 0])),
        Some(true)
    );

    // The same through an episode's metrics.
    let deal = |terms: &str| {
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn("This?", &format!("[SUBMIT_DEAL] {terms}")),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ],
        );
        metrics_of(&e).pareto_optimal
    };
    assert_eq!(deal("food:3 water:2 firewood:0"), Some(true));
    assert_eq!(deal("food:2 water:2 firewood:1"), Some(false));
    // No deal, no flag.
    let e = play(&s, setup, &[turn("Bye.", "[WALK_AWAY]")]);
    assert_eq!(metrics_of(&e).pareto_optimal, None);
}

#[test]
fn pareto_flag_on_issues_deals() {
    // Job, t = (s − 20)/30. Worker W = 60t + 20 on Google, 60t + 10 on Apple, 60t on Amazon;
    // recruiter R = 50 − 50t on Google, 100 − 50t on Apple, 50 − 50t on Amazon. Position and
    // holiday weigh nothing: contracts differing only there tie, which is no domination.
    let s = job();
    let setup = learner_first_as(&s, Role::Worker);
    // (35, Google): t = 0.5, W = 50, R = 25. (40, Apple): t = 2/3, W = 40 + 10 = 50, R = 100 −
    // 33.3 = 66.7 — as good for the worker, better for the recruiter → dominated.
    assert_eq!(is_pareto_optimal(&s, &setup, &contract(35, 0)), Some(false));
    // (45, Google): t = 5/6, W = 50 + 20 = 70, R = 50 − 41.7 = 8.3. (50, Apple): W = 60 + 10 =
    // 70, R = 50 — equal for the worker, better for the recruiter → dominated, though no
    // contract is better for both (W = 70 is the most any Apple contract gives, and Amazon
    // gives W ≤ 60).
    assert_eq!(is_pareto_optimal(&s, &setup, &contract(45, 0)), Some(false));
    // (35, Apple): W = 40, R = 75. Every Google or Amazon contract gives R ≤ 50 < 75; an Apple
    // contract with more for the worker has a higher salary, so less for the recruiter →
    // optimal.
    assert_eq!(is_pareto_optimal(&s, &setup, &contract(35, 1)), Some(true));
    // (35, Amazon): W = 30, R = 25 — (35, Google) gives W = 50, R = 25 → dominated.
    assert_eq!(is_pareto_optimal(&s, &setup, &contract(35, 2)), Some(false));

    let deal = |terms: &str| {
        let e = play(
            &s,
            learner_first_as(&s, Role::Worker),
            &[
                turn("This?", &format!("[SUBMIT_DEAL] {terms}")),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ],
        );
        metrics_of(&e).pareto_optimal
    };
    assert_eq!(
        deal("salary:35 company:Apple position:Engineer holiday:2"),
        Some(true)
    );
    assert_eq!(
        deal("salary:35 company:Google position:Engineer holiday:2"),
        Some(false)
    );
}

#[test]
fn price_deals_have_no_pareto_flag() {
    // Every price splits the same surplus: the flag is for items and issues only.
    let s = price_task(125.0, 100.0, 60.0);
    let e = play(
        &s,
        learner_first_as(&s, Role::Buyer),
        &[
            turn("65?", "[SUBMIT_DEAL] price:65"),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ],
    );
    assert_eq!(metrics_of(&e).pareto_optimal, None);
}

#[test]
fn a_space_too_large_to_enumerate_has_no_pareto_flag() {
    // u32::MAX units of each CaSiNo item: (2^32)^3 deals overflow any integer. The product
    // wrapped to 0 once — an empty space, so every deal read as Pareto-optimal.
    let mut s = (*casino()).clone();
    if let DealSpace::Items { items, .. } = &mut s.game {
        for item in items {
            item.count = u32::MAX;
        }
    }
    let setup = learner_first_as(&s, Role::Agent1);
    assert_eq!(
        is_pareto_optimal(&s, &setup, &Terms::Items(vec![2, 2, 1])),
        None
    );
    // One item of more than MAX_OUTCOME_SPACE units: enumerable in principle, not per deal.
    if let DealSpace::Items { items, .. } = &mut s.game {
        items.truncate(1);
        items[0].count = crate::limits::MAX_OUTCOME_SPACE as u32;
    }
    assert_eq!(is_pareto_optimal(&s, &setup, &Terms::Items(vec![2])), None);
}

// ---- deal proposals and the turn cap (aggregates of issue 19) ----

#[test]
fn proposals_count_malformed_deals_apart_from_other_unusable_turns() {
    // CaSiNo, the learner (agent_1) first; one correction per move (the default):
    //   learner  [SUBMIT_DEAL] food:5 …   out of range: a malformed proposal
    //   learner  [SUBMIT_DEAL] food:3 water:2 firewood:0   a proposal
    //   opponent "nonsense"                  unusable, but no proposal
    //   opponent [SUBMIT_DEAL] food:1 water:1 firewood:3   a proposal
    //   learner  [TALK] naming [SUBMIT_DEAL] in its Talk: no proposal
    //   opponent [SUBMIT_DEAL] food:1                      incomplete: a malformed proposal
    //   opponent [SUBMIT_DEAL] food:1 water:1 firewood:3   a proposal
    //   learner  [ACCEPT_DEAL]
    // Learner: 2 made, 1 malformed; opponent: 3 made, 1 malformed.
    let s = casino();
    let e = play(
        &s,
        learner_first_as(&s, Role::Agent1),
        &[
            turn("All food.", "[SUBMIT_DEAL] food:5 water:0 firewood:0"),
            turn("Then this.", "[SUBMIT_DEAL] food:3 water:2 firewood:0"),
            "nonsense".to_string(),
            turn("Counter.", "[SUBMIT_DEAL] food:1 water:1 firewood:3"),
            turn("Shall I [SUBMIT_DEAL] again?", "[TALK]"),
            turn("Just food.", "[SUBMIT_DEAL] food:1"),
            turn("Again.", "[SUBMIT_DEAL] food:1 water:1 firewood:3"),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ],
    );
    assert_eq!(e.outcome().map(|o| o.kind), Some(OutcomeKind::Deal));
    let p = proposals(e.turns(), &e.setup().rules);
    assert_eq!(
        p,
        PerSeat::new(
            Proposals {
                made: 2,
                malformed: 1
            },
            Proposals {
                made: 3,
                malformed: 1
            }
        )
    );
}

#[test]
fn the_turn_cap_is_the_moves_of_an_episode_truncated_by_it() {
    // Two rounds per seat: an episode of rejections and talk runs to max_turns after 4 moves,
    // which is the cap; the default 6 rounds give 12; max_moves below that caps lower.
    let s = price_task(125.0, 100.0, 60.0);
    let config = EpisodeConfig {
        learner_role: Some(Role::Buyer),
        first_mover: FirstMover::Learner,
        max_rounds: 2,
        ..EpisodeConfig::default()
    };
    let e = play(
        &s,
        setup_with(&s, &config),
        &[
            turn("90?", "[SUBMIT_DEAL] price:90"),
            turn("No.", "[REJECT_DEAL]"),
            turn("85?", "[SUBMIT_DEAL] price:85"),
            turn("No.", "[REJECT_DEAL]"),
        ],
    );
    assert_eq!(e.outcome().map(|o| o.kind), Some(OutcomeKind::MaxTurns));
    let moves: u32 = e.moves().learner + e.moves().opponent;
    assert_eq!(moves, 4);
    assert_eq!(turn_cap(&e.setup().rules, e.turns()), moves);
    let mut rules = learner_first_as(&s, Role::Buyer).rules;
    assert_eq!(turn_cap(&rules, &[] as &[Turn]), 12);
    rules.max_moves = Some(5);
    assert_eq!(turn_cap(&rules, &[] as &[Turn]), 5);
}

/// The frontier kept per deal space answers as the enumeration of every deal did, for every
/// deal of an issues space and an items space, from both sides.
#[test]
fn the_cached_frontier_answers_as_enumerating_every_deal() {
    let dominated = |s: &Scenario, setup: &Setup, t: &Terms| {
        let u = deal_utilities(s, setup, t);
        s.all_deals().any(|o| {
            let v = deal_utilities(s, setup, &o);
            v.learner >= u.learner - EPS
                && v.opponent >= u.opponent - EPS
                && (v.learner > u.learner + EPS || v.opponent > u.opponent + EPS)
        })
    };
    for (s, role) in [
        (job(), Role::Worker),
        (job(), Role::Recruiter),
        (casino(), Role::Agent2),
    ] {
        let setup = learner_first_as(&s, role);
        let mut optimal = 0;
        for t in s.all_deals() {
            let answer = is_pareto_optimal(&s, &setup, &t);
            assert_eq!(
                answer,
                Some(!dominated(&s, &setup, &t)),
                "{t:?} as {role:?}"
            );
            optimal += usize::from(answer == Some(true));
        }
        assert!(optimal > 0, "some deal is optimal");
    }
}

/// A scenario with another's id but other values (a user's own file reusing a catalog id)
/// gets its own frontier, and the first one's answers stay its own, asked in turn.
#[test]
fn a_scenario_with_anothers_id_never_reads_its_frontier() {
    let first = casino();
    let mut other = (*first).clone();
    // Both sides value the items alike: every split is Pareto-optimal, where the first
    // scenario (opposed priorities) has dominated splits.
    if let DealSpace::Items {
        agent_1, agent_2, ..
    } = &mut other.game
    {
        *agent_2 = agent_1.clone();
    }
    assert_eq!(other.id, first.id);
    assert_ne!(other.game, first.game);
    for s in [&*first, &other, &*first, &other] {
        let setup = learner_first_as(s, Role::Agent2);
        let enumerated: Vec<Option<bool>> = s
            .all_deals()
            .map(|t| {
                let u = deal_utilities(s, &setup, &t);
                Some(!s.all_deals().any(|o| {
                    let v = deal_utilities(s, &setup, &o);
                    v.learner >= u.learner - EPS
                        && v.opponent >= u.opponent - EPS
                        && (v.learner > u.learner + EPS || v.opponent > u.opponent + EPS)
                }))
            })
            .collect();
        let answered: Vec<Option<bool>> = s
            .all_deals()
            .map(|t| is_pareto_optimal(s, &setup, &t))
            .collect();
        assert_eq!(answered, enumerated);
    }
}
