//! [`SeatState`] and its one builder, [`Episode::seat_state`].

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::game::rules::move_cap;
use std::sync::Arc;

use crate::game::{Episode, Offer, OutcomeKind, RegulationEvent, Rules, Turn};
use crate::protocol::{Action, ActionKind, IssueRange, TermSpace, Terms, TurnError, TurnFormat};
use crate::scenario::{DealSpace, Family, Role, Scenario};
use crate::vocab::Seat;

/// One seat's structured view of an episode: everything it may know, from its own side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SeatState {
    pub seat: Seat,
    pub role: Role,
    pub family: Family,
    pub scenario_id: String,
    /// The role to move next; `null` once the episode is over.
    pub to_move: Option<Role>,
    /// What both sides see: the deal space.
    pub public: PublicView,
    /// This seat's own private values; never the other side's.
    pub own: PrivateView,
    /// The least utility this seat may agree to, if it is regulated (the book's
    /// `design/episode.md`, "Regulation"); `null` for an unregulated seat.
    pub floor: Option<f64>,
    /// What this seat gets without a deal.
    pub no_deal_value: f64,
    /// The offer on the table, its terms from this seat's side.
    pub standing_offer: Option<OfferView>,
    pub turns: TurnCount,
    /// The rules that can end the episode.
    pub rules: EndingRules,
    /// The moves this seat may make now; empty unless it is to move.
    pub legal_actions: Vec<ActionKind>,
    /// What became of this seat's own last completion; `null` before its first.
    pub last_turn: Option<OwnTurn>,
    /// The counterpart's last move that took effect, its terms from this seat's side.
    pub counterpart_last: Option<MoveView>,
    /// How the episode ended, from this seat's side; `null` while it runs.
    pub outcome: Option<OutcomeView>,
}

/// The public description and the space of deals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PublicView {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub description: String,
    /// Price games: the public listing price, in currency units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listing_price: Option<f64>,
    /// Item games: the items and how many units of each are on the table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<ItemView>,
    /// Issue games: the issues and the values each may take.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<IssueView>,
    /// Bundle games: the parts of the bundle at the seller's list prices, the main product
    /// first (always in the deal), delivery last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartView>,
    /// Hotel calls: the chase tickets, each a room on a date with its current selling and
    /// take-home prices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tickets: Vec<crate::protocol::TicketSpec>,
}

/// One part of a bundle: its grammar key, its name, its list price, and whether it can be
/// left out of the deal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PartView {
    pub key: String,
    pub name: String,
    pub list_price: f64,
    pub removable: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ItemView {
    pub name: String,
    pub count: u32,
}

/// One issue: an integer range (`min`, `max`) or named `options`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IssueView {
    pub key: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// A seat's own private block, by role: a buyer's budget, a seller's cost (in currency units),
/// an item player's points per unit, an issue player's weights and valuations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PrivateView {
    Buyer {
        budget: f64,
    },
    Seller {
        cost: f64,
    },
    Items {
        values: BTreeMap<String, u32>,
    },
    Issues {
        issues: Vec<WeightView>,
    },
    /// A bundle buyer's worth of each part, by part key (the main product's key, each
    /// accessory's, `delivery`).
    BundleBuyer {
        worth: BTreeMap<String, f64>,
    },
    /// A bundle seller's cost of each part, by part key.
    BundleSeller {
        cost: BTreeMap<String, f64>,
    },
    /// Hotel calls, the platform's agent: its target and acceptable prices per ticket.
    TicketsBd {
        tickets: Vec<crate::scenario::BdTicket>,
    },
    /// Hotel calls, the hotel: its floor, occupancy, competitor's price and reason per ticket.
    TicketsHotel {
        tickets: Vec<crate::scenario::HotelTicket>,
    },
}

/// How much one issue matters to the seat and how it values the issue's values (the
/// scenario's `valuation`, as the scenario file writes it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WeightView {
    pub key: String,
    pub weight: f64,
    pub valuation: serde_json::Value,
}

pub use crate::protocol::TermValue;
pub(crate) use crate::protocol::TermsView;

/// An offer on the table: who made it and its terms from the observer's side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OfferView {
    pub by: Role,
    pub terms: TermsView,
}

/// A move that took effect; a SUBMIT's terms from the observer's side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MoveView {
    pub kind: ActionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<TermsView>,
}

/// How far the episode has gone.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnCount {
    /// Attempts so far, both seats, retries included.
    pub attempts: usize,
    /// Moves this seat made that took effect (its rounds played).
    pub moves_used: u32,
    /// Moves both seats together may still make before the turn cap truncates the episode.
    pub moves_left: u32,
    /// Corrections this seat has left on its turn (all of them when it is not to move).
    pub retries_left: u32,
}

