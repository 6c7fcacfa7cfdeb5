//! The driver's objects (contexts, streams, events, modules, functions, libraries,
//! graphs, memory) behind one lock, addressed by the opaque handles given to clients.
//!
//! Handles are distinct fake addresses that are never reused, so a stale or foreign
//! handle is always recognised as invalid. The tracer is never called with the lock
//! held: callers collect what to report and report it after unlocking.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use crate::consts::*;
use crate::image::KernelInfo;
use crate::memory::Memory;

/// A context. Primary contexts keep their handle across release and re-retain.
pub(crate) struct Ctx {
    pub(crate) id: u32,
    pub(crate) device: i32,
    pub(crate) primary: bool,
    pub(crate) flags: u32,
    /// Handle of the context's NULL stream (an entry of `streams`).
    pub(crate) null_stream: usize,
}

/// An active stream capture.
pub(crate) struct Capture {
    pub(crate) id: u64,
    pub(crate) graph: usize,
    pub(crate) mode: u32,
    pub(crate) thread: std::thread::ThreadId,
    pub(crate) invalidated: bool,
    /// The last node captured: the dependency of the next one. Boxed so that
    /// `cuStreamGetCaptureInfo` can hand out a stable pointer to it.
    pub(crate) last_node: Box<usize>,
}

/// The time of work that waits for a memory value nobody has written yet.
pub(crate) const NEVER: u64 = u64::MAX;

pub(crate) struct Stream {
    pub(crate) id: u64,
    pub(crate) ctx: usize,
    pub(crate) flags: u32,
    /// When the work queued so far ends (simulated ns).
    pub(crate) ready_ns: u64,
    pub(crate) capture: Option<Capture>,
    /// Waiting for a memory value (`cuStreamWaitValue32`), with the work issued
    /// behind the wait (see `api_stream_memop`).
    pub(crate) blocked: Option<crate::api_stream_memop::Blocked>,
}

pub(crate) struct Event {
    pub(crate) ctx: usize,
    pub(crate) flags: u32,
    /// The simulated time the last record completes at.
    pub(crate) recorded_ns: Option<u64>,
}

pub(crate) struct Module {
    pub(crate) id: u32,
    pub(crate) ctx: usize,
    /// Function handles, in the image's kernel order.
    pub(crate) functions: Vec<usize>,
    /// The image as loaded (reported with `MODULE_LOADED`).
    pub(crate) image: Arc<Vec<u8>>,
    /// The library this module was loaded for, if any.
    pub(crate) library: Option<usize>,
}

pub(crate) struct Function {
    pub(crate) ctx: usize,
    pub(crate) kernel: Arc<KernelInfo>,
    pub(crate) max_dynamic_shared: i32,
    pub(crate) carveout: i32,
    pub(crate) cache_config: u32,
}

pub(crate) struct Library {
    pub(crate) image: Arc<Vec<u8>>,
    pub(crate) kernels: Vec<Arc<KernelInfo>>,
    /// Kernel handles, in image order.
    pub(crate) kernel_handles: Vec<usize>,
    /// The module loaded for each context, by context handle.
    pub(crate) modules: HashMap<usize, usize>,
}

pub(crate) struct Kernel {
    pub(crate) library: usize,
    pub(crate) index: usize,
}

/// One launch: what a kernel node or `cuLaunchKernel` runs.
#[derive(Clone)]
pub(crate) struct LaunchSpec {
    pub(crate) kernel: Arc<KernelInfo>,
    pub(crate) grid: [u32; 3],
    pub(crate) block: [u32; 3],
    pub(crate) shared: u32,
    pub(crate) gemm: Option<sim_abi::GemmShape>,
}

/// A copy's direction and memory kinds (CUPTI enum values).
#[derive(Clone, Copy)]
pub(crate) struct CopyKind {
    pub(crate) kind: u8,
    pub(crate) src: u8,
    pub(crate) dst: u8,
}

/// What a graph node (or a stream operation) does on the GPU.
#[derive(Clone)]
pub(crate) enum OpSpec {
    Kernel(LaunchSpec),
    /// A copy of `bytes` from `src` to `dst`; which is a host address follows `kind`.
    Memcpy {
        dst: u64,
        src: u64,
        bytes: u64,
        kind: CopyKind,
    },
    /// `count` elements of `elem` bytes (1, 2 or 4) set to `value` from `dst`.
    Memset {
        dst: u64,
        count: u64,
        elem: u8,
        value: u32,
    },
}

pub(crate) struct Node {
    pub(crate) id: u64,
    pub(crate) graph: usize,
    pub(crate) op: OpSpec,
}

