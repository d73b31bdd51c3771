//! Which replica serves a call: the routing policy (`sticky`, the default, keeps an
//! episode-seat on the replica that holds its prompt in the prefix cache; `least_loaded` is the
//! baseline it is measured against) and the choice among replicas' loads.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a pool chooses a replica for a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Routing {
    /// An episode-seat keeps the replica of its first call (moved only when that replica is
    /// taken out of rotation): its prefix cache is reused turn after turn.
    #[default]
    Sticky,
    /// Every call goes to the replica with the fewest requests in flight.
    LeastLoaded,
}

impl Routing {
    /// The name the config gives it.
    pub fn name(self) -> &'static str {
        match self {
            Routing::Sticky => "sticky",
            Routing::LeastLoaded => "least_loaded",
        }
    }
}

/// What the choice of a replica looks at, per replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Load {
    pub healthy: bool,
    /// Requests sent or waiting for a slot.
    pub in_flight: usize,
    /// Episode-seats bound to it now.
    pub seats: usize,
}

/// The replica for a call: the seat's bound replica while it is healthy, else the least-loaded
/// healthy one (fewest in flight, then fewest seats, then a tie-break drawn from `turn`, the
/// pick's number, so ties neither all land on the first replica nor fall into a lock-step
/// round); `None` when every replica is out of rotation. Pure, so the rule is tested without a
/// server.
pub(crate) fn choose(loads: &[Load], bound: Option<usize>, turn: usize) -> Option<usize> {
    if let Some(i) = bound.filter(|&i| loads.get(i).is_some_and(|l| l.healthy)) {
        return Some(i);
    }
    let tie = |i: usize| {
        let mut x = (turn as u64) << 32 ^ i as u64;
        // splitmix64's finalizer: a well-spread draw per (pick, replica).
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^ (x >> 31)
    };
    loads
        .iter()
        .enumerate()
        .filter(|(_, l)| l.healthy)
        .min_by_key(|(i, l)| (l.in_flight, l.seats, tie(*i)))
        .map(|(i, _)| i)
}
