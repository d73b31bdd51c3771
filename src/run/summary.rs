//! The table printed at the end of a run: per family, how episodes ended and how well each seat
//! did. Backend errors are counted apart and left out of every rate and mean.

use std::collections::BTreeMap;

use crate::game::OutcomeKind;
use crate::record::EpisodeRecord;
use crate::scenario::Family;

/// Running totals for one family.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FamilyStats {
    pub episodes: usize,
    pub endings: BTreeMap<OutcomeKind, usize>,
    rho_learner: f64,
    rho_opponent: f64,
    turns: f64,
    attempts: usize,
    format_ok: usize,
}

impl FamilyStats {
    fn add(&mut self, r: &EpisodeRecord) {
        self.episodes += 1;
        *self.endings.entry(r.kind()).or_default() += 1;
        if r.kind() == OutcomeKind::Error {
            return;
        }
        self.rho_learner += r.outcome.outcome.rho.learner;
        self.rho_opponent += r.outcome.outcome.rho.opponent;
        self.turns += r.turns.iter().filter(|t| t.played.is_some()).count() as f64;
        self.attempts += r.turns.len();
        self.format_ok += r.turns.iter().filter(|t| t.parsed.format_ok).count();
    }

    /// Add another family's totals to these (for the "all" row).
    fn absorb(&mut self, other: &FamilyStats) {
        self.episodes += other.episodes;
        for (k, n) in &other.endings {
            *self.endings.entry(*k).or_default() += n;
        }
        self.rho_learner += other.rho_learner;
        self.rho_opponent += other.rho_opponent;
        self.turns += other.turns;
        self.attempts += other.attempts;
        self.format_ok += other.format_ok;
    }

    pub fn count(&self, kind: OutcomeKind) -> usize {
        self.endings.get(&kind).copied().unwrap_or(0)
    }

    /// Episodes that count for rates and means (all but backend errors).
    pub fn scored(&self) -> usize {
        self.episodes - self.count(OutcomeKind::Error)
    }

    fn rate(&self, kind: OutcomeKind) -> f64 {
        pct(self.count(kind), self.scored())
    }
}

fn pct(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

/// Totals of a run, per family.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunStats {
    pub families: BTreeMap<Family, FamilyStats>,
}

impl RunStats {
    pub fn add(&mut self, r: &EpisodeRecord) {
        self.families.entry(r.family).or_default().add(r);
    }

    pub fn episodes(&self) -> usize {
        self.families.values().map(|f| f.episodes).sum()
    }

    pub fn count(&self, kind: OutcomeKind) -> usize {
        self.families.values().map(|f| f.count(kind)).sum()
    }

    /// Completions asked for (every attempt of every turn of every scored episode).
    pub fn calls(&self) -> usize {
        self.families.values().map(|f| f.attempts).sum()
    }

    /// Deal rate over scored episodes, in percent (for the progress bar).
    pub fn deal_rate(&self) -> f64 {
        let scored: usize = self.families.values().map(|f| f.scored()).sum();
        pct(self.count(OutcomeKind::Deal), scored)
    }

    /// The summary as a Markdown table.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| family | episodes | deal % | walk-away % | reject-loop % | max-turns % | format-forfeit % | errors | mean ρ learner | mean ρ opponent | mean turns | format ok % |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        let mut all = FamilyStats::default();
        let rows: Vec<(String, &FamilyStats)> = self
            .families
            .iter()
            .map(|(f, s)| (f.to_string(), s))
            .collect();
        for (_, s) in &rows {
            all.absorb(s);
        }
        let all_row = ("all".to_string(), &all);
        for (name, s) in rows
            .iter()
            .map(|(n, s)| (n, *s))
            .chain(std::iter::once((&all_row.0, all_row.1)))
        {
            let n = s.scored().max(1) as f64;
            out.push_str(&format!(
                "| {name} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {:.3} | {:.3} | {:.1} | {:.1} |\n",
                s.episodes,
                s.rate(OutcomeKind::Deal),
                s.rate(OutcomeKind::WalkAway),
                s.rate(OutcomeKind::RejectLoop),
                s.rate(OutcomeKind::MaxTurns),
                s.rate(OutcomeKind::FormatForfeit),
                s.count(OutcomeKind::Error),
                s.rho_learner / n,
                s.rho_opponent / n,
                s.turns / n,
                pct(s.format_ok, s.attempts),
            ));
        }
        out
    }
}
