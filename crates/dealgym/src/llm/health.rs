//! Replica health: probed once before a pool's first call, taken out of rotation after a failed
//! probe or `eject_after` transient failures in a row, and probed again while out — with a
//! backoff that doubles per failed probe, up to 16 times `health_interval_s` — until a probe
//! succeeds and puts it back. The probe is `GET` of the replica's health route at the server
//! root (`/health`, which vLLM and llama.cpp both serve).
//!
//! The probing loop runs as one background task per pool and holds only a weak reference: it
//! ends once the pool is dropped.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::pool::{Inner, ReplicaPool, State};

/// The longest wait between two probes of a replica out of rotation, in health intervals.
const MAX_BACKOFF_INTERVALS: u32 = 16;

/// Take replica `i` out of rotation (if it is in): its seats move at their next call.
pub(super) fn eject(state: &mut State, i: usize, interval: Duration) {
    if !state.loads[i].healthy {
        return;
    }
    state.loads[i].healthy = false;
    state.reports[i].ejections += 1;
    state.health[i].probe_backoff = interval;
    state.health[i].next_probe = Instant::now() + interval;
}

/// Put replica `i` back after a successful probe.
fn readmit(state: &mut State, i: usize, interval: Duration) {
    if state.loads[i].healthy {
        return;
    }
    state.loads[i].healthy = true;
    state.reports[i].readmissions += 1;
    state.health[i].consecutive_failures = 0;
    state.health[i].probe_backoff = interval;
}

/// After a failed probe of a replica already out: wait longer before the next one.
fn back_off(state: &mut State, i: usize, interval: Duration) {
    let h = &mut state.health[i];
    h.probe_backoff = (h.probe_backoff * 2).min(interval * MAX_BACKOFF_INTERVALS);
    h.next_probe = Instant::now() + h.probe_backoff;
}

impl ReplicaPool {
    /// Before the first call: probe every replica (those that fail start out of rotation) and
    /// start the probing loop. Later calls return at once.
    pub(super) async fn start(&self) {
        self.inner
            .started
            .get_or_init(|| async {
                let probes = (0..self.len()).map(|i| probe(&self.inner, i));
                futures_util::future::join_all(probes).await;
                tokio::spawn(probe_loop(Arc::downgrade(&self.inner)));
            })
            .await;
    }
}

/// Probe replica `i` once and act on the answer.
async fn probe(inner: &Inner, i: usize) -> bool {
    let ok = inner.replicas[i].healthy().await;
    let mut state = inner.lock();
    state.reports[i].probes += 1;
    if ok {
        readmit(&mut state, i, inner.health_interval);
    } else if state.loads[i].healthy {
        eject(&mut state, i, inner.health_interval);
    } else {
        back_off(&mut state, i, inner.health_interval);
    }
    ok
}

/// Every health interval, probe the replicas out of rotation whose backoff has passed. Ends
/// when the pool is gone.
async fn probe_loop(pool: Weak<Inner>) {
    loop {
        let interval = match pool.upgrade() {
            Some(inner) => inner.health_interval,
            None => return,
        };
        tokio::time::sleep(interval).await;
        let Some(inner) = pool.upgrade() else {
            return;
        };
        let due: Vec<usize> = {
            let state = inner.lock();
            let now = Instant::now();
            (0..inner.replicas.len())
                .filter(|&i| !state.loads[i].healthy && state.health[i].next_probe <= now)
                .collect()
        };
        for i in due {
            probe(&inner, i).await;
        }
    }
}
