//! PM sampling's state (`cupti_pmsampling.h`); exports in `api_pm_sampling`.
//!
//! One object per device. Between Start and Stop the simulated GPU is sampled at
//! fixed intervals of its clock: sample `i` covers `[t0 + i*T, t0 + (i+1)*T)`, `t0`
//! the driver's clock at `cuptiPmSamplingStart`, `T` the sampling interval in ns
//! (`CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL`) or `samplingInterval` cycles
//! of the device clock (`CU_DEVICE_ATTRIBUTE_CLOCK_RATE`, standing in for the sys
//! clock; `..._GPU_SYSCLK_INTERVAL`) rounded to whole ns. At Stop the last, partial
//! sample ends at the Stop time, so the samples tile `[Start, Stop)` exactly. While
//! sampling runs, a sample completes (can be decoded) 50 ms after its end
//! (`REPORT_LAG_NS`), the time a kernel may take to be reported after its start.
//!
//! A sample's value of a metric, from the kernels executed on the device (reported
//! after Start) overlapping its window, per [`crate::profiling::Combine`]:
//! - counters: each kernel's value apportioned by the share of its `[start, end)`
//!   inside the window. The share is taken as a difference of cumulative values,
//!   `C(x) = round(v * x / d)` for integer `v` (`x` ns into a kernel of `d` ns;
//!   `C(0) = 0`, `C(d) = v`), `v * x / d` otherwise, so integer counters stay
//!   integers and a kernel's parts over consecutive windows add up to its value
//!   exactly; summed over all samples, each counter equals the total of the kernels
//!   inside the sampling period (parts of kernels outside `[Start, Stop)` are not
//!   sampled). `sm__cycles_active.avg` is a counter too: a window gets its share.
//! - `gpu__time_duration.sum` is the window's own length, kernels or not (seen on an
//!   H200 with CUPTI 13.0.1: every window read its length to the ns, idle ones too).
//!
//! **The first sample after Start** (seen on an H200 in five of five runs): its
//! `startTimestamp` lies before the Start, 0.48-4.6 s before its end, and its
//! `gpu__time_duration.sum` is its end timestamp, as if counted from 0. Which event
//! its start marks is unchecked; the sim puts it at the first
//! `cuptiProfilerInitialize` of the process (before every Start, as seen). Its other
//! values are those of `[Start, end)`.
//! - `.pct_of_peak_sustained_active`: average over the kernels weighted by their
//!   overlap with the window (0 when none); other ratios: the same sum divided by the
//!   window's length (idle time counts as 0); `.max` / `.min`: over overlapping kernels.
//!
//! The hardware buffer holds `hardwareBufferSize / (32 + 8 * metrics)` samples.
//! Samples completed but not yet decoded stay there; on overflow,
//! `CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST` drops the newest
//! and reports `overflow` = 1 with `CUPTI_ERROR_OUT_OF_MEMORY` ("if there is record
//! overflow in the hardware buffer"), `..._KEEP_LATEST` drops the oldest silently.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Once;

use cupti_sys::CUptiResult::{self, *};

use crate::counter_data::{Image, Record, Shape, KIND_SAMPLE};
use crate::profiling::{combine, Combine, Kernel, ACTIVE};
use crate::registry::{Handled, Registry};

type R = CUptiResult::Type;

/// Bytes one sample takes in the simulated hardware buffer.
pub fn hw_record_bytes(metrics: usize) -> usize {
    32 + 8 * metrics
}

#[derive(Debug, Clone)]
pub struct PmConfig {
    pub metrics: Vec<String>,
    pub interval_ns: u64,
    pub hw_capacity: u64,
    pub keep_latest: bool,
}

struct Session {
    cfg: PmConfig,
    start: u64,
    stop: Option<u64>,
    /// Samples the hardware has produced so far (indices below are in the buffer,
    /// decoded or lost).
    produced: u64,
    /// Undecoded samples in the hardware buffer, as index ranges.
    buffer: VecDeque<(u64, u64)>,
    overflow: bool,
    kernels: HeldKernels,
}

