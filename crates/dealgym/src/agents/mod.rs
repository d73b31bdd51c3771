//! Players: who writes the completions. One file per kind — an LLM behind an OpenAI-compatible
//! endpoint (`openai:MODEL@URL` or a `[players.NAME]` table), a script (`script:FILE`), and the
//! built-in concession negotiators (`rule:NAME`). Every player returns raw text; the engine
//! parses it the same way whoever wrote it.
//!
//! A built-in negotiator reads the scenario from its own side only; nothing here passes one
//! seat's private block to the other seat's player.

mod model;
mod narrated;
pub mod persona;
mod planner;
mod sampling;
mod script;
mod table;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::game::{Completion, Episode, Message, Persona, Seat, Turn};
use crate::llm::{
    without_userinfo, EndpointSettings, LlmClient, LlmError, ReplicaPool, SeatKey, TokenMode,
};
use crate::protocol::constraint::ConstraintCheck;
use crate::protocol::{openai_tools, TurnFormat};

pub use crate::protocol::constraint::Constrain;
use crate::vocab::Call;

use model::llm_client;
pub(crate) use model::openai_spec;
use model::{exact_sequence, routed_call};

pub use crate::negotiator::{
    concession, speak, Position, RulePlayer, Stance, Tactic, TicketStance,
};
pub(crate) use narrated::{split_spec as narrated_parts, Decider};
pub use narrated::{Narrated, NarratedConfig};
pub use persona::PersonaConfig;
pub use planner::{Planner, PlannerConfig, Proposers, Selector};
pub use sampling::{SamplingConfig, SamplingDefaults};
pub use script::ScriptPlayer;
pub use table::SCRIPTED;
pub(crate) use table::{MarketPlayer, ScriptedSeat, SeatPlayer, TablePlayer};

/// Why a player could not be made or could not answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlayerError {
    /// The player spec or its config is wrong (a setup error, before any episode runs).
    #[error("player `{spec}`: {message}")]
    Spec { spec: String, message: String },
    /// The endpoint failed after its retries (the episode ends as `error`).
    #[error(transparent)]
    Backend(#[from] LlmError),
    /// A script was asked for more completions than it holds (the episode ends as `error`).
    #[error("script {file}: no completion left after {played}")]
    ScriptExhausted { file: String, played: usize },
}

impl PlayerError {
    /// An error of the player `spec`, shown without the credentials of its URLs.
    fn spec(spec: &str, message: impl Into<String>) -> PlayerError {
        let shown: Vec<String> = spec.split(',').map(without_userinfo).collect();
        PlayerError::Spec {
            spec: shown.join(","),
            message: message.into(),
        }
    }
}

/// A `[players.NAME]` table of the config: the endpoint and how to sample from it (every field
/// of [`EndpointSettings`], documented there, under the same names), plus the player's own
/// persona and decoding constraint. Unknown keys are refused, so a typo is named.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlayerConfig {
    pub endpoint: EndpointSettings,
    /// A fixed persona for this player (overrides the drawn one).
    pub persona: Option<String>,
    /// Constrain decoding to well-formed turns of the scenario (see [`Constrain`]).
    pub constrain: Constrain,
    /// A propose-then-commit seat ([`PlannerConfig`]): the table holds `planner` alone, and
    /// `endpoint` is unused.
    pub planner: Option<PlannerConfig>,
    /// A narrated seat ([`NarratedConfig`]): the table holds `decider`, `narrator` and
    /// `force` alone, and `endpoint` is unused.
    pub narrated: Option<NarratedConfig>,
}

