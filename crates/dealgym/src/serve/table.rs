//! Table sessions: n-party games (the `deliberation` family) and markets kept by the server,
//! every seat played by a client by its role — one client per seat, or one client playing
//! several — or in process by its scripted player (the scripted party of its incentive at a
//! table, a scripted trader at a market). The rules stay core's, reached through one
//! [`Hosted`] episode of either kind (core's [`Seated`]); the live tables sit in the hub's one
//! registry beside the two-party episodes (one `--max-sessions` count, one idle reaper, one
//! lookup: [`Hub::lookup`]); this file starts them, steps them for the seat a request names,
//! and writes each ended table's record (a market's as a market record) to the server's log,
//! as every other episode is — and a table dropped before it ended (deleted by a holder of one
//! of its tokens, or reclaimed idle) as abandoned.
//!
//! A seat stepping out of turn is refused (409, naming the seat whose turn it is); a turn that
//! names an option not in the game or an offer that does not exist is the engine's turn error,
//! retried and then forfeited under the malformed-turn policy — never an HTTP error.

use std::collections::BTreeMap;
use std::future::{ready, Future};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use schemars::JsonSchema;
use serde::Deserialize;

use super::error::ServeError;
use super::hosted::{Hosted, SeatedFamily};
use super::hub::Live;
use super::ids::IdClaim;
use super::memory::{view_bytes, Charge, Reach};
use super::secret;
use super::session::{ResetArgs, ResetFamily, Sampled};
use super::table_rest::{single_seat_answer, TableObservation};
use super::wire::StepAnswer;
use super::Hub;
use crate::agents::SCRIPTED;
use crate::engine::{drive_now, Players, Seated, SeatedRecord, SeatedRun, ToMove};
use crate::game::{Completion, EpisodeSeed, ErrorCause, Message};
use crate::jsonl::encoded_len;
use crate::limits::{EpisodeText, TextLimits};
use crate::market::{MarketEpisode, MarketOptions, MarketSetup};
use crate::negotiator::market::MarketRule;
use crate::protocol::TurnFormat;
use crate::record::{TablePlayerInfo, TurnCost};
use crate::reward::RewardConfig;
use crate::table::{TableEpisode, TableError, TableOptions, TableSetup, TableStep};

/// The player spec a record names for a seat played by a client.
pub(crate) const CLIENT: &str = "external";

/// The scripted trader of a market seat no client claims.
pub(super) const DEFAULT_TRADER: &str = "rule:zic";

/// What a client sends to start a table or a market.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct TableReset {
    /// The scenario's id: a table's (`deliberation:base:cooperative`, …) or a market's
    /// (`market:…`); without it, `index`, or one drawn from `seed`.
    #[serde(default)]
    pub scenario_id: Option<String>,
    /// `market` for a market, or an n-party family (`deliberation`); default: the family of
    /// `scenario_id`, else a table where table scenarios are served, else a market.
    #[serde(default)]
    pub family: Option<SeatedFamily>,
    /// The scenario's position among the family's scenarios loaded.
    #[serde(default)]
    pub index: Option<usize>,
    /// The seed the schedule is drawn from (the same seed and scenario give the same
    /// schedule, here and in Python's `TableGame`); default: the table's number.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Malformed or illegal turns a seat may retry in one slot before it forfeits (default:
    /// the server's `format_retries`).
    #[serde(default)]
    pub retries: Option<u32>,
    /// Roles whose proposals and acceptances below their own minimum become rejections (at a
    /// market: traders that may not trade at a loss).
    #[serde(default)]
    pub regulated: Vec<String>,
    /// How seats write their turns: `tagged`, `xml` or `tools` (through the table's tools, sent
    /// back with each seat's view; not at a market) (default: the config's learner format).
    #[serde(default)]
    pub format: Option<TurnFormat>,
    /// Each seat's player by role. At a table: `rule:deliberation` (the scripted party of its
    /// incentive) for a seat played in process; every other seat is a client's. At a market:
    /// `external` for a seat a client plays, or a scripted trader (`rule:zic`, `rule:sniper`,
    /// `rule:truthful`); every seat not named is played by `rule:zic`.
    #[serde(default)]
    pub players: BTreeMap<String, String>,
    /// The table's id (unique in the log); default: one the server makes.
    #[serde(default)]
    pub table_id: Option<String>,
    /// OpenEnv's table: one seat played by the client, every other by `rule:deliberation`
    /// (from a [`ResetArgs`], never from a `/v1/tables` body).
    #[serde(skip)]
    #[schemars(skip)]
    single: Option<SingleSeat>,
    /// The client seats people play, by role, with each person's name: recorded
    /// `human:NAME` (the play page's tables; never from a `/v1/tables` body).
    #[serde(skip)]
    #[schemars(skip)]
    pub(super) people: BTreeMap<String, String>,
}

