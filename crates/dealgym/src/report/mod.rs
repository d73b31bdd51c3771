//! `dealgym report`: record files in, a report directory out — `report.md`, one self-contained
//! `report.html`, CSV tables under `tables/` and SVG charts under `charts/`.
//!
//! Table records (n-party games, told apart by `record::records_kind`) get their own report:
//! per-seat tables, the paper's metrics per scenario, ratings and a chart per party
//! (`table.rs`).
//!
//! This module lays figures out; it computes none of its own. Aggregates, intervals and
//! quantiles come from [`crate::score`]; the cross-play matrix and the ratings from
//! `crate::eval::EvalTally` (`head_to_head.rs` lays them out when the files hold several
//! pairings); transcripts are [`crate::replay::render`]'s fragments.
//! Records are read one at a time through [`RecordFiles`] and never held: what grows with the
//! file is nothing but counts — one aggregate per group (`groups.rs`), the threshold
//! sensitivity (`sensitivity.rs`), label counts (`labels.rs`), a fixed-size transcript
//! sample (`sample.rs`), the 24 bytes an episode by which a duplicate is known
//! (the record files' duplicate check) and, for the ratings, one compact (key, player, ρ) observation per
//! named seat of an eval's episode, which waits in memory up to `eval::SPILL_AFTER` and then
//! in partition files under the report's directory (`eval::SpillStore`, removed when the
//! report is written or fails), so an eval's file keeps memory flat too; a plain run's records
//! add none. It plays no episode and talks to no endpoint.

mod beliefs;
mod charts;
mod groups;
mod head_to_head;
mod html;
mod labels;
mod market;
mod page;
mod people;
mod prompt_cost;
mod sample;
mod sensitivity;
mod sheet;
mod table;
mod training;

use std::path::{Path, PathBuf};

use crate::eval::{EvalTally, SpillError};
use crate::game::{OutcomeKind, Seat};
use crate::record::{
    record_files_in, Duplicates, EpisodeRecord, OnDuplicate, PromptCosts, ReadError, RecordFiles,
    RewardIssueCounts,
};
use crate::scenario::Family;
use crate::score::{
    cell, mean_over, multi_item_groups, pct_cell, Aggregate, Estimate, FigureId, Weights,
    MULTI_ITEM_AVERAGE,
};

pub use charts::ChartError;
pub(crate) use charts::{histogram_chart, interval_chart, line_chart, stacked_chart, Series};
pub(crate) use groups::{Dimension, Groups};
pub(crate) use labels::LabelCounts;
pub(crate) use people::PeopleAndModels;
pub use people::PEOPLE;
pub(crate) use sample::Sample;
pub(crate) use sensitivity::Sensitivity;
pub(crate) use sheet::{aggregate_table, ticket_table, Cell, Column, Sheet};
pub(crate) use training::Training;
pub use training::UnknownControl;

/// Bins of the ρ histogram (chart and CSV): 40 bins of width 0.05 over [−1, 1].
pub(crate) const HISTOGRAM_BINS: usize = 40;

/// The thresholds τ of the sensitivity table when `--tau` is not given.
pub const DEFAULT_TAUS: [f64; 9] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// Transcripts kept when `--transcripts` is not given: every episode of a file with no more,
/// a sample of this many otherwise.
pub const DEFAULT_TRANSCRIPTS: usize = 200;