/// The rules that can end the episode (the book's `design/episode.md`): what a seat's observation
/// carries and what its system prompt tells it (`prompts/_format.j2`), both built by
/// [`EndingRules::from`] from the [`Rules`] the engine applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct EndingRules {
    /// Rounds per seat before the episode is truncated (`max_turns`).
    pub max_rounds: u32,
    /// The same terms proposed this many times in a row end it (`reject_loop`); 0: off.
    pub reject_loop: u32,
    /// This many REJECT_DEAL moves in a row end it (`reject_loop`); 0: off.
    pub reject_streak: u32,
    /// Corrections per turn before a malformed completion forfeits (`format_forfeit`).
    pub format_retries: u32,
    /// A cap on both seats' moves together, where the rules set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_moves: Option<u32>,
    /// Whether the other side reads this seat's Talk (`[episode] talk`): not a rule that ends
    /// the episode, but one the prompt tells beside them. Absent while on.
    #[serde(default, skip_serializing_if = "crate::game::Talk::is_on")]
    pub talk: crate::game::Talk,
}

impl From<&Rules> for EndingRules {
    fn from(rules: &Rules) -> EndingRules {
        EndingRules {
            max_rounds: rules.max_rounds,
            reject_loop: rules.reject_loop,
            reject_streak: rules.reject_streak,
            format_retries: rules.format_retries,
            max_moves: rules.max_moves,
            talk: rules.talk,
        }
    }
}

/// What became of a seat's own last completion, as the seat sees it: terms from its own side,
/// prices in currency units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OwnTurn {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub talk: Option<String>,
    /// The move read from the completion, before regulation; `null` if none could be read.
    pub read: Option<MoveView>,
    /// Why no move could be read (format) or why its terms are not allowed (illegal).
    pub error: Option<TurnError>,
    /// All three parts present once, in order, with exactly one well-formed action token.
    pub format_ok: bool,
    /// The move that took effect, if the completion could be used.
    pub played: Option<MoveView>,
    /// What regulation did to the move, if anything.
    pub regulation: Option<RegulationView>,
    /// The completion could not be used and the same seat is asked again.
    pub retry: bool,
}

/// Regulation replaced a move the seat's floor does not allow (the book's `design/episode.md`,
/// "Regulation").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RegulationView {
    pub original: MoveView,
    pub replacement: MoveView,
    /// The seat's utility of the deal it tried to make or accept.
    pub utility: f64,
    pub floor: f64,
}

/// How the episode ended, from the observer's side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OutcomeView {
    pub kind: OutcomeKind,
    /// The role that ended it, where one did.
    pub by: Option<Role>,
    /// The agreed terms from the observer's side, for a deal.
    pub terms: Option<TermsView>,
    /// The observer's utility.
    pub utility: f64,
    /// The observer's bargained ratio ρ.
    pub rho: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The part of a seat's state that stays the same for a whole episode: what the scenario and
/// the setup decide ([`Episode::seat_constants`]). A face that takes many states of one
/// episode (the Python binding's observations) builds it once and joins it with each
/// [`SeatMoment`] ([`SeatState::join`]) only when a state is read.
#[derive(Debug, Clone, PartialEq)]
pub struct SeatConstants {
    pub seat: Seat,
    pub role: Role,
    pub family: Family,
    pub scenario_id: String,
    pub public: PublicView,
    pub own: PrivateView,
    pub floor: Option<f64>,
    pub no_deal_value: f64,
    pub rules: EndingRules,
}

/// The part of a seat's state the play so far decides ([`Episode::seat_moment`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SeatMoment {
    pub to_move: Option<Role>,
    pub standing_offer: Option<OfferView>,
    pub turns: TurnCount,
    pub legal_actions: Vec<ActionKind>,
    pub last_turn: Option<OwnTurn>,
    pub counterpart_last: Option<MoveView>,
    pub outcome: Option<OutcomeView>,
}

impl SeatState {
    /// The state of a seat whose constants are `constants` at the moment `moment`.
    pub fn join(c: SeatConstants, moment: SeatMoment) -> SeatState {
        SeatState {
            seat: c.seat,
            role: c.role,
            family: c.family,
            scenario_id: c.scenario_id,
            to_move: moment.to_move,
            public: c.public,
            own: c.own,
            floor: c.floor,
            no_deal_value: c.no_deal_value,
            standing_offer: moment.standing_offer,
            turns: moment.turns,
            rules: c.rules,
            legal_actions: moment.legal_actions,
            last_turn: moment.last_turn,
            counterpart_last: moment.counterpart_last,
            outcome: moment.outcome,
        }
    }
}