/// OpenEnv's reset of a table: the role its client plays (a reset that names none is refused,
/// naming the table's roles), and the reset's `opponent`: the scripted player every other seat
/// is played by (at a table only `rule:deliberation`; at a market `rule:zic`, `rule:sniper` or
/// `rule:truthful`), the kind's own where `None`.
#[derive(Debug, Default)]
struct SingleSeat {
    role: Option<String>,
    opponent: Option<String>,
}

impl TableReset {
    /// The play page's table: scenario `scenario_id` of `family`, each seat's player by role
    /// (`external` for a person's), the people's names by role.
    pub(super) fn seated(
        scenario_id: String,
        family: SeatedFamily,
        seed: u64,
        table_id: String,
        players: BTreeMap<String, String>,
        people: BTreeMap<String, String>,
    ) -> TableReset {
        TableReset {
            scenario_id: Some(scenario_id),
            family: Some(family),
            seed: Some(seed),
            table_id: Some(table_id),
            players,
            people,
            ..TableReset::default()
        }
    }

    /// OpenEnv's (or MCP's) reset `args` naming a table ([`Hub::names_table`]), as a table
    /// with one client seat. Of the `rules`, `learner_format` is the table's format (MCP's
    /// `start_negotiation` asks for `tools`); what else a two-party reset may set that a table
    /// has no use for is refused rather than ignored.
    pub(super) fn single_seat(args: &ResetArgs) -> Result<TableReset, ServeError> {
        let mut format = None;
        let mut other_rule = None;
        for (key, value) in args.rules.iter().flatten() {
            if key == "learner_format" {
                format = Some(
                    serde_json::from_value::<TurnFormat>(value.clone()).map_err(|e| {
                        ServeError::Validation(format!("rules.learner_format: {e}"))
                    })?,
                );
            } else {
                other_rule = Some(key.as_str());
            }
        }
        let rule = other_rule.map(|key| format!("rules.{key}"));
        // `opponent` is read where the kind is known ([`seat_specs`]): a market's scripted
        // traders are not a table's.
        let unused = [
            ("first_mover", args.first_mover.is_some()),
            (rule.as_deref().unwrap_or("rules"), rule.is_some()),
            ("tokens", args.tokens.is_some()),
        ];
        if let Some((name, _)) = unused.iter().find(|(_, set)| *set) {
            return Err(ServeError::Validation(format!(
                "`{name}`: not a setting of an n-party table or a market (OpenEnv plays one as one seat, every other seat played by the scripted player `opponent` names; of the rules, it takes `learner_format` alone)"
            )));
        }
        let family = match args.family {
            Some(ResetFamily::Table(family)) => Some(SeatedFamily::Table(family)),
            Some(ResetFamily::Market(family)) => Some(SeatedFamily::Market(family)),
            Some(ResetFamily::Party(family)) => {
                return Err(ServeError::Validation(format!(
                    "`family` {} is a two-party family, and scenario `{}` an n-party table: name one kind",
                    family.name(),
                    args.scenario_id.as_deref().unwrap_or_default()
                )))
            }
            None => None,
        };
        Ok(TableReset {
            scenario_id: args.scenario_id.clone(),
            index: args.index,
            seed: args.seed,
            table_id: args.episode_id.clone(),
            format,
            family,
            single: Some(SingleSeat {
                role: args.learner_role.as_ref().map(|r| r.name().to_string()),
                opponent: args.opponent.clone(),
            }),
            ..TableReset::default()
        })
    }
}

/// A live (or recently ended) table.
pub(super) struct TableSession {
    pub id: String,
    /// The id, held until the record is logged.
    _claim: IdClaim,
    pub episode: Hosted,
    seeds: EpisodeSeed,
    run_id: String,
    players: Vec<TablePlayerInfo>,
    scripted: Vec<bool>,
    /// Each client seat's secret, answered once when the table is made: what observing or
    /// stepping as that seat takes (`x-seat-token`). `None` for a scripted seat.
    tokens: Vec<Option<String>>,
    /// The creator's secret, answered once when the table is made: with any seat's token, what
    /// dropping the table takes (its id is sequential, so no secret).
    table_token: String,
    costs: Vec<TurnCost>,
    /// When each seat's turn began, for the latency of its step.
    asked: Instant,
    /// What the table's turns store so far, against the server's text limits.
    text: EpisodeText,
    limits: TextLimits,
    /// The server's `[rewards]`, checked for a table at its reset.
    rewards: RewardConfig,
    /// Per turn: how long the moving seat's view was when it was asked (what a per-response
    /// reward model is sent, as a run's table records it).
    prompt_lens: Vec<usize>,
    /// Each seat's reward as the logged record holds it (with the judge's and the reward
    /// model's parts), once the table has been logged.
    logged_rewards: Option<Vec<f64>>,
}

impl TableSession {
    pub fn roles(&self) -> Vec<String> {
        (0..self.episode.seats())
            .map(|seat| self.episode.role(seat).to_string())
            .collect()
    }

    /// Each seat's player spec as the record names it, in the game's order.
    pub fn players(&self) -> Vec<String> {
        self.players.iter().map(|p| p.player.clone()).collect()
    }

