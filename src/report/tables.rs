//! A report's tables, each written three ways from one [`Table`]: Markdown (report.md), CSV
//! (tables/NAME.csv, one column per number: an estimate gives `key`, `key_low`, `key_high`)
//! and HTML (report.html). Figures come from [`crate::score`]; the cells read `value [low,
//! high]` like the run summary's ([`cell`]).
//!
//! CSV numbers are written with six decimals (`-0.350000`), percentages in percent; an empty
//! field is a figure no episode gives. Markdown shows the learner seat's figures; the CSV
//! has both seats'.

use std::fmt::Write as _;

use crate::game::{OutcomeKind, Seat};
use crate::replay::render::escape;
use crate::score::{cell, Aggregate, Estimate, SeatFigures, RATED_ENDINGS};

use super::groups::{Dimension, Groups};

/// One cell of a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    Count(u64),
    /// A number shown with this many decimals (`None`: no value).
    Number(Option<f64>, usize),
    /// An estimate with its interval, shown with this many decimals.
    Estimate(Option<Estimate>, usize),
}

/// A column: its Markdown/HTML heading, its CSV key, and whether Markdown and HTML show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
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
    pub fn csv_only(heading: impl Into<String>, key: impl Into<String>) -> Column {
        Column {
            shown: false,
            ..Column::new(heading, key)
        }
    }
}

/// A table: a file name (tables/NAME.csv), a title, columns and rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: String,
    pub title: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
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

    pub fn html(&self) -> String {
        let shown: Vec<usize> = (0..self.columns.len())
            .filter(|i| self.columns[*i].shown)
            .collect();
        let mut out = format!("<table class=\"figures\" id=\"table-{}\">\n<tr>", self.name);
        for h in self.headings(&shown) {
            let _ = write!(out, "<th>{}</th>", escape(&h));
        }
        out.push_str("</tr>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for &i in &shown {
                let class = if matches!(row[i], Cell::Text(_)) {
                    ""
                } else {
                    " class=\"num\""
                };
                let _ = write!(out, "<td{class}>{}</td>", escape(&shown_text(&row[i])));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
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

    fn headings(&self, shown: &[usize]) -> Vec<String> {
        shown
            .iter()
            .map(|&i| self.columns[i].heading.clone())
            .collect()
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
pub fn csv_number(x: Option<f64>) -> String {
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

/// The figures of every group along `dimension`: DESIGN §5's aggregates with their intervals,
/// the median and clipped mean of ρ beside the mean, counts of episodes and backend errors.
pub fn aggregate_table(groups: &Groups, dimension: Dimension) -> Table {
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
    }
    for seat in Seat::BOTH {
        for (heading, key) in SEAT_COLUMNS {
            let (heading, key) = (format!("{heading} {seat}"), format!("{key}_{seat}"));
            columns.push(match seat {
                Seat::Learner => Column::new(heading, key),
                Seat::Opponent => Column::csv_only(heading, key),
            });
        }
    }
    columns.push(Column::new("Pareto %", "pareto_pct"));
    columns.push(Column::new("turns", "mean_turns"));
    let rows = groups
        .of(dimension)
        .map(|(name, a)| aggregate_row(name, a))
        .collect();
    Table {
        name: format!("by_{}", dimension.name()),
        title: dimension.title().to_string(),
        columns,
        rows,
    }
}

/// Per seat, in order: heading and CSV key.
const SEAT_COLUMNS: [(&str, &str); 9] = [
    ("mean ρ", "mean_rho"),
    ("median ρ", "median_rho"),
    ("clipped mean ρ", "clipped_mean_rho"),
    ("mean reward", "mean_reward"),
    ("first bid", "first_bid"),
    ("format ok %", "format_ok_pct"),
    ("malformed %", "malformed_pct"),
    ("regulated %", "regulated_pct"),
    ("sale-to-list", "sale_to_list"),
];

fn seat_cells(f: &SeatFigures) -> [Cell; 9] {
    let pct = |e: Option<Estimate>| Cell::Estimate(e.map(|e| e.scaled(100.0)), 1);
    [
        Cell::Estimate(f.mean_rho, 3),
        Cell::Estimate(f.median_rho, 3),
        Cell::Estimate(f.clipped_rho, 3),
        Cell::Estimate(f.mean_reward, 3),
        Cell::Estimate(f.first_bid, 3),
        pct(f.format_ok),
        pct(f.malformed),
        pct(f.regulated),
        Cell::Estimate(f.sale_to_list, 3),
    ]
}

fn aggregate_row(name: &str, a: &Aggregate) -> Vec<Cell> {
    let f = a.figures();
    let pct = |e: Option<Estimate>| Cell::Estimate(e.map(|e| e.scaled(100.0)), 1);
    let mut row = vec![
        Cell::Text(name.to_string()),
        Cell::Count(a.episodes() as u64),
        Cell::Count(a.count(OutcomeKind::Error) as u64),
    ];
    row.extend(f.endings.map(pct));
    for seat in Seat::BOTH {
        row.extend(seat_cells(&f.seats[seat]));
    }
    row.push(pct(f.pareto));
    row.push(Cell::Estimate(f.mean_turns, 1));
    row
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

    fn table() -> Table {
        Table {
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
        assert!(html.contains("<td class=\"num\">-0.350 [-1.000, 0.500]</td>"));
        assert!(!html.contains("hidden"));
    }
}
