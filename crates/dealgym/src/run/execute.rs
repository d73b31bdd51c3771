//! The one executor: planned episodes played with bounded concurrency, each handed to a sink
//! (a record file, a client's stream) as it ends, a stop drained or abandoned as asked, and the progress bar and closing line.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::{mpsc, watch, Semaphore};

use crate::game::OutcomeKind;
use crate::llm::PlayPermit;
use crate::record::RecordWriter;

use super::campaign::{play_campaign, PlannedCampaign};
use super::market::{play_market_caught, MarketFinished, MarketKit, PlannedMarket};
use super::table::{play_table_caught, PlannedTable, TableFinished, TableKit};
use super::{
    play_caught, EpisodeError, EpisodeKit, Finished, PlannedEpisode, RunError, RunStats, Stop,
    StopSignal, StopState,
};

/// How a run (or an eval) was stopped before the end of its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    pub signal: StopSignal,
    /// Episodes in flight when the stop came: they were let finish, within the grace period.
    pub(crate) in_flight: usize,
    /// Episodes given up on (nothing written: `--resume` plays them again).
    pub(crate) abandoned: usize,
}

/// The closing line of a run or an eval: `who` (a run id, "N pairings") wrote `written`
/// episodes to `out`, of `planned` (in `shard`, if one), `skipped` being there already; and
/// how a stop left it.
pub fn written_line(
    who: &str,
    written: usize,
    out: &std::path::Path,
    (planned, skipped): (usize, usize),
    shard: &str,
    stopped: Option<&Stopped>,
) -> String {
    let mut line = format!(
        "{who}: {written} episodes written to {} ({planned} planned{shard}, {skipped} already there)",
        out.display()
    );
    if let Some(s) = stopped {
        let left = planned - skipped - written;
        let next = if left == 0 {
            "every planned episode is written".to_string()
        } else {
            format!("{left} left: rerun with --resume to finish")
        };
        line.push_str(&format!(
            "; interrupted by {}: {} episodes were in flight, {} abandoned; {next}",
            s.signal.name(),
            s.in_flight,
            s.abandoned
        ));
    }
    line
}

/// Where the executor puts each episode as it ends: a record file ([`RecordWriter`], for
/// `run`, `eval` and branches), a client's stream (`serve`'s rollouts). An error from the sink
/// stops the execution: no episode more is started, and those in flight are dropped.
pub(crate) trait Sink {
    type Error;

