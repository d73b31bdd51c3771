//! The `market` family's generator (issue 45): k buyers and m sellers of one good, each with
//! private values or costs, deterministic from a seed. All of it is ours (the book's
//! `families/market.md` lists it): a third of the set thin, a third balanced, a third with excess
//! demand (by index, in that order), alternating pairs of unit and multi-unit markets:
//!
//! | shape | buyers | sellers | values | costs |
//! |---|---|---|---|---|
//! | thin | 2–3 | 2–3 | U{40..110} | U{60..130} |
//! | balanced | 3–6 | as many | U{50..150} | U{30..130} |
//! | excess demand | sellers + 2 to 6 | 2–4 | U{60..160} | U{30..110} |
//!
//! A multi-unit trader holds 2–3 units, its limits drawn from its shape's range and sorted
//! (a buyer's values falling, a seller's costs rising). A market whose competitive allocation
//! gains nothing (it trades nothing, or only a value equal to a cost) is drawn again from the
//! same stream, so every market has gains from trade and an efficiency. The cap on rounds is 6 for a unit market and 10 for a multi-unit one.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::market::equilibrium;
use crate::scenario::{
    MarketFamily, MarketRules, MarketScenario, MarketShape, MarketVariant, Side, Trader,
    TraderPrivate, SCENARIO_SCHEMA,
};

/// The shipped file's seed and count (`scenarios/market.jsonl`).
pub(crate) const SEED: u64 = 45;
pub(crate) const COUNT: usize = 600;

const GOODS: [&str; 8] = [
    "crates of apples",
    "bags of coffee beans",
    "barrels of olive oil",
    "bales of cotton",
    "sacks of rice",
    "boxes of tea",
    "cords of firewood",
    "tonnes of copper scrap",
];

/// Generate `count` markets from `seed`. The same seed and count give the same file.
pub(crate) fn generate(count: usize, seed: u64) -> Vec<MarketScenario> {
    (0..count).map(|i| market(seed, i)).collect()
}

fn market(seed: u64, index: usize) -> MarketScenario {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index as u64);
    let shape = MarketShape::ALL[index % 3];
    let variant = if (index / 3).is_multiple_of(2) {
        MarketVariant::Unit
    } else {
        MarketVariant::MultiUnit
    };
    let good = GOODS[rng.random_range(0..GOODS.len())];
    loop {
        let (buyers, sellers, values, costs) = match shape {
            MarketShape::Thin => (
                rng.random_range(2..=3),
                rng.random_range(2..=3),
                40..=110,
                60..=130,
            ),
            MarketShape::Balanced => {
                let n = rng.random_range(3..=6);
                (n, n, 50..=150, 30..=130)
            }
            MarketShape::ExcessDemand => {
                let m = rng.random_range(2..=4);
                (rng.random_range(m + 2..=6), m, 60..=160, 30..=110)
            }
        };
        let mut limits = |side: Side| -> Vec<i64> {
            let units = match variant {
                MarketVariant::Unit => 1,
                MarketVariant::MultiUnit => rng.random_range(2..=3),
            };
            let range = match side {
                Side::Buyer => values.clone(),
                Side::Seller => costs.clone(),
            };
            let mut l: Vec<i64> = (0..units)
                .map(|_| rng.random_range(range.clone()))
                .collect();
            match side {
                Side::Buyer => l.sort_unstable_by(|a, b| b.cmp(a)),
                Side::Seller => l.sort_unstable(),
            }
            l
        };
        let mut traders = Vec::with_capacity(buyers + sellers);
        for (side, n) in [(Side::Buyer, buyers), (Side::Seller, sellers)] {
            for i in 0..n {
                traders.push(Trader {
                    role: format!("{}_{}", side.name(), i + 1),
                    side,
                    private: TraderPrivate {
                        limits: limits(side),
                    },
                });
            }
        }
        let scenario = MarketScenario {
            schema: SCENARIO_SCHEMA,
            id: format!("market:{seed}:{index}"),
            family: MarketFamily::Market,
            source: format!("dealgym market generator, seed {seed}"),
            variant,
            shape,
            good: good.to_string(),
            traders,
            rules: MarketRules {
                rounds: match variant {
                    MarketVariant::Unit => 6,
                    MarketVariant::MultiUnit => 10,
                },
            },
        };
        // Gains from trade, not a trade alone: a value equal to a cost trades at the
        // equilibrium and gains nothing, so its market would have no efficiency to measure.
        if equilibrium(&scenario).max_surplus > 0 {
            return scenario;
        }
    }
}