/// What to report on and where.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    pub files: Vec<PathBuf>,
    pub out: PathBuf,
    /// Transcripts kept (a deterministic sample when the files have more episodes).
    pub transcripts: usize,
    pub sample_seed: u64,
    /// Thresholds of the sensitivity table.
    pub taus: Vec<f64>,
    /// No progress bar.
    pub quiet: bool,
    /// What to do with an episode the files hold twice (counted twice, it would weigh double).
    pub on_duplicate: OnDuplicate,
    /// The training run the others are compared against (`--training-control`); without one,
    /// every pair of runs.
    pub training_control: Option<String>,
    /// Table records: the scenario files to check proposals against each party's minimum
    /// (empty: `scenarios/{family}.jsonl`).
    pub scenarios: Vec<PathBuf>,
}

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("writing {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Chart(#[from] ChartError),
    #[error("no episode in {0}: nothing to report")]
    Empty(String),
    #[error(transparent)]
    Spill(#[from] SpillError),
    #[error(transparent)]
    Control(#[from] UnknownControl),
    #[error("reading the scenarios: {0}")]
    Scenarios(String),
}

/// What a report did.
#[derive(Debug, Clone)]
pub struct ReportSummary {
    pub episodes: usize,
    pub transcripts: usize,
    /// Every file written.
    pub written: Vec<PathBuf>,
    /// Records skipped as duplicates (`--duplicates skip`).
    pub duplicates: Duplicates,
    /// Records of the other kind (table or two-party) the files hold, passed over.
    pub passed_over: crate::record::PassedOver,
}

/// Everything a report gathers while records stream by.
#[derive(Debug)]
pub(crate) struct Collector {
    pub groups: Groups,
    pub sensitivity: Sensitivity,
    pub labels: LabelCounts,
    pub sample: Sample,
    /// The cross-play matrix and the ratings, shown when the files hold several pairings.
    pub head_to_head: EvalTally,
    /// What went wrong with the judge and the reward model.
    pub rewards: RewardIssueCounts,
    /// The people's own dialogues beside the models', when the files hold any.
    pub people: PeopleAndModels,
    /// Per training run and step, for records a trainer's adapter wrote.
    pub training: Training,
    /// What the calls cost the model (prompt tokens evaluated against the minimum).
    pub prompt_cost: PromptCosts,
}

impl Collector {
    pub fn new(options: &ReportOptions) -> Collector {
        Collector {
            groups: Groups::default(),
            sensitivity: Sensitivity::new(&options.taus),
            labels: LabelCounts::default(),
            sample: Sample::new(options.transcripts, options.sample_seed),
            head_to_head: EvalTally::spilling_under(&options.out),
            rewards: RewardIssueCounts::default(),
            people: PeopleAndModels::default(),
            training: Training::default(),
            prompt_cost: PromptCosts::default(),
        }
    }

    /// Take in one record; `at` is (file index, record index in the file). Fails only when
    /// the ratings' observations cannot be written to their spill files.
    pub fn add(&mut self, r: &EpisodeRecord, at: (usize, usize)) -> Result<(), SpillError> {
        self.labels.add(r);
        self.sample.offer(r, at);
        self.rewards.add(r);
        self.people.add(r);
        self.prompt_cost.add(r);
        // A people's dialogue has no learner to group by and its two strangers are no pairing
        // of players, and a person at the play page is no player to rate: such an episode's
        // figures are the people's table's (from each side), never the aggregates', the
        // sensitivity's or the ratings'.
        if r.has_person() {
            return Ok(());
        }
        // An episode's bootstrap weights are drawn once, for every table it feeds.
        let weights = (r.kind() != OutcomeKind::Error).then(|| Weights::of(r.bootstrap_key()));
        self.groups.add_weighted(r, weights.as_ref());
        self.training.add(r, weights.as_ref());
        self.sensitivity.add(r, weights.as_ref());
        self.head_to_head.add(r)
    }
}

/// Read the files and write the report (see the module doc).
/// A file of several kinds (a server's log) gets a report of each: its first record's kind in
/// `out`, each other kind's in a folder of its own under it (`n-party/`, `two-party/` or
/// `markets/`).
pub fn report(options: &ReportOptions) -> Result<ReportSummary, ReportError> {
    let files = record_files_in(&options.files)?;
    let first = crate::record::records_kind(&files)?;
    let mut summary = report_kind(options, &files, first)?;
    let passed = summary.passed_over;
    for other in passed.kinds() {
        let folder = match other {
            crate::record::RecordsKind::Table => "n-party",
            crate::record::RecordsKind::TwoParty => "two-party",
            crate::record::RecordsKind::Market => "markets",
        };
        let inner = ReportOptions {
            out: options.out.join(folder),
            ..options.clone()
        };
        let more = report_kind(&inner, &files, other)?;
        summary.episodes += more.episodes;
        summary.transcripts += more.transcripts;
        summary.written.extend(more.written);
        summary.duplicates.absorb(more.duplicates);
    }
    summary.passed_over = crate::record::PassedOver::default();
    Ok(summary)
}

/// The report of the records of `kind` in `files` (the other kind's passed over and counted).
fn report_kind(
    options: &ReportOptions,
    files: &[PathBuf],
    kind: crate::record::RecordsKind,
) -> Result<ReportSummary, ReportError> {
    match kind {
        crate::record::RecordsKind::Table => return table::report_tables(options, files),
        crate::record::RecordsKind::Market => return market::report_markets(options, files),
        crate::record::RecordsKind::TwoParty => {}
    }
    let total: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let bar = crate::run::styled_bar(
        !options.quiet,
        total,
        "{elapsed_precise} [{bar:30}] {bytes}/{total_bytes} · {bytes_per_sec} · {eta} left",
    );
    let mut collector = Collector::new(options);
    let mut records = RecordFiles::open(files, options.on_duplicate);
    // The record's index in its file, among those read.
    let (mut file, mut n) = (0, 0);
    while let Some(located) = records.next() {
        let located = located?;
        if located.file_index != file {
            (file, n) = (located.file_index, 0);
        }
        collector.add(&located.record, (file, n))?;
        n += 1;
        if n.is_multiple_of(32) {
            bar.set_position(records.position());
        }
    }
    bar.finish_and_clear();
    let mut summary = write_report(options, collector)?;
    summary.duplicates = records.duplicates().clone();
    summary.passed_over = records.passed_over();
    Ok(summary)
}

/// Write every file of the report from what was gathered.
pub(crate) fn write_report(
    options: &ReportOptions,
    collector: Collector,
) -> Result<ReportSummary, ReportError> {
    let Collector {
        groups,
        sensitivity,
        labels,
        sample,
        head_to_head,
        rewards,
        people,
        training,
        prompt_cost,
    } = collector;
    let episodes = sample.seen();
    if episodes == 0 {
        let files: Vec<String> = options
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        return Err(ReportError::Empty(files.join(", ")));
    }
    // Before anything is written: a control no record names is the caller's mistake.
    let training_tables = training.tables(options.training_control.as_deref())?;
    let out = &options.out;
    let mut written = Vec::new();
    make_dirs(out)?;
    let mut write = |path: PathBuf, text: &str| write_file(&mut written, path, text);

    let aggregates: Vec<Sheet> = Dimension::ALL
        .iter()
        .map(|d| aggregate_table(&groups, *d))
        .collect();
    let sensitivity = sensitivity.table();
    let labels = (!labels.is_empty()).then(|| labels.table());
    let all = groups.all();
    let histogram = histogram_table(&all);
    let head_to_head = head_to_head.finish()?;
    let ratings = head_to_head.ratings();
    let crossplay = head_to_head::crossplay_table(&head_to_head);
    let player_figures: Vec<Sheet> = [
        head_to_head::talk_table(&head_to_head),
        head_to_head::anchoring_table(&head_to_head),
        beliefs::beliefs_table(&head_to_head),
        beliefs::calibration_table(&head_to_head),
        beliefs::belief_error_table(&head_to_head),
    ]
    .into_iter()
    .flatten()
    .collect();
    let ratings_table = head_to_head::ratings_table(ratings);
    let groups_table = head_to_head::groups_table(ratings);
    let connections = ratings_table.as_ref().map(|_| head_to_head.connections());
    let people_table = people.has_people().then(|| people.table());
    let tickets = ticket_table(&groups);
    let prompt_cost = prompt_cost::prompt_cost_table(&prompt_cost);
    // Every table's CSV, whether the page shows it, folds it or draws it.
    let every_table = aggregates
        .iter()
        .chain(&training_tables)
        .chain([&sensitivity, &histogram])
        .chain(crossplay.iter())
        .chain(&player_figures)
        .chain(ratings_table.iter())
        .chain(groups_table.iter())
        .chain(people_table.iter())
        .chain(tickets.iter())
        .chain(labels.iter())
        .chain(prompt_cost.iter());
    for t in every_table {
        write(out.join("tables").join(format!("{}.csv", t.name)), &t.csv())?;
    }
    let first_screen = aggregates[Dimension::ALL
        .iter()
        .position(|d| *d == Dimension::Family)
        .expect("the family dimension")]
    .with_columns(
        "headline",
        "Per family: deals, the learner's share of the surplus, format and errors",
        &[
            "group",
            "episodes",
            "errors",
            "deal_pct",
            "rho_deals_learner",
            "format_ok_pct_learner",
            "mean_turns",
        ],
    );

    let mut charts: Vec<page::Chart> = charts(&groups, &all)?
        .into_iter()
        .chain(if training.is_empty() {
            Vec::new()
        } else {
            training.charts()?
        })
        .chain(beliefs::belief_charts(&head_to_head)?)
        .map(|(name, caption, svg)| page::Chart {
            how: page::how_to_read(&name).to_string(),
            name,
            caption,
            svg,
        })
        .collect();
    if let Some(svg) = head_to_head::ratings_chart(ratings)? {
        charts.push(page::Chart {
            name: "ratings".to_string(),
            caption: "Bradley–Terry rating per player, highest first, with its 95% bootstrap \
                      interval"
                .to_string(),
            how: page::how_to_read("ratings").to_string(),
            svg,
        });
    }
    if let Some(svg) = head_to_head::crossplay_heatmap(&head_to_head)? {
        charts.push(page::Chart {
            name: "crossplay".to_string(),
            caption: "Each player (the learner seat) against each opponent, over every family"
                .to_string(),
            how: page::how_to_read("crossplay").to_string(),
            svg,
        });
    }
    if let Some(svg) = sensitivity_chart(&sensitivity)? {
        charts.push(page::Chart {
            name: "sensitivity".to_string(),
            caption: "The learner's ρ over the deals it would keep if it refused every deal \
                      below τ, per family"
                .to_string(),
            how: page::how_to_read("sensitivity").to_string(),
            svg,
        });
    }
    if people.has_people() {
        let title = "How the people's and the models' episodes ended";
        let endings: Vec<&str> = OutcomeKind::ALL.iter().map(|k| k.name()).collect();
        charts.push(page::Chart {
            name: "outcomes_people_and_models".to_string(),
            caption: format!("{title}, per family, role and player (% of scored episodes)"),
            how: page::how_to_read("outcomes_people_and_models").to_string(),
            svg: stacked_chart(title, "% of episodes", &endings, &people.outcome_rows())?,
        });
    }
    let panels = family_panels(&groups)?;
    for chart in charts.iter().chain(panels.iter().flat_map(|(_, _, c)| c)) {
        write(
            out.join("charts").join(format!("{}.svg", chart.name)),
            &chart.svg,
        )?;
    }
    let sections = page::sections(&page::Parts {
        aggregates: &aggregates,
        headline: &first_screen,
        sensitivity: &sensitivity,
        histogram: &histogram,
        training: &training_tables,
        crossplay: crossplay.as_ref(),
        player_figures: &player_figures,
        ratings: ratings_table.as_ref(),
        connections: connections.as_deref(),
        people: people_table.as_ref(),
        tickets: tickets.as_ref(),
        labels: labels.as_ref(),
        prompt_cost: prompt_cost.as_ref(),
        charts: &charts,
        panels: &panels,
    });

    let transcripts = sample.into_transcripts();
    let files: Vec<String> = options
        .files
        .iter()
        .map(|f| f.display().to_string())
        .collect();
    let title = "dealgym report".to_string();
    let mut meta = vec![
        format!("Files: {}", files.join(", ")),
        format!(
            "{} Intervals: 95% Poisson bootstrap ({} resamples); the median's is the \
             order-statistic interval.",
            headline(episodes, people.dialogues(), &all),
            crate::score::RESAMPLES
        ),
        format!("Written by dealgym {}.", env!("CARGO_PKG_VERSION")),
    ];
    if all.scored() > 0 {
        meta.insert(1, bargained_ratio_line(&groups));
    }
    if let Some(counts) = rewards.counts() {
        meta.push(format!(
            "Reward issues: {counts}; {} episodes have a reward short of a failed judge or \
             reward-model part (their mean reward counts it as 0; `export` skips them).",
            rewards.missing
        ));
    }
    write(out.join("report.md"), &markdown(&title, &meta, &sections))?;
    let page = html::page(&html::Page {
        title,
        meta,
        sections: &sections,
        transcripts: &transcripts,
        episodes,
    });
    write(out.join("report.html"), &page)?;
    Ok(ReportSummary {
        episodes,
        transcripts: transcripts.len(),
        written,
        duplicates: Duplicates::default(),
        passed_over: Default::default(),
    })
}

/// The learner's and the opponent's ρ histograms over every scored episode (clipped to
/// [−1, 1]; the end bins hold the values beyond).
fn histogram_table(all: &Aggregate) -> Sheet {
    let q = all.rho_quantiles();
    let (learner, opponent) = (
        q.learner.histogram(HISTOGRAM_BINS),
        q.opponent.histogram(HISTOGRAM_BINS),
    );
    Sheet {
        name: "rho_histogram".into(),
        title: "ρ per seat, clipped to [−1, 1], in bins of 0.05".into(),
        columns: vec![
            Column::new("from", "from"),
            Column::new("to", "to"),
            Column::new("learner", "learner"),
            Column::new("opponent", "opponent"),
        ],
        rows: learner
            .iter()
            .zip(&opponent)
            .map(|(l, o)| {
                vec![
                    Cell::Number(Some(l.low), 2),
                    Cell::Number(Some(l.high), 2),
                    Cell::Count(l.count),
                    Cell::Count(o.count),
                ]
            })
            .collect(),
    }
}

/// Rows of an interval chart: every group along `dimension` that has the figure.
fn rows_of(
    groups: &Groups,
    dimension: Dimension,
    figure: &dyn Fn(&Aggregate) -> Option<Estimate>,
) -> Vec<(String, Estimate)> {
    groups
        .of(dimension)
        .filter_map(|(name, a)| figure(a).map(|e| (name.to_string(), e)))
        .collect()
}

/// The threshold sensitivity as a chart: a line per family (then all) of the learner's ρ over
/// the deals kept, across τ (in percent); `None` when no group has a figure.
fn sensitivity_chart(table: &Sheet) -> Result<Option<String>, ChartError> {
    let mut series: Vec<Series> = Vec::new();
    for row in &table.rows {
        let (Cell::Text(group), Cell::Number(Some(tau), _), Cell::Estimate(Some(rho), _)) =
            (&row[0], &row[1], &row[5])
        else {
            continue;
        };
        let point = ((tau * 100.0).round() as u64, *rho);
        match series.iter_mut().find(|s| &s.name == group) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                name: group.clone(),
                points: vec![point],
            }),
        }
    }
    if series.is_empty() {
        return Ok(None);
    }
    let title = "ρ over the deals kept, refusing deals below τ";
    line_chart(title, "τ (%)", "learner ρ over deals", &series, (0.0, 1.0)).map(Some)
}

