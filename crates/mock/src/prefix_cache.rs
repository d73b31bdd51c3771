//! A model of a server's prefix cache, so routing can be measured without a model: as vLLM's
//! automatic prefix caching does, a prompt (in the mock's own tokenization) is cut into blocks
//! of [`BLOCK_TOKENS`]; each block is known by a hash of itself and every block before it, so a
//! block is a hit only when the whole prefix up to it was seen. A request's cached tokens are
//! its leading blocks found in the cache; then every block of its prompt is stored (or
//! refreshed), the least recently used blocks giving way once the capacity is reached.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use dealgym::digest::Fnv1a64;

/// Tokens per cache block (vLLM's default block size).
pub(crate) const BLOCK_TOKENS: usize = 16;

/// An LRU of prompt blocks holding at most `capacity` tokens.
#[derive(Debug)]
pub(crate) struct PrefixCache {
    capacity_blocks: usize,
    lru: Mutex<Lru>,
}

#[derive(Debug, Default)]
struct Lru {
    clock: u64,
    /// Block hash → when it was last used.
    used: HashMap<u64, u64>,
    /// When → block hash, oldest first.
    order: BTreeMap<u64, u64>,
}

impl Lru {
    fn touch(&mut self, block: u64) {
        self.clock += 1;
        if let Some(old) = self.used.insert(block, self.clock) {
            self.order.remove(&old);
        }
        self.order.insert(self.clock, block);
    }

    fn evict_to(&mut self, capacity: usize) {
        while self.used.len() > capacity {
            let Some((_, block)) = self.order.pop_first() else {
                break;
            };
            self.used.remove(&block);
        }
    }
}

impl PrefixCache {
    /// A cache of `capacity_tokens` (rounded down to whole blocks); `None` for 0 (no cache).
    pub fn new(capacity_tokens: u64) -> Option<PrefixCache> {
        let blocks = (capacity_tokens / BLOCK_TOKENS as u64) as usize;
        (blocks > 0).then(|| PrefixCache {
            capacity_blocks: blocks,
            lru: Mutex::new(Lru::default()),
        })
    }

    /// Serve a prompt: how many of its leading tokens were cached, then store its blocks.
    pub fn serve(&self, prompt: &[u32]) -> u64 {
        let mut lru = self.lru.lock().unwrap_or_else(|e| e.into_inner());
        // One FNV-1a over the whole prefix so far: a block's key names every token before it.
        let mut prefix = Fnv1a64::new();
        let mut cached = 0u64;
        let mut missed = false;
        for block in prompt.chunks_exact(BLOCK_TOKENS) {
            for id in block {
                prefix.update(&id.to_le_bytes());
            }
            let hash = prefix.finish().0;
            if !missed && lru.used.contains_key(&hash) {
                cached += BLOCK_TOKENS as u64;
            } else {
                missed = true;
            }
            lru.touch(hash);
        }
        lru.evict_to(self.capacity_blocks);
        cached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(len: usize, salt: u32) -> Vec<u32> {
        (0..len as u32).map(|i| i.wrapping_mul(31) ^ salt).collect()
    }

    #[test]
    fn a_grown_conversation_hits_its_earlier_prompt_in_whole_blocks() {
        let cache = PrefixCache::new(10_000).unwrap();
        let first = prompt(100, 0);
        assert_eq!(cache.serve(&first), 0);
        let mut grown = first.clone();
        grown.extend(prompt(50, 7));
        // 100 tokens seen: six whole blocks (96 tokens) are hits.
        assert_eq!(cache.serve(&grown), 96);
        // The same prompt again: every whole block.
        assert_eq!(cache.serve(&grown), 144);
    }

    #[test]
    fn a_different_start_misses_even_where_later_tokens_match() {
        let cache = PrefixCache::new(10_000).unwrap();
        cache.serve(&prompt(64, 0));
        let mut other = prompt(64, 0);
        other[0] ^= 1;
        assert_eq!(cache.serve(&other), 0);
    }

    #[test]
    fn the_least_recently_used_blocks_give_way_at_capacity() {
        let cache = PrefixCache::new(64).unwrap(); // four blocks
        let a = prompt(64, 1);
        let b = prompt(64, 2);
        cache.serve(&a);
        cache.serve(&b); // evicts a
        assert_eq!(cache.serve(&a), 0);
        assert!(PrefixCache::new(0).is_none());
        assert!(PrefixCache::new(15).is_none());
    }
}
