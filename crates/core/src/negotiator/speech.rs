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
    speak_with_act(decision, space, format, t, None)
}

/// [`speak`], the action ending with the dialogue-act label `act` (`#act`) where the seat is
/// asked to label its turns.
pub fn speak_with_act(
    decision: &Decision,
    space: TermSpace<'_>,
    format: TurnFormat,
    t: u32,
    act: Option<&str>,
) -> String {
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
    let talk = match (&decision.action, space) {
        (action, TermSpace::Tickets(tickets)) => super::tickets::ticket_talk(action, tickets, t),
        (Action::Accept, _) => "That works for me. We have a deal.".to_string(),
        (Action::Submit(_), _) => OPENERS[t as usize % OPENERS.len()].to_string(),
        (Action::Reject | Action::Talk, _) => "I cannot agree to that.".to_string(),
        (Action::WalkAway, _) => "I do not think we can agree. Goodbye.".to_string(),
    };
    let mut action = render_action(&decision.action, space, true);
    if let Some(act) = act {
        action = format!("{action} #{act}");
    }
    render_turn(&thought, &talk, &action, format)
}
