//! Hash maps keyed by (process, correlation id) that keep neighbouring ids in
//! neighbouring buckets.
//!
//! The join window ([`super::join`]) holds up to a million launch, GEMM and counter
//! records by (pid, correlation id), and looks each up when its kernel arrives. CUPTI
//! numbers a process's API calls in order, and kernels arrive in nearly the order
//! they were launched, so consecutive lookups are for consecutive ids. A hash that
//! scatters them (SipHash, aHash) makes every lookup a cache miss in a map larger
//! than the cache; this one keeps the id in the bucket bits (`hashbrown` takes the
//! bucket from the low bits), so consecutive ids share cache lines, and puts a mixed
//! copy in the top 7 bits (`hashbrown`'s in-group tag), so ids that wrap around the
//! table still tell apart in one comparison. A process's ids start at an offset of
//! their own, so processes do not pile onto the same buckets.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The hasher (see the module documentation): fed a (pid, correlation id) key as
/// two `u32` writes, the tuple's own `Hash`.
#[derive(Debug, Default, Clone, Copy)]
pub struct CorrelationHasher {
    state: u64,
}

const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
/// The bits below `hashbrown`'s 7-bit tag.
const LOW_BITS: u64 = (1 << 57) - 1;

impl Hasher for CorrelationHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Keys other than integers: fold the bytes in (never used by the join).
        for &b in bytes {
            self.state = (self.state.rotate_left(8) ^ u64::from(b)).wrapping_mul(MIX);
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.state = (self.state << 32) | u64::from(v);
    }

    fn finish(&self) -> u64 {
        let (pid, id) = (self.state >> 32, self.state & 0xFFFF_FFFF);
        // Each process's ids start at a pseudo-random offset, in order from there.
        let low = id.wrapping_add(pid.wrapping_mul(MIX) >> 40) & LOW_BITS;
        let tag = self.state.wrapping_mul(MIX) & !LOW_BITS;
        low | tag
    }
}

pub type BuildCorrelationHasher = BuildHasherDefault<CorrelationHasher>;

/// A map keyed by (pid, correlation id).
pub type CorrelationMap<V> = HashMap<(u32, u32), V, BuildCorrelationHasher>;

/// A set of (pid, correlation id).
pub type CorrelationSet = HashSet<(u32, u32), BuildCorrelationHasher>;

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;

    fn hash(pid: u32, id: u32) -> u64 {
        BuildCorrelationHasher::default().hash_one((pid, id))
    }

    #[test]
    fn consecutive_ids_get_consecutive_buckets_and_mixed_tags() {
        let (a, b) = (hash(4242, 1000), hash(4242, 1001));
        assert_eq!((b & LOW_BITS) - (a & LOW_BITS), 1);
        let tags: HashSet<u64> = (0..64).map(|i| hash(4242, i) >> 57).collect();
        assert!(tags.len() > 32, "{} distinct tags of 64 ids", tags.len());
    }

    #[test]
    fn processes_start_at_different_buckets() {
        assert_ne!(hash(1, 7) & LOW_BITS, hash(2, 7) & LOW_BITS);
    }

    #[test]
    fn maps_keyed_by_it_find_every_key() {
        let mut m: CorrelationMap<u32> = CorrelationMap::default();
        for pid in [1, 2, 3] {
            for id in (0..200_000).step_by(3) {
                m.insert((pid, id), id ^ pid);
            }
        }
        assert_eq!(m.len(), 3 * 66_667);
        for pid in [1, 2, 3] {
            for id in 0..200_000 {
                assert_eq!(
                    m.get(&(pid, id)).copied(),
                    (id % 3 == 0).then_some(id ^ pid)
                );
            }
        }
    }
}
