//! `rule:NAME`: a built-in time-dependent concession negotiator for every domain.
//!
//! It reads the scenario from its own side only (its own private block and the public space)
//! and the offer on the table, and writes a normal completion that the engine parses.

use std::sync::Arc;

use super::concession::{Stance, Tactic};
use super::speech::speak;
use super::TurnContext;
use crate::cache::BoundedCache;
use crate::scenario::Role;

/// Stances already built, by (scenario id, role, reservation bits): enumerating a Job Interview
/// outcome space takes longer than the rest of a turn, and a seat needs it every turn.
type StanceCache = BoundedCache<(String, Role, u64), Arc<Stance>>;

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
            cache: Arc::new(BoundedCache::new(4096)),
        }
    }

    pub fn complete(&self, ctx: &TurnContext<'_>) -> String {
        let me = &ctx.setup.seats[ctx.seat];
        let space = ctx.scenario.term_space();
        let stance = self.stance(ctx, me.role, me.floor);
        let decision = stance.decide(
            self.tactic,
            ctx.own_moves,
            ctx.setup.rules.max_rounds,
            ctx.counter_offer.as_ref(),
            &ctx.own_offers,
            ctx.sampling_seed,
        );
        speak(&decision, space, me.format, ctx.own_moves)
    }

    fn stance(&self, ctx: &TurnContext<'_>, role: Role, reserve: f64) -> Arc<Stance> {
        let key = (ctx.scenario.id.clone(), role, reserve.to_bits());
        self.cache.get_or_insert_with(key, || {
            Arc::new(Stance::from_scenario(ctx.scenario, role, reserve))
        })
    }
}
