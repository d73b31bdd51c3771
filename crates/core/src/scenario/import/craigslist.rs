//! CraigslistBargains: one scenario per distinct scenario of the dialogue files (He et al. 2018).
//!
//! B = the buyer's target, C = 0.5 · L, L = the listing price. Scenarios with B ≤ C leave no
//! room for a deal that helps both sides and are dropped (the report says how many). Several
//! dialogues were played on most scenarios; each is kept as a human outcome.
//!
//! Each scenario keeps its file's split (`train.json` → `train`, `validation.json` → `valid`,
//! `test.json` → `test`), and a listing (a Craigslist posting, `post_id`) is played in one split
//! only: where the files put one listing in several, an evaluation split keeps it (`test`
//! before `valid` before `train`) and the others' scenarios of it are dropped, so a model
//! trained on one split never meets an evaluation listing (the report says how many).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{file_name, read_json, split_from_name, tidy, ImportError, ImportReport};
use crate::protocol::{to_cents, TermSpace, Terms};
use crate::scenario::{
    BuyerPrivate, DealSpace, Family, HumanEnding, HumanOutcome, PublicInfo, Role, Scenario,
    SellerPrivate, SCENARIO_SCHEMA,
};

/// The seller's cost as a share of the listing price.
pub(crate) const COST_FACTOR: f64 = 0.5;

/// A scenario already made from a (file, uuid): its index, buyer kb and seller kb.
type Variant = (usize, Kb, Kb);

/// One dialogue as the dataset writes it (read by the scenario importer and by
/// `crate::dialogues`, which replays its events).
#[derive(Deserialize)]
pub struct Dialogue {
    pub uuid: String,
    pub scenario: RawScenario,
    #[serde(default)]
    outcome: Option<Outcome>,
    #[serde(default)]
    pub events: Vec<Event>,
}

#[derive(Deserialize)]
pub struct RawScenario {
    uuid: String,
    #[serde(default)]
    post_id: Option<String>,
    /// One per agent: agent `i` of the events plays `kbs[i]`.
    pub kbs: Vec<Kb>,
}

#[derive(Deserialize, Clone, PartialEq)]
pub struct Kb {
    pub personal: Personal,
    item: Item,
}

#[derive(Deserialize, Clone, PartialEq)]
pub struct Personal {
    /// `buyer` or `seller`.
    #[serde(rename = "Role")]
    pub role: String,
    #[serde(rename = "Target")]
    target: Option<f64>,
}

#[derive(Deserialize, Clone, PartialEq)]
struct Item {
    #[serde(rename = "Category", default)]
    category: Option<String>,
    #[serde(rename = "Price")]
    price: Option<f64>,
    #[serde(rename = "Description", default)]
    description: Vec<String>,
    #[serde(rename = "Title")]
    title: String,
}

#[derive(Deserialize)]
struct Outcome {
    #[serde(default)]
    reward: Option<i64>,
    #[serde(default)]
    offer: Option<Offer>,
}

#[derive(Deserialize)]
struct Offer {
    price: Option<f64>,
}

/// One event of a dialogue: a `message` (its text in `data`), an `offer` (`data.price`), an
/// `accept`, a `reject` or a `quit`, by agent 0 or 1.
#[derive(Deserialize)]
pub struct Event {
    pub action: String,
    #[serde(default)]
    pub agent: Option<usize>,
    #[serde(default)]
    pub data: serde_json::Value,
    /// The dialogue act of a message where the dataset parsed one (`intent`, and a `price`).
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
}

/// Every dialogue of one raw file.
pub fn read(path: &Path) -> Result<Vec<Dialogue>, ImportError> {
    read_json(path)
}