/// Small multiples: per family, a panel of the learner's ρ over deals per player and one of its
/// deal rate, every panel on the same axes; none unless some family has two players or more.
type Panels = Vec<(String, String, Vec<page::Chart>)>;

/// A panel set's file name, caption, axis, figure and the axis end it always includes.
type PanelFigure<'a> = (
    &'static str,
    &'static str,
    &'static str,
    &'a dyn Fn(&Aggregate) -> Option<Estimate>,
    f64,
);

fn family_panels(groups: &Groups) -> Result<Panels, ChartError> {
    let players = groups.of(Dimension::FamilyPlayer).count();
    if players <= groups.of(Dimension::Family).count() {
        return Ok(Vec::new());
    }
    let clipped = |a: &Aggregate| a.figures().seats[Seat::Learner].clipped_rho_deals;
    let deal = |a: &Aggregate| a.figures().rate(OutcomeKind::Deal).map(|e| e.scaled(100.0));
    let figures: [PanelFigure; 2] = [
        (
            "rho_by_player",
            "Learner ρ over deals per player",
            "ρ over deals (clipped to [−1, 1])",
            &clipped,
            1.0,
        ),
        (
            "deal_rate_by_player",
            "Deal rate per player",
            "deal %",
            &deal,
            100.0,
        ),
    ];
    let mut panels = Vec::new();
    for (name, caption, axis, figure, ceiling) in figures {
        let rows = rows_of(groups, Dimension::FamilyPlayer, figure);
        let mut families: Vec<&str> = rows
            .iter()
            .filter_map(|(group, _)| group.split_once(" · ").map(|(f, _)| f))
            .collect();
        families.dedup();
        let (low, high) = rows.iter().fold((0.0_f64, ceiling), |(lo, hi), (_, e)| {
            (lo.min(e.low), hi.max(e.high))
        });
        let mut charts = Vec::new();
        for family in families {
            let own: Vec<(String, Estimate)> = rows
                .iter()
                .filter_map(|(group, e)| {
                    let (f, player) = group.split_once(" · ")?;
                    (f == family).then(|| (player.to_string(), *e))
                })
                .collect();
            charts.push(page::Chart {
                name: format!("{name}_{family}"),
                caption: format!("{caption}: {family}"),
                how: String::new(),
                svg: interval_chart(family, axis, &own, low, high)?,
            });
        }
        panels.push((
            format!("{caption}, one panel per family"),
            page::how_to_read(name).to_string(),
            charts,
        ));
    }
    Ok(panels)
}

