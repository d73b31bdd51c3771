//! Hotel price-chasing (the REPO paper's task, §3): each side's private block per chase ticket,
//! what a call's terms are worth, and how each ticket ended.
//!
//! The platform's business-development agent (`bd`) holds, per ticket, an ideal *target* price
//! and an *acceptable* price (the most that still matches the competitors), each as a selling
//! price and the take-home price it corresponds to. The hotel holds a *floor* (the least selling
//! price it will take) and its own reasons (occupancy, a competitor's price). Terms are selling
//! prices per ticket (`protocol/tickets.rs`).
//!
//! Utilities, summed over the tickets a deal lowers (an `unchanged` ticket is worth 0 to both,
//! as no deal is): bd `Σ (b_i − p_i)`, hotel `Σ (p_i − f_i)`, with `b` the acceptable and `f`
//! the floor selling price; ρ is normalised by `Σ |b_i − f_i|` (each at least 1), as a price
//! game's ρ by `|B − C|`. A ticket *succeeds* as the paper counts task success: agreed at or
//! below the acceptable price.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::{to_cents, Terms, TicketSpec};

use super::{DealSpace, Role, Scenario};

/// A selling price and the take-home price that corresponds to it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PricePair {
    pub selling: f64,
    pub take_home: f64,
}

/// What the platform's agent privately knows of one ticket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BdTicket {
    /// The ideal price `a`: never to be undercut by the agent's own proposals.
    pub target: PricePair,
    /// The acceptable price `b` (`a ≤ b`): at or below it the ticket is a success.
    pub acceptable: PricePair,
}

/// What the hotel privately knows of one ticket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HotelTicket {
    /// The least selling price the hotel will take for this room on this date.
    pub floor: f64,
    /// The share of rooms of this type already booked for the date, in [0, 1].
    pub occupancy: f64,
    /// The selling price of the hotel's nearest competitor for a similar room.
    pub competitor: f64,
    /// The hotel's own reason, in its words, usable as persona text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// How one ticket of a call ended (outcome metrics).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct TicketOutcome {
    pub key: String,
    /// The agreed selling price; absent when the ticket was left unchanged or there was no deal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
    /// Agreed at or below the acceptable price (the paper's per-ticket task success).
    pub success: bool,
    /// Agreed at or below the target price.
    pub at_target: bool,
    /// The agent's ρ on this ticket: `(b − p)/|b − f|`, 0 when unchanged or no deal.
    pub rho_bd: f64,
    /// The hotel's ρ on this ticket: `(p − f)/|b − f|`, 0 when unchanged or no deal.
    pub rho_hotel: f64,
}

/// The spread ρ is normalised by on one ticket: `|b − f|`, at least 1.
fn spread(bd: &BdTicket, hotel: &HotelTicket) -> f64 {
    (bd.acceptable.selling - hotel.floor).abs().max(1.0)
}

impl Scenario {
    /// The tickets and both private blocks, in a hotel game.
    fn ticket_blocks(&self) -> Option<(&[TicketSpec], &[BdTicket], &[HotelTicket])> {
        match &self.game {
            DealSpace::Tickets { tickets, bd, hotel } => Some((tickets, bd, hotel)),
            _ => None,
        }
    }

    /// The utility of ticket terms for `role` (`Σ` over the lowered tickets).
    pub(crate) fn ticket_utility(&self, role: Role, prices: &[Option<i64>]) -> f64 {
        let Some((_, bd, hotel)) = self.ticket_blocks() else {
            return 0.0;
        };
        prices
            .iter()
            .zip(bd.iter().zip(hotel))
            .filter_map(|(p, (b, h))| p.map(|cents| (cents as f64 / 100.0, b, h)))
            .map(|(p, b, h)| match role {
                Role::Bd => b.acceptable.selling - p,
                Role::Hotel => p - h.floor,
                _ => 0.0,
            })
            .sum()
    }

    /// `Σ |b_i − f_i|` over the tickets: the scale of ρ in a hotel game.
    pub(crate) fn ticket_spread(&self) -> f64 {
        self.ticket_blocks()
            .map(|(_, bd, hotel)| bd.iter().zip(hotel).map(|(b, h)| spread(b, h)).sum())
            .unwrap_or(0.0)
    }