/// The kernels a session's undecoded windows may read, sorted by start, each with its
/// arrival number. A window reads only the kernels that can overlap it (those
/// starting at most the longest duration held before it), found by binary search, in
/// the order they arrived, the order every window read all of them in before: the
/// same values to the bit, at a cost that follows the window's kernels rather than
/// every kernel held (a launch flood holds 50 ms of kernels, `REPORT_LAG_NS`).
#[derive(Default)]
struct HeldKernels {
    by_start: Vec<(u64, Kernel)>,
    arrived: u64,
    /// The longest `end - start` held (never lowered while the session lasts).
    longest: u64,
}

impl HeldKernels {
    fn push(&mut self, k: Kernel) {
        self.longest = self.longest.max(k.end.saturating_sub(k.start));
        // Kernels arrive nearly in start order: the place is found from the back.
        let mut at = self.by_start.len();
        while at > 0 && self.by_start[at - 1].1.start > k.start {
            at -= 1;
        }
        self.by_start.insert(at, (self.arrived, k));
        self.arrived += 1;
    }

    /// The kernels that may overlap `[a, b)`, in arrival order.
    fn near(&self, a: u64, b: u64) -> Vec<&Kernel> {
        let from = a.saturating_sub(self.longest);
        let lo = self.by_start.partition_point(|(_, k)| k.start < from);
        let hi = self.by_start.partition_point(|(_, k)| k.start < b);
        let mut near: Vec<&(u64, Kernel)> = self.by_start[lo..hi]
            .iter()
            .filter(|(_, k)| k.end > a)
            .collect();
        near.sort_unstable_by_key(|(arrived, _)| *arrived);
        near.into_iter().map(|(_, k)| k).collect()
    }

    /// Forgets the kernels that end at or before `t`.
    fn forget_before(&mut self, t: u64) {
        self.by_start.retain(|(_, k)| k.end > t);
    }
}

/// How long after its end a sample completes while sampling runs. The simulated
/// driver schedules a kernel under its lock and reports it to CUPTI just after, so on
/// a loaded machine a kernel may be reported well after its start: a sample made
/// before then would miss it (its window reading 0 where the kernel ran). The lag
/// keeps every reported kernel inside its windows; Stop completes every sample.
const REPORT_LAG_NS: u64 = 50_000_000;

impl Session {
    fn completed(&self, now: u64) -> u64 {
        let t = self.stop.unwrap_or(now.saturating_sub(REPORT_LAG_NS));
        if t <= self.start {
            return 0;
        }
        let (n, rest) = (
            (t - self.start) / self.cfg.interval_ns,
            (t - self.start) % self.cfg.interval_ns,
        );
        n + u64::from(self.stop.is_some() && rest != 0)
    }

    fn window(&self, i: u64) -> (u64, u64) {
        let a = self.start + i * self.cfg.interval_ns;
        let b = a + self.cfg.interval_ns;
        (a, self.stop.map_or(b, |s| b.min(s)))
    }

    /// Moves newly completed samples into the hardware buffer.
    fn refill(&mut self, now: u64) {
        let done = self.completed(now);
        if done <= self.produced {
            return;
        }
        self.buffer.push_back((self.produced, done));
        self.produced = done;
        let mut held: u64 = self.buffer.iter().map(|(a, b)| b - a).sum();
        while held > self.cfg.hw_capacity {
            let excess = held - self.cfg.hw_capacity;
            if self.cfg.keep_latest {
                let front = self.buffer.front_mut().expect("non-empty");
                let cut = excess.min(front.1 - front.0);
                front.0 += cut;
                if front.0 == front.1 {
                    self.buffer.pop_front();
                }
                held -= cut;
            } else {
                let back = self.buffer.back_mut().expect("non-empty");
                let cut = excess.min(back.1 - back.0);
                back.1 -= cut;
                if back.0 == back.1 {
                    self.buffer.pop_back();
                }
                held -= cut;
                self.overflow = true;
            }
        }
    }

    fn next_sample(&mut self) -> Option<u64> {
        let front = self.buffer.front_mut()?;
        let i = front.0;
        front.0 += 1;
        if front.0 == front.1 {
            self.buffer.pop_front();
        }
        Some(i)
    }

