//! The rules of an episode, each in one function: when ACCEPT is legal, what regulation does,
//! what counts as a reject loop (two rules, set apart), when the turn cap is reached.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::{Action, TermSpace, Terms, TurnError};
use crate::scenario::Scenario;

use super::episode::Turn;
use super::setup::{Continuation, Rules, Setup};
use crate::vocab::{PerSeat, Seat};

/// An offer on the table: the terms as the proposer wrote them (its own side).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offer {
    pub by: Seat,
    pub terms: Terms,
}

impl Offer {
    /// The offer's terms as `seat` reads them: the proposer's own, flipped for the other seat
    /// (item shares become `count − x`; prices and contracts read the same from both sides).
    pub(crate) fn terms_for(&self, seat: Seat, space: TermSpace<'_>) -> Terms {
        if seat == self.by {
            self.terms.clone()
        } else {
            self.terms.flipped(space)
        }
    }
}

/// A move that took effect (after regulation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    pub seat: Seat,
    pub action: Action,
}

/// The standing offer after `seat`'s move `action` took effect: a SUBMIT puts its terms up,
/// REJECT and TALK take the standing offer down. ACCEPT and WALK_AWAY end the episode and leave
/// it as it was (the deal of an ACCEPT is the offer standing before it).
pub(crate) fn standing_after(
    standing: Option<Offer>,
    seat: Seat,
    action: &Action,
) -> Option<Offer> {
    match action {
        Action::Submit(terms) => Some(Offer {
            by: seat,
            terms: terms.clone(),
        }),
        Action::Reject | Action::Talk => None,
        Action::Accept | Action::WalkAway => standing,
    }
}

/// ACCEPT is legal only when the counterpart's immediately previous action was a SUBMIT; the
/// deal is exactly that offer. Moves alternate, so the standing offer, if any, is that SUBMIT
/// (REJECT and TALK clear it).
pub(crate) fn check_accept(standing: Option<&Offer>, acceptor: Seat) -> Result<&Offer, TurnError> {
    match standing {
        Some(offer) if offer.by != acceptor => Ok(offer),
        _ => Err(TurnError::illegal(
            "[ACCEPT_DEAL] needs an offer to accept: the other side's previous move must be a [SUBMIT_DEAL]",
        )),
    }
}

/// What regulation did to a move: the move the seat made and what took effect instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RegulationEvent {
    pub original: Action,
    pub replacement: Action,
    /// The seat's utility of the deal it tried to make or accept.
    pub utility: f64,
    pub floor: f64,
}

/// A regulated seat may not accept or propose a deal worth less to it than its floor: such an
/// ACCEPT or SUBMIT becomes a REJECT_DEAL before it takes effect. Unregulated seats are free.
pub(crate) fn regulate(
    scenario: &Scenario,
    setup: &Setup,
    seat: Seat,
    action: &Action,
    standing: Option<&Offer>,
) -> Option<RegulationEvent> {
    let me = &setup.seats[seat];
    let own_terms = |action: &Action| match action {
        Action::Submit(terms) => Some(terms.clone()),
        Action::Accept => Some(standing?.terms_for(seat, scenario.term_space())),
        _ => None,
    };
    let (replacement, (utility, _)) = crate::engine::regulate(
        me.regulated,
        action,
        |action| {
            let terms = own_terms(action)?;
            Some((
                scenario.utility(me.role, &terms),
                scenario.ticket_past_line(me.role, &terms),
            ))
        },
        |&(utility, past_line)| utility < me.floor || past_line,
    )?;
    Some(RegulationEvent {
        original: action.clone(),
        replacement,
        utility,
        floor: me.floor,
    })
}

/// Which of the two reject-loop rules ended an episode (the book's `decisions/rules.md`; both end it as
/// `reject_loop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectLoop {
    /// The mover has proposed the same terms K times in a row.
    SameOffer,
    /// K rejections in a row with no proposal between them.
    Rejections,
}

impl RejectLoop {
    /// What the outcome's `detail` says of it.
    pub(crate) fn describe(self, k: u32) -> String {
        match self {
            RejectLoop::SameOffer => format!("the same terms proposed {k} times in a row"),
            RejectLoop::Rejections => format!("{k} rejections in a row without a proposal"),
        }
    }
}

