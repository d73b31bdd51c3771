//! One episode as a transcript a person reads: [`markdown`] or a self-contained [`html`] page.
//! Both are pure functions of the record (record in, text out) so that reports can reuse them.
//!
//! Each turn shows its seat and role, the Thought folded away (and any reasoning), the Talk,
//! the action, what the counterpart was sent (marked as forwarded), a regulation event
//! (original → replacement), a format or illegal error with what followed (asked again, or the
//! forfeit); the end shows the outcome, the deal terms and each side's utility, ρ and reward.
//!
//! The record holds actions as data (`[SUBMIT_DEAL]` with item shares or option indexes), not
//! the scenario's names for them; the names are read back from the record's own canonical
//! text (the forwarded action lines and the deal's `terms_text`), see `names.rs`.

mod html;
mod markdown;
mod names;

pub use html::html;
pub(crate) use html::{escape, html_fragment, TRANSCRIPT_STYLE};
pub use markdown::markdown;
use names::TermNames;

use crate::game::{OutcomeKind, Seat};
use crate::protocol::ErrorKind;
use crate::record::EpisodeRecord;

/// One turn, as both renderings show it.
struct TurnView<'a> {
    /// 1-based, over every attempt.
    number: usize,
    seat: Seat,
    role: &'static str,
    attempt: u32,
    thought: Option<&'a str>,
    reasoning: Option<&'a str>,
    talk: Option<&'a str>,
    /// The move as read from the completion, canonically from the mover's side.
    action: Option<String>,
    regulation: Option<Regulation>,
    problem: Option<Problem<'a>>,
    /// A turn that was used but is not format-ok, and why where the parser said.
    not_format_ok: Option<&'a str>,
    forwarded: Option<&'a str>,
}

/// Regulation replaced the move made (`original`) by `replacement`.
struct Regulation {
    original: String,
    replacement: String,
    utility: f64,
    floor: f64,
}

/// A turn that could not be used, and what followed.
struct Problem<'a> {
    /// `format` or `illegal`.
    kind: &'static str,
    message: &'a str,
    /// The same seat was asked again (`false`: the episode ended on it, a forfeit).
    retried: bool,
}

fn turn_views(record: &EpisodeRecord) -> Vec<TurnView<'_>> {
    let names = TermNames::learn(record);
    let turns = &record.turns;
    turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let retried = turns
                .get(i + 1)
                .is_some_and(|next| next.seat == t.seat && next.attempt == t.attempt + 1);
            let problem = if t.played.is_none() {
                let (kind, message) = match &t.parsed.error {
                    Some(e) => (error_kind(e.kind), e.message.as_str()),
                    None => ("format", "no action"),
                };
                Some(Problem {
                    kind,
                    message,
                    retried,
                })
            } else {
                None
            };
            let not_format_ok = (t.played.is_some() && !t.parsed.format_ok)
                .then(|| t.parsed.note.map_or("", |n| n.describe()));
            TurnView {
                number: i + 1,
                seat: t.seat,
                role: record.seats[t.seat].role.name(),
                attempt: t.attempt,
                thought: t.parsed.thought.as_deref().filter(|s| !s.is_empty()),
                reasoning: t.parsed.reasoning.as_deref().filter(|s| !s.is_empty()),
                talk: t.parsed.talk.as_deref(),
                action: t.parsed.action.as_ref().map(|a| names.action(a)),
                regulation: t.regulation.as_ref().map(|e| Regulation {
                    original: names.action(&e.original),
                    replacement: names.action(&e.replacement),
                    utility: e.utility,
                    floor: e.floor,
                }),
                problem,
                not_format_ok,
                forwarded: t.forwarded.as_deref(),
            }
        })
        .collect()
}

fn error_kind(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Format => "format",
        ErrorKind::Illegal => "illegal",
        ErrorKind::Backend => "backend",
    }
}

/// How the episode ended, in words: `deal (accepted by the opponent)`.
fn ending(record: &EpisodeRecord) -> String {
    let o = &record.outcome.outcome;
    let by = |verb: &str| {
        o.by.map(|seat| format!(" ({verb} the {seat})"))
            .unwrap_or_default()
    };
    match o.kind {
        OutcomeKind::Deal => format!("deal{}", by("accepted by")),
        OutcomeKind::WalkAway => format!("walk-away{}", by("by")),
        OutcomeKind::RejectLoop => format!("reject loop{}", by("closed by")),
        OutcomeKind::MaxTurns => "turn cap reached (truncated)".to_string(),
        OutcomeKind::FormatForfeit => format!("format forfeit{}", by("by")),
        OutcomeKind::Error => format!("backend error{}", by("for")),
    }
}

/// A number as a reader wants it: whole numbers bare, others to three decimals without
/// trailing zeros.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let text = format!("{x:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".to_string()
    } else {
        text.to_string()
    }
}

/// The heading of a turn: `Turn 3 · opponent (seller)`, with the attempt where it is a retry.
fn turn_heading(t: &TurnView<'_>) -> String {
    let retry = if t.attempt > 0 {
        format!(" · attempt {} (after a correction)", t.attempt + 1)
    } else {
        String::new()
    };
    format!("Turn {} · {} ({}){retry}", t.number, t.seat, t.role)
}

fn regulation_text(r: &Regulation) -> String {
    format!(
        "its utility {} is below its floor {}",
        number(r.utility),
        number(r.floor)
    )
}

fn problem_text(p: &Problem<'_>) -> (&'static str, &'static str) {
    let title = match p.kind {
        "illegal" => "Illegal move",
        "backend" => "Backend error",
        _ => "Format error",
    };
    let next = if p.retried {
        "corrected and asked again"
    } else {
        "no retry left: the seat forfeits"
    };
    (title, next)
}

#[cfg(test)]
mod tests;
