//! Dialogue acts: the catalog of per-turn labels a seat may write at the end of its Action line
//! (`Action: [SUBMIT_DEAL] price:120 #counter-price`), per family, and the one rule that judges
//! a turn's label (issue 26, part 4: a planner that proposes acts needs a fixed set of them).
//!
//! - Price families (AHP, Craigslist): the coarse dialogue acts He et al. (2018, "Decoupling
//!   Strategy and Generation in Negotiation Dialogues") annotated CraigslistBargain with —
//!   `intro`, `init-price`, `counter-price`, `vague-price`, `inquire`, `inform`, `agree`,
//!   `disagree`, `insist` — plus `confirm`, `affirm` and `deny` from the strategy list the
//!   DialogXpert paper gives for CraigslistBargain (Table 8, after PPDPP). That table's other
//!   names are the same acts under other words and are read as aliases: `greet` → `intro`,
//!   `propose` → `init-price`, `counter` → `counter-price`, `counter-noprice` → `vague-price`.
//!   He et al.'s final acts (offer, accept, reject, quit) are not labels: they are the action
//!   tokens themselves.
//! - Item families (CaSiNo, DnD) and issue families (Job Interview): catalogs of our own, the
//!   price list's moves with the words an allocation or a contract needs (`concede`, `trade-off`,
//!   `state-preference`, `appeal-fairness`).
//! - The hotel family: ours, the REPO paper's staged procedure (greet, state each ticket,
//!   negotiate, confirm, close) as acts beside the negotiating moves.
//! - The bundle family: INA's intent taxonomy (INA §3.2), in lower-case kebab spelling
//!   (`negotiate-price-decrease`, `negotiate-remove-x`, …); INA's combined intents
//!   (`Greet-Ask`) are one label each here, the turn's main one.
//!
//! Labels are read tolerantly (any case; `_` or a space for `-`; an alias for its act) and
//! judged strictly where the seat is asked to label ([`SeatSetup::acts`]): a missing or unknown
//! label is then a `format` error, under the malformed-turn policy like any unreadable turn.
//! Where the seat is not asked, a label of the catalog is recorded and any other is dropped,
//! never held against the turn.
//!
//! [`SeatSetup::acts`]: crate::game::SeatSetup::acts

pub(crate) use crate::protocol::normalize_label;
use crate::protocol::{Action, Parsed, Terms, TurnError};

use super::Family;

/// One dialogue act: its label and what it means, as the prompt tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Act {
    pub label: &'static str,
    pub(crate) meaning: &'static str,
}

const fn act(label: &'static str, meaning: &'static str) -> Act {
    Act { label, meaning }
}

/// He et al. (2018)'s coarse acts for CraigslistBargain, with DialogXpert Table 8's
/// confirm/affirm/deny.
const PRICE: &[Act] = &[
    act("intro", "greet the other side or chat"),
    act("init-price", "name a first price"),
    act("counter-price", "propose a new price against theirs"),
    act(
        "vague-price",
        "push the price without a number (\"a bit lower\")",
    ),
    act("inquire", "ask about the item, its condition or the price"),
    act("inform", "answer or give information"),
    act("confirm", "ask to confirm something said"),
    act("affirm", "say yes to a confirmation"),
    act("deny", "say no to a confirmation"),
    act("agree", "agree with the proposed price"),
    act("disagree", "disagree with the proposed price"),
    act("insist", "repeat your last price"),
];

/// DialogXpert Table 8's names for the same acts.
const PRICE_ALIASES: &[(&str, &str)] = &[
    ("greet", "intro"),
    ("propose", "init-price"),
    ("counter", "counter-price"),
    ("counter-noprice", "vague-price"),
];

/// Ours, for splitting items.
const ITEMS: &[Act] = &[
    act("intro", "greet the other side or chat"),
    act("inquire", "ask what the other side needs"),
    act("state-preference", "say what you need and why"),
    act("propose", "make a first split"),
    act("counter", "propose another split against theirs"),
    act("concede", "give up something you asked for"),
    act("appeal-fairness", "argue that a split is fair or unfair"),
    act("agree", "agree with the proposed split"),
    act("disagree", "disagree with the proposed split"),
    act("insist", "repeat your last split"),
];

