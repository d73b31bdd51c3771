//! `rule:NAME`: a built-in time-dependent concession negotiator for every domain.
//!
//! It reads the scenario from its own side only (its own private block and the public space)
//! and the offer on the table, and writes a normal completion that the engine parses.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::concession::{Stance, Tactic};
use super::speech::speak;
use super::TurnContext;
use crate::scenario::Role;

/// Stances already built, by (scenario id, role, reservation bits): enumerating a Job Interview
/// outcome space takes longer than the rest of a turn, and a seat needs it every turn.
type StanceCache = Mutex<HashMap<(String, Role, u64), Arc<Stance>>>;

/// A rule-based player: a concession tactic.
#[derive(Debug, Clone)]
pub struct RulePlayer {
    pub tactic: Tactic,
    cache: Arc<StanceCache>,
}

impl RulePlayer {
    pub fn new(tactic: Tactic) -> Self {
        RulePlayer {
            tactic,
            cache: Arc::default(),
        }
    }

    pub fn complete(&self, ctx: &TurnContext<'_>) -> String {
        let me = &ctx.setup.seats[ctx.seat];
        let space = ctx.scenario.term_space();
        let stance = self.stance(ctx, me.role, me.floor);
        let offer = ctx.counter_offer.map(|t| t.flipped(space));
        let decision = stance.decide(
            self.tactic,
            ctx.own_moves,
            ctx.setup.rules.max_rounds,
            offer.as_ref(),
            &ctx.own_offers,
        );
        speak(&decision, space, me.format, ctx.own_moves)
    }

    fn stance(&self, ctx: &TurnContext<'_>, role: Role, reserve: f64) -> Arc<Stance> {
        let key = (ctx.scenario.id.clone(), role, reserve.to_bits());
        if let Some(found) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return found.clone();
        }
        let stance = Arc::new(Stance::from_scenario(ctx.scenario, role, reserve));
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= 4096 {
            cache.clear();
        }
        cache.insert(key, stance.clone());
        stance
    }
}
