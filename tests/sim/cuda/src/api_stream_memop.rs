//! Stream memory operations: `cuStreamWaitValue32` / `cuStreamWriteValue32` and
//! `cuStreamWaitValue64` / `cuStreamWriteValue64` (and their `_v2` names, which cuda.h
//! of CUDA 12+ maps the plain names to). GPU work that waits for host work issued
//! later: the device-memory word a wait names is read in the sim's checked device
//! memory (a `CUdeviceptr` from `cuMemAlloc`; anything else is
//! `CUDA_ERROR_INVALID_VALUE`).
//!
//! - A wait whose condition holds when issued is a no-op. Otherwise its stream is
//!   *blocked*: operations issued to it afterwards are queued, not scheduled, and
//!   their data effects wait too ([`defer`]). Synchronising on the stream or its
//!   context waits (in real time) until it is released, forever if nothing releases
//!   it, as on a GPU.
//! - A write issued to a stream that is not blocked takes effect when issued (a
//!   simplification: not when its stream's earlier work would have ended), as a
//!   zero-length operation on its stream's timeline; then every blocked stream whose
//!   condition now holds is released: its queue runs in order, back to back, from the
//!   write's end (that work was issued earlier, so it does not wait for the host's
//!   clock: [`Driver::released_at`]), inside the write call (the tracer sees the queued work's GPU operations then,
//!   with the correlation ids of the calls that issued them). A queued wait blocks
//!   the stream again if its condition does not hold; a queued write takes effect in
//!   turn.
//!
//! Conditions (cuda.h `CUstreamWaitValue_flags`): GEQ `(int32_t)(*addr - value) >= 0`
//! ("or int64_t for 64 bit values"), EQ, AND `(*addr & value) != 0`, NOR
//! `~(*addr | value) != 0`; the FLUSH bit is accepted and changes nothing here. Write
//! flags (`CUstreamWriteValue_flags`): DEFAULT, and NO_MEMORY_BARRIER, which "is not
//! supported in the v2 API" (`CUDA_ERROR_INVALID_VALUE` there).
//!
//! Each call is traced with its CUPTI driver callback id and its
//! `generated_cuda_meta.h` params struct ([`Value32Params`], [`Value64Params`]).
//!
//! Not simulated (`CUDA_ERROR_NOT_SUPPORTED`): these calls during stream capture
//! (refused rather than captured as a memory-operation node) or on the legacy NULL
//! stream, work on the legacy stream while a blocking stream of its context is
//! blocked, graph launches and event records behind a blocked wait.

use crate::consts::*;
use crate::ffi::code;
use crate::ops::{self, Issued};
use crate::registry::{self, Driver, OpSpec};
use crate::trace;

/// `CU_STREAM_WAIT_VALUE_FLUSH`.
const WAIT_FLUSH: u32 = 1 << 30;
/// `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER` ("not supported in the v2 API").
const WRITE_NO_BARRIER: u32 = 0x1;

/// `cuStreamWaitValue32_params` / `cuStreamWriteValue32_params` and their `_v2`
/// (`generated_cuda_meta.h`: one layout for the four).
#[repr(C)]
pub struct Value32Params {
    pub stream: CUstream,
    pub addr: CUdeviceptr,
    pub value: u32,
    pub flags: u32,
}

/// `cuStreamWaitValue64_params` / `cuStreamWriteValue64_params` and their `_v2`
/// (`generated_cuda_meta.h`: one layout for the four).
#[repr(C)]
pub struct Value64Params {
    pub stream: CUstream,
    pub addr: CUdeviceptr,
    pub value: u64,
    pub flags: u32,
}

// The layouts of x86-64 / aarch64 Linux: a pointer, a 64-bit address, the value, flags.
const _: () = assert!(std::mem::size_of::<Value32Params>() == 24);
const _: () = assert!(std::mem::size_of::<Value64Params>() == 32);

