//! The two seats of an episode and a pair of values, one per seat.

use std::ops::{Index, IndexMut};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A seat at the table. Roles (buyer, worker, …) come from the scenario; seats are who plays.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Seat {
    Learner,
    Opponent,
}

impl Seat {
    pub const BOTH: [Seat; 2] = [Seat::Learner, Seat::Opponent];

    pub fn other(self) -> Seat {
        match self {
            Seat::Learner => Seat::Opponent,
            Seat::Opponent => Seat::Learner,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Seat::Learner => "learner",
            Seat::Opponent => "opponent",
        }
    }
}

impl std::fmt::Display for Seat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One value per seat, written `{"learner": …, "opponent": …}`.
///
/// Its schema is written out where it is used, without this comment: a pair reads more easily
/// in place than behind a reference, and the field holding it says what it is a pair of.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(inline, description = "")]
pub struct PerSeat<T> {
    pub learner: T,
    pub opponent: T,
}

impl<T> PerSeat<T> {
    pub fn new(learner: T, opponent: T) -> Self {
        PerSeat { learner, opponent }
    }

    /// Build both values from a function of the seat.
    pub fn from_fn(mut f: impl FnMut(Seat) -> T) -> Self {
        PerSeat {
            learner: f(Seat::Learner),
            opponent: f(Seat::Opponent),
        }
    }

    pub fn map<U>(&self, mut f: impl FnMut(Seat, &T) -> U) -> PerSeat<U> {
        PerSeat {
            learner: f(Seat::Learner, &self.learner),
            opponent: f(Seat::Opponent, &self.opponent),
        }
    }
}

impl<T> Index<Seat> for PerSeat<T> {
    type Output = T;
    fn index(&self, seat: Seat) -> &T {
        match seat {
            Seat::Learner => &self.learner,
            Seat::Opponent => &self.opponent,
        }
    }
}

impl<T> IndexMut<Seat> for PerSeat<T> {
    fn index_mut(&mut self, seat: Seat) -> &mut T {
        match seat {
            Seat::Learner => &mut self.learner,
            Seat::Opponent => &mut self.opponent,
        }
    }
}
