//! The games people play at the page: who sits where, each person's seat secret, the second
//! person's join secret, and the start of a game once its people are seated. A game's session
//! is the hub's, under the game's id: a two-party episode reached only through these routes
//! ([`Owner::Play`]), a table or a market among the tables (its seats' tokens are its own).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use super::super::hosted::SeatedFamily;
use super::super::hub::Owner;
use super::super::secret;
use super::super::session::{LearnerRole, ResetArgs, ResetFamily};
use super::super::table::{TableReset, CLIENT};
use super::super::{Hub, ServeError};
use super::check_name;
use crate::agents::SCRIPTED;
use crate::game::{PerSeat, Seat};

/// The kind of game: two parties, an n-party table, a market.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Party,
    Table,
    Market,
}

impl From<ResetFamily> for Kind {
    fn from(family: ResetFamily) -> Kind {
        match family {
            ResetFamily::Party(_) => Kind::Party,
            ResetFamily::Table(_) => Kind::Table,
            ResetFamily::Market(_) => Kind::Market,
        }
    }
}

impl Kind {
    /// The player of the seats no person takes, where a game names none: the server's
    /// opponent, a table's scripted party, a market's default trader.
    fn default_player(self, hub: &Hub) -> String {
        match self {
            Kind::Party => hub.options.opponent.clone(),
            Kind::Table => SCRIPTED.to_string(),
            Kind::Market => super::super::table::DEFAULT_TRADER.to_string(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Party => "party",
            Kind::Table => "table",
            Kind::Market => "market",
        }
    }
}

/// Where a person sits: a two-party seat, or a role at a table or a market.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SeatRef {
    Party(Seat),
    Role(String),
}

/// A person at a game.
#[derive(Debug, Clone)]
pub(super) struct Person {
    pub name: String,
    /// Their secret at the page (`x-seat-token`).
    pub token: String,
    /// At a table or a market, the table's own token of their seat (what its session checks).
    pub seat_token: Option<String>,
    /// `None` until the game starts (a drawn role is known then).
    pub seat: Option<SeatRef>,
}

/// What starts a game, resolved when it is made: the scenario is fixed then (a drawn one
/// drawn), so a second person joins the game the first was shown.
#[derive(Debug, Clone)]
pub(super) struct Start {
    pub family: ResetFamily,
    pub scenario_id: String,
    pub role: Option<String>,
    /// The player of the seats no person takes.
    pub opponent: String,
    /// Whether a second person takes a seat (they join by a link).
    pub second_person: bool,
    pub seed: u64,
}

impl Start {
    pub fn kind(&self) -> Kind {
        self.family.into()
    }
}

/// A study participant's game: their code and which of their games this is.
#[derive(Debug, Clone)]
pub(super) struct Participant {
    pub code: String,
    pub game: usize,
}

/// One game of the page.
pub(super) struct Game {
    pub id: String,
    pub start: Start,
    pub people: Mutex<Vec<Person>>,
    /// The second person's secret, until they join (then the game starts).
    pub join: Mutex<Option<String>>,
    pub participant: Option<Participant>,
    /// When it was made: a game still waiting for its second person past the idle timeout is
    /// let go.
    pub made: std::time::Instant,
}

impl Game {
    /// The person presenting `token`, by index; refused (403) without it.
    pub fn person(&self, token: Option<&str>) -> Result<(usize, Person), ServeError> {
        let people = self.people.lock().unwrap_or_else(|e| e.into_inner());
        people
            .iter()
            .position(|p| token.is_some_and(|t| secret::same(t, &p.token)))
            .map(|i| (i, people[i].clone()))
            .ok_or_else(|| {
                ServeError::Forbidden(format!(
                    "game `{}` needs your seat's token in the `{}` header (its creation or your join answered it)",
                    self.id,
                    secret::HEADER
                ))
            })
    }

    pub fn started(&self) -> bool {
        self.join
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }
}

/// What the page sends to make a game (open play), or `{"consent": true}` in a study.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NewGame {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub family: Option<ResetFamily>,
    #[serde(default)]
    pub scenario_id: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub opponent: Option<String>,
    #[serde(default)]
    pub consent: Option<bool>,
    /// A study participant's code, to play their next assigned game.
    #[serde(default)]
    pub code: Option<String>,
}

