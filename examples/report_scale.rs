//! Memory of `report` on large record files: plays one episode per family with rule players,
//! copies them into a synthetic file of N episodes (new ids, three learner players, ρ spread
//! over [−0.3, 1] with one absurd price in a hundred), writes a full report of it, and prints
//! the report's peak resident memory (`VmHWM`, reset before the report where the kernel
//! allows) — then the same for 4·N episodes. The report keeps only per-group sums, a bounded
//! quantile sketch and a fixed-size transcript sample, so the two peaks should be about equal.
//! With `--eval` the file is shaped like an eval's (named players meeting the same situations),
//! so the report also rates them: the ratings' observations (one per named seat and episode)
//! wait in memory up to 262,144 and then in partition files under the report's directory, so
//! this peak too should stay about equal.
//!
//! `cargo run --release --example report_scale -- [EPISODES] [--eval]` (default 200000). Files
//! go to the system's temp directory and are removed afterwards.

mod common;

use common::{reset_peak, status_kib};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use dealgym::agents::{Position, RulePlayer, Tactic};
use dealgym::game::{Episode, EpisodeConfig, EpisodeSeed, PerSeat, Setup};
use dealgym::record::{EpisodeRecord, PlayerInfo, RecordMeta, Timing};
use dealgym::report::{report, ReportOptions, DEFAULT_TAUS, DEFAULT_TRANSCRIPTS};
use dealgym::reward::RewardConfig;
use dealgym::scenario::{load_scenarios, Family, LoadOptions};

/// One rule-vs-rule episode per family, as records.
fn templates() -> anyhow::Result<Vec<EpisodeRecord>> {
    let players = PerSeat::new(
        RulePlayer::new(Tactic::Boulware),
        RulePlayer::new(Tactic::Conceder),
    );
    let mut records = Vec::new();
    for family in Family::ALL {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios")
            .join(format!("{}.jsonl", family.name()));
        let scenario =
            Arc::new(load_scenarios(&file, LoadOptions::default())?.scenarios[0].clone());
        let seeds = EpisodeSeed {
            run: 0,
            group: 0,
            member: 0,
        };
        let setup = Setup::draw(
            &scenario,
            &EpisodeConfig::default(),
            PerSeat::default(),
            &mut seeds.setup_rng(),
        )?;
        let mut episode = Episode::new(scenario.clone(), setup)?;
        while let Some(seat) = episode.to_move() {
            let text = players[seat].complete(&Position::of(&episode, seat, 0));
            episode.step(text)?;
        }
        let meta = RecordMeta {
            run_id: "run-scale".into(),
            seeds,
            scenario_digest: scenario.digest(),
            players: PerSeat::new(
                PlayerInfo {
                    spec: "rule:boulware".into(),
                    model: None,
                },
                PlayerInfo {
                    spec: "rule:conceder".into(),
                    model: None,
                },
            ),
        };
        records.push(
            EpisodeRecord::from_episode(
                episode,
                meta,
                &RewardConfig::default(),
                Timing::default(),
                [],
            )
            .ok_or_else(|| anyhow::anyhow!("the {family} episode did not end"))?,
        );
    }
    Ok(records)
}

/// A file of `episodes` copies of the templates with their own ids, players and ρ. `eval`:
/// shaped like an eval's output — named players, each pairing its own run, the three players
/// meeting every situation (scenario and group) — so the report also rates them.
fn write_file(
    path: &Path,
    templates: &[EpisodeRecord],
    episodes: u64,
    eval: bool,
) -> anyhow::Result<u64> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let mut records = templates.to_vec();
    for i in 0..episodes {
        let situation = if eval { i / 3 } else { i };
        let record = &mut records[(situation % templates.len() as u64) as usize];
        record.seeds.group = situation;
        record.episode_id = record.seeds.episode_id();
        record.group_id = record.seeds.group_id();
        record.seats.learner.player = format!("rule:player-{}", i % 3).into();
        if eval {
            record.run_id = format!("eval-player-{}", i % 3);
            record.seats.learner.name = Some(format!("player-{}", i % 3));
            record.seats.opponent.name = Some("opponent".into());
        }
        record.outcome.outcome.rho.learner = if i % 100 == 99 {
            -40.0
        } else {
            ((i * 37) % 131) as f64 / 100.0 - 0.3
        };
        serde_json::to_writer(&mut out, record)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

fn measure(templates: &[EpisodeRecord], episodes: u64, eval: bool) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!(
        "dealgym-report-scale-{}-{episodes}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("records.jsonl");
    let started = Instant::now();
    let bytes = write_file(&file, templates, episodes, eval)?;
    println!(
        "{episodes} episodes: wrote {:.2} GB ({} bytes per record) in {:.1} s",
        bytes as f64 / 1e9,
        bytes / episodes.max(1),
        started.elapsed().as_secs_f64()
    );
    // Reset the peak so VmHWM below is the report's own (Linux: clear_refs 5).
    let reset = reset_peak();
    let before = status_kib("VmRSS");
    let started = Instant::now();
    let summary = report(&ReportOptions {
        files: vec![file.clone()],
        out: dir.join("report"),
        transcripts: DEFAULT_TRANSCRIPTS,
        sample_seed: 0,
        taus: DEFAULT_TAUS.to_vec(),
        quiet: true,
        on_duplicate: Default::default(),
        training_control: None,
        scenarios: Vec::new(),
    });
    let elapsed = started.elapsed().as_secs_f64();
    let peak = status_kib("VmHWM");
    let _ = std::fs::remove_dir_all(&dir);
    let summary = summary?;
    println!(
        "{episodes} episodes: report in {elapsed:.1} s ({:.1} µs per episode, {} transcripts); RSS before {before} KiB, peak during (VmHWM{}) {peak} KiB",
        elapsed * 1e6 / episodes as f64,
        summary.transcripts,
        if reset { ", reset before" } else { ", whole process" },
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let episodes: u64 = std::env::args().nth(1).map_or(Ok(200_000), |a| a.parse())?;
    let eval = std::env::args().nth(2).is_some_and(|a| a == "--eval");
    let templates = templates()?;
    measure(&templates, episodes, eval)?;
    measure(&templates, 4 * episodes, eval)?;
    Ok(())
}
