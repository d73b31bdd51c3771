//! What a seat of a hotel call (`hotel` family) is told: the call's tickets, and its own private
//! block per ticket only (`prompt.rs` calls in here for the family's context and example).

use minijinja::{context, Value};
use serde::Serialize;

use crate::protocol::{money, to_cents, Terms, TicketSpec};
use crate::scenario::{BdTicket, HotelTicket, Role};

/// One ticket as a seat sees it: the public room, date and current prices, and the seat's own
/// private figures (empty for the other side's).
#[derive(Serialize)]
struct TicketView {
    key: String,
    room: String,
    date: String,
    selling: String,
    take_home: String,
    /// The agent's: its target and acceptable pairs.
    target: String,
    target_take_home: String,
    acceptable: String,
    acceptable_take_home: String,
    /// The hotel's: its floor, occupancy in percent, a competitor's price and its reason.
    floor: String,
    occupancy: String,
    competitor: String,
    reason: String,
}

/// The template context of a hotel seat.
pub(super) fn ticket_context(
    role: Role,
    tickets: &[TicketSpec],
    bd: &[BdTicket],
    hotel: &[HotelTicket],
) -> Value {
    let views: Vec<TicketView> = tickets
        .iter()
        .zip(bd.iter().zip(hotel))
        .map(|(t, (b, h))| {
            let mine = |own: Role, text: String| if role == own { text } else { String::new() };
            TicketView {
                key: t.key.clone(),
                room: t.room.clone(),
                date: t.date.clone(),
                selling: money(t.selling),
                take_home: money(t.take_home),
                target: mine(Role::Bd, money(b.target.selling)),
                target_take_home: mine(Role::Bd, money(b.target.take_home)),
                acceptable: mine(Role::Bd, money(b.acceptable.selling)),
                acceptable_take_home: mine(Role::Bd, money(b.acceptable.take_home)),
                floor: mine(Role::Hotel, money(h.floor)),
                occupancy: mine(Role::Hotel, format!("{:.0}", h.occupancy * 100.0)),
                competitor: mine(Role::Hotel, money(h.competitor)),
                reason: mine(Role::Hotel, h.reason.clone()),
            }
        })
        .collect();
    context! { domain => "tickets", tickets => views }
}

/// The example turn's terms: the first ticket a tenth below its current selling price (public),
/// every other one unchanged.
pub(super) fn example_terms(tickets: &[TicketSpec]) -> Terms {
    Terms::Tickets(
        tickets
            .iter()
            .enumerate()
            .map(|(i, t)| (i == 0).then(|| to_cents((t.selling * 0.9).round())))
            .collect(),
    )
}