pub(super) fn import(files: &[PathBuf]) -> Result<ImportReport, ImportError> {
    let mut report = ImportReport::default();
    let mut dropped = 0usize;
    // Distinct dropped scenarios: (file, uuid, buyer target, listing price).
    let mut dropped_scenarios: std::collections::HashSet<(String, String, u64, u64)> =
        Default::default();
    let mut dialogues_total = 0usize;
    // How many scenarios carry each id stem, to number variants apart.
    let mut index: HashMap<String, usize> = HashMap::new();
    // (file, scenario uuid) → the scenarios seen with it: (index, buyer kb, seller kb).
    let mut variants: HashMap<(String, String), Vec<Variant>> = HashMap::new();
    // Each scenario's listing, in the order of `report.scenarios`.
    let mut listings: Vec<String> = Vec::new();
    for path in files {
        let split = split_from_name(path);
        let file = file_name(path);
        let dialogues = read(path)?;
        for d in dialogues {
            dialogues_total += 1;
            let (buyer, seller) = sides(path, &d)?;
            let human = human_outcome(&d);
            let seen = variants
                .entry((file.clone(), d.scenario.uuid.clone()))
                .or_default();
            if let Some((i, _, _)) = seen.iter().find(|(_, b, s)| *b == buyer && *s == seller) {
                report.scenarios[*i].human.push(human);
                continue;
            }
            let Some(scenario) = scenario(&file, split.clone(), &d, &buyer, &mut index) else {
                dropped += 1;
                let bits = |v: Option<f64>| v.unwrap_or_default().to_bits();
                dropped_scenarios.insert((
                    file.clone(),
                    d.scenario.uuid.clone(),
                    bits(buyer.personal.target),
                    bits(buyer.item.price),
                ));
                continue;
            };
            listings.push(listing(&d, &buyer));
            seen.push((report.scenarios.len(), buyer, seller));
            report.scenarios.push(Scenario {
                human: vec![human],
                ..scenario
            });
        }
    }
    let made = report.scenarios.len();
    let (scenarios, overlapping) = one_split_per_listing(report.scenarios, &listings);
    report.scenarios = scenarios;
    report.notes.push(format!(
        "craigslist: {} dialogues → {made} scenarios; dropped {} scenarios ({dropped} dialogues) whose buyer target is at or below the seller cost (B ≤ C = 0.5·L)",
        dialogues_total,
        dropped_scenarios.len()
    ));
    let mut per_split: std::collections::BTreeMap<&str, usize> = Default::default();
    for s in &report.scenarios {
        *per_split
            .entry(s.split.as_deref().unwrap_or("none"))
            .or_default() += 1;
    }
    report.notes.push(format!(
        "craigslist: {overlapping} listings were in several splits, their {} scenarios outside the split that keeps them dropped; per split: {per_split:?}",
        made - report.scenarios.len()
    ));
    Ok(report)
}

/// The listing a dialogue's scenario was made from: its Craigslist `post_id`, or, where the
/// data has none, its title and listing price.
fn listing(d: &Dialogue, buyer: &Kb) -> String {
    match &d.scenario.post_id {
        Some(post) => format!("post {post}"),
        None => format!(
            "title {} at {}",
            buyer.item.title.trim(),
            buyer.item.price.unwrap_or_default()
        ),
    }
}

/// The order in which splits claim a listing found in several: evaluation splits first, so
/// training loses the listing, never evaluation.
const SPLIT_CLAIM: [&str; 3] = ["test", "valid", "train"];

/// `scenarios` with every listing (`listings[i]` is scenario i's) in one split: the first of
/// [`SPLIT_CLAIM`] that holds it (a split outside it, or none, after them, by name), the
/// listing's scenarios of other splits dropped. Also how many listings were in several splits.
fn one_split_per_listing(scenarios: Vec<Scenario>, listings: &[String]) -> (Vec<Scenario>, usize) {
    let claim = |split: Option<&str>| {
        let rank = split
            .and_then(|split| SPLIT_CLAIM.iter().position(|c| *c == split))
            .unwrap_or(SPLIT_CLAIM.len());
        (rank, split.map(str::to_string))
    };
    // Listing → the splits that hold it.
    let mut splits: HashMap<&str, Vec<Option<&str>>> = HashMap::new();
    for (s, listing) in scenarios.iter().zip(listings) {
        let held = splits.entry(listing).or_default();
        if !held.contains(&s.split.as_deref()) {
            held.push(s.split.as_deref());
        }
    }
    let overlapping = splits.values().filter(|held| held.len() > 1).count();
    let owner: HashMap<&str, (usize, Option<String>)> = splits
        .into_iter()
        .map(|(listing, held)| {
            let best = held.into_iter().map(claim).min().unwrap_or((0, None));
            (listing, best)
        })
        .collect();
    let keep: Vec<bool> = scenarios
        .iter()
        .zip(listings)
        .map(|(s, listing)| owner[listing.as_str()] == claim(s.split.as_deref()))
        .collect();
    let kept = scenarios
        .into_iter()
        .zip(keep)
        .filter_map(|(s, keep)| keep.then_some(s))
        .collect();
    (kept, overlapping)
}

fn sides(path: &Path, d: &Dialogue) -> Result<(Kb, Kb), ImportError> {
    let find = |role: &str| {
        d.scenario
            .kbs
            .iter()
            .find(|kb| kb.personal.role == role)
            .cloned()
            .ok_or_else(|| {
                ImportError::record(
                    path,
                    &d.uuid,
                    format!("scenario {} has no {role} kb", d.scenario.uuid),
                )
            })
    };
    let buyer = find("buyer")?;
    let seller = find("seller")?;
    if buyer.personal.target.is_none() || buyer.item.price.is_none() {
        return Err(ImportError::record(
            path,
            &d.uuid,
            "the buyer kb lacks Target or Price",
        ));
    }
    Ok((buyer, seller))
}