    /// The table's scenario; `None` at a market.
    pub fn table_scenario(&self) -> Option<&crate::scenario::TableScenario> {
        match &self.episode {
            Hosted::Table { episode, .. } => Some(episode.scenario()),
            Hosted::Market { .. } => None,
        }
    }

    /// How `seat` writes its turns.
    pub fn format(&self, _seat: usize) -> TurnFormat {
        match &self.episode {
            Hosted::Table { options, .. } => options.format,
            Hosted::Market { episode, .. } => episode.setup().format,
        }
    }

    /// The roles played by clients.
    pub fn client_roles(&self) -> Vec<String> {
        self.roles()
            .into_iter()
            .zip(&self.scripted)
            .filter(|(_, scripted)| !**scripted)
            .map(|(role, _)| role)
            .collect()
    }

    /// Each client seat's token by role: what the table's creator hands to whoever plays it.
    pub fn seat_tokens(&self) -> BTreeMap<String, String> {
        self.roles()
            .into_iter()
            .zip(&self.tokens)
            .filter_map(|(role, token)| Some((role, token.clone()?)))
            .collect()
    }

    /// The creator's token ([`TableSession::drop_by`] takes it, or a seat's).
    pub fn table_token(&self) -> &str {
        &self.table_token
    }

    /// Whether a caller holding `token` may drop the table: the token is the creator's or one
    /// of the table's seat tokens. Refused (403) otherwise: table ids are sequential, so
    /// without this any client could drop any table.
    pub fn drop_by(&self, token: Option<&str>) -> Result<(), ServeError> {
        let held = std::iter::once(self.table_token.as_str())
            .chain(self.tokens.iter().flatten().map(String::as_str));
        if secret::holds(token, held) {
            return Ok(());
        }
        Err(ServeError::Forbidden(format!(
            "dropping table `{}` takes a token of it in the `x-seat-token` header: the `table_token` its creation answered, or one of its `seat_tokens`",
            self.id
        )))
    }

    /// End an unfinished table as abandoned (`why`), and its record to log; `None` for a
    /// table that had ended (its record is in the log already).
    fn abandon(&mut self, why: String) -> Option<SeatedRecord> {
        if self.episode.ending().is_some() {
            return None;
        }
        self.episode.abandon(format!("abandoned: {why}"));
        self.ended_record()
    }

    /// The seat of `role` for a caller holding `token`: a client seat whose token it is. A
    /// scripted seat, a missing or a wrong token is refused (403): no client reads or moves
    /// for a seat it was not given.
    pub fn seat_for(&self, role: &str, token: Option<&str>) -> Result<usize, ServeError> {
        let seat = self.seat(role)?;
        let Some(expected) = &self.tokens[seat] else {
            return Err(ServeError::Forbidden(format!(
                "seat `{role}` of table `{}` is played in process ({})",
                self.id, self.players[seat].player
            )));
        };
        match token {
            Some(given) if secret::same(given, expected) => Ok(seat),
            _ => Err(ServeError::Forbidden(format!(
                "seat `{role}` of table `{}` needs its seat token in the `x-seat-token` header (the table's creation answered it in `seat_tokens`)",
                self.id
            ))),
        }
    }

    /// The seat of `role`, or a refusal naming the table's roles.
    pub fn seat(&self, role: &str) -> Result<usize, ServeError> {
        self.episode
            .seat_of_party(role)
            .map_err(|e| ServeError::UnknownSeat(format!("table `{}`: {e}", self.id)))
    }

    /// `seat`'s reward once the table has ended: the logged record's (judged, where the
    /// server's `[rewards]` has a judge), or until it is logged the terminal design's (at a
    /// market, the seat's surplus).
    pub fn reward(&self, seat: usize) -> Option<f64> {
        match &self.logged_rewards {
            Some(rewards) => rewards.get(seat).copied(),
            None => self.ended_record()?.rewards().get(seat).copied(),
        }
    }

    /// The role to move, if the table has not ended.
    pub fn to_move(&self) -> Option<String> {
        self.episode
            .to_move()
            .map(|s| self.episode.role(s).to_string())
    }

    /// Play `completion` as `role`'s turn, then the scripted seats up to a client's turn.
    /// Returns the record once the table has ended.
    pub fn step(
        &mut self,
        role: &str,
        token: Option<&str>,
        completion: Completion,
    ) -> Result<(TableStep, Option<SeatedRecord>), ServeError> {
        let seat = self.seat_for(role, token)?;
        if self.episode.ending().is_some() {
            return Err(ServeError::Ended(self.id.clone()));
        }
        let latency_ms = self.asked.elapsed().as_millis().min(u64::MAX as u128) as u64;
        let step = self.play(seat, completion)?;
        self.costs.push(TurnCost {
            latency_ms,
            ..TurnCost::default()
        });
        self.play_scripted()?;
        self.asked = Instant::now();
        Ok((step, self.ended_record()))
    }

