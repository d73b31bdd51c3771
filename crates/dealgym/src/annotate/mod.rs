//! `dealgym annotate`: give every turn a person played (a seat whose player is
//! `human:<dialogue id>`) the private reasoning that led to it, written by a model, so the
//! people's own negotiations become Thought / Talk / Action data for supervised fine-tuning.
//!
//! For each such turn the model is shown the speaker's own brief (the system prompt the engine
//! renders for that seat: its private values, never the other seat's), the dialogue so far
//! from the speaker's side and the move the person then took (`prompt.rs`), and must answer in
//! a strict format whose move is that move (`answer.rs`): a thought may lead to the person's
//! action, never contradict it. An unusable answer leaves the Thought empty and is counted by
//! its reason, never guessed. The thought becomes part of the turn's canonical raw completion
//! (`apply.rs`), checked by replaying the record, so `replay --verify` passes on the output as
//! on the input; each annotated turn records `annotation = {model, template, unusable?}`.
//!
//! Like `run`: bounded concurrency (requests in flight), the client's retries and timeouts,
//! the records written whole as episodes finish with run's writer, `--resume` skipping the
//! episodes already in the output, SIGINT/SIGTERM handled by run's [`Stop`]. Answers are kept
//! on disk keyed by model, template fingerprint and prompt (`cache.rs`), so a resumed or
//! repeated annotation asks the endpoint nothing twice.
//!
//! This module talks to an endpoint only through [`LlmClient`] and replays only through the
//! record's own replay; it plays no episode.

mod answer;
mod apply;
mod cache;
mod prompt;

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

pub use answer::{read_answer, Unusable};
pub use apply::ApplyError;
pub(crate) use apply::{write_thoughts, TurnAnswer};
pub(crate) use cache::{answer_key, AnswerCache};
pub use cache::{CacheError, ANSWERS_FILE};
pub(crate) use prompt::{turn_requests, ThoughtTemplate, TurnRequest};
pub use prompt::{MOVE_TAKEN, THOUGHT_MARKER};

use crate::agents::{Player, PlayerError};
use crate::digest::Digest;
use crate::game::{mix, PerSeat, PromptError, Prompts};
use crate::limits::{check_count, MAX_CONCURRENCY};
use crate::llm::{http_client, LlmClient, LlmError};
use crate::record::{
    refuse_output_among_inputs, scan_existing, Duplicates, EpisodeRecord, OnDuplicate,
    RecordWriter, ReplayError, WriteError,
};
use crate::replay::{load_prompts, FindError, Records, ScenarioSource, Unavailable};
use crate::run::{styled_bar, Stop, StopState, Stopped};
use crate::scenario::{Scenario, ScenarioError};
use crate::vocab::{Message, MessageRole};

/// What an annotation needs.
#[derive(Debug, Clone)]
pub struct AnnotateOptions {
    /// The record file whose people's turns get thoughts.
    pub(crate) input: PathBuf,
    /// The model that writes them: `openai:MODEL@URL`.
    pub(crate) endpoint: String,
    pub out: PathBuf,
    /// At most this many requests in flight (and episodes being annotated).
    pub concurrency: usize,
    pub resume: bool,
    pub progress: bool,
    /// A template instead of the built-in `prompts/annotate/thought.j2`.
    pub template: Option<PathBuf>,
    /// The answer cache's directory (default: the output's path with `.cache` appended).
    pub cache: Option<PathBuf>,
    /// Scenario files; empty: `scenarios/{family}.jsonl` of each record's family.
    pub scenarios: Vec<PathBuf>,
    /// The episode templates of records played with a `prompts_dir`.
    pub prompts_dir: Option<PathBuf>,
    /// How long episodes being annotated may finish after SIGINT/SIGTERM.
    pub grace: Duration,
    /// What to do with an episode the input holds twice (`--duplicates`).
    pub on_duplicate: OnDuplicate,
}

