//! What an eval prints, as functions of its records: [`EvalTally`] is fed one record at a time
//! (from a running eval or a file read back); [`EvalTally::finish`] fits the ratings once and
//! gives [`EvalResults`], which renders the cross-play matrix and the rating table as Markdown
//! ([`EvalResults::markdown`]) or JSON ([`EvalResults::json`]). The ratings' observations wait
//! in a [`SpillStore`], so a large file moves them to disk rather than growing the memory.
//!
//! Who is rated: every player that sat in the learner seat of some record. Its ρ in the
//! learner seat is an observation, and so is its ρ in the opponent seat (a round-robin, where
//! players sit in both); a fixed opponent that never sat in the learner seat is not rated (its
//! results would only be compared with other opponents', on a scale of their own). Two
//! observations are compared ([`crate::score::Comparisons`]) when they share the situation
//! key: the run seed, scenario, group and member (so the same setup and sampling seeds), the
//! counterpart's name, the player's role and its seat (seats differ in regulation).
//!
//! Who is ranked with whom: two players are comparable when some situation holds both — they
//! met a common opponent set: the same counterpart on the same scenario and setup, in the same
//! role and seat, under the same run seed — or when a chain of such players joins them. Each
//! [`crate::score::Group`] of comparable players is one ranking; the rating table says each
//! player's group, and [`connections`] says in words which comparisons link whom (the terminal
//! and the report print the same sentence).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::{json, Value};

use std::path::PathBuf;

use super::beliefs::{BeliefFigures, Beliefs};
use super::matrix::CrossPlay;
use super::player_figures::{talk_rows, AnchorRow, Anchors, TalkRow};
use super::spill::{SpillError, SpillStore};
use crate::digest::Fnv1a64;
use crate::game::{OutcomeKind, Seat};
use crate::record::EpisodeRecord;
use crate::run::TABLE_WIDTH;
use crate::score::{cell, pct_cell, Comparisons, Estimate, Leaderboard, Rating};

/// The cross-play matrix and the ratings' observations of an eval, collected one record at a
/// time. `default()` spills to the system's temp directory; [`EvalTally::spilling_under`]
/// names the directory.
#[derive(Debug, Default)]
pub(crate) struct EvalTally {
    matrix: CrossPlay,
    anchors: Anchors,
    beliefs: Beliefs,
    comparisons: Comparisons<SpillStore>,
    learners: BTreeSet<String>,
}

/// The matrix and the ratings of a set of records, ready to print.
#[derive(Debug, Clone, Default)]
pub struct EvalResults {
    matrix: CrossPlay,
    leaderboard: Leaderboard,
    anchoring: Vec<AnchorRow>,
    beliefs: BeliefFigures,
}

impl EvalTally {
    /// Tables whose ratings' observations, past what memory keeps, go in files under `dir`
    /// (removed when the tables are finished or dropped).
    pub(crate) fn spilling_under(dir: impl Into<PathBuf>) -> EvalTally {
        EvalTally {
            comparisons: Comparisons::new(SpillStore::under(dir)),
            ..EvalTally::default()
        }
    }

    /// Add one episode. A backend error gives no ρ and is only counted in its cell. Fails only
    /// when the ratings' observations cannot be written to their files.
    pub fn add(&mut self, record: &EpisodeRecord) -> Result<(), SpillError> {
        self.matrix.add(record);
        self.anchors.add(record);
        self.beliefs.add(record);
        self.learners
            .insert(record.player_name(Seat::Learner).to_string());
        if record.kind() == OutcomeKind::Error {
            return Ok(());
        }
        // Only eval records (named players) are rated: a plain run's episode has no paired
        // twin, and keeping its ρ would make a report's memory grow with the file for nothing.
        for seat in Seat::BOTH
            .into_iter()
            .filter(|s| record.seats[*s].name.is_some())
        {
            let key = situation(record, seat);
            self.comparisons.add(
                key,
                record.player_name(seat),
                record.outcome.outcome.rho[seat],
            )?;
        }
        Ok(())
    }

