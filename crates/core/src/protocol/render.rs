//! Writing a move back as text, canonically and from one seat's point of view.

use super::action::Action;
use super::parse::TurnFormat;
use super::terms::TermSpace;
use crate::game::Talk;

/// The action line as the grammar writes it, from the viewer's point of view. `from_mover` says
/// whether the viewer is the seat that made the move; if not, item shares are flipped.
pub fn render_action(action: &Action, space: TermSpace<'_>, from_mover: bool) -> String {
    match action {
        Action::Submit(terms) => {
            let terms = if from_mover {
                std::borrow::Cow::Borrowed(terms)
            } else {
                terms.seen_by_other(space)
            };
            format!("{} {}", action.kind().token(), terms.render(space))
        }
        other => other.kind().token().to_string(),
    }
}

/// A whole turn as a completion spells it — Thought, Talk and the action line — in the given
/// format. The one place the three-part spelling is written (built-in players, the prompts'
/// example turn, the mock all use it); [`crate::protocol::parse`] reads it back.
pub fn render_turn(thought: &str, talk: &str, action_line: &str, format: TurnFormat) -> String {
    match format {
        // A seat that acts through tools is shown turns as the tagged text.
        TurnFormat::Tagged | TurnFormat::Tools => format!(
            "Thought: {thought}\n{}",
            talk_and_action(talk, action_line, format)
        ),
        TurnFormat::Xml => format!(
            "<thought>{thought}</thought>\n{}",
            talk_and_action(talk, action_line, format)
        ),
    }
}

/// The Talk and Action parts of a turn, in the given format.
fn talk_and_action(talk: &str, action_line: &str, format: TurnFormat) -> String {
    let mut out = String::with_capacity(talk.len() + action_line.len() + 32);
    match format {
        TurnFormat::Tagged | TurnFormat::Tools => {
            out.push_str("Talk: ");
            out.push_str(talk);
        }
        TurnFormat::Xml => {
            out.push_str("<talk>");
            out.push_str(talk);
            out.push_str("</talk>");
        }
    }
    out.push('\n');
    push_action_part(&mut out, action_line, format);
    out
}

/// The Action part of a turn (`Action: LINE`, `<action>LINE</action>`), in the given format:
/// what a narrated turn is told to end with, and writes after its narrator's words.
pub fn action_part(action_line: &str, format: TurnFormat) -> String {
    let mut out = String::with_capacity(action_line.len() + 20);
    push_action_part(&mut out, action_line, format);
    out
}

/// The Action part of a turn (its label or tags around the action line), in the given format:
/// the one spelling of it, for a whole turn and for a move forwarded without its Talk.
fn push_action_part(out: &mut String, action_line: &str, format: TurnFormat) {
    match format {
        TurnFormat::Tagged | TurnFormat::Tools => {
            out.push_str("Action: ");
            out.push_str(action_line);
        }
        TurnFormat::Xml => {
            out.push_str("<action>");
            out.push_str(action_line);
            out.push_str("</action>");
        }
    }
}

/// What the counterpart of a move reads: the mover's Talk text and the action re-rendered from
/// the receiver's side, in the receiver's spelling. Thought and reasoning never appear here.
/// With `talk` off (the talk ablation, `[episode] talk = "off"`) the Talk is withheld and the
/// receiver reads the action line alone, its terms still from its own side.
pub(crate) fn render_forwarded(
    talk: &str,
    forward_talk: Talk,
    action: &Action,
    space: TermSpace<'_>,
    format: TurnFormat,
) -> String {
    let action_line = render_action(action, space, false);
    match forward_talk {
        Talk::On => talk_and_action(talk.trim(), &action_line, format),
        Talk::Off => {
            let mut out = String::with_capacity(action_line.len() + 20);
            push_action_part(&mut out, &action_line, format);
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::casino_items;
    use crate::protocol::terms::Terms;

    #[test]
    fn forwarded_items_are_flipped_for_the_receiver() {
        let items = casino_items();
        let action = Action::Submit(Terms::Items(vec![3, 1, 0]));
        let text = render_forwarded(
            " Deal? ",
            Talk::On,
            &action,
            TermSpace::Items(&items),
            TurnFormat::Tagged,
        );
        assert_eq!(
            text,
            "Talk: Deal?\nAction: [SUBMIT_DEAL] food:0 water:2 firewood:3"
        );
        assert_eq!(
            render_action(&action, TermSpace::Items(&items), true),
            "[SUBMIT_DEAL] food:3 water:1 firewood:0"
        );
    }

    #[test]
    fn talk_off_withholds_the_talk_and_forwards_the_action_and_its_terms() {
        let items = casino_items();
        let action = Action::Submit(Terms::Items(vec![3, 1, 0]));
        let space = TermSpace::Items(&items);
        let forward = |format| render_forwarded("SECRET-TALK", Talk::Off, &action, space, format);
        assert_eq!(
            forward(TurnFormat::Tagged),
            "Action: [SUBMIT_DEAL] food:0 water:2 firewood:3"
        );
        assert_eq!(
            forward(TurnFormat::Xml),
            "<action>[SUBMIT_DEAL] food:0 water:2 firewood:3</action>"
        );
        assert_eq!(forward(TurnFormat::Tools), forward(TurnFormat::Tagged));
        let accept = render_forwarded(
            "Fine.",
            Talk::Off,
            &Action::Accept,
            space,
            TurnFormat::Tagged,
        );
        assert_eq!(accept, "Action: [ACCEPT_DEAL]");
    }
}
