//! The scenario families, their domains and the roles they are played in.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A dataset family (the book's `design/scenarios.md`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Ahp,
    Craigslist,
    Casino,
    Dnd,
    JobInterview,
    /// Price-and-bundle bargaining (the INA setting), generated from the paper's parameters.
    Bundle,
    /// Hotel price-chasing (REPO): a platform's agent asks a hotel to lower several room prices.
    Hotel,
}

/// What kind of deal a family negotiates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Domain {
    /// One price for one item.
    Price,
    /// A split of item units between the two sides.
    Items,
    /// One contract over several issues.
    Issues,
    /// A price for the parts of a bundle that are in the deal.
    Bundle,
    /// A price per chase ticket (a room type on a date), or the ticket left unchanged.
    Tickets,
}

impl Domain {
    /// Whether the domain is one of the BATNA paper's multi-item tasks: items (CaSiNo, Deal or
    /// No Deal) and issues (Job Interview). Two rules read it: the threshold τ applies to their
    /// deals only (§2.1: price settings keep the surplus reward, regulation already keeps their
    /// deals above zero surplus), and the paper's averages over them (App. C, Table 4: "the
    /// three multi-item datasets where the threshold applies") are the reports' headline
    /// average. Bundles and hotel calls are priced, as the price tasks are.
    pub(crate) fn is_multi_item(self) -> bool {
        matches!(self, Domain::Items | Domain::Issues)
    }
}

/// A side of a negotiation, as the dataset names it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Buyer,
    Seller,
    #[serde(rename = "agent_1")]
    Agent1,
    #[serde(rename = "agent_2")]
    Agent2,
    Worker,
    Recruiter,
    /// The platform's business-development agent (hotel price-chasing).
    Bd,
    /// The hotel's manager (hotel price-chasing).
    Hotel,
}

impl Family {
    pub const ALL: [Family; 7] = [
        Family::Ahp,
        Family::Craigslist,
        Family::Casino,
        Family::Dnd,
        Family::JobInterview,
        Family::Bundle,
        Family::Hotel,
    ];

    pub(crate) fn domain(self) -> Domain {
        match self {
            Family::Ahp | Family::Craigslist => Domain::Price,
            Family::Casino | Family::Dnd => Domain::Items,
            Family::JobInterview => Domain::Issues,
            Family::Bundle => Domain::Bundle,
            Family::Hotel => Domain::Tickets,
        }
    }

    /// The family's two roles, in the dataset's order.
    pub fn roles(self) -> [Role; 2] {
        match self.domain() {
            Domain::Price | Domain::Bundle => [Role::Buyer, Role::Seller],
            Domain::Items => [Role::Agent1, Role::Agent2],
            Domain::Issues => [Role::Worker, Role::Recruiter],
            Domain::Tickets => [Role::Bd, Role::Hotel],
        }
    }

    /// The learner's role when none is asked for: the buyer on price tasks, the worker on JI, and
    /// `None` (drawn at random per episode) on the symmetric item games.
    pub fn default_learner_role(self) -> Option<Role> {
        match self.domain() {
            Domain::Price | Domain::Bundle => Some(Role::Buyer),
            Domain::Issues => Some(Role::Worker),
            Domain::Tickets => Some(Role::Bd),
            Domain::Items => None,
        }
    }

    /// The snake_case name, also the stem of the scenario file (`scenarios/casino.jsonl`).
    pub fn name(self) -> &'static str {
        match self {
            Family::Ahp => "ahp",
            Family::Craigslist => "craigslist",
            Family::Casino => "casino",
            Family::Dnd => "dnd",
            Family::JobInterview => "job_interview",
            Family::Bundle => "bundle",
            Family::Hotel => "hotel",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Family {
    type Err = String;

    /// Accepts the file names and the usual abbreviations: `ahp`, `amazonhistoryprice`, `cra`,
    /// `craigslist`, `casino`, `dnd`, `dealornodeal`, `ji`, `job_interview`, `bundle` (`ina`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let key: String = s
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        match key.as_str() {
            "ahp" | "amazonhistoryprice" | "amazon" => Ok(Family::Ahp),
            "cra" | "craigslist" | "craigslistbargains" => Ok(Family::Craigslist),
            "casino" | "ca" => Ok(Family::Casino),
            "dnd" | "dealornodeal" => Ok(Family::Dnd),
            "ji" | "jobinterview" => Ok(Family::JobInterview),
            "bundle" | "ina" | "ind" => Ok(Family::Bundle),
            "hotel" | "repo" | "pricechasing" => Ok(Family::Hotel),
            _ => Err(format!(
                "unknown family `{s}` (expected ahp, craigslist, casino, dnd, job_interview, bundle or hotel)"
            )),
        }
    }
}

impl Role {
    /// The snake_case name used in records and prompts' data.
    pub fn name(self) -> &'static str {
        match self {
            Role::Buyer => "buyer",
            Role::Seller => "seller",
            Role::Agent1 => "agent_1",
            Role::Agent2 => "agent_2",
            Role::Worker => "worker",
            Role::Recruiter => "recruiter",
            Role::Bd => "bd",
            Role::Hotel => "hotel",
        }
    }

    /// The other role of the same family.
    pub fn counterpart(self) -> Role {
        match self {
            Role::Buyer => Role::Seller,
            Role::Seller => Role::Buyer,
            Role::Agent1 => Role::Agent2,
            Role::Agent2 => Role::Agent1,
            Role::Worker => Role::Recruiter,
            Role::Recruiter => Role::Worker,
            Role::Bd => Role::Hotel,
            Role::Hotel => Role::Bd,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "buyer" => Ok(Role::Buyer),
            "seller" => Ok(Role::Seller),
            "agent_1" | "agent1" => Ok(Role::Agent1),
            "agent_2" | "agent2" => Ok(Role::Agent2),
            "worker" | "applicant" => Ok(Role::Worker),
            "recruiter" => Ok(Role::Recruiter),
            "bd" | "agent" | "platform" => Ok(Role::Bd),
            "hotel" | "manager" => Ok(Role::Hotel),
            _ => Err(format!("unknown role `{s}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_multi_item_families_are_casino_dnd_and_job_interview() {
        // BATNA §2.1 (the threshold on multi-item scenarios; price settings keep surplus) and
        // App. C (Table 4: CA, DnD, JI).
        let multi: Vec<Family> = Family::ALL
            .into_iter()
            .filter(|f| f.domain().is_multi_item())
            .collect();
        assert_eq!(multi, [Family::Casino, Family::Dnd, Family::JobInterview]);
    }
}
