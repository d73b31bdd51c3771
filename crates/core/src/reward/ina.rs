//! INA's reward terms (Priya et al., INA §5, equations 6–11), for price and bundle games.
//!
//! | term | the paper's | dealgym's |
//! |---|---|---|
//! | R1 intent consistency | the probability a BERT intent classifier (71.2% accurate) gives the intent the model predicted, for the utterance it generated | a rule check: 1 when the move the turn made does what its act label says (`#negotiate-price-decrease` with a lower price than the seat's last, `#negotiate-remove-x` with a part dropped, `#accept` with `[ACCEPT_DEAL]`, …), else 0; a turn without a label, or with a label outside INA's intents, is not scored, and a seat with no scored turn has no R1 at all (absent from its parts, not 0; `RewardConfig::check_against` refuses weighting R1 for a learner not asked to label) — no classifier is trained here |
//! | R2 price gap | `P_af / P_ai`, the agent's (seller's) final price over its initial price | the same for a seller seat (0 without a deal); a buyer seat, mirrored: its first price over the final price |
//! | R3 negotiation strategy | `F((P_b − P_a-min)/P_a-min)·G(intent_f)`, `F(x) = e^x` for `x ≥ 0` else 0, `G` = 1 on accept, −1 on reject; `P_b` the customer's proposed price, `P_a-min` the seller's minimum | the same for a seller seat with `P_b` the buyer's (the customer's) last proposed price, deal or not — on a deal closed at the seller's counter-offer, still the customer's own last proposal, not the agreed price (INA §5, "P_b is the customer's proposed price"); only where the customer proposed no price at all (it accepted the seller's price at once), the price it accepted. `P_a-min` is the seller's cost (of the bundle of that proposal); `G` = 1 on a deal, −1 on any other ending (the paper's final intent is Accept or Reject; a walk-away, a reject loop, the turn cap and a forfeit end without acceptance). A buyer seat, mirrored: `x = (B − P_s)/B` with `P_s` the seller's last proposed price (else the price accepted) and `B` the buyer's budget (worth of that bundle) |
//! | R4 interactiveness | `1 − mean cos(v_k, v_i)` over the earlier utterances `v_i` with the same intent as `v_k`, bag-of-words vectors | the same over the seat's earlier Talk with the same act label where the turn has one, else over all its earlier Talk; 1 for a first utterance |
//!
//! Games other than price and bundle get 0 for R2 and R3 (no price to gap).
//!
//! The authors' released training code (`Models/INA/Train/rlutils.py` of github.com/zishan-ai/neg)
//! computes three of the terms otherwise; `[rewards.ina] version = "code"` gives those:
//!
//! | term | the code's |
//! |---|---|
//! | R2 | the buyer's (last) price over the seller's initial price, deal or not (for a seller seat; a buyer seat, mirrored: its own first price over the seller's last) |
//! | R3 | `P_b` the buyer's last proposed price, deal or not; `x = (P_b − P_a-min)/(P_b + 1)`, then `e^(G·x)` where `G·x ≥ 0`, else 0: accepting above the minimum earns `e^x`, *rejecting below it* earns `e^(−x)`, and the other two cases 0 (the paper's form gives rejecting above the minimum −e^x) |
//! | R4 | *minus* the mean cosine of whitespace-split, lower-cased word counts with every earlier utterance of the dialogue (both sides), the utterance cut to each earlier one's length in characters as it goes; 0 for the first utterance (the paper's form is 1 − the mean over same-intent utterances) |
//!
//! R1 is the classifier's probability in both the paper and the code; dealgym has one rule
//! check for it under either version.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::config::InaVersion;
use crate::game::{Outcome, OutcomeKind, Seat, Setup, Turn};
use crate::protocol::{Action, OfferChange, Terms};
use crate::scenario::{BundleSpace, DealSpace, Family, Role, Scenario};

/// A bag of words: lower-case alphanumeric words and their counts.
fn bag(text: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        *out.entry(word.to_lowercase()).or_insert(0.0) += 1.0;
    }
    out
}

