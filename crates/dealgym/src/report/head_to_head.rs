//! Head-to-head tables of a report: the cross-play matrix and the Bradley–Terry ratings, as an
//! eval prints them ([`crate::eval::EvalResults`], which `EvalTally` collects), laid out as report
//! [`Sheet`]s and an interval chart. They appear when the files hold more than one pairing of
//! players (an eval's output, or several runs reported together).

use crate::eval::EvalResults;
use crate::score::{Estimate, Rating};

use super::charts::{heatmap_chart, interval_chart, ChartError, HeatCell};
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
