//! Whether a launch's stream is being captured into a CUDA graph, from the driver
//! already loaded in the process (`cuStreamIsCapturing`, found with
//! `dlopen("libcuda.so.1", RTLD_NOLOAD)`: we never load a driver ourselves).
//!
//! A launch under stream capture creates a graph node instead of running, so it has
//! nothing to measure, and starting a range profiler pass inside a capture could
//! invalidate the application's graph. The check is conservative: a launch is
//! measured only when the driver says its stream is not capturing. An error counts as
//! capturing: `cuStreamIsCapturing` on the legacy default stream answers
//! `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` while another stream of the context captures
//! in global or thread-local mode (cuda.h), exactly when measuring is unsafe.

use core::ffi::{c_int, c_void};
use std::sync::OnceLock;

use cupti_sys::CUstream;

type IsCapturing = unsafe extern "C" fn(CUstream, *mut c_int) -> c_int;

/// `CU_STREAM_CAPTURE_STATUS_NONE` (cuda.h).
const CAPTURE_STATUS_NONE: c_int = 0;
/// `CU_STREAM_PER_THREAD` (cuda.h): the per-thread default stream handle.
const STREAM_PER_THREAD: usize = 0x2;

fn is_capturing_fn() -> Option<IsCapturing> {
    static F: OnceLock<Option<IsCapturing>> = OnceLock::new();
    *F.get_or_init(|| {
        // SAFETY: RTLD_NOLOAD only finds an already-loaded library; no initialiser runs.
        let lib =
            unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        if lib.is_null() {
            return None;
        }
        // SAFETY: `lib` is a live handle and the name is NUL-terminated; the handle
        // is kept (the driver stays loaded for the life of the process).
        let p: *mut c_void = unsafe { libc::dlsym(lib, c"cuStreamIsCapturing".as_ptr()) };
        if p.is_null() {
            return None;
        }
        // SAFETY: the CUDA driver's export with cuda.h's prototype
        // `CUresult cuStreamIsCapturing(CUstream, CUstreamCaptureStatus *)` (the enum
        // and CUresult are C ints).
        Some(unsafe { core::mem::transmute::<*mut c_void, IsCapturing>(p) })
    })
}

/// True only when the driver says `stream` is not capturing. A null stream of a
/// `_ptsz` launch is the per-thread default stream.
pub fn certainly_not_capturing(stream: CUstream, per_thread: bool) -> bool {
    let Some(f) = is_capturing_fn() else {
        return false;
    };
    let stream = if stream.is_null() && per_thread {
        STREAM_PER_THREAD as CUstream
    } else {
        stream
    };
    let mut status: c_int = -1;
    // SAFETY: `stream` is the stream the application passed to the launch being
    // made on this thread (valid during the launch call); `status` is writable.
    let rc = unsafe { f(stream, &mut status) };
    rc == 0 && status == CAPTURE_STATUS_NONE
}
