//! What a seat that carries a campaign's ledger is told about it: the template context of its
//! [`Standing`] (`prompts/_campaign.j2` renders it). The prompt states the seat's BATNA and
//! what each earlier deal left it, in numbers the seat's own utility is counted in.

use minijinja::{context, Value};
use serde::Serialize;

use crate::campaign::{Budget, LedgerKind, Quantity, Standing};

use super::prompt::trim_number;
use crate::protocol::money;

#[derive(Serialize)]
struct EarlierView {
    position: usize,
    title: String,
    ending: String,
    deal: bool,
    utility: String,
    price: Option<String>,
}

/// Titles longer than this many characters are cut (a listing's title can run to hundreds).
const TITLE_CHARS: usize = 80;

/// `title`, cut to [`TITLE_CHARS`] characters with an ellipsis where it is longer.
fn short_title(title: &str) -> String {
    if title.chars().count() <= TITLE_CHARS {
        return title.to_string();
    }
    let cut: String = title.chars().take(TITLE_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// The `campaign` variable of a seat's prompt context.
pub(super) fn campaign_view(standing: &Standing) -> Value {
    let earlier: Vec<EarlierView> = standing
        .earlier
        .iter()
        .enumerate()
        .map(|(i, d)| EarlierView {
            position: i + 1,
            title: short_title(&d.title),
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

#[cfg(test)]
mod tests {
    use crate::campaign::{BestOffer, Budget, EarlierDeal, LedgerKind, LedgerState, Standing};
    use crate::fixtures::{learner_first_as, play, price_task, record_of, turn};
    use crate::game::{OutcomeKind, Seat};
    use crate::scenario::Role;

    fn standing(ledger: LedgerKind, value: f64, batna: f64, budget: Option<f64>) -> Standing {
        Standing {
            campaign: "c".into(),
            position: 3,
            deals: 4,
            ledger,
            before: LedgerState {
                value,
                closed: 1,
                utility: value,
            },
            batna,
            budget,
            earlier: vec![
                EarlierDeal {
                    scenario: "ahp:x:0".into(),
                    title: "A lamp".into(),
                    ending: "deal".into(),
                    utility: value,
                    price: Some(85.0),
                },
                EarlierDeal {
                    scenario: "ahp:x:1".into(),
                    title: "A".repeat(200),
                    ending: "walk_away".into(),
                    utility: value,
                    price: None,
                },
            ],
        }
    }

    #[test]
    fn a_standing_is_the_seats_no_deal_value_its_floor_and_its_prompt() {
        // Price B = 100, C = 60; the buyer holds an offer worth 15 from an earlier deal.
        let s = price_task(125.0, 100.0, 60.0);
        let best = LedgerKind::BestOffer(BestOffer { start: 0.0 });
        let setup = learner_first_as(&s, Role::Buyer)
            .with_standing(&s, Seat::Learner, standing(best, 15.0, 15.0, None), None)
            .unwrap();
        assert_eq!(setup.seats.learner.floor, 15.0);
        assert_eq!(setup.no_deal_value_of(Seat::Learner), 15.0);
        assert_eq!(setup.no_deal_value_of(Seat::Opponent), 0.0);
        let episode = play(&s, setup, &[turn("No.", "[WALK_AWAY]")]);
        let (learner, opponent) = (
            episode.system_prompt(Seat::Learner).to_string(),
            episode.system_prompt(Seat::Opponent).to_string(),
        );
        for says in [
            "## Your campaign\nThis negotiation is deal 3 of 4 in a campaign",
            "it is worth 15 to you",
            "- deal 1, A lamp: agreed at $85, worth 15 to you",
            "- deal 2, AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA…: no deal (walk away)",
            "Without an agreement you get 15, your best alternative now.",
        ] {
            assert!(learner.contains(says), "{says}\n{learner}");
        }
        assert!(!opponent.contains("campaign"));
        assert!(opponent.contains("Without an agreement you get nothing."));
        let record = record_of(episode);
        assert_eq!(record.kind(), OutcomeKind::WalkAway);
        // Walking away leaves the buyer its BATNA, and the ledger as it was.
        assert_eq!(record.outcome.outcome.utility.learner, 15.0);
        assert_eq!(record.outcome.outcome.rho.learner, 15.0 / 40.0);
        assert_eq!(record.outcome.outcome.utility.opponent, 0.0);
        let ledger = record.campaign.unwrap();
        assert_eq!(
            (ledger.before, ledger.after),
            (ledger.before, ledger.before)
        );
        assert_eq!((ledger.gain, ledger.value), (0.0, 15.0));
    }

    #[test]
    fn a_budget_standing_caps_the_budget_the_deal_is_played_and_scored_with() {
        // B = 100 but only 80 left: the deal is played with B = 80.
        let s = price_task(125.0, 100.0, 60.0);
        let budget = LedgerKind::Budget(Budget { money: 200.0 });
        let setup = learner_first_as(&s, Role::Buyer)
            .with_standing(
                &s,
                Seat::Learner,
                standing(budget.clone(), 80.0, 0.0, Some(80.0)),
                None,
            )
            .unwrap();
        let episode = play(
            &s,
            setup,
            &[
                turn("70?", "[SUBMIT_DEAL] price:70"),
                turn("Yes.", "[ACCEPT_DEAL]"),
            ],
        );
        let prompt = episode.system_prompt(Seat::Learner).to_string();
        assert!(prompt.contains("Your budget is $80"), "{prompt}");
        assert!(
            prompt.contains("You had $200 for every purchase of the campaign and have $80 left")
        );
        let record = record_of(episode);
        assert_eq!(record.outcome.outcome.utility.learner, 10.0);
        assert_eq!(record.outcome.outcome.rho.learner, 0.5);
        let ledger = record.campaign.unwrap();
        assert_eq!(ledger.after.value, 10.0);
        assert_eq!(ledger.after.closed, 2);
        assert_eq!(ledger.gain, 10.0);
        // The scenario file's own budget is untouched (replay finds it by its digest).
        assert_eq!(crate::campaign::budget_of(&s), Some(100.0));
        // Only a buyer has a budget to cap.
        let seller = learner_first_as(&s, Role::Seller).with_standing(
            &s,
            Seat::Learner,
            standing(budget, 80.0, 0.0, Some(80.0)),
            None,
        );
        assert!(seller.unwrap_err().contains("the buyer's seat"));
    }
}
