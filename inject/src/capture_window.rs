//! The capture window (`GPUPROF_DELAY`, `GPUPROF_DURATION`, `GPUPROF_CAPTURE_RANGE`,
//! set by `gpuprof record --delay / --duration / --capture-range`): which API calls
//! are recorded.
//!
//! The decision is made once per API call, at its entry callback, on the calling
//! thread: the call is inside when the time window is open (from the delay after the
//! process started, for the duration) and the capture range is open (between a
//! `cuProfilerStart` that returned `CUDA_SUCCESS` and the next `cuProfilerStop`; or
//! while an NVTX range named NAME is open on the calling thread, push/pop, or on any
//! thread, start/end: `nvtx_ranges.rs`). A call inside has its correlation id marked
//! (`capture_window/correlations.rs`); its `Launch`, `Gemm` and counter records are
//! made as usual. A call outside makes none, is not measured by the counters, and
//! its kernel, copy and set activity records (which carry its correlation id) are
//! dropped when decoded. NVTX markers, devices, contexts, graph nodes, CUPTI's
//! overhead and PM sampling are recorded whatever the window.
//!
//! With a window set, the whole driver-API callback domain is enabled so that copies
//! and sets (`cuMemcpy*`, `cuMemset*`) are decided too; the callback of a call that
//! is not a launch does only the decision. At exit one `Capture` record says what
//! the window let through.

mod correlations;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use cupti_sys::CUpti_ApiCallbackSite::{CUPTI_API_ENTER, CUPTI_API_EXIT};
use cupti_sys::CUpti_CallbackData;
use cupti_sys::CUpti_driver_api_trace_cbid_enum as cbid;
use wire::capture::CaptureRange;
use wire::{Capture, Record};

use crate::handoff;
use crate::log::warn;
use crate::nvtx_ranges::{self, Watch};
use crate::options::Options;
use correlations::Marks;

struct Window {
    range: Option<CaptureRange>,
    delay_ns: u64,
    /// 0: until the end.
    duration_ns: u64,
    /// `CLOCK_BOOTTIME` ns when the time window opens and closes.
    opens_ns: u64,
    closes_ns: u64,
    marks: Marks,
}

static WINDOW: OnceLock<Window> = OnceLock::new();
/// Between a successful `cuProfilerStart` and the next `cuProfilerStop`.
static PROFILER_STARTED: AtomicBool = AtomicBool::new(false);
static WINDOWS: AtomicU64 = AtomicU64::new(0);
static LAUNCHES: AtomicU64 = AtomicU64::new(0);
static CAPTURED: AtomicU64 = AtomicU64::new(0);

/// Sets the window up from the options (nothing when none is set). Start-up only.
pub fn configure(opts: &Options) {
    if opts.capture_range.is_none() && opts.delay_ns == 0 && opts.duration_ns == 0 {
        return;
    }
    let Some(marks) = Marks::new() else {
        warn!("cannot allocate the capture window's table; recording everything");
        return;
    };
    let started = process_start_ns().unwrap_or_else(|| {
        warn!("cannot read this process's start time; the delay counts from now");
        boottime_ns()
    });
    let opens_ns = started.saturating_add(opts.delay_ns);
    let closes_ns = match opts.duration_ns {
        0 => u64::MAX,
        d => opens_ns.saturating_add(d),
    };
    if let Some(CaptureRange::Nvtx(name)) = &opts.capture_range {
        nvtx_ranges::configure(Watch::Capture, Some(name));
        nvtx_ranges::on_capture_opened(range_opened);
    }
    let _ = WINDOW.set(Window {
        range: opts.capture_range.clone(),
        delay_ns: opts.delay_ns,
        duration_ns: opts.duration_ns,
        opens_ns,
        closes_ns,
        marks,
    });
}

/// Whether a window is set (else every call is recorded and nothing here runs).
pub fn active() -> bool {
    WINDOW.get().is_some()
}

/// A driver-API callback, with a window set. Returns whether the call is inside
/// (at exit: whether it was, at its entry).
pub fn on_api(id: u32, d: &CUpti_CallbackData, launch: bool) -> bool {
    let Some(w) = WINDOW.get() else { return true };
    if d.callbackSite == CUPTI_API_ENTER {
        if id == cbid::CUPTI_DRIVER_TRACE_CBID_cuProfilerStop {
            PROFILER_STARTED.store(false, Ordering::Release);
        }
        let inside = w.inside(d);
        if launch {
            LAUNCHES.fetch_add(1, Ordering::Relaxed);
            if inside {
                CAPTURED.fetch_add(1, Ordering::Relaxed);
            }
        }
        inside
    } else {
        if d.callbackSite == CUPTI_API_EXIT
            && id == cbid::CUPTI_DRIVER_TRACE_CBID_cuProfilerStart
            && cupti::callback::returned_success(d)
            && !PROFILER_STARTED.swap(true, Ordering::AcqRel)
            && w.range == Some(CaptureRange::ProfilerApi)
            && w.time_open(boottime_ns())
        {
            WINDOWS.fetch_add(1, Ordering::Relaxed);
        }
        w.inside(d)
    }
}

