//! GPU-wide counter samples with CUPTI's PM sampling (`GPUPROF_COUNTERS=sampling`).
//!
//! **Start** (first context on a device): the chip's group 0 metrics
//! ([`cupti::metrics::default_groups`], or `GPUPROF_METRICS`) as one PM sampling
//! config image (Profiler Host API, `CUPTI_PROFILER_TYPE_PM_SAMPLING`, one pass),
//! `cuptiPmSamplingEnable` on the device, `SetConfig` (GPU time trigger every
//! `GPUPROF_SAMPLE_INTERVAL_US`, a 64 MiB hardware buffer), a counter data image
//! for [`MAX_SAMPLES`] samples, and `Start`. The plan goes out as a `CounterPlan`
//! with mode `sampling`.
//!
//! **Collection**: the thread `gpuprof-sampler` (internal, like the writer) every
//! [`PERIOD`], and the exit path once more after `Stop`, decode the hardware buffer
//! into the image (`DecodeData`), read each completed sample (`GetCounterDataInfo`,
//! `CounterDataGetSampleInfo` for its window, `cuptiProfilerHostEvaluateToGpuValues`)
//! into a `Record::CounterSample`, and re-initialise the image, until the buffer is
//! empty. Kernels get no `KernelCounters` in this mode.
//!
//! **Failure**: any CUPTI error gives one `gpuprof:` warning naming the call, a
//! `Record::CounterStatus`, sampling stopped (as far as CUPTI lets us) and counters
//! off for the rest of the run; tracing goes on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use cupti::Cupti;
use wire::{CounterPlan, CounterSample, CounterStatus, MetricValue, Record};

use crate::handoff;
use crate::log::{debug, warn};
use crate::options::Options;
use crate::profiler_api::{self as api, HostConfig, MetricNames, PmSampler};

/// Samples one counter data image holds.
const MAX_SAMPLES: u32 = 2048;
/// The hardware buffer CUPTI samples into between decodes.
const HW_BUFFER_BYTES: usize = 64 << 20;
/// How often the sampler thread decodes.
const PERIOD: Duration = Duration::from_millis(100);
/// Images decoded per device and pass of the thread (bounds one pass's work).
const MAX_ROUNDS: usize = 64;

