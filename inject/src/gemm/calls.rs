//! The GEMM call in progress on each thread: a hook sets it for the duration of the
//! real cuBLAS call ([`call`]); the launch callback reads it ([`next_launch`]); a call
//! that launched kernels sends its span when it returns (`spans.rs`).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use wire::Gemm;

use crate::guard;

/// A GEMM call's shape as the application passed it: the [`Gemm`] record of each of
/// its launches, but for the launch's ids (filled in per launch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Index of the API function in `hooks::NAMES`.
    pub api: usize,
    pub gemm: Gemm,
}

impl Shape {
    /// `dims`: M, N, K, batch; `ops`: the transposes of A and B; `types`: the data
    /// types of A, B, C and D.
    pub fn new(api: usize, dims: [u64; 4], ops: [u32; 2], types: [u32; 4], compute: u32) -> Shape {
        let [m, n, k, batch] = dims;
        let [trans_a, trans_b] = ops;
        let [a_type, b_type, c_type, d_type] = types;
        Shape {
            api,
            gemm: Gemm {
                correlation_id: 0,
                call: 0,
                launch_index: 0,
                api: 0,
                m,
                n,
                k,
                batch,
                trans_a,
                trans_b,
                a_type,
                b_type,
                c_type,
                d_type,
                compute_type: compute,
            },
        }
    }
}

/// The call in progress on a thread.
#[derive(Clone, Copy)]
struct Current {
    shape: Shape,
    call: u64,
    launches: u32,
}

thread_local! {
    /// The outermost GEMM call in progress on this thread: `Some(None)` when its shape
    /// could not be read (nested calls must still not record theirs).
    static CURRENT: Cell<Option<Option<Current>>> = const { Cell::new(None) };
}

/// Shapes are being recorded.
pub(super) static ON: AtomicBool = AtomicBool::new(false);
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Runs `real` (the hooked cuBLAS function) with `shape()` as this thread's GEMM call.
/// Our part (reading the shape) runs guarded and leaves `errno` as it found it; the
/// real function runs whatever happens to it.
#[inline]
pub fn call<R>(shape: impl FnOnce() -> Option<Shape>, real: impl FnOnce() -> R) -> R {
    if !ON.load(Ordering::Relaxed) || CURRENT.with(|c| c.get().is_some()) {
        return real();
    }
    let current = {
        let _errno = guard::Errno::save();
        guard::guarded("a cuBLAS hook", None, || {
            shape().map(|shape| Current {
                shape,
                call: CALLS.fetch_add(1, Ordering::Relaxed) + 1,
                launches: 0,
            })
        })
    };
    // The span is taken only for a call whose shape was read: it is that call's.
    let start = current.and_then(|_| super::spans::now());
    CURRENT.with(|c| c.set(Some(current)));
    let r = real();
    let done = CURRENT.with(|c| c.replace(None));
    if let (Some(start), Some(Some(cur))) = (start, done) {
        if cur.launches > 0 {
            super::spans::returned(cur.call, start);
        }
    }
    r
}

/// A kernel launch of the GEMM call in progress on this thread: its shape, the call
/// number and the launch's index within the call. `None` outside a call, or when the
/// call's shape could not be read.
pub fn next_launch() -> Option<(Shape, u64, u32)> {
    let Some(Some(mut cur)) = CURRENT.with(Cell::get) else {
        return None;
    };
    let index = cur.launches;
    cur.launches += 1;
    CURRENT.with(|c| c.set(Some(Some(cur))));
    Some((cur.shape, cur.call, index))
}

/// The GEMM call in progress on this thread as a number (a hash of its dimensions,
/// transposes and types; never 0), or 0 outside a call or when its shape could not be
/// read: the counter policy's keys tell one cuBLAS kernel's shapes apart with it.
pub fn shape_key() -> u64 {
    let Some(Some(cur)) = CURRENT.with(Cell::get) else {
        return 0;
    };
    let g = &cur.shape.gemm;
    let fields = [
        g.m,
        g.n,
        g.k,
        g.batch,
        u64::from(g.trans_a),
        u64::from(g.trans_b),
        u64::from(g.a_type),
        u64::from(g.b_type),
        u64::from(g.c_type),
        u64::from(g.d_type),
        u64::from(g.compute_type),
    ];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in fields {
        h = (h ^ f).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h | 1
}

/// Whether shapes are being recorded.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}
