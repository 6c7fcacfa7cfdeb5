//! The range profiler's state (`cupti_range_profiler.h`); exports in
//! `api_range_profiler`.
//!
//! One object per context (`cuptiRangeProfilerEnable`). Between Start and Stop every
//! kernel executed on that context is collected:
//! - `CUPTI_AutoRange`: each kernel is one range ("Ranges are auto defined around each
//!   kernel", cupti_profiler_target.h) whose values are the kernel's cost-model
//!   counters; its name is the numeric index of the kernel in execution order, the
//!   range's index in the counter data image ("for Auto range mode the range name will
//!   be numeric value assigned to the kernel based on execution order",
//!   cupti_profiler_host.h), so "0", "1", ...
//! - `CUPTI_UserRange`: kernels accumulate into the pushed range ("Counter data is
//!   collected per unique range-stack"): one range per distinct stack of names in a
//!   pass, for the nesting levels `minNestingLevel ..
//!   minNestingLevel + numNestingLevels` (all collected in the one pass, see
//!   [`crate::profiling`]); kernels outside any collected range are not profiled.
//!   Values combine per [`crate::profiling::Combine`].
//!
//! Ranges beyond `maxRangesPerPass` in a pass, and ranges that do not fit the counter
//! data image at `cuptiRangeProfilerDecodeData`, are dropped and counted in
//! `numOfRangeDropped` ("the counter data image will report dropped ranges").
//!
//! Kernels of a CUDA graph launch: with auto range and kernel replay each kernel
//! node is its own range, in execution order; "User replay and application replay
//! modes with auto range are not supported" for them (CUPTI release notes, known
//! issues of the range profiling API). What real CUPTI then does is not documented;
//! the sim is strict: a graph kernel collected by an auto-range user-replay pass
//! makes that pass's `cuptiRangeProfilerDecodeData` answer
//! `CUPTI_ERROR_NOT_SUPPORTED`. With user range the whole graph is one workload, as
//! documented: its kernels add to the open range like any other.
//!
//! A kernel belongs to the pass its launch call was made in, also when it runs later
//! (queued behind a `cuStreamWaitValue32` whose value is written after Stop): the
//! launch is remembered at the call's exit ([`on_launch_exit`]) and the kernel joins
//! the pass when it runs, with the range stack of its launch.
//!
//! How NVIDIA's CUPTI decodes: `cuptiRangeProfilerDecodeData` is documented as
//! "Decode the profiling data stored in the hardware to the counter data image passed
//! in the SetConfig API. This API should be called after cuptiRangeProfilerStop."
//! (cupti_range_profiler.h; Stop itself only reports `isAllPassSubmitted`, "1 if all
//! passes are submitted to GPU for collection"). Its predecessor in
//! cupti_profiler_target.h says what decoding takes: `cuptiProfilerFlushCounterData`
//! "Decode[s] all the submitted passes ... This will cause the CPU/GPU sync to collect
//! all the undecoded pass." The data is in the hardware once the pass's kernels have
//! run, so the sim's `cuptiRangeProfilerDecodeData` waits the same way: in real time,
//! until every kernel launched on the object's context between Start and Stop has
//! ended in simulated time ([`pass_end`]), also one that runs only after Stop. A kernel
//! that waits for work nobody issues (a `cuStreamWaitValue32` whose value the host
//! writes only after DecodeData returns) makes it wait forever, as on a GPU.

use std::sync::atomic::Ordering;

use cupti_sys::CUptiResult::{self, *};

use crate::counter_data::{Image, Record, Shape, KIND_RANGE, PATH_SEP};
use crate::profiling::{combine, Combine, Kernel, ACTIVE};
use crate::registry::{Handled, Registry};

type R = CUptiResult::Type;

/// Values of one range: its metrics combined over its kernels.
#[derive(Debug, Clone)]
pub struct Acc {
    sums: Vec<f64>,
    first: Vec<f64>,
    active_ns: f64,
    kernels: u64,
    pub start: u64,
    pub end: u64,
}

impl Acc {
    pub fn new(n: usize) -> Acc {
        Acc {
            sums: vec![0.0; n],
            first: vec![0.0; n],
            active_ns: 0.0,
            kernels: 0,
            start: 0,
            end: 0,
        }
    }

