//! Print the system prompts of the first scenario of a scenario file, for both roles.
//! `cargo run --example show_prompt -- scenarios/casino.jsonl [xml]`

use std::sync::Arc;

use dealgym::game::{Episode, EpisodeConfig, EpisodeSeed, FirstMover, PerSeat, Seat, Setup};
use dealgym::protocol::TurnFormat;
use dealgym::scenario::{load_scenarios, LoadOptions};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .map(String::as_str)
        .unwrap_or("scenarios/casino.jsonl");
    let format = if args.get(2).map(String::as_str) == Some("xml") {
        TurnFormat::Xml
    } else {
        TurnFormat::Tagged
    };
    let report = load_scenarios(path.as_ref(), LoadOptions::default())?;
    let scenario = Arc::new(report.scenarios[0].clone());
    let config = EpisodeConfig {
        first_mover: FirstMover::Learner,
        learner_format: format,
        opponent_format: format,
        ..EpisodeConfig::default()
    };
    let seed = EpisodeSeed {
        run: 0,
        group: 0,
        member: 0,
    };
    let setup = Setup::draw(
        &scenario,
        &config,
        PerSeat::default(),
        &mut seed.setup_rng(),
    )?;
    let episode = Episode::new(scenario, setup)?;
    for seat in Seat::BOTH {
        println!(
            "===== {seat} ({})\n{}\n",
            episode.setup().seats[seat].role,
            episode.system_prompt(seat)
        );
    }
    Ok(())
}
