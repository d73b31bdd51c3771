//! A seat's history: the messages it is sent and its own replies, append-only, with its exact
//! token sequence beside them. The one home of "what a seat keeps of its own turn".

use std::sync::atomic::{AtomicU64, Ordering};

use crate::vocab::{Message, MessageRole, ToolCall, TurnTokens};

/// What one seat has seen and said: its chat view (system prompt, what it was sent, its own
/// replies without reasoning) and, for a seat played in token-exact mode, the exact ids of
/// every call (`None` once one of its calls had none). Only ever grows, so an endpoint's
/// prefix cache is reused turn after turn.
#[derive(Debug)]
pub struct SeatHistory {
    view: Vec<Message>,
    sequence: Option<Vec<u32>>,
    /// Which history this is ([`SeatHistory::origin`]): new for every history made or cloned.
    origin: u64,
}

/// The next history's [`SeatHistory::origin`].
static NEXT_ORIGIN: AtomicU64 = AtomicU64::new(1);

fn next_origin() -> u64 {
    NEXT_ORIGIN.fetch_add(1, Ordering::Relaxed)
}

/// A copy is another history: it grows apart from the original (a snapshot, a restore), so it
/// has an origin of its own.
impl Clone for SeatHistory {
    fn clone(&self) -> SeatHistory {
        SeatHistory {
            view: self.view.clone(),
            sequence: self.sequence.clone(),
            origin: next_origin(),
        }
    }
}

/// Two histories are equal when they hold the same messages and ids, whatever their origins.
impl PartialEq for SeatHistory {
    fn eq(&self, other: &SeatHistory) -> bool {
        self.view == other.view && self.sequence == other.sequence
    }
}

impl SeatHistory {
    /// A history holding the seat's system prompt alone.
    pub fn new(system_prompt: impl Into<String>) -> SeatHistory {
        SeatHistory {
            view: vec![Message::new(MessageRole::System, system_prompt.into())],
            sequence: Some(Vec::new()),
            origin: next_origin(),
        }
    }

    /// Which history this is: a number no other history in the process has (a copy gets its
    /// own). A history only grows, so a reader that saw its view under the same origin before
    /// may take the messages it saw as unchanged (the Python chat converts only the new ones).
    /// Never written anywhere: records, exports and prompts do not depend on it.
    pub fn origin(&self) -> u64 {
        self.origin
    }

    /// The chat messages the seat's model is sent.
    pub fn view(&self) -> &[Message] {
        &self.view
    }

    /// The seat's exact token sequence so far: its calls' prompt suffixes and sampled ids, in
    /// order; `None` if one of its calls had no token ids.
    pub fn token_sequence(&self) -> Option<&[u32]> {
        self.sequence.as_deref()
    }

    /// A message the environment sends the seat (a counterpart's move, a turn prompt, a
    /// correction).
    pub(crate) fn push_user(&mut self, text: impl Into<String>) {
        self.view.push(Message::new(MessageRole::User, text.into()));
    }

    /// The seat's own reply ([`own_message`]), after the brief a narrated seat's narrator was
    /// sent for it ([`crate::narration`]: the narrator read it before it wrote, and its next
    /// call extends this one); a reply with tool calls is followed by the answer to each call
    /// (chat APIs expect one per call before the next message): `error` for a turn that could
    /// not be used, else `ok`.
    pub(crate) fn push_own(&mut self, reply: Reply<'_>, error: Option<&str>) {
        if let Some(brief) = reply.brief {
            self.push_user(brief);
        }
        let own = own_message(reply.text, reply.tool_calls);
        let answers: Vec<Message> = own
            .tool_calls
            .iter()
            .map(|call| Message::tool_result(call.id.clone(), error.unwrap_or("ok")))
            .collect();
        self.view.push(own);
        self.view.extend(answers);
    }

    /// Extend the token sequence with one call's ids (its prompt suffix, then what it
    /// sampled); a call without ids ends the sequence for good.
    pub(crate) fn push_tokens(&mut self, tokens: Option<&TurnTokens>) {
        match (self.sequence.as_mut(), tokens) {
            (Some(ids), Some(tokens)) => {
                ids.extend_from_slice(&tokens.prompt_ids);
                ids.extend_from_slice(&tokens.completion_ids);
            }
            _ => self.sequence = None,
        }
    }
}

/// A seat's reply as its history takes it: the brief a narrator was sent for it, if any,
/// then the text and tool calls of the completion.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reply<'a> {
    pub brief: Option<&'a str>,
    pub text: &'a str,
    pub tool_calls: &'a [ToolCall],
}

impl<'a> Reply<'a> {
    /// The reply of `completion`.
    pub(crate) fn of(completion: &'a crate::game::Completion) -> Reply<'a> {
        Reply {
            brief: completion.narration.as_ref().map(|n| n.brief.as_str()),
            text: &completion.text,
            tool_calls: &completion.tool_calls,
        }
    }

    /// A reply that is text alone.
    #[cfg(test)]
    pub(crate) fn text(text: &'a str) -> Reply<'a> {
        Reply {
            brief: None,
            text,
            tool_calls: &[],
        }
    }
}

/// A seat's own turn as its history keeps it: an assistant message of the completion's
/// [`visible_text`], with the tool calls it made.
pub fn own_message(text: &str, tool_calls: &[ToolCall]) -> Message {
    Message {
        tool_calls: tool_calls.to_vec(),
        ..Message::new(MessageRole::Assistant, visible_text(text))
    }
}

/// What a seat's own message looks like in its history: the completion without any `<think>`
/// block (chat templates drop reasoning from earlier turns too), and without any text before a
/// lone `</think>` (a template that opened the block in the prompt), trimmed. The protocol's
/// `Thought:` part stays: the model wrote it in its reply and reads it back in its history.
/// Exports write a seat's own turns with this rule, so they show what the engine kept.
pub fn visible_text(text: &str) -> String {
    static THINK: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?is)<think>.*?</think>|^.*?</think>").expect("static regex")
    });
    // Both ways of the pattern need a `<`: most replies (the labelled spelling) have none, and
    // are not scanned for it.
    if !text.contains('<') {
        return text.trim().to_string();
    }
    THINK.replace_all(text, "").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seats_own_reply_is_kept_without_its_reasoning() {
        let mut h = SeatHistory::new("sys");
        h.push_own(
            Reply::text(
                "<think>my budget is 40</think>\nThought: t\nTalk: hi\nAction: [REJECT_DEAL]  ",
            ),
            None,
        );
        assert_eq!(
            h.view()[1].content,
            "Thought: t\nTalk: hi\nAction: [REJECT_DEAL]"
        );
        assert!(!h.view()[1].content.contains("budget"));
    }

    #[test]
    fn a_copy_is_another_history_with_the_same_messages() {
        let mut h = SeatHistory::new("sys");
        h.push_user("hello");
        let copy = h.clone();
        assert_eq!(copy, h);
        assert_ne!(copy.origin(), h.origin());
        let origin = h.origin();
        h.push_user("more");
        assert_eq!(h.origin(), origin, "a history keeps its origin as it grows");
    }

    #[test]
    fn a_call_without_token_ids_ends_the_sequence_for_good() {
        let mut h = SeatHistory::new("sys");
        let call = TurnTokens {
            prompt_ids: vec![1, 2],
            completion_ids: vec![3],
            ..TurnTokens::default()
        };
        h.push_tokens(Some(&call));
        assert_eq!(h.token_sequence(), Some(&[1, 2, 3][..]));
        h.push_tokens(None);
        h.push_tokens(Some(&call));
        assert_eq!(h.token_sequence(), None);
    }
}
