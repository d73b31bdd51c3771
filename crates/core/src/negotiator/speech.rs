//! Turning a built-in negotiator's decision into a completion, in the seat's spelling, exactly as
//! a model would write it (the engine parses it like any other).

use crate::protocol::{render_action, render_turn, Action, TermSpace, TurnFormat};

use super::concession::Decision;

const OPENERS: [&str; 4] = [
    "Here is what I can do.",
    "Let me put a concrete proposal on the table.",
    "I have thought about it, and this is my offer.",
    "How about this instead?",
];

/// The completion for a decision at round `t` (0-based own moves).
pub fn speak(decision: &Decision, space: TermSpace<'_>, format: TurnFormat, t: u32) -> String {
    let thought = match decision.offered {
        Some(v) => format!(
            "My aspiration is {:.2}; the offer on the table is worth {:.2} to me.",
            decision.aspiration, v
        ),
        None => format!(
            "My aspiration is {:.2}; nothing acceptable is on the table.",
            decision.aspiration
        ),
    };
    if let TermSpace::Tickets(tickets) = space {
        let talk = super::tickets::ticket_talk(&decision.action, tickets, t);
        return render_turn(
            &thought,
            &talk,
            &render_action(&decision.action, space, true),
            format,
        );
    }
    let talk = match &decision.action {
        Action::Accept => "That works for me. We have a deal.".to_string(),
        Action::Submit(_) => OPENERS[t as usize % OPENERS.len()].to_string(),
        Action::Reject | Action::Talk => "I cannot agree to that.".to_string(),
        Action::WalkAway => "I do not think we can agree. Goodbye.".to_string(),
    };
    render_turn(
        &thought,
        &talk,
        &render_action(&decision.action, space, true),
        format,
    )
}
