//! The belief probes' tables and charts of a report (the book's `guide/eval.md`, "Does it
//! know what the other side wants?"): per player its accuracy and confidence, its calibration
//! rows by stated confidence, its error by turn, and their two charts (a line per player). The figures are the
//! eval's (`eval::beliefs`, which `EvalTally` collects); this module lays them out.

use crate::eval::EvalResults;
use crate::score::Estimate;

use super::charts::{line_chart, ChartError, Series};
use super::sheet::{Cell, Column, Sheet};

/// "Belief probes": per player, its probes, the unreadable and unscored ones, its mean accuracy and mean
/// stated confidence with their intervals. `None` without probes.
pub(crate) fn beliefs_table(eval: &EvalResults) -> Option<Sheet> {
    let figures = eval.beliefs();
    let rows: Vec<Vec<Cell>> = figures
        .players
        .iter()
        .map(|r| {
            vec![
                Cell::Text(r.player.clone()),
                Cell::Count(r.probes as u64),
                Cell::Count(r.unreadable as u64),
                Cell::Count(r.unscored as u64),
                Cell::Estimate(r.accuracy, 3),
                Cell::Estimate(r.confidence, 1),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| Sheet {
        name: "belief_probes".into(),
        title: "Belief probes: each player's estimate of the other side's private values, its \
                accuracy (1: exact; a price's 1 − error / listing price, an order's (1 + \
                Spearman ρ)/2) and its stated confidence (0–100)"
            .into(),
        columns: vec![
            Column::new("player", "player"),
            Column::new("probes", "probes"),
            Column::new("unreadable", "unreadable"),
            Column::new("unscored", "unscored"),
            Column::new("mean accuracy", "accuracy"),
            Column::new("mean confidence", "confidence"),
        ],
        rows,
    })
}

/// "Belief calibration": per player, its probes by stated confidence (bins of 20), each bin's
/// count, mean confidence and mean accuracy on the same 0–100 scale with their intervals — a
/// calibrated player's accuracy matches its confidence bin by bin. `None` without probes.
pub(crate) fn calibration_table(eval: &EvalResults) -> Option<Sheet> {
    let rows: Vec<Vec<Cell>> = eval
        .beliefs()
        .calibration
        .iter()
        .map(|r| {
            vec![
                Cell::Text(r.player.clone()),
                Cell::Text(r.bin.clone()),
                Cell::Count(r.n as u64),
                Cell::Estimate(r.confidence, 1),
                Cell::Estimate(r.accuracy, 1),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| Sheet {
        name: "belief_calibration".into(),
        title: "Belief calibration: each player's probes by stated confidence, with the accuracy \
                they reached (× 100, on the confidence's scale); calibrated, a player's two \
                columns agree"
            .into(),
        columns: vec![
            Column::new("player", "player"),
            Column::new("stated confidence", "bin"),
            Column::new("n", "n"),
            Column::new("mean confidence", "confidence"),
            Column::new("mean accuracy × 100", "accuracy"),
        ],
        rows,
    })
}

/// "Belief error by turn": per player and turn probed, the mean normalised error (a price's
/// error over the listing price, an order's (1 − ρ)/2) with its interval. `None` without
/// probes.
pub(crate) fn belief_error_table(eval: &EvalResults) -> Option<Sheet> {
    let rows: Vec<Vec<Cell>> = eval
        .beliefs()
        .error_by_turn
        .iter()
        .map(|r| {
            vec![
                Cell::Text(r.player.clone()),
                Cell::Count(u64::from(r.turn)),
                Cell::Count(r.error.map_or(0, |e| e.n as u64)),
                Cell::Estimate(r.error, 3),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| Sheet {
        name: "belief_error_by_turn".into(),
        title: "Belief error by turn: each player's mean normalised error before its own turns \
                (0: exact; a price's error over the listing price, an order's (1 − Spearman \
                ρ)/2)"
            .into(),
        columns: vec![
            Column::new("player", "player"),
            Column::new("turn", "turn"),
            Column::new("probes", "probes"),
            Column::new("mean error", "error"),
        ],
        rows,
    })
}

/// The belief charts: the error against the turn (a line per player) and the accuracy against
/// the stated confidence (a line per player through its bins, beside the line a calibrated
/// player's accuracy would follow: the bin's midpoint). Empty without probes.
pub(crate) fn belief_charts(
    eval: &EvalResults,
) -> Result<Vec<(String, String, String)>, ChartError> {
    let figures = eval.beliefs();
    let mut charts = Vec::new();
    let mut by_player: Vec<Series> = Vec::new();
    for r in &figures.error_by_turn {
        let Some(e) = r.error else { continue };
        match by_player.last_mut().filter(|s| s.name == r.player) {
            Some(s) => s.points.push((u64::from(r.turn), e)),
            None => by_player.push(Series {
                name: r.player.clone(),
                points: vec![(u64::from(r.turn), e)],
            }),
        }
    }
    if !by_player.is_empty() {
        let title = "Belief error against the turn";
        charts.push((
            "belief_error_by_turn".to_string(),
            "Each player's mean normalised error in its belief probes, by its own turn".to_string(),
            line_chart(
                title,
                "the seat's own turn",
                "mean error (0: exact)",
                &by_player,
                (0.0, 1.0),
            )?,
        ));
    }
    // A line per player through its bins' accuracy, beside the line a calibrated player's
    // would follow (accuracy = the bin's confidence, at its midpoint).
    let mut series: Vec<Series> = Vec::new();
    for r in &figures.calibration {
        let Some(a) = r.accuracy else { continue };
        match series.last_mut().filter(|s| s.name == r.player) {
            Some(s) => s.points.push((r.midpoint, a)),
            None => series.push(Series {
                name: r.player.clone(),
                points: vec![(r.midpoint, a)],
            }),
        }
    }
    if !series.is_empty() {
        let title = "Stated confidence against accuracy";
        let midpoints: std::collections::BTreeSet<u64> =
            figures.calibration.iter().map(|r| r.midpoint).collect();
        series.push(Series {
            name: "calibrated (accuracy = confidence)".into(),
            points: midpoints
                .into_iter()
                .map(|m| {
                    let at = m as f64;
                    (
                        m,
                        Estimate {
                            value: at,
                            low: at,
                            high: at,
                            n: 0,
                        },
                    )
                })
                .collect(),
        });
        charts.push((
            "belief_calibration".to_string(),
            "Each player's belief-probe accuracy (× 100) by stated-confidence bin, beside the \
             line of a calibrated player"
                .to_string(),
            line_chart(
                title,
                "stated confidence (bin midpoint)",
                "0–100",
                &series,
                (0.0, 100.0),
            )?,
        ));
    }
    Ok(charts)
}
