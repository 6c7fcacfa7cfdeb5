//! GPU-wide counter samples with CUPTI's PM sampling (`GPUPROF_COUNTERS=sampling`).
//!
//! **Start** (first context on a device): the chip's PM sampling set
//! ([`cupti::metrics::sampling_metrics`]: only metrics the Profiler Host API accepts
//! for PM sampling; or `GPUPROF_METRICS`) as one config image
//! ([`cupti::plan::plan`], `CUPTI_PROFILER_TYPE_PM_SAMPLING`, one pass),
//! `cuptiPmSamplingEnable` on the device, `SetConfig` (the trigger the chip supports,
//! [`Trigger::for_chip`]: GPU time, or SYSCLK cycles on GA100 and Turing, every
//! `GPUPROF_SAMPLE_INTERVAL_US`; a 64 MiB hardware buffer), a counter data image
//! for [`MAX_SAMPLES`] samples, and `Start`. The plan goes out as a `CounterPlan`
//! with mode `sampling`.
//!
//! **Collection**: the thread `gpuprof-sampler` (internal, like the writer) every
//! [`PERIOD`], and the exit path once more after `Stop` ([`stop`]), decode the
//! hardware buffer
//! into the image (`DecodeData`), read each completed sample (`GetCounterDataInfo`,
//! `CounterDataGetSampleInfo` for its window, `cuptiProfilerHostEvaluateToGpuValues`)
//! into a `Record::CounterSample`, and re-initialise the image, until the buffer is
//! empty. Kernels get no `KernelCounters` in this mode. PM sampling is disabled only
//! after the exit path's final activity flush ([`disable`]): disabling the sampler
//! can finalize CUPTI and lose activity buffers not yet delivered.
//!
//! **Handed over** (`GPUPROF_COUNTERS=kernel`, the default): the per-kernel counters
//! give a device up to PM sampling at its first CUDA graph launch they do not measure
//! ([`switch_device`], after disabling every range profiler on it); from then on the
//! device is sampled as above, with the chip's sampling set, and the collector fits
//! the kernels without per-kernel counters to its windows.
//!
//! **Failure**: any CUPTI error gives one `gpuprof:` warning naming the call, a
//! `Record::CounterStatus`, sampling stopped (as far as CUPTI lets us) and counters
//! off for the rest of the run; tracing goes on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use cupti::plan::{self, Mode};
use cupti::pm_sampling::{self as pm, PmSampler, Trigger};
use cupti::profiler::{self as api, HostConfig};
use cupti::Cupti;
use wire::{CounterPlan, CounterSample, CounterStatus, MetricValue, Record};

use crate::handoff;
use crate::log::{debug, warn};
use crate::options::Options;

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
    /// Per-kernel counters run (`GPUPROF_COUNTERS=kernel`): a device is sampled only
    /// once [`switch_device`] hands it over, never at context creation.
    on_switch_only: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();
/// Sampling is on (set by [`configure`] or [`switch_device`], cleared for good by
/// [`fail`] or [`stop`]).
static ON: AtomicBool = AtomicBool::new(false);
/// Sampling was turned off for good ([`fail`], [`stop`]): a switch does not turn it on.
static OFF_FOR_GOOD: AtomicBool = AtomicBool::new(false);

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
    /// Devices handed over by [`switch_device`] (sampled again if they get a new
    /// context).
    switched: Vec<u32>,
    /// Devices whose first context has been seen (sampled or not).
    seen: Vec<u32>,
    devices: Vec<Device>,
    /// Enabled samplers that could not start, disabled with the others at exit.
    parked: Vec<PmSampler>,
}

static STATE: Mutex<State> = Mutex::new(State {
    initialized: false,
    thread: false,
    switched: Vec::new(),
    seen: Vec::new(),
    devices: Vec::new(),
    parked: Vec::new(),
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
            on_switch_only: false,
        })
        .is_ok()
    {
        ON.store(true, Ordering::Release);
    }
}

/// Reads the options for a per-kernel-counters run: no device is sampled until
/// [`switch_device`] hands one over, then with the chip's PM sampling set
/// (`GPUPROF_METRICS` names per-kernel metrics there, which PM sampling may refuse).
pub fn prepare(opts: &Options) {
    let _ = SETTINGS.set(Settings {
        metrics: None,
        interval_us: opts.sample_interval_us,
        on_switch_only: true,
    });
}

