//! The mock's reading of a hotel call's prompt (`prompts/_tickets.j2`): the rooms with their
//! current prices, and the seat's own line per room — the agent's target and acceptable selling
//! prices, or the hotel's floor. It then plays the same ticket-by-ticket concession as
//! `rule:NAME` (`dealgym::agents::TicketStance`).

use std::sync::LazyLock;

use regex::Regex;

use crate::negotiator::ReadGame;
use dealgym::agents::{Stance, TicketStance};
use dealgym::protocol::TicketSpec;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

static ROOM: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)^- (t\d+): (.+?), (.+?) — selling price ([0-9.]+) \(what guests pay\), take-home price ([0-9.]+)",
    )
});
static AGENT: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?m)^- (t\d+): you hope for a selling price of ([0-9.]+) \(take-home [0-9.]+\); ([0-9.]+) selling",
    )
});
static HOTEL: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?m)^- (t\d+): you will not sell below ([0-9.]+) \(selling\)"));

/// The call as the seat's prompt tells it; `None` when the rooms or the seat's lines are missing.
pub(crate) fn read_tickets(system: &str) -> Option<ReadGame> {
    let tickets: Vec<TicketSpec> = ROOM
        .captures_iter(system)
        .map(|c| {
            Some(TicketSpec {
                key: c[1].to_string(),
                room: c[2].to_string(),
                date: c[3].to_string(),
                selling: c[4].parse().ok()?,
                take_home: c[5].parse().ok()?,
            })
        })
        .collect::<Option<_>>()?;
    if tickets.is_empty() {
        return None;
    }
    let agent: Vec<(f64, f64)> = AGENT
        .captures_iter(system)
        .filter_map(|c| Some((c[2].parse().ok()?, c[3].parse().ok()?)))
        .collect();
    let stance = if agent.len() == tickets.len() {
        TicketStance {
            bd: true,
            open: agent.iter().map(|(a, _)| *a).collect(),
            reserve: agent.iter().map(|(_, b)| *b).collect(),
        }
    } else {
        let floors: Vec<f64> = HOTEL
            .captures_iter(system)
            .filter_map(|c| c[2].parse().ok())
            .collect();
        if floors.len() != tickets.len() {
            return None;
        }
        TicketStance {
            bd: false,
            open: tickets.iter().map(|t| t.selling).collect(),
            reserve: floors,
        }
    };
    Some(ReadGame::Tickets {
        tickets,
        stance: Stance::Tickets(stance),
    })
}

#[cfg(test)]
mod tests {
    use crate::negotiator::{read_prompt, ReadGame};
    use dealgym::agents::{Stance, TicketStance};
    use dealgym::game::{Episode, Seat};
    use dealgym::scenario::Role;
    use dealgym_core::fixtures::{hotel, learner_first_as};

    /// Each seat's prompt gives the mock the rooms and that seat's own lines only: the agent its
    /// targets and acceptable prices, the hotel its floors.
    #[test]
    fn each_seat_reads_the_rooms_and_its_own_lines() {
        let s = hotel();
        let e = Episode::new(s.clone(), learner_first_as(&s, Role::Bd)).unwrap();
        let read = |seat| match read_prompt(e.system_prompt(seat)).unwrap().game {
            ReadGame::Tickets { tickets, stance } => (tickets, stance),
            other => panic!("{other:?}"),
        };
        let (tickets, agent) = read(Seat::Learner);
        assert_eq!(tickets.len(), 2);
        assert_eq!(
            (tickets[0].room.as_str(), tickets[0].date.as_str()),
            ("Comfort King Room", "today")
        );
        assert_eq!((tickets[0].selling, tickets[0].take_home), (168.0, 143.0));
        assert_eq!(
            agent,
            Stance::Tickets(TicketStance {
                bd: true,
                open: vec![140.0, 97.0],
                reserve: vec![152.0, 105.0],
            })
        );
        let (_, hotel_side) = read(Seat::Opponent);
        assert_eq!(
            hotel_side,
            Stance::Tickets(TicketStance {
                bd: false,
                open: vec![168.0, 120.0],
                reserve: vec![145.0, 110.0],
            })
        );
    }
}