/// The statistics table of a market set (the book shows it).
pub(crate) fn stats_table(scenarios: &[MarketScenario]) -> String {
    let mut out = String::from(
        "| shape | variant | markets | buyers (mean) | sellers (mean) | units traded at equilibrium (mean) | max surplus (mean) | price range width (mean) |\n|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for shape in MarketShape::ALL {
        for variant in [MarketVariant::Unit, MarketVariant::MultiUnit] {
            let group: Vec<&MarketScenario> = scenarios
                .iter()
                .filter(|s| s.shape == shape && s.variant == variant)
                .collect();
            if group.is_empty() {
                continue;
            }
            let n = group.len() as f64;
            let mean = |f: &dyn Fn(&MarketScenario) -> f64| -> f64 {
                group.iter().map(|s| f(s)).sum::<f64>() / n
            };
            let side = |side: Side| mean(&|s| s.seats_on(side).count() as f64);
            out.push_str(&format!(
                "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} |\n",
                shape.name(),
                match variant {
                    MarketVariant::Unit => "unit",
                    MarketVariant::MultiUnit => "multi-unit",
                },
                group.len(),
                side(Side::Buyer),
                side(Side::Seller),
                mean(&|s| equilibrium(s).quantity as f64),
                mean(&|s| equilibrium(s).max_surplus as f64),
                mean(&|s| {
                    let e = equilibrium(s);
                    (e.price_high - e.price_low) as f64
                }),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::market::validate_market;

    fn shipped() -> std::path::PathBuf {
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("scenarios/market.jsonl")
    }

    /// `scenarios/market.jsonl` is what the generator writes with the shipped seed and count,
    /// byte for byte (`DEALGYM_BLESS=1` writes it).
    #[test]
    fn the_shipped_file_is_the_generators() {
        let markets = generate(COUNT, SEED);
        let mut text = String::new();
        for m in &markets {
            validate_market(m).unwrap();
            text.push_str(&serde_json::to_string(m).unwrap());
            text.push('\n');
        }
        if std::env::var_os("DEALGYM_BLESS").is_some() {
            std::fs::write(shipped(), &text).unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(shipped()).unwrap_or_default(),
            text,
            "scenarios/market.jsonl is stale: run `dealgym scenarios generate market`"
        );
    }

    /// The book's statistics table is the shipped set's.
    #[test]
    fn the_books_statistics_are_the_generators() {
        let book = std::fs::read_to_string(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
                .join("docs/src/families/market.md"),
        )
        .unwrap();
        let table = stats_table(&generate(COUNT, SEED));
        assert!(
            book.contains(&format!("<!-- market-stats -->\n{table}<!-- /market-stats -->")),
            "docs/src/families/market.md's statistics are stale: `dealgym scenarios generate market` prints them"
        );
    }

    #[test]
    fn the_set_is_a_third_of_each_shape_and_every_market_has_gains_from_trade() {
        let markets = generate(COUNT, SEED);
        assert!(markets.len() >= 500);
        for shape in MarketShape::ALL {
            assert_eq!(
                markets.iter().filter(|m| m.shape == shape).count(),
                COUNT / 3
            );
        }
        for m in &markets {
            let buyers = m.seats_on(Side::Buyer).count();
            let sellers = m.seats_on(Side::Seller).count();
            match m.shape {
                MarketShape::ExcessDemand => assert!(buyers > sellers, "{}", m.id),
                MarketShape::Balanced => assert_eq!(buyers, sellers, "{}", m.id),
                MarketShape::Thin => assert!(buyers <= 3 && sellers <= 3, "{}", m.id),
            }
            assert!(
                equilibrium(m).max_surplus > 0,
                "{}: no gain from trade",
                m.id
            );
            assert!(equilibrium(m).quantity > 0, "{}", m.id);
        }
        assert_eq!(generate(5, 7), generate(5, 7));
        assert_ne!(generate(5, 7), generate(5, 8));
    }
}
