//! Token-exact mode: the exact token ids of a call, as a record keeps them, and the one rule
//! for a seat's next prompt ids ([`NextPrompt`], [`extend`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Message, MessageRole};

/// The exact tokens of one call of a seat played in token-exact mode (`tokens = "exact"`): the
/// seat's whole sequence is the concatenation, over its turns in order, of `prompt_ids` then
/// `completion_ids` — never re-tokenized from text. A trainer's loss mask is 1 on
/// `completion_ids` (what the model sampled) and 0 on `prompt_ids` (what the environment wrote).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct TurnTokens {
    /// The prompt ids this call added after the seat's previous call: the whole rendered prompt
    /// on its first call, afterwards only the rendered suffix of the new message(s).
    pub prompt_ids: Vec<u32>,
    /// The ids the model sampled, exactly (stop strings, an EOS token, a max_tokens cut kept).
    pub completion_ids: Vec<u32>,
    /// The sampling logprob of each completion id (0.0 on a forced id, which was not sampled).
    pub logprobs: Vec<f64>,
    /// Where the ids the environment wrote after the sampled ones begin: a narrated turn's
    /// decided action line (written after the narrator's words, `force = "appended"`), whose
    /// ids follow what the narrator sampled; their logprobs are 0. A trainer's loss mask is 0 from here on. Absent: every completion id
    /// was sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forced_from: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Set when a full re-render of the conversation by the chat template does not equal the
    /// exact sequence (the template is not append-only: it drops earlier reasoning or rewrites
    /// an earlier turn). The exact ids are still what was sent and recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
}

impl TurnTokens {
    /// How many of the completion ids the model sampled: all of them, or those before
    /// [`forced_from`](Self::forced_from).
    pub fn sampled_len(&self) -> usize {
        self.forced_from.map_or(self.completion_ids.len(), |at| {
            at.min(self.completion_ids.len())
        })
    }
}

/// Where a full re-render parted from the exact sequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Drift {
    /// The first position (in the seat's whole sequence) where the two differ.
    pub at: usize,
    /// Lengths of the exact sequence and of the re-render.
    pub exact_len: usize,
    pub rerender_len: usize,
}

/// The prompt of a seat's next call in token-exact mode: the ids to add to its sequence, and
/// drift, if any. How it is found is the one rule of token-exact play, used by a model seat
/// whose server renders the chat (`llm`), by `dealgym serve`'s token-exact sessions and by the
/// Python package (which renders with the trainer's own tokenizer):
///
/// turn k+1's prompt is turn k's prompt, the ids sampled at turn k, and the ids of the new
/// message(s) only: the part of the full rendering after the conversation up to the seat's
/// last message ([`continued_prefix`]). Sampled ids are never re-tokenized. The result is
/// compared with the full re-render; where the template is not append-only (it drops earlier
/// reasoning, rewrites an earlier turn) or the sampled ids are not the canonical tokenization
/// of their text, that is reported as [`Drift`], and the exact ids are kept.
#[derive(Debug, Clone, PartialEq)]
pub struct NextPrompt {
    /// Ids added after the seat's sequence so far (the whole prompt on its first call).
    pub suffix: Vec<u32>,
    pub drift: Option<Drift>,
}

/// Sampled ids and logprobs that do not pair up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{logprobs} logprobs for {ids} completion_ids: one logprob per sampled id, or none")]
pub struct LogprobsMismatch {
    pub(crate) logprobs: usize,
    pub(crate) ids: usize,
}

impl LogprobsMismatch {
    /// Logprobs may be left out (a client that did not ask for them); if given, one per
    /// sampled id.
    pub fn check(completion_ids: &[u32], logprobs: &[f64]) -> Result<(), LogprobsMismatch> {
        if logprobs.is_empty() || logprobs.len() == completion_ids.len() {
            return Ok(());
        }
        Err(LogprobsMismatch {
            logprobs: logprobs.len(),
            ids: completion_ids.len(),
        })
    }
}

impl NextPrompt {
    /// A seat's first call: the whole rendering is the prompt.
    pub fn whole(full: Vec<u32>) -> NextPrompt {
        NextPrompt {
            suffix: full,
            drift: None,
        }
    }

    /// The record of the turn played after this prompt: what was sampled after it, with its
    /// logprobs as [`LogprobsMismatch::check`] admits them.
    pub fn sampled(
        self,
        completion_ids: Vec<u32>,
        logprobs: Vec<f64>,
        finish_reason: Option<String>,
    ) -> Result<TurnTokens, LogprobsMismatch> {
        LogprobsMismatch::check(&completion_ids, &logprobs)?;
        Ok(TurnTokens {
            prompt_ids: self.suffix,
            completion_ids,
            logprobs,
            finish_reason,
            drift: self.drift,
            forced_from: None,
        })
    }
}

