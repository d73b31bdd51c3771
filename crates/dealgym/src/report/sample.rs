//! The transcripts a report shows: a deterministic sample of N episodes kept while records
//! stream by (bottom-k sampling). Each episode gets a rank, a hash of its key and the sample
//! seed; the N episodes with the smallest ranks are kept, so the sample is the same whatever
//! order the episodes arrive in, and every episode is kept when there are no more than N.
//! Only the kept episodes' rendered transcripts are held (at most N), never the records.

use std::collections::BinaryHeap;

use crate::game::{mix, Seat};
use crate::record::EpisodeRecord;
use crate::replay::render::{escape, html_fragment};

/// One kept episode: its place in the input, for filtering, and its transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Transcript {
    /// (file index, record index in the file): the order transcripts are shown in.
    pub at: (usize, usize),
    pub family: String,
    pub outcome: String,
    /// The `<details>` block: a one-line summary, then the transcript.
    pub html: String,
}

#[derive(Debug, PartialEq, Eq)]
struct Ranked {
    rank: u64,
    transcript: Transcript,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank
            .cmp(&other.rank)
            .then(self.transcript.at.cmp(&other.transcript.at))
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The sample being kept.
#[derive(Debug)]
pub(crate) struct Sample {
    size: usize,
    seed: u64,
    seen: usize,
    /// A max-heap by rank: the top is the first to go.
    kept: BinaryHeap<Ranked>,
}

impl Sample {
    pub fn new(size: usize, seed: u64) -> Sample {
        Sample {
            size,
            seed,
            seen: 0,
            kept: BinaryHeap::new(),
        }
    }

    /// Offer an episode; `at` is its place in the input.
    pub fn offer(&mut self, r: &EpisodeRecord, at: (usize, usize)) {
        self.seen += 1;
        if self.size == 0 {
            return;
        }
        let rank = mix(&[r.key(), self.seed]);
        if self.kept.len() == self.size && self.kept.peek().is_some_and(|top| top.rank <= rank) {
            return;
        }
        self.kept.push(Ranked {
            rank,
            transcript: transcript(r, at),
        });
        if self.kept.len() > self.size {
            self.kept.pop();
        }
    }

    /// Episodes offered.
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// The kept transcripts, in input order.
    pub(crate) fn into_transcripts(self) -> Vec<Transcript> {
        let mut kept: Vec<Transcript> = self.kept.into_iter().map(|r| r.transcript).collect();
        kept.sort_by_key(|t| t.at);
        kept
    }
}

/// An episode's `<details>` block: the summary line names the episode, the family, the
/// players, the ending and the learner's ρ; the body is the transcript.
fn transcript(r: &EpisodeRecord, at: (usize, usize)) -> Transcript {
    let o = &r.outcome.outcome;
    let summary = format!(
        "<code>{}</code> · {} · <code>{}</code> · {} vs {} · <strong>{}</strong> · ρ learner {:.3}",
        escape(&r.episode_id),
        r.family,
        escape(&r.scenario_id),
        escape(r.player_name(Seat::Learner)),
        escape(r.player_name(Seat::Opponent)),
        o.kind.name(),
        o.rho.learner
    );
    let html = format!(
        "<details class=\"episode\" data-family=\"{}\" data-outcome=\"{}\" data-run=\"{}\">\n<summary>{summary}</summary>\n<div class=\"transcript\">\n{}</div>\n</details>\n",
        r.family,
        o.kind.name(),
        escape(&r.run_id),
        html_fragment(r)
    );
    Transcript {
        at,
        family: r.family.to_string(),
        outcome: o.kind.name().to_string(),
        html,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{learner_first_as, play, price_task, record_of, turn};
    use crate::scenario::Role;

    fn records(n: usize) -> Vec<EpisodeRecord> {
        let s = price_task(125.0, 100.0, 60.0);
        let base = record_of(play(
            &s,
            learner_first_as(&s, Role::Buyer),
            &[turn("Bye.", "[WALK_AWAY]")],
        ));
        (0..n)
            .map(|i| {
                let mut r = base.clone();
                r.episode_id = format!("g{i}-m0");
                r
            })
            .collect()
    }

    fn ids(sample: Sample) -> Vec<String> {
        let mut ids: Vec<String> = sample
            .into_transcripts()
            .iter()
            .map(|t| {
                let start = t.html.find("<code>").unwrap() + 6;
                let end = t.html[start..].find("</code>").unwrap() + start;
                t.html[start..end].to_string()
            })
            .collect();
        ids.sort();
        ids
    }

    #[test]
    fn the_sample_keeps_n_episodes_whatever_their_order() {
        let all = records(30);
        let (mut forward, mut backward) = (Sample::new(5, 7), Sample::new(5, 7));
        for (i, r) in all.iter().enumerate() {
            forward.offer(r, (0, i));
        }
        for (i, r) in all.iter().enumerate().rev() {
            backward.offer(r, (0, i));
        }
        assert_eq!(forward.seen(), 30);
        let kept = ids(forward);
        assert_eq!(kept.len(), 5);
        assert_eq!(kept, ids(backward));
        // Another seed, another sample.
        let mut other = Sample::new(5, 8);
        for (i, r) in all.iter().enumerate() {
            other.offer(r, (0, i));
        }
        assert_ne!(ids(other), kept);
    }

    #[test]
    fn a_small_input_is_kept_whole_in_input_order_and_zero_keeps_none() {
        let all = records(3);
        let mut sample = Sample::new(200, 0);
        let mut none = Sample::new(0, 0);
        for (i, r) in all.iter().enumerate() {
            sample.offer(r, (1, i));
            none.offer(r, (1, i));
        }
        let kept = sample.into_transcripts();
        let at: Vec<(usize, usize)> = kept.iter().map(|t| t.at).collect();
        assert_eq!(at, vec![(1, 0), (1, 1), (1, 2)]);
        assert!(kept[0].html.starts_with(
            "<details class=\"episode\" data-family=\"craigslist\" data-outcome=\"walk_away\""
        ));
        assert!(none.into_transcripts().is_empty());
    }
}
