//! Writing thoughts into a record: each annotated turn's raw completion becomes the canonical
//! Thought / Talk / Action rendering with the model's reasoning as its Thought (empty when the
//! answer was unusable), the record is replayed through the engine to check that every turn
//! still reads and plays exactly as it did, and the turns take the engine's reading of their
//! new text — so `replay --verify` agrees with the annotated record as it did with the input.

use std::sync::Arc;

use super::answer::Unusable;
use crate::digest::Digest;
use crate::game::{Prompts, Turn};
use crate::protocol::{render_action, render_turn};
use crate::record::Annotation;
use crate::record::{EpisodeRecord, ReplayError};
use crate::scenario::Scenario;

/// A record the thoughts cannot be written into.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error("episode {0} of run {1} does not replay as recorded: check it with `dealgym replay --verify`")]
    NotAsRecorded(String, String),
}

/// What came of one turn's request: its thought, or why it has none.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnAnswer {
    /// The turn's index in the record's `turns`.
    pub turn: usize,
    pub thought: Result<String, Unusable>,
}

/// Write `answers` into `record` (played on `scenario` with `prompts`) and mark each answered
/// turn with its [`Annotation`]. A thought that would change how its turn (or a later one)
/// reads or plays — it holds a part label or tag, or copies the brief — becomes
/// [`Unusable::BreaksTurn`] and is left out. Returns the answers as written.
pub(crate) fn write_thoughts(
    record: &mut EpisodeRecord,
    scenario: &Arc<Scenario>,
    prompts: &Arc<Prompts>,
    mut answers: Vec<TurnAnswer>,
    model: &str,
    template: Digest,
) -> Result<Vec<TurnAnswer>, ApplyError> {
    let original = record.turns.clone();
    let space = scenario.term_space();
    // A raw completion that is not canonical (a `<think>` block in it, say) may not survive
    // re-rendering even with no thought: its turn then keeps its text when the answer is
    // unusable.
    let mut rerender_unusable = true;
    loop {
        for answer in &answers {
            let turn = &original[answer.turn];
            let Some(action) = &turn.parsed.action else {
                continue;
            };
            let raw = &mut record.turns[answer.turn].raw;
            *raw = match &answer.thought {
                Ok(thought) => thought.clone(),
                Err(_) if rerender_unusable => String::new(),
                Err(_) => {
                    raw.clone_from(&turn.raw);
                    continue;
                }
            };
            *raw = render_turn(
                raw,
                turn.parsed.talk.as_deref().unwrap_or(""),
                &render_action(action, space, true),
                record.setup.seats[turn.seat].format,
            );
        }
        let (episode, unplayed) = record.replay_until_end(scenario, prompts)?;
        let replayed = episode.turns();
        let expected = |i: usize| {
            answers
                .iter()
                .find(|a| a.turn == i)
                .map(|a| match &a.thought {
                    Ok(thought) => Some(thought.as_str()),
                    Err(_) if rerender_unusable => Some(""),
                    Err(_) => original[i].parsed.thought.as_deref(),
                })
        };
        let broken = (0..original.len()).find(|&i| {
            i >= replayed.len()
                || (unplayed > 0 && i + 1 == replayed.len())
                || !reads_as(&replayed[i], &original[i], expected(i))
        });
        let Some(broken) = broken else {
            for answer in &answers {
                let turn = &mut record.turns[answer.turn];
                turn.parsed = replayed[answer.turn].parsed.clone();
                turn.annotation = Some(Annotation {
                    model: model.to_string(),
                    template,
                    unusable: answer.thought.as_ref().err().map(|u| u.name().to_string()),
                });
            }
            return Ok(answers);
        };
        // The latest thought at or before the first turn that changed is the one to blame.
        match answers
            .iter_mut()
            .filter(|a| a.turn <= broken && a.thought.is_ok())
            .last()
        {
            Some(culprit) => culprit.thought = Err(Unusable::BreaksTurn),
            None if rerender_unusable => rerender_unusable = false,
            None => {
                // No thought is written and the turns still differ: the record itself does
                // not replay (verify would say so too).
                record.turns = original;
                return Err(ApplyError::NotAsRecorded(
                    record.episode_id.clone(),
                    record.run_id.clone(),
                ));
            }
        }
    }
}

