//! The scripted parties of an n-party table, one per incentive, proposing by their own score
//! tables: what sits at the seats a model does not fill. Two policies, by spec:
//!
//! - `rule:deliberation` ([`Scripted::Strong`], the baseline a model must beat): a cooperative
//!   party builds support in the open. In its rounds it accepts the offer with the widest public
//!   support that it can live with (at or above its minimum), unless its acceptance would close
//!   the deal before the final proposal; with nothing to accept it proposes, among the deals it
//!   can live with, the one the others most likely accept by what they have proposed and
//!   accepted so far (a deal a party supported counts as certain; any other, by its nearest
//!   supported deal's share of matching issues, to the 8th power; a party that supported nothing
//!   yet, one half), ties to its lower own score. The lead accepts nothing in the rounds (its
//!   acceptance is its final proposal) and, in the final slot, proposes the deal it can live
//!   with that the most parties have supported — the veto parties and the quorum first —, then
//!   by the same estimate. Every party votes for a final proposal at or above its own minimum.
//!   The other incentives play as the naive party does.
//! - `rule:deliberation-naive` ([`Scripted::Naive`], the policy `rule:deliberation` named until
//!   the strong one; the mock endpoint's):
//!   - cooperative: concedes from its best score toward its minimum over the rounds, proposes
//!     the deal at its current target closest to the latest other proposal, and accepts any
//!     proposal at or above its minimum (so a deal often closes before the final proposal).
//!   - greedy: concedes half as far and accepts only what reaches its current target.
//!   - untargeted adversarial: proposes its best deals and accepts nothing.
//!   - targeted adversarial: proposes deals at its minimum or above that are as far as possible
//!     from what the others proposed, and accepts nothing.
//!
//!   The lead opens with the game's initial deal and, in the final slot, proposes the offer that
//!   the most parties accepted among those at or above its minimum (with its bonus), else its
//!   own target deal.
//!
//! Both read only what their seat may know ([`TableKnowledge`]): their own scores and minimum,
//! the game's public rules, the public offers (their ids, who proposed and who accepted each)
//! and what their turn asks. The naive policy answers as the `rule:` player (from the episode,
//! through `TableKnowledge::of`) and as the mock endpoint (from the prompt's text).

use crate::scenario::Incentive;

/// The player spec of the strong scripted party: what a table seat not played by a model plays.
pub const SCRIPTED_SPEC: &str = "rule:deliberation";
/// The player spec of the naive scripted party (what `rule:deliberation` played before the
/// strong policy; records of that time name `rule:deliberation` and replay from their
/// completions, whatever the policy now).
pub const NAIVE_SPEC: &str = "rule:deliberation-naive";

/// Which scripted party plays a seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scripted {
    /// `rule:deliberation`: the strong baseline (see the module's doc).
    Strong,
    /// `rule:deliberation-naive`: the naive party.
    Naive,
}

impl Scripted {
    /// The scripted party a player spec names, if it names one.
    pub fn from_spec(spec: &str) -> Option<Scripted> {
        match spec.trim() {
            SCRIPTED_SPEC => Some(Scripted::Strong),
            NAIVE_SPEC => Some(Scripted::Naive),
            _ => None,
        }
    }

    /// Its player spec, as records name it.
    pub fn spec(self) -> &'static str {
        match self {
            Scripted::Strong => SCRIPTED_SPEC,
            Scripted::Naive => NAIVE_SPEC,
        }
    }

    /// Its completion for `seat`, whose turn it is in `episode`.
    pub fn turn(self, episode: &TableEpisode, seat: usize) -> String {
        let k = TableKnowledge::of(episode, seat);
        match self {
            Scripted::Naive => table_turn(&k),
            Scripted::Strong => Deliberator::of(episode, seat, k).turn(),
        }
    }

    /// [`Scripted::turn`] as the table asks its seats to write: at a table played through
    /// tools, the move as one call of the table's tools, the thought beside it (as a two-party
    /// rule player acts through tools).
    pub fn completion(self, episode: &TableEpisode, seat: usize) -> crate::game::Completion {
        let text = self.turn(episode, seat);
        if episode.setup().format != crate::protocol::TurnFormat::Tools {
            return crate::game::Completion::from(text.as_str());
        }
        let id = format!("call_{}", episode.turns().len());
        let (thought, call) =
            crate::table::as_table_tool_turn(&episode.scenario().issues, &text, id);
        crate::game::Completion {
            text: thought,
            tool_calls: vec![call],
            ..crate::game::Completion::default()
        }
    }
}
use crate::table::{SlotKind, TableEpisode};

