//! What the profiling APIs share: the params-struct boundary, the metrics the sim
//! knows, chip names, how values combine, the config image, and the kernel feed.
//!
//! The profiling APIs (profiler host `cupti_profiler_host.h`, range profiler
//! `cupti_range_profiler.h`, PM sampling `cupti_pmsampling.h`) exist from CUDA 12.6;
//! impersonating an older release they answer `CUPTI_ERROR_NOT_SUPPORTED`.
//!
//! **Metrics and passes** are NVIDIA's: the host API asks NVIDIA's real library which
//! metrics a chip accepts for each profiler type and how many passes a config needs
//! ([`crate::real_host`]); the config image carries its answer. Values come from the
//! cost model the simulated driver prices kernels with (`$SIMCUDA_COST_MODEL`, else
//! the built-in one): every key of `[defaults.counters]` and of each rule's
//! `counters`; a kernel whose rule lacks a counter reads 0 for it, and a metric the
//! model does not name reads NaN (no counter collected). A user-replay range profiler
//! pass of a multi-pass config is not the last (`isAllPassSubmitted` = 0); kernel
//! replay runs every pass inside the launch; PM sampling refuses a multi-pass config.
//!
//! **Combining values** (a user range over several kernels, a PM sample window
//! overlapping parts of kernels), by the metric name's rollup, see [`Combine`]:
//! counters (`.sum`, `.avg` and anything else) add, `.max` / `.min` take the extreme,
//! and ratios (`.pct_of_peak_sustained_active`, other `.pct*`, `.ratio`,
//! `.per_second`, `.per_cycle*`) are averaged weighted by time.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cupti_sys::CUptiResult::{self, *};
use sim_abi::GpuOp;

type R = CUptiResult::Type;

/// Environment variable that plays another tool holding the GPU's counters (DCGM's
/// profiling module, another profiler): `1` makes the calls that take the counters
/// for a context or device, `cuptiRangeProfilerEnable` and `cuptiPmSamplingEnable`,
/// answer `CUPTI_ERROR_HARDWARE_BUSY`; a comma-separated list of call names makes
/// exactly those answer it (also `cuptiProfilerInitialize`). Which call real CUPTI
/// refuses is not documented for these APIs (cupti_result.h: "The performance
/// monitoring hardware is in use by other client"), so each can be played.
pub const COUNTERS_BUSY_ENV: &str = "SIMCUPTI_COUNTERS_BUSY";

/// Whether [`COUNTERS_BUSY_ENV`] makes `call` answer `CUPTI_ERROR_HARDWARE_BUSY`.
pub fn counters_busy(call: &str) -> bool {
    let Some(v) = std::env::var_os(COUNTERS_BUSY_ENV) else {
        return false;
    };
    let v = v.to_string_lossy();
    if v == "1" {
        return matches!(call, "cuptiRangeProfilerEnable" | "cuptiPmSamplingEnable");
    }
    v.split(',').any(|c| c == call)
}

/// Whether the impersonated release has the profiling APIs (12.6 headers on).
pub fn available() -> bool {
    crate::release::current().at_least(12, 6)
}

/// The impersonated release's `<name>_STRUCT_SIZE`: the release's
/// `PARAMS_STRUCT_SIZES`, which `scripts/regen-bindings.sh` evaluates from that
/// release's own headers (`cupti_sys::records::vXX_Y`). `None`: the release's
/// headers lack the struct.
pub fn release_struct_size(name: &str) -> Option<usize> {
    crate::release::current()
        .release
        .params_struct_sizes
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, size)| size)
}

/// The C name of the params struct `T` (bindgen keeps the headers' names).
pub fn struct_name<T>() -> &'static str {
    std::any::type_name::<T>().rsplit("::").next().unwrap_or("")
}