    /// Adds kernel `k` (values of `metrics`).
    pub fn add(&mut self, metrics: &[String], k: &Kernel) {
        let d = k.duration() as f64;
        for (i, m) in metrics.iter().enumerate() {
            let v = k.value(m);
            if self.kernels == 0 {
                self.first[i] = v;
            }
            let s = &mut self.sums[i];
            match combine(m) {
                Combine::Sum => *s += v,
                Combine::Max => *s = if self.kernels == 0 { v } else { s.max(v) },
                Combine::Min => *s = if self.kernels == 0 { v } else { s.min(v) },
                Combine::RatioActive | Combine::RatioElapsed => *s += v * d,
            }
        }
        if self.kernels == 0 {
            self.start = k.start;
        }
        self.start = self.start.min(k.start);
        self.end = self.end.max(k.end);
        self.active_ns += d;
        self.kernels += 1;
    }

    /// The range's values (a single kernel's own values, exactly).
    pub fn values(&self, metrics: &[String]) -> Vec<f64> {
        if self.kernels == 1 {
            return self.first.clone();
        }
        metrics
            .iter()
            .enumerate()
            .map(|(i, m)| match combine(m) {
                Combine::RatioActive | Combine::RatioElapsed if self.active_ns > 0.0 => {
                    self.sums[i] / self.active_ns
                }
                _ => self.sums[i],
            })
            .collect()
    }
}

#[derive(Debug)]
pub struct Config {
    pub metrics: Vec<String>,
    /// Passes of the config image (one per `ConfigAddMetrics` call).
    pub passes: usize,
    /// Kernel replay: CUPTI runs every pass inside the launch.
    pub kernel_replay: bool,
    pub image: usize,
    pub image_size: usize,
    pub auto: bool,
    pub max_per_pass: usize,
    pub min_level: usize,
    pub num_levels: usize,
}

struct Range {
    path: Vec<String>,
    acc: Acc,
}

pub struct Profiler {
    pub handle: usize,
    pub context_id: u32,
    /// The context's device.
    pub device: i32,
    /// The context's handle (`CUcontext`).
    pub ctx: usize,
    pub chip: String,
    pub shape: Option<Shape>,
    pub config: Option<Config>,
    started: bool,
    stack: Vec<String>,
    pending: Vec<Range>,
    /// Correlation ids of kernels collected in the current pass.
    collected: Vec<u32>,
    /// Launches made in the pass whose kernel has not run yet, with the range stack
    /// at the launch.
    awaiting: Vec<(u32, Vec<String>)>,
    /// The latest end of a kernel collected in the pass.
    last_end: u64,
    in_pass: usize,
    dropped: usize,
    /// A graph kernel was collected by an auto-range user-replay pass.
    unsupported: bool,
    /// The metrics of the first config set on the object: the counters it programs
    /// for good. Seen on H100 and H200 with CUPTI 13.0.1 (driver 580): after a pass
    /// under one config, a pass under another on the same object evaluated every
    /// metric of the other to NaN, while passes under the first stayed right; a new
    /// object (Disable, Enable) measured the other config (docs/ARCHITECTURE.md).
    /// Modelled strictly: a metric outside the first config reads NaN.
    programmed: Option<Vec<String>>,
}

static PROFILERS: Registry<Profiler> = Registry::new();

impl Handled for Profiler {
    fn handle(&self) -> usize {
        self.handle
    }
}

/// Launches awaited by stopped passes, over all objects: kernels are looked at while
/// any is (see [`crate::profiling::on_kernel`]).
pub static AWAITING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Runs `f` on the object `handle`, or answers `missing`.
pub fn with<T>(
    handle: usize,
    missing: R,
    f: impl FnOnce(&mut Profiler) -> Result<T, R>,
) -> Result<T, R> {
    PROFILERS.with(handle, missing, f)
}

/// A new object on context `context_id`; `CUPTI_ERROR_INVALID_OPERATION` if the
/// context already has one.
pub fn enable(context_id: u32, ctx: usize, device: i32, chip: String) -> Result<usize, R> {
    PROFILERS.add(
        |p| p.context_id == context_id,
        |handle| Profiler {
            handle,
            context_id,
            device,
            ctx,
            chip,
            shape: None,
            config: None,
            started: false,
            stack: Vec::new(),
            pending: Vec::new(),
            collected: Vec::new(),
            awaiting: Vec::new(),
            last_end: 0,
            in_pass: 0,
            dropped: 0,
            unsupported: false,
            programmed: None,
        },
    )
}

