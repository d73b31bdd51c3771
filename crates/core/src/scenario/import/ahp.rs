//! AmazonHistoryPrice: one scenario per product (Xia et al. 2024).
//!
//! L = max(list_price, highest_price), C = lowest_price, B = 0.8 · L. Conflicting-interest
//! products (C > B) are kept and flagged. The dataset has no split and no human dialogues.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{read_json, tidy, ImportError, ImportReport};
use crate::scenario::{
    BuyerPrivate, DealSpace, Family, PublicInfo, Scenario, ScenarioFlag, SellerPrivate,
    SCENARIO_SCHEMA,
};

/// The buyer's budget as a share of the listing price, as in the paper's analysis.
pub(crate) const BUDGET_FACTOR: f64 = 0.8;

#[derive(Deserialize)]
struct Product {
    title: String,
    category: String,
    list_price: String,
    lowest_price: String,
    highest_price: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    features: Option<String>,
}

pub(super) fn import(files: &[PathBuf]) -> Result<ImportReport, ImportError> {
    let mut report = ImportReport::default();
    let mut conflicting = 0;
    for path in files {
        let products: Vec<Product> = read_json(path)?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        for (index, product) in products.into_iter().enumerate() {
            let scenario = scenario(path, &stem, index, product)?;
            if scenario.flags.contains(&ScenarioFlag::ConflictingInterest) {
                conflicting += 1;
            }
            report.scenarios.push(scenario);
        }
    }
    report.notes.push(format!(
        "ahp: {} products, {conflicting} with conflicting interests (cost above budget), kept and flagged",
        report.scenarios.len()
    ));
    Ok(report)
}

fn scenario(path: &Path, stem: &str, index: usize, p: Product) -> Result<Scenario, ImportError> {
    let record = format!("[{index}] {}", p.title);
    let money = |field: &str, text: &str| {
        parse_money(text).ok_or_else(|| {
            ImportError::record(path, &record, format!("{field} `{text}` is not a price"))
        })
    };
    let listing =
        money("list_price", &p.list_price)?.max(money("highest_price", &p.highest_price)?);
    let cost = money("lowest_price", &p.lowest_price)?;
    let budget = tidy(BUDGET_FACTOR * listing);
    let description = choose_description(p.description.as_deref(), p.features.as_deref());
    Ok(Scenario {
        schema: SCENARIO_SCHEMA,
        id: format!("ahp:{stem}:{index}"),
        family: Family::Ahp,
        split: None,
        source: format!("amazonhistoryprice/{stem}.json[{index}]"),
        public: PublicInfo {
            title: p.title,
            category: Some(p.category),
            description,
        },
        game: DealSpace::Price {
            listing_price: listing,
            buyer: BuyerPrivate { budget },
            seller: SellerPrivate { cost },
        },
        no_deal_value: 0.0,
        flags: if cost > budget {
            vec![ScenarioFlag::ConflictingInterest]
        } else {
            vec![]
        },
        human: vec![],
    })
}

/// The official code's rule: the description, unless it is under 5 characters and the feature
/// list is longer.
fn choose_description(description: Option<&str>, features: Option<&str>) -> String {
    let d = description.unwrap_or("").trim();
    let f = features.unwrap_or("").trim();
    if d.chars().count() < 5 && f.chars().count() > d.chars().count() {
        f.to_string()
    } else {
        d.to_string()
    }
}

/// `"$1,234.56"` → 1234.56.
pub(crate) fn parse_money(text: &str) -> Option<f64> {
    let cleaned: String = text
        .chars()
        .filter(|c| !matches!(c, '$' | ',' | ' '))
        .collect();
    cleaned
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_and_description_rules() {
        assert_eq!(parse_money("$1,234.56"), Some(1234.56));
        assert_eq!(parse_money("n/a"), None);
        assert_eq!(
            choose_description(Some("x"), Some("long features")),
            "long features"
        );
        assert_eq!(
            choose_description(Some("A fine lamp"), Some("long features")),
            "A fine lamp"
        );
    }
}
