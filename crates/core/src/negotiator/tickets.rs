//! The concession negotiator on a hotel call (`hotel` family): one time-dependent price per
//! chase ticket, and `unchanged` for a ticket that cannot be won.
//!
//! Per ticket the aspiration moves from an opening price toward the side's own line with the
//! tactic's concession curve ([`Tactic::conceded`]): the agent from its target up to its
//! acceptable price, the hotel from its current selling price down to its floor. A proposal
//! takes the counterpart's price on a ticket where it is already at or past the aspiration, and
//! never goes back on a concession (a ticket's price only moves toward the line); on its last
//! move it leaves `unchanged` a ticket the counterpart holds past the side's own line (or left
//! unchanged itself), so the other tickets can still close, and where that leaves every ticket
//! unchanged it closes the call instead (`[WALK_AWAY]`). It accepts an offer with no ticket
//! past its line that is worth, summed over the tickets, at least what its aspirations are worth
//! — the price game's acceptance rule, ticket by ticket.

use crate::protocol::{format_cents, to_cents, Action, Terms, TicketSpec};
use crate::scenario::{DealSpace, Role, Scenario};

use super::concession::{Decision, Tactic};

/// How far along its curve a side must be before it gives up on a stuck ticket: its last move.
const GIVE_UP_AT: f64 = 0.99;

/// One side's view of a call, from its own block only.
#[derive(Debug, Clone, PartialEq)]
pub struct TicketStance {
    /// The agent (prices should fall) or the hotel (prices should stay high).
    pub bd: bool,
    /// Where each ticket's aspiration starts.
    pub open: Vec<f64>,
    /// Each ticket's line: the agent's acceptable price, the hotel's floor.
    pub reserve: Vec<f64>,
}

impl TicketStance {
    /// The stance of `role` on a hotel call; `None` for any other game.
    pub(crate) fn from_scenario(scenario: &Scenario, role: Role) -> Option<TicketStance> {
        let DealSpace::Tickets { tickets, bd, hotel } = &scenario.game else {
            return None;
        };
        Some(if role == Role::Bd {
            TicketStance {
                bd: true,
                open: bd.iter().map(|b| b.target.selling).collect(),
                reserve: bd.iter().map(|b| b.acceptable.selling).collect(),
            }
        } else {
            TicketStance {
                bd: false,
                open: tickets.iter().map(|t| t.selling).collect(),
                reserve: hotel.iter().map(|h| h.floor).collect(),
            }
        })
    }

    /// The worth of one ticket at `price` to this side (`price − floor` or `acceptable − price`).
    fn ticket_worth(&self, i: usize, price: f64) -> f64 {
        if self.bd {
            self.reserve[i] - price
        } else {
            price - self.reserve[i]
        }
    }

    /// Worth of terms to this side: summed over the lowered tickets.
    pub(crate) fn worth(&self, terms: &Terms) -> f64 {
        match terms {
            Terms::Tickets(prices) => prices
                .iter()
                .enumerate()
                .filter_map(|(i, p)| p.map(|c| self.ticket_worth(i, c as f64 / 100.0)))
                .sum(),
            _ => f64::NEG_INFINITY,
        }
    }

    /// Whether `cents` on ticket `i` is past this side's line.
    fn past_line(&self, i: usize, cents: i64) -> bool {
        if self.bd {
            cents > to_cents(self.reserve[i])
        } else {
            cents < to_cents(self.reserve[i])
        }
    }

    /// Whether `cents` is at or better than `aspiration` for this side.
    fn at_least(&self, cents: i64, aspiration: f64) -> bool {
        if self.bd {
            cents <= to_cents(aspiration)
        } else {
            cents >= to_cents(aspiration)
        }
    }