impl<'de> Deserialize<'de> for PlayerConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut table = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        if table.contains_key("decider") || table.contains_key("narrator") {
            let narrated: NarratedConfig = serde_json::from_value(serde_json::Value::Object(table))
                .map_err(|e| {
                    D::Error::custom(format!(
                        "a narrated player's table holds `decider`, `narrator` and `force` \
                         alone: {e}"
                    ))
                })?;
            return Ok(PlayerConfig {
                narrated: Some(narrated),
                ..PlayerConfig::default()
            });
        }
        if let Some(planner) = table.remove("planner") {
            if let Some(other) = table.keys().next() {
                return Err(D::Error::custom(format!(
                    "a planner table holds `planner` alone (its proposers are player specs), not `{other}`"
                )));
            }
            let planner: PlannerConfig = serde_json::from_value(planner)
                .map_err(|e| D::Error::custom(format!("planner: {e}")))?;
            return Ok(PlayerConfig {
                planner: Some(planner),
                ..PlayerConfig::default()
            });
        }
        let persona = table
            .remove("persona")
            .map(serde_json::from_value::<String>)
            .transpose()
            .map_err(|e| D::Error::custom(format!("persona: {e}")))?;
        let constrain = match table.remove("constrain") {
            Some(serde_json::Value::String(name)) => {
                Constrain::from_name(&name).map_err(D::Error::custom)?
            }
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "constrain: expected a name, found {other}"
                )))
            }
            None => Constrain::None,
        };
        let endpoint: EndpointSettings =
            serde_json::from_value(serde_json::Value::Object(table)).map_err(D::Error::custom)?;
        if endpoint.model.trim().is_empty() {
            return Err(D::Error::custom("`model` is required"));
        }
        match (
            endpoint.base_url.trim().is_empty(),
            endpoint.endpoints.is_empty(),
        ) {
            (true, true) => {
                return Err(D::Error::custom(
                    "`endpoint` is required (one server), or `endpoints` (replicas of the model)",
                ))
            }
            (false, false) => {
                return Err(D::Error::custom(
                    "give `endpoint` (one server) or `endpoints` (replicas of the model), not both",
                ))
            }
            (true, false) => {
                if let Some(blank) = endpoint.endpoints.iter().position(|u| u.trim().is_empty()) {
                    return Err(D::Error::custom(format!("`endpoints[{blank}]` is empty")));
                }
            }
            (false, true) => {}
        }
        endpoint.check().map_err(D::Error::custom)?;
        Ok(PlayerConfig {
            endpoint,
            persona,
            constrain,
            planner: None,
            narrated: None,
        })
    }
}

/// A `[players.NAME]` table: the endpoint and how to sample from it, with the player's own
/// persona and decoding constraint beside them. `model` is required, and one of `endpoint`
/// (one server) or `endpoints` (replicas of the model); an unknown key is refused.
///
/// This is the table as [`PlayerConfig`] writes it and as its schema says; it reads it by hand.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "PlayerConfig")]
struct PlayerTable<'a> {
    #[serde(flatten)]
    endpoint: &'a EndpointSettings,
    /// A fixed persona for this player (overrides the drawn one).
    #[serde(skip_serializing_if = "Option::is_none")]
    persona: &'a Option<String>,
    /// Constrain decoding to well-formed turns of the scenario: `none`, `gbnf` (llama.cpp),
    /// `vllm` or `vllm_legacy`.
    #[serde(default)]
    constrain: Constrain,
    /// A propose-then-commit seat (a planner): `{ k = 4, propose = SPEC or [SPECS], value =
    /// URL }`; the table then holds `planner` alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    planner: &'a Option<PlannerConfig>,
    /// A narrated seat: who decides the move (`rule:NAME`, `script:FILE`, a planner's table,
    /// or at a table seat `rule:deliberation`); the table then holds `decider`, `narrator` and
    /// `force` alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    decider: Option<&'a str>,
    /// A narrated seat: the model that writes the words (`openai:MODEL@URL` or a model's
    /// table).
    #[serde(skip_serializing_if = "Option::is_none")]
    narrator: Option<&'a str>,
    /// A narrated seat: how its action line is held to the decided move: `grammar` (by the
    /// narrator's `constrain`; the default where it has one and is not token-exact),
    /// `appended` (the default otherwise; forced ids marked in token-exact mode) or `prompt`
    /// (asked for, checked by the engine).
    #[serde(skip_serializing_if = "Option::is_none")]
    force: Option<crate::narration::Force>,
}

impl Serialize for PlayerConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Some(narrated) = &self.narrated {
            return narrated.serialize(s);
        }
        if let Some(planner) = &self.planner {
            #[derive(Serialize)]
            struct PlannerTable<'a> {
                planner: &'a PlannerConfig,
            }
            return PlannerTable { planner }.serialize(s);
        }
        PlayerTable {
            endpoint: &self.endpoint,
            persona: &self.persona,
            constrain: self.constrain,
            planner: &None,
            decider: None,
            narrator: None,
            force: None,
        }
        .serialize(s)
    }
}