    /// Sample `i`'s reported start, end and values (the first sample's start and GPU
    /// time as the module doc says).
    fn sample(&self, i: u64) -> (u64, u64, Vec<f64>) {
        let (a, b) = self.window(i);
        let first = i == 0;
        let near = self.kernels.near(a, b);
        let values = self
            .cfg
            .metrics
            .iter()
            .map(|m| match m.as_str() {
                GPU_TIME if first => b as f64,
                GPU_TIME => (b - a) as f64,
                _ => window_value(m, near.iter().copied(), a, b),
            })
            .collect();
        let start = if first {
            a.min(PROFILER_INITIALIZED_AT.load(Ordering::Acquire))
        } else {
            a
        };
        (start, b, values)
    }
}

/// The cumulative part of `v` after `x` of `d` ns (see the module doc).
fn cumulative(v: f64, x: u64, d: u64) -> f64 {
    if x == 0 {
        0.0
    } else if x >= d {
        v
    } else if v.fract() == 0.0 && v.abs() < 9.0e15 {
        (v * x as f64 / d as f64).round()
    } else {
        v * x as f64 / d as f64
    }
}

/// Metric `m` over the window `[a, b)` from `kernels`.
pub fn window_value<'k>(
    m: &str,
    kernels: impl IntoIterator<Item = &'k Kernel>,
    a: u64,
    b: u64,
) -> f64 {
    let mut acc = 0.0;
    let mut weight = 0.0;
    let mut extreme: Option<f64> = None;
    let rule = combine(m);
    for k in kernels {
        let (s, e) = (k.start.max(a), k.end.min(b));
        if e <= s {
            continue;
        }
        let v = k.value(m);
        let ov = (e - s) as f64;
        match rule {
            Combine::Sum => {
                let d = k.duration();
                acc += cumulative(v, e - k.start, d) - cumulative(v, s - k.start, d);
            }
            Combine::Max => extreme = Some(extreme.map_or(v, |x| x.max(v))),
            Combine::Min => extreme = Some(extreme.map_or(v, |x| x.min(v))),
            Combine::RatioActive | Combine::RatioElapsed => {
                acc += v * ov;
                weight += ov;
            }
        }
    }
    match rule {
        Combine::Sum => acc,
        Combine::Max | Combine::Min => extreme.unwrap_or(0.0),
        Combine::RatioActive if weight > 0.0 => acc / weight,
        Combine::RatioActive => 0.0,
        Combine::RatioElapsed => acc / (b - a).max(1) as f64,
    }
}

pub struct Sampler {
    pub handle: usize,
    pub device: u32,
    pub chip: String,
    pub shape: Option<Shape>,
    pub config: Option<PmConfig>,
    session: Option<Session>,
    /// The device's last context was destroyed while this object was enabled.
    orphaned: bool,
}

impl Sampler {
    fn running(&self) -> bool {
        self.session.as_ref().is_some_and(|s| s.stop.is_none())
    }

    /// `cuptiPmSamplingSetConfig`: not while sampling.
    pub fn set_config(&mut self, c: PmConfig) -> Result<(), R> {
        if self.running() {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        }
        self.config = Some(c);
        Ok(())
    }

