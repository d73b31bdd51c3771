//! The mock's value model (`POST /v1/value`, issue 26 part 4): `{"state", "candidates"}` in,
//! `{"values"}` out, one per candidate, deterministic — the same request always gets the same
//! values, so a planner's eval is reproducible.
//!
//! It reads the state text's first line (`State: ` and the seat's structured view, see
//! `dealgym::planner::state_text`) and each candidate's move with the engine's own parser, and
//! scores a price move by a one-step expected surplus for the seat: accepting the offer on the
//! table is worth its surplus; proposing a price is worth its surplus times a chance the other
//! side takes it, which falls with the gap to their last price (the listing price before they
//! name one), and halves when the turns are nearly out; talking or rejecting is worth a little
//! of the offer on the table; walking away the no-deal value. A plain heuristic — a stand-in for
//! DialogXpert's trained Q-network, enough to show the hook at work. At a table (a state line
//! of [`TableSeatKnowledge`]) a move that makes or accepts a deal is worth the seat's own
//! points for it over its minimum, anything else 0. Other families get 0 for every candidate
//! (the planner then commits the first).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use dealgym::observation::{PrivateView, SeatState, TermValue};
use dealgym::protocol::{parse, Action, TermSpace, Terms};
use dealgym::table::TableSeatKnowledge;

#[derive(Deserialize)]
struct ValueRequest {
    state: String,
    candidates: Vec<String>,
}

pub(super) async fn value_route(body: axum::body::Bytes) -> Response {
    let request: ValueRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return super::error(StatusCode::BAD_REQUEST, &format!("invalid request: {e}")),
    };
    match values(&request.state, &request.candidates) {
        Ok(values) => Json(json!({ "values": values })).into_response(),
        Err(message) => super::error(StatusCode::BAD_REQUEST, &message),
    }
}

/// The values of `candidates` in `state` (see the module's comment).
pub fn values(state: &str, candidates: &[String]) -> Result<Vec<f64>, String> {
    let first = state.lines().next().unwrap_or("");
    let json = first
        .strip_prefix("State: ")
        .ok_or("the state text does not start with `State: `")?;
    let seat: SeatState = match serde_json::from_str(json) {
        Ok(seat) => seat,
        Err(e) => {
            let Ok(table) = serde_json::from_str::<TableSeatKnowledge>(json) else {
                return Err(format!("the state's view cannot be read: {e}"));
            };
            return Ok(candidates.iter().map(|c| table_value(&table, c)).collect());
        }
    };
    let Some(price) = PriceView::of(&seat) else {
        return Ok(vec![0.0; candidates.len()]);
    };
    Ok(candidates.iter().map(|c| price.value(c)).collect())
}

/// A candidate's value at a table: the seat's own points for the deal it proposes
/// (`[SUBMIT_DEAL] A1 B2 …`) or accepts (`[ACCEPT_DEAL] #3`, the offer's deal as the state
/// lists it) over its minimum; 0 for any other move. The move is read by its tokens alone (the
/// option labels the seat has points for), as a stand-in heuristic may.
fn table_value(seat: &TableSeatKnowledge, candidate: &str) -> f64 {
    let points = |deal: &str| -> i64 {
        deal.split(|c: char| !c.is_ascii_alphanumeric())
            .filter_map(|label| seat.own.scores.get(label))
            .sum()
    };
    let over_minimum = |deal: &str| (points(deal) - seat.own.minimum) as f64;
    if let Some((_, terms)) = candidate.rsplit_once("[SUBMIT_DEAL]") {
        return over_minimum(terms);
    }
    if let Some((_, named)) = candidate.rsplit_once("[ACCEPT_DEAL]") {
        let id = named
            .trim_start()
            .strip_prefix('#')
            .map(|rest| {
                rest.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|digits| digits.parse::<u32>().ok());
        return match seat.state.offers.iter().find(|o| Some(o.id) == id) {
            Some(offer) => over_minimum(&offer.deal),
            None => 0.0,
        };
    }
    0.0
}

/// What the price heuristic reads of a seat's view.
struct PriceView {
    buyer: bool,
    reservation: f64,
    /// Their last price on the table, or the listing price before they name one.
    theirs: Option<f64>,
    on_table: Option<f64>,
    moves_left: u32,
    no_deal: f64,
}

impl PriceView {
    fn of(seat: &SeatState) -> Option<PriceView> {
        let (buyer, reservation) = match &seat.own {
            PrivateView::Buyer { budget } => (true, *budget),
            PrivateView::Seller { cost } => (false, *cost),
            _ => return None,
        };
        let price_of = |terms: &std::collections::BTreeMap<String, TermValue>| {
            terms.get("price").map(|v| match v {
                TermValue::Count(n) => f64::from(*n),
                TermValue::Number(n) => *n as f64,
                TermValue::Price(p) => *p,
                TermValue::Option(_) => f64::NAN,
            })
        };
        let on_table = seat
            .standing_offer
            .as_ref()
            .filter(|o| o.by != seat.role)
            .and_then(|o| price_of(&o.terms));
        let last = seat
            .counterpart_last
            .as_ref()
            .and_then(|m| m.terms.as_ref())
            .and_then(price_of);
        let theirs = on_table.or(last).or(if buyer {
            seat.public.listing_price
        } else {
            None
        });
        Some(PriceView {
            buyer,
            reservation,
            theirs,
            on_table,
            moves_left: seat.turns.moves_left,
            no_deal: seat.no_deal_value,
        })
    }

    fn surplus(&self, price: f64) -> f64 {
        if self.buyer {
            self.reservation - price
        } else {
            price - self.reservation
        }
    }

    fn value(&self, candidate: &str) -> f64 {
        let parsed = parse(candidate, TermSpace::Price, None);
        let Some(action) = parsed.action.filter(|_| parsed.error.is_none()) else {
            return self.no_deal - 1.0;
        };
        match action {
            Action::Accept => self
                .on_table
                .map_or(self.no_deal - 1.0, |p| self.surplus(p)),
            Action::Submit(Terms::Price(cents)) => {
                let price = cents as f64 / 100.0;
                let chance = match self.theirs {
                    Some(q) if q.abs() >= 1.0 => {
                        let gap = ((q - price) / q).abs();
                        (-gap / 0.1).exp()
                    }
                    _ => 0.5,
                };
                let hurry = if self.moves_left <= 2 { 0.5 } else { 1.0 };
                self.surplus(price) * chance * hurry
            }
            Action::Submit(_) => self.no_deal - 1.0,
            Action::Reject | Action::Talk => {
                0.1 * self.on_table.map_or(0.0, |p| self.surplus(p).max(0.0))
            }
            Action::WalkAway => self.no_deal,
        }
    }
}