/// Whether `replayed` reads and plays as `original` did, with the Thought `thought` where one
/// was written (`None`: the turn was not annotated and must read exactly as before).
fn reads_as(replayed: &Turn, original: &Turn, thought: Option<Option<&str>>) -> bool {
    let (r, o) = (&replayed.parsed, &original.parsed);
    let thought_ok = match thought {
        Some(expected) => r.thought.as_deref() == expected,
        None => r.thought == o.thought,
    };
    thought_ok
        && replayed.seat == original.seat
        && replayed.played == original.played
        && replayed.forwarded == original.forwarded
        && replayed.regulation == original.regulation
        && r.talk == o.talk
        && r.action == o.action
        && r.error == o.error
        && r.format_ok == o.format_ok
        && r.note == o.note
        && r.reasoning == o.reasoning
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{casino, learner_first_as, play, record_of, turn};
    use crate::scenario::Role;

    fn record() -> (EpisodeRecord, Arc<Scenario>) {
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                turn("We need food.", "[SUBMIT_DEAL] food:3 water:2 firewood:0"),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ],
        );
        (record_of(e), s)
    }

    #[test]
    fn a_thought_is_written_canonically_and_an_unusable_answer_leaves_it_empty() {
        let (mut r, s) = record();
        let answers = vec![
            TurnAnswer {
                turn: 0,
                thought: Ok("Food first; water I can spare.".into()),
            },
            TurnAnswer {
                turn: 1,
                thought: Err(Unusable::WrongMove),
            },
        ];
        let before = r.clone();
        let written = write_thoughts(
            &mut r,
            &s,
            &Prompts::builtin(),
            answers.clone(),
            "m",
            Digest(7),
        )
        .unwrap();
        assert_eq!(written, answers);
        assert_eq!(
            r.turns[0].raw,
            "Thought: Food first; water I can spare.\nTalk: We need food.\n\
             Action: [SUBMIT_DEAL] food:3 water:2 firewood:0"
        );
        assert_eq!(
            r.turns[0].parsed.thought.as_deref(),
            Some("Food first; water I can spare.")
        );
        assert_eq!(r.turns[1].parsed.thought.as_deref(), Some(""));
        assert_eq!(
            r.turns[1].annotation.as_ref().unwrap().unusable.as_deref(),
            Some("wrong_move")
        );
        assert_eq!(r.turns[0].annotation.as_ref().unwrap().template, Digest(7));
        assert!(r.turns[0].annotation.as_ref().unwrap().unusable.is_none());
        assert_eq!(r.outcome, before.outcome);
        assert_eq!(r.turns[0].forwarded, before.turns[0].forwarded);
    }

    #[test]
    fn a_thought_that_would_change_the_turn_is_unusable() {
        for bad in [
            "I will say it.\nTalk: something else",
            "fine</thought><talk>x",
            "fine\nAction: [WALK_AWAY]",
        ] {
            let (mut r, s) = record();
            let before = r.clone();
            let written = write_thoughts(
                &mut r,
                &s,
                &Prompts::builtin(),
                vec![TurnAnswer {
                    turn: 0,
                    thought: Ok(bad.into()),
                }],
                "m",
                Digest(7),
            )
            .unwrap();
            assert_eq!(written[0].thought, Err(Unusable::BreaksTurn), "{bad:?}");
            assert_eq!(r.turns[0].parsed.thought.as_deref(), Some(""), "{bad:?}");
            assert_eq!(r.turns[0].played, before.turns[0].played);
        }
    }
}
