//! Two per-player readings of an eval beside the matrix (the book's `guide/eval.md`): whether
//! talk mattered ([`talk_rows`]: each player with and without talk against the same opponent
//! on the same setups, `--talk-ablation`), and how much the first proposal moved the deal price
//! ([`Anchors`]: the anchoring slope per player and family, next to its first-bid ratio). The
//! figures and intervals are `score`'s ([`Aggregate::difference`], [`Anchoring`]); this module
//! only pairs and lays out.

use std::collections::BTreeMap;

use serde::Serialize;

use super::grid::with_talk_name;
use super::matrix::CrossPlay;
use crate::game::{OutcomeKind, Seat};
use crate::record::EpisodeRecord;
use crate::scenario::Family;
use crate::score::{Aggregate, Anchoring, Estimate, FigureId, Weights};

/// One player against one opponent, with talk and without (its `NAME (no talk)` twin).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TalkRow {
    pub player: String,
    pub opponent: String,
    /// Deal share (a fraction) with talk, then without.
    pub deal_rate: [Option<Estimate>; 2],
    /// The learner seat's ρ over deals with talk, then without.
    pub rho_deals: [Option<Estimate>; 2],
    /// ρ per episode (no deal = 0) with talk minus without, with the two-sample bootstrap
    /// interval of [`Aggregate::difference`]: an interval that leaves out 0 says talk made a
    /// difference beyond the noise.
    pub rho_difference: Option<Estimate>,
    /// The deal share with talk minus without (a fraction), with its interval.
    pub deal_difference: Option<Estimate>,
}

/// Every pairing of the matrix played both with talk and without, over all families.
pub(crate) fn talk_rows(matrix: &CrossPlay) -> Vec<TalkRow> {
    matrix
        .cells(None)
        .into_iter()
        .filter_map(|twin| {
            let player = with_talk_name(&twin.learner)?;
            let with = matrix.aggregate(player, &twin.opponent)?;
            let without = matrix.aggregate(&twin.learner, &twin.opponent)?;
            let (a, b) = (with.figures(), without.figures());
            let deal = OutcomeKind::Deal;
            Some(TalkRow {
                player: player.to_string(),
                opponent: twin.opponent.clone(),
                deal_rate: [a.rate(deal), b.rate(deal)],
                rho_deals: [a.seats.learner.rho_deals, b.seats.learner.rho_deals],
                rho_difference: with.difference(without, FigureId::MeanRho(Seat::Learner)),
                deal_difference: with.difference(without, FigureId::Rate(deal)),
            })
        })
        .collect()
}

/// One player's anchoring on one family.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnchorRow {
    pub player: String,
    pub family: String,
    /// Deals with a first proposal, the slope's points.
    pub deals: usize,
    /// The slope of the deal price on the first proposal (both as positions; see
    /// `score::Anchoring`), with its interval.
    pub slope: Option<Estimate>,
    /// The existing first-bid ratio (the player's first offer over its budget, as buyer), for
    /// the same player and family.
    pub first_bid: Option<Estimate>,
}

/// The anchoring slope of each learner-seat player per family, fed one record at a time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Anchors {
    by_player: BTreeMap<(String, Family), Anchoring>,
}

impl Anchors {
    /// Add the record's deal, if it has an anchoring point (a deal on a price).
    pub(crate) fn add(&mut self, record: &EpisodeRecord) {
        if let Some(point) = record.anchor_point() {
            let weights = Weights::of(record.bootstrap_key());
            let key = (record.player_name(Seat::Learner).to_string(), record.family);
            self.by_player
                .entry(key)
                .or_default()
                .add_weighted(&weights, point);
        }
    }

    /// A row per player and family with a deal on a price, the first-bid ratio from `matrix`.
    pub(crate) fn rows(&self, matrix: &CrossPlay) -> Vec<AnchorRow> {
        self.by_player
            .iter()
            .map(|((player, family), anchoring)| {
                let pooled: Aggregate = matrix.pooled(*family, player);
                AnchorRow {
                    player: player.clone(),
                    family: family.name().to_string(),
                    deals: anchoring.points(),
                    slope: anchoring.slope(),
                    first_bid: pooled.figures().seats.learner.first_bid,
                }
            })
            .collect()
    }
}
