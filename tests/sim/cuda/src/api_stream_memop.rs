//! Stream memory operations: `cuStreamWaitValue32` and `cuStreamWriteValue32` (and
//! their `_v2` names, which CUDA 12+'s cuda.h maps the plain names to). GPU work that
//! waits for host work issued later: the device-memory word a wait names is read in
//! the sim's checked device memory.
//!
//! - A wait whose condition holds when issued is a no-op. Otherwise its stream is
//!   *blocked*: operations issued to it afterwards are queued, not scheduled, and
//!   their data effects wait too ([`defer`]). Synchronising on the stream or its
//!   context waits (in real time) until it is released, forever if nothing releases
//!   it, as on a GPU.
//! - A write issued to a stream that is not blocked takes effect when issued, as a
//!   zero-length operation on its stream's timeline; then every blocked stream whose
//!   condition now holds is released: its queue runs in order from the write's end
//!   (a queued wait blocks the stream again if its condition does not hold; a queued
//!   write takes effect in turn).
//!
//! Conditions (cuda.h `CUstreamWaitValue_flags`): GEQ `(int32_t)(*addr - value) >= 0`,
//! EQ, AND `(*addr & value) != 0`, NOR `~(*addr | value) != 0`; the FLUSH bit is
//! accepted and changes nothing here.
//!
//! Not simulated (`CUDA_ERROR_NOT_SUPPORTED`): these calls during stream capture or
//! on the legacy NULL stream, work on the legacy stream while a blocking stream of its
//! context is blocked, graph launches and event records behind a blocked wait.

use crate::consts::*;
use crate::ffi::code;
use crate::ops::{self, Issued};
use crate::registry::{self, Driver, OpSpec};
use crate::trace;

/// `CU_STREAM_WAIT_VALUE_FLUSH`.
const WAIT_FLUSH: u32 = 1 << 30;
/// `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER` ("not supported in the v2 API").
const WRITE_NO_BARRIER: u32 = 0x1;

/// A stream waiting for a memory value, and what was issued behind the wait.
pub(crate) struct Blocked {
    wait: Wait,
    queue: Vec<Deferred>,
}

#[derive(Clone, Copy)]
struct Wait {
    addr: u64,
    value: u32,
    /// `CU_STREAM_WAIT_VALUE_GEQ` .. `NOR`.
    cond: u32,
}

enum Deferred {
    /// An operation and the correlation id of the call that issued it.
    Op(OpSpec, u32),
    Wait(Wait),
    Write {
        addr: u64,
        value: u32,
    },
}

fn holds(w: Wait, current: u32) -> bool {
    match w.cond {
        0 => (current.wrapping_sub(w.value) as i32) >= 0,
        1 => current == w.value,
        2 => current & w.value != 0,
        _ => !(current | w.value) != 0,
    }
}