/// The opponent value that seats a second person.
pub(super) const PERSON: &str = "person";

/// The games of the page, by id: a game is kept while it is waiting for its second person or
/// its session is live, and let go (its record is in the log) only to make room.
#[derive(Default)]
pub(crate) struct Games {
    games: Mutex<HashMap<String, Arc<Game>>>,
    /// Games made so far: the next game's number.
    made: std::sync::atomic::AtomicUsize,
    /// A study's participants.
    pub(super) participants: super::participants::Participants,
    /// The setup route's answer, written once (`setup.rs`).
    pub(super) setup: std::sync::OnceLock<axum::body::Bytes>,
}

impl Games {
    /// The next game's number.
    pub(super) fn next_number(&self) -> usize {
        self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    pub(super) fn get(&self, id: &str) -> Result<Arc<Game>, ServeError> {
        self.games
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| ServeError::UnknownEpisode(id.to_string()))
    }

    /// Keep `game`, among at most `max`: past it, games no longer `alive` are let go, oldest
    /// first; a live game is never let go, and with every kept game alive a new one is
    /// refused.
    pub(super) fn insert(
        &self,
        game: Arc<Game>,
        max: usize,
        alive: impl Fn(&Game) -> bool,
    ) -> Result<(), ServeError> {
        let mut games = self.games.lock().unwrap_or_else(|e| e.into_inner());
        if games.len() >= max {
            let mut gone: Vec<(u64, String)> = games
                .values()
                .filter(|g| !alive(g))
                .map(|g| (id_number(&g.id), g.id.clone()))
                .collect();
            gone.sort();
            for (_, id) in gone.iter().take(games.len() + 1 - max) {
                games.remove(id);
            }
            if games.len() >= max {
                return Err(ServeError::Capacity(max));
            }
        }
        games.insert(game.id.clone(), game);
        Ok(())
    }
}

