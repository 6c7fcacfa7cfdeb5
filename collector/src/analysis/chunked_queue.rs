//! A first-in first-out queue kept in fixed-size chunks, for the join window's
//! kernels ([`super::join`]) and the calls waiting for their part's NVTX ranges
//! ([`super::api_calls`]): a `VecDeque` grows by doubling and keeps its largest
//! size, so at its peak up to half of it is slack (about 30 MB of a report's 172 MB
//! at 10^6 kernels); here at most one chunk is, and a chunk is freed once read.

use std::collections::VecDeque;

/// Items per chunk.
const CHUNK: usize = 4096;

/// The queue (see the module documentation).
#[derive(Debug)]
pub struct ChunkedQueue<T> {
    chunks: VecDeque<VecDeque<T>>,
    len: usize,
}

impl<T> Default for ChunkedQueue<T> {
    fn default() -> Self {
        ChunkedQueue {
            chunks: VecDeque::new(),
            len: 0,
        }
    }
}

impl<T> ChunkedQueue<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push_back(&mut self, item: T) {
        match self.chunks.back_mut() {
            Some(last) if last.len() < CHUNK => last.push_back(item),
            _ => {
                let mut chunk = VecDeque::with_capacity(CHUNK);
                chunk.push_back(item);
                self.chunks.push_back(chunk);
            }
        }
        self.len += 1;
    }

    pub fn front(&self) -> Option<&T> {
        self.chunks.front().and_then(VecDeque::front)
    }

    pub fn pop_front(&mut self) -> Option<T> {
        let first = self.chunks.front_mut()?;
        let item = first.pop_front();
        if first.is_empty() {
            self.chunks.pop_front();
        }
        if item.is_some() {
            self.len -= 1;
        }
        item
    }

    /// Items the queue has room for without allocating (its chunks' capacity).
    pub fn capacity(&self) -> usize {
        self.chunks.iter().map(VecDeque::capacity).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_in_order_and_read_chunks_are_freed() {
        let mut q = ChunkedQueue::default();
        assert_eq!((q.len(), q.front()), (0, None));
        assert_eq!(q.pop_front(), None);
        let n = 3 * CHUNK + 5;
        for i in 0..n {
            q.push_back(i);
        }
        assert_eq!(q.len(), n);
        assert_eq!(q.capacity(), 4 * CHUNK);
        for i in 0..2 * CHUNK + 1 {
            assert_eq!(q.front(), Some(&i));
            assert_eq!(q.pop_front(), Some(i));
        }
        // Two chunks read are gone; the third is partly read.
        assert_eq!(q.capacity(), 2 * CHUNK);
        assert_eq!(q.len(), CHUNK + 4);
        q.push_back(n);
        let rest: Vec<usize> = std::iter::from_fn(|| q.pop_front()).collect();
        assert_eq!(rest, (2 * CHUNK + 1..=n).collect::<Vec<_>>());
        assert!(q.is_empty());
        assert_eq!(q.capacity(), 0);
    }
}
