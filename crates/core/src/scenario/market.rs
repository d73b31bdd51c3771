//! Market scenarios (the `market` family, issue 45): several buyers and several sellers of one
//! good at once, one line of `scenarios/market.jsonl`.
//!
//! A [`MarketScenario`] seats its traders by role (`buyer_1`, `seller_2`, …). Each trader holds
//! one or more units of demand or supply, each with a private limit in whole currency units: a
//! buyer's value of its next unit (non-increasing: its first unit is worth the most), a seller's
//! cost of its next unit (non-decreasing). The unit variant gives every trader one unit; the
//! multi-unit variant several. Reading checks every rule a market must keep and names the file,
//! the line and the field of a bad one ([`load_market_scenarios`]); the competitive equilibrium
//! a market is measured against is [`crate::market::equilibrium`]'s.

use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::load::load_lines;
use super::{InvalidScenario, LoadOptions, LoadReport, ScenarioError, SCENARIO_SCHEMA};

/// The fewest and the most traders on one side of a market.
pub(crate) const SIDE_TRADERS: std::ops::RangeInclusive<usize> = 2..=6;
/// The most units one trader holds.
pub(crate) const MAX_UNITS: usize = 8;
/// The most rounds a market's schedule may cap at.
pub(crate) const MAX_MARKET_ROUNDS: u32 = 64;

/// The market family's name (one variant, so a file's kind reads by it).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MarketFamily {
    /// k buyers and m sellers of one good (issue 45).
    Market,
}

impl MarketFamily {
    pub fn name(self) -> &'static str {
        "market"
    }
}

/// Which side of the market a trader is on.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// Bids for units; its limits are values.
    Buyer,
    /// Asks for units; its limits are costs.
    Seller,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Buyer => "buyer",
            Side::Seller => "seller",
        }
    }

    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Buyer => Side::Seller,
            Side::Seller => Side::Buyer,
        }
    }
}

/// One unit per trader, or several.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MarketVariant {
    /// Every trader one unit: a buyer's value, a seller's cost.
    Unit,
    /// Every trader several units: decreasing marginal values, increasing marginal costs.
    MultiUnit,
}

/// How the two sides compare (the generator's thirds).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum MarketShape {
    /// Few traders whose values and costs barely overlap.
    Thin,
    /// As many buyers as sellers, overlapping widely.
    Balanced,
    /// More buyers than sellers.
    ExcessDemand,
}

impl MarketShape {
    pub const ALL: [MarketShape; 3] = [
        MarketShape::Thin,
        MarketShape::Balanced,
        MarketShape::ExcessDemand,
    ];

    pub fn name(self) -> &'static str {
        match self {
            MarketShape::Thin => "thin",
            MarketShape::Balanced => "balanced",
            MarketShape::ExcessDemand => "excess_demand",
        }
    }
}

/// One market of one good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketScenario {
    pub schema: u32,
    /// `market:SEED:INDEX`.
    pub id: String,
    pub family: MarketFamily,
    /// Where it came from: the generator and its seed.
    pub source: String,
    pub variant: MarketVariant,
    pub shape: MarketShape,
    /// The good traded, as the prompts name it (`crates of apples`).
    pub good: String,
    /// The seats: buyers first, then sellers.
    pub traders: Vec<Trader>,
    pub rules: MarketRules,
}

/// One seat of the market.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trader {
    /// The seat's name in records and flags (`buyer_1`, `seller_3`).
    pub role: String,
    pub side: Side,
    /// What only this trader reads: never in another seat's view.
    pub private: TraderPrivate,
}

/// A trader's private limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraderPrivate {
    /// Per unit, in the order the trader trades them, whole currency units: a buyer's values
    /// (non-increasing), a seller's costs (non-decreasing).
    pub limits: Vec<i64>,
}

/// The market's public rules.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketRules {
    /// The cap on rounds: each round every trader still in the market moves once, in an order
    /// drawn from the episode's seed; the market closes after this many.
    pub rounds: u32,
}

impl MarketScenario {
    /// The seat of a role.
    pub fn seat_of(&self, role: &str) -> Option<usize> {
        self.traders.iter().position(|t| t.role == role)
    }

    /// The seats on `side`, in the market's order.
    pub fn seats_on(&self, side: Side) -> impl Iterator<Item = usize> + '_ {
        (0..self.traders.len()).filter(move |&s| self.traders[s].side == side)
    }
}

