//! The `hotel` family's generator: price-chasing calls built from the structure the REPO paper
//! describes (§3; its data is production data and not public), deterministic from a seed.
//!
//! What is the paper's: a call holds one or more chase tickets, each a room type on a date; each
//! ticket has a selling price users see and the take-home price the hotel receives, an ideal
//! target price `a` and an acceptable price `b` with `a < b`; success is agreement at or below
//! `b`; the hotel has reasons of its own (occupancy, competitors). Magnitudes follow Table 1's
//! and Table 3's examples (asks of 40–152 RMB, a second ask 6–9 % above the first).
//!
//! What is ours (the book's `families/hotel.md` lists them): 1–4 tickets per call (25/35/25/15 %),
//! a current selling price U{60..320}, a commission per hotel U[10 %, 20 %] giving every
//! take-home price, the target at U[0.78, 0.90] of the current price, the acceptable price at
//! U[1.04, 1.10] of the target (below the current price), the hotel's floor at U[0.75, 1.0) of
//! the current price, occupancy U[0.2, 0.95] and a competitor at U[0.80, 1.05] of the current
//! price, and the room, date and hotel names.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::protocol::TicketSpec;
use crate::scenario::{
    BdTicket, DealSpace, Family, HotelTicket, PricePair, PublicInfo, Scenario, SCENARIO_SCHEMA,
};

const ROOMS: [&str; 10] = [
    "Comfort King Room",
    "Special Offer Twin Room",
    "Deluxe Room",
    "Special Offer King Room",
    "Standard Single Room",
    "E-sports King Room",
    "Family Room",
    "Business Twin Room",
    "Superior Double Room",
    "Economy Room",
];
const DATES: [&str; 6] = [
    "today",
    "tomorrow",
    "this Friday",
    "this Saturday",
    "this Sunday",
    "next Monday",
];
const PLACES: [&str; 10] = [
    "Riverside",
    "Garden View",
    "Lakeside",
    "Old Town",
    "Harbour",
    "Maple",
    "Sunrise",
    "Station Square",
    "Hillcrest",
    "Jade Gate",
];
const KINDS: [(&str, &str); 5] = [
    ("Hotel", "budget"),
    ("Boutique Hotel", "boutique"),
    ("E-sports Hotel", "e-sports"),
    ("Business Hotel", "business"),
    ("Inn", "budget"),
];

/// Round to whole currency units, as the paper's prices are.
fn whole(x: f64) -> f64 {
    x.round()
}

/// The shipped file's seed and count (`scenarios/hotel.jsonl`).
pub(crate) const SEED: u64 = 26;
pub(crate) const COUNT: usize = 600;

/// Generate `count` calls from `seed`. The same seed and count give the same file.
pub(crate) fn generate(count: usize, seed: u64) -> Vec<Scenario> {
    (0..count).map(|i| call(seed, i)).collect()
}

fn call(seed: u64, index: usize) -> Scenario {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index as u64);
    let n = match rng.random_range(0..100) {
        0..25 => 1,
        25..60 => 2,
        60..85 => 3,
        _ => 4,
    };
    let (kind, category) = KINDS[rng.random_range(0..KINDS.len())];
    let name = format!("{} {kind}", PLACES[rng.random_range(0..PLACES.len())]);
    let commission: f64 = rng.random_range(0.10..0.20);
    let take_home = |selling: f64| whole(selling * (1.0 - commission));
    let mut tickets = Vec::with_capacity(n);
    let mut bd = Vec::with_capacity(n);
    let mut hotel = Vec::with_capacity(n);
    for k in 0..n {
        // A room type and date not already on the call; the same room may come on two dates.
        let (room, date) = loop {
            let room = ROOMS[rng.random_range(0..ROOMS.len())];
            let date = DATES[rng.random_range(0..DATES.len())];
            if !tickets
                .iter()
                .any(|t: &TicketSpec| t.room == room && t.date == date)
            {
                break (room, date);
            }
        };
        let selling = f64::from(rng.random_range(60u32..=320));
        let target = whole(selling * rng.random_range(0.78..0.90));
        let acceptable = whole(target * rng.random_range(1.04..1.10)).min(selling - 1.0);
        let floor = whole(selling * rng.random_range(0.75..1.0));
        let occupancy: f64 = (rng.random_range(0.2..0.95f64) * 100.0).round() / 100.0;
        let competitor = whole(selling * rng.random_range(0.80..1.05));
        // The hotel's own reason, in its words: the figures themselves are told beside it.
        // Each word of it agrees with the figures: "slow" under half booked, "steady" from
        // half up, "cheaper next door" only where the competitor's price is below the room's.
        let reason = if occupancy >= 0.8 {
            format!("The {room} is nearly full for {date}, so there is little reason to cut it.")
        } else {
            let pace = if occupancy < 0.5 { "slow" } else { "steady" };
            let nearby = match competitor.total_cmp(&selling) {
                std::cmp::Ordering::Less => "and guests can see the cheaper room next door",
                std::cmp::Ordering::Equal => {
                    "and the hotel next door sells a similar room for the same price"
                }
                std::cmp::Ordering::Greater => "but you are already cheaper than the hotels nearby",
            };
            format!("Bookings for this room are {pace}, {nearby}.")
        };
        tickets.push(TicketSpec {
            key: format!("t{}", k + 1),
            room: room.to_string(),
            date: date.to_string(),
            selling,
            take_home: take_home(selling),
        });
        bd.push(BdTicket {
            target: PricePair {
                selling: target,
                take_home: take_home(target),
            },
            acceptable: PricePair {
                selling: acceptable,
                take_home: take_home(acceptable),
            },
        });
        hotel.push(HotelTicket {
            floor,
            occupancy,
            competitor,
            reason,
        });
    }
    Scenario {
        schema: SCENARIO_SCHEMA,
        id: format!("hotel:{seed}:{index}"),
        family: Family::Hotel,
        split: Some(if index % 5 == 4 { "test" } else { "train" }.to_string()),
        source: format!("generated: dealgym hotel generator, seed {seed}, call {index}"),
        public: PublicInfo {
            title: name,
            category: Some(category.to_string()),
            description: String::new(),
        },
        game: DealSpace::Tickets { tickets, bd, hotel },
        no_deal_value: 0.0,
        flags: Vec::new(),
        human: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::validate;

    #[test]
    fn generation_is_deterministic_valid_and_spans_one_to_four_tickets() {
        let a = generate(300, 26);
        assert_eq!(a, generate(300, 26));
        assert_ne!(a, generate(300, 27));
        let mut sizes = [0usize; 5];
        for s in &a {
            validate(s).unwrap_or_else(|e| panic!("{}: {e:?}", s.id));
            let DealSpace::Tickets { tickets, .. } = &s.game else {
                panic!("a hotel call plays tickets")
            };
            sizes[tickets.len()] += 1;
        }
        assert_eq!(sizes[0], 0);
        assert!(sizes[1..].iter().all(|&n| n > 20), "{sizes:?}");
    }
}
