//! Activity records in the impersonated release's struct layouts.
//!
//! What the sim knows about an event is gathered in a release-independent [`Facts`]
//! value; [`encode`] writes it as the record struct the release uses for that family
//! (`cupti_sys::records::vX_Y::layout::*`, e.g. `CUpti_ActivityKernel9` for 12.x,
//! `CUpti_ActivityKernel13` for 13.4). Fields shared by all layouts of a family are
//! filled by one macro per family; fields some layouts lack are set per release.
//!
//! Every record starts zeroed: zero is the header's "unknown" / "not applicable" value
//! for every field the sim has no fact for (timestamps `CUPTI_TIMESTAMP_UNKNOWN` = 0,
//! `queued`/`submitted` not collected without `cuptiActivityEnableLatencyTimestamps`,
//! cache configs `CU_FUNC_CACHE_PREFER_NONE`, partitioned global cache `..._UNKNOWN`,
//! execution model `CUPTI_FUNC_EXECUTION_MODEL_UNKNOWN`, graph ids 0 outside graphs,
//! clusters 0 as no cluster launch is simulated, channel ids 0, local memory 0).

use std::ffi::c_char;

use cupti_sys::records as r;
use cupti_sys::{CUpti_ActivityKind as K, CUpti_ChannelType as Ch, CUuuid};

/// A kernel execution (`CUPTI_ACTIVITY_KIND_KERNEL` or `_CONCURRENT_KERNEL`).
#[derive(Debug, Clone, Copy)]
pub struct KernelFacts {
    pub kind: u32,
    pub start: u64,
    pub end: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    pub static_shared_memory: i32,
    pub dynamic_shared_memory: i32,
    pub registers_per_thread: u16,
    /// Interned (CUPTI-owned) name.
    pub name: *const c_char,
    pub grid_id: i64,
    pub graph_id: u32,
    pub graph_node_id: u64,
}

/// A memory copy.
#[derive(Debug, Clone, Copy)]
pub struct MemcpyFacts {
    pub copy_kind: u8,
    pub src_kind: u8,
    pub dst_kind: u8,
    pub flags: u8,
    pub bytes: u64,
    pub start: u64,
    pub end: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub graph_id: u32,
    pub graph_node_id: u64,
}

/// A memory set.
#[derive(Debug, Clone, Copy)]
pub struct MemsetFacts {
    pub value: u32,
    pub bytes: u64,
    pub start: u64,
    pub end: u64,
    pub device_id: u32,
    pub context_id: u32,
    pub stream_id: u32,
    pub correlation_id: u32,
    pub flags: u16,
    pub memory_kind: u16,
    pub graph_id: u32,
    pub graph_node_id: u64,
}

/// A device description (`CUPTI_ACTIVITY_KIND_DEVICE`).
#[derive(Debug, Clone, Copy)]
pub struct DeviceFacts {
    pub id: u32,
    pub global_memory_bandwidth_kbps: u64,
    pub global_memory_size: u64,
    pub constant_memory_size: u32,
    pub l2_cache_size: u32,
    pub threads_per_warp: u32,
    pub core_clock_khz: u32,
    pub memcpy_engines: u32,
    pub multiprocessors: u32,
    pub max_ipc: u32,
    pub max_warps_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub max_shared_per_sm: u32,
    pub max_registers_per_sm: u32,
    pub max_registers_per_block: u32,
    pub max_shared_per_block: u32,
    pub max_threads_per_block: u32,
    pub max_block: [u32; 3],
    pub max_grid: [u32; 3],
    pub cc: (u32, u32),
    pub ecc_enabled: u32,
    pub uuid: CUuuid,
    /// Interned, or `malloc`ed for releases whose header makes the client free it.
    pub name: *const c_char,
    pub is_numa_node: u32,
    pub numa_id: u32,
}

/// A context creation (`CUPTI_ACTIVITY_KIND_CONTEXT`).
#[derive(Debug, Clone, Copy)]
pub struct ContextFacts {
    pub context_id: u32,
    pub device_id: u32,
    pub null_stream_id: u16,
    pub process_id: u32,
}

