//! The metrics of an n-party episode: LLM-Deliberation's four (from its evaluation notebook, with
//! the agreement rule as the paper states it — see `docs/src/data/deliberation.md` for where the
//! notebook's code differs, and the runtime's `dialogues::deliberation_paper` for the notebooks'
//! own reading, used only to re-score the paper's logs) and dealgym's own over all parties
//! (Pareto, Nash product).
//!
//! The paper's metrics are read from the proposals alone, on scores: a proposal "passes" when the
//! parties that would accept it by their scores (each at or above its minimum, the lead with its
//! bonus) satisfy the game's agreement rule — whatever the parties then said. They are computed
//! the same way for played episodes and for the paper's imported logs.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::game::OutcomeKind;
use crate::protocol::Action;
use crate::scenario::TableScenario;
use crate::table::{counts_toward, is_agreed, would_accept, SlotKind, TableEpisode, TableOutcome};

/// The metrics of one n-party episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableMetrics {
    /// Full proposals made (every issue given an option).
    pub proposals: usize,
    /// A proposal of the lead passed the agreement rule on scores, at any round.
    pub deal_any: bool,
    /// The lead's final proposal passed the agreement rule on scores.
    pub deal_final: bool,
    /// Every party would accept the lead's final proposal.
    pub unanimous_final: bool,
    /// The share of proposals that break the proposer's own minimum (the lead with its bonus):
    /// the paper's "wrong" deals. Absent without proposals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrong_share: Option<f64>,
    /// The agreed deal is Pareto-optimal over all parties' scores (absent without a deal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pareto: Option<bool>,
    /// Π over the parties of (score − minimum) of the agreed deal, when every party is at or
    /// above its minimum (absent otherwise: the product of gains is not a welfare figure when
    /// a factor is negative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nash_product: Option<f64>,
}

/// The metrics of many n-party episodes summed: the one tally every surface (a run's summary,
/// the report, an eval, the imported logs' table) reads its rates and means from. `error`
/// endings are counted apart and left out of every rate and mean.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableTally {
    pub episodes: usize,
    pub errors: usize,
    pub deals: usize,
    pub deal_any: usize,
    pub deal_final: usize,
    pub unanimous_final: usize,
    /// Sum and count of the episodes' shares of rule-breaking proposals (episodes without a
    /// proposal have none).
    pub wrong_sum: f64,
    pub wrong_n: usize,
    pub pareto: usize,
    pub pareto_n: usize,
    pub nash_sum: f64,
    pub nash_n: usize,
}

impl TableTally {
    /// Add one episode: how it ended and its metrics.
    pub fn add(&mut self, kind: OutcomeKind, m: &TableMetrics) {
        self.episodes += 1;
        if kind == OutcomeKind::Error {
            self.errors += 1;
            return;
        }
        self.deals += usize::from(kind == OutcomeKind::Deal);
        self.deal_any += usize::from(m.deal_any);
        self.deal_final += usize::from(m.deal_final);
        self.unanimous_final += usize::from(m.unanimous_final);
        if let Some(w) = m.wrong_share {
            self.wrong_sum += w;
            self.wrong_n += 1;
        }
        if let Some(p) = m.pareto {
            self.pareto += usize::from(p);
            self.pareto_n += 1;
        }
        if let Some(n) = m.nash_product {
            self.nash_sum += n;
            self.nash_n += 1;
        }
    }

    /// Add another tally's episodes.
    pub fn absorb(&mut self, o: &TableTally) {
        self.episodes += o.episodes;
        self.errors += o.errors;
        self.deals += o.deals;
        self.deal_any += o.deal_any;
        self.deal_final += o.deal_final;
        self.unanimous_final += o.unanimous_final;
        self.wrong_sum += o.wrong_sum;
        self.wrong_n += o.wrong_n;
        self.pareto += o.pareto;
        self.pareto_n += o.pareto_n;
        self.nash_sum += o.nash_sum;
        self.nash_n += o.nash_n;
    }

    /// Episodes not ended by an error: what rates are over.
    pub fn scored(&self) -> usize {
        self.episodes - self.errors
    }

    /// `n` over the scored episodes (`None` without one).
    pub fn rate(&self, n: usize) -> Option<f64> {
        (self.scored() > 0).then(|| n as f64 / self.scored() as f64)
    }

    /// The mean share of rule-breaking proposals (`None` where no episode had a proposal).
    pub fn wrong_mean(&self) -> Option<f64> {
        (self.wrong_n > 0).then(|| self.wrong_sum / self.wrong_n as f64)
    }
}

/// One full proposal: who made it, the deal, and whether it is the lead's final one.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub seat: usize,
    pub deal: Vec<usize>,
    pub is_final: bool,
}

/// The paper's metrics over `proposals` (in turn order), and dealgym's on the `agreed` deal.
pub fn deliberation_metrics(
    scenario: &TableScenario,
    proposals: &[Proposal],
    agreed: Option<&[usize]>,
) -> TableMetrics {
    let lead = scenario.lead();
    let passes = |deal: &[usize]| is_agreed(scenario, deal, &would_accept(scenario, deal));
    let deal_any = proposals
        .iter()
        .any(|p| Some(p.seat) == lead && passes(&p.deal));
    let last = proposals.iter().rev().find(|p| p.is_final);
    let deal_final = last.is_some_and(|p| passes(&p.deal));
    let unanimous_final =
        last.is_some_and(|p| would_accept(scenario, &p.deal).len() == scenario.parties.len());
    let wrong = proposals
        .iter()
        .filter(|p| !counts_toward(scenario, p.seat, &p.deal))
        .count();
    let wrong_share = (!proposals.is_empty()).then(|| wrong as f64 / proposals.len() as f64);
    TableMetrics {
        proposals: proposals.len(),
        deal_any,
        deal_final,
        unanimous_final,
        wrong_share,
        pareto: agreed.map(|d| is_pareto(scenario, d)),
        nash_product: agreed.and_then(|d| nash_product(scenario, d)),
    }
}