    /// Starts a new session at `now` (undecoded samples of an earlier one are lost).
    pub fn start(&mut self, now: u64) -> Result<(), R> {
        let Some(cfg) = self.config.clone() else {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        };
        if self.running() {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        }
        self.session = Some(Session {
            cfg,
            start: now,
            stop: None,
            produced: 0,
            buffer: VecDeque::new(),
            overflow: false,
            kernels: HeldKernels::default(),
        });
        ACTIVE.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Stops sampling; crashes after PM sampling was torn down at exit
    /// ([`register_exit_teardown`]).
    pub fn stop(&mut self, now: u64) -> Result<(), R> {
        crash_if_torn_down("cuptiPmSamplingStop");
        match &mut self.session {
            Some(s) if s.stop.is_none() => {
                s.stop = Some(now.max(s.start));
                ACTIVE.fetch_sub(1, Ordering::AcqRel);
                Ok(())
            }
            _ => Err(CUPTI_ERROR_INVALID_OPERATION),
        }
    }

    /// Decodes buffered samples into `buf`; returns (stop reason, overflow).
    ///
    /// After the device's last context was destroyed the process crashes, as it did
    /// on H100 and H200 with CUPTI 13.0.1 (a segmentation fault in
    /// `libnvperf_host.so` under `cuptiPmSamplingDecodeData`, docs/ARCHITECTURE.md):
    /// the sim aborts with a message saying so.
    pub fn decode(&mut self, buf: &mut [u8], now: u64) -> Result<(u32, bool), R> {
        use cupti_sys::CUpti_PmSampling_DecodeStopReason::*;
        crash_if_torn_down("cuptiPmSamplingDecodeData");
        if self.orphaned {
            eprintln!(
                "sim-cupti: cuptiPmSamplingDecodeData on GPU {} after its last context was \
                 destroyed: the process crashes, as on a real GPU",
                self.device
            );
            std::process::abort();
        }
        let mut img = Image::parse(buf)
            .filter(|i| i.shape.kind == KIND_SAMPLE)
            .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
        let Some(s) = &mut self.session else {
            return Ok((CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS, false));
        };
        s.refill(now);
        while img.filled < img.shape.capacity {
            let Some(i) = s.next_sample() else { break };
            let (start, end, vals) = s.sample(i);
            let values = img
                .shape
                .metrics
                .iter()
                .map(|m| {
                    s.cfg
                        .metrics
                        .iter()
                        .position(|x| x == m)
                        .map_or(f64::NAN, |j| vals[j])
                })
                .collect();
            img.push(
                buf,
                &Record {
                    start,
                    end,
                    values,
                    name: String::new(),
                },
            );
        }
        let keep_from = s.buffer.front().map_or(s.produced, |f| f.0);
        let from_t = s.window(keep_from).0;
        s.kernels.forget_before(from_t);
        let reason = if s.buffer.is_empty() {
            CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS
        } else {
            CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL
        };
        Ok((reason, std::mem::take(&mut s.overflow)))
    }
}

static SAMPLERS: Registry<Sampler> = Registry::new();

impl Handled for Sampler {
    fn handle(&self) -> usize {
        self.handle
    }
}

/// Runs `f` on the object `handle`, or answers `missing`.
pub fn with<T>(
    handle: usize,
    missing: R,
    f: impl FnOnce(&mut Sampler) -> Result<T, R>,
) -> Result<T, R> {
    SAMPLERS.with(handle, missing, f)
}

/// A new object on `device`; `CUPTI_ERROR_INVALID_OPERATION` "if PM sampling is
/// already enabled on the device".
pub fn enable(device: u32, chip: String) -> Result<usize, R> {
    register_exit_teardown();
    SAMPLERS.add(
        |p| p.device == device,
        |handle| Sampler {
            handle,
            device,
            chip,
            shape: None,
            config: None,
            session: None,
            orphaned: false,
        },
    )
}

/// A PM sample's GPU time: its window's length (module doc).
const GPU_TIME: &str = "gpu__time_duration.sum";

/// The driver's clock at the first `cuptiProfilerInitialize` of the process.
static PROFILER_INITIALIZED_AT: AtomicU64 = AtomicU64::new(u64::MAX);

/// From `cuptiProfilerInitialize`: the first call's time is where the first sample
/// of every sampling session claims to start.
pub fn profiler_initialized_at(now: u64) {
    PROFILER_INITIALIZED_AT.fetch_min(now, Ordering::AcqRel);
}

/// Set by the exit handler the first enable registers ([`register_exit_teardown`]).
static TORN_DOWN_AT_EXIT: AtomicBool = AtomicBool::new(false);
static EXIT_HANDLER: Once = Once::new();

/// At the first `cuptiPmSamplingEnable` of the process, registers an exit handler
/// that tears PM sampling down: a Stop or DecodeData after it ran crashes the process.
/// Modelled on an H200 with CUPTI 13.0.1, where a process exiting with its context
/// and sampler alive crashed in `cuptiPmSamplingStop` called from an exit handler
/// registered before the enable, and did not with one registered after it (which of
/// the driver, CUPTI or `libnvperf_host.so` registers the teardown, and when,
/// exactly: unchecked; the enable is the latest moment consistent with what was
/// seen: docs/ARCHITECTURE.md, "Seen on a GPU").
fn register_exit_teardown() {
    extern "C" fn teardown() {
        TORN_DOWN_AT_EXIT.store(true, Ordering::Release);
    }
    EXIT_HANDLER.call_once(|| {
        // SAFETY: registers a plain `extern "C"` function of this library, which
        // programs do not unload.
        unsafe { libc::atexit(teardown) };
    });
}

/// Aborts the process if PM sampling was torn down at exit: what `call` did there on
/// a real GPU.
fn crash_if_torn_down(call: &str) {
    if TORN_DOWN_AT_EXIT.load(Ordering::Acquire) {
        eprintln!(
            "sim-cupti: {call} after the exit handler registered at cuptiPmSamplingEnable \
             ran: the process crashes, as on a real GPU"
        );
        std::process::abort();
    }
}

/// Whether a PM sampling object is enabled on `device`.
pub fn any_on_device(device: u32) -> bool {
    SAMPLERS.lock().iter().any(|p| p.device == device)
}

/// The last context on `device` was destroyed: its enabled sampler is orphaned.
pub fn device_contexts_gone(device: u32) {
    for s in SAMPLERS.lock().iter_mut().filter(|s| s.device == device) {
        s.orphaned = true;
    }
}

/// Destroys the object (stopping it if sampling).
pub fn disable(handle: usize) -> Result<(), R> {
    let (p, all) = SAMPLERS.remove(handle)?;
    if p.running() {
        ACTIVE.fetch_sub(1, Ordering::AcqRel);
    }
    let last = all.is_empty();
    drop(all);
    if last {
        crate::activity::lose_undelivered();
    }
    Ok(())
}

/// From [`crate::profiling::on_kernel`]: records `k` for samplers on its device.
pub fn on_kernel(k: &Kernel) {
    let mut all = SAMPLERS.lock();
    for p in all.iter_mut().filter(|p| p.device == k.device_id) {
        if let Some(s) = p.session.as_mut().filter(|s| s.stop.is_none()) {
            s.kernels.push(k.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(start: u64, end: u64, v: f64) -> Kernel {
        Kernel {
            correlation_id: 0,
            device_id: 0,
            context_id: 1,
            start,
            end,
            counters: vec![
                ("x.sum".into(), v),
                ("y.pct_of_peak_sustained_active".into(), 40.0),
            ]
            .into(),
            graph: false,
        }
    }

    #[test]
    fn a_window_reads_its_near_kernels_as_it_read_every_kernel() {
        // Out of start order (two streams' kernels reported interleaved) and one long
        // kernel: each window's values are the full scan's, to the bit.
        let mut arrived = Vec::new();
        let mut held = HeldKernels::default();
        for i in 0..400u64 {
            let start = 1_000 + i * 37 - (i % 3) * 50;
            let end = start + if i == 123 { 9_000 } else { 20 + i % 45 };
            let k = kernel(start, end, (i * 7919 % 1_000) as f64 + 0.3);
            arrived.push(kernel(start, end, k.value("x.sum")));
            held.push(k);
        }
        let mut a = 0;
        while a < 20_000 {
            let b = a + 113;
            for m in ["x.sum", "y.pct_of_peak_sustained_active"] {
                let all = window_value(m, &arrived, a, b);
                let near = window_value(m, held.near(a, b), a, b);
                assert_eq!(all.to_bits(), near.to_bits(), "{m} over [{a}, {b})");
            }
            a = b;
        }
        let before = held.by_start.len();
        held.forget_before(5_000);
        assert!(held.by_start.iter().all(|(_, k)| k.end > 5_000));
        assert!(held.by_start.len() < before);
    }

    #[test]
    fn apportioning_is_exact() {
        let ks = vec![kernel(103, 1_110, 1_000_003.0), kernel(1_500, 2_001, 7.0)];
        let mut total = 0.0;
        let mut a = 100;
        while a < 2_100 {
            let v = window_value("x.sum", &ks, a, a + 70);
            assert_eq!(v.fract(), 0.0);
            total += v;
            a += 70;
        }
        assert_eq!(total, 1_000_010.0);
        assert_eq!(
            window_value("y.pct_of_peak_sustained_active", &ks, 1_000, 1_200),
            40.0
        );
        assert_eq!(
            window_value("y.pct_of_peak_sustained_active", &ks, 1_200, 1_300),
            0.0
        );
    }
}
