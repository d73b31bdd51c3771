//! Head-to-head tables of a report: the cross-play matrix and the Bradley–Terry ratings, as an
//! eval prints them ([`crate::eval::EvalResults`], which `EvalTally` collects), laid out as report
//! [`Sheet`]s and an interval chart. They appear when the files hold more than one pairing of
//! players (an eval's output, or several runs reported together).

use crate::eval::EvalResults;
use crate::score::{Estimate, Rating};

use super::charts::{heatmap_chart, interval_chart, line_chart, ChartError, HeatCell, Series};
use super::sheet::{Cell, Column, Sheet};

/// The cross-play matrix as one long table: a row per family (then `all`) and pairing, with the
/// deal rate (in percent), the learner seat's ρ over deals beside it and its ρ per episode (no
/// deal = 0), each with its interval, and its regret against a built-in rule where some pairing
/// has one (the oracle's ρ less its own, `score::oracle`). `None` when
/// the files hold a single pairing: the aggregate tables already say everything then.
pub(crate) fn crossplay_table(eval: &EvalResults) -> Option<Sheet> {
    let matrix = eval.matrix();
    let pairings = matrix.cells(None).len();
    if pairings < 2 {
        return None;
    }
    // The learner seat's regret against a built-in rule, where some pairing has one.
    let regret = matrix.cells(None).iter().any(|c| c.regret.is_some());
    let families = matrix.families().into_iter().map(Some).chain([None]);
    let rows = families
        .flat_map(|family| {
            let name = family.map_or("all".to_string(), |f| f.to_string());
            matrix.cells(family).into_iter().map(move |c| {
                let mut row = vec![
                    Cell::Text(name.clone()),
                    Cell::Text(c.learner),
                    Cell::Text(c.opponent),
                    Cell::Count(c.episodes as u64),
                    Cell::Count(c.errors as u64),
                    Cell::Estimate(c.deal_rate.map(|e| e.scaled(100.0)), 1),
                    Cell::Estimate(c.rho_deals, 3),
                    Cell::Estimate(c.mean_rho, 3),
                ];
                if regret {
                    row.push(Cell::Estimate(c.regret, 3));
                }
                row
            })
        })
        .collect();
    let mut columns = vec![
        Column::new("family", "family"),
        Column::new("player", "player"),
        Column::new("opponent", "opponent"),
        Column::new("episodes", "episodes"),
        Column::new("errors", "errors"),
        Column::new("deal %", "deal_pct"),
        Column::new("ρ over deals", "rho_deals"),
        Column::new("ρ per episode (no deal = 0)", "mean_rho"),
    ];
    if regret {
        columns.push(Column::new("regret", "regret"));
    }
    Some(Sheet {
        name: "crossplay".into(),
        title: "How each player did against each opponent, per family (the player in the learner \
                seat)"
            .into(),
        columns,
        rows,
    })
}

