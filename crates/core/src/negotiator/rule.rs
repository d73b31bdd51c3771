//! `rule:NAME`: a built-in time-dependent concession negotiator for every domain, and the
//! position it reads.
//!
//! It reads the scenario from its own side only (its own private block and the public space)
//! and the offer on the table, and writes a normal completion that the engine parses.

use std::sync::Arc;

use super::concession::{Decision, Stance, Tactic};
use super::speech::{speak_turn, Talking};
use crate::cache::BoundedCache;
use crate::game::{Completion, Episode, Seat, Setup};
use crate::protocol::{as_tool_turn, Action, Terms, TurnFormat};
use crate::scenario::{Role, Scenario};

/// What a rule negotiator reads to make its move: the scenario and setup, its seat, the moves it
/// has made, the counterpart's offer it may accept (in its own terms), its own offers so far and
/// its sampling seed. Built from the episode by [`Position::of`]. The scenario holds both
/// sides' private blocks, as the engine needs them; a negotiator reads only its own seat's
/// (its stance reads only its role's block: `Stance::from_scenario`) and the public space.
#[derive(Debug, Clone)]
pub struct Position<'a> {
    pub scenario: &'a Scenario,
    pub setup: &'a Setup,
    pub seat: Seat,
    /// Moves this seat has made that took effect.
    pub(crate) own_moves: u32,
    /// The counterpart's offer this seat may accept now, in this seat's own terms (`None`:
    /// ACCEPT is not legal now).
    pub counter_offer: Option<Terms>,
    pub(crate) own_offers: Vec<Terms>,
    pub sampling_seed: u64,
}

impl<'a> Position<'a> {
    /// The position of `seat` in `episode`.
    pub fn of(episode: &'a Episode, seat: Seat, sampling_seed: u64) -> Position<'a> {
        Position {
            scenario: episode.scenario(),
            setup: episode.setup(),
            seat,
            own_moves: episode.moves()[seat],
            counter_offer: episode
                .offer_to_accept(seat)
                .map(|o| o.terms_for(seat, episode.scenario().term_space())),
            own_offers: episode
                .history()
                .iter()
                .filter(|m| m.seat == seat)
                .filter_map(|m| match &m.action {
                    Action::Submit(t) => Some(t.clone()),
                    _ => None,
                })
                .collect(),
            sampling_seed,
        }
    }
}

/// Stances already built, by (scenario id, role, reservation bits): enumerating a Job Interview
/// outcome space takes longer than the rest of a turn, and a seat needs it every turn.
type StanceCache = BoundedCache<(String, Role, u64), Arc<Stance>>;

/// The name (`rule:fixed-concession`) of the no-talk, fixed-concession baseline every
/// two-party eval plays (the book's `guide/eval.md`, "Baselines"): the linear tactic, which
/// concedes the same share of the way to its reservation each turn, with an empty Talk.
pub const FIXED_CONCESSION: &str = "fixed-concession";

/// A rule-based player: a concession tactic, talking or silent.
#[derive(Debug, Clone)]
pub struct RulePlayer {
    pub tactic: Tactic,
    talking: Talking,
    cache: Arc<StanceCache>,
}

impl RulePlayer {
    pub fn new(tactic: Tactic) -> Self {
        RulePlayer {
            tactic,
            talking: Talking::Spoken,
            cache: Arc::new(BoundedCache::new(4096)),
        }
    }

    /// The player `rule:NAME` names: a tactic ([`Tactic::from_name`]), or
    /// [`FIXED_CONCESSION`], the linear tactic with an empty Talk. `None` for any other name.
    pub fn from_name(name: &str) -> Option<RulePlayer> {
        if name == FIXED_CONCESSION {
            return Some(RulePlayer {
                talking: Talking::Silent,
                ..RulePlayer::new(Tactic::Linear)
            });
        }
        Tactic::from_name(name).map(RulePlayer::new)
    }

    /// Whether the player leaves its Talk empty (`rule:fixed-concession`).
    pub fn is_silent(&self) -> bool {
        self.talking == Talking::Silent
    }

