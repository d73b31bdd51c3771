//! Where the ratings' observations wait when an eval's file is large: [`SpillStore`], the
//! [`SampleStore`] that `eval` and `report` give [`crate::score::Comparisons`], so that
//! their memory stays flat however many episodes the file holds.
//!
//! Up to [`SPILL_AFTER`] observations wait in memory; a store that never holds more never
//! touches the disk and hands them back as one part. Past that, the waiting observations move
//! to [`PARTITIONS`] partition files by key (the key's top bits), [`SpillFiles`], in a
//! directory of their own under the given one (the report's directory, or beside the eval's
//! record file), 20 bytes per observation; the rating then reads one partition at a time,
//! every observation of a key being in the same partition. The files are removed when the
//! store is dropped — after the ratings, or on any error that abandons them. A process killed
//! by a signal cannot remove its own: while a store lives it holds an exclusive lock on a file
//! in its directory, and the next store made in the same place removes the directories whose
//! lock nobody holds (the kernel drops a dead process's locks; NFSv4 shares them across
//! machines, so a live store elsewhere is never taken for a dead one).
//!
//! This is the I/O half of the seam; the rating itself (`score::rating`) stays pure.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::score::{RatingSample, SampleStore};

/// Observations kept in memory before they move to files (about 6 MB of them).
pub(crate) const SPILL_AFTER: usize = 262_144;

/// Partition files: the rating holds one at a time, about 1/64 of the observations.
pub(crate) const PARTITIONS: u64 = 64;

/// Bytes of one observation in a file: key, player, ρ's bits, little-endian.
const ENCODED: usize = 20;

/// Spill directories made by this process so far (their names must differ).
static MADE: AtomicU64 = AtomicU64::new(0);

