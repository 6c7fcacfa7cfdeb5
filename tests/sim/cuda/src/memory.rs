//! Device memory: a separate simulated address space (a bump allocator from
//! [`DEVICE_BASE`], 256-byte aligned, never reusing addresses), each allocation backed
//! by a host buffer; and the page-locked host allocations the driver made.

use std::collections::BTreeMap;

use crate::consts::*;

/// The first device address.
pub(crate) const DEVICE_BASE: u64 = 0x7000_0000_0000;
/// Alignment of device allocations (`cudaMalloc` documents at least 256 bytes).
pub(crate) const ALIGN: u64 = 256;

pub(crate) struct Alloc {
    pub(crate) ctx: usize,
    pub(crate) data: Vec<u8>,
}

#[derive(Default)]
pub(crate) struct Memory {
    next: u64,
    used: u64,
    /// Device allocations by base address.
    allocs: BTreeMap<u64, Alloc>,
    /// Page-locked host allocations: base address -> (size, owning context).
    pub(crate) host: BTreeMap<usize, (usize, usize)>,
}

impl Memory {
    /// Bytes allocated on the device.
    pub(crate) fn used(&self) -> u64 {
        self.used
    }

    /// (owning context, bytes) of every device allocation.
    pub(crate) fn by_context(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.allocs.values().map(|a| (a.ctx, a.data.len() as u64))
    }

    /// Allocates `size > 0` bytes (zeroed) for context `ctx`, or `None` when more than
    /// `capacity` bytes would be in use.
    pub(crate) fn alloc(&mut self, ctx: usize, size: u64, capacity: u64) -> Option<u64> {
        if self.used.checked_add(size)? > capacity {
            return None;
        }
        if self.next == 0 {
            self.next = DEVICE_BASE;
        }
        let base = self.next;
        self.next = (base + size).div_ceil(ALIGN) * ALIGN;
        self.used += size;
        self.allocs.insert(
            base,
            Alloc {
                ctx,
                data: vec![0; usize::try_from(size).ok()?],
            },
        );
        Some(base)
    }

    /// Frees the allocation starting at `base`; `CUDA_ERROR_INVALID_VALUE` when no
    /// allocation starts there.
    pub(crate) fn free(&mut self, base: u64) -> Result<(), CUresult> {
        let a = self.allocs.remove(&base).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        self.used -= a.data.len() as u64;
        Ok(())
    }

    /// Frees everything context `ctx` allocated.
    pub(crate) fn free_context(&mut self, ctx: usize) {
        let gone: Vec<u64> = self
            .allocs
            .iter()
            .filter(|(_, a)| a.ctx == ctx)
            .map(|(b, _)| *b)
            .collect();
        for b in gone {
            let _ = self.free(b);
        }
    }

    /// The allocation holding `ptr`: (base, allocation).
    pub(crate) fn find(&self, ptr: u64) -> Option<(u64, &Alloc)> {
        let (b, a) = self.allocs.range(..=ptr).next_back()?;
        (ptr - b < a.data.len() as u64).then_some((*b, a))
    }

    /// Whether `ptr` is in the simulated device address space at all.
    pub(crate) fn is_device_address(&self, ptr: u64) -> bool {
        ptr >= DEVICE_BASE && ptr < self.next.max(DEVICE_BASE)
    }

    /// The bytes `[ptr, ptr + len)` of one allocation, or `CUDA_ERROR_INVALID_VALUE`.
    pub(crate) fn range_mut(&mut self, ptr: u64, len: u64) -> Result<&mut [u8], CUresult> {
        let (b, a) = self.find(ptr).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let off = (ptr - b) as usize;
        let avail = a.data.len() - off;
        if len > avail as u64 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let a = self.allocs.get_mut(&b).expect("found above");
        Ok(&mut a.data[off..off + len as usize])
    }

    /// Checks that `[ptr, ptr + len)` lies in one allocation.
    pub(crate) fn check(&mut self, ptr: u64, len: u64) -> Result<(), CUresult> {
        self.range_mut(ptr, len).map(|_| ())
    }

    /// Whether `[p, p + len)` lies in a page-locked host allocation of the driver.
    pub(crate) fn is_pinned(&self, p: usize, len: usize) -> bool {
        self.host
            .range(..=p)
            .next_back()
            .is_some_and(|(b, (size, _))| p - b + len <= *size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bump_allocation_and_range_checks() {
        let mut m = Memory::default();
        let a = m.alloc(1, 100, 1 << 20).unwrap();
        let b = m.alloc(1, 300, 1 << 20).unwrap();
        assert_eq!(a, DEVICE_BASE);
        assert_eq!(b, DEVICE_BASE + 256);
        assert!(m.check(a, 100).is_ok());
        assert_eq!(m.check(a + 1, 100), Err(CUDA_ERROR_INVALID_VALUE));
        assert_eq!(m.check(a + 100, 1), Err(CUDA_ERROR_INVALID_VALUE));
        assert!(m.check(b + 299, 1).is_ok());
        assert_eq!(m.used(), 400);
        assert_eq!(m.alloc(1, 1 << 20, 1 << 20), None);
        m.free(a).unwrap();
        assert_eq!(m.free(a), Err(CUDA_ERROR_INVALID_VALUE));
        assert_eq!(m.used(), 300);
    }
}