/// "Does talk matter?" (`eval --talk-ablation`): a row per player and opponent played with and
/// without talk, the deal % and ρ over deals each way and the difference of ρ per episode
/// (talk − no talk) with its interval, as the eval prints it. `None` without such pairs.
pub(crate) fn talk_table(eval: &EvalResults) -> Option<Sheet> {
    let rows: Vec<Vec<Cell>> = eval
        .talk()
        .into_iter()
        .map(|r| {
            let pct = |e: Option<Estimate>| Cell::Estimate(e.map(|e| e.scaled(100.0)), 1);
            vec![
                Cell::Text(r.player),
                Cell::Text(r.opponent),
                pct(r.deal_rate[0]),
                pct(r.deal_rate[1]),
                Cell::Estimate(r.rho_deals[0], 3),
                Cell::Estimate(r.rho_deals[1], 3),
                Cell::Estimate(r.rho_difference, 3),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| Sheet {
        name: "talk".into(),
        title: "Does talk matter? Each player with talk and without (talk withheld from both \
                seats), against the same opponent on the same setups"
            .into(),
        columns: vec![
            Column::new("player", "player"),
            Column::new("opponent", "opponent"),
            Column::new("deal % with talk", "deal_pct_talk"),
            Column::new("deal % without", "deal_pct_no_talk"),
            Column::new("ρ over deals with talk", "rho_deals_talk"),
            Column::new("ρ over deals without", "rho_deals_no_talk"),
            Column::new("Δ ρ per episode (talk − none)", "rho_difference"),
        ],
        rows,
    })
}

/// "Anchoring": per player (learner seat) and family with deals on a price, the slope of the
/// deal price on the first proposal with its interval, beside its first-bid ratio, as the
/// eval prints it. `None` without such deals.
pub(crate) fn anchoring_table(eval: &EvalResults) -> Option<Sheet> {
    let rows: Vec<Vec<Cell>> = eval
        .anchoring()
        .iter()
        .map(|r| {
            vec![
                Cell::Text(r.player.clone()),
                Cell::Text(r.family.clone()),
                Cell::Count(r.deals as u64),
                Cell::Estimate(r.slope, 2),
                Cell::Estimate(r.first_bid, 3),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| Sheet {
        name: "anchoring".into(),
        title: "Anchoring: how far the deal price follows the first proposal (slope of one on \
                the other across setups, both as a position in the bargaining range; 1: the \
                deal lands where the first proposal put it, 0: it does not move it)"
            .into(),
        columns: vec![
            Column::new("player", "player"),
            Column::new("family", "family"),
            Column::new("deals", "deals"),
            Column::new("slope", "slope"),
            Column::new("first bid / budget", "first_bid"),
        ],
        rows,
    })
}

/// The ratings table, in the leaderboard's order (group by group, highest first in each); `None`
/// when no two players could be compared. Which group each player is in is [`groups_table`]'s,
/// and which comparisons connect them the page says beside the table.
pub(crate) fn ratings_table(ratings: &[Rating]) -> Option<Sheet> {
    rated(ratings).next()?;
    let rows = ratings
        .iter()
        .map(|r| {
            vec![
                Cell::Text(r.player.clone()),
                Cell::Estimate(estimate(r), 0),
                Cell::Count(r.comparisons as u64),
                Cell::Number(Some(r.wins), 1),
            ]
        })
        .collect();
    Some(Sheet {
        name: "ratings".into(),
        title: "Ratings, best first (Bradley–Terry strength from paired episodes, 400·log10 \
                scale, mean 0: a 100-point gap means the higher player wins about 64% of the \
                situations both played)"
            .into(),
        columns: vec![
            Column::new("player", "player"),
            Column::new("rating", "rating"),
            Column::new("comparisons", "comparisons"),
            Column::new("wins", "wins"),
        ],
        rows,
    })
}

/// Which group of comparable players each rated player is in (players linked by the
/// situations they shared; ratings compare within a group only); `None` when nobody is rated.
pub(crate) fn groups_table(ratings: &[Rating]) -> Option<Sheet> {
    rated(ratings).next()?;
    Some(Sheet {
        name: "rating_groups".into(),
        title: "Groups of players ranked together".into(),
        columns: vec![
            Column::new("player", "player"),
            Column::new("group", "group"),
        ],
        rows: ratings
            .iter()
            .map(|r| {
                vec![
                    Cell::Text(r.player.clone()),
                    Cell::Text(r.group.map_or_else(String::new, |g| g.to_string())),
                ]
            })
            .collect(),
    })
}

/// The ratings with their intervals as a chart; `None` when nobody is rated. Where the players
/// fall into several groups (see [`groups_table`]), each is labelled with its group.
pub(crate) fn ratings_chart(ratings: &[Rating]) -> Result<Option<String>, ChartError> {
    let several = ratings.iter().any(|r| r.group.is_some_and(|g| g > 1));
    let rows: Vec<(String, Estimate)> = rated(ratings)
        .zip(ratings.iter().filter(|r| estimate(r).is_some()))
        .map(|((name, e), r)| match r.group {
            Some(g) if several => (format!("{name} (group {g})"), e),
            _ => (name, e),
        })
        .collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let title = "Bradley–Terry rating per player";
    interval_chart(
        title,
        "rating (400·log10 strength, mean 0)",
        &rows,
        0.0,
        0.0,
    )
    .map(Some)
}

/// A rating as an estimate: the rating, its interval, and the comparisons behind it.
fn estimate(r: &Rating) -> Option<Estimate> {
    Some(Estimate {
        value: r.rating?,
        low: r.low?,
        high: r.high?,
        n: r.comparisons,
    })
}

fn rated(ratings: &[Rating]) -> impl Iterator<Item = (String, Estimate)> + '_ {
    ratings
        .iter()
        .filter_map(|r| estimate(r).map(|e| (r.player.clone(), e)))
}

/// The cross-play matrix over every family as a heatmap: a row per learner-seat player, a column
/// per opponent, each cell shaded by the learner's ρ over deals and giving it with its interval
/// and the deal rate; `None` with a single pairing (as [`crossplay_table`]).
pub(crate) fn crossplay_heatmap(eval: &EvalResults) -> Result<Option<String>, ChartError> {
    let matrix = eval.matrix();
    let cells = matrix.cells(None);
    if cells.len() < 2 {
        return Ok(None);
    }
    let (rows, columns) = matrix.players();
    let at = |names: &[String], name: &str| names.iter().position(|n| n == name);
    let heat: Vec<HeatCell> = cells
        .iter()
        .filter_map(|c| {
            let rho = c.rho_deals;
            Some(HeatCell {
                row: at(&rows, &c.learner)?,
                column: at(&columns, &c.opponent)?,
                shade: rho.map(|e| e.value),
                lines: vec![
                    rho.map_or("ρ –".to_string(), |e| format!("ρ {:.2}", e.value)),
                    rho.map_or(String::new(), |e| format!("[{:.2}, {:.2}]", e.low, e.high)),
                    format!(
                        "deal {} · n={}",
                        c.deal_rate
                            .map_or("–".to_string(), |e| format!("{:.0}%", e.value * 100.0)),
                        c.episodes
                    ),
                ],
            })
        })
        .collect();
    heatmap_chart(
        "Each player against each opponent (all families)",
        &rows,
        &columns,
        &heat,
    )
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rating(player: &str, value: Option<f64>) -> Rating {
        Rating {
            player: player.into(),
            rating: value,
            low: value.map(|v| v - 10.0),
            high: value.map(|v| v + 10.0),
            comparisons: if value.is_some() { 4 } else { 0 },
            wins: 2.0,
            group: value.map(|_| 1),
        }
    }

    #[test]
    fn ratings_become_a_table_and_a_chart_only_when_someone_is_rated() {
        assert!(ratings_table(&[rating("a", None)]).is_none());
        assert!(groups_table(&[rating("a", None)]).is_none());
        assert!(ratings_chart(&[rating("a", None)])
            .expect("no chart to draw")
            .is_none());
        let ratings = [rating("a", Some(50.0)), rating("b", Some(-50.0))];
        let table = ratings_table(&ratings).expect("a table");
        assert_eq!(table.rows.len(), 2);
        // The ratings CSV keeps its columns; the groups have their own.
        let csv = table.csv();
        assert!(
            csv.starts_with("player,rating,rating_low,rating_high,comparisons,wins\n"),
            "{csv}"
        );
        assert!(
            csv.contains("a,50.000000,40.000000,60.000000,4,2.000000\n"),
            "{csv}"
        );
        let groups = groups_table(&ratings).expect("groups").csv();
        assert_eq!(groups, "player,group\na,1\nb,1\n");
        let svg = ratings_chart(&ratings).expect("drawn").expect("a chart");
        assert!(svg.contains("<svg"), "{svg}");
    }
}

/// "Belief probes": per player, its probes, the unreadable ones, its mean accuracy and mean
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
            Column::new("mean accuracy", "accuracy"),
            Column::new("mean confidence", "confidence"),
        ],
        rows,
    })
}

