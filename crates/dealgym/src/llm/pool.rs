//! Many replicas of one model behind one player: which replica serves a call, how many calls
//! each may hold at once, and what each served.
//!
//! Routing is cache-aware (the policy and the choice are `routing.rs`; what the replicas served,
//! `pool_report.rs`). A seat's conversation only grows, so the replica that served its
//! last turn already holds its prompt in the prefix cache: with `sticky` routing (the default)
//! an episode-seat is bound to one replica at its first call and keeps it for the episode. New
//! seats go to the replica with the fewest requests in flight (ties: the fewest seats bound,
//! then the first listed). `least_loaded` sends every call to the least-loaded replica — the
//! baseline sticky routing is measured against.
//!
//! Each replica has a cap on requests in flight (a semaphore). Health lives in `health.rs`: a
//! replica that fails its health check or keeps erroring is taken out of rotation, the next
//! call of each of its seats moves to another replica (and sticks there), and it is probed and
//! put back later. The pool's own retry loop wraps every call, so a retry after an ejection
//! goes to a healthy replica; with every replica out, a call fails as a transient
//! [`LlmError::NoReplica`], is retried with backoff, and the episode ends as a backend error.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::client::{LlmClient, LlmError};
use super::pool_report::{error_kind, PoolReport, ReplicaReport};
use super::routing::{choose, Load, Routing};
use crate::vocab::Seat;

/// Which episode-seat a call is for: what sticky routing binds to a replica. `episode` is
/// unique per episode in this process (the driver draws it); `seat` tells the two seats apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeatKey {
    pub(crate) episode: u64,
    pub(crate) seat: Seat,
}

/// The token counts of one successful call, for the replica's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallTokens {
    pub(crate) prompt: u64,
    /// Prompt tokens served from the prefix cache, when the server says.
    pub(crate) cached: Option<u64>,
}

/// A call's result with the replica that served it (its index in the player's `endpoints`) and
/// the retries it took across replicas.
#[derive(Debug, Clone, PartialEq)]
pub struct Routed<T> {
    pub(crate) value: T,
    pub(crate) replica: u32,
    pub(crate) retries: u32,
}

/// The health of one replica (whether it is in rotation is its [`Load::healthy`]): its
/// failures in a row, and when to probe it next while it is out.
#[derive(Debug, Clone)]
pub(super) struct Health {
    pub consecutive_failures: u32,
    pub next_probe: Instant,
    pub probe_backoff: Duration,
}

/// The mutable state of the pool, under one lock (held briefly, never across an await).
pub(super) struct State {
    pub loads: Vec<Load>,
    /// Tries holding a slot (on the wire), per replica.
    pub sending: Vec<usize>,
    pub health: Vec<Health>,
    pub reports: Vec<ReplicaReport>,
    pub bindings: HashMap<SeatKey, usize>,
    /// Counts picks: where the round that breaks ties starts.
    pub turn: usize,
}

pub(super) struct Inner {
    pub replicas: Vec<LlmClient>,
    pub slots: Vec<Semaphore>,
    pub state: Mutex<State>,
    pub routing: Routing,
    pub eject_after: u32,
    pub retries: u32,
    pub health_interval: Duration,
    /// Set once the first call has probed every replica and started the health loop.
    pub started: tokio::sync::OnceCell<()>,
}

impl Inner {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The replicas of one player. Cheap to clone (shared).
#[derive(Clone)]
pub struct ReplicaPool {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for ReplicaPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaPool")
            .field("replicas", &self.inner.replicas)
            .field("routing", &self.inner.routing)
            .finish()
    }
}

