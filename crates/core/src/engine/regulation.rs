//! Regulation (the book's `design/episode.md`, "Regulation"): a regulated seat may not propose
//! or accept a deal worth less to it than its floor; such a SUBMIT or ACCEPT becomes a
//! REJECT_DEAL before it takes effect. The one home of which moves are regulated and what
//! replaces them; each rulebook says what deal a move makes the seat party to and what its
//! floor measures it by (a two-party seat's utility against its floor, a table party's score
//! against its own minimum).

use crate::protocol::Action;

/// What regulation puts in place of `action`, a move of a seat whose regulation is `on`, with
/// the deal it judged: a REJECT_DEAL for a SUBMIT or ACCEPT whose deal (`deal`; `None` where
/// the move names none) is `below` the seat's floor. `None` where the move stands.
pub(crate) fn regulate<D>(
    on: bool,
    action: &Action,
    deal: impl FnOnce(&Action) -> Option<D>,
    below: impl FnOnce(&D) -> bool,
) -> Option<(Action, D)> {
    if !on || !matches!(action, Action::Submit(_) | Action::Accept) {
        return None;
    }
    let deal = deal(action)?;
    below(&deal).then_some((Action::Reject, deal))
}

/// The move of an attempt that took effect: none where the attempt could not be played
/// (`unplayable`), else the move regulation put in its place (`replacement`) or the one read.
/// The one rule for every rulebook whose turns keep what was read and what replaced it.
pub(crate) fn move_played<'a>(
    unplayable: bool,
    replacement: Option<&'a Action>,
    read: Option<&'a Action>,
) -> Option<&'a Action> {
    if unplayable {
        return None;
    }
    replacement.or(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regulated_seats_deal_below_its_floor_is_replaced() {
        let accept = Action::Accept;
        let below = |v: &i64| *v < 10;
        assert_eq!(
            regulate(true, &accept, |_| Some(5), below),
            Some((Action::Reject, 5))
        );
        assert_eq!(regulate(true, &accept, |_| Some(12), below), None);
        assert_eq!(regulate(false, &accept, |_| Some(5), below), None);
        assert_eq!(regulate(true, &Action::Talk, |_| Some(5), below), None);
        assert_eq!(regulate(true, &accept, |_| None::<i64>, below), None);
    }
}
