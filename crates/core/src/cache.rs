//! A small memo shared across tasks: values that are costly to build and asked for again and
//! again (a rule seat's stance, the mock's reading of a system prompt). Bounded by forgetting
//! everything once full — the entries are cheap to rebuild and a run's working set is small.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// A thread-safe memo holding at most `capacity` entries.
#[derive(Debug)]
pub struct BoundedCache<K, V> {
    map: Mutex<HashMap<K, V>>,
    capacity: usize,
}

impl<K: Hash + Eq, V: Clone> BoundedCache<K, V> {
    pub fn new(capacity: usize) -> Self {
        BoundedCache {
            map: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// The value for `key`, built with `make` (outside the lock) when not cached.
    pub fn get_or_insert_with(&self, key: K, make: impl FnOnce() -> V) -> V {
        if let Some(found) = self.lock().get(&key) {
            return found.clone();
        }
        let value = make();
        let mut map = self.lock();
        if map.len() >= self.capacity {
            map.clear();
        }
        map.insert(key, value.clone());
        value
    }

    /// The cached value for `key`, if any: for values built asynchronously, which
    /// [`get_or_insert_with`](Self::get_or_insert_with) cannot wait for.
    pub fn get(&self, key: &K) -> Option<V> {
        self.lock().get(key).cloned()
    }

    /// Cache `value` for `key` (forgetting everything first when full).
    pub fn insert(&self, key: K, value: V) {
        let mut map = self.lock();
        if map.len() >= self.capacity && !map.contains_key(&key) {
            map.clear();
        }
        map.insert(key, value);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, V>> {
        // A panic while holding the lock cannot leave a half-written entry: keep going.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_once_and_forgets_when_full() {
        let cache = BoundedCache::new(2);
        let built = std::cell::Cell::new(0);
        let get = |k: u32| {
            cache.get_or_insert_with(k, || {
                built.set(built.get() + 1);
                k * 10
            })
        };
        assert_eq!(get(1), 10);
        assert_eq!(get(1), 10);
        assert_eq!(get(2), 20);
        assert_eq!(built.get(), 2);
        assert_eq!(get(3), 30); // full: forgets 1 and 2
        assert_eq!(get(1), 10);
        assert_eq!(built.get(), 4);
        assert_eq!(cache.len(), 2);
    }
}
