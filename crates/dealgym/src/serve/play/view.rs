//! What a person's seat sees at the page: exactly what the seat may know — its instructions
//! (the system prompt its seat is given), its own values and the rules that end the game, the
//! messages it has been sent and its own turns — and the controls of its turn. Built from the
//! engine's seat views and states (core's `seat_state`s), never from another seat's.

use serde::Serialize;
use serde_json::Value;

use super::super::hosted::SeatState as SeatedState;
use super::super::hub::Owner;
use super::super::{Hub, ServeError};
use super::form::{market_form, party_form, table_form, Form};
use super::games::{Game, Kind, Person, SeatRef};
use crate::observation::{PrivateView, SeatState};
use crate::vocab::{Message, MessageRole};

/// What the page shows a person (the book's `guide/people.md`, "What the page sends").
#[derive(Debug, Clone, Serialize)]
pub(super) struct View {
    pub game_id: String,
    pub kind: &'static str,
    pub family: String,
    pub scenario_id: String,
    pub title: String,
    pub description: String,
    pub you: You,
    pub players: Vec<Seated>,
    pub your_turn: bool,
    pub to_move: Option<String>,
    pub done: bool,
    pub brief: String,
    pub facts: Vec<Fact>,
    pub transcript: Vec<Line>,
    pub form: Form,
    pub retry: Option<Retry>,
    pub outcome: Option<Outcome>,
    pub join: Option<Join>,
    pub study: Option<Value>,
    pub state: Value,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct You {
    pub name: String,
    pub role: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Seated {
    pub role: String,
    pub who: String,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Fact {
    pub label: String,
    pub value: String,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Line {
    pub from: &'static str,
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Retry {
    pub error: String,
    pub retries_left: Option<u32>,
}

impl Retry {
    /// A refused turn, by the engine's reason.
    pub fn of(error: Option<&impl std::fmt::Display>, retries_left: Option<u32>) -> Retry {
        Retry {
            error: error
                .map(|e| e.to_string())
                .unwrap_or_else(|| "the turn could not be played".into()),
            retries_left,
        }
    }
}

/// ` by ROLE`, where a role ended the game.
fn by_whom(role: Option<&str>) -> String {
    role.map(|r| format!(" by {r}")).unwrap_or_default()
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Outcome {
    pub kind: String,
    pub text: String,
    pub utility: Option<f64>,
    pub rho: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub(super) struct Join {
    pub path: String,
}

fn fact(label: impl Into<String>, value: impl ToString) -> Fact {
    Fact {
        label: label.into(),
        value: value.to_string(),
    }
}

fn money(amount: f64) -> String {
    format!("${}", crate::protocol::money(amount))
}

/// A seat's chat as the page shows it: its instructions apart (the system prompt), then each
/// message by who it is from: `you` (the seat's own turns), `table` (the opening and the
/// engine's corrections), `them` (what the others said and did).
fn transcript(
    messages: &[Message],
    prompts: &crate::game::Prompts,
    format: crate::protocol::TurnFormat,
) -> (String, Vec<Line>) {
    let mut brief = String::new();
    let mut lines = Vec::new();
    for message in messages {
        match message.role {
            MessageRole::System => brief = message.content.clone(),
            MessageRole::Assistant => lines.push(Line {
                from: "you",
                text: message.content.clone(),
            }),
            _ => {
                let from = if prompts.is_engine_message(&message.content, format) {
                    "table"
                } else {
                    "them"
                };
                lines.push(Line {
                    from,
                    text: message.content.clone(),
                })
            }
        }
    }
    (brief, lines)
}

/// What only this two-party seat knows, and the rules that end the game.
fn party_facts(state: &SeatState) -> Vec<Fact> {
    let mut facts = Vec::new();
    if let Some(listing) = state.public.listing_price {
        facts.push(fact("Listing price (public)", money(listing)));
    }
    match &state.own {
        PrivateView::Buyer { budget } => facts.push(fact(
            "Your budget (you gain budget − price)",
            money(*budget),
        )),
        PrivateView::Seller { cost } => {
            facts.push(fact("Your cost (you gain price − cost)", money(*cost)))
        }
        PrivateView::Items { values } => {
            for (item, points) in values {
                facts.push(fact(format!("Your points per unit of {item}"), points));
            }
        }
        PrivateView::Issues { issues } => {
            // How much each issue weighs; how each of its values is valued is worded in the
            // instructions (a valuation may be joint over two issues).
            for issue in issues {
                facts.push(fact(
                    format!("How much {} weighs for you", issue.key),
                    issue.weight,
                ));
            }
            facts.push(fact(
                "How you value each option",
                "see your instructions below",
            ));
        }
        PrivateView::BundleBuyer { worth } => {
            for (part, value) in worth {
                facts.push(fact(format!("What {part} is worth to you"), money(*value)));
            }
        }
        PrivateView::BundleSeller { cost } => {
            for (part, value) in cost {
                facts.push(fact(format!("What {part} costs you"), money(*value)));
            }
        }
        PrivateView::TicketsBd { tickets } => {
            for (i, t) in tickets.iter().enumerate() {
                facts.push(fact(
                    format!(
                        "Ticket {}: your target, and the least you accept (selling / take-home)",
                        i + 1
                    ),
                    format!(
                        "{} / {} · {} / {}",
                        money(t.target.selling),
                        money(t.target.take_home),
                        money(t.acceptable.selling),
                        money(t.acceptable.take_home)
                    ),
                ));
            }
        }
        PrivateView::TicketsHotel { tickets } => {
            for (i, t) in tickets.iter().enumerate() {
                facts.push(fact(
                    format!(
                        "Ticket {}: your floor, occupancy, competitor's price",
                        i + 1
                    ),
                    format!(
                        "{} · {}% · {}",
                        money(t.floor),
                        t.occupancy,
                        money(t.competitor)
                    ),
                ));
            }
        }
    }
    facts.push(fact("Without a deal you get", state.no_deal_value));
    if let Some(floor) = state.floor {
        facts.push(fact("The least you may agree to (regulated)", floor));
    }
    facts.push(fact("Rounds each", state.rules.max_rounds));
    facts.push(fact("Moves left (both sides)", state.turns.moves_left));
    facts
}

fn party_outcome(state: &SeatState) -> Option<Outcome> {
    let o = state.outcome.as_ref()?;
    let by = by_whom(o.by.map(|r| r.name()));
    let text = match &o.terms {
        Some(terms) => format!("Deal: {}", super::form::terms_text(terms)),
        None => format!("No deal: {}{by}", o.kind.name()),
    };
    Some(Outcome {
        kind: o.kind.name().to_string(),
        text,
        utility: Some(o.utility),
        rho: Some(o.rho),
    })
}

/// A seat state as JSON, for the page.
fn as_json(state: &impl Serialize) -> Result<Value, ServeError> {
    serde_json::to_value(state)
        .map_err(|e| ServeError::Execution(format!("a seat's state as JSON: {e}")))
}

/// The person's view of `game`.
pub(super) async fn view(hub: &Hub, game: &Game, person: &Person) -> Result<View, ServeError> {
    let start = &game.start;
    let people = game
        .people
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let mut view = View {
        game_id: game.id.clone(),
        kind: start.kind().name(),
        family: start.family.name().to_string(),
        scenario_id: start.scenario_id.clone(),
        title: String::new(),
        description: String::new(),
        you: You {
            name: person.name.clone(),
            role: None,
        },
        players: Vec::new(),
        your_turn: false,
        to_move: None,
        done: false,
        brief: String::new(),
        facts: Vec::new(),
        transcript: Vec::new(),
        form: Form::default(),
        retry: None,
        outcome: None,
        join: None,
        study: None,
        state: Value::Null,
    };
    let Some(seat) = &person.seat else {
        // Waiting for the second person: the creator is shown the link to hand them.
        view.title = "Waiting for the other person to join".into();
        if let Some(token) = game.join.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            view.join = Some(Join {
                path: format!("/play#join={}.{token}", game.id),
            });
        }
        return Ok(view);
    };
    match (start.kind(), seat) {
        (Kind::Party, SeatRef::Party(seat)) => {
            let slot = hub.find(&game.id, Owner::Play)?;
            let session = slot.session.lock().await;
            let answer = session.observe(*seat);
            let state = answer.observation.state;
            let (brief, lines) = transcript(
                &answer.observation.messages,
                &hub.options.prompts,
                session.format(*seat),
            );
            view.title = state.public.title.clone();
            view.description = state.public.description.clone();
            view.you.role = Some(state.role.name().to_string());
            view.your_turn = session.to_move() == Some(*seat);
            view.to_move = state.to_move.map(|r| r.name().to_string());
            view.done = answer.done;
            view.brief = brief;
            view.transcript = lines;
            view.facts = party_facts(&state);
            view.form = party_form(session.scenario(), &state);
            view.retry = state
                .last_turn
                .as_ref()
                .filter(|t| t.retry && view.your_turn)
                .map(|t| Retry::of(t.error.as_ref(), Some(state.turns.retries_left)));
            view.outcome = party_outcome(&state);
            // Each seat as its record names it: a person's `human:NAME`, else the opponent.
            let who = |s: crate::game::Seat| {
                people
                    .iter()
                    .find(|p| p.seat == Some(SeatRef::Party(s)))
                    .map(|p| crate::record::PlayerSpec::person(&p.name).to_string())
                    .unwrap_or_else(|| start.opponent.clone())
            };
            for role in session.scenario().roles() {
                let s = if role == state.role {
                    *seat
                } else {
                    seat.other()
                };
                view.players.push(Seated {
                    role: role.name().to_string(),
                    who: who(s),
                });
            }
            view.state = as_json(&state)?;
        }
        (Kind::Table | Kind::Market, SeatRef::Role(role)) => {
            let slot = hub.find_table(&game.id)?;
            let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
            let index = session.seat_for(role, person.seat_token.as_deref())?;
            let seat_view = super::super::table_rest::view(&session, index);
            let (brief, lines) = transcript(
                &seat_view.messages,
                &hub.options.prompts,
                session.format(index),
            );
            view.you.role = Some(role.clone());
            view.your_turn = seat_view.your_turn;
            view.to_move = session.to_move();
            view.done = seat_view.done;
            view.brief = brief;
            view.transcript = lines;
            let reward = session.reward(index);
            view.players = session
                .roles()
                .into_iter()
                .zip(session.players())
                .map(|(role, who)| Seated { role, who })
                .collect();
            match &seat_view.state {
                SeatedState::Table(state) => {
                    let scenario = session.table_scenario().ok_or_else(|| {
                        ServeError::Execution("a table without its scenario".into())
                    })?;
                    view.title = scenario.public.title.clone();
                    view.description =
                        format!("{} parties decide one deal", scenario.parties.len());
                    view.facts = vec![
                        fact("Your role", role),
                        fact("Offers on the table", state.offers.len()),
                        fact("Parties still here", state.present.join(", ")),
                    ];
                    view.form = table_form(
                        scenario,
                        state,
                        seat_view.your_turn,
                        &session.episode.acceptable(index),
                    );
                    view.outcome = state.outcome.as_ref().map(|o| Outcome {
                        kind: o.kind.name().to_string(),
                        text: match &o.deal {
                            Some(deal) => format!("Agreed: {deal}"),
                            None => format!(
                                "No agreement: {}{}",
                                o.kind.name(),
                                by_whom(o.by.as_deref())
                            ),
                        },
                        utility: reward,
                        rho: None,
                    });
                }
                SeatedState::Market(state) => {
                    view.title = format!("A market (you are a {})", state.side.name());
                    view.description = "Buyers and sellers trade units of one good".into();
                    view.facts = vec![
                        fact("Your side", state.side.name()),
                        fact("Units you may still trade", state.units_left),
                        fact(
                            "Your next unit's limit (its value to a buyer, its cost to a seller)",
                            state
                                .next_limit
                                .map(|l| format!("${l}"))
                                .unwrap_or_else(|| "none left".into()),
                        ),
                        fact("Round", format!("{} of {}", state.round, state.rounds)),
                    ];
                    view.form = market_form(
                        state,
                        seat_view.your_turn,
                        &session.episode.acceptable(index),
                    );
                    view.outcome = state.outcome.as_ref().map(|o| Outcome {
                        kind: o.kind.name().to_string(),
                        text: format!(
                            "The market ended: {}{} ({} trades)",
                            o.kind.name(),
                            by_whom(o.by.as_deref()),
                            state.trades.len()
                        ),
                        utility: reward,
                        rho: None,
                    });
                }
            }
            view.state = as_json(&seat_view.state)?;
        }
        _ => {
            return Err(ServeError::Execution(
                "a seat of another kind of game".into(),
            ))
        }
    }
    Ok(view)
}
