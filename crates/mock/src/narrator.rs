//! The mock as a narrator: a request whose last message is a narrated seat's brief
//! (`prompts/narrate.j2`, which names the decided move and the action line to end with) is
//! answered with a Thought and a Talk that fit the move — naming its price, where it has one —
//! and then the line itself, as a faithful narrator writes (the player cuts the reply where
//! its words end and writes the decided line itself). Its routes honour a request's `stop`, as
//! servers do, for every other client.

use std::sync::LazyLock;

use regex::Regex;

use dealgym::game::{Message, MessageRole};
use dealgym::protocol::{render_turn, TurnFormat};

/// How the built-in brief begins.
const BRIEF: &str = "Your move this turn is already decided:";

static PRICE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)price\s*[:=]\s*\$?([0-9][0-9,]*(?:\.[0-9]+)?)").expect("static regex")
});

/// The narrated turn for a brief, if the last message is one; `unfaithful`, a Talk that
/// contradicts the move (another price where it has one, else an acceptance, or a refusal of
/// an acceptance).
pub(crate) fn narrate(messages: &[Message], unfaithful: bool) -> Option<String> {
    let last = messages.last().filter(|m| m.role == MessageRole::User)?;
    if !last.content.starts_with(BRIEF) {
        return None;
    }
    let end = last.content.lines().last()?.trim();
    let (xml, line) = match end.strip_prefix("<action>") {
        Some(rest) => (true, rest.trim_end_matches("</action>").trim()),
        None => (false, end.strip_prefix("Action:")?.trim()),
    };
    let token = line
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    let price = PRICE.captures(line).map(|c| c[1].to_string());
    let talk = match (token.as_str(), unfaithful, price) {
        ("[SUBMIT_DEAL]", true, Some(p)) => {
            let named = p.replace(',', "").parse::<f64>().unwrap_or(0.0) * 1.5 + 7.0;
            format!("I could pay ${named:.2}, no more.")
        }
        ("[ACCEPT_DEAL]", true, _) => "I cannot accept this.".to_string(),
        (_, true, _) => "Great, we have a deal!".to_string(),
        ("[SUBMIT_DEAL]", false, Some(p)) => {
            format!("How about ${p}? I think that is fair for both of us.")
        }
        ("[SUBMIT_DEAL]", false, None) => "Here is my proposal; I hope it works for you.".into(),
        ("[ACCEPT_DEAL]", false, _) => "That works for me. We have a deal.".to_string(),
        ("[WALK_AWAY]", false, _) => "I do not think we can agree. Goodbye.".to_string(),
        ("[TALK]", false, _) => "Let us keep talking before anyone commits.".to_string(),
        (_, false, _) => "I cannot agree to that yet.".to_string(),
    };
    let thought = format!("The move is set ({token}); I will say it plainly.");
    let format = if xml {
        TurnFormat::Xml
    } else {
        TurnFormat::Tagged
    };
    Some(render_turn(&thought, &talk, line, format))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_brief_is_narrated_with_its_price_and_ends_with_its_line() {
        let brief =
            format!("{BRIEF} [SUBMIT_DEAL] price:120. Write …\nAction: [SUBMIT_DEAL] price:120");
        let messages = vec![
            Message::new(MessageRole::System, "sys"),
            Message::new(MessageRole::User, brief),
        ];
        let turn = narrate(&messages, false).expect("a brief");
        assert!(turn.contains("$120"), "{turn}");
        assert!(turn.ends_with("Action: [SUBMIT_DEAL] price:120"), "{turn}");
        assert_eq!(narrate(&messages[..1], false), None);
        let unfaithful = narrate(&messages, true).expect("a brief");
        assert!(unfaithful.contains("$187.00"), "{unfaithful}");
    }
}
