//! A figure with its interval, and how every table (the run summary, reports, the eval matrix)
//! writes one in a cell.

use serde::Serialize;

/// A figure with its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The figure on all its episodes.
    pub value: f64,
    /// Lower and upper bounds of the 95% interval.
    pub low: f64,
    pub high: f64,
    /// Episodes the figure is over.
    pub n: usize,
}

impl Estimate {
    /// The same estimate in other units (e.g. 100 for percent).
    pub fn scaled(self, factor: f64) -> Estimate {
        Estimate {
            value: self.value * factor,
            low: self.low * factor,
            high: self.high * factor,
            n: self.n,
        }
    }
}

/// `value [low, high]` with `digits` decimals, or `–` for no estimate: how every table
/// (the run summary, reports) writes a figure.
pub fn cell(e: Option<Estimate>, digits: usize) -> String {
    match e {
        Some(e) => format!(
            "{:.d$} [{:.d$}, {:.d$}]",
            e.value,
            e.low,
            e.high,
            d = digits
        ),
        None => "–".to_string(),
    }
}

/// A share as a percentage cell (one decimal).
pub fn pct_cell(e: Option<Estimate>) -> String {
    cell(e.map(|e| e.scaled(100.0)), 1)
}