/// A game id's number (`play-<n>-…`), for letting the oldest go first.
fn id_number(id: &str) -> u64 {
    id.split('-')
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

impl Hub {
    /// Resolve what a new game plays: its kind, the scenario (drawn from `seed` when none is
    /// named), the opponent as the policy allows it.
    pub(super) fn play_start(
        &self,
        family: Option<ResetFamily>,
        scenario_id: Option<&str>,
        role: Option<String>,
        opponent: Option<String>,
        seed: u64,
    ) -> Result<Start, ServeError> {
        let kind = match family {
            Some(family) => Kind::from(family),
            None => match scenario_id {
                Some(id) if self.catalog.has(id) => Kind::Party,
                Some(id) if self.table_catalog.has(id) => Kind::Table,
                Some(id) if self.market_catalog.has(id) => Kind::Market,
                Some(id) => return Err(ServeError::UnknownScenario(id.to_string())),
                None => {
                    return Err(ServeError::Validation(
                        "name a `family` or a `scenario_id`".into(),
                    ))
                }
            },
        };
        let (scenario_id, family) = match kind {
            Kind::Party => {
                let party = match family {
                    Some(ResetFamily::Party(f)) => Some(f),
                    _ => None,
                };
                let index = self.catalog.pick(scenario_id, party, None, seed)?;
                let scenario = &self.catalog.scenarios[index];
                (scenario.id.clone(), ResetFamily::Party(scenario.family))
            }
            Kind::Table => {
                let table = match family {
                    Some(ResetFamily::Table(f)) => Some(f),
                    _ => None,
                };
                let index = self.table_catalog.pick(scenario_id, table, None, seed)?;
                let scenario = &self.table_catalog.scenarios[index];
                (scenario.id.clone(), ResetFamily::Table(scenario.family))
            }
            Kind::Market => {
                let index = self.market_catalog.pick(scenario_id, None, None, seed)?;
                let scenario = &self.market_catalog.scenarios[index];
                (scenario.id.clone(), ResetFamily::Market(scenario.family))
            }
        };
        self.check_role(kind, &scenario_id, role.as_deref())?;
        let second_person = opponent.as_deref() == Some(PERSON);
        if second_person && !self.options.play.as_ref().is_some_and(|p| p.people) {
            return Err(ServeError::Forbidden(
                "this server's play page seats no second person (--play-no-people)".into(),
            ));
        }
        // The other seats' player: the one named, else the kind's own (a second person's game
        // plays its remaining seats, at a table or a market, by that too).
        let opponent = match opponent.filter(|_| !second_person) {
            Some(spec) => {
                self.check_play_opponent(kind, &spec)?;
                spec
            }
            None => kind.default_player(self),
        };
        Ok(Start {
            family,
            scenario_id,
            role,
            opponent,
            second_person,
            seed,
        })
    }

    /// What the play page needs of the server, checked as it starts: people write text
    /// turns; every game of a study can be played (its scenario, role and opponent).
    pub(crate) fn check_play(&self) -> Result<(), String> {
        let Some(play) = &self.options.play else {
            return Ok(());
        };
        let episode = &self.options.episode;
        for (key, format) in [
            ("learner_format", episode.learner_format),
            ("opponent_format", episode.opponent_format),
        ] {
            if format == crate::protocol::TurnFormat::Tools {
                return Err(format!(
                    "--play: [episode] {key} = \"tools\": a person at the play page writes text turns (tagged or xml)"
                ));
            }
        }
        if let Some(study) = &play.study {
            for (i, entry) in study.games.iter().enumerate() {
                self.play_start(
                    entry.family,
                    entry.scenario_id.as_deref(),
                    entry.role.clone(),
                    Some(entry.opponent.clone()),
                    0,
                )
                .map_err(|e| format!("{}: [[game]] {}: {e}", study.file.display(), i + 1))?;
            }
        }
        Ok(())
    }

    /// A player the page may seat against people: one played in process, as the client
    /// policy allows it at a two-party game, a table's scripted party, a market's scripted
    /// trader. A seat played from outside is only ever a person's (`person`).
    fn check_play_opponent(&self, kind: Kind, spec: &str) -> Result<(), ServeError> {
        let outside =
            spec == super::super::EXTERNAL || crate::record::PlayerSpec::is_person_spec(spec);
        let refuse = |what: &str| {
            Err(ServeError::Validation(format!(
                "opponent `{spec}`: {what} (or `{PERSON}` for a second person)"
            )))
        };
        match kind {
            _ if outside => refuse("the page seats players played in process"),
            Kind::Party => {
                self.options.policy.opponent(
                    spec,
                    &self.options.opponent,
                    &self.options.players,
                )?;
                // Built once (and kept), so a spec no game could play is refused here.
                self.kit(spec, &self.options.episode).map(|_| ())
            }
            Kind::Table if spec == SCRIPTED => Ok(()),
            Kind::Table => refuse(&format!("a table's other seats are played by `{SCRIPTED}`")),
            Kind::Market if crate::negotiator::market::MarketRule::from_name(spec).is_some() => {
                Ok(())
            }
            Kind::Market => {
                let traders: Vec<String> = crate::negotiator::market::MarketRule::ALL
                    .iter()
                    .map(|rule| format!("`rule:{}`", rule.name()))
                    .collect();
                refuse(&format!(
                    "a market's other seats are played by a scripted trader: {}",
                    traders.join(", ")
                ))
            }
        }
    }

    /// A role a person asked for, if it is one of the scenario's.
    fn check_role(
        &self,
        kind: Kind,
        scenario_id: &str,
        role: Option<&str>,
    ) -> Result<(), ServeError> {
        let Some(role) = role else {
            return Ok(());
        };
        let roles = self.roles_of(kind, scenario_id)?;
        if roles.iter().any(|r| r == role) {
            return Ok(());
        }
        Err(ServeError::Validation(format!(
            "role `{role}`: scenario `{scenario_id}` has {}",
            roles.join(", ")
        )))
    }

    /// Start `game` with its people seated: the other seats play up to a person's turn. The
    /// people's seats are filled in; a record of a game that ended as it started is logged.
    pub(super) async fn play_begin(&self, game: &Game) -> Result<(), ServeError> {
        let start = &game.start;
        let names: Vec<String> = game
            .people
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|p| p.name.clone())
            .collect();
        let seats: Vec<(SeatRef, Option<String>)> = match start.kind() {
            Kind::Party => {
                let args = ResetArgs {
                    seed: Some(start.seed),
                    episode_id: Some(game.id.clone()),
                    scenario_id: Some(start.scenario_id.clone()),
                    learner_role: start.role.clone().map(LearnerRole::Table),
                    opponent: Some(start.opponent.clone()),
                    ..ResetArgs::default()
                };
                let people = PerSeat::new(names.first().cloned(), names.get(1).cloned());
                self.check_room()?;
                let (session, record) = self.start_seated(&args, people).await?;
                if let Some(record) = &record {
                    self.log(record)?;
                }
                self.admit(session, Owner::Play)?;
                vec![Seat::Learner, Seat::Opponent]
                    .into_iter()
                    .take(names.len())
                    .map(|seat| (SeatRef::Party(seat), None))
                    .collect()
            }
            Kind::Table | Kind::Market => {
                let roles = self.roles_of(start.kind(), &start.scenario_id)?;
                let mine = match &start.role {
                    Some(role) => role.clone(),
                    None => roles[(start.seed as usize) % roles.len()].clone(),
                };
                let mut people_roles = vec![mine.clone()];
                if names.len() > 1 {
                    let other =
                        roles.iter().find(|r| **r != mine).cloned().ok_or_else(|| {
                            ServeError::Validation("this game has one seat".into())
                        })?;
                    people_roles.push(other);
                }
                let players: BTreeMap<String, String> = roles
                    .iter()
                    .map(|role| {
                        let spec = if people_roles.contains(role) {
                            CLIENT.to_string()
                        } else {
                            start.opponent.clone()
                        };
                        (role.clone(), spec)
                    })
                    .collect();
                let family = match start.family {
                    ResetFamily::Table(f) => SeatedFamily::Table(f),
                    ResetFamily::Market(f) => SeatedFamily::Market(f),
                    ResetFamily::Party(_) => {
                        return Err(ServeError::Execution("a party family at a table".into()))
                    }
                };
                let people = people_roles
                    .iter()
                    .cloned()
                    .zip(names.iter().cloned())
                    .collect();
                let reset = TableReset::seated(
                    start.scenario_id.clone(),
                    family,
                    start.seed,
                    game.id.clone(),
                    players,
                    people,
                );
                let slot = self.start_table(&reset).await?;
                let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
                let tokens = session.seat_tokens();
                people_roles
                    .into_iter()
                    .map(|role| {
                        let token = tokens.get(&role).cloned().ok_or_else(|| {
                            ServeError::Execution(format!(
                                "table `{}` made no token for the person's seat `{role}`",
                                game.id
                            ))
                        })?;
                        Ok((SeatRef::Role(role), Some(token)))
                    })
                    .collect::<Result<_, ServeError>>()?
            }
        };
        let mut people = game.people.lock().unwrap_or_else(|e| e.into_inner());
        for (person, (seat, seat_token)) in people.iter_mut().zip(seats) {
            person.seat = Some(seat);
            person.seat_token = seat_token;
        }
        Ok(())
    }

    /// The roles of a scenario of any kind, in the game's order.
    fn roles_of(&self, kind: Kind, id: &str) -> Result<Vec<String>, ServeError> {
        let unknown = || ServeError::UnknownScenario(id.to_string());
        Ok(match kind {
            Kind::Party => {
                let index = self.catalog.pick(Some(id), None, None, 0)?;
                let scenario = self.catalog.scenarios.get(index).ok_or_else(unknown)?;
                scenario
                    .roles()
                    .iter()
                    .map(|r| r.name().to_string())
                    .collect()
            }
            Kind::Table => {
                let index = self.table_catalog.pick(Some(id), None, None, 0)?;
                let scenario = self
                    .table_catalog
                    .scenarios
                    .get(index)
                    .ok_or_else(unknown)?;
                scenario.parties.iter().map(|p| p.role.clone()).collect()
            }
            Kind::Market => {
                let index = self.market_catalog.pick(Some(id), None, None, 0)?;
                let scenario = self
                    .market_catalog
                    .scenarios
                    .get(index)
                    .ok_or_else(unknown)?;
                scenario.traders.iter().map(|t| t.role.clone()).collect()
            }
        })
    }
}

/// A new game's people: its creator (checked name), and a join secret when a second person is
/// to come.
pub(super) fn creator(
    name: &str,
    start: &Start,
) -> Result<(Vec<Person>, Option<String>), ServeError> {
    check_name(name)?;
    let person = Person {
        name: name.to_string(),
        token: secret::fresh(),
        seat_token: None,
        seat: None,
    };
    let join = start.second_person.then(secret::fresh);
    Ok((vec![person], join))
}
