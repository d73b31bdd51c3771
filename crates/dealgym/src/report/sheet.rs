//! A report's tables, each written three ways from one [`Sheet`]: Markdown (report.md), CSV
//! (tables/NAME.csv, one column per number: an estimate gives `key`, `key_low`, `key_high`)
//! and HTML (report.html). Figures come from [`crate::score`]; the cells read `value [low,
//! high]` like the run summary's ([`cell`]).
//!
//! CSV numbers are written with six decimals (`-0.350000`), percentages in percent; an empty
//! field is a figure no episode gives. Markdown shows the learner seat's figures; the CSV
//! has both seats'.

use std::fmt::Write as _;

use crate::game::{OutcomeKind, PerSeat, Seat};
use crate::replay::render::escape;
use crate::score::{cell, Aggregate, Estimate, SeatFigures, RATED_ENDINGS};

use super::groups::{Dimension, Groups};

/// One cell of a table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Text(String),
    Count(u64),
    /// A number shown with this many decimals (`None`: no value).
    Number(Option<f64>, usize),
    /// An estimate with its interval, shown with this many decimals.
    Estimate(Option<Estimate>, usize),
}

/// A column: its Markdown/HTML heading, its CSV key, and whether Markdown and HTML show it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Column {
    pub heading: String,
    pub key: String,
    pub shown: bool,
}

impl Column {
    pub fn new(heading: impl Into<String>, key: impl Into<String>) -> Column {
        Column {
            heading: heading.into(),
            key: key.into(),
            shown: true,
        }
    }

    /// A column only the CSV has.
    pub(crate) fn csv_only(heading: impl Into<String>, key: impl Into<String>) -> Column {
        Column {
            shown: false,
            ..Column::new(heading, key)
        }
    }
}

/// A table: a file name (tables/NAME.csv), a title, columns and rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sheet {
    pub name: String,
    pub title: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

