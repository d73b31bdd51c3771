//! The state text of an episode for one seat.

use crate::game::{Episode, Seat};
use crate::protocol::render_action;

/// The episode as `seat` knows it, as text: a first line `State: ` with the seat's structured
/// view ([`Episode::seat_state`](crate::game::Episode): the deal space, its own private values
/// and never the other side's, the offer on the table, the turns left, the moves legal now) as
/// one line of JSON, then `Dialogue:` and one line per move that took effect, `ROLE: talk
/// [ACTION] terms`, terms from this seat's side, and ` #act` on the seat's own moves only (a
/// label is the speaker's annotation and never reaches the other side). The same episode gives the same bytes,
/// so a value model's scores are reproducible, and a restored snapshot gives the text it had.
pub fn state_text(episode: &Episode, seat: Seat) -> String {
    let state = serde_json::to_string(&episode.seat_state(seat))
        .expect("a seat state serializes (its numbers are finite)");
    let space = episode.scenario().term_space();
    let setup = episode.setup();
    let mut text = format!("State: {state}\nDialogue:");
    for turn in episode.turns() {
        let Some(played) = &turn.played else { continue };
        let role = setup.seats[turn.seat].role.name();
        let talk = turn.parsed.talk.as_deref().unwrap_or("").trim();
        let action = render_action(played, space, turn.seat == seat);
        text.push('\n');
        text.push_str(role);
        text.push(':');
        if !talk.is_empty() {
            text.push(' ');
            text.push_str(&talk.replace('\n', " "));
        }
        text.push(' ');
        text.push_str(&action);
        if let (true, Some(act)) = (turn.seat == seat, &turn.parsed.act) {
            text.push_str(" #");
            text.push_str(act);
        }
    }
    text
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
}
