//! Chase-ticket terms (the `hotel` family): one selling price per ticket, or `unchanged`.
//!
//! A hotel call negotiates several chase tickets at once, each a room type on a date. An offer
//! names every ticket of the call exactly once — `t1:850 t2:unchanged` — with prices in the
//! currency the users see (the *selling* price; the take-home price the hotel receives is never
//! a term, so the two cannot be swapped on the action line). `unchanged` keeps a ticket's current
//! price: it is how a side settles a ticket it will not move. Terms are shared: both sides see the
//! same text, nothing is flipped.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::terms::{
    brief, format_cents, to_cents, TermPair, Terms, TermsError, TermsView, MAX_PRICE,
};
use super::TermValue;

/// The word that keeps a ticket's price as it is.
pub const UNCHANGED: &str = "unchanged";

/// One chase ticket as both sides see it: a room type on a date and its current prices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TicketSpec {
    /// The key used in the action grammar: `t1`, `t2`, … in call order.
    pub key: String,
    /// The room type, as the hotel lists it (`Comfort King Room`).
    pub room: String,
    /// The stay date, as the call names it (`today`, `tomorrow`, `Saturday`).
    pub date: String,
    /// The current selling price users see on the platform.
    pub selling: f64,
    /// The current take-home price the hotel receives for it.
    pub take_home: f64,
}

/// `t1 : 850`, `T2=unchanged`, `ticket 3: $1,020.50`: a ticket number and a price or `unchanged`.
static TICKET_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:t|ticket)\s*#?\s*([0-9]+)\s*[:=]\s*(unchanged|same|keep|\$?\s*-?[0-9][0-9,]*(?:\.[0-9]+)?)",
    )
    .expect("static regex")
});

/// Read the text after `[SUBMIT_DEAL]` as ticket terms: every ticket once, each a price from
/// above 0 to its current selling price, or `unchanged`. Always well-formed when readable.
pub(crate) fn parse_ticket_terms(
    text: &str,
    tickets: &[TicketSpec],
) -> Result<(Terms, bool), TermsError> {
    let pairs: Vec<TermPair<'_>> = TICKET_PAIR
        .captures_iter(text)
        .map(|c| {
            let value = c.get(2).map_or("", |m| m.as_str().trim());
            (Cow::Owned(format!("t{}", &c[1])), Cow::Borrowed(value))
        })
        .collect();
    if pairs.is_empty() {
        return Err(TermsError::Incomplete(format!(
            "no ticket terms (write every ticket, e.g. {})",
            example(tickets)
        )));
    }
    ticket_terms_from_pairs(&pairs, tickets).map(|t| (t, true))
}

/// Ticket terms from `(normalized key, value)` pairs (a written action's or a tool call's).
pub(crate) fn ticket_terms_from_pairs(
    pairs: &[TermPair<'_>],
    tickets: &[TicketSpec],
) -> Result<Terms, TermsError> {
    let mut prices: Vec<Option<Option<i64>>> = vec![None; tickets.len()];
    for (key, value) in pairs {
        let key = key.to_ascii_lowercase().replace("ticket", "t");
        let Some(i) = tickets
            .iter()
            .position(|t| t.key.eq_ignore_ascii_case(&key))
        else {
            return Err(TermsError::Unreadable(format!(
                "unknown ticket `{}` (this call has {})",
                brief(&key),
                keys(tickets)
            )));
        };
        if prices[i].is_some() {
            return Err(TermsError::Unreadable(format!(
                "{} given twice",
                tickets[i].key
            )));
        }
        prices[i] = Some(read_ticket_value(&tickets[i], value)?);
    }
    let missing: Vec<&str> = tickets
        .iter()
        .zip(&prices)
        .filter(|(_, p)| p.is_none())
        .map(|(t, _)| t.key.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(TermsError::Incomplete(format!(
            "missing {} (every ticket of the call needs a price or `{UNCHANGED}`)",
            missing.join(", ")
        )));
    }
    Ok(Terms::Tickets(prices.into_iter().flatten().collect()))
}

fn read_ticket_value(ticket: &TicketSpec, value: &str) -> Result<Option<i64>, TermsError> {
    let lower = value.trim().to_ascii_lowercase();
    if matches!(lower.as_str(), UNCHANGED | "same" | "keep") {
        return Ok(None);
    }
    let cleaned: String = lower
        .chars()
        .filter(|c| *c != '$' && *c != ',' && !c.is_whitespace())
        .collect();
    let amount: f64 = cleaned
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| {
            TermsError::Unreadable(format!(
                "{} `{}` is not a price or `{UNCHANGED}`",
                ticket.key,
                brief(value)
            ))
        })?;
    if amount <= 0.0 || amount > MAX_PRICE {
        return Err(TermsError::OutOfRange(format!(
            "{} must be a price above 0, got {}",
            ticket.key,
            brief(value)
        )));
    }
    if to_cents(amount) > to_cents(ticket.selling) {
        return Err(TermsError::OutOfRange(format!(
            "{} asks {} above its current selling price {} (a call only lowers prices; write `{UNCHANGED}` to keep it)",
            ticket.key,
            brief(value),
            super::terms::money(ticket.selling)
        )));
    }
    Ok(Some(to_cents(amount)))
}

