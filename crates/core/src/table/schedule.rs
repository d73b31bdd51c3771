//! Who moves when at a table: the turn schedule, drawn once per episode from its seed.
//!
//! Alternation for two, round-robin in the game's order, or the paper's cycles (LLM-Deliberation
//! §3: the lead party opens with the initial deal, then each cycle every party speaks once in a
//! fresh random order with nobody twice in a row, and the lead closes with the final proposal).
//! After the final proposal every other party votes on it once, so the engine's own outcome says
//! whether the final proposal was agreed by explicit acceptances.

use rand::seq::SliceRandom;
use rand::Rng;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::scenario::{ScheduleSpec, TableScenario};

/// What a slot of the schedule asks of its seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SlotKind {
    /// The lead's first turn: it opens with the game's initial deal.
    Opening,
    /// An ordinary turn of round `round` (1-based).
    Round { round: u32 },
    /// The lead's final proposal.
    Final,
    /// A vote on the final proposal.
    Vote,
}

/// One turn of the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Slot {
    /// The seat that moves.
    pub seat: usize,
    #[serde(flatten)]
    pub kind: SlotKind,
}

/// The whole schedule of an episode, drawn from `rng` (the episode's).
pub(crate) fn draw_schedule(scenario: &TableScenario, rng: &mut impl Rng) -> Vec<Slot> {
    let n = scenario.parties.len();
    let seats: Vec<usize> = (0..n).collect();
    let round = |round: u32| SlotKind::Round { round };
    match &scenario.rules.schedule {
        ScheduleSpec::Alternate { rounds } | ScheduleSpec::RoundRobin { rounds } => (1..=*rounds)
            .flat_map(|r| {
                seats.iter().map(move |&seat| Slot {
                    seat,
                    kind: round(r),
                })
            })
            .collect(),
        ScheduleSpec::Cycles { rounds, lead } => {
            let lead = scenario.seat_of(lead).unwrap_or(0);
            let mut slots = vec![Slot {
                seat: lead,
                kind: SlotKind::Opening,
            }];
            for r in 1..=*rounds {
                let mut order = seats.clone();
                order.shuffle(rng);
                let previous = slots.last().map(|s| s.seat);
                if n > 1 && Some(order[0]) == previous {
                    // Nobody twice in a row: the cycle's first speaker swaps with another.
                    let with = rng.random_range(1..n);
                    order.swap(0, with);
                }
                if r == *rounds && n > 2 && order[n - 1] == lead {
                    // The lead closes with the final proposal, so it does not end the last cycle.
                    order.swap(n - 1, n - 2);
                }
                slots.extend(order.into_iter().map(|seat| Slot {
                    seat,
                    kind: round(r),
                }));
            }
            slots.push(Slot {
                seat: lead,
                kind: SlotKind::Final,
            });
            slots.extend(seats.iter().filter(|&&s| s != lead).map(|&seat| Slot {
                seat,
                kind: SlotKind::Vote,
            }));
            slots
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::six_party;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn cycles_open_and_close_with_the_lead_and_nobody_speaks_twice_in_a_row() {
        let s = six_party();
        let lead = s.lead().expect("a lead");
        for seed in 0..200 {
            let slots = draw_schedule(&s, &mut ChaCha8Rng::seed_from_u64(seed));
            assert_eq!(
                slots[0],
                Slot {
                    seat: lead,
                    kind: SlotKind::Opening
                }
            );
            let rounds: Vec<&Slot> = slots
                .iter()
                .filter(|s| matches!(s.kind, SlotKind::Round { .. }))
                .collect();
            assert_eq!(rounds.len(), 4 * 6, "seed {seed}");
            for r in 1..=4 {
                let mut cycle: Vec<usize> = rounds
                    .iter()
                    .filter(|s| s.kind == SlotKind::Round { round: r })
                    .map(|s| s.seat)
                    .collect();
                cycle.sort();
                assert_eq!(
                    cycle,
                    (0..6).collect::<Vec<_>>(),
                    "every party once per cycle"
                );
            }
            let spoken: Vec<usize> = slots
                .iter()
                .take_while(|s| s.kind != SlotKind::Vote)
                .map(|s| s.seat)
                .collect();
            assert!(
                spoken.windows(2).all(|w| w[0] != w[1]),
                "seed {seed}: {spoken:?}"
            );
            let fin = slots
                .iter()
                .position(|s| s.kind == SlotKind::Final)
                .unwrap();
            assert_eq!(slots[fin].seat, lead);
            assert_eq!(slots.len() - fin - 1, 5, "every other party votes once");
        }
    }

    #[test]
    fn the_order_comes_from_the_seed() {
        let s = six_party();
        let a = draw_schedule(&s, &mut ChaCha8Rng::seed_from_u64(7));
        let b = draw_schedule(&s, &mut ChaCha8Rng::seed_from_u64(7));
        let c = draw_schedule(&s, &mut ChaCha8Rng::seed_from_u64(8));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