/// Ours, for one contract over several issues.
const ISSUES: &[Act] = &[
    act("intro", "greet the other side or chat"),
    act("inquire", "ask what the other side wants on an issue"),
    act("inform", "say what you want on an issue and why"),
    act("propose", "make a first full offer"),
    act("counter", "propose another contract against theirs"),
    act("trade-off", "give on one issue for a gain on another"),
    act("concede", "give up something you asked for"),
    act("agree", "agree with the proposed contract"),
    act("disagree", "disagree with the proposed contract"),
    act("insist", "repeat your last offer"),
];

/// INA's intents (§3.2).
const BUNDLE: &[Act] = &[
    act("greet", "greet the other side or thank them"),
    act("ask", "ask about an item or the negotiation"),
    act("inform", "give information about the products or the deal"),
    act("ask-clarification", "ask to explain part of the deal"),
    act("negotiate-price-increase", "raise the price you propose"),
    act("negotiate-price-decrease", "lower the price you propose"),
    act(
        "negotiate-price-nochange",
        "keep the price, pointing to the deal's value",
    ),
    act("negotiate-add-x", "add an item to the bundle"),
    act(
        "negotiate-remove-x",
        "remove an item (or delivery) from the bundle",
    ),
    act("accept", "accept the proposal on the table"),
    act("reject", "reject the deal and end the negotiation"),
];

/// Ours, for a hotel price-chasing call: the REPO paper's staged procedure (§3: greet, state
/// each ticket, negotiate each, confirm each, close) as acts, with the negotiating moves.
const HOTEL: &[Act] = &[
    act("greet", "open the call and say who you are"),
    act("state-ticket", "name a room and date and its current price"),
    act("inquire", "ask about occupancy, competitors or a price"),
    act(
        "inform",
        "give a reason: competitors' prices, demand, occupancy",
    ),
    act("propose", "propose new prices for the rooms"),
    act("counter", "propose other prices against theirs"),
    act("concede", "move toward the other side's prices"),
    act("confirm", "confirm the agreed price of a room"),
    act("agree", "agree with the proposed prices"),
    act("disagree", "disagree with the proposed prices"),
    act("insist", "repeat your last prices"),
    act("close", "close the call"),
];

/// The acts a family's turns are labelled with.
pub(crate) fn catalog(family: Family) -> &'static [Act] {
    match family {
        Family::Ahp | Family::Craigslist => PRICE,
        Family::Casino | Family::Dnd => ITEMS,
        Family::JobInterview => ISSUES,
        Family::Bundle => BUNDLE,
        Family::Hotel => HOTEL,
    }
}

fn aliases(family: Family) -> &'static [(&'static str, &'static str)] {
    match family {
        Family::Ahp | Family::Craigslist => PRICE_ALIASES,
        _ => &[],
    }
}

/// The act of `family` a label names (by its label or an alias), if any.
pub fn find_act(family: Family, label: &str) -> Option<&'static Act> {
    let label = normalize_label(label);
    let label = aliases(family)
        .iter()
        .find(|(alias, _)| *alias == label)
        .map_or(label.as_str(), |(_, act)| act);
    catalog(family).iter().find(|a| a.label == label)
}

/// The acts of a first offer, in the order a catalog's is looked for (INA's buyers open with a
/// price decrease: "Greet-Ask_Negotiate-Price-Decrease").
const OPENING: &[&str] = &["init-price", "propose", "negotiate-price-decrease"];

/// The first of `wanted` that `labels` has, else the first of `labels`.
fn first_of<'l>(labels: &[&'l str], wanted: &[&str]) -> Option<&'l str> {
    wanted
        .iter()
        .find_map(|w| labels.iter().find(|l| *l == w).copied())
        .or(labels.first().copied())
}