/// Runs `f` on a copy of the caller's params struct `p` and copies it back.
///
/// `structSize` (the first field of every profiling params struct) below `min_size`
/// (the struct's size in the first release that has it) is
/// `CUPTI_ERROR_INVALID_PARAMETER`, as is a null `p`. So is a `structSize` larger
/// than the impersonated release's `<T>_STRUCT_SIZE` ([`release_struct_size`], looked
/// up by `T`'s name): NVIDIA's 12.6-13.1 libraries refuse the 13.2
/// `CUpti_Profiler_Host_Initialize_Params` size (56, with
/// `pSinglePassMetricSetName`) with `CUPTI_ERROR_INVALID_PARAMETER` and accept their
/// own (48). For the other structs the real answer to a larger size cannot be asked
/// without a GPU; the sim refuses it the same way (strict). A struct the release's
/// headers lack is `CUPTI_ERROR_NOT_SUPPORTED`, as a call the release lacks. Only
/// `min(structSize, size_of::<T>())` bytes are read and written, so clients built against older
/// headers (smaller structs) are served, with the fields they lack zero; `f` gets the
/// client's `structSize` to tell which fields exist.
///
/// # Safety
/// `p` is null or valid for reading and writing `structSize` bytes, and `T` is a
/// plain C struct (integers, pointers) for which all-zero bytes are valid.
pub unsafe fn with_params<T: Copy>(
    p: *mut T,
    min_size: usize,
    f: impl FnOnce(&mut T, usize) -> R,
) -> R {
    if p.is_null() {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    // SAFETY: non-null; every params struct starts with `size_t structSize`.
    let size = unsafe { (p as *const usize).read_unaligned() };
    if size < min_size {
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    match release_struct_size(struct_name::<T>()) {
        None => return CUPTI_ERROR_NOT_SUPPORTED,
        Some(max) if size > max => return CUPTI_ERROR_INVALID_PARAMETER,
        Some(_) => {}
    }
    let n = size.min(std::mem::size_of::<T>());
    // SAFETY: T is a plain C struct, all-zero is a valid value (the caller's promise).
    let mut v: T = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's struct holds at least `size >= n` bytes; `v` holds
    // size_of::<T>() >= n bytes; they do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(p as *const u8, &mut v as *mut T as *mut u8, n) };
    let r = f(&mut v, size);
    // SAFETY: as above, in the other direction.
    unsafe { std::ptr::copy_nonoverlapping(&v as *const T as *const u8, p as *mut u8, n) };
    r
}

/// Reads `n` C strings from `names`; `None` for a null array or entry, or non-UTF-8.
///
/// # Safety
/// `names` is null or points to `n` pointers, each null or a NUL-terminated string.
pub unsafe fn read_names(names: *const *const std::ffi::c_char, n: usize) -> Option<Vec<String>> {
    if names.is_null() {
        return None;
    }
    (0..n)
        .map(|i| {
            // SAFETY: `names` has `n` entries (the caller's promise).
            let p = unsafe { *names.add(i) };
            if p.is_null() {
                return None;
            }
            // SAFETY: non-null entries are C strings.
            unsafe { CStr::from_ptr(p) }
                .to_str()
                .ok()
                .map(str::to_owned)
        })
        .collect()
}

/// Client metric names: `None` for none or a null entry (the callers answer
/// `CUPTI_ERROR_INVALID_PARAMETER`). Which names exist is NVIDIA's library's to say
/// ([`crate::real_host`]); a name it accepts that the cost model does not know reads
/// NaN: no counter was collected for it.
///
/// # Safety
/// As [`read_names`].
pub unsafe fn metric_names(names: *const *const std::ffi::c_char, n: usize) -> Option<Vec<String>> {
    if n == 0 {
        return None;
    }
    // SAFETY: forwarded.
    unsafe { read_names(names, n) }
}

/// How values of one metric combine over several kernels or parts of kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Counters (`.sum`, `.avg` over units, anything unrecognised): added. Over part
    /// of a kernel: the kernel's value times the part's share of its duration.
    Sum,
    /// `.max`: the largest.
    Max,
    /// `.min`: the smallest.
    Min,
    /// `.pct_of_peak_sustained_active`: averaged weighted by the kernels' active time.
    RatioActive,
    /// Other ratios (`.pct*`, `.ratio`, `.per_second`, `.per_cycle*`): for a range,
    /// weighted by kernel time like [`Combine::RatioActive`]; for a PM sample, weighted
    /// by elapsed time (idle time in the window counts as 0).
    RatioElapsed,
}

/// The [`Combine`] rule of metric `name`.
pub fn combine(name: &str) -> Combine {
    let rollup = name.split_once('.').map_or("", |(_, r)| r);
    if rollup.contains("pct_of_peak_sustained_active") {
        Combine::RatioActive
    } else if rollup.contains("pct")
        || rollup.contains("ratio")
        || rollup.contains("per_second")
        || rollup.contains("per_cycle")
    {
        Combine::RatioElapsed
    } else if rollup == "max" {
        Combine::Max
    } else if rollup == "min" {
        Combine::Min
    } else {
        Combine::Sum
    }
}

const CONFIG_MAGIC: &[u8; 8] = b"SIMCFG02";

/// What a config image holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigImage {
    pub metrics: Vec<String>,
    /// Passes the config needs: one per `cuptiProfilerHostConfigAddMetrics` call.
    pub passes: usize,
}

