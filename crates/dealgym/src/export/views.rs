//! The chat views of a recorded episode, for the text formats: records do not store views
//! (they grow O(n²)), so each record is replayed through the engine with the scenario and the
//! templates it was played with, and each call's prompt is cut out of the final views.

use std::sync::Arc;

use crate::game::{self, Episode, Message, Prompts, Seat, Turn};
use crate::record::EpisodeRecord;
use crate::run::ScenarioSource;

use super::ExportError;

/// A record replayed: its final views and, for every turn, how long the moving seat's view was
/// when that turn's call was made (views only grow, so that prefix is exactly what was sent).
pub(crate) struct Replayed {
    pub episode: Episode,
    /// One per recorded turn, in order.
    pub prompt_lens: Vec<usize>,
}

impl Replayed {
    /// Replay `record` with its scenario (from `scenarios`) and `prompts`, checking that the
    /// engine plays it out as recorded.
    pub fn of(
        record: &EpisodeRecord,
        scenarios: &mut ScenarioSource,
        prompts: &Arc<Prompts>,
    ) -> Result<Replayed, ExportError> {
        let scenario = scenarios.find(record)?;
        let mut prompt_lens = Vec::with_capacity(record.turns.len());
        let episode = record.replay_observing(&scenario, prompts, |episode| {
            let seat = episode.to_move().unwrap_or(Seat::Learner);
            prompt_lens.push(episode.view(seat).len());
        })?;
        let same_ending = episode.outcome().map(|o| o.kind) == Some(record.kind());
        if episode.turns().len() != record.turns.len() || !same_ending {
            return Err(ExportError::ReplayDiffers {
                episode: record.episode_id.clone(),
            });
        }
        Ok(Replayed {
            episode,
            prompt_lens,
        })
    }

    /// The messages turn `index` was sent: the moving seat's view as it was at that call.
    pub fn prompt(&self, record: &EpisodeRecord, index: usize) -> &[Message] {
        let seat = record.turns[index].seat;
        &self.episode.view(seat)[..self.prompt_lens[index]]
    }
}

/// A seat's own turn as an assistant message, as the engine keeps it in the seat's history
/// ([`game::own_message`]: the completion without its `<think>` reasoning, with its tool calls).
pub(crate) fn own_message(turn: &Turn) -> Message {
    game::own_message(&turn.raw, &turn.tool_calls)
}
