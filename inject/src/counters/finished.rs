//! The launch keys the policy is finished with, as each thread has met them: a launch
//! of one is passed over at API enter without a lock, a context lookup or hashing its
//! name. Under the default policy (the first 64 launches of each kernel) that is
//! every launch of a kernel after its 64th.
//!
//! A key is the launch's function handle, context, dimensions and GEMM shape key:
//! finer than the policy's (name, grid, block, shape), since a function has one name, so a key found here
//! never stands for a launch the policy would still measure. Direct-mapped, [`SLOTS`]
//! keys per thread, no allocation; a key evicts the one in its slot (whose next
//! launch asks the policy again, under its lock).
//!
//! What this does not see: a function handle the driver reuses after its module was
//! unloaded, in the same context and with the same dimensions, is taken as finished;
//! and a measurement another thread takes back (`Policy::undo`) after this thread
//! found the key finished is not taken up on this thread. Either costs at most a
//! measurement the policy would otherwise have made, never a wrong value.

/// Keys remembered per thread.
pub const SLOTS: usize = 64;

/// A launch as the cache knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The `CUfunction` launched, as an address.
    pub function: usize,
    /// CUPTI's context uid.
    pub context: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// The GEMM call's shape key (0 outside a GEMM call).
    pub shape: u64,
}

/// Keys the policy will measure no more.
#[derive(Debug)]
pub struct Finished([Option<Key>; SLOTS]);

impl Finished {
    pub const fn new() -> Finished {
        Finished([None; SLOTS])
    }

    fn slot(k: &Key) -> usize {
        let mut h = k.function as u64 ^ (u64::from(k.context) << 32) ^ k.shape;
        for d in k.grid.iter().chain(&k.block) {
            h = (h ^ u64::from(*d)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        // The top bits are the best mixed.
        (h >> (64 - SLOTS.trailing_zeros())) as usize
    }

    pub fn contains(&self, k: &Key) -> bool {
        self.0[Self::slot(k)] == Some(*k)
    }

    pub fn insert(&mut self, k: Key) {
        self.0[Self::slot(&k)] = Some(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(function: usize, grid: u32) -> Key {
        Key {
            function,
            context: 1,
            grid: [grid, 1, 1],
            block: [128, 1, 1],
            shape: 0,
        }
    }

    #[test]
    fn a_key_is_found_only_once_inserted_and_only_itself() {
        let mut f = Finished::new();
        assert!(!f.contains(&key(0x7000_1000, 4)));
        f.insert(key(0x7000_1000, 4));
        assert!(f.contains(&key(0x7000_1000, 4)));
        assert!(!f.contains(&key(0x7000_1000, 8)));
        assert!(!f.contains(&key(0x7000_2000, 4)));
        assert!(!f.contains(&Key {
            context: 2,
            ..key(0x7000_1000, 4)
        }));
        assert!(!f.contains(&Key {
            shape: 0x1234_5679,
            ..key(0x7000_1000, 4)
        }));
    }

    #[test]
    fn a_key_evicts_the_one_in_its_slot() {
        let mut f = Finished::new();
        let first = key(0x7000_1000, 1);
        f.insert(first);
        let rival = (2..10_000)
            .map(|g| key(0x7000_1000, g))
            .find(|k| Finished::slot(k) == Finished::slot(&first))
            .expect("some key shares the slot");
        f.insert(rival);
        assert!(f.contains(&rival));
        assert!(!f.contains(&first));
    }

    #[test]
    fn keys_spread_over_the_slots() {
        let used: std::collections::BTreeSet<usize> = (0..256)
            .map(|i| Finished::slot(&key(0x7f00_0000_0000 + i * 0x40, 132)))
            .collect();
        assert!(used.len() > SLOTS / 2, "{} slots of {SLOTS}", used.len());
    }
}