/// The spill files could not be written or read back.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    #[error("ratings spill file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "ratings spill file {path}: {bytes} bytes is not a whole number of {ENCODED}-byte \
         observations (was it changed while the ratings were collected?)"
    )]
    Torn { path: String, bytes: usize },
    #[error(
        "ratings spill file {path} was written and is gone (was the directory removed while \
         the ratings were collected?)"
    )]
    Missing { path: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SpillError + '_ {
    move |source| SpillError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Observations in memory up to a limit, then in partition files (see the module doc).
#[derive(Debug)]
pub(crate) struct SpillStore {
    /// Where the files' directory goes, once needed.
    under: PathBuf,
    limit: usize,
    waiting: Vec<RatingSample>,
    files: Option<SpillFiles>,
    len: u64,
}

impl Default for SpillStore {
    /// Spilling to the system's temp directory.
    fn default() -> SpillStore {
        SpillStore::under(std::env::temp_dir())
    }
}

impl SpillStore {
    /// A store whose files, if it needs any, go in a directory of their own under `dir`
    /// (created when missing).
    pub fn under(dir: impl Into<PathBuf>) -> SpillStore {
        SpillStore::with_limit(dir, SPILL_AFTER)
    }

    /// As [`SpillStore::under`], keeping at most `limit` observations in memory.
    pub(crate) fn with_limit(dir: impl Into<PathBuf>, limit: usize) -> SpillStore {
        SpillStore {
            under: dir.into(),
            limit: limit.max(1),
            waiting: Vec::new(),
            files: None,
            len: 0,
        }
    }

    /// The files' directory, once the store has spilled.
    #[cfg(test)]
    pub(crate) fn spilled_to(&self) -> Option<&Path> {
        self.files.as_ref().map(|f| f.dir.as_path())
    }
}

impl SampleStore for SpillStore {
    type Error = SpillError;

    fn push(&mut self, observation: RatingSample) -> Result<(), SpillError> {
        self.waiting.push(observation);
        self.len += 1;
        if self.waiting.len() >= self.limit {
            if self.files.is_none() {
                self.files = Some(SpillFiles::create(&self.under)?);
            }
            if let Some(files) = &self.files {
                files.append(&mut self.waiting)?;
            }
            self.waiting.clear();
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn parts(&self) -> impl Iterator<Item = Result<Vec<RatingSample>, SpillError>> + '_ {
        let parts = if self.files.is_some() { PARTITIONS } else { 1 };
        (0..parts).map(move |p| match &self.files {
            None => Ok(self.waiting.clone()),
            Some(files) => {
                let mut part = files.read(p)?;
                part.extend(self.waiting.iter().filter(|o| partition(o.key) == p));
                Ok(part)
            }
        })
    }
}

/// The partition of a key: its top bits (the best mixed of a hash's).
fn partition(key: u64) -> u64 {
    key >> (64 - PARTITIONS.trailing_zeros())
}

/// The partition files of one store, in a directory of their own, removed (with it) on drop.
#[derive(Debug)]
pub(crate) struct SpillFiles {
    dir: PathBuf,
    /// The directory's lock file, locked while the store lives (see the module doc).
    _owner: std::fs::File,
    /// Bit p: partition p has a file.
    written: AtomicU64,
}

/// The lock file in a spill directory.
const OWNER_LOCK: &str = "owner.lock";

impl SpillFiles {
    /// A new, empty directory under `under` (`.dealgym-ratings-<pid>-<n>`), its lock file
    /// held. Directories left there by a store whose process died are removed first.
    pub fn create(under: &Path) -> Result<SpillFiles, SpillError> {
        std::fs::create_dir_all(under).map_err(io(under))?;
        remove_abandoned(under);
        let dir = under.join(format!(
            "{SPILL_PREFIX}{}-{}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir).map_err(io(&dir))?;
        let lock = dir.join(OWNER_LOCK);
        let owner = std::fs::File::create(&lock).map_err(io(&lock))?;
        owner.lock().map_err(io(&lock))?;
        Ok(SpillFiles {
            dir,
            _owner: owner,
            written: AtomicU64::new(0),
        })
    }

    fn path(&self, partition: u64) -> PathBuf {
        self.dir.join(format!("{partition:02}.bin"))
    }

    /// Append observations to their partitions' files (sorting them by partition).
    pub fn append(&self, observations: &mut [RatingSample]) -> Result<(), SpillError> {
        observations.sort_unstable_by_key(|o| partition(o.key));
        for same in observations.chunk_by(|a, b| partition(a.key) == partition(b.key)) {
            let p = partition(same[0].key);
            let path = self.path(p);
            self.written.fetch_or(1 << p, Ordering::Relaxed);
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(io(&path))?;
            let mut out = std::io::BufWriter::new(file);
            for o in same {
                let mut bytes = [0u8; ENCODED];
                bytes[..8].copy_from_slice(&o.key.to_le_bytes());
                bytes[8..12].copy_from_slice(&o.player.to_le_bytes());
                bytes[12..].copy_from_slice(&o.rho.to_bits().to_le_bytes());
                out.write_all(&bytes).map_err(io(&path))?;
            }
            out.flush().map_err(io(&path))?;
        }
        Ok(())
    }

    /// The observations of one partition (none if none was written to it).
    pub fn read(&self, partition: u64) -> Result<Vec<RatingSample>, SpillError> {
        let path = self.path(partition);
        if self.written.load(Ordering::Relaxed) & (1 << partition) == 0 {
            return Ok(Vec::new());
        }
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SpillError::Missing {
                    path: path.display().to_string(),
                })
            }
            Err(e) => return Err(io(&path)(e)),
        };
        if bytes.len() % ENCODED != 0 {
            return Err(SpillError::Torn {
                path: path.display().to_string(),
                bytes: bytes.len(),
            });
        }
        Ok(bytes
            .chunks_exact(ENCODED)
            .map(|b| {
                let word = |range: std::ops::Range<usize>| {
                    let mut w = [0u8; 8];
                    w[..range.len()].copy_from_slice(&b[range]);
                    u64::from_le_bytes(w)
                };
                RatingSample {
                    key: word(0..8),
                    player: word(8..12) as u32,
                    rho: f64::from_bits(word(12..20)),
                }
            })
            .collect())
    }
}

/// How a spill directory's name starts; the process id and a count follow.
const SPILL_PREFIX: &str = ".dealgym-ratings-";

/// How long a spill directory's lock file must have existed before an unheld lock means its
/// store is gone: a new store creates the file a moment before it takes the lock.
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Remove the spill directories under `under` whose lock nobody holds: their store's process
/// died without removing them. Best effort — a directory that cannot be checked or removed is
/// left as it was, and the new store does not depend on it.
fn remove_abandoned(under: &Path) {
    let Ok(entries) = std::fs::read_dir(under) else {
        return;
    };
    for entry in entries.flatten() {
        let is_spill = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(SPILL_PREFIX));
        if !is_spill {
            continue;
        }
        let lock = entry.path().join(OWNER_LOCK);
        let Ok(file) = std::fs::File::open(&lock) else {
            continue;
        };
        let old_enough = file
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= ABANDONED_AFTER);
        if old_enough && file.try_lock().is_ok() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Drop for SpillFiles {
    fn drop(&mut self) {
        // Nothing to tell anyone about if it fails: the directory's name says what it was.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::{Comparisons, InMemory};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dealgym-spill-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// 200 situations with three players each, keys spread over all 64 bits (as hashes are),
    /// ρ with upsets and ties.
    fn observations() -> Vec<(u64, String, f64)> {
        let mut out = Vec::new();
        for s in 0..60u64 {
            let key = s.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            for p in 0..3u64 {
                let rho = ((s * 7 + p * 13) % 10) as f64 / 10.0 + (3 - p) as f64 * 0.1;
                out.push((key, format!("player-{p}"), rho));
            }
        }
        out
    }

    #[test]
    fn spilled_files_give_the_same_ratings_as_memory_and_can_be_read_again() {
        let dir = scratch("same");
        let mut memory: Comparisons<InMemory> = Comparisons::default();
        let mut spilled = Comparisons::new(SpillStore::with_limit(&dir, 40));
        for (key, player, rho) in observations() {
            let Ok(()) = memory.add(key, &player, rho);
            spilled.add(key, &player, rho).expect("spilled");
        }
        let Ok(expected) = memory.ratings(|_| true);
        // 180 observations, 40 at a time: all but the last 20 in files.
        assert_eq!(spilled.len(), 180);
        let first = spilled.ratings(|_| true).expect("read back");
        assert_eq!(first, expected, "bit for bit");
        assert_eq!(spilled.ratings(|_| true).expect("read again"), expected);
        assert!(expected.iter().all(|r| r.comparisons == 120));
    }

    #[test]
    fn the_files_are_removed_on_drop_and_a_small_store_makes_none() {
        let dir = scratch("drop");
        let mut store = SpillStore::with_limit(&dir, 10);
        let mut small = SpillStore::under(&dir);
        for (i, (key, _, rho)) in observations().into_iter().take(25).enumerate() {
            let o = RatingSample {
                key,
                player: i as u32 % 3,
                rho,
            };
            store.push(o).expect("spilled");
            small.push(o).expect("kept");
        }
        assert!(small.spilled_to().is_none());
        let files = store.spilled_to().expect("spilled").to_path_buf();
        assert!(files.starts_with(&dir));
        let names = std::fs::read_dir(&files).expect("listed").count();
        assert!(names > 1, "{names} partition files");
        let parts: Vec<Vec<RatingSample>> = store.parts().collect::<Result<_, _>>().unwrap();
        assert_eq!(parts.len() as u64, PARTITIONS);
        assert_eq!(parts.iter().map(Vec::len).sum::<usize>(), 25);
        drop(store);
        assert!(!files.exists(), "{} left behind", files.display());
        assert_eq!(std::fs::read_dir(&dir).expect("listed").count(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unheld_spill_is_removed_and_a_held_one_kept() {
        let dir = scratch("abandoned");
        let old = std::time::SystemTime::now() - 2 * ABANDONED_AFTER;
        // One left by a dead store (its lock file old, nobody holding it), one fresh (its
        // store may be about to lock it), one held by a live store, and something else.
        let dead = dir.join(format!("{SPILL_PREFIX}1-0"));
        let fresh = dir.join(format!("{SPILL_PREFIX}1-1"));
        let other = dir.join("notes");
        for d in [&dead, &fresh, &other] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join(OWNER_LOCK), b"").unwrap();
        }
        let file = std::fs::File::options()
            .write(true)
            .open(dead.join(OWNER_LOCK))
            .unwrap();
        file.set_modified(old).unwrap();
        let live = SpillFiles::create(&dir).unwrap();
        std::fs::File::options()
            .write(true)
            .open(live.dir.join(OWNER_LOCK))
            .unwrap()
            .set_modified(old)
            .unwrap();
        let next = SpillFiles::create(&dir).unwrap();
        assert!(!dead.exists(), "a dead store's spill is removed");
        assert!(fresh.exists() && other.exists());
        assert!(live.dir.exists(), "a live store's spill is kept");
        drop((live, next));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_written_partition_that_is_gone_is_an_error() {
        let dir = scratch("gone");
        let files = SpillFiles::create(&dir).unwrap();
        let mut observations = vec![RatingSample {
            key: 7,
            player: 1,
            rho: 0.5,
        }];
        files.append(&mut observations).unwrap();
        let p = partition(7);
        assert_eq!(files.read(p).unwrap().len(), 1);
        assert!(files.read((p + 1) % PARTITIONS).unwrap().is_empty());
        std::fs::remove_file(files.path(p)).unwrap();
        let err = files.read(p).unwrap_err().to_string();
        assert!(err.contains("was written and is gone"), "{err}");
        drop(files);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_file_is_an_error_that_names_it() {
        let dir = scratch("torn");
        let mut store = SpillStore::with_limit(&dir, 2);
        for key in [1u64, 2] {
            let o = RatingSample {
                key,
                player: 0,
                rho: 0.5,
            };
            store.push(o).expect("spilled");
        }
        let path = store.spilled_to().expect("spilled").join("00.bin");
        std::fs::write(&path, [0u8; 7]).expect("torn");
        let error = store.parts().find_map(Result::err).expect("an error");
        assert!(error.to_string().contains("00.bin"), "{error}");
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
