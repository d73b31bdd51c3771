//! The state text of an episode for one seat, by one rule for both kinds of episode: each
//! gives its seat's structured view and the moves that took effect as the seat was told them
//! ([`Known`]); [`state_text`] writes them.

use crate::game::{Episode, Seat};
use crate::protocol::render_action;
use crate::table::{public_move, TableEpisode};

/// One move that took effect, as a seat was told it.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenMove<'a, S> {
    /// The seat that made it.
    pub by: S,
    /// Its role's name.
    pub role: &'a str,
    /// What it said, if anything.
    pub talk: Option<&'a str>,
    /// The move as the viewing seat reads it (a two-party seat's terms from its own side, a
    /// table's public rendering of its offers).
    pub action: String,
    /// Its dialogue-act label, if it wrote one.
    pub act: Option<&'a str>,
}

/// An episode as one seat knows it: what a planner's state text is written from. The
/// two-party episode and the table implement it; [`state_text`] is the one rule over both.
pub trait Known {
    /// How the episode names a seat.
    type Seat: Copy + PartialEq;
    /// The seat's structured view as one line of JSON: the game's public state, the seat's own
    /// private values and never another seat's.
    fn known_state(&self, seat: Self::Seat) -> String;
    /// The moves that took effect, in order, as `seat` was told them.
    fn seen_moves(&self, seat: Self::Seat) -> Vec<SeenMove<'_, Self::Seat>>;
}

/// The episode as `seat` knows it, as text: a first line `State: ` with the seat's structured
/// view ([`Known::known_state`]: for a two-party seat, [`Episode::seat_state`](crate::game::Episode)
/// — the deal space, its own private values and never the other side's, the offer on the
/// table, the turns left, the moves legal now; for a table seat, the public state of the table
/// and its own scores and minimum) as one line of JSON, then `Dialogue:` and one line per move
/// that took effect, `ROLE: talk [ACTION] terms`, the move as this seat reads it, and ` #act`
/// on the seat's own moves only (a label is the speaker's annotation and never reaches the
/// other side). The same episode gives the same bytes, so a value model's scores are
/// reproducible, and a restored snapshot gives the text it had.
pub fn state_text<E: Known>(episode: &E, seat: E::Seat) -> String {
    let mut text = format!("State: {}\nDialogue:", episode.known_state(seat));
    for seen in episode.seen_moves(seat) {
        let talk = seen.talk.unwrap_or("").trim();
        text.push('\n');
        text.push_str(seen.role);
        text.push(':');
        if !talk.is_empty() {
            text.push(' ');
            text.push_str(&talk.replace('\n', " "));
        }
        text.push(' ');
        text.push_str(&seen.action);
        if let (true, Some(act)) = (seen.by == seat, seen.act) {
            text.push_str(" #");
            text.push_str(act);
        }
    }
    text
}

impl Known for Episode {
    type Seat = Seat;

    fn known_state(&self, seat: Seat) -> String {
        serde_json::to_string(&self.seat_state(seat))
            .expect("a seat state serializes (its numbers are finite)")
    }

    fn seen_moves(&self, seat: Seat) -> Vec<SeenMove<'_, Seat>> {
        let space = self.scenario().term_space();
        let setup = self.setup();
        self.turns()
            .iter()
            .filter_map(|turn| {
                let played = turn.played.as_ref()?;
                Some(SeenMove {
                    by: turn.seat,
                    role: setup.seats[turn.seat].role.name(),
                    // Under the talk ablation the other side's Talk never reached this seat.
                    talk: turn
                        .parsed
                        .talk
                        .as_deref()
                        .filter(|_| turn.seat == seat || setup.rules.talk.is_on()),
                    action: render_action(played, space, turn.seat == seat),
                    act: turn.parsed.act.as_deref(),
                })
            })
            .collect()
    }
}

impl Known for TableEpisode {
    type Seat = usize;

    fn known_state(&self, seat: usize) -> String {
        serde_json::to_string(&crate::table::seat_knowledge(self, seat))
            .expect("a table seat's view serializes")
    }