/// Whether `device_id` was handed over to PM sampling ([`switch_device`]).
pub fn switched(device_id: u32) -> bool {
    lock().switched.contains(&device_id)
}

/// Samples `device_id` from now on: the per-kernel counters gave it up (every range
/// profiler on it disabled) because its CUDA graph launches cannot be measured per
/// kernel. Needs [`prepare`]; does nothing once sampling was turned off for good.
pub fn switch_device(c: &'static Cupti, device_id: u32) {
    if !SETTINGS.get().is_some_and(|s| s.on_switch_only) || OFF_FOR_GOOD.load(Ordering::Acquire) {
        return;
    }
    let mut st = lock();
    // `stop` may have run while we waited for the lock.
    if st.switched.contains(&device_id) || OFF_FOR_GOOD.load(Ordering::Acquire) {
        return;
    }
    st.switched.push(device_id);
    ON.store(true, Ordering::Release);
    st.seen.push(device_id);
    if let Err(e) = add_device(c, &mut st, device_id) {
        fail(&mut st, e);
    }
}

/// Turns sampling off for the rest of the run: one warning, one `CounterStatus`,
/// every device's sampling stopped (errors ignored). The samplers stay enabled until
/// [`disable`] at exit, after the final activity flush: disabling can finalize CUPTI
/// and lose activity buffers not yet delivered.
fn fail(st: &mut State, message: String) {
    OFF_FOR_GOOD.store(true, Ordering::Release);
    if ON.swap(false, Ordering::AcqRel) {
        // The explanation of a busy answer already says what goes on.
        let tail = if message.ends_with(cupti::HARDWARE_BUSY_EXPLAINED) {
            ""
        } else {
            "; tracing continues"
        };
        warn!("hardware counters are off: {message}{tail}");
        handoff::send(Record::CounterStatus(CounterStatus { message }));
    }
    for d in &st.devices {
        let _ = d.sampler.stop();
    }
}

/// Context created: starts sampling on its device if this is the device's first
/// context.
pub fn on_context_created(c: &'static Cupti, device_id: u32) {
    if !ON.load(Ordering::Acquire) {
        return;
    }
    let mut st = lock();
    if st.seen.contains(&device_id) {
        return;
    }
    // A per-kernel-counters run samples only the devices it handed over.
    let handed_over = st.switched.contains(&device_id);
    if SETTINGS.get().is_some_and(|s| s.on_switch_only) && !handed_over {
        return;
    }
    st.seen.push(device_id);
    if let Err(e) = add_device(c, &mut st, device_id) {
        fail(&mut st, e);
    }
}

