//! The market rulebook played through its episode: text turns, the schedule, the cap,
//! walk-away, regulation, private values kept to their seat, and ZI-C self-play.

use std::sync::Arc;

use crate::engine::drive_now;
use crate::game::{Completion, OutcomeKind, Prompts};
use crate::negotiator::market::{MarketRule, MarketTraders};
use crate::scenario::market::tests::unit_market;
use crate::scenario::MarketScenario;
use crate::score::market_metrics;

use super::*;

fn start(s: &MarketScenario, options: &MarketOptions, seed: u64) -> MarketEpisode {
    let prompts = Prompts::builtin();
    let setup = MarketSetup::new(s, options, seed, &prompts).unwrap();
    MarketEpisode::new(Arc::new(s.clone()), setup, prompts).unwrap()
}

fn say(action: &str) -> Completion {
    Completion {
        text: format!("Thought: secret plan.\nTalk: hello\nAction: {action}"),
        ..Completion::default()
    }
}

#[test]
fn a_bid_taken_by_text_makes_a_trade_and_both_leave() {
    let s = unit_market(&[100, 80], &[50, 70]);
    let mut e = start(&s, &MarketOptions::default(), 3);
    // Play until buyer_1 (seat 0) has quoted and seller_1 (seat 2) has taken it.
    let mut quoted = false;
    while let Some(seat) = e.to_move() {
        let action = match seat {
            0 if !quoted => {
                quoted = true;
                "[SUBMIT_DEAL] price: 60".to_string()
            }
            2 if quoted => "[ACCEPT_DEAL] #1".to_string(),
            _ => "[REJECT_DEAL]".to_string(),
        };
        e.step(seat, say(&action)).unwrap();
        if !e.book().trades.is_empty() {
            break;
        }
    }
    let t = &e.book().trades[0];
    assert_eq!((t.buyer, t.seller, t.price), (0, 2, 6000));
    assert!(!e.book().present[0] && !e.book().present[2]);
    // Neither moves again.
    while let Some(seat) = e.to_move() {
        assert!(seat == 1 || seat == 3);
        e.step(seat, say("[REJECT_DEAL]")).unwrap();
    }
    assert_eq!(e.outcome().unwrap().kind, OutcomeKind::MaxTurns);
    let m = market_metrics(e.scenario(), e.book(), e.turns());
    // Max surplus: 100−50 + 80−70 = 60; realised 50.
    assert_eq!(m.efficiency, Some(50.0 / 60.0));
    assert_eq!(m.surplus, vec![40.0, 0.0, 10.0, 0.0]);
}

#[test]
fn the_market_closes_after_its_cap_of_rounds() {
    let s = unit_market(&[100, 80], &[50, 70]);
    let mut e = start(&s, &MarketOptions::default(), 1);
    let mut turns = 0;
    while let Some(seat) = e.to_move() {
        e.step(seat, say("[REJECT_DEAL]")).unwrap();
        turns += 1;
    }
    assert_eq!(turns, 4 * s.rules.rounds as usize);
    assert_eq!(e.outcome().unwrap().kind, OutcomeKind::MaxTurns);
    // Each round every seat once, the order drawn from the seed.
    let other = start(&s, &MarketOptions::default(), 2);
    assert_ne!(e.setup().schedule, other.setup().schedule);
}

#[test]
fn the_last_buyer_walking_away_ends_the_market() {
    let s = unit_market(&[100, 80], &[50, 70]);
    let mut e = start(&s, &MarketOptions::default(), 1);
    while let Some(seat) = e.to_move() {
        let action = if seat < 2 {
            "[WALK_AWAY]"
        } else {
            "[REJECT_DEAL]"
        };
        e.step(seat, say(action)).unwrap();
    }
    let o = e.outcome().unwrap();
    assert_eq!(o.kind, OutcomeKind::WalkAway);
    assert!(o.by.is_some_and(|s| s < 2));
}

#[test]
fn a_regulated_seat_cannot_take_at_a_loss_and_a_bad_take_is_corrected() {
    let s = unit_market(&[100, 80], &[50, 70]);
    let options = MarketOptions {
        regulated: vec!["buyer_1".into()],
        ..MarketOptions::default()
    };
    let mut e = start(&s, &options, 5);
    let mut asked = false;
    while let Some(seat) = e.to_move() {
        let action = match seat {
            2 if !asked => {
                asked = true;
                "[SUBMIT_DEAL] price: 120"
            }
            0 if asked => "[ACCEPT_DEAL] #1",
            _ => "[REJECT_DEAL]",
        };
        e.step(seat, say(action)).unwrap();
        if e.turns().iter().any(|t| t.regulation.is_some()) {
            break;
        }
    }
    let t = e.turns().iter().find(|t| t.regulation.is_some()).unwrap();
    assert_eq!(t.played(), Some(&crate::protocol::Action::Reject));
    assert!(e.book().trades.is_empty());
    // An unregulated seat taking an order that is not there is corrected, then forfeits.
    let seat = e.to_move().unwrap();
    e.step(seat, say("[ACCEPT_DEAL] #9")).unwrap();
    assert_eq!(e.to_move(), Some(seat), "it retries");
    e.step(seat, say("[ACCEPT_DEAL] #9")).unwrap();
    assert_eq!(e.outcome().unwrap().kind, OutcomeKind::FormatForfeit);
}