impl Episode {
    /// What `seat` may know of the episode now (the one builder of [`SeatState`], from its two
    /// parts).
    pub fn seat_state(&self, seat: Seat) -> SeatState {
        SeatState::join(self.seat_constants(seat), self.seat_moment(seat))
    }

    /// What `seat` knows that the whole episode keeps: the scenario's and the setup's part of
    /// its state.
    pub fn seat_constants(&self, seat: Seat) -> SeatConstants {
        self.constants_parts(seat).constants()
    }

    /// What `seat`'s constants are made of ([`ConstantsParts::constants`]): the scenario and
    /// the setup's few figures for the seat, taken without building its views.
    pub fn constants_parts(&self, seat: Seat) -> ConstantsParts {
        let setup = self.setup();
        let me = &setup.seats[seat];
        ConstantsParts {
            scenario: Arc::clone(self.scenario()),
            seat,
            role: me.role,
            floor: me.regulated.then_some(me.floor),
            no_deal_value: setup.no_deal_value_of(seat),
            rules: EndingRules::from(&setup.rules),
        }
    }

    /// The part of `seat`'s state the play so far decides.
    pub fn seat_moment(&self, seat: Seat) -> SeatMoment {
        self.moment_parts(seat).moment()
    }

    /// What `seat`'s moment is made of, taken now and viewed later ([`MomentParts::moment`]):
    /// the moves as the engine holds them, not yet as maps keyed by item or issue. A face
    /// that hands out many states and reads few of them (the Python binding's observations)
    /// takes these at every step and builds the moment only when a state is read.
    pub fn moment_parts(&self, seat: Seat) -> MomentParts {
        let setup = self.setup();
        let me = &setup.seats[seat];
        let role_of = |s: Seat| setup.seats[s].role;
        let to_move = self.to_move();
        let rules = &setup.rules;
        let moves = self.moves();
        let retries_left = match to_move {
            Some(s) if s == seat => rules.format_retries.saturating_sub(self.attempt()),
            _ => rules.format_retries,
        };
        let legal = match to_move {
            Some(s) if s == seat => Some((me.format, self.offer_to_accept(seat).is_some())),
            _ => None,
        };
        MomentParts {
            scenario: Arc::clone(self.scenario()),
            seat,
            to_move: to_move.map(role_of),
            standing_offer: self
                .standing_offer()
                .map(|offer| (role_of(offer.by), offer.clone())),
            turns: TurnCount {
                attempts: self.turns().len(),
                moves_used: moves[seat],
                moves_left: move_cap(rules).saturating_sub(moves.learner + moves.opponent),
                retries_left,
            },
            legal,
            last_turn: self
                .turns()
                .iter()
                .rev()
                .find(|t| t.seat == seat)
                .map(|t| OwnTurnParts::of(t, rules.allows_retry(t.attempt))),
            counterpart_last: self
                .history()
                .iter()
                .rev()
                .find(|m| m.seat != seat)
                .map(|m| m.action.clone()),
            outcome: self.outcome_view(seat),
        }
    }
}

/// A seat's constants as the engine holds them ([`Episode::constants_parts`]), built into the
/// [`SeatConstants`] a seat is shown by [`ConstantsParts::constants`], their one builder.
#[derive(Debug, Clone)]
pub struct ConstantsParts {
    scenario: Arc<Scenario>,
    seat: Seat,
    role: Role,
    floor: Option<f64>,
    no_deal_value: f64,
    rules: EndingRules,
}

impl ConstantsParts {
    /// The seat's constants: the public and private views of its scenario, its floor, its
    /// no-deal value and the ending rules.
    pub fn constants(&self) -> SeatConstants {
        let scenario = &*self.scenario;
        SeatConstants {
            seat: self.seat,
            role: self.role,
            family: scenario.family,
            scenario_id: scenario.id.clone(),
            public: public_view(scenario),
            own: private_view(scenario, self.role),
            floor: self.floor,
            no_deal_value: self.no_deal_value,
            rules: self.rules,
        }
    }
}

