//! The driver and runtime calls not traced one by one, counted: per thread and
//! function, calls and their summed duration (CUPTI timestamps at entry and exit),
//! handed to the writer as `ApiTally` records of what was added since the last time,
//! about once a second and at exit. With `GPUPROF_API=sync` (the default) every driver
//! and runtime callback is enabled for this; `all` traces every call instead, `off`
//! neither. A driver call the runtime makes inside one of its calls is not counted
//! (its time is the runtime call's).
//!
//! Each thread counts into a table of its own (two atomics per function slot,
//! `api_calls::slot`, 32 KiB), made
//! at its first counted call and kept until exit, so a thread that ended still has
//! its counts sent. At most [`MAX_THREADS`] threads get one; later threads share one
//! more table, sent as thread 0 ("other threads"). The counting itself takes no lock
//! and allocates nothing; a thread's first counted call allocates its table under a
//! lock, and the first call of each function interns its name.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use cupti_sys::CUpti_CallbackData;
use wire::{ApiTally, Record};

use crate::api_calls::{self, MAX_CBID};
use crate::tracer::Tracer;

/// Function slots counted: the driver's cbids, then the runtime's.
const SLOTS: usize = 2 * MAX_CBID;
/// Threads with a table of their own.
pub const MAX_THREADS: usize = 256;

struct Table {
    thread_id: u64,
    /// Per slot: calls.
    calls: Box<[AtomicU64]>,
    /// Per slot: their summed duration, ns.
    ns: Box<[AtomicU64]>,
}

impl Table {
    /// On the heap from the start: the application's thread may have a small stack.
    fn new(thread_id: u64) -> Table {
        let zeros = || (0..SLOTS).map(|_| AtomicU64::new(0)).collect();
        Table {
            thread_id,
            calls: zeros(),
            ns: zeros(),
        }
    }
}

/// Per slot: the calls and time sent so far.
type Sent = Box<[(u64, u64)]>;

/// Every table, with what was sent of each count so far (the writer's).
struct Tables {
    tables: Vec<(&'static Table, Sent)>,
    /// The table of the threads past [`MAX_THREADS`].
    shared: Option<&'static Table>,
}

static TABLES: Mutex<Tables> = Mutex::new(Tables {
    tables: Vec::new(),
    shared: None,
});

thread_local! {
    static MINE: Cell<Option<&'static Table>> = const { Cell::new(None) };
}

/// This thread's table, made at its first call.
fn table(thread_id: u64) -> &'static Table {
    if let Some(t) = MINE.with(Cell::get) {
        return t;
    }
    let mut all = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    let t: &'static Table = if all.tables.len() < MAX_THREADS {
        // Kept until exit: a thread's counts are sent after it ended too.
        let t: &'static Table = Box::leak(Box::new(Table::new(thread_id)));
        all.tables.push((t, vec![(0, 0); SLOTS].into_boxed_slice()));
        t
    } else {
        match all.shared {
            Some(t) => t,
            None => {
                let t: &'static Table = Box::leak(Box::new(Table::new(0)));
                all.shared = Some(t);
                all.tables.push((t, vec![(0, 0); SLOTS].into_boxed_slice()));
                t
            }
        }
    };
    MINE.with(|m| m.set(Some(t)));
    t
}

/// A counted call's API entry or exit (a runtime call's when `runtime`): its span
/// (`api_calls::span`) counted at exit.
pub fn on_api(t: &Tracer, cbid: u32, runtime: bool, d: &CUpti_CallbackData, thread_id: u64) {
    let Some(i) = api_calls::slot(cbid, runtime) else {
        return;
    };
    let Some((start, now)) = api_calls::span(t, d) else {
        return;
    };
    // The name is interned at the first call of each function.
    if api_calls::name_id(cbid, runtime, d).is_none() {
        return;
    }
    let table = table(thread_id);
    // The time first: a reader that sees the call sees its time (`deltas`).
    table.ns[i].fetch_add(now.saturating_sub(start), Ordering::Relaxed);
    table.calls[i].fetch_add(1, Ordering::Release);
}

/// What was counted since the last call, as records (the writer's, about once a
/// second and at exit).
pub fn deltas() -> Vec<Record> {
    let mut out = Vec::new();
    let mut all = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    for (table, sent) in &mut all.tables {
        for (slot, last) in sent.iter_mut().enumerate() {
            // The calls first (see `on_api`): the time read holds theirs.
            let calls = table.calls[slot].load(Ordering::Acquire);
            let now = (calls, table.ns[slot].load(Ordering::Relaxed));
            if now.0 == last.0 {
                continue;
            }
            let Some(name) = api_calls::cached_name(slot) else {
                continue;
            };
            let (cbid, runtime) = api_calls::unslot(slot);
            out.push(Record::ApiTally(ApiTally {
                thread_id: table.thread_id,
                cbid,
                runtime,
                name,
                calls: now.0 - last.0,
                total_ns: now.1.saturating_sub(last.1),
            }));
            *last = now;
        }
    }
    // Records the writer makes are produced too (`handoff`: End.records counts them).
    crate::tally::produced(out.len() as u64);
    out
}
