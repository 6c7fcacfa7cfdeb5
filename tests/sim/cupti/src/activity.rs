//! Activity clients: who collects which record kinds into which buffers.
//!
//! The `cuptiActivity*` functions without a subscriber act on the process-wide client
//! (key 0). From 13.2 on, the `_v2` functions taking a `CUpti_SubscriberHandle` act on
//! that subscriber's own client (own kinds, callbacks, buffers, dropped count,
//! attributes). A record is written to every client that enabled its kind.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cupti_sys::{
    CUpti_ActivityKind as K, CUpti_BufferCallbackRequestInfo, CUpti_BuffersCallbackRequestFunc,
    CUpti_BuffersCallbackRequestFunc_v2,
};

use crate::buffers::{Buffer, Buffers, Put, IN_REQUEST};
use crate::layouts::{self, Encoded, Facts};
use crate::release;
use crate::worker::Complete;

/// The request callback of a client.
#[derive(Clone, Copy)]
pub enum Request {
    V1(CUpti_BuffersCallbackRequestFunc),
    V2(CUpti_BuffersCallbackRequestFunc_v2),
}

/// Attribute values (`CUpti_ActivityAttribute`) with the headers' defaults.
#[derive(Debug, Clone, Copy)]
pub struct Attrs {
    pub device_buffer_size: usize,
    pub device_buffer_size_cdp: usize,
    pub device_buffer_pool_limit: usize,
    pub device_buffer_pre_allocate: usize,
    pub device_buffer_size_graphs: usize,
    pub zeroed_out_buffer: u8,
    pub host_pinned: u8,
    pub per_thread_buffer: u8,
    /// `CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE` set for this subscriber through
    /// `cuptiActivitySetAttribute_v2`; `None`: the process-wide type
    /// ([`THREAD_ID_TYPE`]).
    pub thread_id_type: Option<u32>,
}

impl Default for Attrs {
    fn default() -> Self {
        Attrs {
            device_buffer_size: 3_200_000,
            device_buffer_size_cdp: 8_388_608,
            device_buffer_pool_limit: 250,
            device_buffer_pre_allocate: 3,
            device_buffer_size_graphs: 16_777_216,
            zeroed_out_buffer: 0,
            host_pinned: 0,
            per_thread_buffer: 1,
            thread_id_type: None,
        }
    }
}

/// One activity client.
pub struct Client {
    /// 0 for the process-wide client, else the subscriber handle's address.
    pub key: usize,
    /// Bit `k` set when kind `k` is enabled (every kind is below 64).
    pub kinds: AtomicU64,
    pub callbacks: Mutex<Option<(Request, Complete)>>,
    pub buffers: Mutex<Buffers>,
    pub dropped: AtomicU64,
    pub attrs: Mutex<Attrs>,
    /// Devices whose device record this client already got.
    pub devices_emitted: Mutex<Vec<u32>>,
}

impl Client {
    fn new(key: usize) -> Client {
        Client {
            key,
            kinds: AtomicU64::new(0),
            callbacks: Mutex::new(None),
            buffers: Mutex::new(Buffers::default()),
            dropped: AtomicU64::new(0),
            attrs: Mutex::new(Attrs::default()),
            devices_emitted: Mutex::new(Vec::new()),
        }
    }

    /// Whether `kind` is enabled.
    pub fn enabled(&self, kind: u32) -> bool {
        kind < 64 && self.kinds.load(Ordering::Acquire) & (1 << kind) != 0
    }

    /// Enables or disables `kind`.
    pub fn set_enabled(&self, kind: u32, on: bool) {
        if on {
            self.kinds.fetch_or(1 << kind, Ordering::AcqRel);
        } else {
            self.kinds.fetch_and(!(1 << kind), Ordering::AcqRel);
        }
    }