/// Whether a range profiler object is enabled on a context of `device`.
pub fn any_on_device(device: i32) -> bool {
    PROFILERS.lock().iter().any(|p| p.device == device)
}

/// Destroys the object (stopping it if started).
pub fn disable(handle: usize) -> Result<(), R> {
    let (p, _all) = PROFILERS.remove(handle)?;
    if p.started {
        ACTIVE.fetch_sub(1, Ordering::AcqRel);
    }
    AWAITING.fetch_sub(p.awaiting.len(), Ordering::AcqRel);
    Ok(())
}

impl Profiler {
    /// `cuptiRangeProfilerSetConfig`: not while started.
    pub fn set_config(&mut self, c: Config) -> Result<(), R> {
        if self.started {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        }
        if self.programmed.is_none() {
            self.programmed = Some(c.metrics.clone());
        }
        self.config = Some(c);
        self.pending.clear();
        self.stack.clear();
        self.dropped = 0;
        self.unsupported = false;
        Ok(())
    }

    pub fn start(&mut self) -> Result<(), R> {
        if self.config.is_none() || self.started {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        }
        self.started = true;
        self.in_pass = 0;
        self.stack.clear();
        self.collected.clear();
        AWAITING.fetch_sub(self.awaiting.len(), Ordering::AcqRel);
        self.awaiting.clear();
        self.last_end = 0;
        ACTIVE.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Returns (passIndex, targetNestingLevel, isAllPassSubmitted). Kernel replay
    /// submits every pass inside the launch; user replay of a config of several
    /// passes has submitted only the first (the sim runs one pass per Start/Stop
    /// and never replays, so such a client is told the passes are not all done).
    pub fn stop(&mut self) -> Result<(usize, usize, bool), R> {
        if !self.started {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        }
        self.started = false;
        self.stack.clear();
        ACTIVE.fetch_sub(1, Ordering::AcqRel);
        let level = self.config.as_ref().map_or(1, |c| c.min_level);
        let all = self
            .config
            .as_ref()
            .is_none_or(|c| c.kernel_replay || c.passes <= 1);
        Ok((1, level, all))
    }

    pub fn push(&mut self, name: String) -> Result<(), R> {
        let Some(c) = &self.config else {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        };
        if !self.started || c.auto {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        }
        self.stack.push(name);
        let depth = self.stack.len();
        if depth >= c.min_level && depth < c.min_level + c.num_levels {
            let path = self.stack.clone();
            self.range_index(&path);
        }
        Ok(())
    }

    pub fn pop(&mut self) -> Result<(), R> {
        let auto = self.config.as_ref().is_none_or(|c| c.auto);
        if !self.started || auto || self.stack.pop().is_none() {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        }
        Ok(())
    }

    /// The pending range with `path`, created if new and the pass has room.
    fn range_index(&mut self, path: &[String]) -> Option<usize> {
        if let Some(i) = self.pending.iter().position(|r| r.path == path) {
            return Some(i);
        }
        let c = self.config.as_ref()?;
        if self.in_pass >= c.max_per_pass {
            self.dropped += 1;
            return None;
        }
        self.in_pass += 1;
        self.pending.push(Range {
            path: path.to_vec(),
            acc: Acc::new(c.metrics.len()),
        });
        Some(self.pending.len() - 1)
    }

    fn kernel(&mut self, k: &Kernel) {
        let Some(c) = &self.config else { return };
        let (auto, min, num) = (c.auto, c.min_level, c.num_levels);
        if auto && k.graph && !c.kernel_replay {
            self.unsupported = true;
            return;
        }
        if auto {
            if let Some(i) = self.range_index_new() {
                let metrics = &self.config.as_ref().expect("config").metrics;
                self.pending[i].acc.add(metrics, k);
            }
            return;
        }
        let top = self.stack.len().min(min + num - 1);
        for depth in min..=top {
            let path = self.stack[..depth].to_vec();
            if let Some(i) = self.range_index(&path) {
                let metrics = &self.config.as_ref().expect("config").metrics;
                self.pending[i].acc.add(metrics, k);
            }
        }
    }

    /// A new auto range (every kernel is its own range).
    fn range_index_new(&mut self) -> Option<usize> {
        let c = self.config.as_ref()?;
        if self.in_pass >= c.max_per_pass {
            self.dropped += 1;
            return None;
        }
        self.in_pass += 1;
        self.pending.push(Range {
            path: Vec::new(),
            acc: Acc::new(c.metrics.len()),
        });
        Some(self.pending.len() - 1)
    }

    /// `cuptiRangeProfilerDecodeData`: writes the pending ranges into the counter data
    /// image given at SetConfig; returns the number dropped.
    pub fn decode(&mut self) -> Result<usize, R> {
        if self.started {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        }
        if std::mem::take(&mut self.unsupported) {
            self.pending.clear();
            return Err(CUPTI_ERROR_NOT_SUPPORTED);
        }
        let Some(c) = &self.config else {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        };
        // SAFETY: the client keeps the image it gave SetConfig valid until decoded
        // (the API's contract: "The counter data image will be updated").
        let buf = unsafe { std::slice::from_raw_parts_mut(c.image as *mut u8, c.image_size) };
        let mut img = Image::parse(buf)
            .filter(|i| i.shape.kind == KIND_RANGE)
            .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
        let mut dropped = std::mem::take(&mut self.dropped);
        for r in self.pending.drain(..) {
            let vals = r.acc.values(&c.metrics);
            let values = img
                .shape
                .metrics
                .iter()
                .map(|m| {
                    let programmed = self
                        .programmed
                        .as_ref()
                        .is_some_and(|p| p.iter().any(|x| x == m));
                    c.metrics
                        .iter()
                        .position(|x| x == m)
                        .filter(|_| programmed)
                        .map_or(f64::NAN, |i| vals[i])
                })
                .collect();
            let name = if c.auto {
                img.filled.to_string()
            } else {
                r.path.join(&PATH_SEP.to_string())
            };
            let rec = Record {
                start: r.acc.start,
                end: r.acc.end,
                values,
                name,
            };
            if !img.push(buf, &rec) {
                dropped += 1;
            }
        }
        Ok(dropped)
    }
}

/// From [`crate::profiling::on_kernel`]: collects `k` into started objects on its context.
pub fn on_kernel(k: &Kernel) {
    let mut all = PROFILERS.lock();
    for p in all.iter_mut().filter(|p| p.context_id == k.context_id) {
        if p.started {
            p.kernel(k);
            p.collected.push(k.correlation_id);
            p.last_end = p.last_end.max(k.end);
        } else if let Some(i) = p.awaiting.iter().position(|(c, _)| *c == k.correlation_id) {
            // Launched in the pass, run after it was stopped: with its launch's stack.
            let (_, stack) = p.awaiting.remove(i);
            AWAITING.fetch_sub(1, Ordering::AcqRel);
            let now = std::mem::replace(&mut p.stack, stack);
            p.kernel(k);
            p.stack = now;
            p.last_end = p.last_end.max(k.end);
        }
    }
}

/// A kernel launch call on context `context_id` returns (before the client's exit
/// callbacks): a kernel it launched into a started pass that has not run yet is
/// awaited by that pass.
pub fn on_launch_exit(context_id: u32, correlation_id: u32) {
    let mut all = PROFILERS.lock();
    for p in all
        .iter_mut()
        .filter(|p| p.started && p.context_id == context_id)
    {
        if !p.collected.contains(&correlation_id) {
            let stack = p.stack.clone();
            p.awaiting.push((correlation_id, stack));
            AWAITING.fetch_add(1, Ordering::AcqRel);
        }
    }
}

/// When the stopped pass of object `handle` is over: `None` while a kernel launched
/// in it has not run, else the simulated end of its last kernel.
pub fn pass_end(handle: usize) -> Result<Option<u64>, R> {
    PROFILERS.with(handle, CUPTI_ERROR_INVALID_PARAMETER, |p| {
        Ok(p.awaiting.is_empty().then_some(p.last_end))
    })
}