pub(crate) struct Graph {
    pub(crate) id: u32,
    pub(crate) nodes: Vec<usize>,
}

/// An executable graph. Instantiation clones the graph it was made from: `clone` is
/// the copy (an entry of `graphs`, never handed to clients but reported in resource
/// callbacks) and `nodes` its nodes, entries of `nodes` with their own ids, in
/// execution order. Both go away with the executable graph.
pub(crate) struct Exec {
    /// The graph it was instantiated from (it may be destroyed first).
    pub(crate) graph: usize,
    /// That graph's id, which GPU operations of a launch carry.
    pub(crate) graph_id: u32,
    pub(crate) clone: usize,
    pub(crate) nodes: Vec<usize>,
}

/// Per-device primary context state.
pub(crate) struct Primary {
    pub(crate) handle: usize,
    pub(crate) refcount: u32,
    pub(crate) flags: u32,
}

#[derive(Default)]
pub(crate) struct Driver {
    next_handle: usize,
    next_ctx_id: u32,
    next_stream_id: u64,
    next_module_id: u32,
    next_graph_id: u32,
    next_node_id: u64,
    next_capture_id: u64,
    pub(crate) contexts: HashMap<usize, Ctx>,
    pub(crate) primaries: BTreeMap<i32, Primary>,
    pub(crate) streams: HashMap<usize, Stream>,
    pub(crate) events: HashMap<usize, Event>,
    pub(crate) modules: HashMap<usize, Module>,
    pub(crate) functions: HashMap<usize, Function>,
    pub(crate) libraries: HashMap<usize, Library>,
    pub(crate) kernels: HashMap<usize, Kernel>,
    pub(crate) graphs: HashMap<usize, Graph>,
    pub(crate) nodes: HashMap<usize, Node>,
    pub(crate) execs: HashMap<usize, Exec>,
    pub(crate) memory: Memory,
    /// Per device ordinal: when the device finishes the work queued so far.
    pub(crate) device_ready_ns: BTreeMap<i32, u64>,
    /// While work queued behind a memory-value wait runs (`api_stream_memop`): the
    /// simulated time it was released at, which [`Driver::schedule`] takes for "now".
    /// That work was issued earlier; once released it runs back to back.
    pub(crate) released_at: Option<u64>,
}

/// The driver state, locked.
pub(crate) fn lock() -> MutexGuard<'static, Driver> {
    static DRIVER: LazyLock<Mutex<Driver>> = LazyLock::new(|| Mutex::new(Driver::default()));
    DRIVER.lock().unwrap_or_else(|e| e.into_inner())
}

/// The first handle value; handles step by 0x40 from here.
const HANDLE_BASE: usize = 0x5100_0000_0000;

impl Driver {
    pub(crate) fn new_handle(&mut self) -> usize {
        if self.next_handle == 0 {
            self.next_handle = HANDLE_BASE;
        }
        self.next_handle += 0x40;
        self.next_handle
    }

    pub(crate) fn new_ctx_id(&mut self) -> u32 {
        self.next_ctx_id += 1;
        self.next_ctx_id
    }

    pub(crate) fn new_stream_id(&mut self) -> u64 {
        self.next_stream_id += 1;
        self.next_stream_id
    }

    pub(crate) fn new_module_id(&mut self) -> u32 {
        self.next_module_id += 1;
        self.next_module_id
    }

    pub(crate) fn new_graph_id(&mut self) -> u32 {
        self.next_graph_id += 1;
        self.next_graph_id
    }

    pub(crate) fn new_node_id(&mut self) -> u64 {
        self.next_node_id += 1;
        self.next_node_id
    }

    pub(crate) fn new_capture_id(&mut self) -> u64 {
        self.next_capture_id += 1;
        self.next_capture_id
    }

    /// Creates a context (and its NULL stream); returns its handle. `handle` reuses a
    /// primary context's handle.
    pub(crate) fn create_context(
        &mut self,
        device: i32,
        flags: u32,
        primary: bool,
        handle: Option<usize>,
    ) -> usize {
        let h = handle.unwrap_or_else(|| self.new_handle());
        let null_stream = self.new_handle();
        let stream_id = self.new_stream_id();
        self.streams.insert(
            null_stream,
            Stream {
                id: stream_id,
                ctx: h,
                flags: 0,
                ready_ns: 0,
                capture: None,
                blocked: None,
            },
        );
        let id = self.new_ctx_id();
        self.contexts.insert(
            h,
            Ctx {
                id,
                device,
                primary,
                flags,
                null_stream,
            },
        );
        h
    }

