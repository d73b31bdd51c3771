//! How a run went: its totals, per-seat replica tables, and the summary's text and JSON.

use crate::game::{PerSeat, Seat};
use crate::llm::{replica_table, PoolReport};
use crate::record::Duplicates;
use crate::score::SeatCounts;

use super::{EpisodeKit, PrefixReport, RunStats, SeatPlayer, Selection, Shard, Stopped};

/// How a run went.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub run_id: String,
    /// The player spec of each seat, as recorded.
    pub(crate) players: PerSeat<String>,
    /// Episodes of this run's plan (of its shard, with `--shard`).
    pub planned: usize,
    /// Episodes of the whole plan, all shards together.
    pub whole_plan: usize,
    /// The shard played, if the plan was split.
    pub shard: Option<Shard>,
    /// Episodes already in the file when the run started (with `--resume`).
    pub skipped: usize,
    pub written: usize,
    pub stats: RunStats,
    pub interrupted: bool,
    /// How the run was stopped, if a signal (or the caller) stopped it.
    pub stopped: Option<Stopped>,
    /// The cut-off last line `--resume` removed from the output, if it removed one.
    pub repaired_last_line: Option<crate::record::Cut>,
    /// Episodes the file already held more than once (reported on `--resume`).
    pub duplicates: Duplicates,
    /// Wall time of the run.
    pub elapsed: std::time::Duration,
    /// What each replica served, per seat whose player lists several endpoints.
    pub replicas: Vec<SeatReplicas>,
    /// For a prefix run: the source records read, planned and skipped (by reason).
    pub prefixes: Option<PrefixReport>,
    /// Which scenarios of each file were played (split, sample, limit).
    pub selection: Selection,
}

/// The replicas of one seat's player and what each served (see [`PoolReport`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SeatReplicas {
    pub seat: Seat,
    pub(crate) player: String,
    pub pool: PoolReport,
}

impl SeatReplicas {
    /// The replicas of each seat of `kit` whose player has several, in seat order.
    pub(crate) fn of(kit: &EpisodeKit) -> Vec<SeatReplicas> {
        Seat::BOTH
            .into_iter()
            .filter_map(|seat| match &kit.players[seat] {
                SeatPlayer::Local(player) => player.replica_pool().map(|pool| SeatReplicas {
                    seat,
                    player: player.spec().to_string(),
                    pool: pool.report(),
                }),
                SeatPlayer::External { .. } => None,
            })
            .collect()
    }
}

impl RunSummary {
    /// Throughput of this run: (episodes/s, turns/s), turns counting every model call.
    pub fn throughput(&self) -> (f64, f64) {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        (self.written as f64 / secs, self.stats.calls() as f64 / secs)
    }

    /// One warning for the run if any constrained completion fell outside the constraint it was
    /// sent with: the server answered, but probably ignored the constraint field.
    pub fn constraint_warning(&self) -> Option<String> {
        let seats = self.seats_where(|c| {
            (c.constraint_violations > 0).then(|| {
                format!(
                    "{} of {} constrained completions",
                    c.constraint_violations, c.constrained
                )
            })
        })?;
        Some(format!(
            "warning: {seats} fall outside the constraint they were sent with: the server \
             probably ignored it (vLLM 0.12 and later ignore guided_regex: use \
             constrain = \"vllm\"; llama.cpp reads \"gbnf\")"
        ))
    }

    /// One note for the run if any token-exact call drifted: the exact ids were kept, but a
    /// trainer that re-renders the conversation would train on a different sequence.
    pub fn drift_warning(&self) -> Option<String> {
        let seats =
            self.seats_where(|c| (c.token_drift > 0).then(|| format!("{} calls", c.token_drift)))?;
        Some(format!(
            "note: in {seats} the exact token sequence differs from a full re-render of the \
             conversation (the chat template is not append-only, or sampled ids are not the \
             canonical tokenization): the records keep the exact ids, marked `drift`; train on \
             those, not on re-rendered text"
        ))
    }

    /// "N … of the learner (SPEC) and M … of the opponent (SPEC)" for the seats `what` finds
    /// something to say about; `None` if it finds nothing for either.
    fn seats_where(&self, what: impl Fn(&SeatCounts) -> Option<String>) -> Option<String> {
        let totals = self.stats.all().seats();
        let parts: Vec<String> = Seat::BOTH
            .into_iter()
            .filter_map(|seat| {
                what(&totals[seat])
                    .map(|said| format!("{said} of the {} ({})", seat.name(), self.players[seat]))
            })
            .collect();
        (!parts.is_empty()).then(|| parts.join(" and "))
    }

    /// The per-replica table (Markdown) of the seats whose players have replicas; empty when
    /// none has.
    pub fn replica_table(&self) -> String {
        if self.replicas.is_empty() {
            return String::new();
        }
        let pools: Vec<(String, PoolReport)> = self
            .replicas
            .iter()
            .map(|r| (format!("{} ({})", r.seat.name(), r.player), r.pool.clone()))
            .collect();
        replica_table(&pools)
    }

    /// Write the summary as JSON lines, one per family and one for all (see
    /// `RunStats::json_rows`), each with the run id; then, for players with replicas, one
    /// line per seat and replica (`seat`, `player`, `replica` index, `routing` and the
    /// [`ReplicaReport`](crate::llm::ReplicaReport) fields, `cached_share` among them).
    pub fn write_json(&self, path: &std::path::Path) -> std::io::Result<()> {
        let mut text = String::new();
        for mut row in self.stats.json_rows() {
            row["run_id"] = self.run_id.clone().into();
            if let Some(split) = &self.selection.split {
                row["scenario_split"] = split.clone().into();
            }
            if let Some(sample) = self.selection.sample {
                row["sample"] = sample.size.into();
                row["sample_seed"] = sample.seed.into();
            }
            text.push_str(&row.to_string());
            text.push('\n');
        }
        for seat in &self.replicas {
            for (i, replica) in seat.pool.replicas.iter().enumerate() {
                let mut row = serde_json::to_value(replica).unwrap_or_default();
                row["run_id"] = self.run_id.clone().into();
                row["seat"] = seat.seat.name().into();
                row["player"] = seat.player.clone().into();
                row["replica"] = i.into();
                row["routing"] = serde_json::to_value(seat.pool.routing).unwrap_or_default();
                row["cached_share"] = replica.cached_share().into();
                text.push_str(&row.to_string());
                text.push('\n');
            }
        }
        std::fs::write(path, text)
    }
}
