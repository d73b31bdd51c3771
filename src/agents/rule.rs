//! `rule:NAME`: a built-in time-dependent concession negotiator for every domain.
//!
//! It reads the scenario from its own side only (its own private block and the public space)
//! and the offer on the table, and writes a normal completion that the engine parses.

use super::concession::{Stance, Tactic};
use super::speech::speak;
use super::TurnContext;

/// A rule-based player: a concession tactic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RulePlayer {
    pub tactic: Tactic,
}

impl RulePlayer {
    pub fn complete(&self, ctx: &TurnContext<'_>) -> String {
        let me = &ctx.setup.seats[ctx.seat];
        let space = ctx.scenario.term_space();
        let stance = Stance::from_scenario(ctx.scenario, me.role, me.floor);
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
}