/// A runtime API call's entry or exit: whether the call is inside the window (marked
/// at entry; the driver calls it makes share its correlation id). The runtime's
/// `cudaProfilerStart` / `Stop` open and close the window through the driver calls
/// they make.
pub fn on_runtime_api(d: &CUpti_CallbackData) -> bool {
    WINDOW.get().is_none_or(|w| w.inside(d))
}

/// Whether an activity record is kept: kernels, copies and sets only when their
/// call was inside the window.
pub fn keeps(r: &Record) -> bool {
    let Some(w) = WINDOW.get() else { return true };
    match r {
        Record::Kernel(k) => w.marks.has(k.correlation_id),
        Record::Memcpy(m) => w.marks.has(m.correlation_id),
        Record::Memset(m) => w.marks.has(m.correlation_id),
        _ => true,
    }
}

/// The `Capture` record, at exit.
pub fn finish() {
    let Some(w) = WINDOW.get() else { return };
    let windows = match w.range {
        Some(_) => WINDOWS.load(Ordering::Relaxed),
        None => u64::from(boottime_ns() >= w.opens_ns),
    };
    handoff::send(Record::Capture(Capture {
        range: w.range.as_ref().map(CaptureRange::spec).unwrap_or_default(),
        delay_ns: w.delay_ns,
        duration_ns: w.duration_ns,
        windows,
        launches: LAUNCHES.load(Ordering::Relaxed),
        captured_launches: CAPTURED.load(Ordering::Relaxed),
    }));
}

impl Window {
    /// Whether the time window is open at `now` (`CLOCK_BOOTTIME` ns).
    fn time_open(&self, now: u64) -> bool {
        (self.opens_ns..self.closes_ns).contains(&now)
    }

    fn open_now(&self) -> bool {
        if !self.time_open(boottime_ns()) {
            return false;
        }
        match &self.range {
            None => true,
            Some(CaptureRange::ProfilerApi) => PROFILER_STARTED.load(Ordering::Acquire),
            Some(CaptureRange::Nvtx(_)) => nvtx_ranges::admits(Watch::Capture),
        }
    }

    /// At an API call's entry, whether the window is open now (the call's correlation
    /// id marked when it is); at its exit, whether it was marked.
    fn inside(&self, d: &CUpti_CallbackData) -> bool {
        if d.callbackSite != CUPTI_API_ENTER {
            return self.marks.has(d.correlationId);
        }
        let inside = self.open_now();
        if inside {
            self.marks.mark(d.correlationId);
        }
        inside
    }
}

/// An NVTX range named NAME opened: a window when the time window is open.
fn range_opened() {
    if WINDOW.get().is_some_and(|w| w.time_open(boottime_ns())) {
        WINDOWS.fetch_add(1, Ordering::Relaxed);
    }
}

/// `CLOCK_BOOTTIME` now, ns (the clock `/proc/<pid>/stat` start times count in).
fn boottime_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is valid for writing; CLOCK_BOOTTIME exists on every Linux we run on.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut t) };
    (t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64)
}

/// When this process started, `CLOCK_BOOTTIME` ns (field 22 of `/proc/self/stat`, in
/// clock ticks).
fn process_start_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    start_ticks(&stat).and_then(|ticks| {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        (hz > 0).then(|| ticks.saturating_mul(1_000_000_000) / hz as u64)
    })
}

/// Field 22 (`starttime`) of a `/proc/<pid>/stat` line. The command (field 2) is in
/// parentheses and may hold spaces and parentheses itself: fields are counted from
/// the last `)`.
fn start_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ")" come fields 3, 4, ...: field 22 is the 20th.
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_field_22_after_the_command() {
        let line =
            "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(start_ticks(line), Some(987654));
        assert_eq!(start_ticks("12 (x) S 1"), None);
        assert_eq!(start_ticks("no parenthesis"), None);
    }

    #[test]
    fn this_process_started_before_now() {
        let start = process_start_ns().unwrap();
        let now = boottime_ns();
        assert!(
            start <= now && now - start < 3_600 * 1_000_000_000,
            "{start} {now}"
        );
    }
}