/// A stream waiting for a memory value, and what was issued behind the wait.
pub(crate) struct Blocked {
    wait: Wait,
    queue: Vec<Deferred>,
}

/// The size of the memory word of an operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Width {
    W32,
    W64,
}

#[derive(Clone, Copy)]
struct Wait {
    addr: u64,
    value: u64,
    /// `CU_STREAM_WAIT_VALUE_GEQ` .. `NOR`.
    cond: u32,
    width: Width,
}

enum Deferred {
    /// An operation and the correlation id of the call that issued it.
    Op(OpSpec, u32),
    Wait(Wait),
    Write {
        addr: u64,
        value: u64,
        width: Width,
    },
}

/// Whether `w` holds with `current` in memory (both of `w.width`).
fn holds(w: Wait, current: u64) -> bool {
    let geq = match w.width {
        Width::W32 => ((current as u32).wrapping_sub(w.value as u32) as i32) >= 0,
        Width::W64 => (current.wrapping_sub(w.value) as i64) >= 0,
    };
    let mask = match w.width {
        Width::W32 => u64::from(u32::MAX),
        Width::W64 => u64::MAX,
    };
    match w.cond {
        0 => geq,
        1 => current == w.value,
        2 => current & w.value != 0,
        _ => !(current | w.value) & mask != 0,
    }
}

fn bytes(width: Width) -> u64 {
    match width {
        Width::W32 => 4,
        Width::W64 => 8,
    }
}

fn read(d: &mut Driver, addr: u64, width: Width) -> Result<u64, CUresult> {
    let b = d.memory.range_mut(addr, bytes(width))?;
    let mut le = [0u8; 8];
    le[..b.len()].copy_from_slice(b);
    Ok(u64::from_le_bytes(le))
}

fn store(d: &mut Driver, addr: u64, value: u64, width: Width) -> Result<(), CUresult> {
    let n = bytes(width) as usize;
    d.memory
        .range_mut(addr, n as u64)?
        .copy_from_slice(&value.to_le_bytes()[..n]);
    Ok(())
}

/// Queues `op`, issued to blocked stream `s`, until the stream is released.
pub(crate) fn defer(d: &mut Driver, s: usize, op: OpSpec) {
    if let Some(b) = d.streams.get_mut(&s).and_then(|st| st.blocked.as_mut()) {
        b.queue.push(Deferred::Op(op, trace::correlation_id()));
    }
}

/// The stream of a memory operation: not capturing, not the legacy NULL stream.
fn memop_stream(d: &Driver, h: CUstream) -> Result<usize, CUresult> {
    let s = d.stream(h)?;
    if d.streams[&s].capture.is_some() || d.is_null_stream(s) {
        return Err(CUDA_ERROR_NOT_SUPPORTED);
    }
    Ok(s)
}

fn wait(h: CUstream, addr: u64, value: u64, flags: u32, width: Width) -> Result<(), CUresult> {
    let cond = flags & !WAIT_FLUSH;
    if cond > 3 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let w = Wait {
        addr,
        value,
        cond,
        width,
    };
    let mut d = registry::lock();
    let s = memop_stream(&d, h)?;
    let current = read(&mut d, addr, width)?;
    let st = d.streams.get_mut(&s).expect("checked");
    match st.blocked.as_mut() {
        Some(b) => b.queue.push(Deferred::Wait(w)),
        None if holds(w, current) => {}
        None => {
            st.blocked = Some(Blocked {
                wait: w,
                queue: Vec::new(),
            })
        }
    }
    Ok(())
}