/// The schema of the table (one level, as TOML writes it), not of the struct's fields.
impl JsonSchema for PlayerConfig {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        PlayerTable::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        PlayerTable::json_schema(generator)
    }
}

/// What a player knows when asked to move: its [`Position`] (the scenario to read its own side
/// from, the setup, the state of the table; the counterpart's offer in this seat's terms), which
/// it reads through this context's fields, and what only a model's call needs beside it.
pub struct TurnContext<'a> {
    /// What a rule negotiator reads too (`ctx.scenario`, `ctx.counter_offer`, … read it).
    pub(crate) position: Position<'a>,
    /// Calls made for this seat so far in the episode (including retries; not a logged
    /// prefix's turns, which no player of this episode made).
    pub(crate) calls: usize,
    /// Every attempt of the episode so far (for a token-exact seat's sequence).
    pub(crate) turns: &'a [Turn],
    /// The episode's routing ticket (unique in the process; the driver draws one per episode):
    /// with replicas, each seat of the episode keeps one replica. `None`: no binding.
    pub(crate) route: Option<u64>,
    /// The episode itself, for a planner's state text ([`crate::planner::state_text`], which
    /// shows only this seat's side).
    pub(crate) episode: &'a Episode,
}

impl<'a> std::ops::Deref for TurnContext<'a> {
    type Target = Position<'a>;

    fn deref(&self) -> &Position<'a> {
        &self.position
    }
}

impl<'a> TurnContext<'a> {
    /// The seat's exact token sequence so far: each of its calls' prompt ids then sampled ids
    /// (kept by the episode as its turns come). `None` if one of its calls was not token-exact.
    pub(crate) fn own_sequence(&self) -> Option<&'a [u32]> {
        self.episode.token_sequence(self.seat)
    }

    /// The seat's replica-routing key (its episode's ticket and the seat), where there is one.
    pub(crate) fn seat_key(&self) -> Option<SeatKey> {
        self.route.map(|episode| SeatKey {
            episode,
            seat: self.seat,
        })
    }

    /// The context of the seat to move in `episode`.
    pub(crate) fn of(episode: &'a Episode, seat: Seat, sampling_seed: u64) -> Self {
        TurnContext {
            position: Position::of(episode, seat, sampling_seed),
            calls: episode
                .turns()
                .iter()
                .enumerate()
                .filter(|(i, t)| t.seat == seat && !episode.setup().rules.is_logged_turn(*i))
                .count(),
            turns: episode.turns(),
            route: None,
            episode,
        }
    }
}

/// One completion with what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Played {
    pub(crate) completion: Completion,
    /// What the endpoint said about the call (usage, logprobs, token ids), for the record.
    pub(crate) call: Option<Call>,
    pub(crate) latency_ms: u64,
    /// Transient endpoint failures retried before the answer.
    pub(crate) retries: u32,
    /// The replica that served the call (its index in the player's `endpoints`), for a player
    /// with replicas.
    pub(crate) replica: Option<u32>,
    /// A planner's turn: the candidates it chose `completion` from (recorded on the turn).
    pub(crate) planning: Option<crate::planner::Planning>,
}

impl Played {
    /// A completion that came without a call of ours (a built-in player's, a client's, a
    /// person's): no call, no retries, no replica.
    pub(crate) fn scripted(completion: Completion, latency_ms: u64) -> Played {
        Played {
            completion,
            call: None,
            latency_ms,
            retries: 0,
            replica: None,
            planning: None,
        }
    }
}

/// A player of any kind.
#[derive(Debug, Clone)]
pub enum Player {
    Llm {
        client: LlmClient,
        spec: String,
        persona: Option<Persona>,
        constrain: Constrain,
        /// The model's replicas, when the player lists several (`client` is then the first's).
        replicas: Option<ReplicaPool>,
    },
    Rule {
        tactic: RulePlayer,
        spec: String,
    },
    Script {
        script: ScriptPlayer,
        spec: String,
    },
    /// A propose-then-commit seat (`[players.NAME] planner = {…}`).
    Planner {
        planner: Box<Planner>,
        spec: String,
    },
    /// A decider's moves in a model's words (`narrate:DECIDER+MODEL`, or `[players.NAME]`
    /// with `decider` and `narrator`).
    Narrated {
        narrated: Box<Narrated>,
        spec: String,
    },
}

