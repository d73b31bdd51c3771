//! The scripted party of an n-party table (`rule:deliberation`), one per incentive, proposing by
//! its own score table: what sits at the seats a model does not fill.
//!
//! It reads only what its seat may know ([`TableKnowledge`]): its own scores and minimum, the
//! public offers (their ids, who proposed them, how many parties accepted each) and what its turn
//! asks. The same policy answers as the `rule:` player (from the episode, through
//! `TableKnowledge::of`) and as the mock endpoint (from the prompt's text).
//!
//! - cooperative: concedes from its best score toward its minimum over the rounds, proposes the
//!   deal at its current target closest to the latest other proposal, and accepts any proposal at
//!   or above its minimum.
//! - greedy: concedes half as far and accepts only what reaches its current target.
//! - untargeted adversarial: proposes its best deals and accepts nothing.
//! - targeted adversarial: proposes deals at its minimum or above that are as far as possible from
//!   what the others proposed, and accepts nothing.
//!
//! The lead opens with the game's initial deal and, in the final slot, proposes the offer that
//! the most parties accepted among those at or above its minimum (with its bonus), else its own
//! target deal.

use crate::scenario::Incentive;

/// The player spec of the scripted party: what a table seat not played by a model plays.
pub const SCRIPTED_SPEC: &str = "rule:deliberation";
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

/// The scripted party's completion.
pub fn table_turn(k: &TableKnowledge) -> String {
    let line = |thought: &str, talk: &str, action: String| {
        format!("Thought: {thought}\nTalk: {talk}\nAction: {action}")
    };
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
                format!("[ACCEPT_DEAL] #{}", o.id),
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
                return line(
                    &format!(
                        "Proposal #{} scores {} for me, enough against my minimum of {}.",
                        offer.id,
                        k.score(&offer.deal),
                        k.minimum
                    ),
                    "I can accept this proposal.",
                    format!("[ACCEPT_DEAL] #{}", offer.id),
                );
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

/// The scripted party's completion for `seat` of `episode`.
pub fn scripted_table_turn(episode: &TableEpisode, seat: usize) -> String {
    table_turn(&TableKnowledge::of(episode, seat))
}

/// [`scripted_table_turn`] as the table asks its seats to write: at a table played through
/// tools, the move as one call of the table's tools, the thought beside it (as a two-party
/// rule player acts through tools).
pub fn scripted_table_completion(episode: &TableEpisode, seat: usize) -> crate::game::Completion {
    let text = scripted_table_turn(episode, seat);
    if episode.setup().format != crate::protocol::TurnFormat::Tools {
        return crate::game::Completion::from(text.as_str());
    }
    let id = format!("call_{}", episode.turns().len());
    let (thought, call) = crate::table::as_table_tool_turn(&episode.scenario().issues, &text, id);
    crate::game::Completion {
        text: thought,
        tool_calls: vec![call],
        ..crate::game::Completion::default()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::game::{Completion, OutcomeKind};
    use crate::table::tests::six_party;
    use crate::table::{TableEpisode, TableOptions, TableSetup};

    fn play(seed: u64, incentives: &[Incentive]) -> TableEpisode {
        let mut s = six_party();
        for (p, i) in s.parties.iter_mut().zip(incentives) {
            p.incentive = *i;
        }
        let s = Arc::new(s);
        let setup = TableSetup::new(&s, &TableOptions::default(), seed).unwrap();
        let mut ep = TableEpisode::new(s, setup).unwrap();
        while let Some(seat) = ep.to_move() {
            let text = scripted_table_turn(&ep, seat);
            let step = ep.step(seat, Completion::from(text.as_str())).unwrap();
            assert!(step.error.is_none(), "{text}: {:?}", step.error);
        }
        ep
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