/// A seat's moment as the engine holds it ([`Episode::moment_parts`]): cheap to take (a few
/// clones of moves, no map built), turned into the [`SeatMoment`] a seat is shown by
/// [`MomentParts::moment`], the one builder of a moment.
#[derive(Debug, Clone)]
pub struct MomentParts {
    scenario: Arc<Scenario>,
    seat: Seat,
    to_move: Option<Role>,
    /// The standing offer and the role that made it.
    standing_offer: Option<(Role, Offer)>,
    turns: TurnCount,
    /// Where `seat` is to move: its turn format and whether an offer stands for it to accept.
    legal: Option<(TurnFormat, bool)>,
    last_turn: Option<OwnTurnParts>,
    /// The counterpart's last move, from its own side.
    counterpart_last: Option<Action>,
    outcome: Option<OutcomeView>,
}

impl MomentParts {
    /// The moment the parts were taken at, as the seat is shown it: terms from its own side,
    /// keyed by price, item or issue.
    pub fn moment(&self) -> SeatMoment {
        let space = self.scenario.term_space();
        SeatMoment {
            to_move: self.to_move,
            standing_offer: self.standing_offer.as_ref().map(|(by, offer)| OfferView {
                by: *by,
                terms: terms_view(&offer.terms_for(self.seat, space), space),
            }),
            turns: self.turns,
            legal_actions: self
                .legal
                .map(|(format, can_accept)| ActionKind::legal(format, can_accept))
                .unwrap_or_default(),
            last_turn: self.last_turn.as_ref().map(|t| t.view(space)),
            counterpart_last: self.counterpart_last.as_ref().map(|action| MoveView {
                kind: action.kind(),
                terms: action.terms().map(|t| terms_view(&t.flipped(space), space)),
            }),
            outcome: self.outcome.clone(),
        }
    }
}

/// A seat's own last turn as the engine holds it, viewed by [`OwnTurnParts::view`].
#[derive(Debug, Clone)]
struct OwnTurnParts {
    thought: Option<String>,
    talk: Option<String>,
    read: Option<Action>,
    error: Option<TurnError>,
    format_ok: bool,
    /// The move that took effect where regulation replaced the one read; `None` with
    /// `played_read` where the move read took effect as it was.
    played: Option<Action>,
    played_read: bool,
    regulation: Option<RegulationEvent>,
    retry: bool,
}

impl OwnTurnParts {
    fn of(turn: &Turn, retry_allowed: bool) -> OwnTurnParts {
        let parsed = &turn.parsed;
        let played_read = matches!(
            (&turn.played, &parsed.action),
            (Some(played), Some(action)) if played == action
        );
        OwnTurnParts {
            thought: parsed.thought.clone(),
            talk: parsed.talk.clone(),
            read: parsed.action.clone(),
            error: parsed.error.clone(),
            format_ok: parsed.format_ok,
            played: if played_read {
                None
            } else {
                turn.played.clone()
            },
            played_read,
            regulation: turn.regulation.clone(),
            retry: turn.played.is_none() && retry_allowed,
        }
    }

    fn view(&self, space: TermSpace<'_>) -> OwnTurn {
        let own = |action: &Action| MoveView {
            kind: action.kind(),
            terms: action.terms().map(|t| terms_view(t, space)),
        };
        let read = self.read.as_ref().map(own);
        // What was played is what was read unless regulation replaced it: the view is built once.
        let played = if self.played_read {
            read.clone()
        } else {
            self.played.as_ref().map(own)
        };
        OwnTurn {
            thought: self.thought.clone(),
            talk: self.talk.clone(),
            read,
            error: self.error.clone(),
            format_ok: self.format_ok,
            played,
            regulation: self.regulation.as_ref().map(|r| RegulationView {
                original: own(&r.original),
                replacement: own(&r.replacement),
                utility: r.utility,
                floor: r.floor,
            }),
            retry: self.retry,
        }
    }
}

impl Episode {
    /// How the episode ended from `seat`'s side; `None` while it runs (the state's `outcome`,
    /// for a caller that wants it alone without building the whole state).
    pub fn outcome_view(&self, seat: Seat) -> Option<OutcomeView> {
        let space = self.scenario().term_space();
        let role_of = |s: Seat| self.setup().seats[s].role;
        self.outcome().map(|o| OutcomeView {
            kind: o.kind,
            by: o.by.map(role_of),
            terms: o.terms.as_ref().map(|learner_terms| {
                let own = match seat {
                    Seat::Learner => learner_terms.clone(),
                    Seat::Opponent => learner_terms.flipped(space),
                };
                terms_view(&own, space)
            }),
            utility: o.utility[seat],
            rho: o.rho[seat],
            detail: o.detail.clone(),
        })
    }
}

/// Terms as a map keyed by price, item or issue, prices in currency units ([`Terms::named`]).
pub(crate) fn terms_view(terms: &Terms, space: TermSpace<'_>) -> TermsView {
    terms.named(space)
}