/// The charts: (file name, caption, SVG). A chart with no data is left out.
fn charts(groups: &Groups, all: &Aggregate) -> Result<Vec<(String, String, String)>, ChartError> {
    let mut charts = Vec::new();
    let clipped = |a: &Aggregate| a.figures().seats[Seat::Learner].clipped_rho_deals;
    let deal = |a: &Aggregate| a.figures().rate(OutcomeKind::Deal).map(|e| e.scaled(100.0));
    let first_bid = |a: &Aggregate| a.figures().seats[Seat::Learner].first_bid;
    // Per family and player, the small multiples of `family_panels` show the same figures.
    let rows = rows_of(groups, Dimension::Family, &clipped);
    if !rows.is_empty() {
        let title = "Learner ρ over deals per family";
        charts.push((
            "rho_by_family".to_string(),
            format!("{title}: mean of ρ over the deals, clipped to [−1, 1], with its 95% interval (the plain mean, and ρ per episode with its median, in the tables)"),
            interval_chart(title, "ρ over deals (clipped to [−1, 1])", &rows, 0.0, 1.0)?,
        ));
    }
    let rows = rows_of(groups, Dimension::Family, &deal);
    if !rows.is_empty() {
        let title = "Deal rate per family";
        charts.push((
            "deal_rate_by_family".to_string(),
            format!("{title}, % of scored episodes, with its 95% interval"),
            interval_chart(title, "deal %", &rows, 0.0, 100.0)?,
        ));
    }
    // The CaSiNo harness paper's Tables 2 and 3: deal rate and learner points per opponent
    // persona, where the opponents had one. Points only for files of one family: utilities of
    // different families are on different scales.
    let has_personas = groups
        .of(Dimension::OpponentPersona)
        .any(|(name, _)| name != "none");
    if has_personas {
        let rows = rows_of(groups, Dimension::OpponentPersona, &deal);
        let title = "Deal rate per opponent persona";
        charts.push((
            "deal_rate_by_opponent_persona".to_string(),
            format!("{title}, % of scored episodes, with its 95% interval"),
            interval_chart(title, "deal %", &rows, 0.0, 100.0)?,
        ));
        let points = |a: &Aggregate| a.figures().seats[Seat::Learner].points;
        let rows = rows_of(groups, Dimension::OpponentPersona, &points);
        if groups.of(Dimension::Family).count() == 1 && !rows.is_empty() {
            let title = "Learner points per opponent persona";
            charts.push((
                "points_by_opponent_persona".to_string(),
                format!("{title}: mean utility per episode (no deal: the no-deal value), with its 95% interval"),
                interval_chart(title, "points", &rows, 0.0, 0.0)?,
            ));
        }
    }
    let rows = rows_of(groups, Dimension::FamilyPlayer, &first_bid);
    if !rows.is_empty() {
        let title = "Learner's first bid / budget (price tasks, as buyer)";
        charts.push((
            "first_bid".to_string(),
            format!("{title}, with its 95% interval"),
            interval_chart(title, "first bid / B", &rows, 0.0, 1.0)?,
        ));
    }
    let q = &all.rho_quantiles().learner;
    if !q.is_empty() {
        let (below, above) = q.outside();
        let title = "Distribution of the learner's ρ";
        charts.push((
            "rho_distribution".to_string(),
            format!("{title}, clipped to [−1, 1] ({below} episodes below −1 in the first bin, {above} above 1 in the last)"),
            histogram_chart(title, "ρ (clipped to [−1, 1])", &q.histogram(HISTOGRAM_BINS))?,
        ));
    }
    let endings: Vec<&str> = OutcomeKind::ALL.iter().map(|k| k.name()).collect();
    let rows: Vec<(String, Vec<f64>)> = groups
        .of(Dimension::Family)
        .chain(groups.of(Dimension::All))
        .map(|(name, a)| {
            let n = a.episodes().max(1) as f64;
            let shares = OutcomeKind::ALL
                .iter()
                .map(|k| a.count(*k) as f64 / n)
                .collect();
            (name.to_string(), shares)
        })
        .collect();
    // No rows when the files hold only people's dialogues: their endings are the people's chart.
    if !rows.is_empty() {
        let title = "How episodes ended, per family";
        charts.push((
            "outcomes_by_family".to_string(),
            format!("{title} (% of all the models' episodes, backend errors included)"),
            stacked_chart(title, "% of episodes", &endings, &rows)?,
        ));
    }
    Ok(charts)
}