/// Whether the mover's move just completed a reject loop under `rules`, and which.
///
/// - *Same offer* (`rules.reject_loop` = K): the mover's last K proposals in a row are one and
///   the same canonical terms — the CaSiNo harness's "three consecutive identical
///   `[SUBMIT_DEAL]` proposals" (§3.3.3, §4.2), the BATNA paper's "re-proposing the same terms"
///   (App. E). Its own `[TALK]` turns between them neither count nor break the run; any other
///   move of its own (a REJECT) does.
/// - *Rejections* (`rules.reject_streak` = K): the last K moves of the episode that were not
///   `[TALK]` are all REJECT_DEAL — the BATNA paper's "repeated rejections without
///   counter-offers" (App. E).
///
/// `[TALK]` is conversation (the harness's "a conversational turn with no associated
/// proposal"), never a rejection: any number of TALK turns in a row ends nothing. K = 0
/// disables a rule; the two are set apart.
pub fn reject_loop(history: &[Move], mover: Seat, rules: &Rules) -> Option<RejectLoop> {
    let not_talk = |m: &&Move| m.action != Action::Talk;
    if repeated(
        history
            .iter()
            .rev()
            .filter(|m| m.seat == mover)
            .filter(not_talk),
        rules.reject_loop,
        |m| m.action.terms().is_some(),
        |a, b| a.action.terms() == b.action.terms(),
    ) {
        return Some(RejectLoop::SameOffer);
    }
    if repeated(
        history.iter().rev().filter(not_talk),
        rules.reject_streak,
        |m| m.action == Action::Reject,
        |_, _| true,
    ) {
        return Some(RejectLoop::Rejections);
    }
    None
}

/// Whether the first `k` (≥ 1) of `moves` all pass `each` and all equal the first by `same`.
fn repeated<'a>(
    moves: impl Iterator<Item = &'a Move>,
    k: u32,
    each: impl Fn(&Move) -> bool,
    same: impl Fn(&Move, &Move) -> bool,
) -> bool {
    let mut moves = moves;
    let Some(first) = moves.next().filter(|_| k > 0) else {
        return false;
    };
    // No allocation: this runs on every move.
    each(first)
        && moves
            .take(k as usize - 1)
            .try_fold(1usize, |n, m| (each(m) && same(first, m)).then_some(n + 1))
            == Some(k as usize)
}

/// The turn cap: each seat has had `max_rounds` moves, or both together have made
/// `max_moves` (where the rules set it: a people's dialogue that stopped there). A truncation,
/// not a termination.
pub(crate) fn rounds_exhausted(moves: &PerSeat<u32>, rules: &Rules) -> bool {
    let each_had_all = moves.learner >= rules.max_rounds && moves.opponent >= rules.max_rounds;
    let all_moves_made = rules
        .max_moves
        .is_some_and(|cap| moves.learner + moves.opponent >= cap);
    each_had_all || all_moves_made
}

/// The moves both seats together may make before the turn cap ends the episode: `max_rounds`
/// each, or `max_moves` where the rules set it lower ([`rounds_exhausted`]: moves alternate, so
/// each seat reaching `max_rounds` is both together reaching twice that).
pub(crate) fn move_cap(rules: &Rules) -> u32 {
    let rounds = 2 * rules.max_rounds;
    rules.max_moves.map_or(rounds, |m| m.min(rounds))
}

