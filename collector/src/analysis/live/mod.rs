//! Live metrics of a session while it is recorded (`gpuprof record --serve`): the
//! records the collector drains are folded into the same aggregate `gpuprof report`
//! reads a session with ([`crate::analysis::aggregate`]), and each update turns it
//! into the values of every series ([`snapshot`]), written in the Prometheus text
//! format by [`exposition`] (the HTTP server is the binary's).
//!
//! Updates come once a second (the caller's clock). The aggregate's join window is
//! [`HOLD_UPDATES`] updates: a kernel is finalized (summed into its class) two
//! updates after it arrived, so its launch, GEMM and counter records have 2 to 3 s to
//! reach the collector (CUPTI's activity buffers are flushed every second, counters
//! are decoded within 250 ms of the launch). At the end ([`Live::finish`]) every
//! kernel is finalized, so the final values are those of `gpuprof report` for the
//! same session, as long as no counter record came later than its window (a session
//! of under 2^19 records is joined as a whole by the report).
//!
//! Kernel and NVTX range labels are capped ([`capped`]); GPUs are at most a
//! machine's; families are fixed: the number of series is bounded however long the
//! program runs.

pub mod capped;
pub mod dcgm;
pub mod device_fields;
pub mod short_name;
pub mod snapshot;

use std::collections::BTreeMap;

use wire::{CounterSample, Record};

use crate::analysis::aggregate::{Aggregate, Aggregator};
use crate::analysis::integrity::impossible;
use crate::analysis::rollup::Rollup;
use crate::analysis::roofline::efficiency::efficiency_of;
use crate::analysis::roofline::peaks::Overrides;
use capped::Capped;
use short_name::short_name;
use snapshot::{Gpu, KernelSeries, Snapshot, Totals};
use wire::DropSource;