impl ReplicaPool {
    /// A pool over `endpoints`, each called with `template`'s settings (its own retries are
    /// the pool's: each try picks its replica afresh). `shown` is each endpoint as it may be
    /// printed (no credentials).
    pub(crate) fn new(template: &LlmClient, endpoints: &[String], shown: &[String]) -> ReplicaPool {
        let s = template.settings();
        let now = Instant::now();
        let interval = Duration::from_secs_f64(s.health_interval_s.max(0.01));
        let n = endpoints.len();
        ReplicaPool {
            inner: Arc::new(Inner {
                replicas: endpoints
                    .iter()
                    .map(|url| template.for_replica(url, 0))
                    .collect(),
                slots: (0..n)
                    .map(|_| Semaphore::new(s.max_in_flight_per_replica.max(1)))
                    .collect(),
                state: Mutex::new(State {
                    loads: vec![
                        Load {
                            healthy: true,
                            ..Load::default()
                        };
                        n
                    ],
                    sending: vec![0; n],
                    health: vec![
                        Health {
                            consecutive_failures: 0,
                            next_probe: now,
                            probe_backoff: interval,
                        };
                        n
                    ],
                    reports: (0..n)
                        .map(|i| ReplicaReport {
                            endpoint: shown.get(i).cloned().unwrap_or_default(),
                            ..ReplicaReport::default()
                        })
                        .collect(),
                    bindings: HashMap::new(),
                    turn: 0,
                }),
                routing: s.routing,
                eject_after: s.eject_after.max(1),
                retries: s.retries,
                health_interval: interval,
                started: tokio::sync::OnceCell::new(),
            }),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.inner.replicas.len()
    }

    /// Run `call` on a replica chosen for `key` (none: the least-loaded replica, unbound),
    /// holding one of its slots, retrying transient failures with backoff — each try on the
    /// seat's replica as chosen then, so a try after an ejection goes elsewhere.
    pub(crate) async fn call<T, F, Fut>(
        &self,
        key: Option<SeatKey>,
        mut call: F,
    ) -> Result<Routed<T>, LlmError>
    where
        F: FnMut(LlmClient) -> Fut,
        Fut: Future<Output = Result<(T, CallTokens), LlmError>>,
    {
        self.start().await;
        let inner = &self.inner;
        let mut tries = 0;
        loop {
            tries += 1;
            let error = match self.pick(key) {
                None => LlmError::NoReplica {
                    replicas: self.len(),
                },
                Some(i) => {
                    let mut attempt = Attempt {
                        pool: self,
                        i,
                        sent: false,
                        settled: false,
                    };
                    let result = match inner.slots[i].acquire().await {
                        Ok(_slot) => {
                            self.sending(&mut attempt);
                            call(inner.replicas[i].clone()).await
                        }
                        // The semaphores are never closed.
                        Err(_) => Err(LlmError::NoReplica {
                            replicas: self.len(),
                        }),
                    };
                    match result {
                        Ok((value, tokens)) => {
                            self.served(&mut attempt, tokens);
                            return Ok(Routed {
                                value,
                                replica: i as u32,
                                retries: tries - 1,
                            });
                        }
                        Err(e) => {
                            self.failed(&mut attempt, &e);
                            e
                        }
                    }
                }
            };
            if error.is_transient() && tries <= inner.retries {
                super::wait_between_tries(inner.replicas[0].wait_before_retry(tries, &error)).await;
                continue;
            }
            return Err(if tries > 1 {
                LlmError::GaveUp {
                    tries,
                    last: Box::new(error),
                }
            } else {
                error
            });
        }
    }

    /// Choose the replica for one try and count it in flight (bound for `key` under sticky
    /// routing).
    fn pick(&self, key: Option<SeatKey>) -> Option<usize> {
        let inner = &self.inner;
        let mut state = inner.lock();
        let sticky = inner.routing == Routing::Sticky;
        let bound = key
            .filter(|_| sticky)
            .and_then(|k| state.bindings.get(&k).copied());
        state.turn = state.turn.wrapping_add(1);
        let i = choose(&state.loads, bound, state.turn)?;
        if sticky && bound != Some(i) {
            if let Some(k) = key {
                if let Some(old) = state.bindings.insert(k, i) {
                    state.loads[old].seats = state.loads[old].seats.saturating_sub(1);
                }
                state.loads[i].seats += 1;
                state.reports[i].seats += 1;
            }
        }
        state.loads[i].in_flight += 1;
        state.reports[i].requests += 1;
        Some(i)
    }

    /// A try holds one of its replica's slots: it is on the wire.
    fn sending(&self, attempt: &mut Attempt<'_>) {
        let i = attempt.i;
        attempt.sent = true;
        let mut state = self.inner.lock();
        state.sending[i] += 1;
        let sending = state.sending[i] as u64;
        let report = &mut state.reports[i];
        report.peak_in_flight = report.peak_in_flight.max(sending);
    }

    /// A try on replica `i` is over: it no longer counts in flight (nor on the wire, if `sent`).
    fn done(state: &mut State, i: usize, sent: bool) {
        state.loads[i].in_flight = state.loads[i].in_flight.saturating_sub(1);
        if sent {
            state.sending[i] = state.sending[i].saturating_sub(1);
        }
    }

    fn served(&self, attempt: &mut Attempt<'_>, tokens: CallTokens) {
        let i = attempt.i;
        attempt.settled = true;
        let mut state = self.inner.lock();
        Self::done(&mut state, i, attempt.sent);
        state.health[i].consecutive_failures = 0;
        let report = &mut state.reports[i];
        report.prompt_tokens += tokens.prompt;
        if let Some(cached) = tokens.cached {
            report.cached_tokens += cached.min(tokens.prompt);
            report.cache_reported = true;
        }
    }

    fn failed(&self, attempt: &mut Attempt<'_>, error: &LlmError) {
        let i = attempt.i;
        attempt.settled = true;
        let mut state = self.inner.lock();
        Self::done(&mut state, i, attempt.sent);
        *state.reports[i]
            .errors
            .entry(error_kind(error).to_string())
            .or_insert(0) += 1;
        if error.is_transient() {
            state.health[i].consecutive_failures += 1;
            if state.health[i].consecutive_failures >= self.inner.eject_after {
                super::health::eject(&mut state, i, self.inner.health_interval);
            }
        }
    }

    /// Forget the replicas bound to an episode's seats (the episode has ended), so the pool
    /// does not grow with the run.
    pub(crate) fn release(&self, episode: u64) {
        let mut state = self.inner.lock();
        for seat in Seat::BOTH {
            if let Some(i) = state.bindings.remove(&SeatKey { episode, seat }) {
                state.loads[i].seats = state.loads[i].seats.saturating_sub(1);
            }
        }
    }

    /// Episode-seats bound now (for tests: the pool must not grow with the run).
    pub fn bound_seats(&self) -> usize {
        self.inner.lock().bindings.len()
    }

    /// What each replica served so far.
    pub fn report(&self) -> PoolReport {
        PoolReport {
            routing: self.inner.routing,
            replicas: self.inner.lock().reports.clone(),
        }
    }
}

/// One try's place in its replica's counts, given back however the try ends — a call future
/// dropped mid-way (a run stopped, a session closed) included.
struct Attempt<'a> {
    pool: &'a ReplicaPool,
    i: usize,
    sent: bool,
    settled: bool,
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        if !self.settled {
            let mut state = self.pool.inner.lock();
            ReplicaPool::done(&mut state, self.i, self.sent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::replica_table;
    use std::collections::BTreeSet;

    fn load(healthy: bool, in_flight: usize, seats: usize) -> Load {
        Load {
            healthy,
            in_flight,
            seats,
        }
    }

    #[test]
    fn a_bound_seat_keeps_its_replica_even_when_it_is_the_busiest() {
        let loads = [load(true, 9, 5), load(true, 0, 0), load(true, 1, 1)];
        assert_eq!(choose(&loads, Some(0), 0), Some(0));
    }

    #[test]
    fn a_new_seat_goes_to_the_replica_with_fewest_in_flight_then_fewest_seats() {
        let loads = [load(true, 3, 0), load(true, 1, 4), load(true, 1, 2)];
        assert_eq!(choose(&loads, None, 0), Some(2));
        assert_eq!(choose(&loads, None, 2), Some(2));
    }

    #[test]
    fn ties_are_spread_over_the_list_without_a_lock_step() {
        let tied = [load(true, 0, 1), load(true, 0, 1), load(true, 0, 1)];
        let mut counts = [0; 3];
        for turn in 0..300 {
            counts[choose(&tied, None, turn).unwrap()] += 1;
        }
        assert!(counts.iter().all(|&c| c > 60), "{counts:?}");
        // Every third pick (a seat among 3k seats called in turn) is not always one replica.
        let every_third: BTreeSet<usize> = (0..30)
            .map(|k| choose(&tied, None, 3 * k).unwrap())
            .collect();
        assert!(every_third.len() > 1);
        // An unhealthy replica is never the tie's winner.
        let one_down = [load(true, 0, 0), load(false, 0, 0), load(true, 0, 0)];
        assert!((0..50).all(|turn| choose(&one_down, None, turn) != Some(1)));
    }

    #[test]
    fn a_seat_on_an_ejected_replica_moves_to_the_least_loaded_healthy_one() {
        let loads = [load(false, 0, 3), load(true, 5, 0), load(true, 2, 9)];
        assert_eq!(choose(&loads, Some(0), 0), Some(2));
        // An unhealthy replica is never chosen for a new seat, however idle.
        assert_eq!(choose(&loads, None, 0), Some(2));
    }

    #[test]
    fn no_replica_when_all_are_out_of_rotation() {
        let loads = [load(false, 0, 0), load(false, 0, 0)];
        assert_eq!(choose(&loads, Some(1), 0), None);
        assert_eq!(choose(&loads, None, 0), None);
        assert_eq!(choose(&[], None, 0), None);
        // A binding that points past the list is ignored.
        assert_eq!(choose(&[load(true, 0, 0)], Some(7), 3), Some(0));
    }

    /// A pool of `n` replicas whose health check is taken as done (nothing listens there).
    fn pool(n: usize, routing: Routing) -> ReplicaPool {
        let settings = crate::llm::EndpointSettings {
            base_url: "http://127.0.0.1:9/v1".into(),
            routing,
            retries: 0,
            ..Default::default()
        };
        let client = LlmClient::new(reqwest::Client::new(), settings).unwrap();
        let urls: Vec<String> = (0..n).map(|i| format!("http://127.0.0.1:9/r{i}")).collect();
        let pool = ReplicaPool::new(&client, &urls, &urls);
        pool.inner.started.set(()).unwrap();
        pool
    }

    async fn served_by(pool: &ReplicaPool, key: Option<SeatKey>) -> u32 {
        pool.call(key, |_| async { Ok(((), CallTokens::default())) })
            .await
            .unwrap()
            .replica
    }

    #[tokio::test]
    async fn a_seat_keeps_its_replica_until_released() {
        let pool = pool(3, Routing::Sticky);
        let seat = |episode, seat| Some(SeatKey { episode, seat });
        let first = served_by(&pool, seat(1, Seat::Learner)).await;
        for _ in 0..10 {
            assert_eq!(served_by(&pool, seat(1, Seat::Learner)).await, first);
        }
        // Other seats go elsewhere first: the bound replica has a seat more.
        let other = served_by(&pool, seat(2, Seat::Learner)).await;
        assert_ne!(other, first);
        assert_eq!(pool.bound_seats(), 2);
        pool.release(1);
        pool.release(2);
        assert_eq!(pool.bound_seats(), 0);
        let report = pool.report();
        assert_eq!(report.replicas.iter().map(|r| r.requests).sum::<u64>(), 12);
        assert_eq!(report.replicas.iter().map(|r| r.seats).sum::<u64>(), 2);
    }

    #[tokio::test]
    async fn a_call_dropped_mid_way_gives_its_place_back() {
        let pool = pool(2, Routing::Sticky);
        let hung = pool.call(None, |_| {
            std::future::pending::<Result<((), CallTokens), _>>()
        });
        assert!(tokio::time::timeout(Duration::from_millis(20), hung)
            .await
            .is_err());
        let state = pool.inner.lock();
        assert!(state.loads.iter().all(|l| l.in_flight == 0));
        assert!(state.sending.iter().all(|&s| s == 0));
        assert_eq!(
            state.reports.iter().map(|r| r.peak_in_flight).sum::<u64>(),
            1
        );
    }

    #[tokio::test]
    async fn transient_failures_in_a_row_eject_and_the_seat_moves() {
        let pool = pool(2, Routing::Sticky);
        let key = Some(SeatKey {
            episode: 7,
            seat: Seat::Opponent,
        });
        let first = served_by(&pool, key).await as usize;
        let down = || LlmError::Status {
            url: "u".into(),
            status: 503,
            body: String::new(),
            retry_after_ms: None,
        };
        for _ in 0..3 {
            let result = pool
                .call(key, |_| async { Err::<((), CallTokens), _>(down()) })
                .await;
            assert!(result.is_err());
        }
        let report = pool.report();
        assert_eq!(report.replicas[first].ejections, 1);
        assert_eq!(report.replicas[first].errors["http_5xx"], 3);
        // The seat's next call moves to the other replica and stays there.
        let moved = served_by(&pool, key).await as usize;
        assert_ne!(moved, first);
        assert_eq!(served_by(&pool, key).await as usize, moved);
    }

    #[test]
    fn error_kinds_name_the_failure_and_look_through_give_ups() {
        let status = |status| LlmError::Status {
            url: "u".into(),
            status,
            body: String::new(),
            retry_after_ms: None,
        };
        assert_eq!(error_kind(&status(503)), "http_5xx");
        assert_eq!(error_kind(&status(429)), "http_429");
        assert_eq!(error_kind(&status(400)), "http_4xx");
        let gave_up = LlmError::GaveUp {
            tries: 3,
            last: Box::new(LlmError::Timeout {
                url: "u".into(),
                seconds: 1.0,
            }),
        };
        assert_eq!(error_kind(&gave_up), "timeout");
    }

    #[test]
    fn the_cached_share_counts_only_replicas_that_report_it() {
        let report = PoolReport {
            routing: Routing::Sticky,
            replicas: vec![
                ReplicaReport {
                    prompt_tokens: 100,
                    cached_tokens: 80,
                    cache_reported: true,
                    ..ReplicaReport::default()
                },
                ReplicaReport {
                    prompt_tokens: 100,
                    ..ReplicaReport::default()
                },
            ],
        };
        assert_eq!(report.cached_share(), Some(0.8));
        assert_eq!(report.replicas[1].cached_share(), None);
        let table = replica_table(&[("learner".into(), report)]);
        assert!(table.contains("80.0%"), "{table}");
        assert!(table.contains("all (sticky routing)"), "{table}");
    }
}
