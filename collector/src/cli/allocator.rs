//! How this process's allocator treats large blocks: kept for reuse rather than
//! handed back to the kernel on every free.
//!
//! Every part the collector seals and every part a command reads goes through
//! buffers of megabytes (a table's columns, its Parquet pages, the decoded batches).
//! glibc serves a block over `M_MMAP_THRESHOLD` (128 KiB at first, adapted upward to
//! at most 32 MiB) with its own `mmap` and unmaps it when freed, so the next part's
//! buffers are fresh pages: a page fault for every 4 KiB touched, a tenth or more of
//! the collector's time. Raising the threshold to 256 MiB keeps those blocks in the
//! heap, and a trim threshold of 1 GiB keeps freed memory there for the next part:
//! the resident set stays at the peak a part needs, which it reaches anyway.
//!
//! Only this process: `mallopt` is not inherited across `exec`, so the profiled
//! program `record` starts is untouched. Not glibc (musl): nothing to do.

/// Sets the thresholds (see the module documentation). Called once, first thing.
pub fn keep_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const MMAP_THRESHOLD: libc::c_int = 256 << 20;
        const TRIM_THRESHOLD: libc::c_int = 1 << 30;
        // SAFETY: mallopt takes two integers and changes only the allocator's
        // parameters; it is called before this process starts any thread.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
        }
    }
}