impl Sheet {
    pub fn markdown(&self) -> String {
        let shown: Vec<usize> = (0..self.columns.len())
            .filter(|i| self.columns[*i].shown)
            .collect();
        let mut out = format!("| {} |\n", self.headings(&shown).join(" | "));
        out.push('|');
        for &i in &shown {
            out.push_str(if i == 0 { "---|" } else { "---:|" });
        }
        out.push('\n');
        for row in &self.rows {
            let cells: Vec<String> = shown
                .iter()
                .map(|&i| shown_text(&row[i]).replace('|', "\\|"))
                .collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out
    }

    /// The table as HTML, in parts of at most six shown columns after the first
    /// (which each part repeats), so no part needs sideways scrolling; an estimate's interval
    /// under its value. The first part has the id `table-NAME`, the next `table-NAME-2`, ….
    pub fn html(&self) -> String {
        let shown: Vec<usize> = (0..self.columns.len())
            .filter(|i| self.columns[*i].shown)
            .collect();
        let Some((&first, rest)) = shown.split_first() else {
            return String::new();
        };
        let parts: Vec<Vec<usize>> = if rest.is_empty() {
            vec![vec![first]]
        } else {
            rest.chunks(HTML_COLUMNS)
                .map(|chunk| {
                    std::iter::once(first)
                        .chain(chunk.iter().copied())
                        .collect()
                })
                .collect()
        };
        let mut out = String::new();
        for (k, part) in parts.iter().enumerate() {
            let id = if k == 0 {
                format!("table-{}", self.name)
            } else {
                format!("table-{}-{}", self.name, k + 1)
            };
            let _ = write!(out, "<table class=\"figures\" id=\"{id}\">\n<tr>");
            for h in self.headings(part) {
                let _ = write!(out, "<th>{}</th>", escape(&h));
            }
            out.push_str("</tr>\n");
            for row in &self.rows {
                out.push_str("<tr>");
                for &i in part {
                    let class = if matches!(row[i], Cell::Text(_)) {
                        ""
                    } else {
                        " class=\"num\""
                    };
                    let _ = write!(out, "<td{class}>{}</td>", cell_html(&row[i]));
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</table>\n");
        }
        out
    }

    pub fn csv(&self) -> String {
        let mut header = Vec::new();
        for (c, column) in self.columns.iter().enumerate() {
            match self.rows.first().map(|r| &r[c]) {
                Some(Cell::Estimate(..)) => {
                    header.push(column.key.clone());
                    header.push(format!("{}_low", column.key));
                    header.push(format!("{}_high", column.key));
                }
                _ => header.push(column.key.clone()),
            }
        }
        let mut out = csv_line(&header);
        for row in &self.rows {
            let mut fields = Vec::new();
            for c in row {
                match c {
                    Cell::Text(t) => fields.push(t.clone()),
                    Cell::Count(n) => fields.push(n.to_string()),
                    Cell::Number(x, _) => fields.push(csv_number(*x)),
                    Cell::Estimate(e, _) => {
                        fields.push(csv_number(e.map(|e| e.value)));
                        fields.push(csv_number(e.map(|e| e.low)));
                        fields.push(csv_number(e.map(|e| e.high)));
                    }
                }
            }
            out.push_str(&csv_line(&fields));
        }
        out
    }

    /// The same rows with only the columns whose CSV keys are `keys`, in that order (a view
    /// of a table for the page's first screen; its CSV stays the whole table's).
    pub(crate) fn with_columns(&self, name: &str, title: &str, keys: &[&str]) -> Sheet {
        let at: Vec<usize> = keys
            .iter()
            .filter_map(|k| self.columns.iter().position(|c| c.key == *k))
            .collect();
        Sheet {
            name: name.into(),
            title: title.into(),
            columns: at
                .iter()
                .map(|&i| Column {
                    shown: true,
                    ..self.columns[i].clone()
                })
                .collect(),
            rows: self
                .rows
                .iter()
                .map(|row| at.iter().map(|&i| row[i].clone()).collect())
                .collect(),
        }
    }

    fn headings(&self, shown: &[usize]) -> Vec<String> {
        shown
            .iter()
            .map(|&i| self.columns[i].heading.clone())
            .collect()
    }
}

/// The most columns (after the first) one HTML table part shows: a part of the widest tables
/// fits 800 px with each interval under its value.
pub(crate) const HTML_COLUMNS: usize = 6;

/// A cell as HTML: an estimate's interval on a line of its own, under the value.
fn cell_html(c: &Cell) -> String {
    match c {
        Cell::Estimate(Some(e), digits) => {
            let text = cell(Some(*e), *digits);
            match text.split_once(' ') {
                Some((value, interval)) => format!(
                    "{}<br><span class=\"ci\">{}</span>",
                    escape(value),
                    escape(interval)
                ),
                None => escape(&text),
            }
        }
        other => escape(&shown_text(other)),
    }
}

fn shown_text(c: &Cell) -> String {
    match c {
        Cell::Text(t) => t.clone(),
        Cell::Count(n) => n.to_string(),
        Cell::Number(Some(x), digits) => format!("{x:.digits$}"),
        Cell::Number(None, _) => "–".to_string(),
        Cell::Estimate(e, digits) => cell(*e, *digits),
    }
}

/// A number in a CSV field: six decimals, empty for none.
pub(crate) fn csv_number(x: Option<f64>) -> String {
    x.map_or(String::new(), |x| format!("{x:.6}"))
}

/// One CSV record (RFC 4180): fields with a comma, quote or line break are quoted.
fn csv_line(fields: &[String]) -> String {
    let quoted: Vec<String> = fields
        .iter()
        .map(|f| {
            if f.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                f.clone()
            }
        })
        .collect();
    format!("{}\n", quoted.join(","))
}

/// The figures of every group along `dimension`: the book's `design/metrics.md`'s aggregates with
/// their intervals — the deal rate with the bargained ratio over deals beside it (as the papers
/// report them), then the other endings, per seat ρ per episode with its median and clipped mean,
/// reward, points, score ratio, first bid, format, malformed, malformed-deal and regulation rates,
/// sale-to-list and SL, then Pareto % and the turn figures — with counts of episodes and backend
/// errors; where any group has bundle deals, the share whose bundle grew the pie and the mean
/// integrative gain; where any group has a seat that faced a built-in rule, each seat's regret
/// (the oracle's ρ less its own); where any group has a narrated seat, its consistency (the
/// share of its narrated turns whose Talk keeps to the decided move).
pub(crate) fn aggregate_table(groups: &Groups, dimension: Dimension) -> Sheet {
    let mut columns = vec![
        Column::new(
            match dimension {
                Dimension::All => "group",
                d => d.name(),
            },
            "group",
        ),
        Column::new("episodes", "episodes"),
        Column::new("errors", "errors"),
    ];
    for kind in RATED_ENDINGS {
        columns.push(Column::new(
            format!("{} %", ending_heading(kind)),
            format!("{}_pct", kind.name()),
        ));
        if kind == OutcomeKind::Deal {
            for seat in Seat::BOTH {
                columns.push(seat_column(seat, RHO_DEALS, seat == Seat::Learner));
            }
        }
    }
    for (seat, i) in seat_order() {
        let shown = match seat {
            Seat::Learner => !CSV_ONLY.contains(&i),
            Seat::Opponent => OPPONENT_SHOWN.contains(&i),
        };
        columns.push(seat_column(seat, SEAT_COLUMNS[i], shown));
    }
    columns.push(Column::new("Pareto %", "pareto_pct"));
    columns.push(Column::new("turns", "mean_turns"));
    columns.push(Column::new("turns to deal", "turns_to_deal"));
    columns.push(Column::new("AT (no deal = cap)", "average_turns"));
    columns.push(Column::csv_only("moves (no deal = cap)", "average_moves"));
    // The bundle family's integrative figures, where any group has a bundle deal.
    let bundles = groups
        .of(dimension)
        .any(|(_, a)| a.figures().integrative.is_some());
    if bundles {
        columns.push(Column::new("integrative %", "integrative_pct"));
        columns.push(Column::new("integrative gain", "integrative_gain"));
        columns.push(Column::new("price / list (deals)", "price_to_list"));
    }
    // Each seat's regret against a built-in rule (`score::oracle`), where any group has one.
    let regrets = groups.of(dimension).any(|(_, a)| {
        Seat::BOTH
            .iter()
            .any(|s| a.figures().seats[*s].regret.is_some())
    });
    if regrets {
        columns.extend(Seat::BOTH.map(|seat| seat_column(seat, REGRET, true)));
    }
    // Each narrated seat's consistency (`narration`), where any group has one.
    let narrated = PerSeat::from_fn(|seat| {
        groups
            .of(dimension)
            .any(|(_, a)| a.figures().seats[seat].consistency.is_some())
    });
    for seat in Seat::BOTH.into_iter().filter(|s| narrated[*s]) {
        columns.push(seat_column(seat, CONSISTENCY, true));
    }
    let rows = groups
        .of(dimension)
        .map(|(name, a)| aggregate_row(name, a, bundles, regrets, narrated))
        .collect();
    Sheet {
        name: format!("by_{}", dimension.name()),
        title: dimension.title().to_string(),
        columns,
        rows,
    }
}

/// A seat's column: `heading seat`, key `key_seat`, shown in Markdown and HTML or only in the
/// CSV.
fn seat_column(seat: Seat, (heading, key): (&str, &str), shown: bool) -> Column {
    let (heading, key) = (format!("{heading} {seat}"), format!("{key}_{seat}"));
    if shown {
        Column::new(heading, key)
    } else {
        Column::csv_only(heading, key)
    }
}

/// The oracle's ρ less the seat's, against a built-in rule (heading, key).
const REGRET: (&str, &str) = ("regret", "regret");

/// A narrated seat's turns whose Talk keeps to the decided move, in percent (heading, key).
const CONSISTENCY: (&str, &str) = ("narration consistent %", "consistency_pct");

/// The bargained ratio as the papers report it (heading, key), beside the deal rate.
pub(super) const RHO_DEALS: (&str, &str) = ("ρ over deals", "rho_deals");

/// Per seat, in order: heading and CSV key.
const SEAT_COLUMNS: [(&str, &str); 14] = [
    ("ρ per episode (no deal = 0)", "mean_rho"),
    ("median ρ per episode", "median_rho"),
    ("clipped mean ρ per episode", "clipped_mean_rho"),
    ("clipped ρ over deals", "clipped_rho_deals"),
    ("mean reward", "mean_reward"),
    ("points", "points"),
    ("score ratio", "score_ratio"),
    ("first bid", "first_bid"),
    ("format ok %", "format_ok_pct"),
    ("malformed %", "malformed_pct"),
    ("malformed deals %", "malformed_deals_pct"),
    ("regulated %", "regulated_pct"),
    ("sale-to-list (deals)", "sale_to_list"),
    ("SL (no deal = 0)", "sl"),
];

/// The seat columns Markdown and HTML show for the opponent too, right after the learner's:
/// its points (the harness paper's "Opp", beside the learner's "Pts").
const OPPONENT_SHOWN: [usize; 1] = [5];

/// The seat columns only the CSV has, for the learner too: the clipped ρ over deals, which the
/// charts plot.
const CSV_ONLY: [usize; 1] = [3];

/// The order of the seat columns: the learner's, each of [`OPPONENT_SHOWN`] followed by the
/// opponent's, then the rest of the opponent's.
fn seat_order() -> Vec<(Seat, usize)> {
    let mut order = Vec::new();
    for i in 0..SEAT_COLUMNS.len() {
        order.push((Seat::Learner, i));
        if OPPONENT_SHOWN.contains(&i) {
            order.push((Seat::Opponent, i));
        }
    }
    order.extend(
        (0..SEAT_COLUMNS.len())
            .filter(|i| !OPPONENT_SHOWN.contains(i))
            .map(|i| (Seat::Opponent, i)),
    );
    order
}

fn seat_cells(f: &SeatFigures) -> [Cell; 14] {
    let pct = |e: Option<Estimate>| Cell::Estimate(e.map(|e| e.scaled(100.0)), 1);
    [
        Cell::Estimate(f.mean_rho, 3),
        Cell::Estimate(f.median_rho, 3),
        Cell::Estimate(f.clipped_rho, 3),
        Cell::Estimate(f.clipped_rho_deals, 3),
        Cell::Estimate(f.mean_reward, 3),
        Cell::Estimate(f.points, 2),
        Cell::Estimate(f.score_ratio, 3),
        Cell::Estimate(f.first_bid, 3),
        pct(f.format_ok),
        pct(f.malformed),
        pct(f.malformed_deals),
        pct(f.regulated),
        Cell::Estimate(f.sale_to_list, 3),
        Cell::Estimate(f.sl, 3),
    ]
}

fn aggregate_row(
    name: &str,
    a: &Aggregate,
    bundles: bool,
    regrets: bool,
    narrated: PerSeat<bool>,
) -> Vec<Cell> {
    let f = a.figures();
    let pct = |e: Option<Estimate>| Cell::Estimate(e.map(|e| e.scaled(100.0)), 1);
    let mut row = vec![
        Cell::Text(name.to_string()),
        Cell::Count(a.episodes() as u64),
        Cell::Count(a.count(OutcomeKind::Error) as u64),
    ];
    for (kind, e) in RATED_ENDINGS.iter().zip(f.endings) {
        row.push(pct(e));
        if *kind == OutcomeKind::Deal {
            row.extend(Seat::BOTH.map(|seat| Cell::Estimate(f.seats[seat].rho_deals, 3)));
        }
    }
    let cells = PerSeat::from_fn(|seat| seat_cells(&f.seats[seat]));
    for (seat, i) in seat_order() {
        row.push(cells[seat][i].clone());
    }
    row.push(pct(f.pareto));
    row.push(Cell::Estimate(f.mean_turns, 1));
    row.push(Cell::Estimate(f.turns_to_deal, 1));
    row.push(Cell::Estimate(f.average_turns, 1));
    row.push(Cell::Estimate(f.average_moves, 1));
    if bundles {
        row.push(pct(f.integrative));
        row.push(Cell::Estimate(f.integrative_gain, 0));
        row.push(Cell::Estimate(f.price_to_list, 3));
    }
    if regrets {
        row.extend(Seat::BOTH.map(|seat| Cell::Estimate(f.seats[seat].regret, 3)));
    }
    for seat in Seat::BOTH.into_iter().filter(|s| narrated[*s]) {
        row.push(pct(f.seats[seat].consistency));
    }
    row
}

/// Hotel calls (REPO's price-chasing): per family and per player, the share of chase tickets
/// agreed at or below the agent's acceptable price — the paper's per-ticket task success — and
/// the agent's mean ρ per ticket, over the tickets of the calls. `None` where no episode has
/// tickets, so reports of the other families keep their tables.
pub(crate) fn ticket_table(groups: &Groups) -> Option<Sheet> {
    let rows: Vec<Vec<Cell>> = [Dimension::Family, Dimension::Player]
        .into_iter()
        .flat_map(|d| groups.of(d).map(move |(name, a)| (d, name, a)))
        .filter_map(|(d, name, a)| {
            let f = a.figures();
            let success = f.ticket_success?;
            Some(vec![
                Cell::Text(format!("{}: {name}", d.name())),
                Cell::Count(a.episodes() as u64),
                Cell::Estimate(Some(success.scaled(100.0)), 1),
                Cell::Estimate(f.ticket_rho, 3),
            ])
        })
        .collect();
    (!rows.is_empty()).then(|| Sheet {
        name: "tickets".into(),
        title: "Hotel calls: tickets agreed at or below the acceptable price, and the agent's ρ per ticket".into(),
        columns: vec![
            Column::new("group", "group"),
            Column::new("calls", "calls"),
            Column::new("ticket success %", "ticket_success_pct"),
            Column::new("agent ρ per ticket", "ticket_rho"),
        ],
        rows,
    })
}

fn ending_heading(kind: OutcomeKind) -> &'static str {
    match kind {
        OutcomeKind::Deal => "deal",
        OutcomeKind::WalkAway => "walk-away",
        OutcomeKind::RejectLoop => "reject-loop",
        OutcomeKind::MaxTurns => "max-turns",
        OutcomeKind::FormatForfeit => "format-forfeit",
        OutcomeKind::Error => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Sheet {
        Sheet {
            name: "t".into(),
            title: "T".into(),
            columns: vec![
                Column::new("name", "name"),
                Column::new("n", "n"),
                Column::new("ρ", "rho"),
                Column::csv_only("hidden", "hidden"),
            ],
            rows: vec![vec![
                Cell::Text("a, \"b\" | c".into()),
                Cell::Count(4),
                Cell::Estimate(
                    Some(Estimate {
                        value: -0.35,
                        low: -1.0,
                        high: 0.5,
                        n: 4,
                    }),
                    3,
                ),
                Cell::Number(None, 2),
            ]],
        }
    }

    #[test]
    fn csv_gives_each_bound_a_column_and_quotes_what_needs_it() {
        assert_eq!(
            table().csv(),
            "name,n,rho,rho_low,rho_high,hidden\n\"a, \"\"b\"\" | c\",4,-0.350000,-1.000000,0.500000,\n"
        );
    }

    #[test]
    fn markdown_and_html_show_the_shown_columns_with_intervals() {
        let md = table().markdown();
        assert_eq!(
            md,
            "| name | n | ρ |\n|---|---:|---:|\n| a, \"b\" \\| c | 4 | -0.350 [-1.000, 0.500] |\n"
        );
        let html = table().html();
        assert!(html.contains("<td>a, &quot;b&quot; | c</td>"), "{html}");
        assert!(html.contains(
            "<td class=\"num\">-0.350<br><span class=\"ci\">[-1.000, 0.500]</span></td>"
        ));
        assert!(!html.contains("hidden"));
    }

    /// A wide table is shown in parts of at most `HTML_COLUMNS` columns, each repeating the
    /// first, so none scrolls sideways; its CSV is one table whatever its width.
    #[test]
    fn a_wide_table_is_shown_in_parts_that_repeat_its_first_column() {
        let columns: Vec<Column> = std::iter::once(Column::new("name", "name"))
            .chain((0..HTML_COLUMNS + 2).map(|i| Column::new(format!("c{i}"), format!("c{i}"))))
            .collect();
        let row: Vec<Cell> = std::iter::once(Cell::Text("x".into()))
            .chain((0..HTML_COLUMNS + 2).map(|i| Cell::Count(i as u64)))
            .collect();
        let wide = Sheet {
            name: "wide".into(),
            title: "wide".into(),
            columns,
            rows: vec![row],
        };
        let html = wide.html();
        assert_eq!(html.matches("<table").count(), 2);
        assert!(html.contains("id=\"table-wide\"") && html.contains("id=\"table-wide-2\""));
        assert_eq!(html.matches("<th>name</th>").count(), 2);
        assert_eq!(html.matches("<th>c").count(), HTML_COLUMNS + 2);
        assert_eq!(
            wide.csv().lines().next().unwrap().split(',').count(),
            HTML_COLUMNS + 3
        );
        let view = wide.with_columns("v", "view", &["c1", "name"]);
        assert_eq!(view.markdown(), "| c1 | name |\n|---|---:|\n| 1 | x |\n");
    }

    #[test]
    fn the_aggregate_table_puts_rho_over_deals_beside_the_deal_rate() {
        use crate::fixtures::{learner_first_as, play, price_task, record_of, turn};
        use crate::scenario::Role;
        // One deal at 70 on B = 100, C = 60: learner ρ 0.75, points 30 and 10.
        let s = price_task(125.0, 100.0, 60.0);
        let moves = [
            turn("70?", "[SUBMIT_DEAL] price:70"),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ];
        let mut groups = Groups::default();
        groups.add(&record_of(play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &moves,
        )));
        let t = aggregate_table(&groups, Dimension::Family);
        assert!(t.rows.iter().all(|r| r.len() == t.columns.len()));
        let headings: Vec<&str> = t
            .columns
            .iter()
            .filter(|c| c.shown)
            .map(|c| c.heading.as_str())
            .collect();
        let at = |h: &str| headings.iter().position(|x| *x == h).unwrap();
        assert_eq!(at("ρ over deals learner"), at("deal %") + 1);
        assert_eq!(at("points opponent"), at("points learner") + 1);
        assert!(
            !headings.contains(&"clipped ρ over deals learner"),
            "CSV only"
        );
        let md = t.markdown();
        assert!(
            md.contains("| craigslist | 1 | 0 | 100.0 [100.0, 100.0] | 0.750 [0.750, 0.750] |"),
            "{md}"
        );
        assert!(
            md.contains("| 30.00 [30.00, 30.00] | 10.00 [10.00, 10.00] |"),
            "{md}"
        );
        let csv = t.csv();
        assert!(csv
            .lines()
            .next()
            .unwrap()
            .contains(",clipped_rho_deals_learner,"));
    }
}