/// A continuation's end (`run --continue-turns K`): the players have made `k` moves since the
/// logged prefix. `turns` are the episode's attempts so far, in order; the prefix's turns never
/// count, and neither do attempts that could not be used. A truncation, like the turn cap.
pub(crate) fn continuation_spent(continuation: Option<&Continuation>, turns: &[Turn]) -> bool {
    let Some(Continuation {
        prefix_turns,
        moves: Some(k),
    }) = continuation
    else {
        return false;
    };
    let made = turns
        .iter()
        .skip(*prefix_turns)
        .filter(|t| t.played.is_some())
        .count();
    made >= *k as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(seat: Seat, action: Action) -> Move {
        Move { seat, action }
    }

    #[test]
    fn a_submit_puts_an_offer_up_reject_and_talk_take_it_down() {
        let offer = |by| Offer {
            by,
            terms: Terms::Price(100),
        };
        let up = standing_after(None, Seat::Opponent, &Action::Submit(Terms::Price(100)));
        assert_eq!(up, Some(offer(Seat::Opponent)));
        for action in [Action::Reject, Action::Talk] {
            assert_eq!(standing_after(up.clone(), Seat::Learner, &action), None);
        }
        // A counter-offer replaces it; an ending move leaves it as it was.
        let countered =
            standing_after(up.clone(), Seat::Learner, &Action::Submit(Terms::Price(90)));
        assert_eq!(countered.map(|o| o.by), Some(Seat::Learner));
        for action in [Action::Accept, Action::WalkAway] {
            assert_eq!(standing_after(up.clone(), Seat::Learner, &action), up);
        }
    }

    #[test]
    fn accept_needs_the_counterparts_offer() {
        let offer = Offer {
            by: Seat::Opponent,
            terms: Terms::Price(100),
        };
        assert!(check_accept(Some(&offer), Seat::Learner).is_ok());
        assert!(
            check_accept(Some(&offer), Seat::Opponent).is_err(),
            "cannot accept one's own offer"
        );
        assert!(check_accept(None, Seat::Learner).is_err());
    }

    fn loops(reject_loop: u32, reject_streak: u32) -> Rules {
        Rules {
            reject_loop,
            reject_streak,
            ..rules(6, None)
        }
    }

    #[test]
    fn same_terms_k_times_by_one_seat() {
        let s = |p| mv(Seat::Learner, Action::Submit(Terms::Price(p)));
        let o = mv(Seat::Opponent, Action::Submit(Terms::Price(900)));
        let h = vec![s(500), o.clone(), s(500), o.clone(), s(500)];
        assert_eq!(
            reject_loop(&h, Seat::Learner, &loops(3, 3)),
            Some(RejectLoop::SameOffer)
        );
        let h = vec![s(500), o.clone(), s(510), o.clone(), s(500)];
        assert_eq!(reject_loop(&h, Seat::Learner, &loops(3, 3)), None);
        let h = vec![s(500), o.clone(), s(500), o.clone(), s(500)];
        assert_eq!(
            reject_loop(&h, Seat::Learner, &loops(0, 3)),
            None,
            "K = 0 disables the same-offer rule alone"
        );
    }

    #[test]
    fn talk_between_the_same_offers_neither_counts_nor_breaks_them() {
        let s = |p| mv(Seat::Learner, Action::Submit(Terms::Price(p)));
        let t = |seat| mv(seat, Action::Talk);
        let o = mv(Seat::Opponent, Action::Submit(Terms::Price(900)));
        let h = vec![s(500), o.clone(), t(Seat::Learner), o.clone(), s(500)];
        assert_eq!(reject_loop(&h, Seat::Learner, &loops(3, 3)), None);
        let h = vec![
            s(500),
            o.clone(),
            t(Seat::Learner),
            o.clone(),
            s(500),
            o.clone(),
            s(500),
        ];
        assert_eq!(
            reject_loop(&h, Seat::Learner, &loops(3, 3)),
            Some(RejectLoop::SameOffer)
        );
        // A rejection of its own breaks the run of proposals.
        let h = vec![
            s(500),
            o.clone(),
            mv(Seat::Learner, Action::Reject),
            o.clone(),
            s(500),
            o.clone(),
            s(500),
        ];
        assert_eq!(reject_loop(&h, Seat::Learner, &loops(3, 3)), None);
    }

    #[test]
    fn k_rejects_in_a_row_without_a_proposal() {
        let r = |seat| mv(seat, Action::Reject);
        let h = vec![r(Seat::Learner), r(Seat::Opponent)];
        assert_eq!(reject_loop(&h, Seat::Opponent, &loops(3, 3)), None);
        let h = vec![r(Seat::Learner), r(Seat::Opponent), r(Seat::Learner)];
        assert_eq!(
            reject_loop(&h, Seat::Learner, &loops(3, 3)),
            Some(RejectLoop::Rejections)
        );
        assert_eq!(
            reject_loop(&h, Seat::Learner, &loops(3, 0)),
            None,
            "K = 0 disables the rejection rule alone"
        );
        let h = vec![
            r(Seat::Learner),
            mv(Seat::Opponent, Action::Submit(Terms::Price(1))),
            r(Seat::Learner),
        ];
        assert_eq!(reject_loop(&h, Seat::Learner, &loops(3, 3)), None);
    }

    #[test]
    fn talk_is_no_rejection() {
        // Three (or thirty) TALK turns in a row end nothing: the bug the harness paper's XML
        // format met, where [TALK] counted as a rejection.
        let t = |seat| mv(seat, Action::Talk);
        let h: Vec<Move> = (0..30)
            .map(|i| {
                t(if i % 2 == 0 {
                    Seat::Learner
                } else {
                    Seat::Opponent
                })
            })
            .collect();
        for n in 1..=h.len() {
            let mover = h[n - 1].seat;
            assert_eq!(reject_loop(&h[..n], mover, &loops(3, 3)), None);
        }
        // TALK neither counts toward a run of rejections nor breaks one.
        let r = |seat| mv(seat, Action::Reject);
        let h = vec![r(Seat::Learner), t(Seat::Opponent), r(Seat::Learner)];
        assert_eq!(reject_loop(&h, Seat::Learner, &loops(3, 3)), None);
        let h = vec![
            r(Seat::Learner),
            t(Seat::Opponent),
            r(Seat::Learner),
            t(Seat::Opponent),
            r(Seat::Learner),
        ];
        assert_eq!(
            reject_loop(&h, Seat::Learner, &loops(3, 3)),
            Some(RejectLoop::Rejections)
        );
    }

    fn rules(max_rounds: u32, max_moves: Option<u32>) -> Rules {
        Rules {
            max_rounds,
            reject_loop: 3,
            reject_streak: 3,
            format_retries: 1,
            max_moves,
            continuation: None,
            talk: Default::default(),
        }
    }

    #[test]
    fn rounds_counted_per_seat() {
        assert!(!rounds_exhausted(&PerSeat::new(6, 5), &rules(6, None)));
        assert!(rounds_exhausted(&PerSeat::new(6, 6), &rules(6, None)));
    }

    #[test]
    fn a_move_cap_counts_both_seats_together() {
        let capped = rules(20, Some(5));
        assert!(!rounds_exhausted(&PerSeat::new(2, 2), &capped));
        assert!(rounds_exhausted(&PerSeat::new(3, 2), &capped));
        assert!(rounds_exhausted(&PerSeat::new(2, 3), &capped));
        // The per-seat cap still holds under a higher move cap.
        assert!(rounds_exhausted(&PerSeat::new(2, 2), &rules(2, Some(9))));
    }
}