/// An offer as every party saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct SeenOffer {
    pub id: u32,
    pub mine: bool,
    pub deal: Vec<usize>,
    /// Parties that accepted it publicly (its proposer not counted).
    pub accepted_by: usize,
    /// This seat accepted it.
    pub accepted_by_me: bool,
}

/// What one seat knows when it moves.
#[derive(Debug, Clone, PartialEq)]
pub struct TableKnowledge {
    /// The issue keys (`A`, `B`, …), for writing deals.
    pub keys: Vec<String>,
    /// Its own points per option, one row per issue.
    pub scores: Vec<Vec<i64>>,
    pub minimum: i64,
    /// Points the agreement rule adds for this seat (the lead's bonus), else 0.
    pub bonus: i64,
    pub incentive: Incentive,
    pub slot: SlotKind,
    /// Rounds per party of the schedule.
    pub rounds: u32,
    pub initial_deal: Vec<usize>,
    pub offers: Vec<SeenOffer>,
    /// The lead's final proposal, once made.
    pub final_offer: Option<u32>,
}

impl TableKnowledge {
    /// What `seat` knows in `episode` now.
    pub(crate) fn of(episode: &TableEpisode, seat: usize) -> TableKnowledge {
        let s = episode.scenario();
        let party = &s.parties[seat];
        let bonus = match &s.rules.agreement {
            crate::scenario::AgreementRule::Quorum { lead_bonus, .. } if s.lead() == Some(seat) => {
                *lead_bonus
            }
            _ => 0,
        };
        TableKnowledge {
            keys: s.issues.iter().map(|i| i.key.clone()).collect(),
            scores: party.private.scores.clone(),
            minimum: party.private.minimum,
            bonus,
            incentive: party.incentive,
            slot: episode
                .slot()
                .map_or(SlotKind::Round { round: 1 }, |s| s.kind),
            rounds: s.rules.schedule.rounds(),
            initial_deal: s.initial_deal.clone(),
            // An offer of a party that has left cannot be accepted: it is no longer on the table.
            offers: episode
                .offers()
                .iter()
                .filter(|o| episode.present()[o.proposer])
                .map(|o| SeenOffer {
                    id: o.id,
                    mine: o.proposer == seat,
                    deal: o.deal.clone(),
                    accepted_by: o.acceptors.len().saturating_sub(1),
                    accepted_by_me: o.proposer != seat && o.acceptors.contains(&seat),
                })
                .collect(),
            final_offer: episode.final_offer().map(|o| o.id),
        }
    }

    fn score(&self, deal: &[usize]) -> i64 {
        deal.iter()
            .zip(&self.scores)
            .map(|(&o, row)| row.get(o).copied().unwrap_or(0))
            .sum()
    }

    fn best(&self) -> i64 {
        self.scores
            .iter()
            .map(|r| r.iter().copied().max().unwrap_or(0))
            .sum()
    }