    /// Step `seat`'s completion within the text limits ([`Served::play`]).
    fn play(&mut self, seat: usize, completion: Completion) -> Result<TableStep, ServeError> {
        let mut served = Served {
            scripted: &self.scripted,
            text: &mut self.text,
            limits: &self.limits,
            costs: &mut self.costs,
            prompt_lens: &mut self.prompt_lens,
        };
        served
            .play(&mut self.episode, seat, completion)
            .map_err(|e| refusal(&self.id, e))
    }

    /// What the table keeps, in bytes: its turns as the record writes them and every seat's
    /// view (each seat's holds the others' talk: a table keeps n − 1 copies of it there).
    pub(super) fn footprint(&self) -> u64 {
        let seats = self.episode.seats();
        self.text.stored()
            + (0..seats)
                .map(|s| view_bytes(self.episode.view(s)))
                .sum::<u64>()
    }

    /// The record of the ended table, named by the table's id (a table's rewarded under the
    /// server's `[rewards]`).
    pub fn ended_record(&self) -> Option<SeatedRecord> {
        self.episode.ending()?;
        let mut record = self.episode.record(
            &(),
            &SeatedRun {
                run_id: &self.run_id,
                seeds: self.seeds,
                episode_id: Some(&self.id),
                players: &self.players,
                costs: &self.costs,
            },
        );
        if let (SeatedRecord::Table(record), Some(episode)) = (&mut record, self.episode.table()) {
            record.set_rewards(episode.scenario(), &self.rewards);
        }
        Some(record)
    }

    /// Let the scripted seats move while it is their turn (the one driver loop).
    fn play_scripted(&mut self) -> Result<(), ServeError> {
        let mut served = Served {
            scripted: &self.scripted,
            text: &mut self.text,
            limits: &self.limits,
            costs: &mut self.costs,
            prompt_lens: &mut self.prompt_lens,
        };
        drive_now(&mut self.episode, &mut served).map_err(|e| refusal(&self.id, e))?;
        Ok(())
    }
}

/// The seat of `role`, the one OpenEnv's client plays at `episode` (every other seat played
/// by `scripted`); no role, or one it has not, is refused naming its roles.
fn single_seat(episode: &Hosted, role: Option<&str>, scripted: &str) -> Result<usize, ServeError> {
    let Some(role) = role else {
        let roles = (0..episode.seats())
            .map(|seat| episode.role(seat))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(ServeError::Validation(format!(
            "scenario `{}` is {}: OpenEnv plays it as one seat, the role `learner_role` names (one of {roles}), every other seat played by {scripted}; or play every seat from outside at POST /v1/tables",
            episode.scenario_id(),
            episode.kind(),
        )));
    };
    episode
        .seat_of_party(role)
        .map_err(|e| ServeError::Validation(format!("learner_role: {e}")))
}

/// A table or market set up for a reset, with each seat's player spec.
struct Hosting {
    episode: Hosted,
    seeds: EpisodeSeed,
    run_id: String,
    specs: Vec<String>,
}

/// A served table's run id: the hash of what it was set up with (`key`).
fn serve_run_id(key: &str) -> String {
    format!("serve-{:016x}", crate::game::mix_text(Vec::new(), key))
}

/// Each seat's player spec at `episode` for `reset`: `unnamed` for a seat `players` does not
/// name, a named seat's spec as `accept` reads it (`None`: not a spec of this kind, refused as
/// `refusal` says); at OpenEnv's table, the client's seat and everywhere else the scripted
/// player its `opponent` names as `accept` reads it (`scripted` where it names none; a spec
/// that is not one of the kind's scripted players, `scripted_names`, is refused). A role the
/// episode has not is refused naming its roles.
fn seat_specs(
    episode: &Hosted,
    reset: &TableReset,
    (unnamed, scripted, scripted_names): (&str, &str, &str),
    accept: impl Fn(&str) -> Option<String>,
    refusal: impl Fn(&str, &str) -> String,
) -> Result<Vec<String>, ServeError> {
    let seats = episode.seats();
    let mut specs = vec![unnamed.to_string(); seats];
    for (role, spec) in &reset.players {
        let seat = episode
            .seat_of_party(role)
            .map_err(|e| ServeError::Validation(format!("players: {e}")))?;
        specs[seat] =
            accept(spec.trim()).ok_or_else(|| ServeError::Validation(refusal(role, spec)))?;
    }
    if let Some(single) = &reset.single {
        let others = match single.opponent.as_deref() {
            None => scripted.to_string(),
            Some(spec) => accept(spec.trim())
                .filter(|s| s != CLIENT)
                .ok_or_else(|| {
                    ServeError::Validation(format!(
                        "`opponent` = `{spec}`: OpenEnv plays {} as one seat, every other seat played in process by {scripted_names}",
                        episode.kind()
                    ))
                })?,
        };
        let seat = single_seat(episode, single.role.as_deref(), &others)?;
        specs = vec![others; seats];
        specs[seat] = CLIENT.to_string();
    }
    Ok(specs)
}

/// A refusal of the table engine's, as the server answers it.
fn refusal(id: &str, e: TableError) -> ServeError {
    match e {
        TableError::OutOfTurn { acted, expected } => ServeError::OutOfTurn { acted, expected },
        TableError::Ended => ServeError::Ended(id.to_string()),
        other => ServeError::Validation(other.to_string()),
    }
}