/// How many of a seat's `messages` (its view now) to render continuing its own last message,
/// the rendering [`extend`] takes as `before`: up to and including that message. `None` on the
/// seat's first call (an empty `sequence`), when the whole rendering is the prompt.
pub fn continued_prefix(sequence: &[u32], messages: &[Message]) -> Option<usize> {
    if sequence.is_empty() {
        return None;
    }
    messages
        .iter()
        .rposition(|m| m.role == MessageRole::Assistant)
        .map(|last| last + 1)
}

/// The suffix for the next call, given the seat's exact `sequence`, the rendering of its
/// conversation up to its own last message (`before`, continuing that message) and the full
/// rendering with a generation prompt (`full`). Pure, so the rules are tested without a server.
pub fn extend(sequence: &[u32], before: &[u32], full: &[u32]) -> NextPrompt {
    // The sampled ids may end with the end-of-turn token the template writes after the message
    // (vLLM returns it; llama.cpp does not): it is then not written twice. Decided from the last
    // sampled id alone, so an earlier drift does not make the token appear twice.
    let sampled_eot = full.starts_with(before)
        && sequence.last().is_some()
        && full.get(before.len()) == sequence.last();
    let suffix = if full.starts_with(before) {
        let skip = before.len() + usize::from(sampled_eot);
        full[skip..].to_vec()
    } else {
        // The template rewrote the conversation: the new messages start where the two
        // renderings part; drift is reported below.
        full[common_prefix(before, full)..].to_vec()
    };
    let mut exact = sequence.to_vec();
    exact.extend_from_slice(&suffix);
    NextPrompt {
        drift: (exact != full).then(|| Drift {
            at: common_prefix(&exact, full),
            exact_len: exact.len(),
            rerender_len: full.len(),
        }),
        suffix,
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_append_only_template_extends_the_sequence_without_drift() {
        // sequence: prompt 1 2 3, sampled 7 8; before = 1 2 3 7 8 (continuing the message);
        // full = 1 2 3 7 8 | 9 10 (end of turn, new message, generation prompt).
        let p = extend(&[1, 2, 3, 7, 8], &[1, 2, 3, 7, 8], &[1, 2, 3, 7, 8, 9, 10]);
        assert_eq!(p.suffix, [9, 10]);
        assert_eq!(p.drift, None);
    }

    #[test]
    fn a_sampled_end_of_turn_token_is_not_written_twice() {
        // vLLM returns the EOS it sampled (9); the template writes it after the message too.
        let p = extend(&[1, 2, 7, 9], &[1, 2, 7], &[1, 2, 7, 9, 4, 5]);
        assert_eq!(p.suffix, [4, 5]);
        assert_eq!(p.drift, None);
    }

    #[test]
    fn after_drift_a_sampled_end_of_turn_token_is_still_not_written_twice() {
        // The seat sampled 7 8 then the end-of-turn 9; the template no longer renders 7.
        let p = extend(&[1, 2, 7, 8, 9], &[1, 2, 8], &[1, 2, 8, 9, 4]);
        assert_eq!(p.suffix, [4]);
        assert!(p.drift.is_some());
    }

    #[test]
    fn a_template_that_drops_earlier_text_is_drift_and_the_exact_ids_stay() {
        // The template no longer renders the sampled 7 (say, a think block): full = 1 2 8 | 9.
        let p = extend(&[1, 2, 7, 8], &[1, 2, 8], &[1, 2, 8, 9]);
        assert_eq!(p.suffix, [9]);
        assert_eq!(
            p.drift,
            Some(Drift {
                at: 2,
                exact_len: 5,
                rerender_len: 4
            })
        );
    }

    #[test]
    fn ids_that_are_not_the_canonical_tokenization_are_drift() {
        // The model sampled 5 6 for text the tokenizer writes as 56.
        let p = extend(&[1, 5, 6], &[1, 56], &[1, 56, 9]);
        assert_eq!(p.suffix, [9]);
        assert_eq!(p.drift.map(|d| d.at), Some(1));
    }

    #[test]
    fn the_continued_prefix_ends_at_the_seats_own_last_message() {
        let chat = [
            Message::new(MessageRole::System, "rules"),
            Message::new(MessageRole::User, "offer"),
            Message::new(MessageRole::Assistant, "counter"),
            Message::new(MessageRole::User, "no"),
        ];
        assert_eq!(
            continued_prefix(&[], &chat),
            None,
            "a first call renders it all"
        );
        assert_eq!(continued_prefix(&[1, 2], &chat), Some(3));
    }

    #[test]
    fn logprobs_pair_with_the_sampled_ids_or_are_left_out() {
        let prompt = || NextPrompt::whole(vec![1, 2]);
        let t = prompt()
            .sampled(vec![7, 8], vec![], None)
            .expect("none given");
        assert_eq!((t.prompt_ids, t.completion_ids), (vec![1, 2], vec![7, 8]));
        assert!(prompt().sampled(vec![7, 8], vec![-0.1, -0.2], None).is_ok());
        assert_eq!(
            prompt().sampled(vec![7, 8], vec![-0.1], None),
            Err(LogprobsMismatch {
                logprobs: 1,
                ids: 2
            })
        );
    }
}