    /// Whether `terms` put any ticket past `role`'s own line: below the hotel's floor for the
    /// hotel, above the acceptable price for the agent. A regulated seat's such move is
    /// replaced (`game/rules.rs`), ticket by ticket rather than by the summed utility, so one
    /// generous ticket never pays for another below the floor.
    pub(crate) fn ticket_past_line(&self, role: Role, terms: &Terms) -> bool {
        let (Some((_, bd, hotel)), Terms::Tickets(prices)) = (self.ticket_blocks(), terms) else {
            return false;
        };
        prices
            .iter()
            .zip(bd.iter().zip(hotel))
            .any(|(p, (b, h))| match (p, role) {
                (Some(cents), Role::Hotel) => *cents < to_cents(h.floor),
                (Some(cents), Role::Bd) => *cents > to_cents(b.acceptable.selling),
                _ => false,
            })
    }

    /// How each ticket ended, given the deal's terms (`None`: no deal, every ticket unchanged).
    /// Empty for any other game.
    pub(crate) fn ticket_outcomes(&self, deal: Option<&Terms>) -> Vec<TicketOutcome> {
        let Some((tickets, bd, hotel)) = self.ticket_blocks() else {
            return Vec::new();
        };
        let prices: &[Option<i64>] = match deal {
            Some(Terms::Tickets(prices)) => prices,
            _ => &[],
        };
        tickets
            .iter()
            .zip(bd.iter().zip(hotel))
            .enumerate()
            .map(|(i, (t, (b, h)))| {
                let cents = prices.get(i).copied().flatten();
                let mut out = TicketOutcome {
                    key: t.key.clone(),
                    ..TicketOutcome::default()
                };
                if let Some(cents) = cents {
                    let p = cents as f64 / 100.0;
                    out.price = Some(p);
                    out.success = cents <= to_cents(b.acceptable.selling);
                    out.at_target = cents <= to_cents(b.target.selling);
                    out.rho_bd = (b.acceptable.selling - p) / spread(b, h);
                    out.rho_hotel = (p - h.floor) / spread(b, h);
                }
                out
            })
            .collect()
    }

    /// Whether `price` could be a selling price the call negotiates: on some ticket, from the
    /// agent's target up to the current selling price (where its asks and the hotel's counters
    /// lie).
    pub fn plausible_selling(&self, price: f64) -> bool {
        self.ticket_blocks().is_some_and(|(tickets, bd, _)| {
            tickets
                .iter()
                .zip(bd)
                .any(|(t, b)| b.target.selling - 0.5 <= price && price <= t.selling + 0.5)
        })
    }

    /// Whether `price` could be a take-home price the call negotiates: on some ticket, at most
    /// the current take-home price (a call only lowers prices).
    pub(crate) fn plausible_take_home(&self, price: f64) -> bool {
        self.ticket_blocks()
            .is_some_and(|(tickets, _, _)| tickets.iter().any(|t| price <= t.take_home + 0.5))
    }

    /// Every price the call knows for ticket `i`, each with whether it is a selling price:
    /// the current pair, and the agent's target and acceptable pairs. What the price-type
    /// guardrail checks a reply's numbers against.
    pub(crate) fn ticket_price_types(&self) -> Vec<(f64, bool)> {
        let Some((tickets, bd, _)) = self.ticket_blocks() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (t, b) in tickets.iter().zip(bd) {
            out.push((t.selling, true));
            out.push((t.take_home, false));
            for pair in [b.target, b.acceptable] {
                out.push((pair.selling, true));
                out.push((pair.take_home, false));
            }
        }
        out
    }
}