    /// Fit the ratings of the rated players (see the module doc); the spill files, if any, go.
    pub fn finish(self) -> Result<EvalResults, SpillError> {
        let learners = self.learners;
        let leaderboard = self
            .comparisons
            .leaderboard(|name| learners.contains(name))?;
        Ok(EvalResults {
            anchoring: self.anchors.rows(&self.matrix),
            beliefs: self.beliefs.figures(),
            matrix: self.matrix,
            leaderboard,
        })
    }
}

impl EvalResults {
    pub(crate) fn matrix(&self) -> &CrossPlay {
        &self.matrix
    }

    /// The rated players (see the module doc), group by group, highest first in each.
    pub(crate) fn ratings(&self) -> &[Rating] {
        &self.leaderboard.ratings
    }

    /// Which comparisons connect the rated players, in words (one paragraph: each group of
    /// comparable players with the situations that link them, and who was never compared).
    pub(crate) fn connections(&self) -> String {
        connections(&self.leaderboard)
    }

    /// Each player with and without talk against the same opponent (`--talk-ablation`);
    /// empty unless the records hold both.
    pub(crate) fn talk(&self) -> Vec<TalkRow> {
        talk_rows(&self.matrix)
    }

    /// Each player's anchoring slope per family with a deal on a price, beside its first-bid
    /// ratio.
    pub(crate) fn anchoring(&self) -> &[AnchorRow] {
        &self.anchoring
    }

    /// The matrix of every family and of all families, then (where the records give them)
    /// the talk ablation and the anchoring tables, then the rating table.
    pub fn markdown(&self) -> String {
        let mut out = self.matrix_markdown();
        out.push('\n');
        out.push_str(&self.talk_markdown());
        out.push_str(&self.anchoring_markdown());
        out.push_str(&self.beliefs_markdown());
        out.push_str(&ratings_markdown(&self.leaderboard));
        out
    }