/// The seats of a served table in the driver loop: the scripted ones answer in process, the
/// clients' from outside; every turn is played within the server's text limits.
struct Served<'s> {
    scripted: &'s [bool],
    text: &'s mut EpisodeText,
    limits: &'s TextLimits,
    costs: &'s mut Vec<TurnCost>,
    prompt_lens: &'s mut Vec<usize>,
}

impl Served<'_> {
    /// Step `seat`'s completion, within the text limits: a turn that could take what the
    /// table stores past `--max-episode-bytes` is not played, and the table ends as an
    /// `error` naming the limit (the step then answers as the turn that ended it).
    fn play(
        &mut self,
        episode: &mut Hosted,
        seat: usize,
        completion: Completion,
    ) -> Result<TableStep, TableError> {
        let view_len = episode.view(seat).len();
        if let Err(over) = self.text.admit(encoded_len(&completion), 0, self.limits) {
            episode.fail(seat, ErrorCause::Limit, over.to_string());
            let (terminated, truncated) = crate::engine::ending(episode.ending().map(|o| o.kind));
            return Ok(TableStep {
                seat,
                retry: false,
                error: None,
                terminated,
                truncated,
            });
        }
        let before = episode.turns_played();
        let step = episode.step(seat, completion)?;
        for len in episode.turn_lens(before) {
            self.text.add(len);
            self.prompt_lens.push(view_len);
        }
        Ok(step)
    }
}

impl Players<Hosted> for Served<'_> {
    /// The scripted turn, with when it began (its latency is the time to write and play it).
    type Answer = (Completion, Instant);
    type Failure = std::convert::Infallible;
    type Error = TableError;

    fn in_process(&self, seat: usize) -> bool {
        self.scripted[seat]
    }

    fn ask<'a>(
        &'a self,
        episode: &'a Hosted,
        seat: usize,
    ) -> impl Future<Output = Result<Self::Answer, Self::Failure>> + 'a {
        let started = Instant::now();
        ready(Ok((episode.scripted_turn(seat), started)))
    }

    fn take(
        &mut self,
        episode: &mut Hosted,
        seat: usize,
        (completion, started): Self::Answer,
    ) -> Result<(), TableError> {
        self.play(episode, seat, completion)?;
        self.costs.push(TurnCost {
            latency_ms: started.elapsed().as_millis().min(u64::MAX as u128) as u64,
            ..TurnCost::default()
        });
        Ok(())
    }

    fn fail(&mut self, _: &mut Hosted, _: usize, failure: Self::Failure) -> Result<(), TableError> {
        match failure {}
    }
}

/// A table in the server's registry, with when it was last used and what it keeps.
pub(super) struct TableSlot {
    pub session: Mutex<TableSession>,
    pub(super) touched: Mutex<Instant>,
    pub(super) charge: Charge,
}

impl TableSlot {
    pub(super) fn touch(&self) {
        *self.touched.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }
}

/// The tables in the hub's one registry of sessions: an ended table goes to the shelf every
/// ended session is kept on for `GET`, an idle one is reclaimed by the one reaper
/// ([`Hub::reap`]).
impl Hub {
    /// Start a table (or a market) for `reset`: the scripted seats have moved up to a client's
    /// turn. The record comes back too if it ended on its own (then it is logged).
    pub(super) async fn start_table(
        &self,
        reset: &TableReset,
    ) -> Result<Arc<TableSlot>, ServeError> {
        let hub = self;
        let claim = IdClaim::session(hub.ids(), reset.table_id.as_deref())?;
        let seed = reset.seed.unwrap_or(claim.number);
        let retries = reset.retries.unwrap_or(hub.options.episode.format_retries);
        if u64::from(retries) > crate::limits::MAX_RETRIES {
            return Err(ServeError::Validation(format!(
                "retries {retries}: at most {}",
                crate::limits::MAX_RETRIES
            )));
        }
        let Hosting {
            episode,
            seeds,
            run_id,
            specs,
        } = match self.hosted_family(reset) {
            SeatedFamily::Table(family) => self.host_table(reset, family, seed, retries)?,
            SeatedFamily::Market(_) => self.host_market(reset, seed, retries)?,
        };
        // Refused once the request is read (a bad one is told so first), before any seat
        // moves; checked again where it is put in.
        self.check_room()?;
        let scripted: Vec<bool> = specs.iter().map(|s| s != CLIENT).collect();
        let mut players: Vec<TablePlayerInfo> = specs
            .into_iter()
            .map(|player| TablePlayerInfo {
                player,
                model: None,
            })
            .collect();
        for (role, name) in &reset.people {
            let seat = episode
                .seat_of_party(role)
                .map_err(|e| ServeError::Validation(format!("people: {e}")))?;
            if scripted[seat] {
                return Err(ServeError::Validation(format!(
                    "people: seat `{role}` is played in process ({})",
                    players[seat].player
                )));
            }
            players[seat].player = crate::record::PlayerSpec::person(name).to_string();
        }
        let tokens = scripted
            .iter()
            .map(|scripted| (!scripted).then(secret::fresh))
            .collect();
        let mut session = TableSession {
            id: claim.id.clone(),
            _claim: claim,
            episode,
            seeds,
            run_id,
            players,
            scripted,
            tokens,
            table_token: secret::fresh(),
            costs: Vec::new(),
            asked: Instant::now(),
            text: EpisodeText::default(),
            limits: hub.options.text_limits,
            rewards: hub.options.rewards.clone(),
            prompt_lens: Vec::new(),
            logged_rewards: None,
        };
        session.play_scripted()?;
        let record = session.ended_record();
        let charge = self.memory.charge();
        charge.set(session.footprint());
        let id = session.id.clone();
        let slot = Arc::new(TableSlot {
            session: Mutex::new(session),
            touched: Mutex::new(Instant::now()),
            charge,
        });
        let ended = record.is_some();
        if let Some(record) = record {
            self.log_table(&slot, record).await?;
        }
        self.enter(id, Live::Table(slot.clone()), ended)?;
        Ok(slot)
    }