/// The label a built-in negotiator gives its move, from the labels of a catalog (`labels`): a
/// first offer opens (`init-price`, `propose`), a repeated offer insists, another offer counters
/// (`counter-price`, `counter`), an accept agrees, a reject or a walk-away disagrees, a talk
/// inquires; the catalog's first label where it has none of these. `own_offers` are the seat's
/// offers before this move. `None` for an empty catalog.
///
/// INA's intents (the bundle family) are read against `reference`, the offer the move answers
/// ([`ina_reference`]).
pub fn label_for_move<'l>(
    labels: &[&'l str],
    action: &Action,
    own_offers: &[Terms],
    reference: Option<&Terms>,
) -> Option<&'l str> {
    if labels.contains(&"negotiate-remove-x") {
        return first_of(labels, &[ina_intent(action, reference)]);
    }
    let wanted: &[&str] = match action {
        Action::Submit(_) if own_offers.is_empty() => OPENING,
        Action::Submit(terms) if own_offers.last() == Some(terms) => &["insist"],
        Action::Submit(_) => &["counter-price", "counter"],
        Action::Accept => &["agree"],
        Action::Reject | Action::WalkAway => &["disagree"],
        Action::Talk => &["inquire"],
    };
    first_of(labels, wanted)
}

/// The offer an INA intent is read against: the counterpart's offer on the table (INA's Figure 1
/// labels a seller's 83,300 after the buyer's 74,700 `Negotiate-Price-Increase`), else the seat's
/// own last proposal, else the scenario's opening ask (`Scenario::opening_terms`: a buyer's
/// first bid below the list price is a price decrease, as INA's buyers open). The one reference
/// for the built-in players' labels and the intent-consistency reward (`reward::ina`).
pub fn ina_reference<'a>(
    counter: Option<&'a Terms>,
    own_last: Option<&'a Terms>,
    opening: Option<&'a Terms>,
) -> Option<&'a Terms> {
    counter.or(own_last).or(opening)
}

/// INA's intent for a move, from what it changed against `reference` ([`ina_reference`]): a part
/// dropped or added, else the price lowered, raised or kept; an accept accepts, a walk-away or a
/// rejection rejects, a talk asks.
fn ina_intent(action: &Action, reference: Option<&Terms>) -> &'static str {
    match (action, reference) {
        (Action::Submit(now), Some(before)) => {
            let change = crate::protocol::OfferChange::between(now, before);
            match change.price {
                _ if change.dropped => "negotiate-remove-x",
                _ if change.added => "negotiate-add-x",
                Some(std::cmp::Ordering::Less) => "negotiate-price-decrease",
                Some(std::cmp::Ordering::Greater) => "negotiate-price-increase",
                _ => "negotiate-price-nochange",
            }
        }
        (Action::Submit(_), None) => "negotiate-price-nochange",
        (Action::Accept, _) => "accept",
        (Action::Reject | Action::WalkAway, _) => "reject",
        (Action::Talk, _) => "ask",
    }
}

/// A family's labels, in catalog order.
pub(crate) fn labels(family: Family) -> Vec<&'static str> {
    catalog(family).iter().map(|a| a.label).collect()
}

/// OpenAI tool definitions (`protocol::openai_tools`) with an optional `act` argument on every
/// tool, its values the family's labels: what a tools seat asked for labels is sent, so a
/// schema-following model can give one (the others' tools stay as they are).
pub fn with_act_parameter(mut tools: serde_json::Value, family: Family) -> serde_json::Value {
    let act = serde_json::json!({
        "type": "string",
        "enum": labels(family),
        "description": "The dialogue act of this turn.",
    });
    if let Some(list) = tools.as_array_mut() {
        for tool in list {
            if let Some(properties) = tool
                .pointer_mut("/function/parameters/properties")
                .and_then(|p| p.as_object_mut())
            {
                properties.insert("act".into(), act.clone());
            }
        }
    }
    tools
}

/// The labels of a family's catalog, comma-separated, for messages.
pub(crate) fn labels_list(family: Family) -> String {
    labels(family).join(", ")
}