#[test]
fn private_values_and_private_talk_stay_with_their_seat() {
    let s = unit_market(&[137, 81], &[53, 72]);
    let mut e = start(&s, &MarketOptions::default(), 4);
    let mut first = true;
    while let Some(seat) = e.to_move() {
        let c = if seat == 0 && first {
            first = false;
            Completion {
                text: "Thought: my value is 137.\nTalk: @seller_1 I can go to 90 for you.\nAction: [TALK]".into(),
                ..Completion::default()
            }
        } else {
            say("[REJECT_DEAL]")
        };
        e.step(seat, c).unwrap();
    }
    for seat in 0..4 {
        let text: String = e
            .view(seat)
            .iter()
            .map(|m| m.content.clone())
            .collect::<Vec<_>>()
            .join("\n");
        for (other, limit) in [(0, "137"), (1, "81"), (2, "53"), (3, "72")] {
            assert_eq!(
                text.contains(limit),
                other == seat,
                "seat {seat} and {other}'s limit {limit}: {text}"
            );
        }
        assert_eq!(
            text.contains("I can go to 90"),
            seat == 0 || seat == 2,
            "{seat}"
        );
    }
}

#[test]
fn scripted_traders_trade_and_truthful_self_play_is_efficient() {
    let s = unit_market(&[100, 80], &[50, 70]);
    for rule in MarketRule::ALL {
        let mut e = start(&s, &MarketOptions::default(), 9);
        let mut traders = MarketTraders(vec![Some(rule); 4]);
        assert_eq!(drive_now(&mut e, &mut traders).unwrap(), None);
        let errors: Vec<_> = e.turns().iter().filter_map(|t| t.error.clone()).collect();
        assert!(errors.is_empty(), "{rule:?}: {errors:?}");
        let m = market_metrics(e.scenario(), e.book(), e.turns());
        match rule {
            MarketRule::Sniper => assert!(e.book().trades.is_empty(), "snipers wait on quotes"),
            MarketRule::Truthful => {
                // Each takes the first quote it gains by: every intra-marginal unit trades.
                assert_eq!(m.efficiency, Some(1.0), "{m:?}");
            }
            MarketRule::Zic => {}
        }
        if rule == MarketRule::Zic {
            // ZI-C never trades at a loss.
            assert!(m.surplus.iter().all(|&x| x >= 0.0), "{m:?}");
        }
    }
}

#[test]
fn zic_self_play_trades_in_most_markets_of_the_set() {
    let markets = crate::scenario::generate::generate_markets(None, Some(30));
    let mut traded = 0;
    for (i, m) in markets.iter().enumerate() {
        let mut e = start(m, &MarketOptions::default(), i as u64);
        drive_now(
            &mut e,
            &mut MarketTraders(vec![Some(MarketRule::Zic); m.traders.len()]),
        )
        .unwrap();
        assert!(e.turns().iter().all(|t| t.error.is_none()));
        traded += usize::from(!e.book().trades.is_empty());
    }
    assert!(traded > 20, "{traded} of 30");
}

#[test]
fn a_market_replays_exactly_from_its_setup_and_completions() {
    let m = &crate::scenario::generate::generate_markets(None, Some(4))[3];
    let mut e = start(m, &MarketOptions::default(), 11);
    drive_now(
        &mut e,
        &mut MarketTraders(vec![Some(MarketRule::Zic); m.traders.len()]),
    )
    .unwrap();
    let mut again =
        MarketEpisode::new(Arc::new(m.clone()), e.setup().clone(), Prompts::builtin()).unwrap();
    for t in e.turns() {
        again.step(t.seat, t.completion.clone()).unwrap();
    }
    assert_eq!(again.turns(), e.turns());
    assert_eq!(again.book(), e.book());
    assert_eq!(again.outcome(), e.outcome());
    for seat in 0..m.traders.len() {
        assert_eq!(again.view(seat), e.view(seat));
    }
}