/// Every GPU's DCGM fields (by UUID) at one update.
pub type GpuFields = BTreeMap<String, Vec<(&'static str, f64)>>;

/// Updates a kernel waits for its records before it is summed.
pub const HOLD_UPDATES: usize = 2;

/// A GPU's UUID as NVML and dcgm-exporter write it.
pub fn uuid_string(u: &[u8; 16]) -> String {
    let h: String = u.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The run's MFU, HFU and MBU numerators (seconds at peak) and the GPU time each
/// covers, at the previous update: the window values are their changes.
#[derive(Debug, Default, Clone, Copy)]
struct PrevRun {
    mfu: AtPeak,
    hfu: AtPeak,
    mbu: AtPeak,
}

/// A time-weighted utilization's numerator: seconds at peak, over `ns` of GPU time.
#[derive(Debug, Default, Clone, Copy)]
struct AtPeak {
    s: f64,
    ns: u64,
}

impl AtPeak {
    fn of(value: Option<f64>, ns: u64) -> AtPeak {
        AtPeak {
            s: value.unwrap_or(0.0) * ns as f64,
            ns,
        }
    }

    /// The utilization of what was added since `prev`; `None` over no new time.
    fn since(self, prev: AtPeak) -> Option<f64> {
        let d_ns = self.ns.saturating_sub(prev.ns);
        (d_ns > 0).then(|| ((self.s - prev.s) / d_ns as f64).max(0.0))
    }
}

/// The live aggregate and what the series need between updates.
pub struct Live {
    aggregator: Aggregator,
    overrides: Overrides,
    kernels: Capped,
    ranges: Capped,
    window: dcgm::Window,
    /// For the window's MFU and MBU.
    prev_run: PrevRun,
    /// PM sampling windows received since the previous update (pid, window).
    samples: Vec<(u32, CounterSample)>,
}

impl Live {
    /// `top`: kernel names (and NVTX range names) with series of their own; `overrides`:
    /// the peaks file, as for `gpuprof report`.
    pub fn new(top: usize, overrides: Overrides) -> Live {
        let mut aggregator = Aggregator::with_window(HOLD_UPDATES, 0);
        aggregator.bin_kernel_time(dcgm::BIN_NS);
        Live {
            aggregator,
            overrides,
            kernels: Capped::new(top),
            ranges: Capped::new(top),
            window: dcgm::Window::default(),
            prev_run: PrevRun::default(),
            samples: Vec::new(),
        }
    }

    /// Folds in records of process `pid`, in the order they were read.
    pub fn add(&mut self, pid: u32, records: Vec<Record>) {
        for r in &records {
            if let Record::CounterSample(s) = r {
                if impossible(r).is_none() {
                    self.samples.push((pid, s.clone()));
                }
            }
        }
        self.aggregator
            .add_records(records.into_iter().map(|r| (pid, r)));
    }

    /// One update at the host's `CLOCK_REALTIME` (the session's clock): see
    /// [`Live::update_at`].
    pub fn update(&mut self) -> Snapshot {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        self.update_at(now)
    }

    /// One update at `now_ns` of the session's clock: kernels that have waited long
    /// enough are summed, and the series computed (the DCGM fields over the time up to
    /// [`dcgm::LAG_NS`] before `now_ns`).
    pub fn update_at(&mut self, now_ns: u64) -> Snapshot {
        self.aggregator.end_part();
        self.snapshot(now_ns, false)
    }

    /// The final update: every kernel is summed, every DCGM bin published.
    pub fn finish(&mut self) -> Snapshot {
        self.aggregator.end_part();
        self.aggregator.flush();
        self.snapshot(u64::MAX, true)
    }

    /// The final update at `now_ns` of the session's clock: every kernel summed, the
    /// DCGM windows due by then published, and the rest in up to `steps` field sets
    /// of every GPU (by UUID) to show one update period apart ([`dcgm::Window::tail`]).
    pub fn finish_at(&mut self, now_ns: u64, steps: usize) -> (Snapshot, Vec<GpuFields>) {
        self.aggregator.end_part();
        self.aggregator.flush();
        let mut s = self.snapshot(now_ns, false);
        s.ended = true;
        (s, self.window.tail(steps))
    }

    fn snapshot(&mut self, now_ns: u64, ended: bool) -> Snapshot {
        let binned = self.aggregator.take_binned();
        let a = self.aggregator.so_far();
        let e = efficiency_of(a, &self.overrides);
        let mut out = Snapshot {
            ended,
            ..Snapshot::default()
        };

        // Kernels: rows by GPU time, longest first, so the longest get a label first.
        let mut kernels: BTreeMap<(String, String, String), Totals> = BTreeMap::new();
        for row in &e.kernels {
            let label = self.kernels.label(&short_name(&row.mangled));
            let t = Totals {
                launches: row.calls,
                gpu_ns: row.gpu_ns,
                model_flops: row.model_flops,
                hw_flops: row.hw_flops,
                dram_bytes: row.bytes,
            };
            kernels
                .entry((label, row.family.name().to_string(), row.gpu.clone()))
                .or_default()
                .add(&t);
        }
        out.kernels = kernels
            .into_iter()
            .map(|((kernel, family, model), totals)| KernelSeries {
                kernel,
                family,
                model,
                totals,
            })
            .collect();
        out.families = e
            .families
            .iter()
            .map(|r| (r.name.clone(), rollup_totals(r)))
            .collect();
        let mut ranges: BTreeMap<String, Totals> = BTreeMap::new();
        for r in &e.ranges {
            let label = self.ranges.label(&r.name);
            ranges.entry(label).or_default().add(&rollup_totals(r));
        }
        out.ranges = ranges.into_iter().collect();
        out.run = rollup_totals(&e.run);
        out.mfu = e.run.model.mfu;
        out.hfu = e.run.hw.mfu;
        out.mbu = e.run.mbu;
        // Σ(FLOPs / peak) and Σ(bytes / bandwidth), in seconds, over the time each covers.
        let now = PrevRun {
            mfu: AtPeak::of(e.run.model.mfu, e.run.model.mfu_ns),
            hfu: AtPeak::of(e.run.hw.mfu, e.run.hw.mfu_ns),
            mbu: AtPeak::of(e.run.mbu, e.run.mbu_ns),
        };
        let prev = std::mem::replace(&mut self.prev_run, now);
        out.window_mfu = now.mfu.since(prev.mfu);
        out.window_hfu = now.hfu.since(prev.hfu);
        out.window_mbu = now.mbu.since(prev.mbu);

        out.dropped = DropSource::ALL
            .into_iter()
            .map(|s| (s.name(), a.dropped[s.index()]))
            .collect();

        let uuid_of =
            |pid: u32, device: u32| a.devices.get(&(pid, device)).map(|d| uuid_string(&d.uuid));
        self.window.add_kernels(a, &binned, uuid_of);
        let samples = std::mem::take(&mut self.samples);
        self.window.add_samples(a, &samples, uuid_of);
        out.gpus = gpus(a, self.window.publish(now_ns, ended));
        out
    }
}

/// A rollup's sums.
fn rollup_totals(r: &Rollup) -> Totals {
    Totals {
        launches: r.launches,
        gpu_ns: r.gpu_ns,
        model_flops: r.model.flops,
        hw_flops: r.hw.flops,
        dram_bytes: (r.bytes_ns > 0).then_some(r.bytes),
    }
}

/// Every GPU of the session (by UUID) with its launches and its DCGM fields.
fn gpus(a: &Aggregate, mut fields: BTreeMap<String, Vec<(&'static str, f64)>>) -> Vec<Gpu> {
    let mut out: BTreeMap<String, Gpu> = BTreeMap::new();
    let mut keys: Vec<&(u32, u32)> = a.devices.keys().collect();
    keys.sort();
    for key in keys {
        let d = &a.devices[key];
        let uuid = uuid_string(&d.uuid);
        let hostname = a
            .processes
            .iter()
            .find(|p| p.pid == a.pid(key.0))
            .map(|p| p.host.clone())
            .unwrap_or_default();
        out.entry(uuid.clone()).or_insert_with(|| Gpu {
            gpu: d.id,
            fields: fields.remove(&uuid).unwrap_or_default(),
            uuid,
            model: d.name.trim().to_string(),
            pci_bus_id: String::new(),
            hostname,
            totals: Totals::default(),
        });
    }
    for c in &a.classes.list {
        let Some(d) = a.devices.get(&(c.key.pid, c.key.device_id)) else {
            continue;
        };
        if let Some(g) = out.get_mut(&uuid_string(&d.uuid)) {
            g.totals.launches += c.tally.calls;
            g.totals.gpu_ns = g.totals.gpu_ns.saturating_add(c.tally.ns);
        }
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests;
