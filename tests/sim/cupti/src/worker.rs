//! The CUPTI-owned thread that hands completed buffers back to clients.
//!
//! Buffers are queued here when full, when their record limit is reached, or by a
//! flush, and the worker calls the client's completion callback for each, in queue
//! order. `cuptiActivityFlushAll` is blocking: it waits until every buffer queued
//! before it returned has been delivered.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread::ThreadId;

use cupti_sys::{
    CUpti_BufferCallbackCompleteInfo, CUpti_BuffersCallbackCompleteFunc,
    CUpti_BuffersCallbackCompleteFunc_v2,
};

/// The completion callback of a client.
#[derive(Clone, Copy)]
pub enum Complete {
    V1(CUpti_BuffersCallbackCompleteFunc),
    V2(CUpti_BuffersCallbackCompleteFunc_v2),
}

/// One buffer to hand back.
pub struct Job {
    pub complete: Complete,
    pub buffer: *mut u8,
    pub size: usize,
    pub valid: usize,
    /// The thread whose work completed the buffer (`CUpti_BufferCallbackCompleteInfo`).
    pub trigger_thread: u64,
}

// SAFETY: the buffer pointer is owned by CUPTI until handed back; only the worker
// touches it once queued.
unsafe impl Send for Job {}

struct Queue {
    jobs: VecDeque<(u64, Job)>,
    enqueued: u64,
    delivered: u64,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    jobs: VecDeque::new(),
    enqueued: 0,
    delivered: 0,
});
static CHANGED: Condvar = Condvar::new();
static WORKER: OnceLock<ThreadId> = OnceLock::new();

/// Queues `job` for the worker; returns its sequence number.
pub fn submit(job: Job) -> u64 {
    start();
    let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    q.enqueued += 1;
    let seq = q.enqueued;
    q.jobs.push_back((seq, job));
    CHANGED.notify_all();
    seq
}

/// The sequence number of the last queued job.
pub fn last_submitted() -> u64 {
    QUEUE.lock().unwrap_or_else(|e| e.into_inner()).enqueued
}

/// Blocks until the job `seq` and all before it were delivered. Returns at once on the
/// worker itself (a flush from a completion callback, which the header forbids, must
/// not deadlock).
pub fn wait_delivered(seq: u64) {
    if is_worker() {
        return;
    }
    let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
    while q.delivered < seq {
        q = CHANGED.wait(q).unwrap_or_else(|e| e.into_inner());
    }
}

/// Whether the calling thread is the worker.
pub fn is_worker() -> bool {
    WORKER.get() == Some(&std::thread::current().id())
}

/// The kernel thread id of the calling thread.
pub fn gettid() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

fn start() {
    WORKER.get_or_init(|| {
        std::thread::Builder::new()
            .name("simcupti-buffers".into())
            .spawn(run)
            .expect("spawn the CUPTI buffer thread")
            .thread()
            .id()
    });
}

fn run() {
    loop {
        let (seq, job) = {
            let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(j) = q.jobs.pop_front() {
                    break j;
                }
                q = CHANGED.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        crate::ffi::guard_void(|| deliver(&job));
        let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
        q.delivered = seq;
        CHANGED.notify_all();
    }
}

fn deliver(job: &Job) {
    match job.complete {
        Complete::V1(Some(f)) => {
            // SAFETY: the client registered `f` with the documented prototype; the
            // context is always NULL and the stream id 0 since CUDA 6.0.
            unsafe { f(std::ptr::null_mut(), 0, job.buffer, job.size, job.valid) }
        }
        Complete::V2(Some(f)) => {
            let mut info = CUpti_BufferCallbackCompleteInfo {
                structSize: std::mem::size_of::<CUpti_BufferCallbackCompleteInfo>(),
                threadId: job.trigger_thread,
                ppRecordLayouts: std::ptr::null_mut(),
                numRecordLayouts: 0,
            };
            // SAFETY: as above, for the _v2 prototype; `info` lives across the call.
            unsafe { f(job.buffer, job.size, job.valid, &mut info) }
        }
        _ => {}
    }
}
