//! Memory of `export` on a large record file: writes a synthetic file of token-exact episodes
//! (one real CaSiNo episode, played by hand, copied with new ids, groups and rewards), exports
//! it, and prints the export's peak resident memory (`VmHWM`, reset before the export where the
//! kernel allows). The export keeps only per-group moments, so the figure should not grow with
//! the number of episodes beyond those.
//!
//! `cargo run --release --example export_scale -- [EPISODES] [FORMAT] [GROUP_SIZE]`
//! (defaults: 1000000 trl-rollout 8). The file goes to the system's temp directory and is
//! removed afterwards.

mod common;

use common::{reset_peak, status_kib};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use dealgym::export::{export, ExportOptions, Format};
use dealgym::game::{Episode, EpisodeConfig, EpisodeSeed, FirstMover, PerSeat, Setup, TurnTokens};
use dealgym::record::{EpisodeRecord, PlayerInfo, RecordMeta, Timing};
use dealgym::reward::RewardConfig;
use dealgym::scenario::{load_scenarios, LoadOptions, Role};

/// A writer that only counts bytes.
struct Count(u64);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One played CaSiNo episode with made-up exact ids: a 64-id first prompt, 16-id suffixes and
/// 48 sampled ids per call.
fn template() -> anyhow::Result<EpisodeRecord> {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/casino.jsonl");
    let scenario = Arc::new(load_scenarios(&file, LoadOptions::default())?.scenarios[0].clone());
    let config = EpisodeConfig {
        learner_role: Some(Role::Agent1),
        first_mover: FirstMover::Learner,
        ..EpisodeConfig::default()
    };
    let seeds = EpisodeSeed {
        run: 0,
        group: 0,
        member: 0,
    };
    let setup = Setup::draw(
        &scenario,
        &config,
        PerSeat::default(),
        &mut seeds.setup_rng(),
    )?;
    let mut episode = Episode::new(scenario.clone(), setup)?;
    for (talk, action) in [
        (
            "I need food most.",
            "[SUBMIT_DEAL] food:3 water:2 firewood:1",
        ),
        (
            "Water matters to me.",
            "[SUBMIT_DEAL] food:1 water:1 firewood:2",
        ),
        (
            "Meet me halfway.",
            "[SUBMIT_DEAL] food:2 water:2 firewood:1",
        ),
        ("Deal.", "[ACCEPT_DEAL]"),
    ] {
        episode.step(format!(
            "Thought: let me see.\nTalk: {talk}\nAction: {action}"
        ))?;
    }
    let meta = RecordMeta {
        run_id: "run-scale".into(),
        seeds,
        scenario_digest: scenario.digest(),
        players: PerSeat::new(
            PlayerInfo {
                spec: "openai:policy@http://127.0.0.1:8000/v1".into(),
                model: Some("policy".into()),
            },
            PlayerInfo {
                spec: "rule:boulware".into(),
                model: None,
            },
        ),
    };
    let mut record = EpisodeRecord::from_episode(
        episode,
        meta,
        &RewardConfig::default(),
        Timing::default(),
        [],
    )
    .ok_or_else(|| anyhow::anyhow!("the template episode did not end"))?;
    let mut calls = PerSeat::new(0u32, 0u32);
    for turn in &mut record.turns {
        let k = calls[turn.seat];
        calls[turn.seat] += 1;
        let prompt = if k == 0 { 64 } else { 16 };
        turn.tokens = Some(TurnTokens {
            prompt_ids: (0..prompt).map(|i| 1000 + i).collect(),
            completion_ids: (0..48).map(|i| 5000 + 100 * k + i).collect(),
            logprobs: (0..48).map(|i| -0.01 * f64::from(i)).collect(),
            finish_reason: Some("stop".into()),
            drift: None,
            forced_from: None,
        });
    }
    Ok(record)
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let episodes: u64 = args.get(1).map_or(Ok(1_000_000), |a| a.parse())?;
    let format = match args.get(2).map(String::as_str) {
        None | Some("trl-rollout") => Format::TrlRollout,
        Some("verl") => Format::Verl,
        Some("tinker") => Format::Tinker,
        Some("messages") => Format::Messages,
        Some("prompt-completion") => Format::PromptCompletion,
        Some(other) => anyhow::bail!("unknown format {other}"),
    };
    let group_size: u64 = args.get(3).map_or(Ok(8), |a| a.parse())?;

    let file =
        std::env::temp_dir().join(format!("dealgym-export-scale-{}.jsonl", std::process::id()));
    let started = Instant::now();
    let mut record = template()?;
    let mut out = BufWriter::new(std::fs::File::create(&file)?);
    for i in 0..episodes {
        let (group, member) = (i / group_size, i % group_size);
        record.seeds.group = group;
        record.seeds.member = member;
        record.episode_id = record.seeds.episode_id();
        record.group_id = record.seeds.group_id();
        // A spread of rewards within each group: (i·37 mod 11)/10.
        record.rewards.learner = ((i * 37) % 11) as f64 / 10.0;
        record.rewards.opponent = 1.0 - record.rewards.learner;
        serde_json::to_writer(&mut out, &record)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    drop(out);
    let bytes = std::fs::metadata(&file)?.len();
    println!(
        "wrote {episodes} episodes ({:.2} GB, {} bytes per record) in {:.1} s; peak RSS so far {} KiB",
        bytes as f64 / 1e9,
        bytes / episodes.max(1),
        started.elapsed().as_secs_f64(),
        status_kib("VmHWM")
    );

    // Reset the peak so VmHWM below is the export's own (Linux: clear_refs 5).
    let reset = reset_peak();
    let before = status_kib("VmRSS");
    let started = Instant::now();
    let mut options = ExportOptions::new(vec![file.clone()], format);
    options.scenario_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut sink = Count(0);
    let summary = export(&options, &mut sink);
    let _ = std::fs::remove_file(&file);
    let summary = summary?;
    println!(
        "exported {} lines ({:.2} GB of {}) from {} episodes in {} groups in {:.1} s",
        summary.lines,
        sink.0 as f64 / 1e9,
        format.name(),
        summary.episodes,
        summary.groups,
        started.elapsed().as_secs_f64()
    );
    println!(
        "RSS before the export {before} KiB; peak RSS during it (VmHWM{}) {} KiB",
        if reset {
            ", reset before"
        } else {
            ", whole process"
        },
        status_kib("VmHWM")
    );
    Ok(())
}
