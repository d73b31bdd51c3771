//! Seat states worked by hand over the fixtures' scenarios.

use super::*;
use crate::fixtures::{casino, learner_first_as, price, turn};
use crate::game::Episode;

fn count(n: u32) -> TermValue {
    TermValue::Count(n)
}

/// L = 200, B = 180, C = 100: the buyer (learner, unregulated) holds its budget alone, the
/// seller (opponent, regulated by default) its cost alone and its floor of zero surplus.
#[test]
fn a_seat_holds_its_own_private_values_and_never_the_others() {
    let s = price();
    let e = Episode::new(s.clone(), learner_first_as(&s, Role::Buyer)).unwrap();
    let buyer = e.seat_state(Seat::Learner);
    let seller = e.seat_state(Seat::Opponent);
    assert_eq!(buyer.own, PrivateView::Buyer { budget: 180.0 });
    assert_eq!(seller.own, PrivateView::Seller { cost: 100.0 });
    assert_eq!((buyer.floor, seller.floor), (None, Some(0.0)));
    assert_eq!(buyer.public.listing_price, Some(200.0));
    let buyer_json = serde_json::to_string(&buyer).unwrap();
    let seller_json = serde_json::to_string(&seller).unwrap();
    assert!(!buyer_json.contains("cost"), "{buyer_json}");
    assert!(!seller_json.contains("budget"), "{seller_json}");
    assert_eq!(
        (buyer.role, buyer.to_move),
        (Role::Buyer, Some(Role::Buyer))
    );
}

/// CaSiNo, 3 units of each item: agent_1 asking food 3, water 1, firewood 0 leaves agent_2
/// food 0, water 2, firewood 3 — the offer and the counterpart's last move both read so.
#[test]
fn an_items_offer_reads_from_the_receivers_side() {
    let s = casino();
    let mut e = Episode::new(s.clone(), learner_first_as(&s, Role::Agent1)).unwrap();
    e.step(turn("Mine.", "[SUBMIT_DEAL] food:3 water:1 firewood:0"))
        .unwrap();
    let proposer = e.seat_state(Seat::Learner);
    let receiver = e.seat_state(Seat::Opponent);
    let own: TermsView = [("food", 3), ("water", 1), ("firewood", 0)]
        .map(|(k, v)| (k.to_string(), count(v)))
        .into();
    let flipped: TermsView = [("food", 0), ("water", 2), ("firewood", 3)]
        .map(|(k, v)| (k.to_string(), count(v)))
        .into();
    let offer = |terms: &TermsView| OfferView {
        by: Role::Agent1,
        terms: terms.clone(),
    };
    assert_eq!(proposer.standing_offer, Some(offer(&own)));
    assert_eq!(receiver.standing_offer, Some(offer(&flipped)));
    assert_eq!(
        receiver.counterpart_last,
        Some(MoveView {
            kind: ActionKind::Submit,
            terms: Some(flipped)
        })
    );
    assert_eq!(proposer.counterpart_last, None);
    let mine = proposer.last_turn.expect("the proposer has played");
    assert_eq!(
        (mine.read.map(|m| m.terms), mine.played.map(|m| m.terms)),
        (Some(Some(own.clone())), Some(Some(own.clone()))),
        "a seat reads its own offer back named and from its own side"
    );
    let values = |v: [u32; 3]| PrivateView::Items {
        values: ["food", "water", "firewood"]
            .iter()
            .map(|k| k.to_string())
            .zip(v)
            .collect(),
    };
    assert_eq!(proposer.own, values([5, 4, 3]));
    assert_eq!(receiver.own, values([3, 4, 5]));
    assert_eq!(receiver.turns.moves_left, 11, "2 × 6 rounds less one move");
    assert_eq!(proposer.turns.moves_used, 1);
}