    /// Writes one encoded record, requesting a buffer from the client when needed.
    /// A record that finds no buffer (no callbacks, the request declined, a buffer too
    /// small for it) is dropped and counted.
    pub fn write(&self, rec: &[u8], gpu_end: u64) {
        let Some((request, complete)) = *lock(&self.callbacks) else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        for _ in 0..2 {
            if lock(&self.buffers).put(rec, gpu_end, complete) == Put::Written {
                return;
            }
            match self.request(request) {
                None => break,
                Some(b) if b.slot(rec.len()).is_none() => {
                    // Too small for even this record: hand it straight back, empty.
                    crate::buffers::hand_back(b, complete);
                    break;
                }
                Some(b) => lock(&self.buffers).spare.push(b),
            }
        }
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    fn request(&self, request: Request) -> Option<Buffer> {
        if IN_REQUEST.with(|f| f.get()) {
            return None;
        }
        let mut base: *mut u8 = std::ptr::null_mut();
        let mut size = 0usize;
        let mut max_records = 0usize;
        IN_REQUEST.with(|f| f.set(true));
        match request {
            // SAFETY: the client registered `f` with the documented prototype; all
            // three out-pointers are valid for the call.
            Request::V1(Some(f)) => unsafe { f(&mut base, &mut size, &mut max_records) },
            Request::V2(Some(f)) => {
                let mut info = CUpti_BufferCallbackRequestInfo {
                    structSize: std::mem::size_of::<CUpti_BufferCallbackRequestInfo>(),
                };
                // SAFETY: as above, for the _v2 prototype.
                unsafe { f(&mut base, &mut size, &mut max_records, &mut info) }
            }
            _ => {}
        }
        IN_REQUEST.with(|f| f.set(false));
        if base.is_null() {
            return None;
        }
        if lock(&self.attrs).zeroed_out_buffer == 0 {
            // "If the value of this attribute is zero, CUPTI will initialize the user
            // buffer ... to zero before filling it."
            // SAFETY: the client handed us `size` writable bytes at `base`.
            unsafe { std::ptr::write_bytes(base, 0, size) };
        }
        Some(Buffer {
            base,
            size,
            used: 0,
            records: 0,
            max_records,
            gpu_end: 0,
        })
    }

    /// Queues this client's buffers for a flush (see [`Buffers::flush`]).
    pub fn flush(&self, forced: bool, now: u64) {
        let Some((_, complete)) = *lock(&self.callbacks) else {
            return;
        };
        lock(&self.buffers).flush(forced, now, complete);
    }
}

static CLIENTS: Mutex<Vec<Arc<Client>>> = Mutex::new(Vec::new());

/// How activity records identify the thread (`cuptiSetThreadIdType`, and
/// `CUPTI_ACTIVITY_ATTR_THREAD_ID_TYPE` set without a subscriber): a
/// `CUpti_ActivityThreadIdType`, `CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT` (0) until
/// set. A subscriber's own attribute ([`Attrs::thread_id_type`]) overrides it.
pub static THREAD_ID_TYPE: AtomicU32 = AtomicU32::new(0);

impl Client {
    /// The `CUpti_ActivityThreadIdType` this client's records use.
    pub fn thread_id_type(&self) -> u32 {
        lock(&self.attrs)
            .thread_id_type
            .unwrap_or_else(|| THREAD_ID_TYPE.load(Ordering::Relaxed))
    }
}

/// A mutex guard, ignoring poisoning (a panic was already turned into an error).
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The client with `key`, created on first use.
pub fn client(key: usize) -> Arc<Client> {
    let mut all = lock(&CLIENTS);
    if let Some(c) = all.iter().find(|c| c.key == key) {
        return c.clone();
    }
    let c = Arc::new(Client::new(key));
    all.push(c.clone());
    c
}

/// Every client.
pub fn clients() -> Vec<Arc<Client>> {
    lock(&CLIENTS).clone()
}

/// Forgets the client of a subscriber that unsubscribed (its buffers are flushed
/// first, forced, so the memory goes back to the client).
pub fn remove(key: usize) {
    let removed = {
        let mut all = lock(&CLIENTS);
        let i = all.iter().position(|c| c.key == key);
        i.map(|i| all.remove(i))
    };
    if let Some(c) = removed {
        c.flush(true, crate::driver::now_ns());
    }
}

/// Whether any client enabled `kind`.
pub fn any_enabled(kind: u32) -> bool {
    lock(&CLIENTS).iter().any(|c| c.enabled(kind))
}

/// Writes the record for `facts` to every client that enabled its kind (marker data
/// only to clients that enabled `MARKER` too). Kernels go to
/// clients with `CONCURRENT_KERNEL` as that kind, else to those with `KERNEL` as
/// `KERNEL` records (one record per kernel and client; the serialisation `KERNEL`
/// implies on a real GPU is not simulated).
///
/// API and marker records carry the calling thread's id as each client asked for it
/// ([`Client::thread_id_type`]): `emit` runs on the thread that made the call.
pub fn emit(facts: Facts) {
    let rel = release::current().release.name;
    let mut enc = Encoded {
        bytes: [0; layouts::MAX_RECORD],
        len: 0,
    };
    let mut encoded = (u32::MAX, 0u32);
    for c in clients() {
        let mut f = facts;
        match &mut f {
            Facts::Api(a) => a.thread_id = crate::tracer::thread_id_as(c.thread_id_type()),
            Facts::Marker(m) => m.thread_id = crate::tracer::thread_id_as(c.thread_id_type()),
            _ => {}
        }
        let thread = match &f {
            Facts::Api(a) => a.thread_id,
            Facts::Marker(m) => m.thread_id,
            _ => 0,
        };
        if let Facts::Kernel(k) = &mut f {
            k.kind = if c.enabled(K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
                K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
            } else if c.enabled(K::CUPTI_ACTIVITY_KIND_KERNEL) {
                K::CUPTI_ACTIVITY_KIND_KERNEL
            } else {
                continue;
            };
        } else if !c.enabled(f.kind()) {
            continue;
        } else if matches!(f, Facts::MarkerData(_)) && !c.enabled(K::CUPTI_ACTIVITY_KIND_MARKER) {
            // "User must enable CUPTI_ACTIVITY_KIND_MARKER as well to get records for
            // marker data."
            continue;
        }
        if encoded != (f.kind(), thread) {
            layouts::encode(rel, &f, &mut enc);
            encoded = (f.kind(), thread);
        }
        c.write(&enc.bytes[..enc.len], f.gpu_end());
    }
}

/// Forces every client's buffers out and waits until the worker delivered them
/// (cuptiActivityFlushAll).
pub fn flush_all(forced: bool) {
    let now = crate::driver::now_ns();
    for c in clients() {
        c.flush(forced, now);
    }
    crate::worker::wait_delivered(crate::worker::last_submitted());
}

/// Loses the records CUPTI holds that no completed buffer has delivered yet: each
/// client's current buffer goes back to it empty (`validSize` 0, so the memory is
/// returned), its records gone without a drop count. What disabling PM sampling does
/// to activity buffers not flushed before it (it can finalize CUPTI); the sim does
/// it on every last `cuptiPmSamplingDisable` (strict, unchecked without a GPU).
pub fn lose_undelivered() {
    for c in clients() {
        let Some((_, complete)) = *lock(&c.callbacks) else {
            continue;
        };
        let taken = lock(&c.buffers).current.take();
        if let Some(mut b) = taken {
            b.used = 0;
            b.records = 0;
            crate::buffers::hand_back(b, complete);
        }
    }
}

/// Drops every client (cuptiFinalize, tests).
pub fn reset() {
    lock(&CLIENTS).clear();
}
