//! A model of a server's prefix cache, so routing can be measured without a model: as vLLM's
//! automatic prefix caching does, a prompt (in the mock's own tokenization) is cut into blocks
//! of [`BLOCK_TOKENS`]; each block is known by a hash of itself and every block before it, so a
//! block is a hit only when the whole prefix up to it was seen. A request's cached tokens are
//! its leading blocks found in the cache; then every whole block of its prompt followed by the
//! reply it sampled is stored (or refreshed) — as vLLM keeps the blocks its generated tokens
//! fill, so the next turn of a conversation finds its previous reply cached — the least
//! recently used blocks giving way once the capacity is reached. A partly filled last block is
//! not stored: a conversation's next call re-reads up to `BLOCK_TOKENS − 1` tokens it had sent.

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

    /// Serve a prompt and the reply sampled after it: how many of the prompt's leading tokens
    /// were cached, then store the blocks of both.
    pub fn serve(&self, prompt: &[u32], reply: &[u32]) -> u64 {
        let whole: Vec<u32> = prompt.iter().chain(reply).copied().collect();
        let prompt_blocks = prompt.len() / BLOCK_TOKENS;
        let mut lru = self.lru.lock().unwrap_or_else(|e| e.into_inner());
        // One FNV-1a over the whole prefix so far: a block's key names every token before it.
        let mut prefix = Fnv1a64::new();
        let mut cached = 0u64;
        let mut missed = false;
        for (i, block) in whole.chunks_exact(BLOCK_TOKENS).enumerate() {
            for id in block {
                prefix.update(&id.to_le_bytes());
            }
            let hash = prefix.finish().0;
            if i < prompt_blocks && !missed && lru.used.contains_key(&hash) {
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
        assert_eq!(cache.serve(&first, &[]), 0);
        let mut grown = first.clone();
        grown.extend(prompt(50, 7));
        // 100 tokens seen: six whole blocks (96 tokens) are hits.
        assert_eq!(cache.serve(&grown, &[]), 96);
        // The same prompt again: every whole block.
        assert_eq!(cache.serve(&grown, &[]), 144);
    }

    /// The reply's blocks are kept: the next turn, which holds the prompt, the reply and a new
    /// message, re-reads only the new message and the partial block before it.
    #[test]
    fn the_next_turn_finds_the_reply_it_extends_cached() {
        let cache = PrefixCache::new(10_000).unwrap();
        let (first, reply) = (prompt(100, 0), prompt(30, 5));
        assert_eq!(cache.serve(&first, &reply), 0);
        let mut next: Vec<u32> = first.iter().chain(&reply).copied().collect();
        next.extend(prompt(40, 9));
        // 130 tokens held: eight whole blocks (128).
        assert_eq!(cache.serve(&next, &[]), 128);
        // A reply is never counted as the prompt's cached part.
        let cache = PrefixCache::new(10_000).unwrap();
        assert_eq!(cache.serve(&prompt(8, 0), &prompt(40, 1)), 0);
    }

    #[test]
    fn a_different_start_misses_even_where_later_tokens_match() {
        let cache = PrefixCache::new(10_000).unwrap();
        cache.serve(&prompt(64, 0), &[]);
        let mut other = prompt(64, 0);
        other[0] ^= 1;
        assert_eq!(cache.serve(&other, &[]), 0);
    }

    #[test]
    fn the_least_recently_used_blocks_give_way_at_capacity() {
        let cache = PrefixCache::new(64).unwrap(); // four blocks
        let a = prompt(64, 1);
        let b = prompt(64, 2);
        cache.serve(&a, &[]);
        cache.serve(&b, &[]); // evicts a
        assert_eq!(cache.serve(&a, &[]), 0);
        assert!(PrefixCache::new(0).is_none());
        assert!(PrefixCache::new(15).is_none());
    }
}