/// The sim's config image: magic, passes (u32), metric count (u32), then
/// NUL-terminated names. Opaque to clients, as the real one is.
pub fn encode_config(metrics: &[String], passes: usize) -> Vec<u8> {
    let mut v = CONFIG_MAGIC.to_vec();
    v.extend_from_slice(&(passes as u32).to_ne_bytes());
    v.extend_from_slice(&(metrics.len() as u32).to_ne_bytes());
    for m in metrics {
        v.extend_from_slice(m.as_bytes());
        v.push(0);
    }
    v
}

/// The config image in `image`, `None` if it is not one.
pub fn decode_config(image: &[u8]) -> Option<ConfigImage> {
    let rest = image.strip_prefix(CONFIG_MAGIC)?;
    let passes = u32::from_ne_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let n = u32::from_ne_bytes(rest.get(4..8)?.try_into().ok()?) as usize;
    let mut body = &rest[8..];
    let mut names = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        let end = body.iter().position(|b| *b == 0)?;
        names.push(String::from_utf8(body[..end].to_vec()).ok()?);
        body = &body[end + 1..];
    }
    (n > 0 && passes > 0).then_some(ConfigImage {
        metrics: names,
        passes,
    })
}

/// The config image at (`ptr`, `size`), `None` if null or not one.
///
/// # Safety
/// `ptr` is null or valid for reading `size` bytes.
pub unsafe fn config_at(ptr: *const u8, size: usize) -> Option<ConfigImage> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the caller's promise.
    decode_config(unsafe { std::slice::from_raw_parts(ptr, size) })
}

/// One executed kernel as the profilers see it (a clone shares its counters).
#[derive(Clone)]
pub struct Kernel {
    /// The launch call's correlation id.
    pub correlation_id: u32,
    pub device_id: u32,
    pub context_id: u32,
    pub start: u64,
    pub end: u64,
    pub counters: Arc<[(Arc<str>, f64)]>,
    /// Launched from a CUDA graph (a kernel node of a graph launch).
    pub graph: bool,
}

impl Kernel {
    /// The kernel's value of `metric` (0 when its rule has none).
    pub fn value(&self, metric: &str) -> f64 {
        self.counters
            .iter()
            .find(|(n, _)| **n == *metric)
            .map_or(0.0, |(_, v)| *v)
    }

    pub fn duration(&self) -> u64 {
        self.end.saturating_sub(self.start).max(1)
    }
}

