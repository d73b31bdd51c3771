//! The server's wire format: every message it sends and the action it takes, one type each,
//! shared by OpenEnv's WebSocket and HTTP routes ([`super::openenv`]), the native REST routes
//! ([`super::rest`]) and the rollout stream ([`super::rollouts`]). `GET /schema` is derived
//! from these types ([`openenv_schema`]), so the schema a client reads is the format it gets.
//!
//! Every message is written through [`to_json`]: its keys sorted at every level, as the server
//! has always written them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use schemars::generate::{Contract, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::session::Sampled;
use super::table_rest::TableObservation;
use crate::game::{Completion, Message, PerSeat, Seat, ToolCall};
use crate::observation::SeatState;
use crate::record::{EpisodeRecord, RecordOutcome};
use crate::scenario::{Family, Role};
use crate::vocab::Drift;

/// A message as the server writes it: through a `serde_json::Value`, whose objects keep their
/// keys sorted (serde_json is built without `preserve_order`). That is the order clients have
/// always been sent, at every level, whatever order a type declares its fields in.
pub(super) fn to_json<T: Serialize>(message: &T) -> Value {
    serde_json::to_value(message).expect("the server's messages have string keys only")
}

/// An HTTP answer: a message with its status (200 unless said otherwise).
pub(super) struct Reply<T>(pub StatusCode, pub T);

impl<T> Reply<T> {
    pub fn ok(message: T) -> Reply<T> {
        Reply(StatusCode::OK, message)
    }
}

impl<T: Serialize> IntoResponse for Reply<T> {
    fn into_response(self) -> Response {
        (self.0, Json(to_json(&self.1))).into_response()
    }
}

/// The action a client sends for the seat to move (OpenEnv's `Action`; the body of a REST
/// step): the raw completion, and for self-play the seat it is for.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "DealAction")]
pub(super) struct Action {
    /// The raw completion (Thought/Talk/Action), as the model wrote it.
    pub message: String,
    /// For self-play: the seat this completion is for; default the seat to move.
    #[serde(default)]
    pub seat: Option<Seat>,
    /// The model's separate reasoning, if the endpoint returned it apart.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// Token-exact mode: the ids the model sampled after the observation's `token_ids`.
    #[serde(default)]
    pub completion_ids: Option<Vec<u32>>,
    /// Token-exact mode: the sampling logprob of each completion id.
    #[serde(default)]
    pub logprobs: Option<Vec<f64>>,
    /// Token-exact mode: why sampling stopped (`stop`, `length`).
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// A seat acting through tools (the `learner_format = "tools"` rule): the calls the model
    /// made, as a chat completion's message holds them; `message` is its text beside them.
    #[serde(default)]
    #[schemars(with = "Option<Vec<ToolCall>>")]
    pub tool_calls: Option<Vec<Value>>,
    /// OpenEnv's base `Action` field; accepted and ignored.
    #[serde(default)]
    #[allow(dead_code)]
    pub metadata: Option<Value>,
}

impl Action {
    /// The completion, and what the client sampled (token-exact mode).
    pub fn completion(self) -> (Completion, Sampled) {
        (
            Completion {
                text: self.message,
                reasoning: self.reasoning,
                tool_calls: self
                    .tool_calls
                    .unwrap_or_default()
                    .iter()
                    .enumerate()
                    .map(|(i, call)| ToolCall::read(call, i))
                    .collect(),
                ..Completion::default()
            },
            Sampled {
                completion_ids: self.completion_ids,
                logprobs: self.logprobs,
                finish_reason: self.finish_reason,
            },
        )
    }
}

/// What a reset or a step answers (OpenEnv's `ResetResponse` / `StepResponse`): what the seat
/// sees, its reward and whether the episode is over.
/// At a table OpenEnv plays, the observation is the client's seat's
/// ([`TableObservation`](super::table_rest::TableObservation)).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StepAnswer<O = Observation> {
    pub observation: O,
    /// `null` on a reset, as OpenEnv's reward is before any step (a reset whose episode ended
    /// before the client's first turn gives the seat's total); after a step, 0 until the
    /// episode ends, then the seat's total reward.
    pub reward: Option<f64>,
    pub done: bool,
}