    /// "Does talk matter?": a row per player and opponent played with and without talk, its
    /// deal % and ρ over deals each way and the difference of ρ per episode (talk − no talk)
    /// with its 95% interval, then a blank line; nothing without such pairs.
    pub(crate) fn talk_markdown(&self) -> String {
        let rows = self.talk();
        if rows.is_empty() {
            return String::new();
        }
        let mut out = wrap(
            "Does talk matter? The learner seat with talk and without (--talk-ablation, same \
             setups): deal % and ρ over deals each way, and ρ per episode with talk minus \
             without, 95% CI",
        );
        out.push_str(
            "\n\n| player | opponent | deal % talk / none | ρ deals talk / none | Δρ [95% CI] |\n\
             |---|---|---:|---:|---:|\n",
        );
        let pct =
            |e: Option<Estimate>| e.map_or("–".into(), |e| format!("{:.1}", 100.0 * e.value));
        let num = |e: Option<Estimate>| e.map_or("–".into(), |e| format!("{:.3}", e.value));
        for r in rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} / {} | {} / {} | {} |",
                r.player,
                r.opponent,
                pct(r.deal_rate[0]),
                pct(r.deal_rate[1]),
                num(r.rho_deals[0]),
                num(r.rho_deals[1]),
                signed_cell(r.rho_difference),
            );
        }
        out.push('\n');
        out
    }

    /// "Anchoring": a row per player and family with deals on a price: its deals, the slope
    /// of the deal price on the first proposal with its 95% interval, and its first-bid ratio,
    /// then a blank line; nothing without such deals.
    pub(crate) fn anchoring_markdown(&self) -> String {
        if self.anchoring.is_empty() {
            return String::new();
        }
        let mut out = wrap(
            "Anchoring: slope of the deal price on the episode's first proposal (both as a \
             position in the bargaining range), per player in the learner seat, beside its \
             first bid / budget",
        );
        out.push_str(
            "\n\n| player | family | deals | slope [95% CI] | first bid [95% CI] |\n\
             |---|---|---:|---:|---:|\n",
        );
        for r in &self.anchoring {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                r.player,
                r.family,
                r.deals,
                cell(r.slope, 2),
                cell(r.first_bid, 3),
            );
        }
        out.push('\n');
        out
    }

    /// The belief probes of the records (`[probes] beliefs = true`): per player, the probes,
    /// the unreadable and the unscored ones, the mean accuracy and the mean stated confidence,
    /// its calibration rows and its error by turn.
    pub(crate) fn beliefs(&self) -> &BeliefFigures {
        &self.beliefs
    }

    /// "Does it know what the other side wants?": a row per player with belief probes, its
    /// mean accuracy (0–1) and mean stated confidence (0–100), each with its 95% interval, then
    /// a blank line; nothing without probes.
    pub(crate) fn beliefs_markdown(&self) -> String {
        if self.beliefs.is_empty() {
            return String::new();
        }
        let mut out = wrap(
            "Belief probes: each player's estimate of the other side's private values (a \
             price's reservation, an order of items or issues), its accuracy (1: exact) and \
             its stated confidence, 95% CI",
        );
        out.push_str(
            "\n\n| player | probes | unreadable | unscored | accuracy [95% CI] | confidence [95% CI] |\n\
             |---|---:|---:|---:|---:|---:|\n",
        );
        for r in &self.beliefs.players {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                r.player,
                r.probes,
                r.unreadable,
                r.unscored,
                cell(r.accuracy, 3),
                cell(r.confidence, 1),
            );
        }
        out.push('\n');
        out
    }

    /// One Markdown table per family (`### FAMILY`), then one for all families (`### all`),
    /// with one row per pairing that met (player in the learner seat, opponent): its episodes,
    /// then the learner seat's deal % with its bargained ratio over deals beside it and its ρ per
    /// episode (no deal = 0), each `value [low, high]` with its 95% interval. A row per pairing,
    /// not a player × opponent grid: the width stays within a terminal's
    /// ([`crate::run::TABLE_WIDTH`], for names of up to 30 characters together; with the regret
    /// column, two decimals, of up to about 15) however many
    /// opponents an eval has.
    pub(crate) fn matrix_markdown(&self) -> String {
        let mut out = String::from(
            "Cross-play, one row per pairing: the learner seat's deal %, ρ over deals and ρ per \
             episode (no deal = 0)",
        );
        // Regret only where some pairing met a built-in rule the oracle searches: every other
        // eval's tables stay as they were.
        let regret = self.matrix.cells(None).iter().any(|c| c.regret.is_some());
        if regret {
            out.push_str(
                ",\nand its regret against a built-in rule (the best ρ any play reaches − its ρ)",
            );
        }
        out.push('\n');
        let sections = self
            .matrix
            .families()
            .into_iter()
            .map(|f| (f.name().to_string(), Some(f)))
            .chain(std::iter::once(("all".to_string(), None)));
        for (title, family) in sections {
            let _ = writeln!(out, "\n### {title}\n");
            out.push_str(
                "| player | opponent | episodes | deal % [95% CI] | ρ over deals [95% CI] \
                 | ρ per episode [95% CI] |",
            );
            out.push_str(if regret {
                " regret [95% CI] |\n|---|---|---:|---:|---:|---:|---:|\n"
            } else {
                "\n|---|---|---:|---:|---:|---:|\n"
            });
            for c in self.matrix.cells(family) {
                let _ = write!(
                    out,
                    "| {} | {} | {} | {} | {} | {} |",
                    c.learner,
                    c.opponent,
                    c.episodes,
                    pct_cell(c.deal_rate),
                    cell(c.rho_deals, 3),
                    cell(c.mean_rho, 3),
                );
                // Two decimals: the row stays within the terminal's width with names of about
                // 15 characters together.
                if regret {
                    let _ = write!(out, " {} |", cell(c.regret, 2));
                }
                out.push('\n');
            }
        }
        out
    }

    /// The matrix (per family and `"all"`) and the ratings as one JSON object:
    /// `{"matrix": [{"family", "cells": [{learner, opponent, episodes, errors, rho_deals,
    /// mean_rho, deal_rate, sl, average_turns, regret}]}], "ratings": [{player, rating, low, high, comparisons, wins,
    /// group}], "groups": [{number, players, situations}], "connections": "…", "talk":
    /// [{player, opponent, deal_rate, rho_deals, rho_difference, deal_difference}],
    /// "anchoring": [{player, family, deals, slope, first_bid}], "beliefs": {"players":
    /// [{player, probes, unreadable, unscored, accuracy, confidence}], "calibration": [{player, bin, midpoint, n,
    /// confidence, accuracy}], "error_by_turn": [{player, turn, error}]}}` (`talk`, `anchoring`
    /// and `beliefs` only where the records give rows; `deal_rate` and `rho_deals` with talk, then without; `rho_deals`
    /// over deals, `mean_rho` per episode; `deal_rate`, `sl` and `average_turns` DialogXpert's
    /// SR, SL and AT, `sl` only where the learner was a price buyer, `regret` only where it faced a built-in rule the oracle searches (`score::oracle`); `group` a group's `number`, `null` for a player
    /// never compared; `connections` the sentence `EvalResults::connections` gives), estimates as
    /// `{value, low, high, n}` (deal rate as a fraction) or `null`.
    pub fn json(&self) -> Value {
        let sections = self
            .matrix
            .families()
            .into_iter()
            .map(|f| (f.name().to_string(), Some(f)))
            .chain(std::iter::once(("all".to_string(), None)));
        let matrix: Vec<Value> = sections
            .map(|(family, f)| json!({"family": family, "cells": self.matrix.cells(f)}))
            .collect();
        let mut out = json!({
            "matrix": matrix,
            "ratings": self.leaderboard.ratings,
            "groups": self.leaderboard.groups,
            "connections": self.connections(),
        });
        // Only where the records give them, so other summaries keep their keys.
        let talk = self.talk();
        if !talk.is_empty() {
            out["talk"] = json!(talk);
        }
        if !self.anchoring.is_empty() {
            out["anchoring"] = json!(self.anchoring);
        }
        if !self.beliefs.is_empty() {
            out["beliefs"] = json!(self.beliefs);
        }
        out
    }
}

