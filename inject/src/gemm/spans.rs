//! When a GEMM call began and returned, as CUPTI times launches: a call that launched
//! kernels sends a [`wire::GemmCall`] with its thread and span at its return, so that
//! a trace's operator for the call spans the call itself, not only its launches.

use wire::{GemmCall, Record};

use crate::{guard, handoff, thread, tracer};

/// CUPTI's timestamp now, when tracing runs.
pub fn now() -> Option<u64> {
    let t = tracer::get()?;
    Some(cupti::callback::timestamp(t.cupti))
}

/// Call `call`, entered at `start_ns`, returned on this thread now.
pub fn returned(call: u64, start_ns: u64) {
    let _errno = guard::Errno::save();
    guard::guarded("a cuBLAS hook", (), || {
        let Some(end_ns) = now() else { return };
        handoff::send(Record::GemmCall(GemmCall {
            call,
            thread_id: thread::id(),
            start_ns,
            end_ns,
        }));
    });
}