fn write(
    h: CUstream,
    addr: u64,
    value: u64,
    flags: u32,
    v2: bool,
    width: Width,
) -> Result<(), CUresult> {
    if flags > WRITE_NO_BARRIER || (v2 && flags != 0) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let released = {
        let mut d = registry::lock();
        let s = memop_stream(&d, h)?;
        read(&mut d, addr, width)?;
        if let Some(b) = d.streams.get_mut(&s).and_then(|st| st.blocked.as_mut()) {
            b.queue.push(Deferred::Write { addr, value, width });
            return Ok(());
        }
        let (_, end) = d.schedule(s, 0);
        store(&mut d, addr, value, width)?;
        release(&mut d, end)?
    };
    ops::report(released);
    Ok(())
}

/// Releases every blocked stream whose condition holds now, running its queue from
/// simulated time `at` (the releasing write's end); repeats while queued writes
/// release more (from the end of the last of them). Returns what ran.
fn release(d: &mut Driver, at: u64) -> Result<Vec<Issued>, CUresult> {
    let mut ran = Vec::new();
    let r = release_from(d, at, &mut ran);
    d.released_at = None;
    r.map(|()| ran)
}

fn release_from(d: &mut Driver, mut at: u64, ran: &mut Vec<Issued>) -> Result<(), CUresult> {
    loop {
        let mut ready = Vec::new();
        for (&s, st) in &d.streams {
            if let Some(b) = &st.blocked {
                ready.push((s, b.wait));
            }
        }
        let mut progressed = false;
        let mut next_at = at;
        for (s, w) in ready {
            if !holds(w, read(d, w.addr, w.width)?) {
                continue;
            }
            progressed = true;
            let st = d.streams.get_mut(&s).expect("live stream");
            let queue = st.blocked.take().map(|b| b.queue).unwrap_or_default();
            st.ready_ns = st.ready_ns.max(at);
            d.released_at = Some(at);
            let mut rest = queue.into_iter();
            while let Some(item) = rest.next() {
                match item {
                    Deferred::Op(op, correlation_id) => {
                        let mut r = ops::run(d, s, &op, 0, 0)?;
                        r.op.correlation_id = correlation_id;
                        ran.push(Issued::Ran(r));
                    }
                    Deferred::Write { addr, value, width } => {
                        let (_, end) = d.schedule(s, 0);
                        store(d, addr, value, width)?;
                        next_at = next_at.max(end);
                    }
                    Deferred::Wait(w) => {
                        if !holds(w, read(d, w.addr, w.width)?) {
                            d.streams.get_mut(&s).expect("live stream").blocked = Some(Blocked {
                                wait: w,
                                queue: rest.collect(),
                            });
                            break;
                        }
                    }
                }
            }
        }
        if !progressed {
            return Ok(());
        }
        at = next_at;
    }
}