    /// What `reset` starts: the family it names; else its scenario's (a table's id or a
    /// market's); else a table where table scenarios are served, else a market.
    fn hosted_family(&self, reset: &TableReset) -> SeatedFamily {
        let market = SeatedFamily::Market(crate::scenario::MarketFamily::Market);
        match (reset.family, reset.scenario_id.as_deref()) {
            (Some(family), _) => family,
            (None, Some(id)) if !self.table_catalog.has(id) && self.market_catalog.has(id) => {
                market
            }
            (None, None)
                if self.table_catalog.scenarios.is_empty()
                    && !self.market_catalog.scenarios.is_empty() =>
            {
                market
            }
            _ => SeatedFamily::Table(crate::scenario::TableFamily::Deliberation),
        }
    }

    /// An n-party table of `family` for `reset`, its seats' players as `players` names them
    /// (a client's unless `rule:deliberation`).
    fn host_table(
        &self,
        reset: &TableReset,
        family: crate::scenario::TableFamily,
        seed: u64,
        retries: u32,
    ) -> Result<Hosting, ServeError> {
        let hub = self;
        let family = reset.family.map(|_| family);
        let index =
            self.table_catalog
                .pick(reset.scenario_id.as_deref(), family, reset.index, seed)?;
        let scenario = self.table_catalog.scenarios[index].clone();
        let format = reset.format.unwrap_or(hub.options.episode.learner_format);
        let options = TableOptions {
            retries,
            regulated: reset.regulated.clone(),
            format,
        };
        if !hub.options.episode.talk.is_on() {
            // As `run` refuses it for a table (`run/table.rs`): never played as if it were on.
            return Err(ServeError::Validation(
                "this server's [episode] talk = \"off\" is the two-party talk ablation: an \
                 n-party table forwards every party's talk to all the others, so it is not \
                 served here"
                    .to_string(),
            ));
        }
        hub.options
            .rewards
            .check_for_table()
            .map_err(|e| ServeError::Validation(e.to_string()))?;
        let seeds = EpisodeSeed::reset(seed, index);
        let prompts = hub.options.prompts.clone();
        let setup = TableSetup::with_prompts(&scenario, &options, seeds.table_seed(), &prompts)
            .map_err(|e| ServeError::Validation(e.to_string()))?;
        let run_id = serve_run_id(&format!("table|{options:?}|{:?}", reset.players));
        let episode = Hosted::Table {
            episode: TableEpisode::with_prompts(scenario, setup, prompts)
                .map_err(|e| ServeError::Validation(e.to_string()))?,
            options,
        };
        let specs = seat_specs(
            &episode,
            reset,
            (CLIENT, SCRIPTED, SCRIPTED),
            |spec| (spec == SCRIPTED || spec == CLIENT).then(|| spec.to_string()),
            |role, spec| {
                format!(
                "players: `{role}` = `{spec}`: a table seat here is a client's (`{CLIENT}`) or the scripted party (`{SCRIPTED}`)"
            )
            },
        )?;
        Ok(Hosting {
            episode,
            seeds,
            run_id,
            specs,
        })
    }

