//! The permit an episode plays under — one of a run's `--concurrency` places, or of the
//! rollout budget every client of a server shares — given back while one of its calls waits
//! between tries ([`wait_between_tries`]) and taken again, in turn, after: an endpoint that
//! fails and is retried with long waits holds no place another episode (another client's
//! rollout) could play in meanwhile. The executor (`run`) plays each episode inside its
//! permit's [`scope`](PlayPermit::scope); a call made outside one just waits.
//!
//! An episode may make several calls at once (the judge and the reward model, per seat): the
//! permit is one, given back by the first that waits, and taken again by the first whose wait
//! ends; the others go on under it. None ever waits for a permit its own episode holds.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// One episode's place among `permits`, held while it plays, not while it waits.
pub(crate) struct PlayPermit {
    permits: Arc<Semaphore>,
    held: Mutex<Option<OwnedSemaphorePermit>>,
    /// Told when a call of this episode has taken the permit again.
    retaken: Notify,
}

tokio::task_local! {
    static PLAYING: Arc<PlayPermit>;
}

impl PlayPermit {
    pub(crate) fn new(permits: Arc<Semaphore>, held: OwnedSemaphorePermit) -> Arc<PlayPermit> {
        Arc::new(PlayPermit {
            permits,
            held: Mutex::new(Some(held)),
            retaken: Notify::new(),
        })
    }

    /// Play `future` under this permit: its calls' waits between tries give it back.
    pub(crate) async fn scope<F: Future>(self: &Arc<Self>, future: F) -> F::Output {
        PLAYING.scope(self.clone(), future).await
    }

    /// Give the permit back: the episode waits, or has ended.
    pub(crate) fn release(&self) {
        drop(self.held().take());
    }

    /// Take a permit again, behind those already waiting for one, unless another call of this
    /// episode has (or does meanwhile).
    async fn retake(&self) {
        loop {
            let retaken = self.retaken.notified();
            tokio::pin!(retaken);
            retaken.as_mut().enable();
            if self.held().is_some() {
                return;
            }
            tokio::select! {
                permit = self.permits.clone().acquire_owned() => {
                    if let Ok(permit) = permit {
                        self.held().get_or_insert(permit);
                        self.retaken.notify_waiters();
                    }
                    return;
                }
                _ = &mut retaken => continue,
            }
        }
    }

    fn held(&self) -> MutexGuard<'_, Option<OwnedSemaphorePermit>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Wait `wait` before a call's next try, without holding the permit its episode plays under.
pub(crate) async fn wait_between_tries(wait: Duration) {
    let playing = PLAYING.try_with(Arc::clone).ok();
    if let Some(permit) = &playing {
        permit.release();
    }
    tokio::time::sleep(wait).await;
    if let Some(permit) = playing {
        permit.retake().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_waiting_between_tries_holds_no_permit() {
        let permits = Arc::new(Semaphore::new(1));
        let held = permits.clone().acquire_owned().await.unwrap();
        let playing = PlayPermit::new(permits.clone(), held);
        let waiting = tokio::spawn({
            let playing = playing.clone();
            async move {
                playing
                    .scope(wait_between_tries(Duration::from_millis(200)))
                    .await
            }
        });
        // Given back as the wait starts: another takes the place meanwhile.
        let other = tokio::time::timeout(Duration::from_secs(10), permits.clone().acquire_owned())
            .await
            .expect("the permit was held while waiting")
            .unwrap();
        // The waiting call takes a place again once one is free, not before.
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(!waiting.is_finished(), "took a place that was not free");
        drop(other);
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("never took its place again")
            .unwrap();
        assert_eq!(permits.available_permits(), 0);
        playing.release();
        assert_eq!(permits.available_permits(), 1);
    }

    /// Before, two calls of one episode under its only permit both waited, and the second to
    /// end its wait waited for the permit the first had taken again: for ever.
    #[tokio::test]
    async fn calls_of_one_episode_share_its_permit_and_never_wait_for_it() {
        let permits = Arc::new(Semaphore::new(1));
        let held = permits.clone().acquire_owned().await.unwrap();
        let playing = PlayPermit::new(permits.clone(), held);
        let both = playing.scope(futures_util::future::join(
            wait_between_tries(Duration::from_millis(50)),
            wait_between_tries(Duration::from_millis(150)),
        ));
        tokio::time::timeout(Duration::from_secs(10), both)
            .await
            .expect("a call waited for its own episode's permit");
        assert_eq!(permits.available_permits(), 0);
        playing.release();
        assert_eq!(permits.available_permits(), 1);
    }
}