/// Check a market scenario's rules (the caller adds the file and line).
pub(crate) fn validate_market(s: &MarketScenario) -> Result<(), InvalidScenario> {
    let bad = |field: String, message: String| Err(InvalidScenario { field, message });
    if s.schema != SCENARIO_SCHEMA {
        return bad(
            "schema".into(),
            format!("version {} is not {SCENARIO_SCHEMA}", s.schema),
        );
    }
    for side in [Side::Buyer, Side::Seller] {
        let n = s.seats_on(side).count();
        if !SIDE_TRADERS.contains(&n) {
            return bad(
                "traders".into(),
                format!(
                    "{n} {}s; a market has {} to {} on each side",
                    side.name(),
                    SIDE_TRADERS.start(),
                    SIDE_TRADERS.end()
                ),
            );
        }
    }
    let mut roles = BTreeSet::new();
    for (t, trader) in s.traders.iter().enumerate() {
        if trader.role.trim().is_empty() || !roles.insert(trader.role.as_str()) {
            return bad(
                format!("traders[{t}].role"),
                format!("`{}` is empty or names two seats", trader.role),
            );
        }
        let limits = &trader.private.limits;
        let field = format!("traders[{t}].private.limits");
        let units_allowed = match s.variant {
            MarketVariant::Unit => 1..=1,
            MarketVariant::MultiUnit => 1..=MAX_UNITS,
        };
        if !units_allowed.contains(&limits.len()) {
            return bad(
                field,
                format!(
                    "{} units; a {} market's trader holds {} to {}",
                    limits.len(),
                    match s.variant {
                        MarketVariant::Unit => "unit",
                        MarketVariant::MultiUnit => "multi-unit",
                    },
                    units_allowed.start(),
                    units_allowed.end()
                ),
            );
        }
        if let Some(v) = limits
            .iter()
            .find(|&&v| v <= 0 || v as f64 > crate::limits::MAX_AMOUNT)
        {
            return bad(
                field,
                format!("limit {v} is not a positive amount in range"),
            );
        }
        let ordered = match trader.side {
            Side::Buyer => limits.windows(2).all(|w| w[0] >= w[1]),
            Side::Seller => limits.windows(2).all(|w| w[0] <= w[1]),
        };
        if !ordered {
            return bad(
                field,
                match trader.side {
                    Side::Buyer => "a buyer's values do not increase from one unit to the next",
                    Side::Seller => "a seller's costs do not decrease from one unit to the next",
                }
                .into(),
            );
        }
    }
    if s.rules.rounds == 0 || s.rules.rounds > MAX_MARKET_ROUNDS {
        return bad(
            "rules.rounds".into(),
            format!("{} rounds; 1 to {MAX_MARKET_ROUNDS}", s.rules.rounds),
        );
    }
    Ok(())
}

/// Parse and check one line of a market scenario file.
pub(crate) fn parse_market_line(
    file: &str,
    line: usize,
    text: &str,
) -> Result<MarketScenario, ScenarioError> {
    let at = |field: String, message: String| ScenarioError::Line {
        file: file.to_string(),
        line,
        field,
        message,
    };
    let scenario: MarketScenario =
        crate::jsonl::from_line(text.as_bytes()).map_err(|fault| at(fault.field, fault.message))?;
    validate_market(&scenario).map_err(|e| at(e.field, e.message))?;
    Ok(scenario)
}

/// Load every market scenario of a JSONL file.
pub fn load_market_scenarios(
    path: &Path,
    options: LoadOptions,
) -> Result<LoadReport<MarketScenario>, ScenarioError> {
    let file_name = path.display().to_string();
    let file = super::open_scenario_file(path).map_err(|source| ScenarioError::Io {
        file: file_name.clone(),
        source,
    })?;
    load_market_scenarios_from_reader(&file_name, file, options)
}

/// [`load_market_scenarios`] over bytes read from `reader`, named `file_name` in errors.
pub fn load_market_scenarios_from_reader(
    file_name: &str,
    reader: impl BufRead,
    options: LoadOptions,
) -> Result<LoadReport<MarketScenario>, ScenarioError> {
    load_lines(file_name, reader, options, parse_market_line)
}

/// What a two-party or table loader says of a market's line: a market file is read as markets,
/// on its own (issue 45).
pub const MARKET_LINE_ELSEWHERE: &str = "a `market` scenario where two-party or n-party table scenarios are read: a market file is played as markets, on its own (`dealgym run` and `dealgym eval` given market files alone, `dealgym serve` at /v1/tables, Python's Game(\"market\"))";

/// Whether a scenario file holds markets: its first non-blank line names the market family.
pub fn is_market_file(path: &Path) -> bool {
    super::table::file_family(path).is_some_and(|f| f == MarketFamily::Market.name())
}

