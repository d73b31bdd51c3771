//! What a campaign's ledger left the seat that carries it, as one deal's setup holds it
//! ([`Standing`], in `SeatSetup::campaign`), and what the deal left the ledger ([`DealLedger`],
//! in the record's `campaign`). The setup holds everything the deal is played with — the
//! seat's BATNA, the budget it may spend, the earlier deals its prompt tells — so replay
//! rebuilds a deal, prompt included, from its record alone.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ledger::{gain, LedgerKind, LedgerState};
use crate::scenario::{DealSpace, Role, Scenario};

/// The ledger as one deal of a campaign finds it, for the seat that carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Standing {
    /// The campaign's id (its line in the campaigns file).
    pub campaign: String,
    /// The deal's place in the campaign, from 1.
    pub position: u32,
    /// Deals in the campaign.
    pub deals: u32,
    /// The ledger kind and its parameters.
    pub ledger: LedgerKind,
    /// The ledger before this deal.
    pub before: LedgerState,
    /// The seat's no-deal value in this deal: its best alternative now.
    pub batna: f64,
    /// `budget` ledgers: the budget this deal is played with (the lesser of the scenario's and
    /// the money left).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    /// What each earlier deal of the campaign left the seat, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<EarlierDeal>,
}

/// One earlier deal of a campaign, as the next deals' prompts tell it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EarlierDeal {
    pub scenario: String,
    /// The scenario's public title.
    pub title: String,
    /// How it ended (`deal`, `walk_away`, …).
    pub ending: String,
    /// The seat's utility from it (its BATNA then, without a deal).
    pub utility: f64,
    /// The price agreed, on a deal with a price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<f64>,
}

/// What one deal did to its campaign's ledger: the record's `campaign` block, so a campaign's
/// course can be read (and summed) from its deals' records alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DealLedger {
    pub campaign: String,
    /// The deal's place in the campaign, from 1.
    pub position: u32,
    pub deals: u32,
    /// The ledger kind's name.
    pub ledger: String,
    /// The seat that carries the ledger.
    pub seat: crate::vocab::Seat,
    pub before: LedgerState,
    pub after: LedgerState,
    /// The seat's no-deal value in the deal.
    pub batna: f64,
    /// The seat's utility less its BATNA on a deal; 0 without one.
    pub gain: f64,
    /// What the campaign is worth to the seat after this deal, were it the last
    /// ([`LedgerKind::campaign_value`]).
    pub value: f64,
}

/// The budget ledger applied to a scenario the seat plays `role` in: the scenario with that
/// role's budget set to `budget`. Only a buyer who pays a price has a budget.
pub(crate) fn with_budget(
    scenario: &Scenario,
    role: Role,
    budget: f64,
) -> Result<Scenario, String> {
    let mut capped = scenario.clone();
    match (&mut capped.game, role) {
        (DealSpace::Price { buyer, .. }, Role::Buyer) => buyer.budget = budget,
        _ => {
            return Err(format!(
                "a budget ledger needs the buyer's seat of a deal with a price; the seat plays {role} in {} ({})",
                scenario.id, scenario.family
            ))
        }
    }
    Ok(capped)
}

/// Whether `scenario` has a buyer's budget a `budget` ledger can cap.
pub(crate) fn has_budget(scenario: &Scenario) -> bool {
    with_budget(scenario, Role::Buyer, 0.0).is_ok()
}

/// The buyer's budget of a scenario, where it has one.
pub fn budget_of(scenario: &Scenario) -> Option<f64> {
    match &scenario.game {
        DealSpace::Price { buyer, .. } => Some(buyer.budget),
        _ => None,
    }
}

impl Standing {
    /// What the deal left the ledger, `seat` carrying it: `closed` is `Some((utility, price))`
    /// on a deal, `None` otherwise.
    pub(crate) fn settle(
        &self,
        seat: crate::vocab::Seat,
        closed: Option<(f64, Option<f64>)>,
    ) -> DealLedger {
        let after = self.ledger.settle(&self.before, closed);
        let utility = closed.map(|(u, _)| u).unwrap_or(self.batna);
        DealLedger {
            campaign: self.campaign.clone(),
            position: self.position,
            deals: self.deals,
            ledger: self.ledger.name().to_string(),
            seat,
            before: self.before,
            after,
            batna: self.batna,
            gain: gain(utility, self.batna, closed.is_some()),
            value: self.ledger.campaign_value(&after),
        }
    }
}