/// The metrics of a played episode: its played proposals, the lead's proposal in the final slot,
/// and the agreed deal.
pub(crate) fn table_metrics(episode: &TableEpisode, outcome: &TableOutcome) -> TableMetrics {
    let schedule = &episode.setup().schedule;
    let proposals: Vec<Proposal> = episode
        .turns()
        .iter()
        .filter_map(|t| match t.played()? {
            Action::Submit(terms) => Some(Proposal {
                seat: t.seat,
                deal: TableScenario::deal_of(terms)?,
                is_final: schedule
                    .get(t.slot)
                    .is_some_and(|s| s.kind == SlotKind::Final),
            }),
            _ => None,
        })
        .collect();
    let agreed = match outcome.kind {
        OutcomeKind::Deal => outcome.deal.as_deref(),
        _ => None,
    };
    deliberation_metrics(episode.scenario(), &proposals, agreed)
}

/// No other deal gives every party at least as much and one party more.
pub fn is_pareto(scenario: &TableScenario, deal: &[usize]) -> bool {
    let n = scenario.parties.len();
    let mine: Vec<i64> = (0..n).map(|s| scenario.score(s, deal)).collect();
    !scenario.all_deals().any(|other| {
        let theirs: Vec<i64> = (0..n).map(|s| scenario.score(s, &other)).collect();
        theirs.iter().zip(&mine).all(|(t, m)| t >= m)
            && theirs.iter().zip(&mine).any(|(t, m)| t > m)
    })
}

/// Π (score − minimum) over the parties, when none is below its minimum.
pub fn nash_product(scenario: &TableScenario, deal: &[usize]) -> Option<f64> {
    let gains: Vec<i64> = scenario
        .parties
        .iter()
        .enumerate()
        .map(|(s, p)| scenario.score(s, deal) - p.private.minimum)
        .collect();
    gains
        .iter()
        .all(|g| *g >= 0)
        .then(|| gains.iter().map(|g| *g as f64).product())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::six_party;

    #[test]
    fn the_four_metrics_read_the_lead_and_the_final_proposal() {
        let s = six_party();
        let good = s
            .all_deals()
            .find(|d| would_accept(&s, d).len() == 6)
            .unwrap();
        let bad = s
            .all_deals()
            .find(|d| !counts_toward(&s, 2, d) && !is_agreed(&s, d, &would_accept(&s, d)))
            .unwrap();
        let p = |seat, deal: &Vec<usize>, is_final| Proposal {
            seat,
            deal: deal.clone(),
            is_final,
        };
        // The good deal proposed by a non-lead only is no deal at any round.
        let m = deliberation_metrics(&s, &[p(2, &good, false)], None);
        assert!(!m.deal_any && !m.deal_final);
        assert_eq!(m.wrong_share, Some(0.0));
        let m = deliberation_metrics(
            &s,
            &[p(0, &good, false), p(2, &bad, false), p(0, &bad, true)],
            None,
        );
        assert!(m.deal_any);
        assert!(!m.deal_final && !m.unanimous_final);
        assert_eq!(m.proposals, 3);
        let wrong = [0usize, 2, 0]
            .iter()
            .zip([&good, &bad, &bad])
            .filter(|(seat, d)| !counts_toward(&s, **seat, d))
            .count();
        assert_eq!(m.wrong_share, Some(wrong as f64 / 3.0));
        let m = deliberation_metrics(&s, &[p(0, &good, true)], Some(&good));
        assert!(m.deal_final && m.unanimous_final);
        assert_eq!(m.pareto, Some(is_pareto(&s, &good)));
        assert_eq!(m.nash_product, nash_product(&s, &good));
        let above = s
            .all_deals()
            .find(|d| (0..6).all(|p| s.score(p, d) >= s.parties[p].private.minimum))
            .expect("a deal every party is at its minimum or above on");
        let product: f64 = (0..6)
            .map(|p| (s.score(p, &above) - s.parties[p].private.minimum) as f64)
            .product();
        assert_eq!(nash_product(&s, &above), Some(product));
    }

    #[test]
    fn pareto_and_nash_over_every_party() {
        let s = six_party();
        // The deal that maximises the sum of scores is Pareto-optimal.
        let best = s
            .all_deals()
            .max_by_key(|d| (0..6).map(|p| s.score(p, d)).sum::<i64>())
            .unwrap();
        assert!(is_pareto(&s, &best));
        // A deal another dominates is not.
        let dominated = s
            .all_deals()
            .find(|d| !is_pareto(&s, d))
            .expect("some deal is dominated");
        assert!(!is_pareto(&s, &dominated));
        let below = s
            .all_deals()
            .find(|d| (0..6).any(|p| s.score(p, d) < s.parties[p].private.minimum))
            .unwrap();
        assert_eq!(nash_product(&s, &below), None);
    }
}
