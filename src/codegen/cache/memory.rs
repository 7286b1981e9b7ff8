//! The in-memory cache: key → PTX for this process, bounded, oldest entries evicted first.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;

use super::Key;

/// Most entries kept.
pub(crate) const MAX_ENTRIES: usize = 1024;
/// Most bytes of PTX kept.
pub(crate) const MAX_BYTES: usize = 256 << 20;

/// A bounded map with first-in, first-out eviction.
pub(crate) struct MemoryCache {
    map: BTreeMap<Key, Arc<str>>,
    order: VecDeque<Key>,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

impl MemoryCache {
    /// An empty cache holding at most `max_entries` entries and `max_bytes` bytes of PTX.
    pub(crate) const fn new(max_entries: usize, max_bytes: usize) -> Self {
        MemoryCache {
            map: BTreeMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            max_entries,
            max_bytes,
        }
    }

    /// The PTX stored under `key`.
    pub(crate) fn get(&self, key: &Key) -> Option<Arc<str>> {
        self.map.get(key).cloned()
    }

    /// Stores `ptx` under `key` (keeping an entry already there), evicting the oldest entries
    /// beyond the bounds. PTX larger than the byte bound is not kept.
    pub(crate) fn insert(&mut self, key: Key, ptx: Arc<str>) {
        if ptx.len() > self.max_bytes || self.max_entries == 0 || self.map.contains_key(&key) {
            return;
        }
        self.bytes += ptx.len();
        self.map.insert(key, ptx);
        self.order.push_back(key);
        while self.map.len() > self.max_entries || self.bytes > self.max_bytes {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(p) = self.map.remove(&old) {
                self.bytes -= p.len();
            }
        }
    }

    /// Removes every entry; returns how many there were.
    pub(crate) fn clear(&mut self) -> usize {
        let n = self.map.len();
        self.map.clear();
        self.order.clear();
        self.bytes = 0;
        n
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Bytes of PTX held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The process's memory cache.
pub(crate) static MEMORY: Mutex<MemoryCache> = Mutex::new(MemoryCache::new(MAX_ENTRIES, MAX_BYTES));

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u8) -> Key {
        Key([i; 32])
    }

    #[test]
    fn evicts_oldest_beyond_the_entry_bound() {
        let mut c = MemoryCache::new(3, 1 << 20);
        for i in 0..5 {
            c.insert(key(i), Arc::from(format!("ptx {i}")));
        }
        assert_eq!(c.len(), 3);
        assert!(c.get(&key(0)).is_none() && c.get(&key(1)).is_none());
        assert_eq!(c.get(&key(4)).as_deref(), Some("ptx 4"));
        assert_eq!(c.bytes(), 15);
    }

    #[test]
    fn evicts_oldest_beyond_the_byte_bound() {
        let mut c = MemoryCache::new(100, 10);
        c.insert(key(1), Arc::from("aaaa"));
        c.insert(key(2), Arc::from("bbbb"));
        c.insert(key(3), Arc::from("cccc"));
        assert!(c.get(&key(1)).is_none());
        assert_eq!((c.len(), c.bytes()), (2, 8));
        c.insert(key(4), Arc::from("x".repeat(11)));
        assert!(c.get(&key(4)).is_none(), "larger than the bound: not kept");
        assert_eq!(c.clear(), 2);
        assert_eq!((c.len(), c.bytes()), (0, 0));
    }

    #[test]
    fn keeps_the_first_entry_for_a_key() {
        let mut c = MemoryCache::new(10, 100);
        c.insert(key(1), Arc::from("first"));
        c.insert(key(1), Arc::from("second"));
        assert_eq!(c.get(&key(1)).as_deref(), Some("first"));
        assert_eq!(c.len(), 1);
    }
}
