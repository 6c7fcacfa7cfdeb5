//! Durations of simulated GPU operations: kernels from the cost model (`sim-core`,
//! loaded once by the first `cuInit`), copies and sets from one fixed formula.

use std::sync::OnceLock;

use sim_core::{CostModel, KernelCost, Launch};

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

/// The cost of one kernel launch; `Err` is the model's message (no rule matched, or an
/// expression failed to evaluate).
pub(crate) fn kernel_cost(launch: &Launch) -> Result<KernelCost, String> {
    match MODEL.get() {
        Some(Ok(m)) => m.cost(launch).map_err(|e| e.to_string()),
        _ => Err("no cost model loaded".to_string()),
    }
}

pub(crate) use sim_core::transfer::{transfer_ns, DEVICE_BYTES_PER_NS, HOST_LINK_BYTES_PER_NS};