/// What the report counted: every episode, the people's own dialogues apart from the ones
/// models played (`models`: the aggregate over them), and of those the scored and the errors.
fn headline(episodes: usize, people: usize, models: &Aggregate) -> String {
    let scored = format!(
        "{} scored, {} backend errors (counted apart, in no rate or mean).",
        models.scored(),
        models.count(OutcomeKind::Error)
    );
    let dialogues = if people == 1 { "dialogue" } else { "dialogues" };
    let where_people = "in \"People and models\", each from both sides, and the transcripts; \
                        never in the aggregates, the sensitivity or the ratings";
    match (people, models.episodes()) {
        (0, _) => format!("{episodes} episodes, {scored}"),
        (_, 0) => format!("{episodes} episodes, all people's own {dialogues} ({where_people})."),
        (p, m) => format!(
            "{episodes} episodes: {p} people's own {dialogues} ({where_people}) and {m} played \
             by models, of which {scored}"
        ),
    }
}

/// The headline figures, as the papers report them: per family, the learner's bargained ratio
/// (mean ρ over deals) with the deal rate beside it (BATNA paper, Table 1) and ρ per episode,
/// which counts an episode without a deal at its ρ (0 by default); then, where two or more
/// multi-item families are in the files, their average, each family once (the paper's Table 4
/// "Avg", App. C). Never a pool of every family: it would weigh families by their episodes and
/// put the price tasks' dollars beside the item games' points.
fn bargained_ratio_line(groups: &Groups) -> String {
    let figures = |f: Option<Estimate>, deal: Option<Estimate>, per_episode: Option<Estimate>| {
        format!(
            "{} at a deal rate of {} %; ρ per episode (no deal = 0): {}",
            cell(f, 3),
            pct_cell(deal),
            cell(per_episode, 3),
        )
    };
    let mut parts: Vec<String> = groups
        .of(Dimension::Family)
        .map(|(family, a)| {
            let f = a.figures();
            let learner = &f.seats[Seat::Learner];
            format!(
                "{family}: {}",
                figures(
                    learner.rho_deals,
                    f.rate(OutcomeKind::Deal),
                    learner.mean_rho
                )
            )
        })
        .collect();
    let families = groups
        .of(Dimension::Family)
        .filter_map(|(name, a)| Some((name.parse::<Family>().ok()?, a)));
    if let Some(multi) = multi_item_groups(families) {
        let mean = |figure| mean_over(&multi, figure);
        parts.push(format!(
            "{MULTI_ITEM_AVERAGE} (each multi-item family once, as the BATNA paper's Table 4): {}",
            figures(
                mean(FigureId::RhoDeals(Seat::Learner)),
                mean(FigureId::Rate(OutcomeKind::Deal)),
                mean(FigureId::MeanRho(Seat::Learner)),
            )
        ));
    }
    format!(
        "Learner's bargained ratio (ρ over deals), per family — {}.",
        parts.join("; — ")
    )
}

