//! The order a report is read in, for report.html and report.md alike: the answer first (an
//! eval's ratings and cross-play matrix; a run's figures per family and how its episodes
//! ended; training curves; people beside models), then the figures per family as small
//! multiples, then every table, folded, with its CSV — the distributions as charts, their
//! numbers in the CSV only — then the transcripts. Each chart carries one line on how to read it.

use super::sheet::Sheet;

/// One thing a section shows.
pub(crate) enum Block<'a> {
    /// A chart: its file name (charts/NAME.svg), caption, how to read it, SVG.
    Chart(&'a Chart),
    /// Charts side by side on the same axes, one panel per family.
    Panels {
        caption: String,
        how: String,
        charts: Vec<&'a Chart>,
    },
    /// A table: shown open (the answer's few columns) or folded, with its CSV's name.
    Sheet {
        table: &'a Sheet,
        open: bool,
        csv: &'a str,
    },
    /// A table drawn as a chart just above: its numbers in the CSV only.
    CsvOnly(&'a Sheet),
    /// A paragraph.
    Note(String),
}

/// A chart of the report.
pub(crate) struct Chart {
    pub name: String,
    pub caption: String,
    /// One line on how to read it.
    pub how: String,
    pub svg: String,
}

/// A section of the page: its anchor, heading, a line under it, what it shows.
pub(crate) struct Section<'a> {
    pub id: &'static str,
    /// Its name in the table of contents.
    pub short: &'static str,
    pub heading: String,
    pub intro: String,
    pub blocks: Vec<Block<'a>>,
}

/// What the report found, to be laid out.
pub(crate) struct Parts<'a> {
    /// The eight aggregate tables (all, family, player, …), in `Dimension::ALL` order.
    pub aggregates: &'a [Sheet],
    /// The first screen's view of the per-family table (`Sheet::with_columns`).
    pub headline: &'a Sheet,
    pub sensitivity: &'a Sheet,
    pub histogram: &'a Sheet,
    pub training: &'a [Sheet],
    pub crossplay: Option<&'a Sheet>,
    /// Beside the cross-play table: the talk ablation and the anchoring tables, where the
    /// records give them (`head_to_head::talk_table`, `anchoring_table`).
    pub player_figures: &'a [Sheet],
    pub ratings: Option<&'a Sheet>,
    /// Which comparisons connect the rated players (`EvalResults::connections`).
    pub connections: Option<&'a str>,
    pub people: Option<&'a Sheet>,
    /// Hotel calls' per-ticket success and ρ (`sheet::ticket_table`).
    pub tickets: Option<&'a Sheet>,
    pub labels: Option<&'a Sheet>,
    /// What the calls cost the model, where a server reported its cache
    /// (`prompt_cost::prompt_cost_table`).
    pub prompt_cost: Option<&'a Sheet>,
    pub charts: &'a [Chart],
    /// Per-family panels of the learner's ρ over deals and deal rate per player.
    pub panels: &'a [(String, String, Vec<Chart>)],
}

impl<'a> Parts<'a> {
    fn chart(&self, name: &str) -> Option<&'a Chart> {
        self.charts.iter().find(|c| c.name == name)
    }

    fn charts(&self, names: &[&str]) -> Vec<Block<'a>> {
        names
            .iter()
            .filter_map(|n| self.chart(n))
            .map(Block::Chart)
            .collect()
    }
}