/// A driver or runtime API call (`CUpti_ActivityAPI`).
#[derive(Debug, Clone, Copy)]
pub struct ApiFacts {
    /// A runtime API call (`CUPTI_ACTIVITY_KIND_RUNTIME`), else a driver one.
    pub runtime: bool,
    pub cbid: u32,
    pub start: u64,
    pub end: u64,
    pub process_id: u32,
    pub thread_id: u32,
    pub correlation_id: u32,
    pub return_value: u32,
}

/// An NVTX marker (`CUPTI_ACTIVITY_KIND_MARKER`, `CUpti_ActivityMarker2`).
#[derive(Debug, Clone, Copy)]
pub struct MarkerFacts {
    /// `CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS`, `_START` or `_END`.
    pub flags: u32,
    pub timestamp: u64,
    pub id: u32,
    /// The calling thread (`objectKind` is `CUPTI_ACTIVITY_OBJECT_THREAD`).
    pub process_id: u32,
    pub thread_id: u32,
    /// Interned (CUPTI-owned); null for an end marker.
    pub name: *const c_char,
    /// Interned domain name; null for the default domain.
    pub domain: *const c_char,
}

/// The attributes of an NVTX marker (`CUPTI_ACTIVITY_KIND_MARKER_DATA`,
/// `CUpti_ActivityMarkerData` in 12.x, `CUpti_ActivityMarkerData2` in 13.x).
#[derive(Debug, Clone, Copy)]
pub struct MarkerDataFacts {
    /// `CUPTI_ACTIVITY_FLAG_MARKER_COLOR_NONE` or `_COLOR_ARGB`.
    pub flags: u32,
    pub id: u32,
    /// A `CUpti_MetricValueKind`.
    pub payload_kind: u32,
    /// The payload's 8 bytes (`CUpti_MetricValue` is a union of 8-byte values).
    pub payload: u64,
    pub color: u32,
    pub category: u32,
    /// `cuptiDomainId` (13.x layouts only).
    pub cupti_domain_id: u32,
}

/// A name given through NVTX (`CUPTI_ACTIVITY_KIND_NAME`, `CUpti_ActivityName`); only
/// OS thread names are simulated.
#[derive(Debug, Clone, Copy)]
pub struct NameFacts {
    pub process_id: u32,
    pub thread_id: u32,
    /// Interned (CUPTI-owned).
    pub name: *const c_char,
}

/// One record's worth of facts.
#[derive(Debug, Clone, Copy)]
pub enum Facts {
    Kernel(KernelFacts),
    Memcpy(MemcpyFacts),
    Memset(MemsetFacts),
    Device(DeviceFacts),
    Context(ContextFacts),
    Api(ApiFacts),
    Marker(MarkerFacts),
    MarkerData(MarkerDataFacts),
    Name(NameFacts),
}

impl Facts {
    /// The activity kind of the record.
    pub fn kind(&self) -> u32 {
        match self {
            Facts::Kernel(k) => k.kind,
            Facts::Memcpy(_) => K::CUPTI_ACTIVITY_KIND_MEMCPY,
            Facts::Memset(_) => K::CUPTI_ACTIVITY_KIND_MEMSET,
            Facts::Device(_) => K::CUPTI_ACTIVITY_KIND_DEVICE,
            Facts::Context(_) => K::CUPTI_ACTIVITY_KIND_CONTEXT,
            Facts::Api(f) if f.runtime => K::CUPTI_ACTIVITY_KIND_RUNTIME,
            Facts::Api(_) => K::CUPTI_ACTIVITY_KIND_DRIVER,
            Facts::Marker(_) => K::CUPTI_ACTIVITY_KIND_MARKER,
            Facts::MarkerData(_) => K::CUPTI_ACTIVITY_KIND_MARKER_DATA,
            Facts::Name(_) => K::CUPTI_ACTIVITY_KIND_NAME,
        }
    }

    /// When the GPU work the record describes ends (0 for host-side records): a
    /// record is complete once the GPU clock has passed it.
    pub fn gpu_end(&self) -> u64 {
        match self {
            Facts::Kernel(k) => k.end,
            Facts::Memcpy(m) => m.end,
            Facts::Memset(m) => m.end,
            _ => 0,
        }
    }
}

