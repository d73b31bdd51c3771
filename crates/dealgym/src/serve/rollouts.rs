//! The rollout service: `POST /v1/rollouts` plays whole episodes against the caller's
//! OpenAI-compatible endpoint (the learner) and the server's opponent, and streams each back as
//! one JSON line as soon as it ends. Episodes run through `run`'s driver with the endpoint's
//! retries; a failed call is an `error` record, as in `run`. All requests share one budget of
//! episodes in flight (`--concurrency`): each request waits for one permit at a time on a FIFO
//! semaphore, so concurrent requests take turns; an episode holds its permit while it plays,
//! not while a call waits between tries nor once it has ended and waits for its reader (each
//! request keeps at most `--concurrency` episodes alive), so neither a dead endpoint's retries
//! nor a slow reader starve another request. `format` is `records` (default, each episode as
//! it ends) or any `dealgym export` format (each GRPO group once it has ended). A client that disconnects drops the stream,
//! which aborts its outstanding episodes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use indicatif::ProgressBar;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::error::ServeError;
use super::ids::rollout_tag;
use super::openapi::Routes;
use super::session::ResetArgs;
use super::wire::{to_json, StreamError};
use super::{parse_body, Shared};
use crate::agents::{Player, PlayerConfig};
use crate::export;
use crate::game::Prompts;
use crate::limits::{
    check_count, check_episodes, MAX_GROUP_SIZE, MAX_REQUEST_EPISODES, STREAM_STALL_SECONDS,
};
use crate::record::{EpisodeRecord, RecordWriter};
use crate::run::{
    execute, plan, AbortOnDrop, Done, EpisodeError, Permits, ScenarioSource, SeatPlayer, Sink,
    Stop, StopSignal,
};
use crate::scenario::{Family, Scenario};

pub(super) fn routes() -> Routes {
    Routes::new().post("/v1/rollouts", rollouts)
}

/// Which scenarios: ids, or a count from a family (or several).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Selection {
    Ids(Vec<String>),
    Family(FamilyCount),
    Families(Vec<FamilyCount>),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FamilyCount {
    family: Family,
    count: usize,
    /// The first scenario of the family to take (default 0).
    #[serde(default)]
    offset: usize,
}

/// The learner: one of the server's `[players.NAME]`, or the caller's policy server (an
/// endpoint the operator allows with `--allow-endpoint`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Learner {
    Named(String),
    Endpoint(LearnerEndpoint),
}

/// The caller's policy server.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LearnerEndpoint {
    endpoint: String,
    model: String,
    /// temperature, top_p, max_tokens, stop, extra_body, … (a `[players.NAME]` table's keys).
    #[serde(default)]
    sampling: serde_json::Map<String, Value>,
    /// `text` (default) or `exact` (token-exact: records carry the exact ids and logprobs).
    #[serde(default)]
    tokens: Option<Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RolloutRequest {
    scenarios: Selection,
    #[serde(default = "one")]
    group_size: u64,
    #[serde(default)]
    seed: u64,
    learner: Learner,
    #[serde(default)]
    opponent: Option<String>,
    /// `records` (default): one episode record per line; or a `dealgym export` format.
    #[serde(default)]
    format: Option<String>,
    /// Overrides of the `[episode]` rules (learner_role, first_mover, max_rounds, …).
    #[serde(default)]
    rules: Option<serde_json::Map<String, Value>>,
}

fn one() -> u64 {
    1
}