/// What a seat sees, with everything a learner needs inside (OpenEnv drops a step's
/// `metadata`). How far the episode has gone is `state.turns` (attempts of both seats, the
/// seat's own moves, moves and retries left); what became of the seat's last completion is
/// `state.last_turn`, its terms in currency units like every term the seat sees.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "DealObservation")]
pub struct Observation {
    /// The last message the seat is to answer.
    pub prompt: String,
    /// The seat's whole conversation so far (its system prompt first).
    pub messages: Vec<Message>,
    /// The seat this observation is for.
    pub seat: Seat,
    /// The seat's role in the scenario.
    pub role: Role,
    /// The seat to move next; `null` once the episode is over.
    pub to_move: Option<Seat>,
    pub done: bool,
    /// The answer's `reward` again (OpenEnv reads it here too): `null` on a reset, after a step
    /// 0 until the episode ends, then the seat's total reward.
    pub reward: Option<f64>,
    /// Token-exact mode (the `tokens` reset kwarg): what to append before sampling.
    pub token_ids: Option<TokenIds>,
    pub info: Info,
    /// The seat's structured view beside its messages: the offer on the table from its side,
    /// its own values, turns left, the rules that end the game, the legal moves
    /// ([`Episode::seat_state`](crate::game::Episode::seat_state), the Python binding's too).
    pub state: SeatState,
}

/// What a reset or a step of OpenEnv answers: a two-party episode's seat (written as it always
/// was), or the seat its client plays at a table.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)]
pub(super) enum Observed {
    Episode(StepAnswer),
    Table(StepAnswer<TableObservation>),
}

/// Token-exact mode: the ids the client appends to the seat's sequence before it samples.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TokenIds {
    /// The prompt ids after the seat's sequence so far (the whole prompt on its first turn).
    pub prompt_ids: Vec<u32>,
    /// Where a full re-render of the conversation parted from the exact sequence, if it did.
    pub drift: Option<Drift>,
}

/// The episode around an observation.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Info {
    pub episode_id: String,
    pub scenario_id: String,
    pub family: Family,
    /// The outcome with its metrics, once the episode has ended.
    pub outcome: Option<RecordOutcome>,
    /// Both seats' total rewards, once the episode has ended.
    pub rewards: Option<PerSeat<f64>>,
}

/// Where an episode stands (OpenEnv's `State`). A fresh environment, with no episode yet, has
/// the id and the step count alone.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "DealState")]
pub struct EnvState {
    /// `null` before a reset.
    pub episode_id: Option<String>,
    /// Steps this episode's clients have sent that the server played (OpenEnv's
    /// `step_count`): one per completion a client sent, retries included; the in-process
    /// opponent's turns and refused steps are not counted. The turns of the negotiation are
    /// the observation's `state.turns`.
    pub step_count: u32,
    #[serde(flatten)]
    pub episode: Option<EpisodeState>,
}

impl EnvState {
    /// The state of an environment with no episode.
    pub fn fresh() -> EnvState {
        EnvState {
            episode_id: None,
            step_count: 0,
            episode: None,
        }
    }
}

/// Where a live or ended episode stands.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EpisodeState {
    pub scenario_id: String,
    pub family: Family,
    /// The seat to move next; `null` once the episode is over.
    pub to_move: Option<Seat>,
    pub done: bool,
    /// The outcome with its metrics, once the episode has ended.
    pub outcome: Option<RecordOutcome>,
    /// Both seats' total rewards, once the episode has ended.
    pub rewards: Option<PerSeat<f64>>,
}