    /// Removes a context and everything it owns (streams, events, modules,
    /// functions, device memory).
    pub(crate) fn remove_context(&mut self, h: usize) {
        self.contexts.remove(&h);
        self.streams.retain(|_, s| s.ctx != h);
        self.events.retain(|_, e| e.ctx != h);
        self.modules.retain(|_, m| m.ctx != h);
        self.functions.retain(|_, f| f.ctx != h);
        for lib in self.libraries.values_mut() {
            lib.modules.remove(&h);
        }
        self.memory.free_context(h);
        crate::telemetry::memory(self);
    }

    /// The context for a handle, or `CUDA_ERROR_INVALID_CONTEXT`.
    pub(crate) fn ctx(&self, h: usize) -> Result<&Ctx, CUresult> {
        self.contexts.get(&h).ok_or(CUDA_ERROR_INVALID_CONTEXT)
    }

    /// The calling thread's current context, checked: none is
    /// `CUDA_ERROR_INVALID_CONTEXT`, a destroyed one `CUDA_ERROR_CONTEXT_IS_DESTROYED`.
    pub(crate) fn current(&self) -> Result<usize, CUresult> {
        match crate::context::current() {
            None => Err(CUDA_ERROR_INVALID_CONTEXT),
            Some(h) if self.contexts.contains_key(&h) => Ok(h),
            Some(_) => Err(CUDA_ERROR_CONTEXT_IS_DESTROYED),
        }
    }

    /// The stream a client handle names: NULL, `CU_STREAM_LEGACY` and
    /// `CU_STREAM_PER_THREAD` are the current context's NULL stream (the sim has no
    /// separate per-thread stream); others must be live streams.
    pub(crate) fn stream(&self, handle: CUstream) -> Result<usize, CUresult> {
        let h = handle as usize;
        if h == 0 || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD {
            let c = self.current()?;
            return Ok(self.contexts[&c].null_stream);
        }
        if self.streams.contains_key(&h) {
            Ok(h)
        } else {
            Err(CUDA_ERROR_INVALID_HANDLE)
        }
    }

    /// Whether stream `s` is its context's NULL stream.
    pub(crate) fn is_null_stream(&self, s: usize) -> bool {
        let st = &self.streams[&s];
        self.contexts
            .get(&st.ctx)
            .is_some_and(|c| c.null_stream == s)
    }

    /// Device ordinal of stream `s`.
    pub(crate) fn stream_device(&self, s: usize) -> i32 {
        let ctx = self.streams[&s].ctx;
        self.contexts.get(&ctx).map_or(0, |c| c.device)
    }

    /// Queues `duration` ns of work on stream `s`: the device runs one operation at a
    /// time, so it starts at max(now, stream ready, device ready). Returns (start, end).
    pub(crate) fn schedule(&mut self, s: usize, duration: u64) -> (u64, u64) {
        let dev = self.stream_device(s);
        let now = self.released_at.unwrap_or_else(crate::clock::now_ns);
        let dev_ready = self.device_ready_ns.entry(dev).or_insert(0);
        let st = self
            .streams
            .get_mut(&s)
            .expect("stream checked by the caller");
        let start = now.max(st.ready_ns).max(*dev_ready);
        let end = start + duration;
        st.ready_ns = end;
        *dev_ready = end;
        (start, end)
    }

    /// When the work queued on stream `s` ends ([`NEVER`] while it waits for a memory
    /// value). The legacy NULL stream also waits for every blocking stream of its
    /// context.
    pub(crate) fn stream_ready(&self, s: usize) -> u64 {
        let st = &self.streams[&s];
        let ready = |o: &Stream| {
            if o.blocked.is_some() {
                NEVER
            } else {
                o.ready_ns
            }
        };
        if self.is_null_stream(s) {
            self.streams
                .values()
                .filter(|o| o.ctx == st.ctx && o.flags & CU_STREAM_NON_BLOCKING == 0)
                .map(ready)
                .max()
                .unwrap_or(0)
        } else {
            ready(st)
        }
    }

    /// Whether work issued to `s` now would wait behind a blocked stream: `s` itself
    /// is blocked, or `s` is the legacy NULL stream and a blocking stream of its
    /// context is.
    pub(crate) fn waits_on_blocked(&self, s: usize) -> bool {
        self.stream_ready(s) == NEVER
    }

    /// When all work of context `c` ends.
    pub(crate) fn context_ready(&self, c: usize) -> u64 {
        self.streams
            .values()
            .filter(|s| s.ctx == c)
            .map(|s| {
                if s.blocked.is_some() {
                    NEVER
                } else {
                    s.ready_ns
                }
            })
            .max()
            .unwrap_or(0)
    }
}