/// Judge the label of a readable turn (the one rule for it): where the seat was `asked` to label,
/// a missing or unknown label makes the turn a `format` error (its move is not used); otherwise
/// a label outside the catalog is dropped. A known label is kept in the catalog's spelling. A
/// turn that already has an error is left as it is.
pub(crate) fn judge_act(parsed: &mut Parsed, family: Family, asked: bool) {
    if parsed.error.is_some() {
        return;
    }
    let found = parsed.act.as_deref().map(|l| (l, find_act(family, l)));
    match found {
        Some((_, Some(act))) => parsed.act = Some(act.label.to_string()),
        Some((written, None)) if asked => {
            let message = format!(
                "unknown act label `#{written}`: end the action with one of {}",
                labels_list(family)
            );
            parsed.act = None;
            parsed.error = Some(TurnError::format(message));
            parsed.format_ok = false;
        }
        Some((_, None)) => parsed.act = None,
        None if asked => {
            parsed.error = Some(TurnError::format(format!(
                "no act label: end the action with `#` and one of {}",
                labels_list(family)
            )));
            parsed.format_ok = false;
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{parse, Action, ErrorKind, TermSpace};

    #[test]
    fn every_family_has_a_catalog_of_distinct_labels() {
        for family in Family::ALL {
            let acts = catalog(family);
            assert!(acts.len() >= 8, "{family:?}");
            let mut labels: Vec<_> = acts.iter().map(|a| a.label).collect();
            labels.sort_unstable();
            labels.dedup();
            assert_eq!(labels.len(), acts.len(), "{family:?}");
            for a in acts {
                assert_eq!(normalize_label(a.label), a.label, "catalog spelling");
            }
        }
    }

    #[test]
    fn labels_are_read_in_any_case_and_dialogxperts_names_are_aliases() {
        let f = Family::Craigslist;
        assert_eq!(
            find_act(f, "Counter_Price").map(|a| a.label),
            Some("counter-price")
        );
        assert_eq!(
            find_act(f, "counter").map(|a| a.label),
            Some("counter-price")
        );
        assert_eq!(find_act(f, "greet").map(|a| a.label), Some("intro"));
        assert_eq!(
            find_act(f, "counter-noprice").map(|a| a.label),
            Some("vague-price")
        );
        assert_eq!(
            find_act(f, "trade-off"),
            None,
            "an issues act is not a price act"
        );
        assert!(find_act(Family::JobInterview, "trade off").is_some());
    }

    #[test]
    fn an_asked_seat_must_label_with_a_known_act() {
        let read = |text: &str| parse(text, TermSpace::Price, None);
        let mut ok = read("Thought: t\nTalk: hi\nAction: [SUBMIT_DEAL] price:120 #Counter_Price");
        judge_act(&mut ok, Family::Craigslist, true);
        assert!(ok.format_ok && ok.error.is_none(), "{ok:?}");
        assert_eq!(ok.act.as_deref(), Some("counter-price"));

        let mut unknown = read("Thought: t\nTalk: hi\nAction: [ACCEPT_DEAL] #bribe");
        judge_act(&mut unknown, Family::Craigslist, true);
        let error = unknown.error.expect("unknown label is an error");
        assert_eq!(error.kind, ErrorKind::Format);
        assert!(error.message.contains("`#bribe`"), "{}", error.message);
        assert!(!unknown.format_ok);

        let mut missing = read("Thought: t\nTalk: hi\nAction: [ACCEPT_DEAL]");
        judge_act(&mut missing, Family::Craigslist, true);
        assert!(missing
            .error
            .expect("missing")
            .message
            .contains("no act label"));
    }

    #[test]
    fn a_negotiators_move_gets_the_label_of_what_it_does() {
        let price = labels(Family::Craigslist);
        let items = labels(Family::Casino);
        let offer = Terms::Price(12000);
        let label = |labels: &[&'static str], a: &Action, own: &[Terms]| {
            label_for_move(labels, a, own, own.last()).unwrap()
        };
        let first = Action::Submit(offer.clone());
        assert_eq!(label(&price, &first, &[]), "init-price");
        assert_eq!(label(&items, &first, &[]), "propose");
        assert_eq!(
            label(&price, &first, std::slice::from_ref(&offer)),
            "insist"
        );
        assert_eq!(label(&price, &first, &[Terms::Price(1)]), "counter-price");
        assert_eq!(label(&items, &first, &[Terms::Price(1)]), "counter");
        assert_eq!(label(&price, &Action::Accept, &[]), "agree");
        assert_eq!(label(&price, &Action::WalkAway, &[]), "disagree");
        assert_eq!(label(&["x"], &Action::Talk, &[]), "x");
        assert_eq!(label_for_move(&[], &Action::Talk, &[], None), None);
        // INA's intents follow what a bundle move does against the offer it answers.
        let ina = labels(Family::Bundle);
        let spec = crate::fixtures::bundle_spec();
        let full = crate::protocol::BundleChoice::full(&spec);
        let mut dropped = full.clone();
        dropped.delivery = false;
        let at = |price, parts: &crate::protocol::BundleChoice| Terms::Bundle {
            price,
            parts: parts.clone(),
        };
        let before = [at(5000, &full)];
        let submit = |t: Terms| Action::Submit(t);
        assert_eq!(
            label(&ina, &submit(at(4000, &full)), &before),
            "negotiate-price-decrease"
        );
        assert_eq!(
            label(&ina, &submit(at(4000, &dropped)), &before),
            "negotiate-remove-x"
        );
        assert_eq!(
            label(&ina, &submit(at(6000, &full)), &before),
            "negotiate-price-increase"
        );
        assert_eq!(label(&ina, &Action::WalkAway, &before), "reject");
        // INA's Figure 1: the buyer bids 74,700 against the seller's 91,100; the seller's
        // 83,300 answers the bid, and INA labels it a price increase.
        let (bid, ask) = (at(7_470_000, &dropped), at(8_330_000, &dropped));
        let answer = submit(ask.clone());
        let own = [at(9_110_000, &dropped)];
        let reference = ina_reference(Some(&bid), own.last(), None);
        assert_eq!(
            label_for_move(&ina, &answer, &own, reference),
            Some("negotiate-price-increase")
        );
        // Openings read against the opening ask: a buyer's bid below the list price is a
        // decrease, a seller's ask at it unchanged, dropping delivery a removal.
        let list = at(6_280_000, &full);
        let opening = |t: Terms| {
            label_for_move(
                &ina,
                &submit(t),
                &[],
                ina_reference(None, None, Some(&list)),
            )
            .unwrap()
        };
        assert_eq!(opening(at(5_000_000, &full)), "negotiate-price-decrease");
        assert_eq!(opening(list.clone()), "negotiate-price-nochange");
        assert_eq!(opening(at(5_000_000, &dropped)), "negotiate-remove-x");
        // The rule that checks a label (INA's R1) agrees with the label a move is given, read
        // against the same reference.
        for (action, reference) in [
            (submit(at(4000, &full)), &before[0]),
            (submit(at(4000, &dropped)), &before[0]),
            (Action::Accept, &before[0]),
            (answer.clone(), &bid),
            (submit(at(5_000_000, &full)), &list),
            (submit(list.clone()), &list),
        ] {
            let given = label_for_move(&ina, &action, &[], Some(reference)).unwrap();
            assert_eq!(
                crate::reward::ina::intent_consistency(given, Some(&action), Some(reference)),
                Some(1.0),
                "{given}"
            );
        }
    }

    #[test]
    fn a_tools_seat_asked_for_labels_gets_an_act_argument_on_every_tool() {
        let tools = with_act_parameter(
            crate::protocol::openai_tools(crate::protocol::TermSpace::Price),
            Family::Craigslist,
        );
        for tool in tools.as_array().unwrap() {
            let act = &tool["function"]["parameters"]["properties"]["act"];
            assert!(
                act["enum"]
                    .as_array()
                    .unwrap()
                    .contains(&"counter-price".into()),
                "{tool}"
            );
        }
    }

    #[test]
    fn a_seat_not_asked_keeps_known_labels_and_drops_others_without_penalty() {
        let read = |text: &str| parse(text, TermSpace::Price, None);
        let mut known = read("Thought: t\nTalk: hi\nAction: [REJECT_DEAL] #insist");
        judge_act(&mut known, Family::Ahp, false);
        assert_eq!(known.act.as_deref(), Some("insist"));
        assert!(known.format_ok);
        let mut other = read("Thought: t\nTalk: hi\nAction: [SUBMIT_DEAL] price:90 #lowball");
        judge_act(&mut other, Family::Ahp, false);
        assert_eq!(other.act, None);
        assert!(other.format_ok && other.error.is_none());
        assert_eq!(
            other.action,
            Some(Action::Submit(crate::protocol::Terms::Price(9000)))
        );
    }
}