    /// The move after `t` own moves of `rounds`, given the counterpart's offer on the table and
    /// this side's earlier offers (see the module's rules).
    pub(crate) fn decide(
        &self,
        tactic: Tactic,
        t: u32,
        rounds: u32,
        offer: Option<&Terms>,
        own_offers: &[Terms],
    ) -> Decision {
        let conceded = tactic.conceded(t, rounds);
        let aspirations: Vec<f64> = self
            .open
            .iter()
            .zip(&self.reserve)
            .map(|(o, r)| (o + (r - o) * conceded).round())
            .collect();
        let counter: Option<&[Option<i64>]> = match offer {
            Some(Terms::Tickets(prices)) if prices.len() == self.open.len() => Some(prices),
            _ => None,
        };
        let last: Option<&[Option<i64>]> = match own_offers.last() {
            Some(Terms::Tickets(prices)) if prices.len() == self.open.len() => Some(prices),
            _ => None,
        };
        let mut prices: Vec<Option<i64>> = aspirations
            .iter()
            .enumerate()
            .map(|(i, asp)| {
                let theirs = counter.map(|c| c[i]);
                let mut own = to_cents(*asp);
                // Never back on a concession already made.
                if let Some(Some(before)) = last.map(|l| l[i]) {
                    own = if self.bd {
                        own.max(before)
                    } else {
                        own.min(before)
                    };
                }
                match theirs {
                    Some(Some(c)) if self.at_least(c, *asp) && !self.past_line(i, c) => Some(c),
                    Some(Some(c)) if self.past_line(i, c) && conceded >= GIVE_UP_AT => None,
                    Some(None) if conceded >= GIVE_UP_AT => None,
                    _ => Some(own),
                }
            })
            .collect();
        if prices.iter().all(Option::is_none) {
            return Decision {
                action: Action::WalkAway,
                aspiration: 0.0,
                offered: offer.map(|o| self.worth(o)),
            };
        }
        // Never the same terms as the last proposal while a ticket can still move: the
        // reject-loop rule would end the call on it.
        if own_offers.last() == Some(&Terms::Tickets(prices.clone())) {
            let step = if self.bd { 100 } else { -100 };
            let movable = (0..prices.len())
                .find(|&i| prices[i].is_some_and(|c| !self.past_line(i, c + step)));
            if let Some(i) = movable {
                prices[i] = prices[i].map(|c| c + step);
            }
        }
        let proposal = Terms::Tickets(prices);
        let aspiration: f64 = aspirations
            .iter()
            .enumerate()
            .map(|(i, a)| self.ticket_worth(i, *a))
            .sum();
        let offered = offer.map(|o| self.worth(o));
        let acceptable = counter.is_some_and(|c| {
            !c.iter()
                .enumerate()
                .any(|(i, p)| p.is_some_and(|cents| self.past_line(i, cents)))
                && c.iter().any(Option::is_some)
        });
        let action = match offered {
            Some(v) if acceptable && v >= aspiration.min(self.worth(&proposal)) - 1e-9 => {
                Action::Accept
            }
            _ => Action::Submit(proposal),
        };
        Decision {
            action,
            aspiration,
            offered,
        }
    }
}

/// What a built-in player says on a hotel call: room by room, every price named as a selling
/// price, no internal words and no promises (so its own turns pass the family's guardrails).
pub(crate) fn ticket_talk(action: &Action, tickets: &[TicketSpec], t: u32) -> String {
    let greeting = if t == 0 { "Hello. " } else { "" };
    match action {
        Action::Submit(Terms::Tickets(prices)) => {
            let parts: Vec<String> = tickets
                .iter()
                .zip(prices)
                .map(|(ticket, p)| match p {
                    Some(cents) => format!(
                        "the {} for {} at a selling price of {}",
                        ticket.room,
                        ticket.date,
                        format_cents(*cents)
                    ),
                    None => format!("the {} for {} left as it is", ticket.room, ticket.date),
                })
                .collect();
            format!("{greeting}How about {}?", parts.join(", and "))
        }
        Action::Accept => {
            "Agreed, the prices as you proposed them. Thank you for your time, goodbye.".into()
        }
        Action::WalkAway => {
            "Then we will leave the prices as they are today. Thank you, goodbye.".into()
        }
        _ => format!("{greeting}I cannot agree to that yet."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent() -> TicketStance {
        TicketStance {
            bd: true,
            open: vec![140.0, 90.0],
            reserve: vec![152.0, 98.0],
        }
    }

    #[test]
    fn the_agent_opens_at_its_targets_and_takes_a_lower_price_at_once() {
        let s = agent();
        let d = s.decide(Tactic::Linear, 0, 6, None, &[]);
        assert_eq!(
            d.action,
            Action::Submit(Terms::Tickets(vec![Some(14000), Some(9000)]))
        );
        // The hotel offers t1 below the target and t2 above the line: t1 is taken, t2 held.
        let offer = Terms::Tickets(vec![Some(13500), Some(12000)]);
        let d = s.decide(Tactic::Linear, 1, 6, Some(&offer), &[]);
        let Action::Submit(Terms::Tickets(p)) = d.action else {
            panic!("{:?}", d.action)
        };
        assert_eq!(p[0], Some(13500));
        assert!(p[1].is_some_and(|c| c <= 9800));
        // On its last move, a ticket the hotel holds past the line is left unchanged.
        let d = s.decide(Tactic::Linear, 5, 6, Some(&offer), &[]);
        let Action::Submit(Terms::Tickets(p)) = d.action else {
            panic!("{:?}", d.action)
        };
        assert_eq!(p, vec![Some(13500), None]);
    }

    #[test]
    fn the_agent_never_accepts_a_ticket_past_its_acceptable_price() {
        let s = agent();
        let over = Terms::Tickets(vec![Some(15300), Some(9000)]);
        let d = s.decide(Tactic::Conceder, 5, 6, Some(&over), &[]);
        assert_ne!(d.action, Action::Accept);
        let fine = Terms::Tickets(vec![Some(15200), None]);
        let d = s.decide(Tactic::Conceder, 5, 6, Some(&fine), &[]);
        assert_eq!(d.action, Action::Accept);
    }
}
