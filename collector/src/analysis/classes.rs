//! Kernel launches summed by class: what lets every analysis read a session of any
//! length in bounded memory.
//!
//! Two launches are of one **class** when every value the analyses derive from a
//! launch other than its duration and its counters is the same for both: the process,
//! the device, the kernel name, the launch configuration (grid, block) and the GEMM
//! call it computed (shape, and whether it is the call's first launch, the one
//! credited with the FLOPs). A class holds sums over its launches: calls, GPU time
//! (total, shortest, longest), and what their counters measured. The number of
//! classes is the number of distinct kernels a program runs, not the number of
//! launches.

use std::collections::BTreeMap;

use ahash::AHashMap;

use super::durations::Durations;
use super::gemm::GemmShape;

/// What makes two launches one class (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClassKey {
    pub pid: u32,
    pub device_id: u32,
    /// The kernel's interned name id in `pid` (0: none).
    pub name: u32,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    pub gemm: Option<GemmPart>,
}

impl ClassKey {
    /// The class of joined kernel `j`: the report's, the live view's and the Kineto
    /// trace's lookups of fitted rates all key classes this way.
    pub fn of(j: &super::join::Joined) -> ClassKey {
        ClassKey {
            pid: j.pid,
            device_id: j.kernel.device_id,
            name: j.kernel.name,
            grid: j.kernel.grid,
            block: j.kernel.block,
            gemm: j.gemm.map(GemmPart::of),
        }
    }
}

/// The GEMM call a launch computed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GemmPart {
    pub shape: GemmShape,
    /// The call's first launch (`launch_index == 0`), which carries its FLOPs.
    pub first: bool,
}

impl GemmPart {
    /// The part of GEMM call `g` a launch computed.
    pub fn of(g: &wire::Gemm) -> GemmPart {
        GemmPart {
            shape: GemmShape::of(g),
            first: g.launch_index == 0,
        }
    }

    /// The model FLOPs one launch of this class is credited with.
    pub fn flops(&self) -> f64 {
        if self.first {
            self.shape.model_flops()
        } else {
            0.0
        }
    }
}

/// Launches counted and their time summed: a class, or the part of one that an NVTX
/// range covers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub calls: u64,
    /// Sum of durations, ns (saturating).
    pub ns: u64,
    /// Launches that measured DRAM bytes, their bytes and their time.
    pub bytes_calls: u64,
    pub bytes: f64,
    pub bytes_ns: u64,
}

impl Tally {
    /// One launch of `ns` with its measured DRAM bytes, if any.
    pub fn add(&mut self, ns: u64, bytes: Option<f64>) {
        self.calls += 1;
        self.ns = self.ns.saturating_add(ns);
        if let Some(b) = bytes {
            self.bytes_calls += 1;
            self.bytes += b;
            self.bytes_ns = self.bytes_ns.saturating_add(ns);
        }
    }

    pub fn merge(&mut self, o: &Tally) {
        self.calls += o.calls;
        self.ns = self.ns.saturating_add(o.ns);
        self.bytes_calls += o.bytes_calls;
        self.bytes += o.bytes;
        self.bytes_ns = self.bytes_ns.saturating_add(o.bytes_ns);
    }
}

/// The sums of one class.
#[derive(Debug, Clone, PartialEq)]
pub struct Class {
    pub key: ClassKey,
    /// The kernel's name as recorded (empty when unknown).
    pub mangled: String,
    pub tally: Tally,
    pub min_ns: u64,
    pub max_ns: u64,
    /// The spread of its durations (median, standard deviation).
    pub durations: Durations,
    /// Launches with at least one `KernelCounters` record.
    pub with_counters: u64,
    /// Launches from a CUDA graph.
    pub graph_calls: u64,
    /// What a block of its launches needs of an SM: registers per thread (the most
    /// recorded), and static plus dynamic shared memory, bytes (the least and the
    /// most recorded: a launch sets its dynamic shared memory).
    pub registers_per_thread: u16,
    pub shared_memory: (u32, u32),
    /// Every metric of every `KernelCounters` record of its launches: metric id
    /// ([`super::aggregate::MetricNames`]) -> (records carrying it, sum).
    pub metrics: BTreeMap<u32, (u64, f64)>,
    /// FLOP-counting metrics, once per launch (the first value when a launch has the
    /// metric twice): metric id -> (launches, sum).
    pub flop_metrics: BTreeMap<u32, (u64, f64)>,
}

/// Every class of a session, in order of first launch.
#[derive(Debug, Default)]
pub struct Classes {
    pub list: Vec<Class>,
    index: AHashMap<ClassKey, usize>,
}

impl Classes {
    /// The index of `key`'s class, made (named `mangled`) when new.
    pub fn of(&mut self, key: ClassKey, mangled: impl FnOnce() -> String) -> usize {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.list.len();
        self.list.push(Class {
            key: key.clone(),
            mangled: mangled(),
            tally: Tally::default(),
            min_ns: u64::MAX,
            max_ns: 0,
            durations: Durations::default(),
            with_counters: 0,
            graph_calls: 0,
            registers_per_thread: 0,
            shared_memory: (u32::MAX, 0),
            metrics: BTreeMap::new(),
            flop_metrics: BTreeMap::new(),
        });
        self.index.insert(key, i);
        i
    }
}