/// The sections in reading order.
pub(crate) fn sections<'a>(p: &Parts<'a>) -> Vec<Section<'a>> {
    let mut answer: Vec<Block<'a>> = Vec::new();
    let eval = p.ratings.is_some() || p.crossplay.is_some();
    let heading = if eval {
        answer.extend(p.charts(&["ratings"]));
        answer.extend(p.ratings.map(open));
        answer.extend(p.connections.map(|text| Block::Note(text.to_string())));
        answer.extend(p.charts(&["crossplay"]));
        "Who did best: ratings and each player against each opponent"
    } else if p.people.is_some() && p.aggregates.iter().all(|t| t.rows.is_empty()) {
        "The people's dialogues"
    } else {
        answer.push(headline(p));
        answer.extend(p.charts(&["outcomes_by_family"]));
        "How the episodes went"
    };
    if !p.training.is_empty() {
        answer.extend(p.training.iter().map(open));
        let training: Vec<&str> = p
            .charts
            .iter()
            .filter(|c| c.name.starts_with("training_"))
            .map(|c| c.name.as_str())
            .collect();
        answer.extend(p.charts(&training));
    }
    if let Some(table) = p.tickets {
        answer.push(open(table));
    }
    // Belief probes: the calibration table open, with its two charts.
    if let Some(table) = p
        .player_figures
        .iter()
        .find(|t| t.name == "belief_calibration")
    {
        answer.push(open(table));
        answer.extend(p.charts(&["belief_calibration", "belief_error_by_turn"]));
    }
    if let Some(table) = p.people {
        answer.push(open(table));
        answer.extend(p.charts(&["outcomes_people_and_models"]));
    }

    let mut families: Vec<Block<'a>> = Vec::new();
    if eval {
        families.push(headline(p));
        families.extend(p.charts(&["outcomes_by_family"]));
    }
    for (caption, how, charts) in p.panels {
        families.push(Block::Panels {
            caption: caption.clone(),
            how: how.clone(),
            charts: charts.iter().collect(),
        });
    }
    families.extend(p.charts(&[
        "rho_by_family",
        "deal_rate_by_family",
        "deal_rate_by_opponent_persona",
        "points_by_opponent_persona",
        "first_bid",
    ]));

    let mut details: Vec<Block<'a>> = p
        .aggregates
        .iter()
        .filter(|t| !t.rows.is_empty())
        .map(folded)
        .collect();
    details.extend(p.crossplay.map(folded));
    details.extend(p.player_figures.iter().map(folded));
    // A distribution is drawn, its numbers in the CSV only; without its chart (no episode
    // gives it), its table is folded like the others.
    for (chart, table) in [
        ("sensitivity", p.sensitivity),
        ("rho_distribution", p.histogram),
    ] {
        match p.chart(chart) {
            Some(chart) => details.extend([Block::Chart(chart), Block::CsvOnly(table)]),
            None => details.push(folded(table)),
        }
    }
    details.extend(p.labels.map(folded));
    details.extend(p.prompt_cost.map(folded));

    vec![
        Section {
            id: "answer",
            short: "The answer",
            heading: heading.to_string(),
            intro: "The figures that answer what the episodes were played for; every other \
                    figure is further down."
                .into(),
            blocks: answer,
        },
        Section {
            id: "families",
            short: "Per family",
            heading: "Per family".into(),
            intro: "Each family on its own; panels side by side share their axes.".into(),
            blocks: families,
        },
        Section {
            id: "details",
            short: "Every table",
            heading: "Every figure, in tables".into(),
            intro: "Each table opens on a click. Its CSV beside it holds every number, both \
                    seats, one column per bound; a figure reads value [low, high], its 95% \
                    interval, and – where no episode gives it."
                .into(),
            blocks: details,
        },
    ]
}

fn open(table: &Sheet) -> Block<'_> {
    Block::Sheet {
        table,
        open: true,
        csv: &table.name,
    }
}

fn folded(table: &Sheet) -> Block<'_> {
    Block::Sheet {
        table,
        open: false,
        csv: &table.name,
    }
}

/// The first screen's per-family table: a view of the per-family aggregate, whose CSV it is.
fn headline<'a>(p: &Parts<'a>) -> Block<'a> {
    Block::Sheet {
        table: p.headline,
        open: true,
        csv: "by_family",
    }
}

/// One line on how to read the chart named `name`.
pub(crate) fn how_to_read(name: &str) -> &'static str {
    match name {
        "ratings" => "A dot is a player's rating, its bar the 95% interval, highest first; players whose bars overlap are not told apart by these episodes.",
        "crossplay" => "A row per player in the learner seat, a column per opponent; the darker the cell, the higher the learner's ρ over deals (its 95% interval under it), with the deal rate and the episodes played.",
        "outcomes_by_family" | "outcomes_people_and_models" => "Each bar splits its episodes by how they ended; the legend names the endings in the bars' order.",
        "sensitivity" => "A line per family (and one for all): the learner's ρ over the deals it would keep if it refused every deal below τ; the band is the 95% interval. What each τ costs in deals is in the CSV.",
        "rho_distribution" => "How many episodes ended at each ρ (the learner's share of the surplus); the end bars also hold everything beyond −1 and 1.",
        "belief_error_by_turn" => "A line per player: its belief probes' mean normalised error (0: exact) before each of its own turns; the band is the 95% interval. A falling line learns the other side as the talk goes on.",
        "belief_calibration" => "Each player's probe accuracy (× 100) per stated-confidence bin, beside the line a calibrated player's would follow (accuracy = confidence); bands are 95% intervals. A player's line below it is overconfidence, above it underconfidence.",
        "first_bid" => "A dot is the buyer's first offer over its budget; its bar the 95% interval.",
        "points_by_opponent_persona" => "A dot is the learner's mean points per episode; its bar the 95% interval.",
        name if name.starts_with("training_") => "A line per run across training steps; the band is the 95% interval.",
        name if name.starts_with("deal_rate") => "A dot is the share of episodes that ended in a deal; its bar the 95% interval.",
        _ => "A dot is the learner's mean ρ over deals (its share of the surplus between the two reservation values: 1 is all of it, below 0 a deal worse than its own limit); its bar the 95% interval.",
    }
}