    /// A market for `reset`, its seats' players as `players` names them (a client's where
    /// `external`, else a scripted trader: `rule:zic` unless another is named). What a market
    /// cannot honour is refused, as `run` refuses it (`run/market.rs`).
    fn host_market(
        &self,
        reset: &TableReset,
        seed: u64,
        retries: u32,
    ) -> Result<Hosting, ServeError> {
        let hub = self;
        let index =
            self.market_catalog
                .pick(reset.scenario_id.as_deref(), None, reset.index, seed)?;
        let scenario = self.market_catalog.scenarios[index].clone();
        if !hub.options.episode.talk.is_on() {
            return Err(ServeError::Validation(
                "this server's [episode] talk = \"off\" is the two-party talk ablation: a \
                 market forwards talk as its rules say, so it is not served here"
                    .to_string(),
            ));
        }
        if hub.options.rewards != RewardConfig::default() {
            return Err(ServeError::Validation(
                "this server's [rewards]: a market record holds no rewards yet (each seat's \
                 reward is its surplus), so a market is not served under a [rewards] config"
                    .to_string(),
            ));
        }
        let options = MarketOptions {
            retries,
            regulated: reset.regulated.clone(),
            format: reset.format.unwrap_or(hub.options.episode.learner_format),
        };
        let seeds = EpisodeSeed::reset(seed, index);
        let prompts = hub.options.prompts.clone();
        let setup = MarketSetup::new(&scenario, &options, seeds.table_seed(), &prompts)
            .map_err(|e| ServeError::Validation(e.to_string()))?;
        // OpenEnv's `opponent` (the traders' scripted player) is part of the setup; a run id
        // without one is as it was.
        let opponent = reset.single.as_ref().and_then(|s| s.opponent.as_deref());
        let run_id = serve_run_id(&match opponent {
            None => format!("market|{options:?}|{:?}", reset.players),
            Some(o) => format!("market|{options:?}|{:?}|{o}", reset.players),
        });
        let mut episode = Hosted::Market {
            episode: MarketEpisode::new(scenario, setup, prompts)
                .map_err(|e| ServeError::Validation(e.to_string()))?,
            traders: Vec::new(),
        };
        let specs = seat_specs(
            &episode,
            reset,
            (
                DEFAULT_TRADER,
                DEFAULT_TRADER,
                "`rule:zic`, `rule:sniper` or `rule:truthful`",
            ),
            |spec| {
                if spec == CLIENT {
                    return Some(CLIENT.to_string());
                }
                let rule = MarketRule::from_name(spec.strip_prefix("rule:")?)?;
                Some(format!("rule:{}", rule.name()))
            },
            |role, spec| {
                format!(
                "players: `{role}` = `{spec}`: a market seat here is a client's (`{CLIENT}`) or a scripted trader (`rule:zic`, `rule:sniper` or `rule:truthful`)"
            )
            },
        )?;
        if let Hosted::Market { traders, .. } = &mut episode {
            *traders = specs.iter().map(|s| MarketRule::from_name(s)).collect();
        }
        Ok(Hosting {
            episode,
            seeds,
            run_id,
            specs,
        })
    }

    /// Whether reset `args` name an n-party table or a market: a table's or a market's
    /// scenario id, or a table family or `market`.
    pub(super) fn names_table(&self, args: &ResetArgs) -> bool {
        matches!(
            args.family,
            Some(ResetFamily::Table(_) | ResetFamily::Market(_))
        ) || args.scenario_id.as_deref().is_some_and(|id| {
            !self.catalog.has(id) && (self.table_catalog.has(id) || self.market_catalog.has(id))
        })
    }

    /// Start OpenEnv's table for reset `args` ([`TableReset::single_seat`]): the scripted seats
    /// have moved up to the client's turn. Answers the table, the client's role and its seat's
    /// token.
    pub(super) async fn start_single_seat(
        &self,
        args: &ResetArgs,
    ) -> Result<(Arc<TableSlot>, String, String), ServeError> {
        let slot = self.start_table(&TableReset::single_seat(args)?).await?;
        let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
        let (role, token) = session.seat_tokens().into_iter().next().ok_or_else(|| {
            ServeError::Execution("a single-seat table has no client seat".into())
        })?;
        drop(session);
        Ok((slot, role, token))
    }

    /// OpenEnv's stateless `/reset` (no `action`) and `/step` at a table: a fresh table for
    /// `args`, the client's `action` played as its seat's turn, and what the seat sees. A table
    /// that has not ended is dropped unlogged, as a stateless two-party episode is.
    pub(super) async fn table_once(
        &self,
        args: &ResetArgs,
        action: Option<Completion>,
    ) -> Result<StepAnswer<TableObservation>, ServeError> {
        let (slot, role, token) = self.start_single_seat(args).await?;
        let id = slot
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .id
            .clone();
        let answer = match action {
            Some(completion) => self.step_single_seat(&id, &role, &token, completion).await,
            None => {
                let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
                single_seat_answer(&session, &role, None)
            }
        };
        // Whatever happened, a table still live is this request's alone: out of the registry
        // (a failed step leaves nothing behind to count against --max-sessions, or to be
        // reaped and logged for a request that was refused).
        let live = answer.as_ref().map_or(true, |a| !a.done);
        if live && self.take(&id, &Live::Table(slot.clone())) {
            self.memory.relieve();
        }
        answer
    }

    /// Play OpenEnv's client's `completion` as its seat `role` of table `id` (then the scripted
    /// seats move up to its next turn or the end): what the seat sees now.
    pub(super) async fn step_single_seat(
        &self,
        id: &str,
        role: &str,
        token: &str,
        completion: Completion,
    ) -> Result<StepAnswer<TableObservation>, ServeError> {
        let (slot, step) = self.step_table(id, role, Some(token), completion).await?;
        let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
        single_seat_answer(&session, role, Some(&step))
    }