    fn render(&self, deal: &[usize]) -> String {
        deal.iter()
            .zip(&self.keys)
            .map(|(o, k)| format!("{k}{}", o + 1))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Every deal, in a fixed order (the last issue varying fastest).
    fn all_deals(&self) -> Vec<Vec<usize>> {
        let mut all = vec![Vec::new()];
        for row in &self.scores {
            all = all
                .into_iter()
                .flat_map(|d| {
                    (0..row.len().max(1)).map(move |o| {
                        let mut d = d.clone();
                        d.push(o);
                        d
                    })
                })
                .collect();
        }
        all
    }

    /// The score this seat aims for now.
    fn target(&self) -> i64 {
        let round = match self.slot {
            SlotKind::Round { round } => round,
            SlotKind::Opening => 0,
            SlotKind::Final | SlotKind::Vote => self.rounds,
        };
        let reach = match self.incentive {
            Incentive::Cooperative => 1.0,
            Incentive::Greedy => 0.5,
            Incentive::UntargetedAdv | Incentive::TargetedAdv => 0.0,
        };
        let t = f64::from(round) / f64::from(self.rounds.max(1));
        let span = (self.best() - self.minimum).max(0) as f64;
        (self.best() as f64 - reach * t * span).round() as i64
    }

    fn accepts(&self, deal: &[usize]) -> bool {
        let v = self.score(deal) + self.bonus;
        match self.incentive {
            Incentive::Cooperative => v >= self.minimum,
            Incentive::Greedy => v >= self.minimum.max(self.target()),
            Incentive::UntargetedAdv | Incentive::TargetedAdv => false,
        }
    }

    /// The deal to propose: at the target (and the minimum) or above, closest to the latest
    /// other proposal (an adversary: farthest from the others'), ties to the higher score.
    fn proposal(&self) -> Vec<usize> {
        let floor = self.target().max(self.minimum - self.bonus);
        let others: Vec<&SeenOffer> = self.offers.iter().filter(|o| !o.mine).collect();
        let distance = |a: &[usize], b: &[usize]| a.iter().zip(b).filter(|(x, y)| x != y).count();
        let all = self.all_deals();
        let mut candidates: Vec<&Vec<usize>> =
            all.iter().filter(|d| self.score(d) >= floor).collect();
        if candidates.is_empty() {
            let best = all.iter().map(|d| self.score(d)).max().unwrap_or(0);
            candidates = all.iter().filter(|d| self.score(d) == best).collect();
        }
        let pick = match self.incentive {
            Incentive::TargetedAdv => candidates.into_iter().max_by_key(|d| {
                let far: usize = others.iter().map(|o| distance(d, &o.deal)).sum();
                (far, self.score(d))
            }),
            Incentive::UntargetedAdv => candidates.into_iter().max_by_key(|d| self.score(d)),
            Incentive::Cooperative | Incentive::Greedy => match others.last() {
                Some(latest) => candidates
                    .into_iter()
                    .min_by_key(|d| (distance(d, &latest.deal), std::cmp::Reverse(self.score(d)))),
                None => candidates.into_iter().max_by_key(|d| self.score(d)),
            },
        };
        pick.cloned().unwrap_or_else(|| self.initial_deal.clone())
    }
}

/// A scripted party's completion: its thought, talk and action.
fn line(thought: &str, talk: &str, action: String) -> String {
    format!("Thought: {thought}\nTalk: {talk}\nAction: {action}")
}

/// The turn that accepts `offer`, saying what it scores against the party's minimum: the strong
/// and the naive party's acceptance alike, `talk` its words.
fn accept_line(k: &TableKnowledge, offer: &SeenOffer, talk: &str) -> String {
    line(
        &format!(
            "Proposal #{} scores {} for me, enough against my minimum of {}.",
            offer.id,
            k.score(&offer.deal),
            k.minimum
        ),
        talk,
        crate::table::accept_line(offer.id),
    )
}

/// What a strong party reads beyond [`TableKnowledge`], all of it public: the agreement rule's
/// terms and which seats support each offer on the table (its proposer and the parties that
/// accepted it, every proposal and acceptance being played in the open).
struct Deliberator<'a> {
    k: TableKnowledge,
    seat: usize,
    /// The game, read for its public rules alone ([`crate::table::rule_met`]).
    scenario: &'a crate::scenario::TableScenario,
    parties: usize,
    lead: Option<usize>,
    /// Per offer of `k.offers`, in order, its supporters.
    support: Vec<Vec<usize>>,
}

/// The share of matching issues whose power estimates how likely a party accepts a deal near
/// one it supported.
const NEARNESS_POWER: i32 = 8;