fn add_device(c: &'static Cupti, st: &mut State, device_id: u32) -> Result<(), String> {
    let settings = SETTINGS.get().ok_or("sampling is not configured")?;
    let fns = c.fns();
    if !st.initialized {
        cupti::preload_perf_libraries(c.path());
        api::profiler_initialize(fns).map_err(|e| e.to_string())?;
        st.initialized = true;
    }
    let chip = api::chip_name(fns, device_id).map_err(|e| e.to_string())?;
    let mut planned = plan::plan(fns, &chip, Mode::Sampling, settings.metrics.as_deref())
        .map_err(|e| e.describe(&format!("{chip} (GPU {device_id})")))?;
    let host = planned.groups.remove(0);
    let mut ids = Vec::with_capacity(host.metrics().len());
    for name in host.metrics().names() {
        // SAFETY: a NUL-terminated string we own.
        let id = unsafe { handoff::intern(name.as_ptr()) }
            .ok_or("the record channel is full; the plan could not be sent")?;
        ids.push(id);
    }
    let trigger = Trigger::for_chip(&chip);
    let sampler = PmSampler::enable(fns, device_id).map_err(|e| e.to_string())?;
    // Our exit handler must stop the sampler before what the enable set up for exit.
    crate::exit_order::run_first();
    let image = match start(&sampler, &host, trigger, settings.interval_us) {
        Ok(image) => image,
        Err(e) => {
            // Disabled at exit, after the final flush (see `disable`).
            st.parked.push(sampler);
            return Err(e.to_string());
        }
    };
    handoff::send(Record::CounterPlan(Box::new(CounterPlan {
        device_id,
        chip,
        mode: wire::CounterMode::Sampling.name().to_string(),
        groups: vec![ids.clone()],
        policy: format!(
            "every {} µs ({} trigger), GPU-wide{}",
            settings.interval_us,
            trigger.describe(),
            refused_note(&planned.refused)
        ),
    })));
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

/// The default metrics this CUPTI refused for PM sampling, for the plan's text.
fn refused_note(refused: &[String]) -> String {
    if refused.is_empty() {
        String::new()
    } else {
        format!(
            "; not accepted for PM sampling by this CUPTI: {}",
            refused.join(", ")
        )
    }
}

/// Image, `SetConfig` and `Start` of an enabled sampler; returns the image.
fn start(
    s: &PmSampler,
    host: &HostConfig,
    trigger: Trigger,
    interval_us: u64,
) -> Result<Vec<u8>, api::CallError> {
    let size = s.counter_data_size(host.metrics(), MAX_SAMPLES)?;
    let mut image = vec![0u8; size];
    s.initialize_image(&mut image)?;
    s.set_config(
        host.config(),
        trigger,
        interval_us.saturating_mul(1000),
        HW_BUFFER_BYTES,
    )?;
    s.start()?;
    Ok(image)
}

fn sampler_thread() {
    crate::guard::mark_internal();
    loop {
        std::thread::sleep(PERIOD);
        if !ON.load(Ordering::Acquire) {
            return;
        }
        crate::guard::guarded("the sampler thread", (), || {
            let mut st = lock();
            // `stop` may have run while we waited for the lock.
            if !ON.load(Ordering::Acquire) {
                return;
            }
            if let Err(e) = drain_all(&mut st) {
                fail(&mut st, e);
            }
        });
    }
}

fn drain_all(st: &mut State) -> Result<(), String> {
    for d in &mut st.devices {
        drain(d).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Decodes what the hardware buffer holds, one image at a time, into
/// `CounterSample` records.
fn drain(d: &mut Device) -> Result<(), api::CallError> {
    let mut values = vec![0.0; d.ids.len()];
    let fns = d.sampler.fns();
    for _ in 0..MAX_ROUNDS {
        d.sampler.initialize_image(&mut d.image)?;
        let more = d.sampler.decode(&mut d.image)?;
        let n = pm::completed_samples(fns, &d.image)?;
        for i in 0..n {
            let (start_ns, end_ns) = d.sampler.sample_times(&d.image, i)?;
            d.host.evaluate(&d.image, i, &mut values)?;
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

/// Process exit, before the final activity flush: stops sampling and sends the last
/// samples. Sampling stays enabled until [`disable`].
pub fn stop() {
    OFF_FOR_GOOD.store(true, Ordering::Release);
    let mut st = lock();
    if !ON.load(Ordering::Acquire) {
        return;
    }
    let r = (|| {
        for d in &mut st.devices {
            d.sampler.stop().map_err(|e| e.to_string())?;
            drain(d).map_err(|e| e.to_string())?;
        }
        Ok::<(), String>(())
    })();
    match r {
        Ok(()) => ON.store(false, Ordering::Release),
        Err(e) => fail(&mut st, e),
    }
}

/// A context of `device_id` is being destroyed: while it still exists, stops the
/// device's sampling, sends its last samples, runs `flush` (disabling can finalize
/// CUPTI and lose activity buffers not yet delivered) and disables the sampler. A
/// sampler left enabled past its context crashed the process at exit on a real GPU
/// (docs/ARCHITECTURE.md). Sampling resumes if the device gets a new context; another
/// context already on the device goes unsampled from here on.
pub fn on_context_destroying(device_id: u32, flush: impl FnOnce()) {
    let mut st = lock();
    let Some(i) = st.devices.iter().position(|d| d.device_id == device_id) else {
        return;
    };
    let mut d = st.devices.remove(i);
    if ON.load(Ordering::Acquire) {
        let last = d.sampler.stop().and_then(|()| drain(&mut d));
        if let Err(e) = last {
            debug!("GPU {device_id}: the last PM samples before its context went: {e}");
        }
    }
    flush();
    drop(d);
    st.seen.retain(|&x| x != device_id);
}

/// Process exit, after the final activity flush: disables PM sampling on every
/// device (dropping each sampler).
pub fn disable() {
    let mut st = lock();
    st.devices.clear();
    st.parked.clear();
}
