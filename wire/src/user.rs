//! Whose files: this process's effective user, and whether a file is another's. The
//! ring reader and the ring directory's rules both ask.

/// This process's effective uid, the owner every file it creates gets.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// `Some(uid)` when `meta` (of a file or directory gpuprof is asked to use) belongs to
/// another user than this process's effective one.
pub fn foreign_owner(meta: &std::fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    (meta.uid() != euid()).then_some(meta.uid())
}