impl AnnotateOptions {
    /// Options with run's defaults: 64 at once, a progress bar, 30 s of grace.
    pub fn new(input: PathBuf, endpoint: &str, out: PathBuf) -> AnnotateOptions {
        AnnotateOptions {
            input,
            endpoint: endpoint.to_string(),
            out,
            concurrency: 64,
            resume: false,
            progress: true,
            template: None,
            cache: None,
            scenarios: Vec::new(),
            prompts_dir: None,
            grace: Duration::from_secs(30),
            on_duplicate: OnDuplicate::Refuse,
        }
    }

    /// The answer cache's directory.
    pub(crate) fn cache_dir(&self) -> PathBuf {
        self.cache.clone().unwrap_or_else(|| {
            let mut dir = self.out.clone().into_os_string();
            dir.push(".cache");
            PathBuf::from(dir)
        })
    }
}

/// An annotation that could not be done.
#[derive(Debug, thiserror::Error)]
pub enum AnnotateError {
    #[error(transparent)]
    Read(#[from] crate::record::ReadError),
    #[error(transparent)]
    Write(#[from] WriteError),
    #[error(transparent)]
    Cache(#[from] CacheError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error("{0}")]
    Player(#[from] PlayerError),
    #[error("{0}")]
    Options(String),
}

impl From<crate::replay::Error> for AnnotateError {
    fn from(e: crate::replay::Error) -> Self {
        match e {
            crate::replay::Error::Read(e) => AnnotateError::Read(e),
            other => AnnotateError::Options(other.to_string()),
        }
    }
}

/// What an annotation did.
#[derive(Debug, Clone, Default)]
pub struct AnnotateSummary {
    /// The model that wrote the thoughts.
    pub(crate) model: String,
    /// Episodes in the input.
    pub(crate) episodes: usize,
    /// Episodes already in the output (with `--resume`), not annotated again.
    pub(crate) skipped: usize,
    pub(crate) written: usize,
    /// Episodes written as they were: no seat of theirs was played by a person.
    pub(crate) without_people: usize,
    /// People's turns annotated in the episodes written, and those given a thought.
    pub turns: usize,
    pub thoughts: usize,
    /// The turns left without a thought, by [`Unusable::name`].
    pub unusable: BTreeMap<&'static str, usize>,
    /// Episodes not written because the endpoint failed after its retries on one of their
    /// turns (`--resume` asks again), and the first such failure.
    pub failed: usize,
    pub(crate) first_failure: Option<String>,
    /// Prompts the endpoint answered in this run, and those answered from the cache.
    pub(crate) asked: usize,
    pub(crate) from_cache: usize,
    pub stopped: Option<Stopped>,
    /// The cut-off last line `--resume` removed from the output, if it removed one.
    pub repaired_last_line: Option<crate::record::Cut>,
    /// Episodes the output already held more than once (reported on `--resume`).
    pub duplicates: Duplicates,
    pub(crate) elapsed: Duration,
}

impl AnnotateSummary {
    /// Turns left without a thought.
    pub fn unusable_total(&self) -> usize {
        self.unusable.values().sum()
    }

    /// What the command says when it ends: what was written, the unusable answers by reason,
    /// where the answers came from, and how a stop left it.
    pub fn text(&self, out: &std::path::Path) -> String {
        let mut text = format!(
            "{} episodes written to {} ({} in the input, {} already there, {} with no person's seat); \
             {} people's turns: {} given a thought, {} unusable",
            self.written,
            out.display(),
            self.episodes,
            self.skipped,
            self.without_people,
            self.turns,
            self.thoughts,
            self.unusable_total()
        );
        if !self.unusable.is_empty() {
            let reasons: Vec<String> = self
                .unusable
                .iter()
                .map(|(why, n)| format!("{why} {n}"))
                .collect();
            text.push_str(&format!(" ({})", reasons.join(", ")));
        }
        text.push_str(&format!(
            "\n{}: {} prompts asked, {} answered from the cache; {:.1} s",
            self.model,
            self.asked,
            self.from_cache,
            self.elapsed.as_secs_f64()
        ));
        if let Some(first) = &self.first_failure {
            text.push_str(&format!(
                "\n{} episodes not written: the endpoint failed after its retries (first: {first}); \
                 rerun with --resume to ask again",
                self.failed
            ));
        }
        if let Some(s) = &self.stopped {
            text.push_str(&format!(
                "\ninterrupted by {}: {} episodes were being annotated, {} abandoned; rerun with --resume to finish",
                s.signal.name(),
                s.in_flight,
                s.abandoned
            ));
        }
        text
    }

    fn add(&mut self, answers: &[TurnAnswer], has_people: bool) {
        self.written += 1;
        self.without_people += usize::from(!has_people);
        self.turns += answers.len();
        for answer in answers {
            match answer.thought {
                Ok(_) => self.thoughts += 1,
                Err(why) => *self.unusable.entry(why.name()).or_default() += 1,
            }
        }
    }
}

/// What every episode's annotation shares: the endpoint, its model, the template, the cache
/// and the permits that bound the requests in flight.
struct Annotator {
    client: LlmClient,
    model: String,
    template: ThoughtTemplate,
    cache: AnswerCache,
    permits: Semaphore,
    asked: AtomicUsize,
    from_cache: AtomicUsize,
}

impl Annotator {
    /// The endpoint's answer to `prompt`, from the cache when it was answered before; a new
    /// answer is cached before it is used. `Ok(Err(_))`: the endpoint failed after its retries.
    async fn reply(&self, prompt: &str, seed: u64) -> Result<Result<String, LlmError>, CacheError> {
        let key = answer_key(&self.model, self.template.fingerprint(), prompt);
        if let Some(reply) = self.cache.get(key) {
            self.from_cache.fetch_add(1, Ordering::Relaxed);
            return Ok(Ok(reply));
        }
        let _permit = self.permits.acquire().await;
        let messages = [Message::new(MessageRole::User, prompt)];
        match self.client.complete(&messages, seed).await {
            Ok(reply) => {
                self.cache
                    .put(key, &self.model, self.template.fingerprint(), &reply.text)?;
                self.asked.fetch_add(1, Ordering::Relaxed);
                Ok(Ok(reply.text))
            }
            Err(e) => Ok(Err(e)),
        }
    }
}

/// One episode ready to annotate: its record, what it was played on, and its requests with
/// their rendered prompts.
struct Job {
    record: EpisodeRecord,
    scenario: Arc<Scenario>,
    prompts: Arc<Prompts>,
    requests: Vec<(TurnRequest, String)>,
    has_people: bool,
}

/// An episode's annotation: done, or not, because the endpoint failed after its retries.
enum Annotated {
    Done {
        record: Box<EpisodeRecord>,
        answers: Vec<TurnAnswer>,
        has_people: bool,
    },
    Failed {
        episode: String,
        turn: usize,
        error: String,
    },
}

/// Replay `record` through the engine (refusing other scenarios or templates than it was
/// played with) and render the prompt of each of its people's turns.
fn prepare(
    record: EpisodeRecord,
    scenario: Arc<Scenario>,
    prompts: Arc<Prompts>,
    template: &ThoughtTemplate,
) -> Result<Job, AnnotateError> {
    let people = PerSeat::from_fn(|seat| record.played_by_person(seat));
    let has_people = people.learner || people.opponent;
    let mut requests = Vec::new();
    if has_people {
        let episode = record.replay(&scenario, &prompts)?;
        for request in turn_requests(&episode, people) {
            let prompt = template.render(&request.input).map_err(|e| {
                AnnotateError::Options(format!(
                    "episode {} turn {}: the thought template: {e}",
                    record.episode_id,
                    request.turn + 1
                ))
            })?;
            requests.push((request, prompt));
        }
    }
    Ok(Job {
        record,
        scenario,
        prompts,
        requests,
        has_people,
    })
}

/// Ask for every turn of `job` at once (the permits bound what is in flight), read the
/// answers and write them into the record.
async fn annotate_episode(annotator: Arc<Annotator>, job: Job) -> Result<Annotated, AnnotateError> {
    let Job {
        mut record,
        scenario,
        prompts,
        requests,
        has_people,
    } = job;
    let space = scenario.term_space();
    let replies = futures_util::future::join_all(requests.iter().map(|(request, prompt)| {
        let seed = mix(&[
            record.seats[request.seat].sampling_seed,
            request.turn as u64,
        ]);
        annotator.reply(prompt, seed)
    }))
    .await;
    let mut answers = Vec::with_capacity(requests.len());
    for ((request, _), reply) in requests.iter().zip(replies) {
        match reply? {
            Ok(text) => answers.push(TurnAnswer {
                turn: request.turn,
                thought: read_answer(&text, &request.taken, space),
            }),
            // An outage is not the model's answer: the episode is not written, so `--resume`
            // asks again (its answered turns stay cached).
            Err(error) => {
                return Ok(Annotated::Failed {
                    episode: record.episode_id.clone(),
                    turn: request.turn,
                    error: error.to_string(),
                })
            }
        }
    }
    let answers = if answers.is_empty() {
        answers
    } else {
        write_thoughts(
            &mut record,
            &scenario,
            &prompts,
            answers,
            &annotator.model,
            annotator.template.fingerprint(),
        )?
    };
    Ok(Annotated::Done {
        record: Box::new(record),
        answers,
        has_people,
    })
}

/// Refuse to resume into `out` when a turn in it was annotated by another model or from
/// another template: one file, one annotator.
fn refuse_other_annotations(
    out: &std::path::Path,
    model: &str,
    template: Digest,
) -> Result<(), AnnotateError> {
    // Only the annotations matter here: a duplicated episode is checked once.
    for located in Records::open(&[out.to_path_buf()], None, OnDuplicate::Skip) {
        let located = located?;
        let other = located
            .record
            .turns
            .iter()
            .filter_map(|t| t.annotation.as_ref())
            .find(|a| a.model != model || a.template != template);
        if let Some(a) = other {
            return Err(AnnotateError::Options(format!(
                "{}: episode {} was annotated by model {} with template {}, not by {model} with \
                 template {template}: resume with the same --endpoint model and --template, or \
                 annotate into another file",
                located.at(),
                located.record.episode_id,
                a.model,
                a.template
            )));
        }
    }
    Ok(())
}

/// Annotate every episode of `options.input` not yet in the output, writing each record as
/// its turns are done. Stops early as `stop` says (see [`Stop`]), keeping every record
/// already written whole: once it says drain no episode is started, once it says abandon
/// those being annotated are dropped unwritten (their answers stay cached).
pub async fn annotate<'s>(
    options: &AnnotateOptions,
    stop: impl Into<Stop<'s>>,
) -> Result<AnnotateSummary, AnnotateError> {
    let started = Instant::now();
    check_count(
        "--concurrency",
        options.concurrency as u64,
        1,
        MAX_CONCURRENCY,
    )
    .map_err(AnnotateError::Options)?;
    let template = match &options.template {
        Some(path) => ThoughtTemplate::load(path).map_err(AnnotateError::Options)?,
        None => ThoughtTemplate::builtin(),
    };
    let http = http_client(options.concurrency.max(8))
        .map_err(|e| AnnotateError::Options(format!("cannot build the HTTP client: {e}")))?;
    let client = match Player::from_spec(&options.endpoint, &BTreeMap::new(), &http)? {
        Player::Llm { client, .. } => client,
        other => {
            return Err(AnnotateError::Options(format!(
                "--endpoint {}: thoughts are written by a model: give openai:MODEL@URL",
                other.spec()
            )))
        }
    };
    let input = scan_existing(&options.input, false)?;
    if input.is_empty() {
        return Err(AnnotateError::Options(format!(
            "{} holds no episode record",
            options.input.display()
        )));
    }
    if options.on_duplicate == OnDuplicate::Refuse {
        if let Some(refusal) = input.duplicates.refusal(&options.input) {
            return Err(AnnotateError::Options(refusal));
        }
    }
    let runs: HashSet<String> = input.runs.keys().cloned().collect();
    let (mut writer, existing) = RecordWriter::open_runs(&options.out, &runs, options.resume)
        .map_err(|e| match e {
            WriteError::NotOfEval { file, found, .. } => AnnotateError::Options(format!(
                "{file} holds episodes of run {found}, which {} does not hold: annotate into another file",
                options.input.display()
            )),
            other => other.into(),
        })?;
    // Checked once `--out` is locked: a run still writing the input is named as its holder.
    refuse_output_among_inputs(&options.out, std::slice::from_ref(&options.input))?;
    let model = client.settings().model.clone();
    if !existing.is_empty() {
        refuse_other_annotations(&options.out, &model, template.fingerprint())?;
    }
    let prompts = load_prompts(options.prompts_dir.as_deref())?;
    let mut scenarios = ScenarioSource::new(&options.scenarios)?;
    let annotator = Arc::new(Annotator {
        model,
        client,
        cache: AnswerCache::open(&options.cache_dir())?,
        template,
        permits: Semaphore::new(options.concurrency),
        asked: AtomicUsize::new(0),
        from_cache: AtomicUsize::new(0),
    });
    let mut summary = AnnotateSummary {
        model: annotator.model.clone(),
        episodes: input.episodes(),
        repaired_last_line: existing.cut.clone(),
        duplicates: existing.duplicates.clone(),
        ..AnnotateSummary::default()
    };
    let bar = styled_bar(
        options.progress,
        input.episodes().saturating_sub(existing.episodes()) as u64,
        "{elapsed_precise} [{bar:30}] {pos}/{len} episodes · {per_sec} · {msg}",
    );

    let mut records = Records::open(
        std::slice::from_ref(&options.input),
        None,
        options.on_duplicate,
    );
    let mut tasks: JoinSet<Result<Annotated, AnnotateError>> = JoinSet::new();
    let mut exhausted = false;
    let mut stop = stop.into();
    let mut state = stop.state();
    loop {
        if let StopState::Draining(signal) | StopState::Abandon(signal) = state {
            let stopped = summary.stopped.get_or_insert(Stopped {
                signal,
                in_flight: tasks.len(),
                abandoned: 0,
            });
            if matches!(state, StopState::Abandon(_)) {
                stopped.abandoned = tasks.len();
                tasks.abort_all();
                break;
            }
        }
        while state == StopState::Running && !exhausted && tasks.len() < options.concurrency {
            let Some(located) = records.next() else {
                exhausted = true;
                break;
            };
            let record = located?.record;
            if existing
                .runs
                .get(&record.run_id)
                .is_some_and(|done| done.contains(&record.episode_id))
            {
                summary.skipped += 1;
                continue;
            }
            let scenario = match scenarios.find(&record) {
                Ok(scenario) => scenario,
                Err(FindError::Unavailable(e)) => return Err(e.into()),
                Err(FindError::Scenario(e)) => return Err(e.into()),
            };
            let job = prepare(record, scenario, prompts.clone(), &annotator.template)?;
            tasks.spawn(annotate_episode(annotator.clone(), job));
        }
        if tasks.is_empty() {
            break;
        }
        tokio::select! {
            done = tasks.join_next() => {
                let Some(done) = done else { continue };
                let done = done.map_err(|e| {
                    AnnotateError::Options(format!("an annotation task failed: {e}"))
                })??;
                match &done {
                    Annotated::Done { record, answers, has_people } => {
                        writer.write(record)?;
                        summary.add(answers, *has_people);
                    }
                    Annotated::Failed { episode, turn, error } => {
                        summary.failed += 1;
                        summary.first_failure.get_or_insert_with(|| {
                            format!("episode {episode} turn {}: {error}", turn + 1)
                        });
                    }
                }
                bar.inc(1);
                bar.set_message(format!(
                    "{} thoughts · {} unusable · {} failed",
                    summary.thoughts,
                    summary.unusable_total(),
                    summary.failed
                ));
            }
            now = stop.changed(state) => state = now,
        }
    }
    bar.finish_and_clear();
    summary.asked = annotator.asked.load(Ordering::Relaxed);
    summary.from_cache = annotator.from_cache.load(Ordering::Relaxed);
    summary.elapsed = started.elapsed();
    Ok(summary)
}