fn public_view(scenario: &Scenario) -> PublicView {
    let mut view = PublicView {
        title: scenario.public.title.clone(),
        category: scenario.public.category.clone(),
        description: scenario.public.description.clone(),
        listing_price: None,
        items: Vec::new(),
        issues: Vec::new(),
        parts: Vec::new(),
        tickets: Vec::new(),
    };
    match &scenario.game {
        DealSpace::Tickets { tickets, .. } => view.tickets = tickets.clone(),
        DealSpace::Price { listing_price, .. } => view.listing_price = Some(*listing_price),
        DealSpace::Items { items, .. } => {
            view.items = items
                .iter()
                .map(|i| ItemView {
                    name: i.name.clone(),
                    count: i.count,
                })
                .collect()
        }
        DealSpace::Issues { issues, .. } => {
            view.issues = issues
                .iter()
                .map(|i| {
                    let (min, max, options) = match &i.range {
                        IssueRange::Integer { min, max } => (Some(*min), Some(*max), Vec::new()),
                        IssueRange::Discrete { options } => (None, None, options.clone()),
                    };
                    IssueView {
                        key: i.key.clone(),
                        label: i.label.clone(),
                        min,
                        max,
                        options,
                    }
                })
                .collect()
        }
        DealSpace::Bundle { bundle, .. } => {
            let part = |key: &str, name: &str, list_price: f64, removable: bool| PartView {
                key: key.into(),
                name: name.into(),
                list_price,
                removable,
            };
            view.listing_price =
                Some(crate::protocol::BundleChoice::full(bundle).list_price(bundle));
            view.parts = std::iter::once(part(
                &bundle.main.key,
                &bundle.main.name,
                bundle.main.list_price,
                false,
            ))
            .chain(
                bundle
                    .accessories
                    .iter()
                    .map(|p| part(&p.key, &p.name, p.list_price, true)),
            )
            .chain(std::iter::once(part(
                crate::protocol::DELIVERY,
                "delivery",
                bundle.delivery_fee,
                true,
            )))
            .collect();
        }
    }
    view
}

/// `role`'s own private block of the scenario, and nothing of the other role's.
fn private_view(scenario: &Scenario, role: Role) -> PrivateView {
    match (&scenario.game, role) {
        (
            DealSpace::Bundle {
                bundle,
                buyer,
                seller,
            },
            _,
        ) => {
            let own = if role == Role::Buyer { buyer } else { seller };
            let numbers: BTreeMap<String, f64> =
                std::iter::once((bundle.main.key.clone(), own.main))
                    .chain(
                        bundle
                            .accessories
                            .iter()
                            .zip(&own.accessories)
                            .map(|(p, v)| (p.key.clone(), *v)),
                    )
                    .chain(std::iter::once((
                        crate::protocol::DELIVERY.to_string(),
                        own.delivery,
                    )))
                    .collect();
            if role == Role::Buyer {
                PrivateView::BundleBuyer { worth: numbers }
            } else {
                PrivateView::BundleSeller { cost: numbers }
            }
        }
        (DealSpace::Tickets { bd, hotel, .. }, _) => {
            if role == Role::Bd {
                PrivateView::TicketsBd {
                    tickets: bd.clone(),
                }
            } else {
                PrivateView::TicketsHotel {
                    tickets: hotel.clone(),
                }
            }
        }
        (DealSpace::Price { buyer, .. }, Role::Buyer) => PrivateView::Buyer {
            budget: buyer.budget,
        },
        (DealSpace::Price { seller, .. }, _) => PrivateView::Seller { cost: seller.cost },
        (
            DealSpace::Items {
                items,
                agent_1,
                agent_2,
            },
            _,
        ) => {
            let own = if role == Role::Agent1 {
                agent_1
            } else {
                agent_2
            };
            PrivateView::Items {
                values: items
                    .iter()
                    .zip(&own.values)
                    .map(|(item, v)| (item.name.clone(), *v))
                    .collect(),
            }
        }
        (
            DealSpace::Issues {
                issues,
                worker,
                recruiter,
            },
            _,
        ) => {
            let own = if role == Role::Worker {
                worker
            } else {
                recruiter
            };
            PrivateView::Issues {
                issues: issues
                    .iter()
                    .zip(&own.issues)
                    .map(|(issue, pref)| WeightView {
                        key: issue.key.clone(),
                        weight: pref.weight,
                        valuation: serde_json::to_value(&pref.valuation)
                            .unwrap_or(serde_json::Value::Null),
                    })
                    .collect(),
            }
        }
    }
}

#[cfg(test)]
mod tests;