/// report.md: the page's sections in its order — tables in Markdown, charts as images of
/// charts/NAME.svg, each with its CSV.
fn markdown(title: &str, meta: &[String], sections: &[page::Section<'_>]) -> String {
    let mut out = format!("# {title}\n\n");
    for line in meta {
        out.push_str(line);
        out.push_str("\n\n");
    }
    out.push_str("Each figure reads `value [low, high]` (its 95% interval); `–` where no episode gives it. Markdown shows the learner seat; tables/*.csv hold both seats.\n\n");
    for section in sections {
        if section.blocks.is_empty() {
            continue;
        }
        out.push_str(&format!("## {}\n\n{}\n\n", section.heading, section.intro));
        for block in &section.blocks {
            match block {
                page::Block::Chart(c) => out.push_str(&format!(
                    "![{}](charts/{}.svg)\n\n{}\n\n",
                    c.caption, c.name, c.how
                )),
                page::Block::Panels {
                    caption,
                    how,
                    charts,
                } => {
                    out.push_str(&format!("{caption}. {how}\n\n"));
                    for c in charts {
                        out.push_str(&format!("![{}](charts/{}.svg) ", c.caption, c.name));
                    }
                    out.push_str("\n\n");
                }
                page::Block::Sheet { table, csv, .. } => out.push_str(&format!(
                    "### {}\n\n{}\n(tables/{csv}.csv)\n\n",
                    table.title,
                    table.markdown(),
                )),
                page::Block::CsvOnly(table) => out.push_str(&format!(
                    "{}: the numbers are in tables/{}.csv.\n\n",
                    table.title, table.name
                )),
                page::Block::Note(text) => out.push_str(&format!("{text}\n\n")),
            }
        }
    }
    out.push_str("Transcripts: report.html.\n");
    out
}

/// A report directory's folders: the directory, `tables/` and `charts/`.
pub(crate) fn make_dirs(out: &Path) -> Result<(), ReportError> {
    for dir in [out.to_path_buf(), out.join("tables"), out.join("charts")] {
        std::fs::create_dir_all(&dir).map_err(|source| ReportError::Write {
            path: dir.display().to_string(),
            source,
        })?;
    }
    Ok(())
}

/// Write one file of a report, and count it among the `written`.
pub(crate) fn write_file(
    written: &mut Vec<PathBuf>,
    path: PathBuf,
    text: &str,
) -> Result<(), ReportError> {
    std::fs::write(&path, text).map_err(|source| ReportError::Write {
        path: path.display().to_string(),
        source,
    })?;
    written.push(path);
    Ok(())
}