struct Settings {
    metrics: Option<Vec<String>>,
    interval_us: u64,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();
/// Sampling is on (set by [`configure`], cleared for good by [`fail`] or [`finish`]).
static ON: AtomicBool = AtomicBool::new(false);

/// One device being sampled.
struct Device {
    device_id: u32,
    sampler: PmSampler,
    host: HostConfig,
    /// Interned metric names, in the host config's order.
    ids: Vec<u32>,
    image: Vec<u8>,
}

struct State {
    initialized: bool,
    thread: bool,
    /// Devices whose first context has been seen (sampled or not).
    seen: Vec<u32>,
    devices: Vec<Device>,
}

static STATE: Mutex<State> = Mutex::new(State {
    initialized: false,
    thread: false,
    seen: Vec::new(),
    devices: Vec::new(),
});

fn lock() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads the options at start-up (`GPUPROF_COUNTERS=sampling`).
pub fn configure(opts: &Options) {
    if SETTINGS
        .set(Settings {
            metrics: opts.metrics.clone(),
            interval_us: opts.sample_interval_us,
        })
        .is_ok()
    {
        ON.store(true, Ordering::Release);
    }
}

/// Turns sampling off for the rest of the run: one warning, one `CounterStatus`,
/// every device's sampling stopped and disabled (errors ignored).
fn fail(c: &Cupti, st: &mut State, message: String) {
    if ON.swap(false, Ordering::AcqRel) {
        warn!("hardware counters are off: {message}; tracing continues");
        handoff::send(Record::CounterStatus(CounterStatus { message }));
    }
    for d in st.devices.drain(..) {
        let _ = api::pm_stop(c, d.sampler);
        let _ = api::pm_disable(c, d.sampler);
    }
}

/// Context created: starts sampling on its device if this is the device's first
/// context.
pub fn on_context_created(c: &Cupti, device_id: u32) {
    if !ON.load(Ordering::Acquire) {
        return;
    }
    let mut st = lock();
    if st.seen.contains(&device_id) {
        return;
    }
    st.seen.push(device_id);
    if let Err(e) = add_device(c, &mut st, device_id) {
        fail(c, &mut st, e);
    }
}

fn add_device(c: &Cupti, st: &mut State, device_id: u32) -> Result<(), String> {
    let settings = SETTINGS.get().ok_or("sampling is not configured")?;
    if !st.initialized {
        api::profiler_initialize(c).map_err(|e| e.to_string())?;
        st.initialized = true;
    }
    let chip = api::chip_name(c, device_id).map_err(|e| e.to_string())?;
    let names: Vec<&str> = match &settings.metrics {
        Some(m) => m.iter().map(String::as_str).collect(),
        None => cupti::metrics::default_groups(&chip)
            .and_then(|g| g.first())
            .ok_or_else(|| {
                format!(
                    "gpuprof has no default metric set for chip {chip} (GPU {device_id}); \
                     set GPUPROF_METRICS to choose metrics"
                )
            })?
            .to_vec(),
    };
    let metrics = MetricNames::new(&names).ok_or("a metric name holds a NUL byte")?;
    let mut host = HostConfig::for_sampling(c, &chip, metrics).map_err(|e| match e.metric {
        Some(m) => format!("CUPTI does not accept metric {m} on {chip} ({})", e.error),
        None => e.error.to_string(),
    })?;
    let passes = host.passes(c).map_err(|e| e.to_string())?;
    if passes != 1 {
        return Err(format!(
            "the sampled metrics ({}) need {passes} passes on {chip}; \
             PM sampling takes one pass",
            names.join(", ")
        ));
    }
    let mut ids = Vec::with_capacity(names.len());
    for name in host.metrics.names() {
        // SAFETY: a NUL-terminated string we own.
        let id = unsafe { handoff::intern(name.as_ptr()) }
            .ok_or("the record channel is full; the plan could not be sent")?;
        ids.push(id);
    }
    let sampler = api::pm_enable(c, device_id).map_err(|e| e.to_string())?;
    let started = start(c, sampler, &host, settings.interval_us);
    let image = match started {
        Ok(image) => image,
        Err(e) => {
            let _ = api::pm_disable(c, sampler);
            return Err(e.to_string());
        }
    };
    handoff::send(Record::CounterPlan(CounterPlan {
        device_id,
        chip,
        mode: "sampling".to_string(),
        groups: vec![ids.clone()],
        policy: format!("every {} µs, GPU-wide", settings.interval_us),
    }));
    st.devices.push(Device {
        device_id,
        sampler,
        host,
        ids,
        image,
    });
    if !st.thread {
        std::thread::Builder::new()
            .name("gpuprof-sampler".into())
            .spawn(sampler_thread)
            .map_err(|e| format!("cannot start the sampler thread: {e}"))?;
        st.thread = true;
    }
    Ok(())
}

/// Image, `SetConfig` and `Start` of an enabled sampler; returns the image.
fn start(
    c: &Cupti,
    s: PmSampler,
    host: &HostConfig,
    interval_us: u64,
) -> Result<Vec<u8>, api::CallError> {
    let size = api::pm_counter_data_size(c, s, &host.metrics, MAX_SAMPLES)?;
    let mut image = vec![0u8; size];
    api::pm_counter_data_initialize(c, s, &mut image)?;
    api::pm_set_config(
        c,
        s,
        &host.config,
        interval_us.saturating_mul(1000),
        HW_BUFFER_BYTES,
    )?;
    api::pm_start(c, s)?;
    Ok(image)
}

fn sampler_thread() {
    crate::callbacks::mark_internal();
    loop {
        std::thread::sleep(PERIOD);
        if !ON.load(Ordering::Acquire) {
            return;
        }
        let Some(t) = crate::tracer::get() else {
            continue;
        };
        crate::entry::guarded("the sampler thread", (), || {
            let mut st = lock();
            // `finish` may have run while we waited for the lock.
            if !ON.load(Ordering::Acquire) {
                return;
            }
            if let Err(e) = drain_all(t.cupti, &mut st) {
                fail(t.cupti, &mut st, e);
            }
        });
    }
}

fn drain_all(c: &Cupti, st: &mut State) -> Result<(), String> {
    for d in &mut st.devices {
        drain(c, d).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Decodes what the hardware buffer holds, one image at a time, into
/// `CounterSample` records.
fn drain(c: &Cupti, d: &mut Device) -> Result<(), api::CallError> {
    let mut values = vec![0.0; d.ids.len()];
    for _ in 0..MAX_ROUNDS {
        api::pm_counter_data_initialize(c, d.sampler, &mut d.image)?;
        let more = api::pm_decode(c, d.sampler, &mut d.image)?;
        let n = api::pm_completed_samples(c, &d.image)?;
        for i in 0..n {
            let (start_ns, end_ns) = api::pm_sample_times(c, d.sampler, &d.image, i)?;
            d.host.evaluate(c, &d.image, i, &mut values)?;
            handoff::send(Record::CounterSample(CounterSample {
                device_id: d.device_id,
                start_ns,
                end_ns,
                metrics: d
                    .ids
                    .iter()
                    .zip(&values)
                    .map(|(&name, &value)| MetricValue { name, value })
                    .collect(),
            }));
        }
        if !more {
            return Ok(());
        }
    }
    debug!(
        "GPU {}: samples left in the hardware buffer after {MAX_ROUNDS} images",
        d.device_id
    );
    Ok(())
}

/// Process exit, before the final flush: stops sampling, sends the last samples and
/// disables PM sampling on every device.
pub fn finish(c: &Cupti) {
    let mut st = lock();
    if !ON.load(Ordering::Acquire) {
        return;
    }
    let r = (|| {
        for d in &mut st.devices {
            api::pm_stop(c, d.sampler).map_err(|e| e.to_string())?;
            drain(c, d).map_err(|e| e.to_string())?;
            api::pm_disable(c, d.sampler).map_err(|e| e.to_string())?;
        }
        Ok::<(), String>(())
    })();
    match r {
        Ok(()) => {
            st.devices.clear();
            ON.store(false, Ordering::Release);
        }
        Err(e) => fail(c, &mut st, e),
    }
}