/// A difference `+v [low, high]` with three decimals and its sign, or `–`.
fn signed_cell(e: Option<Estimate>) -> String {
    e.map_or("–".into(), |e| {
        format!("{:+.3} [{:+.3}, {:+.3}]", e.value, e.low, e.high)
    })
}

/// The situation key of a seat's result (see the module doc).
fn situation(record: &EpisodeRecord, seat: Seat) -> u64 {
    let mut h = Fnv1a64::new();
    h.field(&record.seeds.run.to_le_bytes());
    h.field(record.scenario_id.as_bytes());
    h.field(&record.seeds.group.to_le_bytes());
    h.field(&record.seeds.member.to_le_bytes());
    h.field(record.player_name(seat.other()).as_bytes());
    h.field(record.seats[seat].role.name().as_bytes());
    h.field(seat.name().as_bytes());
    h.finish().0
}

/// The rating table: player, rating, its 95% interval, comparisons, wins and group, group by
/// group and highest first in each; then which comparisons connect the players.
pub(crate) fn ratings_markdown(leaderboard: &Leaderboard) -> String {
    let mut out = wrap(
        "Ratings: Bradley–Terry on paired ρ (same scenario, setup, counterpart, role and seat), \
         400·log10 strength, mean 0; ranked within each group of players that met a common \
         opponent set",
    );
    out.push_str(
        "\n\n| player | rating | 95% CI | comparisons | wins | group |\n|---|---:|---|---:|---:|---:|\n",
    );
    for r in &leaderboard.ratings {
        let (rating, interval) = match (r.rating, r.low, r.high) {
            (Some(v), Some(low), Some(high)) => {
                (format!("{v:+.0}"), format!("[{low:+.0}, {high:+.0}]"))
            }
            (Some(v), _, _) => (format!("{v:+.0}"), "–".to_string()),
            _ => ("–".to_string(), "–".to_string()),
        };
        let group = r.group.map_or_else(|| "–".to_string(), |g| g.to_string());
        let _ = writeln!(
            out,
            "| {} | {rating} | {interval} | {} | {} | {group} |",
            r.player, r.comparisons, r.wins
        );
    }
    let _ = writeln!(out, "\n{}", wrap(&connections(leaderboard)));
    out
}

