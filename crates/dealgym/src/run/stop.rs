//! Stopping a run cleanly: what the executor watches to know when to stop starting episodes
//! and when to give up on those in flight. `dealgym run` and `eval` listen for SIGINT (Ctrl-C)
//! and SIGTERM (what Slurm, Kubernetes and systemd send before they kill): the first stops new
//! episodes and lets the ones in flight finish for a grace period, the second — or the end of
//! the grace period — abandons them. An abandoned episode writes nothing, so `--resume` plays
//! it again; every record already written is whole.
//!
//! Library callers that only want "stop now" pass any future: when it resolves the run
//! abandons what is in flight, as a second signal would.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::watch;

use crate::limits::check_seconds;

/// The signal that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// A caller's stop future resolved.
    Requested,
}

impl StopSignal {
    /// The exit status a process stopped this way ends with: 128 + the signal number, as
    /// shells and schedulers expect (130 for SIGINT and a library stop, 143 for SIGTERM).
    pub fn exit_code(self) -> i32 {
        match self {
            StopSignal::Interrupt | StopSignal::Requested => 130,
            StopSignal::Terminate => 143,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
            StopSignal::Requested => "a stop request",
        }
    }
}

/// The grace period `--grace-s SECONDS` asks for: a number of seconds, 0 or more, at most a
/// day ([`check_seconds`]).
pub fn grace_period(seconds: f64) -> Result<Duration, String> {
    check_seconds("--grace-s", seconds, true)
}

/// Where a run is in stopping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopState {
    /// Play the plan.
    Running,
    /// Start no new episode; let those in flight finish.
    Draining(StopSignal),
    /// Give up on the episodes in flight now.
    Abandon(StopSignal),
}

/// What a run watches to stop: signals with a grace period ([`Stop::on_signals`]), a manual
/// handle (`Stop::manual`), or any future (abandon when it resolves).
pub struct Stop<'a> {
    source: Source<'a>,
}

enum Source<'a> {
    State(watch::Receiver<StopState>),
    Future(Option<Pin<Box<dyn Future<Output = ()> + Send + 'a>>>),
}

impl<'a, F: Future<Output = ()> + Send + 'a> From<F> for Stop<'a> {
    /// Abandon the episodes in flight when `stop` resolves (a caller's own Ctrl-C, a test).
    fn from(stop: F) -> Self {
        Stop {
            source: Source::Future(Some(Box::pin(stop))),
        }
    }
}

/// The sending side of [`Stop::manual`]: what signal handlers (or tests) drive.
#[derive(Debug, Clone)]
pub(crate) struct StopHandle {
    state: watch::Sender<StopState>,
}

impl StopHandle {
    /// Stop starting episodes (the first signal); a second call abandons (the second signal).
    pub fn signal(&self, signal: StopSignal) {
        self.state.send_modify(|s| {
            *s = match *s {
                StopState::Running => StopState::Draining(signal),
                StopState::Draining(first) | StopState::Abandon(first) => StopState::Abandon(first),
            }
        });
    }

    /// Abandon the episodes in flight now (the grace period is over).
    pub fn abandon(&self) {
        self.state.send_modify(|s| {
            if let StopState::Draining(first) = *s {
                *s = StopState::Abandon(first);
            }
        });
    }
}

impl Stop<'static> {
    /// A stop driven by hand, and its handle.
    pub(crate) fn manual() -> (Stop<'static>, StopHandle) {
        let (tx, rx) = watch::channel(StopState::Running);
        (
            Stop {
                source: Source::State(rx),
            },
            StopHandle { state: tx },
        )
    }

    /// Listen for SIGINT and SIGTERM (from now on, in a background task of the current tokio
    /// runtime): the first stops new episodes and gives those in flight `grace` to finish, a
    /// second abandons them at once. Each step is said on stderr.
    pub fn on_signals(grace: Duration) -> Stop<'static> {
        let (stop, handle) = Stop::manual();
        tokio::spawn(async move {
            let mut signals = Signals::new();
            let first = signals.next().await;
            handle.signal(first);
            eprintln!(
                "{}: starting no new episodes; those in flight get {:.0} s to finish (send it again to stop now)",
                first.name(),
                grace.as_secs_f64()
            );
            tokio::select! {
                second = signals.next() => {
                    eprintln!("{}: abandoning the episodes in flight (resume plays them again)", second.name());
                }
                _ = tokio::time::sleep(grace) => {
                    eprintln!("grace period over: abandoning the episodes in flight (resume plays them again)");
                }
            }
            handle.abandon();
        });
        stop
    }
}

impl Stop<'_> {
    /// The state now.
    pub(crate) fn state(&self) -> StopState {
        match &self.source {
            Source::State(rx) => *rx.borrow(),
            Source::Future(Some(_)) => StopState::Running,
            Source::Future(None) => StopState::Abandon(StopSignal::Requested),
        }
    }

    /// Wait until the state moves on from `seen`, and return the new one. Never returns once
    /// it is `Abandon`.
    pub(crate) async fn changed(&mut self, seen: StopState) -> StopState {
        match &mut self.source {
            Source::State(rx) => loop {
                let now = *rx.borrow_and_update();
                if now != seen {
                    return now;
                }
                if rx.changed().await.is_err() {
                    // Nobody can signal any more: nothing will change.
                    std::future::pending::<()>().await;
                }
            },
            Source::Future(slot) => match slot {
                Some(future) => {
                    future.await;
                    *slot = None;
                    StopState::Abandon(StopSignal::Requested)
                }
                None => std::future::pending().await,
            },
        }
    }
}

/// SIGINT and SIGTERM as one stream (SIGINT alone off unix).
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Signals {
                term: signal(SignalKind::terminate()).ok(),
                int: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    async fn next(&mut self) -> StopSignal {
        #[cfg(unix)]
        {
            async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
                let received = match s {
                    Some(s) => s.recv().await.is_some(),
                    None => false,
                };
                if !received {
                    std::future::pending::<()>().await;
                }
            }
            tokio::select! {
                _ = recv(&mut self.int) => StopSignal::Interrupt,
                _ = recv(&mut self.term) => StopSignal::Terminate,
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            StopSignal::Interrupt
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_signal_abandons_and_the_first_signal_is_kept() {
        let (mut stop, handle) = Stop::manual();
        assert_eq!(stop.state(), StopState::Running);
        handle.signal(StopSignal::Terminate);
        let now = stop.changed(StopState::Running).await;
        assert_eq!(now, StopState::Draining(StopSignal::Terminate));
        handle.signal(StopSignal::Interrupt);
        assert_eq!(
            stop.changed(now).await,
            StopState::Abandon(StopSignal::Terminate)
        );
        assert_eq!(StopSignal::Terminate.exit_code(), 143);
        assert_eq!(StopSignal::Interrupt.exit_code(), 130);
    }

    #[tokio::test]
    async fn a_future_abandons_when_it_resolves() {
        let mut stop = Stop::from(async {});
        assert_eq!(stop.state(), StopState::Running);
        assert_eq!(
            stop.changed(StopState::Running).await,
            StopState::Abandon(StopSignal::Requested)
        );
        assert_eq!(stop.state(), StopState::Abandon(StopSignal::Requested));
    }
}