fn cosine(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>) -> f64 {
    let dot: f64 = a.iter().filter_map(|(w, x)| b.get(w).map(|y| x * y)).sum();
    let norm = |v: &BTreeMap<String, f64>| v.values().map(|x| x * x).sum::<f64>().sqrt();
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// R4 of a turn: 1 − the mean bag-of-words cosine between its Talk and the same seat's earlier
/// Talk (with the same act label, where `label` is given: INA's same-intent utterances); 1 when
/// there is nothing earlier to repeat; 0 for a turn without Talk. `earlier` is the seat's
/// earlier turns as (Talk, label) pairs.
pub(crate) fn interactiveness(
    talk: Option<&str>,
    label: Option<&str>,
    earlier: &[(&str, Option<&str>)],
) -> f64 {
    let Some(talk) = talk.filter(|t| !t.trim().is_empty()) else {
        return 0.0;
    };
    let v = bag(talk);
    let same: Vec<f64> = earlier
        .iter()
        .filter(|(_, l)| label.is_none() || *l == label)
        .map(|(t, _)| cosine(&v, &bag(t)))
        .collect();
    if same.is_empty() {
        1.0
    } else {
        1.0 - same.iter().sum::<f64>() / same.len() as f64
    }
}

/// R1 as a rule check: whether the move does what its act label says. `previous` is the seat's
/// own last proposal (else the counterpart's standing one), from the seat's side. `None` for a
/// label outside INA's intents (the bundle family's act catalog, `scenario::acts`).
pub(crate) fn intent_consistency(
    label: &str,
    action: Option<&Action>,
    previous: Option<&Terms>,
) -> Option<f64> {
    let label =
        crate::scenario::acts::find_act(Family::Bundle, label.trim().trim_start_matches('#'))?
            .label;
    let change = match (action, previous) {
        (Some(Action::Submit(now)), Some(before)) => Some(OfferChange::between(now, before)),
        _ => None,
    };
    let moved = |way: Ordering| change.is_some_and(|c| c.price == Some(way));
    let parts = |pick: fn(&OfferChange) -> bool| change.as_ref().is_some_and(pick);
    let ok = match label {
        "accept" => matches!(action, Some(Action::Accept)),
        "reject" => matches!(action, Some(Action::Reject | Action::WalkAway)),
        "negotiate-price-decrease" => moved(Ordering::Less),
        "negotiate-price-increase" => moved(Ordering::Greater),
        "negotiate-price-nochange" => {
            matches!(action, Some(Action::Reject | Action::Talk)) || moved(Ordering::Equal)
        }
        "negotiate-add-x" => parts(|c| c.added),
        "negotiate-remove-x" => parts(|c| c.dropped),
        // Talk intents: anything but closing the negotiation.
        _ => !matches!(action, Some(Action::Accept | Action::WalkAway)),
    };
    Some(f64::from(u8::from(ok)))
}

/// The prices a seat proposed, in order.
fn own_prices(turns: &[impl AsRef<Turn>], seat: Seat) -> Vec<(f64, &Terms)> {
    turns
        .iter()
        .map(AsRef::as_ref)
        .filter(|t| t.seat == seat)
        .filter_map(|t| match &t.played {
            Some(Action::Submit(terms)) => terms.price().map(|p| (p, terms)),
            _ => None,
        })
        .collect()
}

/// R2 for `seat`: a seller's final price over its first proposed price; a buyer's first
/// proposed price over the final price. 0 without a deal, a proposal, or a price game. The
/// code's version: see the module's second table.
pub(crate) fn price_gap(
    setup: &Setup,
    turns: &[impl AsRef<Turn>],
    outcome: &Outcome,
    seat: Seat,
    version: InaVersion,
) -> f64 {
    if version == InaVersion::Code {
        let first = own_prices(turns, seat).first().map(|(p, _)| *p);
        let theirs = own_prices(turns, seat.other()).last().map(|(p, _)| *p);
        return match (setup.seats[seat].role, first, theirs) {
            (Role::Seller, Some(first), Some(buyer)) if first > 0.0 => buyer / first,
            (Role::Buyer, Some(first), Some(seller)) if seller > 0.0 => first / seller,
            _ => 0.0,
        };
    }
    let (Some(final_price), OutcomeKind::Deal) =
        (outcome.terms.as_ref().and_then(Terms::price), outcome.kind)
    else {
        return 0.0;
    };
    let Some((first, _)) = own_prices(turns, seat).first().copied() else {
        return 0.0;
    };
    match setup.seats[seat].role {
        Role::Seller if first > 0.0 => final_price / first,
        Role::Buyer if final_price > 0.0 => first / final_price,
        _ => 0.0,
    }
}

/// R3 for `seat` (see the module's table): INA §5, eqs. 8–10, `P_b` the counterpart's (for
/// the seller, the customer's) last proposed price in both versions — the paper's "customer's
/// proposed price", the code's `buyer_price` — and the price agreed only where the counterpart
/// proposed none. 0 where there is no such price or the game has none.
pub(crate) fn negotiation_strategy(
    scenario: &Scenario,
    setup: &Setup,
    turns: &[impl AsRef<Turn>],
    outcome: &Outcome,
    seat: Seat,
    version: InaVersion,
) -> f64 {
    let role = setup.seats[seat].role;
    let accepted = match (outcome.kind, &outcome.terms) {
        (OutcomeKind::Deal, Some(terms)) => terms.price().map(|p| (p, terms)),
        _ => None,
    };
    let Some((price, terms)) = own_prices(turns, seat.other()).last().copied().or(accepted) else {
        return 0.0;
    };
    // The seat's own limit on the counterpart's last proposal: the seller's cost, the buyer's
    // budget or worth.
    let limit = match (&scenario.game, role) {
        (DealSpace::Price { seller, .. }, Role::Seller) => seller.cost,
        (DealSpace::Price { buyer, .. }, Role::Buyer) => buyer.budget,
        (DealSpace::Bundle { .. }, _) => {
            let (Some(game), Terms::Bundle { parts, .. }) = (BundleSpace::of(scenario), terms)
            else {
                return 0.0;
            };
            if role == Role::Seller {
                game.cost.total(parts)
            } else {
                game.worth.total(parts)
            }
        }
        _ => return 0.0,
    };
    if limit <= 0.0 {
        return 0.0;
    }
    let g = if outcome.kind == OutcomeKind::Deal {
        1.0
    } else {
        -1.0
    };
    let gap = if role == Role::Seller {
        price - limit
    } else {
        limit - price
    };
    if version == InaVersion::Code {
        // The code divides by the proposed price + 1 and applies G inside F.
        let x = g * gap / (price + 1.0);
        return if x >= 0.0 { x.exp() } else { 0.0 };
    }
    let x = gap / limit;
    let f = if x < 0.0 { 0.0 } else { x.exp() };
    f * g
}

/// R4 as the released code computes it (the module's second table): minus the mean cosine of
/// the utterance's whitespace word counts with each of `earlier` (every earlier utterance of
/// the dialogue, in order), the utterance cut to each earlier one's length in characters as it
/// goes; 0 without earlier utterances or Talk.
pub(crate) fn code_similarity(talk: Option<&str>, earlier: &[&str]) -> f64 {
    let Some(mut sent) = talk.map(str::to_string) else {
        return 0.0;
    };
    if earlier.is_empty() {
        return 0.0;
    }
    let words = |text: &str| {
        let mut out: BTreeMap<String, f64> = BTreeMap::new();
        for w in text.to_lowercase().split(' ') {
            *out.entry(w.to_string()).or_insert(0.0) += 1.0;
        }
        out
    };
    let mut values = Vec::with_capacity(earlier.len());
    for past in earlier {
        let limit = past.chars().count();
        if sent.chars().count() > limit {
            sent = sent.chars().take(limit).collect();
        }
        values.push(cosine(&words(&sent), &words(past)));
    }
    -(values.iter().sum::<f64>() / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{bundle, learner_first_as, play, price, turn};
    use crate::protocol::BundleChoice;

    #[test]
    fn interactiveness_penalises_repeating_oneself() {
        assert_eq!(interactiveness(Some("a fair price"), None, &[]), 1.0);
        let same = interactiveness(Some("a fair price"), None, &[("a fair price", None)]);
        assert!(same.abs() < 1e-12);
        let other = interactiveness(Some("a fair price"), None, &[("delivery is free", None)]);
        assert_eq!(other, 1.0);
        // With labels, only the same intent's utterances count.
        let labelled = interactiveness(
            Some("a fair price"),
            Some("inform"),
            &[
                ("a fair price", Some("greet")),
                ("a good deal", Some("inform")),
            ],
        );
        assert!((labelled - (1.0 - 1.0 / 3.0f64.sqrt() / 3.0f64.sqrt())).abs() < 1e-12);
        assert_eq!(interactiveness(None, None, &[]), 0.0);
    }

    #[test]
    fn the_codes_similarity_is_minus_the_mean_cosine_with_every_earlier_utterance() {
        assert_eq!(code_similarity(Some("a fair price"), &[]), 0.0);
        assert!((code_similarity(Some("a fair price"), &["a fair price"]) + 1.0).abs() < 1e-12);
        // Cut to the earlier utterance's length: "a fair price here" → "a fair price".
        let v = code_similarity(
            Some("a fair price here"),
            &["a fair price", "nothing alike"],
        );
        assert!((v + 0.5).abs() < 1e-12, "{v}");
    }

    #[test]
    fn intent_consistency_checks_the_move_against_its_label() {
        let spec = crate::fixtures::bundle_spec();
        let full = BundleChoice::full(&spec);
        let mut dropped = full.clone();
        dropped.accessories[0] = false;
        let at = |cents: i64, parts: &BundleChoice| Terms::Bundle {
            price: cents,
            parts: parts.clone(),
        };
        let before = at(5_000_000, &full);
        let submit = |t: Terms| Some(Action::Submit(t));
        let check = |label: &str, action: Option<Action>| {
            intent_consistency(label, action.as_ref(), Some(&before))
        };
        assert_eq!(
            check("negotiate-price-decrease", submit(at(4_900_000, &full))),
            Some(1.0)
        );
        assert_eq!(
            check("negotiate-price-decrease", submit(at(5_100_000, &full))),
            Some(0.0)
        );
        assert_eq!(
            check("#Negotiate-Price-Increase", submit(at(5_100_000, &full))),
            Some(1.0)
        );
        assert_eq!(
            check("negotiate-remove-x", submit(at(4_900_000, &dropped))),
            Some(1.0)
        );
        assert_eq!(
            check("negotiate-add-x", submit(at(4_900_000, &dropped))),
            Some(0.0)
        );
        assert_eq!(check("accept", Some(Action::Accept)), Some(1.0));
        assert_eq!(check("accept", Some(Action::Reject)), Some(0.0));
        assert_eq!(check("reject", Some(Action::WalkAway)), Some(1.0));
        assert_eq!(check("greet", Some(Action::Accept)), Some(0.0));
        assert_eq!(
            check("counter-price", Some(Action::Accept)),
            None,
            "not an INA intent"
        );
    }

    #[test]
    fn price_gap_and_negotiation_strategy_on_a_price_deal() {
        // L = 200, B = 180, C = 100. The learner buys; the seller opens at 200 and accepts 150.
        let s = price();
        let ep = play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &[
                turn("hi", "[SUBMIT_DEAL] price:120"),
                turn("no", "[SUBMIT_DEAL] price:200"),
                turn("meet", "[SUBMIT_DEAL] price:150"),
                turn("ok", "[ACCEPT_DEAL]"),
            ],
        );
        let (setup, turns, outcome) = (ep.setup(), ep.turns(), ep.outcome().unwrap());
        let (paper, code) = (InaVersion::Paper, InaVersion::Code);
        let gap = |seat, version| price_gap(setup, turns, outcome, seat, version);
        assert_eq!(gap(Seat::Opponent, paper), 150.0 / 200.0);
        assert_eq!(gap(Seat::Learner, paper), 120.0 / 150.0);
        // The code: the buyer's last price over the seller's first, the same here.
        assert_eq!(gap(Seat::Opponent, code), 150.0 / 200.0);
        let r3 = |seat, version| negotiation_strategy(&s, setup, turns, outcome, seat, version);
        // The seller: the buyer's last price 150 over its cost 100, accepted: e^0.5.
        assert!((r3(Seat::Opponent, paper) - 0.5f64.exp()).abs() < 1e-12);
        // The code divides by the buyer's price + 1: e^(50/151).
        assert!((r3(Seat::Opponent, code) - (50.0f64 / 151.0).exp()).abs() < 1e-12);
        // The buyer, mirrored: the seller's last proposed price 200 against its budget 180
        // (not the agreed 150): x = −20/180 < 0, so F = 0.
        assert_eq!(r3(Seat::Learner, paper), 0.0);
    }

    #[test]
    fn negotiation_strategy_reads_the_customers_proposal_not_the_agreed_price() {
        // INA §5, eq. 8: "P_b is the customer's proposed price". The learner sells; the
        // customer bids 50000 for TV and cord, the seller counters 52000 and the customer
        // accepts. The seller's cost of TV and cord is 45000 + 600 = 45600, so the paper's R3
        // is e^((50000 − 45600)/45600) = e^0.0965 = 1.1013, not the agreed price's
        // e^((52000 − 45600)/45600) = e^0.1404 = 1.1507.
        let s = bundle();
        let bundle = |price: u32| {
            format!("[SUBMIT_DEAL] price:{price} tv_stand:out extension_cord:in delivery:out")
        };
        let ep = play(
            &s,
            learner_first_as(&s, Role::Seller),
            &[
                turn("hello", &bundle(60000)),
                turn("less", &bundle(50000)),
                turn("meet me", &bundle(52000)),
                turn("ok", "[ACCEPT_DEAL]"),
            ],
        );
        let (setup, turns, outcome) = (ep.setup(), ep.turns(), ep.outcome().unwrap());
        assert_eq!(outcome.kind, OutcomeKind::Deal);
        let r3 = negotiation_strategy(&s, setup, turns, outcome, Seat::Learner, InaVersion::Paper);
        let paper = (4400.0f64 / 45600.0).exp();
        assert!((r3 - paper).abs() < 1e-12, "{r3} vs {paper}");
        assert!((r3 - 1.1013).abs() < 1e-4);
        // The customer who only ever accepted: the price it accepted stands for its proposal.
        let ep = play(
            &s,
            learner_first_as(&s, Role::Seller),
            &[turn("hello", &bundle(52000)), turn("ok", "[ACCEPT_DEAL]")],
        );
        let (setup, turns, outcome) = (ep.setup(), ep.turns(), ep.outcome().unwrap());
        let r3 = negotiation_strategy(&s, setup, turns, outcome, Seat::Learner, InaVersion::Paper);
        assert!((r3 - (6400.0f64 / 45600.0).exp()).abs() < 1e-12);
    }

    #[test]
    fn negotiation_strategy_on_a_bundle_is_against_the_proposed_bundles_cost() {
        let s = bundle();
        let ep = play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &[
                turn(
                    "hi",
                    "[SUBMIT_DEAL] price:50000 tv_stand:out extension_cord:in delivery:out",
                ),
                turn("no", "[WALK_AWAY]"),
            ],
        );
        // The seller's cost of TV and cord: 45600; the buyer offered 50000; it walked: −e^x.
        let (setup, turns, outcome) = (ep.setup(), ep.turns(), ep.outcome().unwrap());
        let r3 = |version| negotiation_strategy(&s, setup, turns, outcome, Seat::Opponent, version);
        assert!((r3(InaVersion::Paper) + (4400.0f64 / 45600.0).exp()).abs() < 1e-12);
        // The code gives a rejection above the minimum nothing (G·x < 0).
        assert_eq!(r3(InaVersion::Code), 0.0);
    }
}