/// A reply on OpenEnv's WebSocket: `{"type": …, "data": …}`. Built once per message and
/// written at once, so its variants' sizes do not matter.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[allow(clippy::large_enum_variant)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub(super) enum WsReply {
    /// After a reset or a step.
    Observation(Observed),
    State(EnvState),
    /// The JSON-RPC answer to an `mcp` message.
    Mcp(Value),
    Error(WsError),
}

/// A refused WebSocket message (OpenEnv's `WSErrorResponse` data).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(super) struct WsError {
    pub message: String,
    /// OpenEnv's `WSErrorCode`.
    pub code: &'static str,
}

/// A refused HTTP request: `{"error": {"code", "message"}}`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(super) struct RestError {
    pub error: RestFault,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(super) struct RestFault {
    /// One code per kind of refusal (`UNKNOWN_EPISODE`, `WRONG_SEAT`, …).
    pub code: &'static str,
    pub message: String,
}

/// A REST reset or step (`POST /v1/episodes`, `POST /v1/episodes/{id}/step`): OpenEnv's
/// answer, with the episode's id and the seat to move beside it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(super) struct EpisodeStep {
    pub episode_id: String,
    /// The creator's secret: only in the answer that made the episode. Dropping it (`DELETE`)
    /// takes it in the `x-seat-token` header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub episode_token: Option<String>,
    /// The seat to move next; `null` once the episode is over.
    pub to_move: Option<Seat>,
    #[serde(flatten)]
    pub step: StepAnswer,
}

/// `GET /v1/episodes/{id}`: where the episode stands and what the seat to move sees.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(super) struct EpisodeView {
    pub state: EnvState,
    pub observation: Observation,
}

/// `GET /health` (OpenEnv's `HealthResponse`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(super) struct Health {
    pub status: HealthStatus,
}

#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum HealthStatus {
    Healthy,
}

/// `GET /metadata` (OpenEnv's `EnvironmentMetadata`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(super) struct Metadata {
    pub name: &'static str,
    pub description: &'static str,
    pub version: &'static str,
    pub author: Option<String>,
    pub documentation_url: Option<String>,
    pub readme_content: Option<String>,
}

/// A line of the rollout stream that is not a record: an episode or a group that could not be
/// played or written.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(super) struct StreamError {
    pub error: StreamFault,
}

impl StreamError {
    pub fn episode(episode_id: String, message: String) -> StreamError {
        StreamError {
            error: StreamFault::Episode {
                episode_id,
                message,
            },
        }
    }