/// Defines one exported entry point (cuda.h's prototype), traced with its CUPTI
/// callback id and params struct.
macro_rules! memop {
    ($(#[$doc:meta])* $name:ident, $cbid:ident, $cname:literal, $value:ty, $params:ident,
     $body:expr) => {
        $(#[$doc])*
        #[no_mangle]
        pub extern "C" fn $name(
            stream: CUstream,
            addr: CUdeviceptr,
            value: $value,
            flags: u32,
        ) -> CUresult {
            let p = $params {
                stream,
                addr,
                value,
                flags,
            };
            let body: fn(CUstream, u64, $value, u32) -> Result<(), CUresult> = $body;
            api!($cbid, $cname, p, code(body(stream, addr, value, flags)))
        }
    };
}

memop!(
    /// `CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
    /// unsigned int flags)`: the CUDA 8.0 ABI.
    cuStreamWaitValue32,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32,
    c"cuStreamWaitValue32",
    u32,
    Value32Params,
    |s, a, v, f| wait(s, a, v.into(), f, Width::W32)
);

memop!(
    /// `cuStreamWaitValue32_v2` (what cuda.h of CUDA 12+ calls `cuStreamWaitValue32`).
    cuStreamWaitValue32_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2,
    c"cuStreamWaitValue32_v2",
    u32,
    Value32Params,
    |s, a, v, f| wait(s, a, v.into(), f, Width::W32)
);

memop!(
    /// `CUresult cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
    /// unsigned int flags)`: the CUDA 9.0 ABI.
    cuStreamWaitValue64,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64,
    c"cuStreamWaitValue64",
    u64,
    Value64Params,
    |s, a, v, f| wait(s, a, v, f, Width::W64)
);

memop!(
    /// `cuStreamWaitValue64_v2` (what cuda.h of CUDA 12+ calls `cuStreamWaitValue64`).
    cuStreamWaitValue64_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue64_v2,
    c"cuStreamWaitValue64_v2",
    u64,
    Value64Params,
    |s, a, v, f| wait(s, a, v, f, Width::W64)
);

memop!(
    /// `CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value,
    /// unsigned int flags)`: the CUDA 8.0 ABI.
    cuStreamWriteValue32,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32,
    c"cuStreamWriteValue32",
    u32,
    Value32Params,
    |s, a, v, f| write(s, a, v.into(), f, false, Width::W32)
);

memop!(
    /// `cuStreamWriteValue32_v2` (what cuda.h of CUDA 12+ calls `cuStreamWriteValue32`;
    /// `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER` "is not supported in the v2 API").
    cuStreamWriteValue32_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_v2,
    c"cuStreamWriteValue32_v2",
    u32,
    Value32Params,
    |s, a, v, f| write(s, a, v.into(), f, true, Width::W32)
);

memop!(
    /// `CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value,
    /// unsigned int flags)`: the CUDA 9.0 ABI.
    cuStreamWriteValue64,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64,
    c"cuStreamWriteValue64",
    u64,
    Value64Params,
    |s, a, v, f| write(s, a, v, f, false, Width::W64)
);

memop!(
    /// `cuStreamWriteValue64_v2` (what cuda.h of CUDA 12+ calls `cuStreamWriteValue64`).
    cuStreamWriteValue64_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue64_v2,
    c"cuStreamWriteValue64_v2",
    u64,
    Value64Params,
    |s, a, v, f| write(s, a, v, f, true, Width::W64)
);

#[cfg(test)]
mod tests {
    use super::*;

    fn w(cond: u32, value: u64, width: Width) -> Wait {
        Wait {
            addr: 0,
            value,
            cond,
            width,
        }
    }

    #[test]
    fn conditions_32() {
        let w = |c, v| w(c, v, Width::W32);
        assert!(holds(w(0, 5), 5) && holds(w(0, 5), 6) && !holds(w(0, 5), 4));
        // GEQ is cyclic: 1 is "after" u32::MAX.
        assert!(holds(w(0, u32::MAX.into()), 1));
        assert!(holds(w(1, 7), 7) && !holds(w(1, 7), 8));
        assert!(holds(w(2, 0b100), 0b110) && !holds(w(2, 0b100), 0b011));
        assert!(holds(w(3, 0), 0) && !holds(w(3, 0), u32::MAX.into()));
        // NOR of the 32 bits only.
        assert!(!holds(w(3, 0xffff_0000), 0x0000_ffff));
    }

    #[test]
    fn conditions_64() {
        let w = |c, v| w(c, v, Width::W64);
        assert!(holds(w(0, 1 << 40), 1 << 40) && !holds(w(0, 1 << 40), (1 << 40) - 1));
        // GEQ is cyclic in 64 bits: 1 is "after" u64::MAX, and 2^32 after u32::MAX.
        assert!(holds(w(0, u64::MAX), 1) && holds(w(0, u32::MAX.into()), 1 << 32));
        assert!(holds(w(1, 1 << 33), 1 << 33) && !holds(w(1, 1 << 33), 0));
        assert!(holds(w(2, 1 << 63), u64::MAX) && !holds(w(2, 1 << 63), 1));
        assert!(holds(w(3, 0xffff_ffff), 0) && !holds(w(3, 0), u64::MAX));
    }
}