    fn seen_moves(&self, _seat: usize) -> Vec<SeenMove<'_, usize>> {
        let scenario = self.scenario();
        self.turns()
            .iter()
            .filter_map(|turn| {
                let played = turn.played()?;
                Some(SeenMove {
                    by: turn.seat,
                    role: self.role(turn.seat),
                    talk: turn.parsed.talk.as_deref(),
                    action: public_move(scenario, played, turn.offer, turn.accepts),
                    act: turn.parsed.act.as_deref(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{price, setup_with, turn};
    use crate::game::{EpisodeConfig, FirstMover};

    #[test]
    fn the_state_text_is_the_seats_view_and_the_moves_from_its_side() {
        let s = price();
        let config = EpisodeConfig {
            first_mover: FirstMover::Learner,
            ..EpisodeConfig::default()
        };
        let mut e = Episode::new(s.clone(), setup_with(&s, &config)).unwrap();
        e.step(turn(
            "How about 120?",
            "[SUBMIT_DEAL] price:120 #init-price",
        ))
        .unwrap();
        e.step(turn("Too low.", "[SUBMIT_DEAL] price:170")).unwrap();
        let text = state_text(&e, Seat::Learner);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("State: {"), "{text}");
        assert_eq!(lines[1], "Dialogue:");
        assert_eq!(
            lines[2],
            "buyer: How about 120? [SUBMIT_DEAL] price:120 #init-price"
        );
        assert_eq!(lines[3], "seller: Too low. [SUBMIT_DEAL] price:170");
        assert_eq!(state_text(&e, Seat::Learner), text, "deterministic");
        // The buyer's text has its budget and not the seller's cost; the seller's the reverse.
        let seller = state_text(&e, Seat::Opponent);
        assert!(lines[0].contains("\"budget\""), "{}", lines[0]);
        assert!(!lines[0].contains("\"cost\""), "{}", lines[0]);
        assert!(seller.lines().next().unwrap().contains("\"cost\""));
        // The buyer's label is its own annotation: the seller's text does not show it.
        assert_eq!(
            seller.lines().nth(2),
            Some("buyer: How about 120? [SUBMIT_DEAL] price:120")
        );
    }
    #[test]
    fn under_the_talk_ablation_a_seat_reads_its_own_talk_and_never_the_other_sides() {
        let s = price();
        let config = EpisodeConfig {
            first_mover: FirstMover::Learner,
            talk: crate::game::Talk::Off,
            ..EpisodeConfig::default()
        };
        let mut e = Episode::new(s.clone(), setup_with(&s, &config)).unwrap();
        e.step(turn("MINE-ONE", "[SUBMIT_DEAL] price:120")).unwrap();
        e.step(turn("THEIRS-ONE", "[SUBMIT_DEAL] price:170"))
            .unwrap();
        let learner = state_text(&e, Seat::Learner);
        assert!(learner.contains("MINE-ONE"), "{learner}");
        assert!(!learner.contains("THEIRS-ONE"), "{learner}");
        let opponent = state_text(&e, Seat::Opponent);
        assert!(
            opponent.contains("THEIRS-ONE") && !opponent.contains("MINE-ONE"),
            "{opponent}"
        );
    }

    #[test]
    fn a_table_seats_state_text_is_its_own_values_and_the_public_moves() {
        use crate::game::Completion;
        use crate::table::tests::six_party;
        use crate::table::{TableOptions, TableSeatKnowledge, TableSetup};
        use std::sync::Arc;

        let s = Arc::new(six_party());
        let setup = TableSetup::new(&s, &TableOptions::default(), 1).unwrap();
        let mut e = TableEpisode::new(s.clone(), setup).unwrap();
        let lead = e.to_move().unwrap();
        e.step(
            lead,
            Completion::from(
                "Thought: SECRET\nTalk: A first deal.\nAction: [SUBMIT_DEAL] A1 B1 C2 D1 E3 #propose",
            ),
        )
        .unwrap();
        let next = e.to_move().unwrap();
        e.step(
            next,
            Completion::from("Thought: SECRET\nTalk: Fine\nby me.\nAction: [ACCEPT_DEAL] #1"),
        )
        .unwrap();
        let text = state_text(&e, lead);
        let lines: Vec<&str> = text.lines().collect();
        let knows: TableSeatKnowledge =
            serde_json::from_str(lines[0].strip_prefix("State: ").expect("a state line")).unwrap();
        assert_eq!(knows.state.role, s.parties[lead].role);
        assert_eq!(knows.state.offers.len(), 1);
        assert_eq!(knows.own.minimum, s.parties[lead].private.minimum);
        assert_eq!(knows.own.scores["A1"], s.parties[lead].private.scores[0][0]);
        assert_eq!(lines[1], "Dialogue:");
        let (lead_role, next_role) = (&s.parties[lead].role, &s.parties[next].role);
        assert_eq!(
            lines[2],
            format!(
                "{lead_role}: A first deal. [SUBMIT_DEAL] proposal #1: A1 B1 C2 D1 E3 #propose"
            )
        );
        assert_eq!(
            lines[3],
            format!("{next_role}: Fine by me. [ACCEPT_DEAL] #1")
        );
        assert!(!text.contains("SECRET"), "never a thought");
        assert_eq!(state_text(&e, lead), text, "deterministic");
        // Another seat reads its own values, and not the lead's label.
        let other = state_text(&e, next);
        let knows: TableSeatKnowledge = serde_json::from_str(
            other
                .lines()
                .next()
                .unwrap()
                .strip_prefix("State: ")
                .unwrap(),
        )
        .unwrap();
        assert_eq!(knows.own.minimum, s.parties[next].private.minimum);
        assert_eq!(knows.own.scores["A1"], s.parties[next].private.scores[0][0]);
        assert!(!other.contains("#propose"), "{other}");
    }
}
