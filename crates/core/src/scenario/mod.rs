//! Scenarios: what is negotiated, what each side privately knows, and what each side gets.
//!
//! A [`Scenario`] is one line of a scenario file. Its [`DealSpace`] is typed per domain — price, items,
//! issues — and holds the public space of deals and the private block of each role. Utilities
//! (what a deal is worth to a role) live in `utility.rs`; reading and checking files in `load.rs`;
//! turning the raw public datasets into scenario files in `import/`. This module does no network
//! I/O and knows nothing of episodes or players.

pub mod acts;
mod builtin;
mod bundle;
mod catalog;
mod family;
pub mod generate;
mod hotel;
pub mod import;
mod load;
pub(crate) mod market;
mod table;
mod utility;

use serde::{Deserialize, Serialize};

use crate::digest::{digest_json, Digest};
use crate::protocol::{BundleSpec, IssueSpec, ItemSpec, TermSpace, TicketSpec};

pub(crate) use acts::{catalog as act_catalog, judge_act};
pub use acts::{find_act, Act};
pub(crate) use builtin::open_scenario_file;
pub use builtin::{builtin_scenarios, scenario_file_exists, SCENARIO_DIR};
pub use bundle::{BundleSpace, BundleValues};
pub use catalog::{Catalog, Listed, UnknownScenario};
pub use family::{Domain, Family, Role};
pub use hotel::{BdTicket, HotelTicket, PricePair, TicketOutcome};
pub(crate) use load::MAX_ACCESSORIES;
pub use load::{
    load_scenarios, load_scenarios_from_reader, parse_scenario_line, validate, InvalidScenario,
    LoadOptions, LoadReport, ScenarioError,
};
pub use market::{
    is_market_file, load_market_scenarios, load_market_scenarios_from_reader, MarketFamily,
    MarketRules, MarketScenario, MarketShape, MarketVariant, Side, Trader, TraderPrivate,
    MARKET_LINE_ELSEWHERE,
};
/// The fixture file's own test reads it line by line (`table/tests.rs`).
#[cfg(test)]
pub(crate) use table::parse_table_line;
pub(crate) use table::validate_table;
pub use table::{
    is_table_file, load_table_scenarios, load_table_scenarios_from_reader, AgreementRule,
    Incentive, Party, PartyPosition, PartyPrivate, ScheduleSpec, TableFamily, TablePublic,
    TableRules, TableScenario, UnknownParty,
};
pub use utility::bargained_ratio;

/// The scenario file format version this build reads and writes.
pub const SCENARIO_SCHEMA: u32 = 1;

/// One negotiation setting, traceable to its source record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub schema: u32,
    /// `family:source-id`, e.g. `casino:548`, `craigslist:S_yC8nQMsnxCFKXoW5`, `ahp:books:3`.
    pub id: String,
    pub family: Family,
    /// The dataset's split (`train`, `valid`, `test`, …) where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// Where the scenario came from: file and record.
    pub source: String,
    /// What both sides see.
    pub public: PublicInfo,
    /// The deal space and each role's private block.
    pub game: DealSpace,
    /// What each side gets when there is no deal (default 0; CaSiNo's own rule is 5).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub no_deal_value: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<ScenarioFlag>,
    /// The outcomes people reached on this scenario in the dataset, to compare models with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub human: Vec<HumanOutcome>,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The public description of what is negotiated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublicInfo {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(default)]
    pub description: String,
}

/// The deal space of a scenario and each role's private information, per domain. Written
/// externally tagged (`"game": {"price": {…}}`) so that errors name the exact field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DealSpace {
    Price {
        /// The public listing price L.
        listing_price: f64,
        buyer: BuyerPrivate,
        seller: SellerPrivate,
    },
    Items {
        items: Vec<ItemSpec>,
        agent_1: ItemValues,
        agent_2: ItemValues,
    },
    Issues {
        issues: Vec<IssueSpec>,
        worker: IssuePreferences,
        recruiter: IssuePreferences,
    },
    /// A price and which parts of the seller's bundle are in the deal (the INA setting).
    Bundle {
        bundle: BundleSpec,
        /// What each part is worth to the buyer.
        buyer: BundleValues,
        /// What each part costs the seller.
        seller: BundleValues,
    },
    /// Hotel price-chasing (`hotel`): the call's chase tickets and each side's private block
    /// per ticket, in ticket order (`hotel.rs`).
    Tickets {
        tickets: Vec<TicketSpec>,
        bd: Vec<BdTicket>,
        hotel: Vec<HotelTicket>,
    },
}

/// The buyer's private block: the most it can pay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuyerPrivate {
    pub budget: f64,
}

/// The seller's private block: what the item cost it (the least it should accept).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SellerPrivate {
    pub cost: f64,
}

/// One side's private values in a split game: points per unit of each item, in item order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemValues {
    pub values: Vec<u32>,
    /// The side's own reasons for its priorities (CaSiNo), usable as persona text. Private.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// One side's private preferences over a contract, one entry per issue in issue order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuePreferences {
    pub issues: Vec<IssuePreference>,
}

/// How much one issue matters to a side and how it values the issue's options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuePreference {
    pub weight: f64,
    pub valuation: Valuation,
}