async fn rollouts(State(state): State<Shared>, body: Result<Bytes, BytesRejection>) -> Response {
    match start(state, body).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn start(state: Shared, body: Result<Bytes, BytesRejection>) -> Result<Response, ServeError> {
    let hub = &state.hub;
    let request: RolloutRequest = parse_body(body, hub.options.body_limit)?;
    let format = Format::named(request.format.as_deref())?;
    let group_size = check_count("group_size", request.group_size, 1, MAX_GROUP_SIZE)
        .map_err(ServeError::Validation)?;
    let scenarios = select(&state, &request.scenarios)?;
    let rules = hub.rules(&ResetArgs {
        rules: request.rules.clone(),
        ..ResetArgs::default()
    })?;
    check_episodes(
        &[
            (
                (scenarios.len() * rules.seatings.count()) as u64,
                rules.seatings.groups(),
            ),
            (group_size, "members per group"),
        ],
        MAX_REQUEST_EPISODES,
    )
    .map_err(|e| ServeError::Validation(format!("{e} by one request: split it")))?;
    let learner = learner_player(&state, &request.learner)?;
    // A token format of a learner that plays in text would stream nothing at all: say so now,
    // not with an empty 200.
    if let Format::Export(f) = format {
        if f.needs_tokens() && !learner.token_exact() {
            return Err(ServeError::Validation(format!(
                "format `{f}` is built from the learner's exact token ids, which a learner in text mode has none of: give the learner `\"tokens\": \"exact\"` (an endpoint with /tokenize), or ask for `records`, `messages` or `prompt-completion`"
            )));
        }
    }
    let opponent = request
        .opponent
        .clone()
        .unwrap_or_else(|| hub.options.opponent.clone());
    hub.options
        .policy
        .opponent(&opponent, &hub.options.opponent, &hub.options.players)?;
    if opponent == super::EXTERNAL {
        return Err(ServeError::Validation(
            "the rollout service plays the opponent itself: name a rule, script or configured player".into(),
        ));
    }
    let kit = hub.build_kit(
        crate::game::PerSeat::new(
            SeatPlayer::Local(learner),
            hub.opponent_player(&opponent, &rules)?,
        ),
        &rules,
    )?;
    let todo = plan(
        &scenarios,
        request.seed,
        group_size as u32,
        kit.episode.seatings,
    );
    let planned = todo.len();
    // This request's episodes and groups carry its tag, unique in the log: no two requests
    // (nor two lifetimes of the server on one log) share an episode id or a GRPO group.
    let tag = rollout_tag(hub.ids())?;

    // A trainer format replays each record on the scenario and the templates it was played
    // with: the server's own, as loaded (never its scenario files read again, among which a
    // table file or a file changed since the start would fail every group after it was played).
    let lookup = ScenarioSource::loaded(scenarios.iter().cloned(), &hub.options.scenarios);

    let (tx, rx) = mpsc::channel::<Bytes>(64);
    // A request alone may use the whole budget; its ended episodes wait for its reader
    // holding none of it (at most `--concurrency` of them alive at once).
    let permits = Permits {
        shared: state.rollout_permits.clone(),
        most: hub.options.concurrency,
    };
    let mut sink = StreamSink {
        tx,
        state: state.clone(),
        format,
        lookup,
        groups: HashMap::new(),
        group_size: group_size as usize,
        ended: false,
    };
    // The server's shutdown drains the request: no new episode, those in flight finish.
    let (stop, handle) = Stop::manual();
    let mut shutdown = state.shutdown.clone();
    let header_tag = tag.clone();
    let tag: Arc<str> = Arc::from(tag);
    let todo = todo
        .into_iter()
        .map(move |planned| (kit.clone(), planned.tagged(&tag)));
    let producer = tokio::spawn(async move {
        let on_shutdown = async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
            handle.signal(StopSignal::Requested);
            std::future::pending::<()>().await
        };
        let bar = ProgressBar::hidden();
        tokio::select! {
            _ = execute(todo, permits, &mut sink, &bar, stop) => {}
            _ = on_shutdown => {}
        }
        sink.name_unfinished_groups().await;
    });
    // The request's episodes end with its stream: the client went away, or it was sent whole.
    let guard = AbortOnDrop(producer);
    let stream = futures_util::stream::unfold((rx, guard), |(mut rx, guard)| async move {
        rx.recv()
            .await
            .map(|line| (Ok::<_, std::io::Error>(line), (rx, guard)))
    });
    Ok((
        [
            (CONTENT_TYPE, "application/x-ndjson".to_string()),
            (
                axum::http::HeaderName::from_static("x-dealgym-episodes"),
                planned.to_string(),
            ),
            (
                axum::http::HeaderName::from_static("x-dealgym-request"),
                header_tag,
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// A rollout request's stream as the executor's sink: each record logged, then written to the
/// client as a record or, per GRPO group once the group has ended, in a trainer format. An
/// episode that could not be played is an error line and the request goes on; one that cannot
/// be logged ends the request (named on the stream), as a failed write ends a run; so does a
/// client that takes no line for [`STREAM_STALL_SECONDS`], so it holds none of the rollout
/// permits all requests share.
struct StreamSink {
    tx: mpsc::Sender<Bytes>,
    state: Shared,
    format: Format,
    /// The request's scenarios, for a trainer format's replay of each record.
    lookup: ScenarioSource,
    groups: HashMap<String, Vec<EpisodeRecord>>,
    group_size: usize,
    /// The stream has ended early: nothing more is logged or sent.
    ended: bool,
}

impl StreamSink {
    /// Groups that never filled (a member could not be played; its error line is on the
    /// stream) are not exported, as a group format needs every member: each is named on a line
    /// of its own rather than dropped unsaid.
    async fn name_unfinished_groups(&mut self) {
        if self.ended {
            return;
        }
        let mut groups: Vec<_> = self.groups.drain().collect();
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, group) in groups {
            let message = format!(
                "group `{id}` ended with {} of its {} members (the others could not be played: see their error lines), so it was not exported; ask for `records` to keep every episode",
                group.len(),
                self.group_size
            );
            let text = line(&StreamError::group(&group, message));
            if self.tx.send(Bytes::from(text)).await.is_err() {
                return;
            }
        }
    }
}

/// A request's stream ended early: an episode could not be logged (said on the stream), or
/// the client went away or stalled.
struct StreamEnded;

impl Sink for StreamSink {
    type Error = StreamEnded;

    async fn take(
        &mut self,
        episode: String,
        played: Result<Done, EpisodeError>,
    ) -> Result<(), StreamEnded> {
        if self.ended {
            return Err(StreamEnded);
        }
        let text = match played {
            // A panic is an `error` record on the stream (the 200 is sent already); a driver
            // that could not play the episode at all is an error line naming it.
            Err(e) => line(&StreamError::episode(episode, e.to_string())),
            // A rollout request plans two-party episodes only.
            Ok(Done::Table(finished)) => line(&StreamError::episode(
                finished.record.episode_id,
                "a rollout request plays two-party episodes".to_string(),
            )),
            Ok(Done::Market(finished)) => line(&StreamError::episode(
                finished.record.episode_id,
                "a rollout request plays two-party episodes".to_string(),
            )),
            Ok(Done::Episode(finished)) => {
                let record = finished.record;
                if let Err(e) = self.state.hub.log(&record) {
                    let text = line(&StreamError::episode(record.episode_id, e.to_string()));
                    let _ = self.tx.send(Bytes::from(text)).await;
                    self.ended = true;
                    return Err(StreamEnded);
                }
                match self.format {
                    Format::Records => line(&record),
                    Format::Export(f) => {
                        let key = record.group_id.clone();
                        let group = self.groups.entry(key.clone()).or_default();
                        group.push(record);
                        if group.len() < self.group_size {
                            return Ok(());
                        }
                        let group = self.groups.remove(&key).unwrap_or_default();
                        let prompts = &self.state.hub.options.prompts;
                        export_group(&group, f, &mut self.lookup, prompts)
                    }
                }
            }
        };
        let stall = std::time::Duration::from_secs(STREAM_STALL_SECONDS);
        match tokio::time::timeout(stall, self.tx.send(Bytes::from(text))).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) | Err(_) => {
                self.ended = true;
                Err(StreamEnded)
            }
        }
    }
}

/// How each finished episode is written on the stream.
#[derive(Debug, Clone, Copy)]
enum Format {
    /// One record per line, as soon as the episode ends.
    Records,
    /// A trainer format of `dealgym export`, written per GRPO group once the whole group has
    /// ended (its lines carry the group's statistics and advantages).
    Export(export::Format),
}

impl Format {
    fn named(name: Option<&str>) -> Result<Format, ServeError> {
        match name.unwrap_or("records") {
            "records" => Ok(Format::Records),
            // Any case, as the format names were always read here.
            other => other
                .to_ascii_lowercase()
                .parse::<export::Format>()
                // A rollout request plays single episodes: no campaign to write.
                .ok()
                .filter(|f| *f != export::Format::Campaigns)
                .map(Format::Export)
                .ok_or_else(|| {
                    ServeError::Validation(format!(
                        "unknown format `{other}`: records, messages, prompt-completion, verl, trl-rollout, tinker or transitions"
                    ))
                }),
        }
    }
}

/// One line of the stream: a record or a [`StreamError`], as the server writes every message
/// ([`to_json`]).
fn line<T: Serialize>(message: &T) -> String {
    let mut text = to_json(message).to_string();
    text.push('\n');
    text
}

/// A finished group in an export format, through `export`'s own writer (it reads record files,
/// so the group goes through a temporary one), its records replayed on `scenarios` with
/// `prompts`.
fn export_group(
    group: &[EpisodeRecord],
    format: export::Format,
    scenarios: &mut ScenarioSource,
    prompts: &Arc<Prompts>,
) -> String {
    // Created new and private (no other user can plant a file or a link at its name), and
    // removed when dropped.
    let file = match tempfile::Builder::new()
        .prefix("dealgym-rollout-")
        .suffix(".jsonl")
        .tempfile()
    {
        Ok(file) => file,
        Err(e) => {
            return line(&StreamError::group(
                group,
                format!("a temporary file for the group: {e}"),
            ))
        }
    };
    let path = file.path().to_path_buf();
    let result = (|| -> Result<Vec<u8>, String> {
        let mut writer = RecordWriter::append(&path).map_err(|e| e.to_string())?;
        for record in group {
            writer.write(record).map_err(|e| e.to_string())?;
        }
        drop(writer);
        let options = export::ExportOptions::new(vec![path.clone()], format);
        let mut out = Vec::new();
        export::export_episodes(&options, scenarios, prompts, &mut out)
            .map_err(|e| e.to_string())?;
        Ok(out)
    })();
    drop(file);
    match result {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(message) => line(&StreamError::group(group, message)),
    }
}

fn select(state: &Shared, selection: &Selection) -> Result<Vec<Arc<Scenario>>, ServeError> {
    let catalog = &state.hub.catalog;
    // The counts are added up before a scenario is picked: a body listing many parts is
    // refused before any is built.
    let parts: &[FamilyCount] = match selection {
        Selection::Family(fc) => std::slice::from_ref(fc),
        Selection::Families(list) => list,
        Selection::Ids(_) => &[],
    };
    let total = parts
        .iter()
        .fold(0u64, |sum, fc| sum.saturating_add(fc.count as u64));
    if total > MAX_REQUEST_EPISODES {
        return Err(ServeError::Validation(format!(
            "the scenarios asked for add up to {total}; a request plans at most {MAX_REQUEST_EPISODES} episodes"
        )));
    }
    let from_family = |fc: &FamilyCount| -> Result<Vec<Arc<Scenario>>, ServeError> {
        let end = fc.offset.checked_add(fc.count).ok_or_else(|| {
            ServeError::Validation(format!("offset {} is past every scenario", fc.offset))
        })?;
        (fc.offset..end)
            .map(|i| {
                catalog
                    .pick(None, Some(fc.family), Some(i), 0)
                    .map(|at| catalog.scenarios[at].clone())
                    .map_err(ServeError::from)
            })
            .collect()
    };
    let scenarios = match selection {
        Selection::Ids(ids) => ids
            .iter()
            .map(|id| {
                catalog
                    .pick(Some(id), None, None, 0)
                    .map(|at| catalog.scenarios[at].clone())
                    .map_err(ServeError::from)
            })
            .collect::<Result<Vec<_>, _>>()?,
        Selection::Family(fc) => from_family(fc)?,
        Selection::Families(list) => {
            let mut all = Vec::new();
            for fc in list {
                all.extend(from_family(fc)?);
            }
            all
        }
    };
    if scenarios.is_empty() {
        return Err(ServeError::Validation("no scenarios selected".into()));
    }
    Ok(scenarios)
}

fn learner_player(state: &Shared, learner: &Learner) -> Result<Player, ServeError> {
    let options = &state.hub.options;
    let learner = match learner {
        Learner::Named(name) => {
            if !options.players.contains_key(name) {
                let known = options.players.keys().cloned().collect::<Vec<_>>();
                return Err(ServeError::Validation(if known.is_empty() {
                    format!(
                        "learner: `{name}` names a [players.NAME] of the server's config, and it has none: give the learner's endpoint and model instead"
                    )
                } else {
                    format!(
                        "learner: `{name}` is none of the server's [players.NAME] ({})",
                        known.join(", ")
                    )
                }));
            }
            // A narrated table (the operator's) must decide a two-party seat.
            return Player::from_spec_with(
                name,
                &options.players,
                state.hub.http(),
                &options.sampling.learner,
            )
            .and_then(|p| {
                p.seats_two_party(options.episode.learner_format)
                    .map(|()| p)
            })
            .map_err(|e| ServeError::Validation(format!("learner: {e}")));
        }
        Learner::Endpoint(endpoint) => endpoint,
    };
    options.policy.endpoint("learner", &learner.endpoint)?;
    let mut table = learner.sampling.clone();
    table.insert("endpoint".into(), json!(learner.endpoint));
    table.insert("model".into(), json!(learner.model));
    if let Some(tokens) = &learner.tokens {
        table.insert("tokens".into(), tokens.clone());
    }
    if table.contains_key("api_key_env") {
        return Err(ServeError::Forbidden(
            "learner: `api_key_env` would send one of the server's secrets; name a [players.NAME] of the server's config instead".into(),
        ));
    }
    if table.contains_key("planner") {
        return Err(ServeError::Forbidden(
            "learner: a `planner` names players and a value model for the server to call; it is the operator's to set (a [players.NAME] of the server's config)".into(),
        ));
    }
    if table.contains_key("decider") || table.contains_key("narrator") {
        return Err(ServeError::Forbidden(
            "learner: a narrated player (`decider`, `narrator`) names players for the server to call; it is the operator's to set (a [players.NAME] of the server's config)".into(),
        ));
    }
    if table.contains_key("health_path") {
        return Err(ServeError::Forbidden(
            "learner: `health_path` is the operator's to set (a [players.NAME] of the server's config)".into(),
        ));
    }
    let mut config: PlayerConfig = serde_json::from_value(Value::Object(table))
        .map_err(|e| ServeError::Validation(format!("learner: {e}")))?;
    options
        .policy
        .call_times("learner", &learner.sampling, &mut config.endpoint)?;
    // Replicas are endpoints the server calls too.
    for url in &config.endpoint.endpoints {
        options.policy.endpoint("learner", url)?;
    }
    let named = BTreeMap::from([("learner".to_string(), config)]);
    Player::from_spec_with(
        "learner",
        &named,
        state.hub.http(),
        &state.hub.options.sampling.learner,
    )
    .map_err(|e| ServeError::Validation(format!("learner: {e}")))
}
