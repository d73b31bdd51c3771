//! `dealgym scenarios generate`: the families whose data set is not public — `bundle` from INA's
//! published generator's parameters, `hotel` from the structure the REPO paper describes — with
//! the choices of ours each family's book page names.
//! Deterministic from a seed; every scenario is validated before it is returned.

pub(crate) mod bundle;
pub(crate) mod hotel;
pub(crate) mod market;

use super::{validate, Family, InvalidScenario, Scenario};

/// Why scenarios could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error(
        "the {0} family is imported from its data set, not generated: run `dealgym scenarios import {0} FILES…`"
    )]
    Imported(Family),
    #[error("generated scenario {id} is invalid: field `{field}`: {message}")]
    Invalid {
        id: String,
        field: String,
        message: String,
    },
    #[error("--count must be at least 1")]
    NoScenarios,
}

/// Generate `count` scenarios of a generated family from `seed` (each family's defaults where
/// `None`: the parameters its shipped file was made with).
pub fn generate(
    family: Family,
    seed: Option<u64>,
    count: Option<usize>,
) -> Result<Vec<Scenario>, GenerateError> {
    let scenarios = match family {
        Family::Bundle => {
            let defaults = bundle::BundleParams::default();
            let params = bundle::BundleParams {
                seed: seed.unwrap_or(defaults.seed),
                count: count.unwrap_or(defaults.count),
                ..defaults
            };
            if params.count == 0 {
                return Err(GenerateError::NoScenarios);
            }
            bundle::generate(&params)
        }
        Family::Hotel => {
            let count = count.unwrap_or(hotel::COUNT);
            if count == 0 {
                return Err(GenerateError::NoScenarios);
            }
            hotel::generate(count, seed.unwrap_or(hotel::SEED))
        }
        other => return Err(GenerateError::Imported(other)),
    };
    for s in &scenarios {
        validate(s).map_err(
            |InvalidScenario { field, message }| GenerateError::Invalid {
                id: s.id.clone(),
                field,
                message,
            },
        )?;
    }
    Ok(scenarios)
}

/// Generate `count` markets from `seed` (`None`: the shipped file's, `scenarios/market.jsonl`).
pub fn generate_markets(seed: Option<u64>, count: Option<usize>) -> Vec<super::MarketScenario> {
    market::generate(count.unwrap_or(market::COUNT), seed.unwrap_or(market::SEED))
}

/// The statistics table of a market set (the book's `families/market.md` shows the shipped
/// file's).
pub fn market_stats_table(scenarios: &[super::MarketScenario]) -> String {
    market::stats_table(scenarios)
}

/// The statistics table of a generated family's scenarios (the book shows it).
pub fn stats_table(family: Family, scenarios: &[Scenario]) -> Option<String> {
    match family {
        Family::Bundle => Some(bundle::stats_table(scenarios)),
        _ => None,
    }
}
