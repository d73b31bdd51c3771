//! When two records are one episode, and what a reader does with the second: the one home of
//! the duplicate rule. An episode is known by its [`EpisodeKey`] — (run id, episode id): a
//! run's ids are unique within it (`g{group}-m{member}`), and an eval's file holds one run per
//! pairing. A record whose key an earlier record of the same read already had (in the same
//! file or an earlier one) is a duplicate: left by two writers on one file before files were
//! locked, by a file concatenated twice, or by hand. Counted twice, it weighs its episode
//! double in every table and makes a GRPO group look larger than it is.
//!
//! Every command that reads records takes `--duplicates refuse|skip` ([`OnDuplicate`]):
//! `refuse` (the default) stops at the first duplicate naming both places; `skip` reads each
//! episode's first record and counts the rest ([`Duplicates`]). `run`, `eval` and `annotate`
//! count the duplicates of the file they resume ([`super::scan_existing`]) the same way, and
//! `merge` keys episodes by the same [`EpisodeKey`].

use std::collections::hash_map::{Entry, HashMap};
use std::hash::{BuildHasher, RandomState};

/// One episode, named: what makes two records the same episode.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EpisodeKey {
    pub run_id: String,
    pub episode_id: String,
}

impl std::fmt::Display for EpisodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.run_id, self.episode_id)
    }
}

/// What a command that reads records does with a duplicate (`--duplicates`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OnDuplicate {
    /// Stop at the first, naming it and where its episode was first read.
    #[default]
    Refuse,
    /// Read each episode's first record; count the others and say how many.
    Skip,
}

impl OnDuplicate {
    pub(crate) fn name(self) -> &'static str {
        match self {
            OnDuplicate::Refuse => "refuse",
            OnDuplicate::Skip => "skip",
        }
    }
}

impl std::fmt::Display for OnDuplicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for OnDuplicate {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "refuse" => Ok(OnDuplicate::Refuse),
            "skip" => Ok(OnDuplicate::Skip),
            _ => Err(format!("`{s}`: say refuse or skip")),
        }
    }
}

/// Duplicated records found: how many, and the first.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Duplicates {
    /// Records whose episode an earlier record already had.
    pub(crate) lines: usize,
    /// The first of them: its episode and where it was read (`FILE:LINE`).
    pub(crate) first: Option<(EpisodeKey, String)>,
}

impl Duplicates {
    /// Take in the duplicates another reading of the same files found (the other kind's).
    pub fn absorb(&mut self, other: Duplicates) {
        self.lines += other.lines;
        if self.first.is_none() {
            self.first = other.first;
        }
    }

    /// Count one more, read at `at` (`FILE:LINE`).
    pub(crate) fn add(&mut self, key: &EpisodeKey, at: impl FnOnce() -> String) {
        self.lines += 1;
        if self.first.is_none() {
            self.first = Some((key.clone(), at()));
        }
    }

    /// What a reader that skipped them says: `None` when there were none.
    pub fn skipped_note(&self) -> Option<String> {
        let (key, at) = self.first.as_ref()?;
        Some(format!(
            "skipped {} duplicated records (the first: run {} episode {} at {at}); each \
             episode was read once",
            self.lines, key.run_id, key.episode_id
        ))
    }

    /// Why a command that reads `file` whole refuses it for these (under
    /// [`OnDuplicate::Refuse`], before it starts); `None` when there are none.
    pub fn refusal(&self, file: &std::path::Path) -> Option<String> {
        let (key, at) = self.first.as_ref()?;
        Some(format!(
            "{} holds {} records that repeat an episode already in it (the first: episode {} \
             of run {} at {at}): pass --duplicates skip to read each episode once, or \
             `dealgym merge` it into a file of one of each",
            file.display(),
            self.lines,
            key.episode_id,
            key.run_id
        ))
    }

    /// The warning a resumed command prints for a file it appends to, naming `file`; `None`
    /// when there are none.
    pub fn warning(&self, file: &std::path::Path) -> Option<String> {
        let (key, at) = self.first.as_ref()?;
        Some(format!(
            "warning: {} holds {} lines that repeat an episode already in it (the first: \
             episode {} at {at}): were two commands writing to it at once? Readers refuse \
             the file unless given --duplicates skip; `dealgym merge` keeps one of each",
            file.display(),
            self.lines,
            key.episode_id
        ))
    }
}

/// Where a record was read: the index of its file among those read, and its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Place {
    pub file: usize,
    pub line: usize,
}

/// The episodes a read has met, by key, with where each was first read. A key is held as a
/// 128-bit keyed hash (two SipHash keys drawn for this read) and its place in 8 bytes, 24
/// bytes an episode however long the ids: what grows with the files a report or an export
/// reads is this and nothing else. Two keys share a hash with a chance of about 2⁻¹²⁸ a pair.
#[derive(Debug, Default)]
pub(crate) struct SeenEpisodes {
    hashers: [RandomState; 2],
    first: HashMap<u128, (u32, u32)>,
}

impl SeenEpisodes {
    /// Note the record of `key` read at `at`: `None` the first time its episode is met, else
    /// where that was.
    pub(crate) fn first_seen(&mut self, key: &EpisodeKey, at: Place) -> Option<Place> {
        let ids = (&key.run_id, &key.episode_id);
        let hash = (u128::from(self.hashers[0].hash_one(ids)) << 64)
            | u128::from(self.hashers[1].hash_one(ids));
        let packed = (
            u32::try_from(at.file).unwrap_or(u32::MAX),
            u32::try_from(at.line).unwrap_or(u32::MAX),
        );
        match self.first.entry(hash) {
            Entry::Occupied(first) => {
                let (file, line) = *first.get();
                Some(Place {
                    file: file as usize,
                    line: line as usize,
                })
            }
            Entry::Vacant(first) => {
                first.insert(packed);
                None
            }
        }
    }

    /// Episodes met.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.first.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(run: &str, episode: &str) -> EpisodeKey {
        EpisodeKey {
            run_id: run.into(),
            episode_id: episode.into(),
        }
    }

    #[test]
    fn an_episode_is_its_run_id_and_episode_id_together() {
        let mut seen = SeenEpisodes::default();
        let at = |file, line| Place { file, line };
        assert_eq!(seen.first_seen(&key("r1", "g0-m0"), at(0, 1)), None);
        assert_eq!(
            seen.first_seen(&key("r2", "g0-m0"), at(0, 2)),
            None,
            "another run"
        );
        assert_eq!(seen.first_seen(&key("r1", "g0-m1"), at(0, 3)), None);
        // The ids are hashed as a pair, not as their concatenation.
        assert_eq!(seen.first_seen(&key("r1g", "0-m0"), at(0, 4)), None);
        assert_eq!(
            seen.first_seen(&key("r1", "g0-m0"), at(1, 9)),
            Some(at(0, 1)),
            "the same episode in a later file"
        );
        assert_eq!(seen.len(), 4);
    }

    #[test]
    fn duplicates_are_counted_with_the_first_named() {
        let mut found = Duplicates::default();
        assert_eq!(found.skipped_note(), None);
        found.add(&key("r1", "g1-m0"), || "a.jsonl:4".into());
        found.add(&key("r1", "g0-m0"), || {
            unreachable!("only the first is kept")
        });
        assert_eq!(
            found.skipped_note().unwrap(),
            "skipped 2 duplicated records (the first: run r1 episode g1-m0 at a.jsonl:4); \
             each episode was read once"
        );
        assert_eq!("skip".parse(), Ok(OnDuplicate::Skip));
        assert!("keep".parse::<OnDuplicate>().is_err());
    }
}