    /// The player's turn: text in the seat's spelling, or one tool call (with the Thought
    /// beside it) for a seat that acts through tools.
    pub fn complete(&self, ctx: &Position<'_>) -> Completion {
        let me = &ctx.setup.seats[ctx.seat];
        let stance = self.stance(ctx, me.role, me.floor);
        let decision = stance.decide(
            self.tactic,
            ctx.own_moves,
            ctx.setup.rules.max_rounds,
            ctx.counter_offer.as_ref(),
            &ctx.own_offers,
            ctx.sampling_seed,
        );
        write_move(ctx, &decision, self.talking)
    }

    fn stance(&self, ctx: &Position<'_>, role: Role, reserve: f64) -> Arc<Stance> {
        let key = (ctx.scenario.id.clone(), role, reserve.to_bits());
        self.cache.get_or_insert_with(key, || {
            Arc::new(Stance::from_scenario(ctx.scenario, role, reserve))
        })
    }
}

/// The completion of `decision` for the seat of `ctx`, as a model in that seat would write it:
/// text in the seat's spelling, with the dialogue-act label where the seat is asked for one,
/// or one tool call (with the Thought beside it) for a seat that acts through tools. The one
/// home of how a decided move is written: the rule players' turns and the oracle's probes
/// (`score::oracle`) go through it.
pub(crate) fn write_move(ctx: &Position<'_>, decision: &Decision, talking: Talking) -> Completion {
    let me = &ctx.setup.seats[ctx.seat];
    let space = ctx.scenario.term_space();
    let labels = if me.acts {
        crate::scenario::acts::labels(ctx.scenario.family)
    } else {
        Vec::new()
    };
    // Only a seat asked for labels reads the offer its move answers (not every turn).
    let act = if labels.is_empty() {
        None
    } else {
        let opening = ctx.scenario.opening_terms();
        let reference = crate::scenario::acts::ina_reference(
            ctx.counter_offer.as_ref(),
            ctx.own_offers.last(),
            opening.as_ref(),
        );
        crate::scenario::acts::label_for_move(&labels, &decision.action, &ctx.own_offers, reference)
    };
    let text = speak_turn(decision, space, me.format, ctx.own_moves, act, talking);
    if me.format != TurnFormat::Tools {
        return Completion::from(text);
    }
    let (thought, call) = as_tool_turn(&text, space, format!("call_{}", ctx.own_moves));
    Completion {
        text: thought,
        tool_calls: vec![call],
        ..Completion::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{price, setup_with};
    use crate::game::{EpisodeConfig, FirstMover};
    use crate::protocol::parse;

    /// The baseline concedes exactly as `rule:linear` does, turn by turn, with an empty Talk
    /// that still reads as a well-formed turn.
    #[test]
    fn fixed_concession_is_linear_concession_without_talk() {
        let s = price();
        let config = EpisodeConfig {
            first_mover: FirstMover::Learner,
            ..EpisodeConfig::default()
        };
        let baseline = RulePlayer::from_name(FIXED_CONCESSION).unwrap();
        let linear = RulePlayer::from_name("linear").unwrap();
        assert!(baseline.is_silent() && !linear.is_silent());
        assert!(RulePlayer::from_name("chatty").is_none());
        let mut e = Episode::new(s.clone(), setup_with(&s, &config)).unwrap();
        let mut moves = 0;
        while let Some(seat) = e.to_move() {
            let pos = Position::of(&e, seat, 1);
            let (silent, spoken) = (baseline.complete(&pos), linear.complete(&pos));
            let read = parse(&silent.text, s.term_space(), None);
            assert!(read.format_ok, "{}", silent.text);
            assert_eq!(read.talk.as_deref().unwrap_or(""), "");
            let spoken_read = parse(&spoken.text, s.term_space(), None);
            assert_eq!(read.action, spoken_read.action, "the same concession");
            assert!(!spoken_read.talk.unwrap_or_default().is_empty());
            e.step(silent).unwrap();
            moves += 1;
        }
        assert!(moves >= 2);
    }
}