    /// A table by id, live or ended (an evicted one is a 410; a two-party episode's id, a 409).
    pub(super) fn find_table(&self, id: &str) -> Result<Arc<TableSlot>, ServeError> {
        match self.lookup(id, Reach::Table)? {
            Live::Table(slot) => Ok(slot),
            Live::Episode(_) => unreachable!("an episode is reached as an episode"),
        }
    }

    /// Log the ended table of `slot` (its `record`), with the judge's and the reward model's
    /// parts where the server's `[rewards]` calls them (each seat's view and the prompt length
    /// of each turn, as a run's table gives them): the one way a served table's record reaches
    /// the log. The rewards logged are what its seats are answered from then on.
    pub(super) async fn log_table(
        &self,
        slot: &TableSlot,
        mut record: SeatedRecord,
    ) -> Result<(), ServeError> {
        if let (Some(rewarding), SeatedRecord::Table(table)) = (&self.rewarding, &mut record) {
            // The table has ended: what is copied here no longer changes. (A market is not
            // served under a [rewards] that calls them: `host_market`.)
            let copied = {
                let session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
                session.episode.table().map(|episode| {
                    let views: Vec<Vec<Message>> = (0..episode.seats())
                        .map(|seat| episode.view(seat).to_vec())
                        .collect();
                    (
                        episode.scenario().clone(),
                        views,
                        session.prompt_lens.clone(),
                    )
                })
            };
            if let Some((scenario, views, prompt_lens)) = copied {
                let views: Vec<&[Message]> = views.iter().map(Vec::as_slice).collect();
                rewarding
                    .apply_table(table, &scenario, &views, &prompt_lens)
                    .await;
            }
        }
        self.log_line(record.episode_id(), &record)?;
        slot.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .logged_rewards = Some(record.rewards());
        Ok(())
    }

    /// Step `role` of table `id`, and log the record if the table ended.
    pub(super) async fn step_table(
        &self,
        id: &str,
        role: &str,
        token: Option<&str>,
        completion: Completion,
    ) -> Result<(Arc<TableSlot>, TableStep), ServeError> {
        let hub = self;
        let slot = self.find_table(id)?;
        hub.options
            .text_limits
            .check_completion(encoded_len(&completion))
            .map_err(|e| ServeError::CompletionTooLarge(e.to_string()))?;
        let (step, record) = {
            let mut session = slot.session.lock().unwrap_or_else(|e| e.into_inner());
            let stepped = session.step(role, token, completion);
            slot.charge.set(session.footprint());
            stepped?
        };
        let ended = record.is_some();
        if let Some(record) = record {
            hub.log_table(&slot, record).await?;
        }
        slot.touch();
        if ended {
            self.retire(id);
        } else {
            self.memory.relieve();
        }
        Ok((slot, step))
    }

    /// Drop table `id` for a caller holding `token` (a token of that table:
    /// [`TableSession::drop_by`]); an unfinished one is logged as abandoned.
    pub(super) async fn drop_table(&self, id: &str, token: Option<&str>) -> Result<(), ServeError> {
        let slot = self.find_table(id)?;
        slot.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drop_by(token)?;
        // Of two drops at once, the one that takes it out of the registry logs it.
        if !self.take(id, &Live::Table(slot.clone())) {
            // An ended table kept among the ended sessions: its record is in the log already.
            if self.memory.remove(id, Reach::Table) {
                return Ok(());
            }
            return Err(ServeError::UnknownEpisode(id.to_string()));
        }
        let why = "dropped by a client (DELETE) before it ended".to_string();
        self.log_abandoned(&slot, why).await
    }

    /// Log the table of `slot` as abandoned (`why`) if it had not ended.
    pub(super) async fn log_abandoned(
        &self,
        slot: &TableSlot,
        why: String,
    ) -> Result<(), ServeError> {
        let abandoned = slot
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .abandon(why);
        match abandoned {
            Some(record) => self.log_table(slot, record).await,
            None => Ok(()),
        }
    }
}

/// `completion` as OpenEnv's (or MCP's) client's turn at a table: what a table turn cannot
/// carry (a seat named in the action — the client plays one seat —, token-exact ids) is
/// refused. Tool calls are the seat's turn as at `/v1/tables`: read with the table's tools,
/// format-ok where the table was asked for the tools format.
pub(super) fn single_seat_turn(
    seat: Option<crate::game::Seat>,
    completion: Completion,
    sampled: &Sampled,
) -> Result<Completion, ServeError> {
    let refused = [
        ("seat", seat.is_some()),
        ("completion_ids", sampled.completion_ids.is_some()),
        ("logprobs", sampled.logprobs.is_some()),
        ("finish_reason", sampled.finish_reason.is_some()),
    ];
    match refused.iter().find(|(_, set)| *set) {
        Some((name, _)) => Err(ServeError::Validation(format!(
            "`{name}`: not part of a table turn (the client plays the one seat its reset named: send `message`, and `reasoning` and `tool_calls` if any)"
        ))),
        None => Ok(completion),
    }
}
