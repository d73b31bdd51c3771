//! ZI-C self-play over the market set (issue 45): every seat `rule:zic`, each market played
//! with `--episodes` seeds, and the mean allocative efficiency with its bootstrap 95 %
//! interval (resampling markets: a market's seeds are drawn together, never as independent
//! episodes), per shape and variant and overall — the figure the book's `families/market.md`
//! sets beside Gode & Sunder's (1993).
//!
//! `cargo run --example market_zic [-- --count N --episodes K --rule zic|truthful|sniper --rounds R]`
//! (`--rounds` replaces every market's cap on rounds: how much the cap holds ZI-C back).

use std::sync::Arc;

use dealgym_core::engine::drive_now;
use dealgym_core::game::Prompts;
use dealgym_core::market::{MarketEpisode, MarketOptions, MarketSetup};
use dealgym_core::negotiator::market::{MarketRule, MarketTraders};
use dealgym_core::scenario::generate::generate_markets;
use dealgym_core::scenario::{MarketShape, MarketVariant};
use dealgym_core::score::{cell, market_metrics, MarketTally};

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() -> anyhow::Result<()> {
    let count: Option<usize> = arg("--count").map(|c| c.parse()).transpose()?;
    let episodes: u64 = arg("--episodes")
        .map(|c| c.parse())
        .transpose()?
        .unwrap_or(5);
    let rule = match arg("--rule") {
        Some(name) => MarketRule::from_name(&name)
            .ok_or_else(|| anyhow::anyhow!("--rule {name}: zic, sniper or truthful"))?,
        None => MarketRule::Zic,
    };
    let rounds: Option<u32> = arg("--rounds").map(|c| c.parse()).transpose()?;
    let mut markets = generate_markets(None, None);
    if let Some(r) = rounds {
        for m in &mut markets {
            m.rules.rounds = r;
        }
    }
    let markets = &markets[..count.unwrap_or(markets.len()).min(markets.len())];
    let prompts = Prompts::builtin();
    let mut all = MarketTally::default();
    let mut groups: Vec<((MarketShape, MarketVariant), MarketTally)> = Vec::new();
    let mut with_trades = 0usize;
    for (i, m) in markets.iter().enumerate() {
        let scenario = Arc::new(m.clone());
        for k in 0..episodes {
            let seed = (i as u64) * 1000 + k;
            let setup = MarketSetup::new(m, &MarketOptions::default(), seed, &prompts)?;
            let mut e = MarketEpisode::new(scenario.clone(), setup, prompts.clone())?;
            drive_now(
                &mut e,
                &mut MarketTraders(vec![Some(rule); m.traders.len()]),
            )?;
            let metrics = market_metrics(e.scenario(), e.book(), e.turns());
            with_trades += usize::from(!e.book().trades.is_empty());
            // The bootstrap key is the market's: its seeds are one draw of the set.
            let market_key = i as u64;
            all.add(market_key, &metrics);
            let key = (m.shape, m.variant);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, t)) => t.add(market_key, &metrics),
                None => {
                    let mut t = MarketTally::default();
                    t.add(market_key, &metrics);
                    groups.push((key, t));
                }
            }
        }
    }
    println!("| markets | variant | episodes | efficiency (95 % CI) | extra-marginal trades |");
    println!("|---|---|---:|---|---:|");
    groups.sort_by_key(|(k, _)| *k);
    let row = |label: &str, variant: &str, t: &MarketTally| {
        let (trades, extra) = t.trades();
        println!(
            "| {label} | {variant} | {} | {} | {:.1} % |",
            t.episodes(),
            cell(t.efficiency().map(|e| e.scaled(100.0)), 1),
            100.0 * extra as f64 / trades.max(1) as f64
        );
    };
    for ((shape, variant), t) in &groups {
        let v = match variant {
            MarketVariant::Unit => "unit",
            MarketVariant::MultiUnit => "multi-unit",
        };
        row(shape.name(), v, t);
    }
    row("all", "both", &all);
    println!(
        "\nrule:{}; rounds: {}; {} of {} episodes traded; anchoring slope {}",
        rule.name(),
        rounds.map_or_else(|| "the set's caps".to_string(), |r| r.to_string()),
        with_trades,
        all.episodes(),
        cell(all.anchoring(), 2)
    );
    Ok(())
}