/// `t1:850 t2:unchanged`, in ticket order.
pub(crate) fn render_ticket_terms(prices: &[Option<i64>], tickets: &[TicketSpec]) -> String {
    let mut out = String::new();
    for (i, (p, t)) in prices.iter().zip(tickets).enumerate() {
        if i > 0 {
            out.push(' ');
        }
        match p {
            Some(cents) => {
                let _ = write!(out, "{}:{}", t.key, format_cents(*cents));
            }
            None => {
                let _ = write!(out, "{}:{UNCHANGED}", t.key);
            }
        }
    }
    out
}

/// `{"t1": 850.0, "t2": "unchanged"}`.
pub(crate) fn named_ticket_terms(prices: &[Option<i64>], tickets: &[TicketSpec]) -> TermsView {
    tickets
        .iter()
        .zip(prices)
        .map(|(t, p)| {
            let v = match p {
                Some(cents) => TermValue::Price(*cents as f64 / 100.0),
                None => TermValue::Option(UNCHANGED.into()),
            };
            (t.key.clone(), v)
        })
        .collect()
}

/// The grammar's template for a call's terms: `t1:PRICE|unchanged t2:PRICE|unchanged`.
pub(crate) fn ticket_template(tickets: &[TicketSpec]) -> String {
    tickets
        .iter()
        .map(|t| format!("{}:PRICE|{UNCHANGED}", t.key))
        .collect::<Vec<_>>()
        .join(" ")
}

fn example(tickets: &[TicketSpec]) -> String {
    tickets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if i == 0 {
                format!("{}:{}", t.key, super::terms::money(t.selling * 0.9))
            } else {
                format!("{}:{UNCHANGED}", t.key)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn keys(tickets: &[TicketSpec]) -> String {
    tickets
        .iter()
        .map(|t| t.key.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::terms::terms_from_json;
    use crate::protocol::{parse_terms, TermSpace};

    fn two() -> Vec<TicketSpec> {
        vec![
            TicketSpec {
                key: "t1".into(),
                room: "Comfort King Room".into(),
                date: "today".into(),
                selling: 168.0,
                take_home: 143.0,
            },
            TicketSpec {
                key: "t2".into(),
                room: "Twin Room".into(),
                date: "tomorrow".into(),
                selling: 120.0,
                take_home: 102.0,
            },
        ]
    }

    #[test]
    fn ticket_terms_read_and_render_back() {
        let tickets = two();
        let space = TermSpace::Tickets(&tickets);
        let (t, ok) = parse_terms("T2 = unchanged, t1: 152", space).unwrap();
        assert!(ok);
        assert_eq!(t, Terms::Tickets(vec![Some(15200), None]));
        assert_eq!(t.render(space), "t1:152 t2:unchanged");
        assert_eq!(parse_terms(&t.render(space), space).unwrap().0, t);
        let (t, _) = parse_terms("ticket 1: $140.50 ticket 2: 99", space).unwrap();
        assert_eq!(t, Terms::Tickets(vec![Some(14050), Some(9900)]));
    }

    #[test]
    fn bad_ticket_terms_are_named() {
        let tickets = two();
        let space = TermSpace::Tickets(&tickets);
        let err = |text: &str| parse_terms(text, space).unwrap_err();
        assert!(matches!(err("t1:150"), TermsError::Incomplete(m) if m.contains("t2")));
        assert!(
            matches!(err("t1:150 t3:90 t2:unchanged"), TermsError::Unreadable(m) if m.contains("t3"))
        );
        assert!(
            matches!(err("t1:150 t1:140 t2:90"), TermsError::Unreadable(m) if m.contains("twice"))
        );
        assert!(matches!(err("t1:-5 t2:90"), TermsError::OutOfRange(_)));
        assert!(
            matches!(err("t1:200 t2:90"), TermsError::OutOfRange(m) if m.contains("above its current"))
        );
        assert!(matches!(err("price:150"), TermsError::Incomplete(_)));
    }

    #[test]
    fn ticket_terms_from_json() {
        let tickets = two();
        let space = TermSpace::Tickets(&tickets);
        let json = serde_json::json!({"t1": 150, "t2": "unchanged"});
        let t = terms_from_json(json.as_object().unwrap(), space).unwrap();
        assert_eq!(t, Terms::Tickets(vec![Some(15000), None]));
        let named = t.named(space);
        assert_eq!(named["t2"], TermValue::Option("unchanged".into()));
        assert_eq!(named["t1"], TermValue::Price(150.0));
    }
}
