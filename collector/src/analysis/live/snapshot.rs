//! What one live update shows: the values of every series, as plain data for
//! [`crate::output::prometheus`] to write.

/// Launches summed under one label value (a kernel, a family, an NVTX range, a GPU).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub launches: u64,
    pub gpu_ns: u64,
    /// Model FLOPs (GEMM shapes), hardware FLOPs (counters) and DRAM bytes of the
    /// launches that have them; `None` when none has.
    pub model_flops: Option<f64>,
    pub hw_flops: Option<f64>,
    pub dram_bytes: Option<f64>,
}

impl Totals {
    /// Adds `o` (a value known on either side is known).
    pub fn add(&mut self, o: &Totals) {
        self.launches += o.launches;
        self.gpu_ns = self.gpu_ns.saturating_add(o.gpu_ns);
        let sum = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        self.model_flops = sum(self.model_flops, o.model_flops);
        self.hw_flops = sum(self.hw_flops, o.hw_flops);
        self.dram_bytes = sum(self.dram_bytes, o.dram_bytes);
    }
}

/// A kernel's series: its short name (or `other`), family and GPU model.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSeries {
    pub kernel: String,
    pub family: String,
    pub model: String,
    pub totals: Totals,
}

/// A GPU, by UUID, with dcgm-exporter's labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Gpu {
    /// The CUDA device ordinal of the first process seen on it.
    pub gpu: u32,
    /// `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    pub uuid: String,
    pub model: String,
    pub pci_bus_id: String,
    pub hostname: String,
    pub totals: Totals,
    /// DCGM profiling fields over the last window ([`super::dcgm`]).
    pub fields: Vec<(&'static str, f64)>,
}

/// What the collector itself has seen of the profiled processes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Collection {
    /// Records the profiled processes produced (their rings' tallies), and records
    /// read from their rings.
    pub produced: u64,
    pub received: u64,
    /// Per producer pid, the largest share of its ring found filled at a drain since
    /// the last update (0 to 1).
    pub ring_fill: Vec<(u32, f64)>,
}

/// Every series of one update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub gpus: Vec<Gpu>,
    pub kernels: Vec<KernelSeries>,
    pub families: Vec<(String, Totals)>,
    pub ranges: Vec<(String, Totals)>,
    pub run: Totals,
    /// Time-weighted MFU (model FLOPs), HFU (hardware FLOPs) and MBU of the whole run
    /// so far, as `gpuprof report` computes them, and over the kernels finalized since
    /// the previous update.
    pub mfu: Option<f64>,
    pub hfu: Option<f64>,
    pub mbu: Option<f64>,
    pub window_mfu: Option<f64>,
    pub window_hfu: Option<f64>,
    pub window_mbu: Option<f64>,
    /// Records lost, per source name (`gpuprof report`'s dropped section).
    pub dropped: Vec<(&'static str, u64)>,
    pub collection: Collection,
    /// Whether the profiled program has ended (these are the final values).
    pub ended: bool,
}