fn scenario(
    file: &str,
    split: Option<String>,
    d: &Dialogue,
    buyer: &Kb,
    index: &mut HashMap<String, usize>,
) -> Option<Scenario> {
    // Public information comes from the buyer's kb (the seller sometimes sees extra lines).
    let listing = buyer.item.price.unwrap_or_default();
    let budget = buyer.personal.target.unwrap_or_default();
    let cost = tidy(COST_FACTOR * listing);
    if budget <= cost || listing <= 0.0 {
        return None;
    }
    let mut id = format!("craigslist:{}", d.scenario.uuid);
    let n = index.entry(id.clone()).or_insert(0);
    *n += 1;
    if *n > 1 {
        id = format!("{id}.{n}");
    }
    let post = d
        .scenario
        .post_id
        .as_deref()
        .map(|p| format!(" post_id={p}"))
        .unwrap_or_default();
    Some(Scenario {
        schema: SCENARIO_SCHEMA,
        id,
        family: Family::Craigslist,
        split,
        source: format!(
            "craigslistbargains/{file}{post} scenario={}",
            d.scenario.uuid
        ),
        public: PublicInfo {
            title: buyer.item.title.trim().to_string(),
            category: buyer.item.category.clone(),
            description: buyer
                .item
                .description
                .iter()
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join("\n"),
        },
        game: DealSpace::Price {
            listing_price: listing,
            buyer: BuyerPrivate { budget },
            seller: SellerPrivate { cost },
        },
        no_deal_value: 0.0,
        flags: vec![],
        human: vec![],
    })
}

/// A deal is a final offer with reward 1; otherwise the last non-message event tells how it ended.
fn human_outcome(d: &Dialogue) -> HumanOutcome {
    let deal_price = d
        .outcome
        .as_ref()
        .filter(|o| o.reward == Some(1))
        .and_then(|o| o.offer.as_ref())
        .and_then(|o| o.price);
    let last_event = d
        .events
        .iter()
        .rev()
        .map(|e| e.action.as_str())
        .find(|a| *a != "message");
    let (ending, terms) = match (deal_price, last_event) {
        (Some(p), _) => (
            HumanEnding::Deal,
            Some(Terms::Price(to_cents(p)).render(TermSpace::Price)),
        ),
        (None, Some("quit")) => (HumanEnding::Quit, None),
        _ => (HumanEnding::NoDeal, None),
    };
    HumanOutcome {
        dialogue: d.uuid.clone(),
        ending,
        view: terms.as_ref().map(|_| Role::Buyer),
        terms,
        points: vec![],
    }
}

#[cfg(test)]
mod tests {
    //! The listing rule on made-up dialogues (no dataset row is copied here): the committed
    //! file's own splits are checked by the integration tests.

    use super::*;
    use serde_json::json;

    /// A dialogue on listing `post` (L = 100, the buyer's target 80).
    fn dialogue(uuid: &str, scenario: &str, post: &str) -> serde_json::Value {
        let kb = |role: &str, target: f64| {
            json!({
                "personal": {"Role": role, "Target": target},
                "item": {"Category": "bike", "Price": 100.0, "Description": ["A bike."], "Title": "Bike"}
            })
        };
        json!({
            "uuid": uuid,
            "scenario": {"uuid": scenario, "post_id": post, "kbs": [kb("buyer", 80.0), kb("seller", 100.0)]},
            "outcome": {"reward": 1, "offer": {"price": 90.0}},
            "events": []
        })
    }

    #[test]
    fn a_listing_in_several_splits_stays_in_the_evaluation_split_only() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, dialogues: serde_json::Value| {
            let path = dir.path().join(name);
            std::fs::write(&path, dialogues.to_string()).unwrap();
            path
        };
        // Listing 1 is in train and test, listing 2 in train and validation, listing 3 in
        // train only, listing 4 in validation and test.
        let train = write(
            "train.json",
            json!([
                dialogue("C_a", "S_a", "1"),
                dialogue("C_b", "S_b", "2"),
                dialogue("C_c", "S_c", "3"),
            ]),
        );
        let valid = write(
            "validation.json",
            json!([dialogue("C_d", "S_d", "2"), dialogue("C_e", "S_e", "4")]),
        );
        let test = write(
            "test.json",
            json!([dialogue("C_f", "S_f", "1"), dialogue("C_g", "S_g", "4")]),
        );
        let report = import(&[test, valid, train]).unwrap();
        let kept: Vec<(&str, &str)> = report
            .scenarios
            .iter()
            .map(|s| (s.id.as_str(), s.split.as_deref().unwrap()))
            .collect();
        assert_eq!(
            kept,
            [
                ("craigslist:S_f", "test"),
                ("craigslist:S_g", "test"),
                ("craigslist:S_d", "valid"),
                ("craigslist:S_c", "train"),
            ]
        );
        assert!(
            report.notes[1]
                .starts_with("craigslist: 3 listings were in several splits, their 3 scenarios"),
            "{:?}",
            report.notes
        );
    }
}