/// "Belief calibration": the probes by stated confidence (bins of 20), each bin's count, mean
/// confidence and mean accuracy on the same 0–100 scale with their intervals — a calibrated
/// player's accuracy matches its confidence bin by bin. `None` without probes.
pub(crate) fn calibration_table(eval: &EvalResults) -> Option<Sheet> {
    let rows: Vec<Vec<Cell>> = eval
        .beliefs()
        .calibration
        .iter()
        .map(|r| {
            vec![
                Cell::Text(r.bin.clone()),
                Cell::Count(r.n as u64),
                Cell::Estimate(r.confidence, 1),
                Cell::Estimate(r.accuracy, 1),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| Sheet {
        name: "belief_calibration".into(),
        title: "Belief calibration: probes by stated confidence, with the accuracy they reached \
                (× 100, on the confidence's scale); calibrated, the two columns agree"
            .into(),
        columns: vec![
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
/// the stated confidence (the accuracy per bin, beside the confidence itself: the line a
/// calibrated player's accuracy would follow). Empty without probes.
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
    let accuracy: Vec<(u64, Estimate)> = figures
        .calibration
        .iter()
        .filter_map(|r| Some((r.midpoint, r.accuracy?)))
        .collect();
    let stated: Vec<(u64, Estimate)> = figures
        .calibration
        .iter()
        .filter_map(|r| Some((r.midpoint, r.confidence?)))
        .collect();
    if !accuracy.is_empty() {
        let title = "Stated confidence against accuracy";
        let series = [
            Series {
                name: "accuracy × 100".into(),
                points: accuracy,
            },
            Series {
                name: "stated confidence".into(),
                points: stated,
            },
        ];
        charts.push((
            "belief_calibration".to_string(),
            "The belief probes' accuracy by stated-confidence bin, beside the confidence itself"
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
