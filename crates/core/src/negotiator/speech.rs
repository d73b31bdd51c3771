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
    speak_turn(decision, space, format, t, act, Talking::Spoken)
}

/// Whether a built-in negotiator says anything beside its move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Talking {
    /// A short line fitting the move (its Talk).
    Spoken,
    /// An empty Talk: the move alone (`rule:fixed-concession`, the no-talk baseline).
    Silent,
}

/// The one writer of a built-in negotiator's completion: [`speak_with_act`], with the Talk
/// left empty where the negotiator is `Silent`.
pub(crate) fn speak_turn(
    decision: &Decision,
    space: TermSpace<'_>,
    format: TurnFormat,
    t: u32,
    act: Option<&str>,
    talking: Talking,
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
    let talk = match (talking, &decision.action, space) {
        (Talking::Silent, _, _) => String::new(),
        (_, action, TermSpace::Tickets(tickets)) => super::tickets::ticket_talk(action, tickets, t),
        (_, Action::Accept, _) => "That works for me. We have a deal.".to_string(),
        (_, Action::Submit(_), _) => OPENERS[t as usize % OPENERS.len()].to_string(),
        (_, Action::Reject | Action::Talk, _) => "I cannot agree to that.".to_string(),
        (_, Action::WalkAway, _) => "I do not think we can agree. Goodbye.".to_string(),
    };
    let mut action = render_action(&decision.action, space, true);
    if let Some(act) = act {
        action = format!("{action} #{act}");
    }
    render_turn(&thought, &talk, &action, format)
}