/// A side's value v ∈ [0, 1] for the options of one issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Valuation {
    /// An integer issue worth more the higher it is: (x − min)/(max − min).
    Rising,
    /// An integer issue worth more the lower it is: (max − x)/(max − min).
    Falling,
    /// One weight per option of a discrete issue.
    Options { weights: Vec<f64> },
    /// Valued jointly with another discrete issue (`with`): `weights[own option][other option]`.
    Joint {
        with: String,
        weights: Vec<Vec<f64>>,
    },
}

/// Facts about a scenario a user may want to filter on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioFlag {
    /// Price task where the seller's cost exceeds the buyer's budget: no deal benefits both.
    ConflictingInterest,
}

/// What people did on this scenario in the dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HumanOutcome {
    /// The dataset's id of the dialogue (or line).
    pub dialogue: String,
    pub ending: HumanEnding,
    /// The agreed terms in the grammar's canonical text, from `view`'s side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<Role>,
    /// Points each side scored, as recorded by the dataset itself (not recomputed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<RecordedPoints>,
}

/// How a human dialogue ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HumanEnding {
    /// Both sides agreed on terms.
    Deal,
    WalkAway,
    /// The last offer was rejected, or the dialogue stopped without an agreement.
    NoDeal,
    /// The two sides' final selections disagreed (Deal or No Deal).
    Disagree,
    /// A participant disconnected or quit.
    Quit,
}

/// A score the dataset recorded for one role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedPoints {
    pub role: Role,
    pub points: f64,
}

impl Scenario {
    pub(crate) fn domain(&self) -> Domain {
        match self.game {
            DealSpace::Price { .. } => Domain::Price,
            DealSpace::Items { .. } => Domain::Items,
            DealSpace::Issues { .. } => Domain::Issues,
            DealSpace::Bundle { .. } => Domain::Bundle,
            DealSpace::Tickets { .. } => Domain::Tickets,
        }
    }

    pub fn roles(&self) -> [Role; 2] {
        self.family.roles()
    }

    /// The private item values of `role`, in an item game it plays.
    pub fn item_values(&self, role: Role) -> Option<&ItemValues> {
        match (&self.game, role) {
            (DealSpace::Items { agent_1, .. }, Role::Agent1) => Some(agent_1),
            (DealSpace::Items { agent_2, .. }, Role::Agent2) => Some(agent_2),
            _ => None,
        }
    }

    /// The private issue preferences of `role`, in an issue game it plays.
    pub fn issue_preferences(&self, role: Role) -> Option<&IssuePreferences> {
        match (&self.game, role) {
            (DealSpace::Issues { worker, .. }, Role::Worker) => Some(worker),
            (DealSpace::Issues { recruiter, .. }, Role::Recruiter) => Some(recruiter),
            _ => None,
        }
    }

    /// The scenario's content digest: FNV-1a 64 of its canonical JSON (compact, fields in
    /// declaration order, defaults left out) as loaded, so whitespace and key order in the file
    /// do not count but every value does. A record keeps it, and replay refuses a scenario whose
    /// digest differs. It serializes the whole scenario: compute it once per loaded scenario,
    /// not per episode.
    pub fn digest(&self) -> Digest {
        digest_json(self)
    }

    /// The public listing price, on a price game.
    pub fn listing_price(&self) -> Option<f64> {
        match &self.game {
            DealSpace::Price { listing_price, .. } => Some(*listing_price),
            _ => None,
        }
    }

    /// The seller's public opening ask, where the game has one: the listing price, or the
    /// whole bundle at its list price. What a first bid is read against (`acts::ina_reference`).
    pub(crate) fn opening_terms(&self) -> Option<crate::protocol::Terms> {
        match &self.game {
            DealSpace::Price { listing_price, .. } => Some(crate::protocol::Terms::Price(
                crate::protocol::to_cents(*listing_price),
            )),
            DealSpace::Bundle { bundle, .. } => {
                let parts = crate::protocol::BundleChoice::full(bundle);
                Some(crate::protocol::Terms::Bundle {
                    price: crate::protocol::to_cents(parts.list_price(bundle)),
                    parts,
                })
            }
            _ => None,
        }
    }

    /// The space of possible deals, for reading and writing terms.
    pub fn term_space(&self) -> TermSpace<'_> {
        match &self.game {
            DealSpace::Price { .. } => TermSpace::Price,
            DealSpace::Items { items, .. } => TermSpace::Items(items),
            DealSpace::Issues { issues, .. } => TermSpace::Issues(issues),
            DealSpace::Bundle { bundle, .. } => TermSpace::Bundle(bundle),
            DealSpace::Tickets { tickets, .. } => TermSpace::Tickets(tickets),
        }
    }
}

/// A Markdown table of scenario counts per family and split.
pub fn count_table(scenarios: &[Scenario]) -> String {
    let mut counts: std::collections::BTreeMap<(Family, String), usize> = Default::default();
    for s in scenarios {
        *counts
            .entry((s.family, s.split.clone().unwrap_or_else(|| "-".into())))
            .or_default() += 1;
    }
    let mut out = String::from("| family | split | scenarios |\n|---|---|---:|\n");
    for ((family, split), n) in &counts {
        out.push_str(&format!("| {family} | {split} | {n} |\n"));
    }
    out.push_str(&format!("| all | | {} |\n", scenarios.len()));
    out
}