/// Started range profilers plus started PM samplers: kernels are looked at only
/// when some are.
pub static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// The driver's counter names, each made a string once: every launch of a
/// configuration reports the same few dozen, so a kernel costs the profilers a lookup
/// per counter rather than an allocation and a UTF-8 check (the sim's cost per launch
/// while counters are collected, which a GPU does not charge). Keyed by the name's
/// address: the driver keeps each launch configuration's names (for up to 4096
/// configurations), so addresses repeat; the map is emptied when it reaches
/// [`MAX_COUNTER_NAMES`], so it stays bounded however many there are.
static COUNTER_NAMES: Mutex<BTreeMap<usize, Arc<str>>> = Mutex::new(BTreeMap::new());
const MAX_COUNTER_NAMES: usize = 1 << 16;

/// From the tracer, for every executed kernel.
pub fn on_kernel(op: &GpuOp) {
    if ACTIVE.load(Ordering::Acquire) == 0
        && crate::range_profiler::AWAITING.load(Ordering::Acquire) == 0
    {
        return;
    }
    let mut counters = Vec::with_capacity(op.num_counters);
    if !op.counters.is_null() {
        let mut names = COUNTER_NAMES.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..op.num_counters {
            // SAFETY: the driver passes `num_counters` valid entries during the call.
            let c = unsafe { &*op.counters.add(i) };
            if c.name.is_null() {
                continue;
            }
            // SAFETY: counter names are NUL-terminated.
            let name = unsafe { CStr::from_ptr(c.name) }.to_bytes();
            // Looked up by address, then compared: an address reused for another
            // name makes the string again.
            let name = match names.get(&(c.name as usize)) {
                Some(known) if known.as_bytes() == name => known.clone(),
                _ => {
                    let made: Arc<str> = String::from_utf8_lossy(name).into();
                    if names.len() >= MAX_COUNTER_NAMES {
                        names.clear();
                    }
                    names.insert(c.name as usize, made.clone());
                    made
                }
            };
            counters.push((name, c.value));
        }
    }
    let k = Kernel {
        correlation_id: op.correlation_id,
        device_id: op.device_id,
        context_id: op.context_id,
        start: op.start_ns,
        end: op.end_ns,
        counters: counters.into(),
        graph: op.graph_node_id != 0,
    };
    crate::range_profiler::on_kernel(&k);
    crate::pm_sampling::on_kernel(&k);
}

/// `cuptiProfilerInitialize` calls minus `cuptiProfilerDeInitialize` calls.
pub static PROFILER_INITIALIZED: AtomicUsize = AtomicUsize::new(0);

/// Target-side objects need `cuptiProfilerInitialize` first ("Sets up the hooks with
/// the CUDA driver"): else `CUPTI_ERROR_NOT_INITIALIZED`.
pub fn require_profiler_initialized() -> Result<(), R> {
    if PROFILER_INITIALIZED.load(Ordering::Acquire) == 0 {
        Err(CUPTI_ERROR_NOT_INITIALIZED)
    } else {
        Ok(())
    }
}

/// A unique opaque handle value for a new object (never dereferenced by anyone).
pub fn new_handle() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    0x5105_0000_0000 + NEXT.fetch_add(1, Ordering::Relaxed) * 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert_eq!(combine("dram__bytes_read.sum"), Combine::Sum);
        assert_eq!(combine("sm__cycles_active.avg"), Combine::Sum);
        assert_eq!(
            combine("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
            Combine::RatioActive
        );
        assert_eq!(
            combine("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
            Combine::RatioElapsed
        );
        assert_eq!(combine("sm__warps_active.max"), Combine::Max);
        let c = encode_config(&["a.sum".into(), "b.max".into()], 2);
        let d = decode_config(&c).unwrap();
        assert_eq!(
            (d.metrics.as_slice(), d.passes),
            (&["a.sum".to_string(), "b.max".to_string()][..], 2)
        );
        assert!(decode_config(&c[..c.len() - 3]).is_none());
    }
}