/// Prose cut into lines of at most [`TABLE_WIDTH`] characters at spaces, for the terminal.
fn wrap(text: &str) -> String {
    let mut lines: Vec<String> = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > TABLE_WIDTH {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.join("\n")
}

/// Which comparisons connect the rated players, in one paragraph: each group of comparable
/// players (see the module doc) with the situations that link them, that the groups met no
/// common opponent set with each other (so are ranked apart), and who was never compared. The
/// one wording of it: the terminal's rating table and the report's both print this.
pub(crate) fn connections(leaderboard: &Leaderboard) -> String {
    let groups = &leaderboard.groups;
    let mut sentences: Vec<String> = Vec::new();
    for g in groups {
        let mut sentence = format!(
            "{} are ranked together: {} shared situation{} link{} them",
            names(&g.players),
            g.situations,
            if g.situations == 1 { "" } else { "s" },
            if g.situations == 1 { "s" } else { "" },
        );
        if groups.len() > 1 {
            let _ = write!(sentence, " (group {})", g.number);
        }
        if g.number > 1 {
            let earlier: Vec<String> = (1..g.number).map(|n| n.to_string()).collect();
            let _ = write!(
                sentence,
                "; they met no common opponent set with group{} {} and are ranked apart",
                if earlier.len() == 1 { "" } else { "s" },
                names(&earlier)
            );
        }
        sentence.push('.');
        sentences.push(sentence);
    }
    if groups.len() > 1 {
        sentences.push("Compare ratings within a group only.".to_string());
    }
    let never: Vec<String> = leaderboard
        .ratings
        .iter()
        .filter(|r| r.group.is_none())
        .map(|r| r.player.clone())
        .collect();
    if !never.is_empty() {
        sentences.push(format!(
            "{} met no other rated player in any situation and {} not rated.",
            names(&never),
            if never.len() == 1 { "is" } else { "are" }
        ));
    }
    if groups.is_empty() && never.is_empty() {
        sentences.push("No player is rated.".to_string());
    }
    sentences.join(" ")
}

/// `a`, `a and b`, `a, b and c`.
fn names(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, play, price_task, record_of, turn};
    use crate::scenario::Role;

    /// The learner (buyer; B = 100, C = 60) buys at `price` in group `group`.
    fn deal(learner: &str, opponent: &str, group: u64, price: u32) -> EpisodeRecord {
        let s = price_task(125.0, 100.0, 60.0);
        let moves = [
            turn("Offer.", &format!("[SUBMIT_DEAL] price:{price}")),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ];
        let mut r = record_of(play(&s, learner_first_as(&s, Role::Buyer), &moves));
        r.seats.learner.name = Some(learner.to_string());
        r.seats.opponent.name = Some(opponent.to_string());
        r.seeds.group = group;
        // Its own episode id too: the bootstrap draws an episode's weights from its ids.
        r.episode_id = r.seeds.episode_id();
        r.group_id = r.seeds.group_id();
        r
    }

    #[test]
    fn players_are_compared_in_the_same_situation_and_fixed_opponents_are_not_rated() {
        let mut t = EvalTally::default();
        // Against x, a buys cheaper than b in groups 0 and 1 and dearer in group 2; against
        // y, b is alone in group 0 (no comparison); group 3 of x has only a.
        for (group, a, b) in [(0, 70, 80), (1, 65, 90), (2, 85, 75)] {
            t.add(&deal("a", "x", group, a)).unwrap();
            t.add(&deal("b", "x", group, b)).unwrap();
        }
        t.add(&deal("b", "y", 0, 70)).unwrap();
        t.add(&deal("a", "x", 3, 70)).unwrap();
        let t = t.finish().unwrap();
        let r = t.ratings();
        let names: Vec<&str> = r.iter().map(|r| r.player.as_str()).collect();
        assert_eq!(names, ["a", "b"], "x and y never sat in the learner seat");
        assert_eq!((r[0].comparisons, r[0].wins), (3, 2.0));
        assert_eq!((r[1].comparisons, r[1].wins), (3, 1.0));
        assert!(r[0].rating.unwrap() > 0.0);
        let text = t.markdown();
        assert!(text.contains("| a | +"), "{text}");
        assert!(text.contains("| 3 | 2 |"), "{text}");
    }

    #[test]
    fn the_connections_say_who_is_ranked_with_whom() {
        let mut t = EvalTally::default();
        // a and b meet x in groups 0 and 1; c and d meet y in group 0 (one situation); e
        // plays z alone.
        for group in [0, 1] {
            t.add(&deal("a", "x", group, 70)).unwrap();
            t.add(&deal("b", "x", group, 80)).unwrap();
        }
        t.add(&deal("c", "y", 0, 70)).unwrap();
        t.add(&deal("d", "y", 0, 90)).unwrap();
        t.add(&deal("e", "z", 0, 90)).unwrap();
        let t = t.finish().unwrap();
        assert_eq!(
            t.connections(),
            "a and b are ranked together: 2 shared situations link them (group 1). c and d \
             are ranked together: 1 shared situation links them (group 2); they met no common \
             opponent set with group 1 and are ranked apart. Compare ratings within a group \
             only. e met no other rated player in any situation and is not rated."
        );
        let groups: Vec<Option<usize>> = t.ratings().iter().map(|r| r.group).collect();
        assert_eq!(groups, [Some(1), Some(1), Some(2), Some(2), None]);
        let text = t.markdown();
        assert!(
            text.ends_with(&format!("\n\n{}\n", wrap(&t.connections()))),
            "{text}"
        );
        assert!(
            text.contains("| 1 | 0 | 2 |"),
            "d's row: lost its one comparison, group 2: {text}"
        );
        let json = t.json();
        assert_eq!(json["groups"][1]["players"], json!(["c", "d"]));
        assert_eq!(json["ratings"][4]["group"], Value::Null);
        assert_eq!(json["connections"], t.connections());
    }

    #[test]
    fn the_matrix_has_a_row_per_pairing_per_family() {
        let mut t = EvalTally::default();
        t.add(&deal("a", "x", 0, 70)).unwrap();
        t.add(&deal("a", "x", 1, 90)).unwrap();
        t.add(&deal("b", "y", 0, 80)).unwrap();
        let t = t.finish().unwrap();
        let text = t.matrix_markdown();
        let lines: Vec<&str> = text.lines().collect();
        let header = lines.iter().position(|l| *l == "### craigslist").unwrap();
        assert_eq!(
            lines[header + 2],
            "| player | opponent | episodes | deal % [95% CI] | ρ over deals [95% CI] \
             | ρ per episode [95% CI] |"
        );
        // a vs x: ρ 0.75 and 0.25, mean 0.5; both deals, so over deals and per episode agree.
        assert_eq!(
            lines[header + 4],
            "| a | x | 2 | 100.0 [100.0, 100.0] | 0.500 [0.250, 0.750] | 0.500 [0.250, 0.750] |"
        );
        // b vs y: ρ (100 − 80)/40 = 0.5; a never met y nor b x, so no row says so.
        assert_eq!(
            lines[header + 5],
            "| b | y | 1 | 100.0 [100.0, 100.0] | 0.500 [0.500, 0.500] | 0.500 [0.500, 0.500] |"
        );
        assert_eq!(lines[header + 6], "");
        let all = lines.iter().position(|l| *l == "### all").unwrap();
        assert_eq!(lines[all + 4], lines[header + 4]);
        let json = t.json();
        assert_eq!(json["matrix"][1]["family"], "all");
        assert_eq!(json["matrix"][0]["cells"][0]["mean_rho"]["value"], 0.5);
        assert_eq!(json["ratings"].as_array().unwrap().len(), 2);
    }

    /// The learner (buyer; B = 100, C = 60) opens at `first`, the opponent counters at
    /// `deal`, and the learner accepts.
    fn anchored(learner: &str, group: u64, first: u32, deal: u32) -> EpisodeRecord {
        let s = price_task(125.0, 100.0, 60.0);
        let moves = [
            turn("Offer.", &format!("[SUBMIT_DEAL] price:{first}")),
            turn("Counter.", &format!("[SUBMIT_DEAL] price:{deal}")),
            turn("Fine.", "[ACCEPT_DEAL]"),
        ];
        let mut r = record_of(play(&s, learner_first_as(&s, Role::Buyer), &moves));
        r.seats.learner.name = Some(learner.to_string());
        r.seats.opponent.name = Some("x".to_string());
        r.seeds.group = group;
        r.episode_id = r.seeds.episode_id();
        r.group_id = r.seeds.group_id();
        r
    }

    #[test]
    fn the_anchoring_slope_of_constructed_deals_is_the_one_they_were_built_with() {
        let mut t = EvalTally::default();
        // a: the deal moves half as far as the first proposal (deal = 70 + (first − 60)/2, so
        // in the range (p − 60)/40 the deal is 0.25 + 0.5·first); b: the deal ignores it.
        for (group, first) in [60, 64, 68, 72, 76, 80].into_iter().enumerate() {
            t.add(&anchored("a", group as u64, first, 70 + (first - 60) / 2))
                .unwrap();
            t.add(&anchored("b", group as u64, first, 85)).unwrap();
        }
        let t = t.finish().unwrap();
        let rows = t.anchoring();
        assert_eq!(rows.len(), 2);
        let a = rows[0].slope.unwrap();
        assert_eq!((rows[0].player.as_str(), rows[0].deals), ("a", 6));
        assert!((a.value - 0.5).abs() < 1e-9, "{a:?}");
        assert!(
            (a.low - 0.5).abs() < 1e-9 && (a.high - 0.5).abs() < 1e-9,
            "{a:?}"
        );
        assert!(rows[1].slope.unwrap().value.abs() < 1e-9);
        // Its first-bid ratio beside it: the mean first offer over the budget, 70/100.
        assert!((rows[0].first_bid.unwrap().value - 0.70).abs() < 1e-9);
        let text = t.markdown();
        assert!(
            text.contains("| a | craigslist | 6 | 0.50 [0.50, 0.50] | 0.700"),
            "{text}"
        );
        let json = t.json()["anchoring"][0]["slope"]["value"].as_f64().unwrap();
        assert!((json - 0.5).abs() < 1e-9);
    }

    #[test]
    fn a_player_with_and_without_talk_is_set_side_by_side_with_the_difference() {
        let mut t = EvalTally::default();
        // With talk a buys at 70 (ρ 0.75), without at 90 (ρ 0.25), on the same four setups.
        for group in 0..4 {
            t.add(&deal("a", "x", group, 70)).unwrap();
            t.add(&deal(&crate::eval::grid::no_talk_name("a"), "x", group, 90))
                .unwrap();
        }
        let t = t.finish().unwrap();
        let rows = t.talk();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.player.as_str(), r.opponent.as_str()), ("a", "x"));
        let d = r.rho_difference.unwrap();
        assert!((d.value - 0.5).abs() < 1e-9, "{d:?}");
        assert!(d.low > 0.0, "the interval leaves out 0: {d:?}");
        assert_eq!(r.deal_difference.unwrap().value, 0.0);
        let text = t.markdown();
        assert!(
            text.contains("| a | x | 100.0 / 100.0 | 0.750 / 0.250 | +0.500 [+0.500, +0.500] |"),
            "{text}"
        );
        assert_eq!(t.json()["talk"][0]["player"], "a");
        // Without an ablation there is no such table, and no key in the summary.
        let mut plain = EvalTally::default();
        plain.add(&deal("a", "x", 0, 70)).unwrap();
        let plain = plain.finish().unwrap();
        assert!(!plain.markdown().contains("Does talk matter"));
        assert!(plain.json().get("talk").is_none());
    }

    #[test]
    fn every_line_fits_a_terminal_however_many_opponents() {
        // Two players against six opponents, every family: a grid would be six cells wide.
        let mut t = EvalTally::default();
        let players = ["gpt-4o-mini", "qwen2.5-7b"];
        let opponents = [
            "boulware",
            "conceder",
            "linear",
            "tough",
            "tit-for-tat",
            "random",
        ];
        for family in crate::scenario::Family::ALL {
            for (p, player) in players.iter().enumerate() {
                for (o, opponent) in opponents.iter().enumerate() {
                    for group in 0..3 {
                        // Prices from 60 to 115: ρ from 1 down to below 0.
                        let price = 60 + 5 * ((p + o + group as usize) % 12) as u32;
                        let mut r = deal(player, opponent, group, price);
                        r.family = family;
                        r.episode_id = format!("{family}-{}", r.episode_id);
                        t.add(&r).unwrap();
                    }
                }
            }
        }
        let text = t.finish().unwrap().markdown();
        assert!(text.contains("| qwen2.5-7b | tit-for-tat | 3 | "), "{text}");
        let widest = text.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(
            widest <= crate::run::TABLE_WIDTH,
            "{widest} columns:\n{text}"
        );
    }
}
