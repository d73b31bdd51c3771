//! What a seat that carries a campaign's ledger is told about it: the template context of its
//! [`Standing`] (`prompts/_campaign.j2` renders it). The prompt states the seat's BATNA and
//! what each earlier deal left it, in numbers the seat's own utility is counted in.

use minijinja::{context, Value};
use serde::Serialize;

use crate::campaign::{Budget, LedgerKind, Quantity, Standing};

use super::prompt::{money, trim_number};

#[derive(Serialize)]
struct EarlierView {
    position: usize,
    title: String,
    ending: String,
    deal: bool,
    utility: String,
    price: Option<String>,
}

/// The `campaign` variable of a seat's prompt context.
pub(super) fn campaign_view(standing: &Standing) -> Value {
    let earlier: Vec<EarlierView> = standing
        .earlier
        .iter()
        .enumerate()
        .map(|(i, d)| EarlierView {
            position: i + 1,
            title: d.title.clone(),
            ending: d.ending.replace('_', " "),
            deal: d.ending == "deal",
            utility: trim_number(d.utility),
            price: d.price.map(money),
        })
        .collect();
    let before = &standing.before;
    let base = context! {
        kind => standing.ledger.name(),
        position => standing.position,
        deals => standing.deals,
        batna => trim_number(standing.batna),
        closed => before.closed,
        earlier => earlier,
    };
    let kind = match standing.ledger {
        LedgerKind::BestOffer(_) => context! { best => trim_number(before.value) },
        LedgerKind::Quantity(Quantity {
            target,
            lot,
            shortfall_penalty,
            excess_penalty,
        }) => context! {
            target => target,
            lot => lot,
            got => trim_number(before.value),
            short => trim_number((f64::from(target) - before.value).max(0.0)),
            shortfall_penalty => trim_number(shortfall_penalty),
            excess_penalty => trim_number(excess_penalty),
        },
        LedgerKind::Budget(Budget { money: start }) => context! {
            money => money(start),
            left => money(before.value.max(0.0)),
            budget => standing.budget.map(money),
        },
    };
    context! { ..base, ..kind }
}
