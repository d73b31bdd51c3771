//! The belief probes of a set of records laid out (the book's `guide/eval.md`, "Does it know
//! what the other side wants?"): per player its mean accuracy and stated confidence, its
//! calibration table (stated confidence in bins of 20 against the accuracy reached), and its
//! mean normalised error by turn. The scores are `score::Probe`'s and every mean's
//! interval is `score::MeanEstimate`'s (the aggregates' bootstrap); this module only groups.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::record::EpisodeRecord;
use crate::score::{Estimate, MeanEstimate, Weights};

/// The confidence bins' width (0–20, 20–40, …, 80–100; 100 falls in the last).
const BIN: f64 = 20.0;
const BINS: usize = 5;

/// One player's probes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BeliefRow {
    pub player: String,
    /// Probes asked, how many of them gave no readable estimate (or failed), and how many
    /// were read but have no score defined (an order against a truth that is all ties).
    pub probes: usize,
    pub unreadable: usize,
    pub unscored: usize,
    /// Mean accuracy (0–1) of the scored probes, with its interval.
    pub accuracy: Option<Estimate>,
    /// Mean stated confidence (0–100) of the scored probes that stated one.
    pub confidence: Option<Estimate>,
}

/// One player's stated-confidence bin of the calibration table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationRow {
    pub player: String,
    /// `0–20`, …, `80–100`.
    pub bin: String,
    /// The bin's midpoint (10, 30, …), where the chart draws it.
    pub midpoint: u64,
    pub n: usize,
    /// Mean stated confidence in the bin, and mean accuracy (× 100, on the confidence's
    /// scale), each with its interval.
    pub confidence: Option<Estimate>,
    pub accuracy: Option<Estimate>,
}

/// One player's mean normalised error before one of its turns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorByTurnRow {
    pub player: String,
    pub turn: u32,
    pub error: Option<Estimate>,
}

/// What the probes of a set of records come to.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BeliefFigures {
    pub players: Vec<BeliefRow>,
    pub calibration: Vec<CalibrationRow>,
    pub error_by_turn: Vec<ErrorByTurnRow>,
}

impl BeliefFigures {
    pub fn is_empty(&self) -> bool {
        self.players.is_empty()
    }
}

#[derive(Debug, Clone, Default)]
struct PlayerTally {
    probes: usize,
    unreadable: usize,
    unscored: usize,
    accuracy: MeanEstimate,
    confidence: MeanEstimate,
    /// Per stated-confidence bin, the confidence and the accuracy (× 100) of its probes.
    bins: [(MeanEstimate, MeanEstimate); BINS],
}

/// The probes of each record, fed one at a time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Beliefs {
    players: BTreeMap<String, PlayerTally>,
    by_turn: BTreeMap<(String, u32), MeanEstimate>,
}

impl Beliefs {
    pub(crate) fn add(&mut self, record: &EpisodeRecord) {
        if record.probes.is_empty() {
            return;
        }
        let weights = Weights::of(record.bootstrap_key());
        for p in &record.probes {
            let player = record.player_name(p.seat).to_string();
            let tally = self.players.entry(player.clone()).or_default();
            tally.probes += 1;
            let Some(accuracy) = p.accuracy else {
                if p.unscored {
                    tally.unscored += 1;
                } else {
                    tally.unreadable += 1;
                }
                continue;
            };
            tally.accuracy.add_weighted(&weights, accuracy);
            if let Some(error) = p.normalized_error {
                self.by_turn
                    .entry((player, p.turn))
                    .or_default()
                    .add_weighted(&weights, error);
            }
            if let Some(c) = p.confidence {
                tally.confidence.add_weighted(&weights, c);
                let bin = ((c / BIN) as usize).min(BINS - 1);
                tally.bins[bin].0.add_weighted(&weights, c);
                tally.bins[bin].1.add_weighted(&weights, 100.0 * accuracy);
            }
        }
    }

    pub(crate) fn figures(&self) -> BeliefFigures {
        BeliefFigures {
            players: self
                .players
                .iter()
                .map(|(player, t)| BeliefRow {
                    player: player.clone(),
                    probes: t.probes,
                    unreadable: t.unreadable,
                    unscored: t.unscored,
                    accuracy: t.accuracy.estimate(),
                    confidence: t.confidence.estimate(),
                })
                .collect(),
            calibration: self
                .players
                .iter()
                .flat_map(|(player, t)| t.bins.iter().enumerate().map(move |b| (player, b)))
                .filter(|(_, (_, (c, _)))| c.n() > 0)
                .map(|(player, (i, (c, a)))| CalibrationRow {
                    player: player.clone(),
                    bin: format!("{}–{}", i as f64 * BIN, (i + 1) as f64 * BIN),
                    midpoint: (i as f64 * BIN + BIN / 2.0) as u64,
                    n: c.n(),
                    confidence: c.estimate(),
                    accuracy: a.estimate(),
                })
                .collect(),
            error_by_turn: self
                .by_turn
                .iter()
                .map(|((player, turn), e)| ErrorByTurnRow {
                    player: player.clone(),
                    turn: *turn,
                    error: e.estimate(),
                })
                .collect(),
        }
    }
}