    /// Take the finished episode `episode` (its id), or why it could not be played at all
    /// (its driver failed before it could end: the run's players or rules are broken).
    fn take(
        &mut self,
        episode: String,
        played: Result<Done, EpisodeError>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

/// A record file: each record written as its episode ends. A record that cannot be written
/// (a full disk) and an episode that could not be played stop the run: no episode more is
/// played to be lost.
impl Sink for RecordWriter {
    type Error = RunError;

    fn take(
        &mut self,
        _episode: String,
        played: Result<Done, EpisodeError>,
    ) -> impl Future<Output = Result<(), RunError>> + Send {
        let written = played.map_err(RunError::from).and_then(|done| {
            match &done {
                Done::Episode(finished) => self.write(&finished.record),
                Done::Table(finished) => self.write(&finished.record),
                Done::Market(finished) => self.write(&finished.record),
            }
            .map_err(RunError::from)
        });
        std::future::ready(written)
    }
}

/// What the executor plays: one planned episode, or one member's campaign, whose deals are
/// played in order under one permit, each handed to the sink as it ends (`campaign.rs`).
pub(crate) enum Job {
    Episode(Arc<EpisodeKit>, PlannedEpisode),
    Campaign(Arc<EpisodeKit>, PlannedCampaign),
    /// An n-party table (`table.rs`).
    Table(Arc<TableKit>, PlannedTable),
    /// A market (`market.rs`).
    Market(Arc<MarketKit>, PlannedMarket),
}

/// What the executor hands a sink: an ended two-party episode or an ended table.
#[derive(Debug)]
pub(crate) enum Done {
    Episode(Box<Finished>),
    Table(Box<TableFinished>),
    Market(Box<MarketFinished>),
}

impl From<Finished> for Done {
    fn from(f: Finished) -> Done {
        Done::Episode(Box::new(f))
    }
}

impl From<(Arc<EpisodeKit>, PlannedEpisode)> for Job {
    fn from((kit, planned): (Arc<EpisodeKit>, PlannedEpisode)) -> Job {
        Job::Episode(kit, planned)
    }
}

/// The permits an execution's episodes play under.
pub(crate) struct Permits {
    /// One held by each episode while it plays (not while a call waits between tries:
    /// `llm::PlayPermit`): this execution's own (a run's `--concurrency`), or shared by many
    /// (the rollout requests of a server).
    pub shared: Arc<Semaphore>,
    /// The most of this execution's episodes alive at once, playing or ended and waiting for
    /// the sink: what it may hold in memory whatever the sink's pace.
    pub most: usize,
}

/// An execution's own permits: as many alive as may play.
impl From<Arc<Semaphore>> for Permits {
    fn from(shared: Arc<Semaphore>) -> Permits {
        let most = shared.available_permits();
        Permits { shared, most }
    }
}

/// Play `todo` — each planned episode with the kit of its run, or each campaign ([`Job`]) —
/// each holding one of `permits.shared` while it plays, and one of this execution's own
/// `permits.most` places from its start until `sink` has taken it. So episodes in flight are
/// bounded whether the shared permits are this execution's own (a run's `--concurrency`) or
/// shared by many (a server's rollout requests); a sink that stops taking stops its episodes
/// from starting, and its ended episodes wait for it without holding a shared permit another
/// execution could play with. A run's episodes share one kit; an eval's come from one kit per
/// pairing, so the whole grid shares one executor, one progress bar and one writer. Returns
/// the totals and, if `stop` cut the run short, how: once it says drain no episode is
/// started, and once it says abandon those in flight are dropped unwritten.
pub(crate) async fn execute<'s, I, S>(
    todo: I,
    permits: impl Into<Permits>,
    sink: &mut S,
    bar: &ProgressBar,
    stop: impl Into<Stop<'s>>,
) -> Result<(RunStats, Option<Stopped>), S::Error>
where
    I: IntoIterator,
    I::Item: Into<Job>,
    I::IntoIter: Send + 'static,
    S: Sink,
{
    let mut stop = stop.into();
    let todo = todo.into_iter();
    let Permits { shared, most } = permits.into();
    let capacity = most.clamp(1, MAX_BUFFERED);
    let alive = Arc::new(Semaphore::new(capacity));
    let (tx, mut rx) = mpsc::channel(capacity);
    let started = Arc::new(AtomicUsize::new(0));
    let (drain, mut draining) = watch::channel(false);
    let producer = tokio::spawn({
        let started = started.clone();
        async move {
            let mut tasks = tokio::task::JoinSet::new();
            for job in todo.map(Into::<Job>::into) {
                // A place of this execution's first, so that one waiting for its sink holds
                // no shared permit; then a shared permit.
                let place = tokio::select! {
                    biased;
                    _ = draining.wait_for(|d| *d) => break,
                    place = alive.clone().acquire_owned() => match place {
                        Ok(place) => place,
                        Err(_) => break,
                    },
                };
                let permit = tokio::select! {
                    biased;
                    _ = draining.wait_for(|d| *d) => break,
                    permit = shared.clone().acquire_owned() => match permit {
                        Ok(permit) => PlayPermit::new(shared.clone(), permit),
                        Err(_) => break,
                    },
                };
                if *draining.borrow() {
                    break;
                }
                let tx = tx.clone();
                match job {
                    Job::Episode(kit, planned) => {
                        started.fetch_add(1, Ordering::SeqCst);
                        tasks.spawn(async move {
                            let episode = planned.episode_id();
                            let played = permit.scope(play_caught(kit, planned)).await;
                            // The shared permit goes as the episode ends; its place travels
                            // with it and is released once the sink has taken it.
                            permit.release();
                            let _ = tx
                                .send((episode, played.map(Done::from), Some(place)))
                                .await;
                        });
                    }
                    Job::Campaign(kit, planned) => {
                        let started = started.clone();
                        let draining = draining.clone();
                        tasks.spawn(async move {
                            // The permit and the place are held while the campaign plays,
                            // deal after deal.
                            let _place = place;
                            let play = |kit, planned| {
                                started.fetch_add(1, Ordering::SeqCst);
                                play_caught(kit, planned)
                            };
                            let deal_done = |episode, played: Result<Finished, EpisodeError>| {
                                let tx = tx.clone();
                                let played = played.map(Done::from);
                                async move { tx.send((episode, played, None)).await.is_ok() }
                            };
                            let go_on = || !*draining.borrow();
                            permit
                                .scope(play_campaign(kit, planned, play, deal_done, go_on))
                                .await;
                            permit.release();
                        });
                    }
                    Job::Table(kit, planned) => {
                        started.fetch_add(1, Ordering::SeqCst);
                        tasks.spawn(async move {
                            let episode = planned.seeds.episode_id();
                            let played = permit
                                .scope(play_table_caught(kit, planned))
                                .await
                                .map(|f| Done::Table(Box::new(f)))
                                .map_err(|e| EpisodeError::Table(e.to_string()));
                            permit.release();
                            let _ = tx.send((episode, played, Some(place))).await;
                        });
                    }
                    Job::Market(kit, planned) => {
                        started.fetch_add(1, Ordering::SeqCst);
                        tasks.spawn(async move {
                            let episode = planned.seeds.episode_id();
                            let played = permit
                                .scope(play_market_caught(kit, planned))
                                .await
                                .map(|f| Done::Market(Box::new(f)))
                                .map_err(|e| EpisodeError::Table(e.to_string()));
                            permit.release();
                            let _ = tx.send((episode, played, Some(place))).await;
                        });
                    }
                }
                // Reap finished tasks as we go so the set stays small.
                while tasks.try_join_next().is_some() {}
            }
            drop(tx);
            while tasks.join_next().await.is_some() {}
        }
    });
    // The producer (and every episode in flight) ends with this call, however it ends.
    let _abort = AbortOnDrop(producer);

    let mut stats = RunStats::default();
    let mut received = 0usize;
    let mut stopped: Option<Stopped> = None;
    let mut failure = None;
    let mut state = stop.state();
    loop {
        if let StopState::Draining(signal) | StopState::Abandon(signal) = state {
            if stopped.is_none() {
                let _ = drain.send(true);
                let in_flight = started.load(Ordering::SeqCst) - received;
                bar.set_message(format!("stopping: {in_flight} episodes in flight"));
                stopped = Some(Stopped {
                    signal,
                    in_flight,
                    abandoned: 0,
                });
            }
            if matches!(state, StopState::Abandon(_)) {
                break;
            }
        }
        tokio::select! {
            played = rx.recv() => match played {
                Some((episode, played, _place)) => {
                    received += 1;
                    if let Ok(done) = &played {
                        stats.add_done(done);
                        bar.inc(1);
                    }
                    if let Err(e) = sink.take(episode, played).await {
                        failure = Some(e);
                        break;
                    }
                    if stopped.is_none() {
                        bar.set_message(format!(
                            "deal {:.0}% · errors {}",
                            stats.deal_rate(),
                            stats.count(OutcomeKind::Error)
                        ));
                    }
                }
                None => break,
            },
            now = stop.changed(state) => state = now,
        }
    }
    // Episodes that ended while we were stopping are complete: keep them (after a failure,
    // as long as the sink takes them).
    let _ = drain.send(true);
    while let Ok((episode, Ok(done), _place)) = rx.try_recv() {
        received += 1;
        stats.add_done(&done);
        if let Err(e) = sink.take(episode, Ok(done)).await {
            failure.get_or_insert(e);
            break;
        }
    }
    if let Some(stopped) = &mut stopped {
        stopped.abandoned = started.load(Ordering::SeqCst).saturating_sub(received);
    }
    match failure {
        Some(e) => Err(e),
        None => Ok((stats, stopped)),
    }
}

/// Episodes of one execution alive at once, at most (playing or waiting for the sink; the
/// channel between the episodes and the sink holds as many).
const MAX_BUFFERED: usize = 4096;

/// Aborts a task, and with it every episode it still has in flight, when dropped: the
/// executor's producer when the execution ends, a rollout request's when its stream goes.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The progress bar of a run or an eval: episodes written of `total` (hidden unless `show`,
/// and anyway when stderr is not a terminal).
pub(crate) fn progress_bar(show: bool, total: usize) -> ProgressBar {
    styled_bar(
        show,
        total as u64,
        "{elapsed_precise} [{bar:30}] {pos}/{len} episodes · {per_sec} · {msg}",
    )
}

/// A progress bar to `total` drawn with `template` (indicatif's), hidden unless `show`: the one
/// look every long command's bar shares.
pub(crate) fn styled_bar(show: bool, total: u64, template: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}