impl Player {
    /// Make a player from a spec: `openai:MODEL@URL`, `rule:NAME`, `script:FILE`, or the name of
    /// a `[players.NAME]` table.
    pub(crate) fn from_spec(
        spec: &str,
        named: &BTreeMap<String, PlayerConfig>,
        http: &reqwest::Client,
    ) -> Result<Player, PlayerError> {
        Player::from_spec_with(spec, named, http, &SamplingDefaults::default())
    }

    /// [`from_spec`](Self::from_spec), a model player taking `sampling` for what it leaves
    /// unset (the seat's `[sampling.*]` defaults).
    pub(crate) fn from_spec_with(
        spec: &str,
        named: &BTreeMap<String, PlayerConfig>,
        http: &reqwest::Client,
        sampling: &SamplingDefaults,
    ) -> Result<Player, PlayerError> {
        // Players name players (a planner its proposers, a narrated player its decider and
        // narrator): tables that name each other would recurse without end.
        thread_local!(static DEPTH: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });
        let depth = DEPTH.get();
        if depth >= 8 {
            return Err(PlayerError::spec(
                spec,
                "the [players.NAME] tables name each other in a cycle (a planner's proposers, \
                 a narrated player's decider or narrator)",
            ));
        }
        DEPTH.set(depth + 1);
        let made = Player::make(spec, named, http, sampling);
        DEPTH.set(depth);
        made
    }

    fn make(
        spec: &str,
        named: &BTreeMap<String, PlayerConfig>,
        http: &reqwest::Client,
        sampling: &SamplingDefaults,
    ) -> Result<Player, PlayerError> {
        let spec = spec.trim();
        if let Some(parts) = narrated::split_spec(spec) {
            let (decider, narrator) = parts.map_err(|message| PlayerError::spec(spec, message))?;
            let config = NarratedConfig {
                decider: decider.to_string(),
                narrator: narrator.to_string(),
                force: None,
            };
            let narrated = Narrated::from_config(spec, &config, named, http, sampling)?;
            let shown = format!(
                "{}{}+{}",
                narrated::PREFIX,
                narrated.decider.spec(),
                narrated.narrator.spec()
            );
            return Ok(Player::Narrated {
                narrated: Box::new(narrated),
                spec: shown,
            });
        }
        if let Some((model, urls)) = openai_spec(spec)? {
            let settings = sampling.fill(EndpointSettings {
                base_url: urls[0].clone(),
                model: model.to_string(),
                endpoints: if urls.len() > 1 {
                    urls.clone()
                } else {
                    Vec::new()
                },
                ..EndpointSettings::default()
            });
            let (client, replicas) = llm_client(spec, http, settings)?;
            let shown: Vec<String> = urls.iter().map(|u| without_userinfo(u)).collect();
            return Ok(Player::Llm {
                client,
                spec: format!("openai:{model}@{}", shown.join(",")),
                persona: None,
                constrain: Constrain::None,
                replicas,
            });
        }
        if let Some(name) = spec.strip_prefix("rule:") {
            let player = RulePlayer::from_name(name).ok_or_else(|| {
                PlayerError::spec(
                    spec,
                    "unknown rule (boulware, tough, linear, conceder, ina, ina-code, fixed-concession)",
                )
            })?;
            return Ok(Player::Rule {
                tactic: player,
                spec: spec.to_string(),
            });
        }
        if let Some(file) = spec.strip_prefix("script:") {
            let script = ScriptPlayer::load(&PathBuf::from(file))
                .map_err(|message| PlayerError::spec(spec, message))?;
            return Ok(Player::Script {
                script,
                spec: spec.to_string(),
            });
        }
        let Some(config) = named.get(spec) else {
            return Err(PlayerError::spec(
                spec,
                format!("neither openai:MODEL@URL, rule:NAME, script:FILE nor a [players.{spec}] table of the config"),
            ));
        };
        if let Some(narrated) = &config.narrated {
            let narrated = Narrated::from_config(spec, narrated, named, http, sampling)?;
            return Ok(Player::Narrated {
                narrated: Box::new(narrated),
                spec: spec.to_string(),
            });
        }
        if let Some(planner) = &config.planner {
            let planner = Planner::from_config(planner, http, |proposer| {
                if proposer.trim() == spec {
                    return Err(PlayerError::spec(
                        spec,
                        "a planner cannot propose with itself",
                    ));
                }
                Player::from_spec_with(proposer, named, http, sampling)
            })
            .map_err(|message| {
                PlayerError::spec(spec, format!("[players.{spec}] planner: {message}"))
            })?;
            return Ok(Player::Planner {
                planner: Box::new(planner),
                spec: spec.to_string(),
            });
        }
        let persona = match &config.persona {
            Some(name) => Some(persona::builtin(name).ok_or_else(|| {
                PlayerError::spec(spec, format!("[players.{spec}]: unknown persona `{name}`"))
            })?),
            None => None,
        };
        let (client, replicas) = llm_client(spec, http, sampling.fill(config.endpoint.clone()))?;
        Ok(Player::Llm {
            client,
            spec: spec.to_string(),
            persona,
            constrain: config.constrain,
            replicas,
        })
    }

    /// Whether the player can sit at a two-party seat written in `format`: a narrated player
    /// whose decider plays tables, or one asked to act through tools, is refused here, before
    /// any episode, naming why.
    pub(crate) fn seats_two_party(&self, format: TurnFormat) -> Result<(), PlayerError> {
        if let Player::Narrated { narrated, spec } = self {
            narrated
                .check_two_party(format)
                .map_err(|message| PlayerError::spec(spec, message))?;
        }
        Ok(())
    }

    /// The player's replicas, when it has several.
    pub fn replica_pool(&self) -> Option<&ReplicaPool> {
        match self {
            Player::Llm { replicas, .. } => replicas.as_ref(),
            Player::Narrated { narrated, .. } => narrated.narrator.replica_pool(),
            _ => None,
        }
    }

    /// The chat client of a model player (`openai:` or a `[players.NAME]` endpoint; with
    /// replicas, the first's, whatever replica the seat's turns are routed to): what a belief
    /// probe asks (`run::probes`). `None` for every other kind of player.
    pub(crate) fn chat_client(&self) -> Option<&LlmClient> {
        match self {
            Player::Llm { client, .. } => Some(client),
            _ => None,
        }
    }

    /// Whether the player's turns carry their exact token ids (an endpoint in token-exact
    /// mode): what the token formats of `export` are built from.
    pub(crate) fn token_exact(&self) -> bool {
        match self {
            Player::Llm { client, .. } => client.settings().tokens == TokenMode::Exact,
            Player::Narrated { narrated, .. } => narrated.narrator.token_exact(),
            _ => false,
        }
    }

    /// The spec as recorded: no keys, no URL credentials.
    pub(crate) fn spec(&self) -> &str {
        match self {
            Player::Llm { spec, .. }
            | Player::Rule { spec, .. }
            | Player::Script { spec, .. }
            | Player::Planner { spec, .. }
            | Player::Narrated { spec, .. } => spec,
        }
    }

    /// What identifies the player across runs: for an endpoint, the model and how it is sampled
    /// and constrained (not its URL, key or timeouts); the spec otherwise.
    pub(crate) fn identity(&self) -> String {
        match self {
            Player::Llm {
                client,
                persona,
                constrain,
                ..
            } => {
                let s = client.settings();
                // Token-exact seats are sampled another way; text seats keep their old identity.
                let exact = match s.tokens {
                    TokenMode::Exact => "|tokens=exact",
                    TokenMode::Text => "",
                };
                format!(
                    "llm:{}|t={:?}|p={:?}|max={:?}|stop={:?}|seed={:?}|logprobs={}|extra={}|{constrain:?}|persona={:?}{exact}",
                    s.model,
                    s.temperature,
                    s.top_p,
                    s.max_tokens,
                    s.stop,
                    s.seed_policy,
                    s.logprobs,
                    serde_json::Value::Object(s.extra_body.clone()),
                    persona.as_ref().map(|p| &p.name),
                )
            }
            Player::Planner { planner, .. } => planner.identity(),
            Player::Narrated { narrated, .. } => narrated.identity(),
            other => other.spec().to_string(),
        }
    }

    pub(crate) fn model(&self) -> Option<String> {
        match self {
            Player::Llm { client, .. } => Some(client.settings().model.clone()),
            Player::Planner { planner, .. } => planner.first_proposer().model(),
            Player::Narrated { narrated, .. } => narrated.narrator.model(),
            _ => None,
        }
    }

    /// Personas are for language models; built-in players have none. A planner takes one
    /// where its proposers do.
    pub(crate) fn takes_persona(&self) -> bool {
        match self {
            Player::Llm { .. } => true,
            Player::Planner { planner, .. } => planner.first_proposer().takes_persona(),
            Player::Narrated { narrated, .. } => narrated.narrator.takes_persona(),
            _ => false,
        }
    }

    /// A persona fixed by the player's config, if any.
    pub(crate) fn fixed_persona(&self) -> Option<&Persona> {
        match self {
            Player::Llm { persona, .. } => persona.as_ref(),
            Player::Planner { planner, .. } => planner.first_proposer().fixed_persona(),
            Player::Narrated { narrated, .. } => narrated.narrator.fixed_persona(),
            _ => None,
        }
    }

    /// Ask for the next completion of the seat in `ctx`, given the messages it sees.
    pub(crate) async fn play(
        &self,
        ctx: &TurnContext<'_>,
        view: &[Message],
    ) -> Result<Played, PlayerError> {
        let started = Instant::now();
        let mut replica = None;
        let (completion, call, retries) = match self {
            Player::Llm {
                client,
                constrain,
                replicas,
                ..
            } => {
                let space = ctx.scenario.term_space();
                let seat_format = ctx.setup.seats[ctx.seat].format;
                let accept = ctx.counter_offer.is_some();
                tools_seat_check(
                    self.spec(),
                    seat_format,
                    *constrain != Constrain::None,
                    client.settings().tokens,
                )?;
                let mut fields = constrain.fields(space, seat_format, accept);
                if seat_format == TurnFormat::Tools {
                    // The scenario's tools replace any `tools` of the player's extra body
                    // (its `tool_choice`, if it sets one, is sent as it is).
                    let mut tools = openai_tools(space);
                    if ctx.setup.seats[ctx.seat].acts {
                        tools =
                            crate::scenario::acts::with_act_parameter(tools, ctx.scenario.family);
                    }
                    fields.insert("tools".into(), tools);
                }
                let sequence = exact_sequence(client, ctx.own_sequence())?;
                let (answer, served) = routed_call(
                    client,
                    replicas.as_ref(),
                    ctx.seat_key(),
                    ctx.sampling_seed,
                    view,
                    sequence,
                    fields,
                )
                .await?;
                replica = served;
                let constraint = match constrain {
                    Constrain::None => None,
                    via => {
                        let cut = answer
                            .call
                            .as_ref()
                            .is_some_and(|c| c.finish_reason.as_deref() == Some("length"));
                        ConstraintCheck::of(*via, space, seat_format, accept, &answer.text, cut)
                    }
                };
                (
                    Completion {
                        text: answer.text,
                        reasoning: answer.reasoning,
                        constraint,
                        tokens: answer.tokens_record,
                        tool_calls: answer.tool_calls,
                        narration: None,
                    },
                    answer.call,
                    answer.retries,
                )
            }
            Player::Rule { tactic, .. } => (tactic.complete(&ctx.position), None, 0),
            Player::Script { script, .. } => {
                (Completion::from(script.complete(ctx.calls)?), None, 0)
            }
            // A planner's turn is its committed candidate, timed and recorded by the planner.
            // Boxed: a planner's future is large, and every other seat's would be as large.
            Player::Planner { planner, .. } => {
                return Box::pin(planner.play(&planner::TwoPartySeat { ctx, view })).await
            }
            // A narrated turn is timed by the narration, its decider's call inside it.
            Player::Narrated { narrated, .. } => return Box::pin(narrated.play(ctx, view)).await,
        };
        Ok(Played {
            completion,
            call,
            latency_ms: started.elapsed().as_millis() as u64,
            retries,
            replica,
            planning: None,
        })
    }
}