/// Check a hotel game's blocks (`load.rs`): one block per ticket on each side, keys `t1…tn`
/// in order, and prices in order (`0 < a ≤ b ≤ current`, take-home below selling, a floor
/// above 0). Returns the field and what is wrong.
pub(crate) fn check_tickets(
    tickets: &[TicketSpec],
    bd: &[BdTicket],
    hotel: &[HotelTicket],
) -> Result<(), (String, String)> {
    if tickets.is_empty() {
        return Err((
            "game.tickets.tickets".into(),
            "a call needs a ticket".into(),
        ));
    }
    if bd.len() != tickets.len() || hotel.len() != tickets.len() {
        return Err((
            "game.tickets".into(),
            format!(
                "{} tickets but {} bd and {} hotel blocks",
                tickets.len(),
                bd.len(),
                hotel.len()
            ),
        ));
    }
    for (i, ((t, b), h)) in tickets.iter().zip(bd).zip(hotel).enumerate() {
        let at = |f: &str| format!("game.tickets.{f}[{i}]");
        if t.key != format!("t{}", i + 1) {
            return Err((
                at("tickets"),
                format!("key `{}` should be `t{}`", t.key, i + 1),
            ));
        }
        let positive = [
            t.selling,
            t.take_home,
            b.target.selling,
            b.target.take_home,
            b.acceptable.selling,
            b.acceptable.take_home,
            h.floor,
        ];
        if positive.iter().any(|v| !v.is_finite() || *v <= 0.0) {
            return Err((at("tickets"), "every price must be above 0".into()));
        }
        if t.take_home > t.selling {
            return Err((at("tickets"), "take-home above the selling price".into()));
        }
        if !(b.target.selling <= b.acceptable.selling && b.acceptable.selling <= t.selling) {
            return Err((
                at("bd"),
                "needs target ≤ acceptable ≤ the current selling price".into(),
            ));
        }
        if !(0.0..=1.0).contains(&h.occupancy) {
            return Err((at("hotel"), "occupancy must be in [0, 1]".into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{hotel, learner_first_as, play, turn};
    use crate::game::{OutcomeKind, Seat};
    use crate::protocol::Action;

    /// The fixture: t1 acceptable 152, floor 145; t2 acceptable 105, floor 110.
    #[test]
    fn utilities_rho_and_success_are_per_ticket() {
        let s = hotel();
        let deal = Terms::Tickets(vec![Some(15000), None]);
        assert_eq!(s.utility(Role::Bd, &deal), 2.0);
        assert_eq!(s.utility(Role::Hotel, &deal), 5.0);
        // ρ over the summed spreads |152 − 145| + |105 − 110| = 12.
        assert!((crate::scenario::bargained_ratio(&s, Role::Bd, 2.0) - 2.0 / 12.0).abs() < 1e-12);
        let out = s.ticket_outcomes(Some(&deal));
        assert_eq!(out.len(), 2);
        assert_eq!(
            (out[0].price, out[0].success, out[0].at_target),
            (Some(150.0), true, false)
        );
        assert!((out[0].rho_bd - 2.0 / 7.0).abs() < 1e-12);
        assert!((out[0].rho_hotel - 5.0 / 7.0).abs() < 1e-12);
        assert_eq!(
            (out[1].price, out[1].success, out[1].rho_bd),
            (None, false, 0.0)
        );
        // No deal: every ticket unsettled.
        assert!(s
            .ticket_outcomes(None)
            .iter()
            .all(|t| !t.success && t.price.is_none()));
        // Above the acceptable price is no success.
        let high = s.ticket_outcomes(Some(&Terms::Tickets(vec![Some(15300), None])));
        assert!(!high[0].success && high[0].rho_bd < 0.0);
    }

    #[test]
    fn a_regulated_hotel_never_goes_below_a_floor_on_any_ticket() {
        let s = hotel();
        // t1 generous (160 ≥ 145) cannot pay for t2 below its floor (100 < 110).
        let e = play(
            &s,
            learner_first_as(&s, Role::Bd),
            &[
                turn("Today's room at 140?", "[SUBMIT_DEAL] t1:140 t2:97"),
                turn("I can do this.", "[SUBMIT_DEAL] t1:160 t2:100"),
            ],
        );
        let hotel_turn = &e.turns()[1];
        assert_eq!(hotel_turn.seat, Seat::Opponent);
        let event = hotel_turn.regulation.as_ref().expect("regulated");
        assert_eq!(event.replacement, Action::Reject);
        assert!(s.ticket_past_line(Role::Hotel, &Terms::Tickets(vec![Some(16000), Some(10000)])));
        assert!(!s.ticket_past_line(Role::Hotel, &Terms::Tickets(vec![Some(16000), None])));
        assert!(s.ticket_past_line(Role::Bd, &Terms::Tickets(vec![Some(15300), None])));
        // A partial deal the hotel proposes and the agent accepts settles the call.
        let e = play(
            &s,
            learner_first_as(&s, Role::Bd),
            &[
                turn("Today's room at 140?", "[SUBMIT_DEAL] t1:140 t2:97"),
                turn(
                    "Today's at 150, tomorrow's stays.",
                    "[SUBMIT_DEAL] t1:150 t2:unchanged",
                ),
                turn("Agreed, thank you.", "[ACCEPT_DEAL]"),
            ],
        );
        let o = e.outcome().expect("ended");
        assert_eq!(o.kind, OutcomeKind::Deal);
        assert_eq!(o.terms, Some(Terms::Tickets(vec![Some(15000), None])));
    }
}