/// The field and message of a line a two-party or table loader could not read: a market's
/// line is refused by name ([`MARKET_LINE_ELSEWHERE`]), any other keeps its own fault. Read
/// only once the line has failed, so good lines cost nothing more.
pub(crate) fn unread_line(text: &str, fault: crate::jsonl::LineFault) -> (String, String) {
    if is_market_line(text) {
        ("family".into(), MARKET_LINE_ELSEWHERE.into())
    } else {
        (fault.field, fault.message)
    }
}

/// Whether a scenario line is a market's: what the two-party and table loaders refuse by name
/// (a market file mixed with other families' files), rather than failing on its first unknown field.
pub(crate) fn is_market_line(text: &str) -> bool {
    super::table::line_family(text).is_some_and(|f| f == MarketFamily::Market.name())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A unit market of two buyers and two sellers, values and costs given.
    pub(crate) fn unit_market(values: &[i64], costs: &[i64]) -> MarketScenario {
        market(
            MarketVariant::Unit,
            values.iter().map(|&v| vec![v]).collect(),
            costs.iter().map(|&c| vec![c]).collect(),
        )
    }

    /// A market with each buyer's and seller's limits given.
    pub(crate) fn market(
        variant: MarketVariant,
        buyers: Vec<Vec<i64>>,
        sellers: Vec<Vec<i64>>,
    ) -> MarketScenario {
        let trader = |side: Side, i: usize, limits: Vec<i64>| Trader {
            role: format!("{}_{}", side.name(), i + 1),
            side,
            private: TraderPrivate { limits },
        };
        let mut traders: Vec<Trader> = buyers
            .into_iter()
            .enumerate()
            .map(|(i, l)| trader(Side::Buyer, i, l))
            .collect();
        traders.extend(
            sellers
                .into_iter()
                .enumerate()
                .map(|(i, l)| trader(Side::Seller, i, l)),
        );
        MarketScenario {
            schema: SCENARIO_SCHEMA,
            id: "market:test:0".into(),
            family: MarketFamily::Market,
            source: "test".into(),
            variant,
            shape: MarketShape::Balanced,
            good: "crates of apples".into(),
            traders,
            rules: MarketRules { rounds: 5 },
        }
    }

    #[test]
    fn a_market_breaking_a_rule_is_refused_naming_the_field() {
        let good = unit_market(&[100, 80], &[50, 70]);
        assert_eq!(validate_market(&good), Ok(()));
        let one_buyer = unit_market(&[100], &[50, 70]);
        assert_eq!(validate_market(&one_buyer).unwrap_err().field, "traders");
        let mut rising = market(
            MarketVariant::MultiUnit,
            vec![vec![50, 60], vec![40]],
            vec![vec![10], vec![20]],
        );
        let e = validate_market(&rising).unwrap_err();
        assert_eq!(e.field, "traders[0].private.limits");
        assert!(e.message.contains("values do not increase"), "{e}");
        rising.traders[0].private.limits = vec![60, 50];
        assert_eq!(validate_market(&rising), Ok(()));
        let mut two_units = unit_market(&[100, 80], &[50, 70]);
        two_units.traders[2].private.limits = vec![50, 60];
        assert!(validate_market(&two_units)
            .unwrap_err()
            .message
            .contains("unit market"));
        let mut no_rounds = unit_market(&[100, 80], &[50, 70]);
        no_rounds.rules.rounds = 0;
        assert_eq!(
            validate_market(&no_rounds).unwrap_err().field,
            "rules.rounds"
        );
    }

    #[test]
    fn a_line_names_its_market_family() {
        let line = serde_json::to_string(&unit_market(&[100, 80], &[50, 70])).unwrap();
        assert!(is_market_line(&line));
        assert!(parse_market_line("m.jsonl", 1, &line).is_ok());
        assert!(!is_market_line(r#"{"family":"casino"}"#));
        // Where two-party scenarios are read (a market file beside another family's), a market's
        // line is refused by name rather than by its first unknown field.
        let e = crate::scenario::parse_scenario_line("m.jsonl", 1, &line)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m.jsonl") && e.contains("two-party or n-party table scenarios are read"),
            "{e}"
        );
        // And so does the table loader (a table face or Python's `scenario_file=`).
        let e = crate::scenario::parse_table_line("m.jsonl", 1, &line)
            .unwrap_err()
            .to_string();
        assert!(e.contains("played as markets, on its own"), "{e}");
    }
}