/// A seat that acts through tools (format `tools`) is neither constrained nor token-exact:
/// its model's tool calls are read as calls, not as sampled text. Refused by naming the
/// seat's spec, at a two-party seat and at a table's alike.
pub(crate) fn tools_seat_check(
    spec: &str,
    format: TurnFormat,
    constrained: bool,
    tokens: TokenMode,
) -> Result<(), PlayerError> {
    if format == TurnFormat::Tools && (constrained || tokens == TokenMode::Exact) {
        return Err(PlayerError::Spec {
            spec: spec.to_string(),
            message: "a seat that acts through tools (format `tools`) is neither \
                      constrained nor token-exact: set `constrain = \"none\"` and \
                      `tokens = \"text\"`, or give the seat a text format"
                .into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_hide_credentials() {
        let http = reqwest::Client::new();
        let named = BTreeMap::new();
        let p = Player::from_spec(
            "openai:Qwen/Qwen3-8B@http://u:secret@127.0.0.1:8000/v1",
            &named,
            &http,
        )
        .unwrap();
        assert_eq!(p.spec(), "openai:Qwen/Qwen3-8B@http://127.0.0.1:8000/v1");
        assert_eq!(p.model().as_deref(), Some("Qwen/Qwen3-8B"));
        assert!(matches!(
            Player::from_spec("rule:tough", &named, &http),
            Ok(Player::Rule { .. })
        ));
        assert!(matches!(
            Player::from_spec("rule:nope", &named, &http),
            Err(PlayerError::Spec { .. })
        ));
        assert!(matches!(
            Player::from_spec("gpt", &named, &http),
            Err(PlayerError::Spec { .. })
        ));
        assert!(matches!(
            Player::from_spec("openai:m", &named, &http),
            Err(PlayerError::Spec { .. })
        ));
        assert!(p.replica_pool().is_none());
        // A URL no call can use is refused naming it, credentials left out.
        let e = Player::from_spec(
            "openai:m@http://u:secret@127.0.0.1:8000/v1,http://v:secret@127.0.0.1:99999/v1",
            &named,
            &http,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "player `openai:m@http://127.0.0.1:8000/v1,http://127.0.0.1:99999/v1`: endpoints[1] \
             `http://127.0.0.1:99999/v1` is not an http(s) URL: invalid port number"
        );
    }

    #[test]
    fn a_spec_with_several_urls_is_a_pool_of_replicas() {
        let http = reqwest::Client::new();
        let named = BTreeMap::new();
        let p = Player::from_spec(
            "openai:m@http://u:secret@h1:8000/v1, http://h2:8000/v1",
            &named,
            &http,
        )
        .unwrap();
        assert_eq!(p.spec(), "openai:m@http://h1:8000/v1,http://h2:8000/v1");
        let pool = p.replica_pool().expect("two URLs make a pool");
        assert_eq!(pool.len(), 2);
        let shown: Vec<String> = pool
            .report()
            .replicas
            .into_iter()
            .map(|r| r.endpoint)
            .collect();
        assert_eq!(shown, ["http://h1:8000/v1", "http://h2:8000/v1"]);
        assert!(matches!(
            Player::from_spec("openai:m@http://h1/v1,h2:8000", &named, &http),
            Err(PlayerError::Spec { .. })
        ));
    }

    #[test]
    fn a_player_table_takes_endpoint_or_endpoints_not_both() {
        let table = |extra: &str| {
            serde_json::from_str::<PlayerConfig>(&format!(r#"{{"model": "m"{extra}}}"#))
        };
        let both = table(r#", "endpoint": "http://a/v1", "endpoints": ["http://b/v1"]"#)
            .unwrap_err()
            .to_string();
        assert!(both.contains("not both"), "{both}");
        let none = table("").unwrap_err().to_string();
        assert!(none.contains("`endpoints`"), "{none}");
        let pool = table(
            r#", "endpoints": ["http://b/v1", "http://c/v1"], "routing": "least_loaded", "max_in_flight_per_replica": 4"#,
        )
        .unwrap();
        assert_eq!(pool.endpoint.endpoints.len(), 2);
        assert_eq!(pool.endpoint.routing, crate::llm::Routing::LeastLoaded);
        let http = reqwest::Client::new();
        let named = BTreeMap::from([("q".to_string(), pool)]);
        let player = Player::from_spec("q", &named, &http).unwrap();
        assert_eq!(player.replica_pool().map(|p| p.len()), Some(2));
        // The first replica stands for the player where one URL is needed.
        match &player {
            Player::Llm { client, .. } => assert_eq!(client.settings().base_url, "http://b/v1"),
            other => panic!("not an LLM player: {other:?}"),
        }
    }
}
