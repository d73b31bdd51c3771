//! The prompt-cost table: per family (both seats) and per family and seat, the prompt tokens
//! the model was sent, those its server took from its cache, those it evaluated and the minimum
//! (the tokens new since the seat's last call), with evaluated/minimum over every call and over
//! the calls after each seat's first (what is left once a system prompt shared between
//! episodes is set apart). The figures are
//! [`crate::record::PromptCosts`]'; shown only when some call's server said what it had cached
//! (`usage.prompt_tokens_details.cached_tokens`), so reports of other records keep their tables.

use crate::record::{PromptCost, PromptCosts};

use super::sheet::{Cell, Column, Sheet};

/// The table, or `None` when no call reported its server's cache.
pub(crate) fn prompt_cost_table(costs: &PromptCosts) -> Option<Sheet> {
    if !costs.any_reported() {
        return None;
    }
    let row = |group: String, c: &PromptCost| {
        vec![
            Cell::Text(group),
            Cell::Count(c.calls),
            Cell::Count(c.reported),
            Cell::Count(c.prompt),
            Cell::Count(c.cached),
            Cell::Count(c.evaluated),
            Cell::Count(c.minimum),
            Cell::Number(c.ratio(), 3),
            Cell::Number(c.later_ratio(), 3),
        ]
    };
    let families = costs.by_family();
    let rows = families
        .iter()
        .map(|(family, c)| row(family.name().to_string(), c))
        .chain(
            costs
                .by_seat()
                .map(|(family, seat, c)| row(format!("{} {}", family.name(), seat.name()), c)),
        )
        .collect();
    Some(Sheet {
        name: "prompt_cost".into(),
        title: "What the model read: prompt tokens evaluated against the minimum (the tokens \
                new since the seat's last call), per family and per seat"
            .into(),
        columns: vec![
            Column::new("group", "group"),
            Column::new("calls", "calls"),
            Column::new("calls with cache figures", "reported_calls"),
            Column::new("prompt tokens", "prompt_tokens"),
            Column::new("cached", "cached_tokens"),
            Column::new("evaluated", "evaluated_tokens"),
            Column::new("minimum", "minimum_tokens"),
            Column::new("evaluated / minimum", "ratio"),
            Column::new("after each seat's first call", "ratio_later"),
        ],
        rows,
    })
}
