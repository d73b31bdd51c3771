//! The annotator's prompt: for one turn of a person's seat, the speaker's own brief (the system
//! prompt the engine renders for that seat), the dialogue before the turn from the speaker's
//! side (each side's Talk and the move that took effect, never a Thought) and what the person
//! then said and did, rendered with `prompts/annotate/thought.j2` (compiled in) or a
//! `--template` file.

use std::path::Path;

use serde::Serialize;

use super::answer::MAX_WORDS;
use crate::digest::{Digest, Fnv1a64};
use crate::game::{Episode, PerSeat, Seat};
use crate::protocol::{render_action, Action};
use crate::template::SingleTemplate;

/// The first line of the built-in template: what tells an annotation request apart (the mock
/// answers these with a thought).
pub const THOUGHT_MARKER: &str = "DEALGYM ANNOTATE THOUGHT";

/// The line of the built-in template that shows the person's move (the mock reads it).
pub const MOVE_TAKEN: &str = "MOVE TAKEN:";

const BUILTIN: &str = include_str!("../../../../prompts/annotate/thought.j2");

/// A compiled thought template and the fingerprint of its source.
#[derive(Debug)]
pub(crate) struct ThoughtTemplate {
    template: SingleTemplate,
    fingerprint: Digest,
}

impl ThoughtTemplate {
    /// The built-in template.
    pub fn builtin() -> ThoughtTemplate {
        ThoughtTemplate::from_source(BUILTIN.to_string()).expect("the built-in template parses")
    }

    /// The template in `path`; the error names the file.
    pub fn load(path: &Path) -> Result<ThoughtTemplate, String> {
        let source = crate::limits::read_file(path, crate::limits::MAX_TEXT_FILE)
            .map_err(|e| format!("template {}: {e}", path.display()))?;
        ThoughtTemplate::from_source(source)
            .map_err(|e| format!("template {}: {e}", path.display()))
    }

    fn from_source(source: String) -> Result<ThoughtTemplate, String> {
        let mut h = Fnv1a64::new();
        h.field(source.as_bytes());
        let fingerprint = h.finish();
        Ok(ThoughtTemplate {
            template: SingleTemplate::new(source)?,
            fingerprint,
        })
    }

    /// The digest of the template's source: what each annotated turn records and the answer
    /// cache is keyed by, so another template never reuses an answer.
    pub fn fingerprint(&self) -> Digest {
        self.fingerprint
    }

    pub fn render(&self, input: &ThoughtInput) -> Result<String, String> {
        self.template.render(input)
    }
}

/// One earlier turn as the speaker saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct SaidTurn {
    /// The speaker's own turn (else the other side's).
    pub own: bool,
    pub talk: Option<String>,
    /// The move that took effect, canonical from the speaker's side (flipped for the other
    /// side's item offers).
    #[serde(rename = "move")]
    pub moved: String,
}

/// What the template is rendered with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ThoughtInput {
    pub role: String,
    /// The speaker's own system prompt, as the engine renders it for its seat.
    pub brief: String,
    pub dialogue: Vec<SaidTurn>,
    /// What the person said in the turn.
    pub talk: Option<String>,
    /// The person's move, canonical from their side.
    #[serde(rename = "move")]
    pub moved: String,
    pub max_words: usize,
}

/// One turn to annotate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnRequest {
    /// The turn's index in the record's `turns`.
    pub turn: usize,
    pub seat: Seat,
    /// The move the person wrote, which the answer's `MOVE:` must be.
    pub taken: Action,
    pub input: ThoughtInput,
}

/// The turns of `episode` (a record replayed through the engine) played by the seats `people`
/// marks, each with its prompt input. A turn whose move did not take effect as written (none
/// was read, or regulation replaced it) is not a person's move to explain and is left out.
pub(crate) fn turn_requests(episode: &Episode, people: PerSeat<bool>) -> Vec<TurnRequest> {
    let space = episode.scenario().term_space();
    let turns = episode.turns();
    turns
        .iter()
        .enumerate()
        .filter(|(_, t)| people[t.seat])
        .filter_map(|(i, t)| {
            let taken = t.parsed.action.clone()?;
            (t.played.as_ref() == Some(&taken)).then_some((i, t, taken))
        })
        .map(|(i, t, taken)| {
            let seat = t.seat;
            let dialogue = turns[..i]
                .iter()
                .filter_map(|before| {
                    let played = before.played.as_ref()?;
                    let own = before.seat == seat;
                    Some(SaidTurn {
                        own,
                        talk: before.parsed.talk.clone(),
                        moved: render_action(played, space, own),
                    })
                })
                .collect();
            TurnRequest {
                turn: i,
                seat,
                input: ThoughtInput {
                    role: episode.setup().seats[seat].role.to_string(),
                    brief: episode.system_prompt(seat).to_string(),
                    dialogue,
                    talk: t.parsed.talk.clone(),
                    moved: render_action(&taken, space, true),
                    max_words: MAX_WORDS,
                },
                taken,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{casino, learner_first_as, play, turn};
    use crate::scenario::Role;

    #[test]
    fn the_prompt_shows_the_speakers_brief_and_side_and_never_a_thought() {
        let s = casino();
        let e = play(
            &s,
            learner_first_as(&s, Role::Agent1),
            &[
                "Thought: my secret plan\nTalk: We need food.\n\
                 Action: [SUBMIT_DEAL] food:3 water:2 firewood:0"
                    .to_string(),
                "Thought: their secret plan\nTalk: Less food for you.\n\
                 Action: [SUBMIT_DEAL] food:2 water:1 firewood:1"
                    .to_string(),
                turn("Fine.", "[ACCEPT_DEAL]"),
            ],
        );
        let requests = turn_requests(&e, PerSeat::new(true, false));
        assert_eq!(
            requests.iter().map(|r| r.turn).collect::<Vec<_>>(),
            [0, 2],
            "the learner's turns only"
        );
        let template = ThoughtTemplate::builtin();
        let first = template.render(&requests[0].input).unwrap();
        assert!(first.starts_with(THOUGHT_MARKER), "{first}");
        assert!(first.contains("the person speaks first"), "{first}");
        assert!(
            first.contains(&format!(
                "{MOVE_TAKEN} [SUBMIT_DEAL] food:3 water:2 firewood:0"
            )),
            "{first}"
        );
        let last = template.render(&requests[1].input).unwrap();
        assert!(last.contains(e.system_prompt(Seat::Learner)), "{last}");
        // Not a line of the other side's brief that is not also the speaker's: its private
        // values (priorities, reasons) never reach the prompt.
        let own = e.system_prompt(Seat::Learner);
        let private: Vec<&str> = e
            .system_prompt(Seat::Opponent)
            .lines()
            .map(str::trim)
            .filter(|l| l.len() > 3 && !own.contains(l))
            .collect();
        assert!(!private.is_empty(), "the two briefs differ");
        for line in private {
            assert!(!last.contains(line), "{line:?} leaked into\n{last}");
        }
        // The other side's offer from the speaker's side: 2/1/1 for them is 1/2/2 here.
        assert!(
            last.contains("THE OTHER SIDE: Less food for you.\n  move: [SUBMIT_DEAL] food:1 water:2 firewood:2"),
            "{last}"
        );
        assert!(last.contains("THE PERSON: We need food."), "{last}");
        assert!(
            last.contains(&format!("{MOVE_TAKEN} [ACCEPT_DEAL]")),
            "{last}"
        );
        assert!(!last.contains("secret plan"), "{last}");
        assert_ne!(template.fingerprint(), Digest(0));
    }
}