fn read_u32(d: &mut Driver, addr: u64) -> Result<u32, CUresult> {
    let b = d.memory.range_mut(addr, 4)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn write_u32(d: &mut Driver, addr: u64, value: u32) -> Result<(), CUresult> {
    d.memory
        .range_mut(addr, 4)?
        .copy_from_slice(&value.to_le_bytes());
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

fn wait(h: CUstream, addr: u64, value: u32, flags: u32) -> Result<(), CUresult> {
    let cond = flags & !WAIT_FLUSH;
    if cond > 3 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let w = Wait { addr, value, cond };
    let mut d = registry::lock();
    let s = memop_stream(&d, h)?;
    let current = read_u32(&mut d, addr)?;
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

fn write(h: CUstream, addr: u64, value: u32, flags: u32, v2: bool) -> Result<(), CUresult> {
    if flags > WRITE_NO_BARRIER || (v2 && flags != 0) {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let released = {
        let mut d = registry::lock();
        let s = memop_stream(&d, h)?;
        read_u32(&mut d, addr)?;
        if let Some(b) = d.streams.get_mut(&s).and_then(|st| st.blocked.as_mut()) {
            b.queue.push(Deferred::Write { addr, value });
            return Ok(());
        }
        let (_, end) = d.schedule(s, 0);
        write_u32(&mut d, addr, value)?;
        release(&mut d, end)?
    };
    ops::report(released);
    Ok(())
}

/// Releases every blocked stream whose condition holds now, running its queue from
/// simulated time `at`; repeats while queued writes release more. Returns what ran.
fn release(d: &mut Driver, at: u64) -> Result<Vec<Issued>, CUresult> {
    let mut ran = Vec::new();
    loop {
        let mut ready = Vec::new();
        for (&s, st) in &d.streams {
            if let Some(b) = &st.blocked {
                ready.push((s, b.wait));
            }
        }
        let mut progressed = false;
        for (s, w) in ready {
            if !holds(w, read_u32(d, w.addr)?) {
                continue;
            }
            progressed = true;
            let st = d.streams.get_mut(&s).expect("live stream");
            let queue = st.blocked.take().map(|b| b.queue).unwrap_or_default();
            st.ready_ns = st.ready_ns.max(at);
            let mut rest = queue.into_iter();
            while let Some(item) = rest.next() {
                match item {
                    Deferred::Op(op, correlation_id) => {
                        let mut r = ops::run(d, s, &op, 0, 0)?;
                        r.op.correlation_id = correlation_id;
                        ran.push(Issued::Ran(r));
                    }
                    Deferred::Write { addr, value } => {
                        d.schedule(s, 0);
                        write_u32(d, addr, value)?;
                    }
                    Deferred::Wait(w) => {
                        if !holds(w, read_u32(d, w.addr)?) {
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
            return Ok(ran);
        }
    }
}

/// `CUresult cuStreamWaitValue32(CUstream, CUdeviceptr, cuuint32_t, unsigned int)`.
#[no_mangle]
pub extern "C" fn cuStreamWaitValue32(
    stream: CUstream,
    addr: CUdeviceptr,
    value: u32,
    flags: u32,
) -> CUresult {
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32,
        c"cuStreamWaitValue32",
        (),
        code(wait(stream, addr, value, flags))
    )
}

/// `cuStreamWaitValue32_v2` (what cuda.h of CUDA 12+ calls `cuStreamWaitValue32`).
#[no_mangle]
pub extern "C" fn cuStreamWaitValue32_v2(
    stream: CUstream,
    addr: CUdeviceptr,
    value: u32,
    flags: u32,
) -> CUresult {
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamWaitValue32_v2,
        c"cuStreamWaitValue32_v2",
        (),
        code(wait(stream, addr, value, flags))
    )
}

/// `CUresult cuStreamWriteValue32(CUstream, CUdeviceptr, cuuint32_t, unsigned int)`.
#[no_mangle]
pub extern "C" fn cuStreamWriteValue32(
    stream: CUstream,
    addr: CUdeviceptr,
    value: u32,
    flags: u32,
) -> CUresult {
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32,
        c"cuStreamWriteValue32",
        (),
        code(write(stream, addr, value, flags, false))
    )
}

/// `cuStreamWriteValue32_v2` (what cuda.h of CUDA 12+ calls `cuStreamWriteValue32`;
/// `CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER` "is not supported in the v2 API").
#[no_mangle]
pub extern "C" fn cuStreamWriteValue32_v2(
    stream: CUstream,
    addr: CUdeviceptr,
    value: u32,
    flags: u32,
) -> CUresult {
    api!(
        CUPTI_DRIVER_TRACE_CBID_cuStreamWriteValue32_v2,
        c"cuStreamWriteValue32_v2",
        (),
        code(write(stream, addr, value, flags, true))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions() {
        let w = |cond, value| Wait {
            addr: 0,
            value,
            cond,
        };
        assert!(holds(w(0, 5), 5) && holds(w(0, 5), 6) && !holds(w(0, 5), 4));
        // GEQ is cyclic: 1 is "after" u32::MAX.
        assert!(holds(w(0, u32::MAX), 1));
        assert!(holds(w(1, 7), 7) && !holds(w(1, 7), 8));
        assert!(holds(w(2, 0b100), 0b110) && !holds(w(2, 0b100), 0b011));
        assert!(holds(w(3, 0), 0) && !holds(w(3, 0), u32::MAX));
    }
}