/// ACCEPT is listed exactly when an offer by the other seat is open to the seat to move; the
/// seat not to move has no legal move at all.
#[test]
fn accept_is_legal_exactly_when_an_offer_is_open_to_the_seat() {
    use ActionKind::{Accept, Reject, Submit, WalkAway};
    let s = price();
    let mut e = Episode::new(s.clone(), learner_first_as(&s, Role::Buyer)).unwrap();
    let legal = |e: &Episode, seat| e.seat_state(seat).legal_actions;
    assert_eq!(legal(&e, Seat::Learner), vec![Reject, WalkAway, Submit]);
    assert!(legal(&e, Seat::Opponent).is_empty());
    e.step(turn("120?", "[SUBMIT_DEAL] price:120")).unwrap();
    assert!(legal(&e, Seat::Learner).is_empty());
    assert_eq!(
        legal(&e, Seat::Opponent),
        vec![Accept, Reject, WalkAway, Submit]
    );
    assert!(e.offer_to_accept(Seat::Opponent).is_some());
    e.step(turn("No.", "[REJECT_DEAL]")).unwrap();
    assert_eq!(legal(&e, Seat::Learner), vec![Reject, WalkAway, Submit]);
    assert!(e.offer_to_accept(Seat::Learner).is_none());
}

/// The seller (regulated, floor 0) accepting 90 would make −10: regulation plays REJECT_DEAL
/// instead, and the seller's last turn says so.
#[test]
fn a_regulated_move_shows_in_the_seats_last_turn() {
    let s = price();
    let mut e = Episode::new(s.clone(), learner_first_as(&s, Role::Buyer)).unwrap();
    e.step(turn("90?", "[SUBMIT_DEAL] price:90")).unwrap();
    e.step(turn("Fine.", "[ACCEPT_DEAL]")).unwrap();
    let seller = e.seat_state(Seat::Opponent);
    let last = seller.last_turn.expect("the seller has played");
    let event = last.regulation.expect("regulated");
    assert_eq!(
        (event.original.kind, event.replacement.kind),
        (ActionKind::Accept, ActionKind::Reject)
    );
    assert_eq!((event.utility, event.floor), (-10.0, 0.0));
    assert_eq!(last.played.map(|m| m.kind), Some(ActionKind::Reject));
    assert!(!last.retry);
    // The buyer's own offer, as it reads it back: in currency units, not cents.
    let buyer_last = e.seat_state(Seat::Learner).last_turn.expect("played");
    let read = buyer_last.read.expect("a move was read");
    assert_eq!(read.kind, ActionKind::Submit);
    assert_eq!(
        read.terms.and_then(|t| t.get("price").cloned()),
        Some(TermValue::Price(90.0))
    );
    assert!(buyer_last.format_ok && buyer_last.error.is_none());
    let buyer = e.seat_state(Seat::Learner);
    assert_eq!(buyer.standing_offer, None, "the reject took the offer down");
    assert_eq!(
        buyer.counterpart_last.map(|m| m.kind),
        Some(ActionKind::Reject)
    );
}

/// A malformed completion is corrected once by default: the last turn says retry and no
/// correction is left; the deal at 120 then ends it, 60 to the buyer and 20 to the seller, with
/// the price in currency units.
#[test]
fn retries_and_the_outcome_read_from_the_seats_side() {
    let s = price();
    let mut e = Episode::new(s.clone(), learner_first_as(&s, Role::Buyer)).unwrap();
    assert_eq!(e.seat_state(Seat::Learner).turns.retries_left, 1);
    e.step("no action here").unwrap();
    let buyer = e.seat_state(Seat::Learner);
    assert!(buyer.last_turn.as_ref().is_some_and(|t| t.retry));
    assert_eq!(buyer.turns.retries_left, 0);
    e.step(turn("120?", "[SUBMIT_DEAL] price:120")).unwrap();
    assert_eq!(e.seat_state(Seat::Learner).turns.retries_left, 1);
    e.step(turn("Deal.", "[ACCEPT_DEAL]")).unwrap();
    let seller = e.seat_state(Seat::Opponent);
    let outcome = seller.outcome.expect("ended");
    assert_eq!(outcome.kind, OutcomeKind::Deal);
    assert_eq!(outcome.by, Some(Role::Seller));
    assert_eq!(
        outcome.terms,
        Some(TermsView::from([(
            "price".to_string(),
            TermValue::Price(120.0)
        )]))
    );
    assert_eq!(outcome.utility, 20.0);
    assert_eq!(e.seat_state(Seat::Learner).outcome.unwrap().utility, 60.0);
    assert_eq!(seller.to_move, None);
    assert!(seller.legal_actions.is_empty());
    assert_eq!(seller.turns.attempts, 3);
}
