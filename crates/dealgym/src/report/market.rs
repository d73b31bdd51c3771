//! `report` on market records (`"kind": "market"`, issue 45): per player (the spec that sat at
//! a seat — `rule:zic`, a model, …), the markets it traded in, their allocative efficiency with
//! its bootstrap 95 % interval ([`MarketTally`], the score's one tally), its trades and its mean
//! surplus per seat; the same over every market; and a chart of each player's efficiency with
//! its interval. Written as `report.md`, `report.html`, `tables/market_players.csv` and
//! `charts/market_efficiency.svg`, like the other reports.
//!
//! Records are read one at a time; what grows is one tally per player.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use super::charts::interval_chart;
use super::{Cell, Column, ReportError, ReportOptions, ReportSummary, Sheet};
use crate::game::OutcomeKind;
use crate::record::{MarketRecord, RecordFiles, RecordsKind};
use crate::score::MarketTally;

/// One player's figures (or every market's, for the `all markets` row).
#[derive(Debug, Default)]
struct PlayerFigures {
    /// Markets it sat in (errors among them), and the errors.
    markets: usize,
    errors: usize,
    /// The efficiency of the markets it sat in, each market once.
    tally: MarketTally,
    /// Seats it played outside errors, their surplus summed, and their trades.
    seats: usize,
    surplus: f64,
    trades: usize,
}

impl PlayerFigures {
    fn add(&mut self, r: &MarketRecord, seats: &[usize]) {
        self.markets += 1;
        if r.outcome.outcome.kind == OutcomeKind::Error {
            self.errors += 1;
            return;
        }
        self.tally
            .add(crate::run::market_bootstrap_key(r), &r.outcome.metrics);
        for &seat in seats {
            self.seats += 1;
            self.surplus += r.reward(seat);
            self.trades += r
                .outcome
                .trades
                .iter()
                .filter(|t| t.buyer == seat || t.seller == seat)
                .count();
        }
    }

    fn row(&self, name: &str) -> Vec<Cell> {
        let per_seat = |x: f64| (self.seats > 0).then(|| x / self.seats as f64);
        vec![
            Cell::Text(name.to_string()),
            Cell::Count(self.markets as u64),
            Cell::Count(self.errors as u64),
            Cell::Count(self.seats as u64),
            Cell::Estimate(self.tally.efficiency(), 3),
            Cell::Number(per_seat(self.trades as f64), 2),
            Cell::Number(per_seat(self.surplus), 2),
        ]
    }
}

/// The report of `files`, which hold market records.
pub(crate) fn report_markets(
    options: &ReportOptions,
    files: &[PathBuf],
) -> Result<ReportSummary, ReportError> {
    let mut all = PlayerFigures::default();
    let mut players: BTreeMap<String, PlayerFigures> = BTreeMap::new();
    let mut records = RecordFiles::open(files, options.on_duplicate)
        .of_kind(RecordsKind::Market)
        .read_as::<MarketRecord>();
    for located in &mut records {
        let record = located?.record;
        let mut by_player: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (seat, s) in record.seats.iter().enumerate() {
            // People (`human:NAME`, the play page's) are one row, beside the players.
            let player = if crate::record::PlayerSpec::is_person_spec(&s.player) {
                super::people::PEOPLE
            } else {
                s.player.as_str()
            };
            by_player.entry(player).or_default().push(seat);
        }
        for (player, seats) in &by_player {
            players
                .entry(player.to_string())
                .or_default()
                .add(&record, seats);
        }
        let every: Vec<usize> = (0..record.seats.len()).collect();
        all.add(&record, &every);
    }
    if all.markets == 0 {
        return Err(ReportError::Empty(crate::run::list_files(&options.files)));
    }
    let sheet = Sheet {
        name: "market_players".into(),
        title: "Per player: the allocative efficiency of the markets it traded in (realised \
                surplus over the competitive allocation's, 95% bootstrap interval over markets), \
                its trades and surplus per seat"
            .into(),
        columns: vec![
            Column::new("player", "player"),
            Column::new("markets", "markets"),
            Column::new("errors", "errors"),
            Column::new("seats", "seats"),
            Column::new("efficiency", "efficiency"),
            Column::new("trades / seat", "trades_per_seat"),
            Column::new("surplus / seat", "surplus_per_seat"),
        ],
        rows: players
            .iter()
            .map(|(name, f)| f.row(name))
            .chain(std::iter::once(all.row("all markets")))
            .collect(),
    };
    let out = &options.out;
    let mut written = Vec::new();
    super::make_dirs(out)?;
    let mut write = |path: PathBuf, text: &str| super::write_file(&mut written, path, text);
    write(
        out.join("tables").join(format!("{}.csv", sheet.name)),
        &sheet.csv(),
    )?;
    let rows: Vec<(String, crate::score::Estimate)> = players
        .iter()
        .filter_map(|(name, f)| f.tally.efficiency().map(|e| (name.clone(), e)))
        .collect();
    let title = "Allocative efficiency per player (95% interval)";
    let chart = if rows.is_empty() {
        None
    } else {
        let svg = interval_chart(title, "efficiency", &rows, 0.0, 1.0)?;
        write(out.join("charts").join("market_efficiency.svg"), &svg)?;
        Some(svg)
    };
    let files_line = crate::run::list_files(&options.files);
    let mut md = format!(
        "# dealgym report: markets\n\nFiles: {files_line}. {} markets (market records).\n\n## {}\n\n{}\n",
        all.markets,
        sheet.title,
        sheet.markdown()
    );
    let mut html = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>dealgym report: markets</title>\
         <style>body{{font-family:sans-serif;max-width:1000px;margin:auto}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:2px 6px}}td.num{{text-align:right}}</style></head><body>\n\
         <h1>dealgym report: markets</h1>\n<p>Files: {}. {} markets.</p>\n<h2>{}</h2>\n{}\n",
        crate::replay::render::escape(&files_line),
        all.markets,
        crate::replay::render::escape(&sheet.title),
        sheet.html()
    );
    if let Some(svg) = &chart {
        let _ = writeln!(md, "![{title}](charts/market_efficiency.svg)\n");
        let _ = writeln!(html, "<figure>{svg}</figure>");
    }
    html.push_str("</body></html>\n");
    write(out.join("report.md"), &md)?;
    write(out.join("report.html"), &html)?;
    Ok(ReportSummary {
        episodes: all.markets,
        transcripts: 0,
        written,
        duplicates: records.duplicates().clone(),
        passed_over: records.passed_over(),
    })
}