impl<'a> Deliberator<'a> {
    fn of(episode: &'a TableEpisode, seat: usize, k: TableKnowledge) -> Deliberator<'a> {
        let s = episode.scenario();
        // The offers `TableKnowledge::of` keeps (those of parties still at the table), in order.
        let support = episode
            .offers()
            .iter()
            .filter(|o| episode.present()[o.proposer])
            .map(|o| o.acceptors.clone())
            .collect();
        Deliberator {
            k,
            seat,
            scenario: s,
            parties: s.parties.len(),
            lead: s.lead(),
            support,
        }
    }

    fn is_lead(&self) -> bool {
        self.lead == Some(self.seat)
    }

    /// The deals `party` has supported.
    fn supported_by(&self, party: usize) -> Vec<&[usize]> {
        self.k
            .offers
            .iter()
            .zip(&self.support)
            .filter(|(_, s)| s.contains(&party))
            .map(|(o, _)| o.deal.as_slice())
            .collect()
    }

    /// How likely a party that supported `known` accepts `deal` (see the module's doc).
    fn likely(known: &[&[usize]], deal: &[usize]) -> f64 {
        if known.is_empty() {
            return 0.5;
        }
        let issues = deal.len().max(1) as f64;
        let nearest = known
            .iter()
            .map(|k| k.iter().zip(deal).filter(|(a, b)| a == b).count())
            .max()
            .unwrap_or(0);
        (nearest as f64 / issues).powi(NEARNESS_POWER)
    }

    /// The deal this seat can live with that the others most likely accept, ties to the lower
    /// score for itself, then to the first in [`TableKnowledge::all_deals`]'s order.
    fn proposal(&self) -> Vec<usize> {
        let known: Vec<(usize, Vec<&[usize]>)> = (0..self.parties)
            .filter(|&p| p != self.seat)
            .map(|p| (p, self.supported_by(p)))
            .collect();
        let mut best: Option<(f64, i64, Vec<usize>)> = None;
        for deal in self.k.all_deals() {
            if !self.k.accepts(&deal) {
                continue;
            }
            let likely: f64 = known.iter().map(|(_, k)| Self::likely(k, &deal)).sum();
            let own = self.k.score(&deal);
            if best
                .as_ref()
                .is_none_or(|(l, o, _)| likely > *l || (likely == *l && own < *o))
            {
                best = Some((likely, own, deal));
            }
        }
        best.map_or_else(|| self.k.proposal(), |(_, _, d)| d)
    }

    /// The lead's final proposal: the deal it can live with that the most parties supported,
    /// one whose supporters with the lead make the quorum and hold every veto first, then by
    /// [`Deliberator::likely`] summed over the others.
    fn final_proposal(&self) -> Vec<usize> {
        let known: Vec<(usize, Vec<&[usize]>)> = (0..self.parties)
            .filter(|&p| p != self.seat)
            .map(|p| (p, self.supported_by(p)))
            .collect();
        let mut best: Option<((bool, usize), f64, Vec<usize>)> = None;
        for deal in self.k.all_deals() {
            if !self.k.accepts(&deal) {
                continue;
            }
            let sure: Vec<usize> = known
                .iter()
                .filter(|(_, k)| k.contains(&deal.as_slice()))
                .map(|(p, _)| *p)
                .chain([self.seat])
                .collect();
            let quorum = crate::table::rule_met(self.scenario, &sure);
            let rank = (quorum, sure.len());
            let likely: f64 = known.iter().map(|(_, k)| Self::likely(k, &deal)).sum();
            if best
                .as_ref()
                .is_none_or(|(r, l, _)| rank > *r || (rank == *r && likely > *l))
            {
                best = Some((rank, likely, deal));
            }
        }
        best.map_or_else(|| self.k.proposal(), |(_, _, d)| d)
    }

    /// Whether this seat's acceptance of offer `i` would make it a deal now (every supporter
    /// counting, as a strong party supports only what it can live with).
    fn would_close(&self, i: usize) -> bool {
        let mut with_me = self.support[i].clone();
        with_me.push(self.seat);
        with_me.sort_unstable();
        with_me.dedup();
        crate::table::rule_met(self.scenario, &with_me)
    }

    fn turn(&self) -> String {
        let k = &self.k;
        if k.incentive != Incentive::Cooperative {
            return table_turn(k);
        }
        match k.slot {
            SlotKind::Opening | SlotKind::Vote => table_turn(k),
            SlotKind::Final => {
                let deal = self.final_proposal();
                line(
                    &format!(
                        "My final proposal scores {} for me: the deal most parties supported.",
                        k.score(&deal)
                    ),
                    "Here is my final proposal; I hope we can all agree on it.",
                    format!("[SUBMIT_DEAL] {}", k.render(&deal)),
                )
            }
            SlotKind::Round { .. } => {
                let support = (!self.is_lead())
                    .then(|| {
                        k.offers
                            .iter()
                            .enumerate()
                            .filter(|(i, o)| {
                                !self.support[*i].contains(&self.seat)
                                    && k.accepts(&o.deal)
                                    && !self.would_close(*i)
                            })
                            .max_by_key(|(i, o)| (self.support[*i].len(), o.id))
                    })
                    .flatten();
                if let Some((_, offer)) = support {
                    return accept_line(k, offer, "I can support this proposal.");
                }
                let deal = self.proposal();
                let standing = k
                    .offers
                    .iter()
                    .zip(&self.support)
                    .any(|(o, s)| o.deal == deal && s.contains(&self.seat));
                if standing {
                    return line(
                        "My proposal is on the table with my support; I wait.",
                        "My support stands; I would like to hear from the others.",
                        "[TALK]".into(),
                    );
                }
                line(
                    &format!(
                        "I propose a deal scoring {} for me (minimum {}) that the others may accept.",
                        k.score(&deal),
                        k.minimum
                    ),
                    "Here is a proposal that I think can work.",
                    format!("[SUBMIT_DEAL] {}", k.render(&deal)),
                )
            }
        }
    }
}

/// The naive scripted party's completion (`rule:deliberation-naive`, the mock's).
pub fn table_turn(k: &TableKnowledge) -> String {
    match k.slot {
        SlotKind::Opening => line(
            &format!(
                "I open with the initial deal; it scores {} for me, my minimum is {}.",
                k.score(&k.initial_deal),
                k.minimum
            ),
            "Let me start with a first proposal for us all to consider.",
            format!("[SUBMIT_DEAL] {}", k.render(&k.initial_deal)),
        ),
        SlotKind::Vote => match k
            .final_offer
            .and_then(|id| k.offers.iter().find(|o| o.id == id))
        {
            Some(o) if k.accepts(&o.deal) => line(
                &format!(
                    "The final proposal scores {} for me, at or above my minimum of {}.",
                    k.score(&o.deal),
                    k.minimum
                ),
                "I support the final proposal.",
                crate::table::accept_line(o.id),
            ),
            _ => line(
                &format!(
                    "The final proposal does not work for me (my minimum is {}).",
                    k.minimum
                ),
                "I cannot support the final proposal.",
                "[REJECT_DEAL]".into(),
            ),
        },
        SlotKind::Final => {
            let agreed = k
                .offers
                .iter()
                .filter(|o| k.score(&o.deal) + k.bonus >= k.minimum)
                .max_by_key(|o| (o.accepted_by, k.score(&o.deal), o.id));
            let deal = agreed.map_or_else(|| k.proposal(), |o| o.deal.clone());
            line(
                &format!(
                    "My final proposal scores {} for me: the widest support I can live with.",
                    k.score(&deal)
                ),
                "Here is my final proposal; I hope we can all agree on it.",
                format!("[SUBMIT_DEAL] {}", k.render(&deal)),
            )
        }
        SlotKind::Round { .. } => {
            // The proposal with the widest support that this seat can accept and has not yet.
            let support = k
                .offers
                .iter()
                .filter(|o| !o.mine && !o.accepted_by_me && k.accepts(&o.deal))
                .max_by_key(|o| (o.accepted_by, o.id));
            if let Some(offer) = support {
                return accept_line(k, offer, "I can accept this proposal.");
            }
            let deal = k.proposal();
            let repeat = k.offers.iter().rev().find(|o| o.mine).map(|o| &o.deal) == Some(&deal)
                && k.offers.last().is_some_and(|o| o.mine);
            if repeat {
                return line(
                    &format!(
                        "Nothing new to propose at my target of {}; I wait.",
                        k.target()
                    ),
                    "My proposal stands; I would like to hear from the others.",
                    "[TALK]".into(),
                );
            }
            line(
                &format!(
                    "I propose a deal scoring {} for me (target {}, minimum {}).",
                    k.score(&deal),
                    k.target(),
                    k.minimum
                ),
                "Here is a proposal that I think can work.",
                format!("[SUBMIT_DEAL] {}", k.render(&deal)),
            )
        }
    }
}

/// The strong scripted party's completion for `seat` of `episode`.
pub fn scripted_table_turn(episode: &TableEpisode, seat: usize) -> String {
    Scripted::Strong.turn(episode, seat)
}

/// The strong scripted party's completion as the table asks its seats to write
/// ([`Scripted::completion`]).
pub fn scripted_table_completion(episode: &TableEpisode, seat: usize) -> crate::game::Completion {
    Scripted::Strong.completion(episode, seat)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::game::{Completion, OutcomeKind};
    use crate::scenario::TableScenario;
    use crate::table::tests::six_party;
    use crate::table::{TableEpisode, TableOptions, TableSetup};

    fn play(seed: u64, incentives: &[Incentive]) -> TableEpisode {
        let mut s = six_party();
        for (p, i) in s.parties.iter_mut().zip(incentives) {
            p.incentive = *i;
        }
        play_with(Scripted::Naive, Arc::new(s), seed)
    }

    fn play_with(policy: Scripted, s: Arc<TableScenario>, seed: u64) -> TableEpisode {
        let setup = TableSetup::new(&s, &TableOptions::default(), seed).unwrap();
        let mut ep = TableEpisode::new(s, setup).unwrap();
        while let Some(seat) = ep.to_move() {
            let text = policy.turn(&ep, seat);
            let step = ep.step(seat, Completion::from(text.as_str())).unwrap();
            assert!(step.error.is_none(), "{text}: {:?}", step.error);
        }
        ep
    }

    /// A built-in deliberation scenario by id.
    fn builtin(id: &str) -> Arc<TableScenario> {
        let text = crate::scenario::builtin_scenarios("deliberation").unwrap();
        let report = crate::scenario::load_table_scenarios_from_reader(
            "deliberation.jsonl",
            text.as_bytes(),
            crate::scenario::LoadOptions::default(),
        )
        .unwrap();
        Arc::new(report.scenarios.into_iter().find(|s| s.id == id).unwrap())
    }

    /// (final proposals that pass, unanimous ones) over seeds `0..episodes` of `scenario`.
    fn final_passes(policy: Scripted, scenario: &Arc<TableScenario>, episodes: u64) -> (u64, u64) {
        let (mut pass, mut unanimous) = (0, 0);
        for seed in 0..episodes {
            let ep = play_with(policy, scenario.clone(), seed);
            let m = crate::score::table_metrics(&ep, ep.outcome().unwrap());
            pass += u64::from(m.deal_final);
            unanimous += u64::from(m.unanimous_final);
        }
        (pass, unanimous)
    }

    #[test]
    fn strong_parties_pass_the_base_games_final_proposal_in_most_episodes() {
        // The baseline's claim (docs/src/guide/n-party.md): ≥ 60 % over 64 seeded episodes of
        // the base cooperative game, where the naive parties pass under a fifth.
        let base = builtin("deliberation:base:cooperative");
        let (pass, unanimous) = final_passes(Scripted::Strong, &base, 64);
        assert!(pass * 100 >= 60 * 64, "{pass} of 64 final proposals pass");
        let (naive, naive_unanimous) = final_passes(Scripted::Naive, &base, 64);
        eprintln!(
            "base game, 64 episodes: strong {pass} final ({unanimous} unanimous), naive {naive} \
             ({naive_unanimous} unanimous)"
        );
        assert!(naive < pass, "naive {naive}, strong {pass}");
    }

    #[test]
    fn a_strong_party_never_supports_a_deal_below_its_minimum() {
        let base = builtin("deliberation:base:cooperative");
        let mut mixed = (*base).clone();
        for (p, i) in mixed.parties.iter_mut().zip([
            Incentive::Greedy,
            Incentive::Cooperative,
            Incentive::UntargetedAdv,
            Incentive::Cooperative,
            Incentive::Cooperative,
            Incentive::TargetedAdv,
        ]) {
            p.incentive = i;
        }
        for scenario in [base, Arc::new(mixed)] {
            for seed in 0..16 {
                let ep = play_with(Scripted::Strong, scenario.clone(), seed);
                let mut accepted = 0;
                for t in ep.turns() {
                    assert!(t.regulation.is_none(), "seed {seed}: {:?}", t.regulation);
                    let deal = match (t.played(), t.accepts) {
                        (Some(crate::protocol::Action::Accept), Some(id)) => {
                            accepted += 1;
                            ep.offer(id).unwrap().deal.clone()
                        }
                        (Some(crate::protocol::Action::Submit(terms)), _) => {
                            TableScenario::deal_of(terms).unwrap()
                        }
                        _ => continue,
                    };
                    assert!(
                        crate::table::counts_toward(ep.scenario(), t.seat, &deal),
                        "seed {seed}: seat {} supported {deal:?} below its minimum",
                        t.seat
                    );
                }
                assert!(accepted > 0, "seed {seed}: the check saw no acceptance");
            }
        }
    }

    #[test]
    fn a_strong_partys_moves_never_read_the_others_private_scores() {
        // Every party but `seat` gets its score rows reversed and its minimum moved: replaying
        // the same public history over that scenario, `seat` must answer the same at each turn.
        let base = builtin("deliberation:base:cooperative");
        for seed in 0..4 {
            let ep = play_with(Scripted::Strong, base.clone(), seed);
            for seat in 0..base.parties.len() {
                let mut other = (*base).clone();
                for (i, p) in other.parties.iter_mut().enumerate() {
                    if i != seat {
                        p.private.scores.iter_mut().for_each(|row| row.reverse());
                        p.private.minimum -= 5;
                    }
                }
                let other = Arc::new(other);
                let setup = TableSetup::new(&other, &TableOptions::default(), seed).unwrap();
                let mut replay = TableEpisode::new(other, setup).unwrap();
                let mut compared = 0;
                for t in ep.turns() {
                    if replay.to_move() != Some(t.seat) {
                        break;
                    }
                    if t.seat == seat {
                        assert_eq!(
                            Scripted::Strong.turn(&replay, seat),
                            t.completion.text,
                            "seed {seed}, seat {seat}"
                        );
                        compared += 1;
                    }
                    replay.step(t.seat, t.completion.clone()).unwrap();
                }
                assert!(
                    compared >= 4,
                    "seed {seed}, seat {seat}: {compared} turns compared"
                );
            }
        }
    }

    #[test]
    fn cooperative_parties_reach_a_deal_every_party_can_live_with() {
        for seed in 0..10 {
            let ep = play(seed, &[Incentive::Cooperative; 6]);
            let out = ep.outcome().unwrap();
            assert_eq!(out.kind, OutcomeKind::Deal, "seed {seed}");
            let deal = out.deal.as_ref().unwrap();
            let offer = ep.offer(out.offer.unwrap()).unwrap();
            for &s in &offer.acceptors {
                assert!(crate::table::counts_toward(ep.scenario(), s, deal));
            }
        }
    }

    #[test]
    fn adversaries_never_accept_and_greedy_parties_hold_out_longer() {
        let ep = play(
            1,
            &[
                Incentive::Cooperative,
                Incentive::Cooperative,
                Incentive::UntargetedAdv,
                Incentive::TargetedAdv,
                Incentive::Greedy,
                Incentive::Cooperative,
            ],
        );
        for t in ep.turns() {
            if t.seat == 2 || t.seat == 3 {
                assert_ne!(t.played(), Some(&crate::protocol::Action::Accept));
            }
        }
        // Every proposal of a cooperative or greedy party is at or above its own minimum.
        for o in ep.offers() {
            let p = &ep.scenario().parties[o.proposer];
            if matches!(p.incentive, Incentive::Cooperative | Incentive::Greedy) {
                assert!(crate::table::counts_toward(
                    ep.scenario(),
                    o.proposer,
                    &o.deal
                ));
            }
        }
    }
}
