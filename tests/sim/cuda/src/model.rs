//! Durations of simulated GPU operations: kernels from the cost model (`sim-core`,
//! loaded once by the first `cuInit`), copies and sets from one fixed formula.

use std::ffi::CString;
use std::sync::{Arc, Mutex, OnceLock};

use ahash::AHashMap;
use sim_core::{CostModel, Launch};

use crate::image::KernelInfo;
use crate::registry::LaunchSpec;

static MODEL: OnceLock<Result<CostModel, String>> = OnceLock::new();

/// Loads the cost model (`$SIMCUDA_COST_MODEL` or the built-in one) on first use.
/// On error, prints `simcuda: <error>` once on stderr and returns false (then and on
/// every later call).
pub(crate) fn load() -> bool {
    let mut first = false;
    let m = MODEL.get_or_init(|| {
        first = true;
        CostModel::from_env().map_err(|e| e.to_string())
    });
    if let (true, Err(e)) = (first, m) {
        eprintln!("simcuda: {e}");
    }
    m.is_ok()
}

/// A launch's duration and counters as the driver reports them.
pub(crate) type Cost = (u64, Arc<[(CString, f64)]>);

/// A launch as the cost model keys it: the kernel (by address: the entry holds the
/// kernel, so the address is not reused while cached) and the launch configuration.
#[derive(PartialEq, Eq, Hash)]
struct Key {
    kernel: usize,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    gemm: Option<[u64; 5]>,
}

/// Costs of the launches seen: the model is a pure function of the launch, and
/// evaluating its rules (name patterns, expressions, a map of counters) costs several
/// microseconds, which every launch would otherwise pay, far more than a real
/// driver's launch and than what the launch benchmark measures. Cleared when it holds
/// [`MAX_COSTS`] launches, so memory stays bounded.
static COSTS: Mutex<Option<Costs>> = Mutex::new(None);
/// Each cost with the kernel it is for, held so that its address stays its own.
type Costs = AHashMap<Key, (Arc<KernelInfo>, Cost)>;
const MAX_COSTS: usize = 4096;

/// The cost of launch `l`: duration, and counter values by name; `Err` is the model's
/// message (no rule matched, or an expression failed to evaluate).
pub(crate) fn kernel_cost(l: &LaunchSpec) -> Result<Cost, String> {
    let key = Key {
        kernel: Arc::as_ptr(&l.kernel) as usize,
        grid: l.grid,
        block: l.block,
        shared: l.shared,
        gemm: l
            .gemm
            .map(|g| [g.m, g.n, g.k, g.batch, u64::from(g.elem_bytes)]),
    };
    let mut costs = COSTS.lock().unwrap_or_else(|e| e.into_inner());
    let costs = costs.get_or_insert_with(AHashMap::new);
    if let Some((_, c)) = costs.get(&key) {
        return Ok(c.clone());
    }
    let launch = Launch {
        name: l.kernel.name.to_string_lossy().into_owned(),
        grid: l.grid,
        block: l.block,
        shared_mem: l.shared,
        registers: l.kernel.registers,
        gemm: l.gemm.map(|g| sim_core::GemmShape {
            m: g.m,
            n: g.n,
            k: g.k,
            batch: g.batch,
            elem_bytes: g.elem_bytes,
        }),
    };
    let cost = match MODEL.get() {
        Some(Ok(m)) => m.cost(&launch).map_err(|e| e.to_string())?,
        _ => return Err("no cost model loaded".to_string()),
    };
    let counters: Arc<[(CString, f64)]> = cost
        .counters
        .into_iter()
        .filter_map(|(k, v)| Some((CString::new(k).ok()?, v)))
        .collect();
    if costs.len() >= MAX_COSTS {
        costs.clear();
    }
    let c = (cost.duration_ns, counters);
    costs.insert(key, (l.kernel.clone(), c.clone()));
    Ok(c)
}

pub(crate) use sim_core::transfer::{transfer_ns, DEVICE_BYTES_PER_NS, HOST_LINK_BYTES_PER_NS};
