//! `messages`: one line per seat and episode, `{"messages": [...]}` — the seat's conversation
//! exactly as its model was sent it, for conversational SFT (TRL's `SFTTrainer`, any HF chat
//! dataset). The messages are the prompt of the seat's last call (its view at that moment:
//! system prompt, the opening or the counterpart's forwarded turns, its own earlier turns,
//! corrections) followed by what it answered. The counterpart's reply to that last turn, which
//! the seat was never sent, is not included; the ending is in `outcome`.
//!
//! A seat's own turns are assistant messages holding the raw completion minus any `<think>`
//! reasoning ([`visible_text`](crate::game::visible_text)) — exactly what the engine kept in the
//! seat's history, `Thought:` part included. A server's separate `reasoning_content` was never
//! in the history and is not written.

use std::io::{self, Write};

use serde::Serialize;

use crate::game::Message;
use crate::record::EpisodeRecord;

use super::views::{own_message, Replayed};
use super::{write_line, Head};

#[derive(Serialize)]
struct Line<'a> {
    messages: Vec<Message>,
    #[serde(flatten)]
    head: &'a Head<'a>,
}

/// The seat's conversation: its last call's prompt, then its last completion.
pub fn conversation(record: &EpisodeRecord, replayed: &Replayed, head: &Head) -> Vec<Message> {
    let last = record
        .turns
        .iter()
        .rposition(|t| t.seat == head.seat)
        .expect("the caller skips seats without turns");
    let mut messages = replayed.prompt(record, last).to_vec();
    messages.push(own_message(&record.turns[last]));
    messages
}

pub fn write(
    head: &Head,
    record: &EpisodeRecord,
    replayed: &Replayed,
    out: &mut dyn Write,
) -> io::Result<usize> {
    let line = Line {
        messages: conversation(record, replayed, head),
        head,
    };
    write_line(out, &line)?;
    Ok(1)
}
