//! The example campaigns (`dealgym scenarios campaigns`, shipped as `scenarios/campaigns.jsonl`),
//! built from the scenario files as they are, so a campaign file never copies a scenario by
//! hand. Deterministic: the same scenario files give the same campaigns, byte for byte.
//!
//! - `job-offers-N` (best offer; a worker interviewing with three employers): Job Interview
//!   scenarios 3N, 3N+1, 3N+2 in file order.
//! - `ahp-budget-CATEGORY` (budget; three purchases of one category): for the first six
//!   categories (in file order) with three AmazonHistoryPrice scenarios, their first three, with money for half of their three budgets together
//!   (so the ledger binds: after one purchase near budget, the next budget is cut).
//! - `craigslist-quantity-N` (quantity; two units wanted from four sellers): Craigslist
//!   scenarios 4N to 4N+3, one unit a deal, each unit short costing half and each unit over a
//!   quarter of their mean listing price.
//! - `casino-best-N` (best offer over CaSiNo splits, whose points share one 36-point scale):
//!   CaSiNo scenarios 3N, 3N+1, 3N+2.

use std::sync::Arc;

use super::file::CampaignLine;
use super::ledger::{BestOffer, Budget, LedgerKind, Quantity};
use crate::scenario::{DealSpace, Family, Scenario};
use crate::vocab::Seat;

/// How many campaigns of each kind the examples hold.
const PER_KIND: usize = 6;

/// The example campaigns over `scenarios` (every family's file, in file order; a family with
/// too few scenarios gives fewer campaigns).
pub fn example_campaigns(scenarios: &[Arc<Scenario>]) -> Vec<CampaignLine> {
    let of = |family: Family| -> Vec<&Arc<Scenario>> {
        scenarios.iter().filter(|s| s.family == family).collect()
    };
    let ids = |deals: &[&Arc<Scenario>]| deals.iter().map(|s| s.id.clone()).collect();
    let mut out = Vec::new();
    for (n, deals) in of(Family::JobInterview)
        .chunks_exact(3)
        .take(PER_KIND)
        .enumerate()
    {
        out.push(CampaignLine {
            id: format!("job-offers-{n}"),
            seat: Seat::Learner,
            ledger: LedgerKind::BestOffer(BestOffer { start: 0.0 }),
            deals: ids(deals),
            description: "A worker interviewing with three employers: each offer is held, so \
                          the best so far is the next interview's BATNA."
                .into(),
        });
    }
    let ahp = of(Family::Ahp);
    let mut categories: Vec<&str> = Vec::new();
    for s in &ahp {
        let category = s.id.split(':').nth(1).unwrap_or("");
        if !categories.contains(&category) {
            categories.push(category);
        }
    }
    let mut made = 0;
    for category in categories {
        let deals: Vec<&Arc<Scenario>> = ahp
            .iter()
            .filter(|s| s.id.split(':').nth(1) == Some(category))
            .take(3)
            .copied()
            .collect();
        if deals.len() < 3 {
            continue;
        }
        if made == PER_KIND {
            break;
        }
        made += 1;
        let budgets: f64 = deals.iter().filter_map(|s| budget(s)).sum();
        out.push(CampaignLine {
            id: format!("ahp-budget-{category}"),
            seat: Seat::Learner,
            ledger: LedgerKind::Budget(Budget {
                money: (budgets / 2.0).round(),
            }),
            deals: ids(&deals),
            description: format!(
                "A buyer making three {category} purchases from one purse: what it pays is \
                 gone from the next budget."
            ),
        });
    }
    for (n, deals) in of(Family::Craigslist)
        .chunks_exact(4)
        .take(PER_KIND)
        .enumerate()
    {
        let listing: f64 = deals.iter().filter_map(|s| s.listing_price()).sum::<f64>() / 4.0;
        out.push(CampaignLine {
            id: format!("craigslist-quantity-{n}"),
            seat: Seat::Learner,
            ledger: LedgerKind::Quantity(Quantity {
                target: 2,
                lot: 1,
                shortfall_penalty: (listing / 2.0).round(),
                excess_penalty: (listing / 4.0).round(),
            }),
            deals: ids(deals),
            description: "A buyer who needs two units and talks to four sellers: a unit short \
                          and a unit too many both cost."
                .into(),
        });
    }
    for (n, deals) in of(Family::Casino)
        .chunks_exact(3)
        .take(PER_KIND)
        .enumerate()
    {
        out.push(CampaignLine {
            id: format!("casino-best-{n}"),
            seat: Seat::Learner,
            ledger: LedgerKind::BestOffer(BestOffer { start: 0.0 }),
            deals: ids(deals),
            description: "Three campsite neighbours in turn: the best split so far is what the \
                          next negotiation has to beat."
                .into(),
        });
    }
    out
}

fn budget(s: &Scenario) -> Option<f64> {
    match &s.game {
        DealSpace::Price { buyer, .. } => Some(buyer.budget),
        _ => None,
    }
}