/// Room for the largest record of any release, 8-byte aligned.
pub const MAX_RECORD: usize = 512;

/// An encoded record: `len` bytes of `bytes`.
#[repr(C, align(8))]
pub struct Encoded {
    pub bytes: [u8; MAX_RECORD],
    pub len: usize,
}

fn put<T>(out: &mut Encoded, rec: &T) {
    let n = std::mem::size_of::<T>();
    assert!(n <= MAX_RECORD, "record larger than MAX_RECORD");
    // SAFETY: `rec` is a plain-data record of `n` bytes; `out.bytes` holds `n` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(rec as *const T as *const u8, out.bytes.as_mut_ptr(), n)
    };
    out.len = n;
}

fn zeroed<T>() -> T {
    // SAFETY: the record structs are plain C data (integers, pointers, arrays, unions
    // of integers) for which all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

macro_rules! fill_kernel {
    ($r:ident, $f:ident) => {
        $r.kind = $f.kind;
        $r.registersPerThread = $f.registers_per_thread;
        $r.start = $f.start;
        $r.end = $f.end;
        // "the completion of all its child kernels and the kernel itself": no child
        // kernels are simulated, so the kernel's own end.
        $r.completed = $f.end;
        $r.deviceId = $f.device_id;
        $r.contextId = $f.context_id;
        $r.streamId = $f.stream_id;
        $r.gridX = $f.grid[0];
        $r.gridY = $f.grid[1];
        $r.gridZ = $f.grid[2];
        $r.blockX = $f.block[0];
        $r.blockY = $f.block[1];
        $r.blockZ = $f.block[2];
        $r.staticSharedMemory = $f.static_shared_memory;
        $r.dynamicSharedMemory = $f.dynamic_shared_memory;
        $r.correlationId = $f.correlation_id;
        $r.gridId = $f.grid_id;
        $r.name = $f.name;
        $r.launchType =
            cupti_sys::CUpti_ActivityLaunchType::CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR as u8;
        $r.graphNodeId = $f.graph_node_id;
        $r.graphId = $f.graph_id;
        $r.channelType = Ch::CUPTI_CHANNEL_TYPE_COMPUTE;
    };
}

macro_rules! fill_memcpy {
    ($r:ident, $f:ident) => {
        $r.kind = K::CUPTI_ACTIVITY_KIND_MEMCPY;
        $r.copyKind = $f.copy_kind;
        $r.srcKind = $f.src_kind;
        $r.dstKind = $f.dst_kind;
        $r.flags = $f.flags;
        $r.bytes = $f.bytes;
        $r.start = $f.start;
        $r.end = $f.end;
        $r.deviceId = $f.device_id;
        $r.contextId = $f.context_id;
        $r.streamId = $f.stream_id;
        $r.correlationId = $f.correlation_id;
        // No simulated runtime: no runtime API record to correlate with.
        $r.runtimeCorrelationId = 0;
        $r.graphNodeId = $f.graph_node_id;
        $r.graphId = $f.graph_id;
        $r.channelType = Ch::CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY;
    };
}

macro_rules! fill_memset {
    ($r:ident, $f:ident) => {
        $r.kind = K::CUPTI_ACTIVITY_KIND_MEMSET;
        $r.value = $f.value;
        $r.bytes = $f.bytes;
        $r.start = $f.start;
        $r.end = $f.end;
        $r.deviceId = $f.device_id;
        $r.contextId = $f.context_id;
        $r.streamId = $f.stream_id;
        $r.correlationId = $f.correlation_id;
        $r.flags = $f.flags;
        $r.memoryKind = $f.memory_kind;
        $r.graphNodeId = $f.graph_node_id;
        $r.graphId = $f.graph_id;
    };
}

macro_rules! fill_device {
    ($r:ident, $f:ident) => {
        $r.kind = K::CUPTI_ACTIVITY_KIND_DEVICE;
        $r.flags = cupti_sys::CUpti_ActivityFlag::CUPTI_ACTIVITY_FLAG_NONE;
        $r.globalMemoryBandwidth = $f.global_memory_bandwidth_kbps;
        $r.globalMemorySize = $f.global_memory_size;
        $r.constantMemorySize = $f.constant_memory_size;
        $r.l2CacheSize = $f.l2_cache_size;
        $r.numThreadsPerWarp = $f.threads_per_warp;
        $r.coreClockRate = $f.core_clock_khz;
        $r.numMemcpyEngines = $f.memcpy_engines;
        $r.numMultiprocessors = $f.multiprocessors;
        $r.maxIPC = $f.max_ipc;
        $r.maxWarpsPerMultiprocessor = $f.max_warps_per_sm;
        $r.maxBlocksPerMultiprocessor = $f.max_blocks_per_sm;
        $r.maxSharedMemoryPerMultiprocessor = $f.max_shared_per_sm;
        $r.maxRegistersPerMultiprocessor = $f.max_registers_per_sm;
        $r.maxRegistersPerBlock = $f.max_registers_per_block;
        $r.maxSharedMemoryPerBlock = $f.max_shared_per_block;
        $r.maxThreadsPerBlock = $f.max_threads_per_block;
        $r.maxBlockDimX = $f.max_block[0];
        $r.maxBlockDimY = $f.max_block[1];
        $r.maxBlockDimZ = $f.max_block[2];
        $r.maxGridDimX = $f.max_grid[0];
        $r.maxGridDimY = $f.max_grid[1];
        $r.maxGridDimZ = $f.max_grid[2];
        $r.computeCapabilityMajor = $f.cc.0;
        $r.computeCapabilityMinor = $f.cc.1;
        $r.id = $f.id;
        $r.eccEnabled = $f.ecc_enabled;
        // The same CUuuid_st, declared once per release module.
        $r.uuid.bytes = $f.uuid.bytes;
        $r.name = $f.name;
        $r.isCudaVisible = 1;
        $r.isMigEnabled = 0;
        // "If mig mode is disabled value is set to UINT32_MAX".
        $r.gpuInstanceId = u32::MAX;
        $r.computeInstanceId = u32::MAX;
        $r.isNumaNode = $f.is_numa_node;
        $r.numaId = $f.numa_id;
    };
}

macro_rules! fill_context {
    ($r:ident, $f:ident) => {
        $r.kind = K::CUPTI_ACTIVITY_KIND_CONTEXT;
        $r.contextId = $f.context_id;
        $r.deviceId = $f.device_id;
        $r.computeApiKind =
            cupti_sys::CUpti_ActivityComputeApiKind::CUPTI_ACTIVITY_COMPUTE_API_CUDA as u16;
        $r.nullStreamId = $f.null_stream_id;
        $r.parentContextId = 0;
        $r.isGreenContext = 0;
    };
}

/// Defines `$fn(facts, out)` for release module `$m`; the blocks after each family
/// set the fields only some layouts have (`$x` is the record being built).
macro_rules! release_encoder {
    ($fn:ident, $m:ident,
     kernel: |$k:ident| $kx:block,
     memcpy: |$c:ident| $cx:block,
     memset: |$s:ident| $sx:block,
     device: |$d:ident| $dx:block,
     context: |$x:ident, $xf:ident| $xx:block,
     marker_data: |$md:ident, $mf:ident| $mdx:block) => {
        #[allow(unused_variables)]
        fn $fn(facts: &Facts, out: &mut Encoded) {
            use r::$m::layout as L;
            match facts {
                Facts::Kernel(f) => {
                    let mut $k: L::Kernel = zeroed();
                    fill_kernel!($k, f);
                    $kx
                    put(out, &$k)
                }
                Facts::Memcpy(f) => {
                    let mut $c: L::Memcpy = zeroed();
                    fill_memcpy!($c, f);
                    $cx
                    put(out, &$c)
                }
                Facts::Memset(f) => {
                    let mut $s: L::Memset = zeroed();
                    fill_memset!($s, f);
                    $sx
                    put(out, &$s)
                }
                Facts::Device(f) => {
                    let mut $d: L::Device = zeroed();
                    fill_device!($d, f);
                    $dx
                    put(out, &$d)
                }
                Facts::Context(f) => {
                    let mut $x: L::Context = zeroed();
                    let $xf = f;
                    fill_context!($x, f);
                    $xx
                    put(out, &$x)
                }
                Facts::Api(f) => {
                    let mut a: L::API = zeroed();
                    a.kind = if f.runtime {
                        K::CUPTI_ACTIVITY_KIND_RUNTIME
                    } else {
                        K::CUPTI_ACTIVITY_KIND_DRIVER
                    };
                    a.cbid = f.cbid;
                    a.start = f.start;
                    a.end = f.end;
                    a.processId = f.process_id;
                    a.threadId = f.thread_id;
                    a.correlationId = f.correlation_id;
                    a.returnValue = f.return_value;
                    put(out, &a)
                }
                Facts::Marker(f) => {
                    let mut m: L::Marker = zeroed();
                    m.kind = K::CUPTI_ACTIVITY_KIND_MARKER;
                    m.flags = f.flags;
                    m.timestamp = f.timestamp;
                    m.id = f.id;
                    m.objectKind = cupti_sys::CUpti_ActivityObjectKind::CUPTI_ACTIVITY_OBJECT_THREAD;
                    m.objectId = r::$m::CUpti_ActivityObjectKindId {
                        pt: r::$m::CUpti_ActivityObjectKindId__bindgen_ty_1 {
                            processId: f.process_id,
                            threadId: f.thread_id,
                        },
                    };
                    m.name = f.name;
                    m.domain = f.domain;
                    put(out, &m)
                }
                Facts::MarkerData(f) => {
                    let mut $md: L::MarkerData = zeroed();
                    let $mf = f;
                    $md.kind = K::CUPTI_ACTIVITY_KIND_MARKER_DATA;
                    $md.flags = f.flags;
                    $md.id = f.id;
                    $md.payloadKind = f.payload_kind;
                    $md.payload = r::$m::CUpti_MetricValue {
                        metricValueUint64: f.payload,
                    };
                    $md.color = f.color;
                    $md.category = f.category;
                    $mdx
                    put(out, &$md)
                }
                Facts::Name(f) => {
                    let mut n: r::$m::CUpti_ActivityName = zeroed();
                    n.kind = K::CUPTI_ACTIVITY_KIND_NAME;
                    n.objectKind = cupti_sys::CUpti_ActivityObjectKind::CUPTI_ACTIVITY_OBJECT_THREAD;
                    n.objectId = r::$m::CUpti_ActivityObjectKindId {
                        pt: r::$m::CUpti_ActivityObjectKindId__bindgen_ty_1 {
                            processId: f.process_id,
                            threadId: f.thread_id,
                        },
                    };
                    n.name = f.name;
                    put(out, &n)
                }
            }
        }
    };
}

// Memcpy6+: "For other memcpy operations, this field will be 1."
// Context3+: CIG mode none; the green-context SM count is invalid (not green).
// Context4: the process id.
release_encoder!(enc_12_4, v12_4, kernel: |k| {}, memcpy: |c| {}, memset: |s| {},
    device: |d| {}, context: |x, f| {},
    marker_data: |md, f| {});
release_encoder!(enc_12_6, v12_6, kernel: |k| {}, memcpy: |c| {}, memset: |s| {},
    device: |d| {}, context: |x, f| { x.cigMode = 0; },
    marker_data: |md, f| {});
release_encoder!(enc_12_8, v12_8, kernel: |k| {}, memcpy: |c| { c.copyCount = 1; },
    memset: |s| {}, device: |d| {}, context: |x, f| { x.cigMode = 0; },
    marker_data: |md, f| {});
release_encoder!(enc_12_9, v12_9, kernel: |k| {}, memcpy: |c| { c.copyCount = 1; },
    memset: |s| {}, device: |d| {}, context: |x, f| { x.cigMode = 0; },
    marker_data: |md, f| {});
release_encoder!(enc_13_0, v13_0, kernel: |k| {}, memcpy: |c| { c.copyCount = 1; },
    memset: |s| {}, device: |d| {}, context: |x, f| { x.cigMode = 0; },
    marker_data: |md, f| { md.cuptiDomainId = f.cupti_domain_id; });
release_encoder!(enc_13_1, v13_1, kernel: |k| {}, memcpy: |c| { c.copyCount = 1; },
    memset: |s| {}, device: |d| {},
    context: |x, f| { x.processId = f.process_id as u64; },
    marker_data: |md, f| { md.cuptiDomainId = f.cupti_domain_id; });
release_encoder!(enc_13_2, v13_2, kernel: |k| {}, memcpy: |c| { c.copyCount = 1; },
    memset: |s| {}, device: |d| {},
    context: |x, f| { x.processId = f.process_id as u64; },
    marker_data: |md, f| { md.cuptiDomainId = f.cupti_domain_id; });
release_encoder!(enc_13_3, v13_3, kernel: |k| {}, memcpy: |c| { c.copyCount = 1; },
    memset: |s| {}, device: |d| {},
    context: |x, f| { x.processId = f.process_id as u64; },
    marker_data: |md, f| { md.cuptiDomainId = f.cupti_domain_id; });
release_encoder!(enc_13_4, v13_4, kernel: |k| {}, memcpy: |c| { c.copyCount = 1; },
    memset: |s| {}, device: |d| {},
    context: |x, f| { x.processId = f.process_id as u64; },
    marker_data: |md, f| { md.cuptiDomainId = f.cupti_domain_id; });
release_encoder!(enc_13_5, v13_5, kernel: |k| {}, memcpy: |c| { c.copyCount = 1; },
    memset: |s| {}, device: |d| {},
    context: |x, f| { x.processId = f.process_id as u64; },
    marker_data: |md, f| { md.cuptiDomainId = f.cupti_domain_id; });

/// Writes `facts` into `out` in the layout release `release` ("13.4") uses.
pub fn encode(release: &str, facts: &Facts, out: &mut Encoded) {
    let f = match release {
        "12.4" => enc_12_4,
        "12.6" => enc_12_6,
        "12.8" => enc_12_8,
        "12.9" => enc_12_9,
        "13.0" => enc_13_0,
        "13.1" => enc_13_1,
        "13.2" => enc_13_2,
        "13.3" => enc_13_3,
        "13.4" => enc_13_4,
        "13.5" => enc_13_5,
        other => panic!("no layouts for release {other}"),
    };
    f(facts, out)
}

/// The size of a record of `kind` in `release`, or `None` for a kind the sim does not
/// write (`cuptiActivityGetNextRecord` answers `CUPTI_ERROR_INVALID_KIND` for those).
pub fn record_size(release: &str, kind: u32) -> Option<usize> {
    let family = match kind {
        K::CUPTI_ACTIVITY_KIND_KERNEL | K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => "Kernel",
        K::CUPTI_ACTIVITY_KIND_MEMCPY => "Memcpy",
        K::CUPTI_ACTIVITY_KIND_MEMSET => "Memset",
        K::CUPTI_ACTIVITY_KIND_DEVICE => "Device",
        K::CUPTI_ACTIVITY_KIND_CONTEXT => "Context",
        K::CUPTI_ACTIVITY_KIND_DRIVER | K::CUPTI_ACTIVITY_KIND_RUNTIME => "API",
        K::CUPTI_ACTIVITY_KIND_OVERHEAD => "Overhead",
        K::CUPTI_ACTIVITY_KIND_MARKER => "Marker",
        K::CUPTI_ACTIVITY_KIND_MARKER_DATA => "MarkerData",
        K::CUPTI_ACTIVITY_KIND_NAME => "Name",
        K::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION => "Synchronization",
        K::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION => "ExternalCorrelation",
        K::CUPTI_ACTIVITY_KIND_GRAPH_TRACE => "GraphTrace",
        K::CUPTI_ACTIVITY_KIND_MEMCPY2 => "MemcpyPtoP",
        _ => return None,
    };
    let rel = r::RELEASES.iter().find(|x| x.name == release)?;
    rel.records
        .iter()
        .find(|(fam, _, _)| *fam == family)
        .map(|(_, _, size)| *size)
}