    pub fn group(group: &[EpisodeRecord], message: String) -> StreamError {
        StreamError {
            error: StreamFault::Group {
                group_id: group.first().map(|r| r.group_id.clone()),
                message,
            },
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub(super) enum StreamFault {
    /// One episode failed (a panic, or the log refused its record).
    Episode { episode_id: String, message: String },
    /// A finished group could not be exported; `group_id` is `null` for an empty group.
    Group {
        group_id: Option<String>,
        message: String,
    },
}

/// OpenEnv's `GET /schema` (its `SchemaResponse`): the action a client sends, the
/// observation and the state it reads, each derived from its type here — the action as it is
/// read, the others as they are written.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(super) struct OpenEnvSchema {
    pub action: Schema,
    pub observation: Schema,
    pub state: Schema,
}

impl OpenEnvSchema {
    pub fn derived() -> OpenEnvSchema {
        OpenEnvSchema {
            action: schema_of::<Action>(Contract::Deserialize),
            observation: schema_of::<Observation>(Contract::Serialize),
            state: schema_of::<EnvState>(Contract::Serialize),
        }
    }
}

/// The schema of `T` as pydantic writes a model's (no `$schema` key; the types it uses under
/// `$defs`), which is what OpenEnv's own servers answer.
fn schema_of<T: JsonSchema>(contract: Contract) -> Schema {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.contract = contract;
            s.meta_schema = None;
        })
        .into_generator()
        .into_root_schema_for::<T>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, price};
    use crate::game::{Episode, MessageRole};

    /// The buyer's state at the start of the fixture's price task.
    fn state() -> SeatState {
        let s = price();
        Episode::new(s.clone(), learner_first_as(&s, Role::Buyer))
            .expect("episode")
            .seat_state(Seat::Learner)
    }

    fn observation() -> Observation {
        Observation {
            prompt: "Hello".into(),
            messages: vec![Message::new(MessageRole::User, "Hello")],
            seat: Seat::Learner,
            role: Role::Buyer,
            to_move: Some(Seat::Learner),
            done: false,
            reward: None,
            token_ids: None,
            info: Info {
                episode_id: "s0".into(),
                scenario_id: "ahp:x:0".into(),
                family: Family::Ahp,
                outcome: None,
                rewards: None,
            },
            state: state(),
        }
    }

    /// The bytes clients have always been sent: keys sorted at every level (the struct
    /// declares them in another order), `null` written for what is absent.
    #[test]
    fn messages_are_written_with_their_keys_sorted() {
        let step = StepAnswer {
            observation: observation(),
            reward: None,
            done: false,
        };
        let rest = EpisodeStep {
            episode_id: "s0".into(),
            episode_token: None,
            to_move: Some(Seat::Learner),
            step,
        };
        let mut written = to_json(&rest);
        let state = written["observation"]
            .as_object_mut()
            .and_then(|o| o.remove("state"));
        assert_eq!(state, Some(to_json(&self::state())));
        assert_eq!(
            written.to_string(),
            r#"{"done":false,"episode_id":"s0","observation":{"done":false,"info":{"episode_id":"s0","family":"ahp","outcome":null,"rewards":null,"scenario_id":"ahp:x:0"},"messages":[{"content":"Hello","role":"user"}],"prompt":"Hello","reward":null,"role":"buyer","seat":"learner","to_move":"learner","token_ids":null},"reward":null,"to_move":"learner"}"#
        );
        assert_eq!(
            to_json(&WsReply::State(EnvState::fresh())).to_string(),
            r#"{"data":{"episode_id":null,"step_count":0},"type":"state"}"#
        );
        let error = WsReply::Error(WsError {
            message: "no".into(),
            code: "SESSION_ERROR",
        });
        assert_eq!(
            to_json(&error).to_string(),
            r#"{"data":{"code":"SESSION_ERROR","message":"no"},"type":"error"}"#
        );
    }

    /// What OpenEnv's clients read in `/schema` before it was derived: the same three schemas,
    /// titles, fields and required action field.
    #[test]
    fn the_derived_schema_keeps_openenvs_fields() {
        let schema = to_json(&OpenEnvSchema::derived());
        let keys = |part: &str| -> Vec<String> {
            let mut keys: Vec<String> = schema[part]["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            keys.sort();
            keys
        };
        assert_eq!(
            keys("action"),
            [
                "completion_ids",
                "finish_reason",
                "logprobs",
                "message",
                "metadata",
                "reasoning",
                "seat",
                "tool_calls"
            ]
        );
        assert_eq!(schema["action"]["required"], serde_json::json!(["message"]));
        assert_eq!(schema["action"]["additionalProperties"], false);
        assert_eq!(
            keys("observation"),
            [
                "done",
                "info",
                "messages",
                "prompt",
                "reward",
                "role",
                "seat",
                "state",
                "to_move",
                "token_ids"
            ]
        );
        assert_eq!(
            keys("state"),
            [
                "done",
                "episode_id",
                "family",
                "outcome",
                "rewards",
                "scenario_id",
                "step_count",
                "to_move"
            ]
        );
        for (part, title) in [
            ("action", "DealAction"),
            ("observation", "DealObservation"),
            ("state", "DealState"),
        ] {
            assert_eq!(schema[part]["title"], title);
            assert!(schema[part].get("$schema").is_none(), "{part}");
        }
        // A fresh environment's state has the two keys the schema requires, and no more.
        assert_eq!(
            schema["state"]["required"],
            serde_json::json!(["episode_id", "step_count"])
        );
    }
}
