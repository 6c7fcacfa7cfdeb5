//! How well each kernel uses its GPU: FLOPs, DRAM bytes, arithmetic intensity,
//! achieved FLOP/s, MFU, MBU and its place on the roofline ([`crate::analysis::roofline`]), per
//! kernel and rolled up by GEMM shape, kernel family, NVTX range and for the run.
//!
//! **Rows.** One row per kernel name (as recorded; shown demangled) and GPU model (the
//! CUDA device name, whose peaks apply). Launches on devices without a `Device` record
//! form rows of their own GPU label and have no peaks.
//!
//! **FLOPs.** Two kinds, reported side by side and never added together:
//! - *model* FLOPs, from GEMM shapes ([`crate::analysis::gemm`]): 2·M·N·K·batch per call,
//!   credited to the call's first launch;
//! - *hardware* FLOPs, from counters: the sum of every `sm__ops_path_tensor_*.sum`
//!   metric (tensor-pipe operations, already 2 per multiply-add; the default metric
//!   sets hold disjoint parts) plus the FP instruction counts as Nsight Compute's
//!   roofline weighs them: 2 × `ffma` + `fadd` + `fmul` (FP32), 2 × `dfma` + `dadd` +
//!   `dmul` (FP64), 2 × `hfma` + `hadd` + `hmul` (FP16), 4 × `ffma2` + 2 × `fadd2` +
//!   2 × `fmul2` (Blackwell's paired FP32), each `smsp__sass_thread_inst_executed_op_
//!   *_pred_on.sum`. Counter groups rotate over launches, so each metric's mean over
//!   the launches that measured it is scaled to all launches of the same launch
//!   configuration (grid, block): those run the same work. A row has hardware FLOPs
//!   only when, for every launch configuration it ran with, every FLOP counter of the
//!   plan was measured at least once; otherwise they would be a partial sum.
//!
//! The FLOPs used for AI, achieved FLOP/s and MFU are the model FLOPs when every launch
//! of the row has a GEMM shape, else the hardware FLOPs; [`KernelRow::flops_source`]
//! says which. The precision whose peak applies is the shapes' ([`crate::analysis::precision`])
//! for model FLOPs, else the precision and pipe of the counter with the most FLOPs.
//!
//! **Bytes.** DRAM bytes = `dram__bytes_read.sum + dram__bytes_write.sum`. A launch
//! without them is given the mean of the launches of the same kernel name, GPU, launch
//! configuration and GEMM shape that measured them; a row has bytes only when every
//! launch has them, own or so given. [`KernelRow::bytes_launches`] says how many
//! launches measured them. Under PM sampling no launch measures them: a class whose
//! group measured none is given the rates fitted to the sampling windows
//! ([`crate::analysis::deconvolve`]), `(rate_read + rate_write) × its mean duration` per launch,
//! when both are determined (a metric the sampling set lacks counts as 0, as a launch
//! lacking it does), and rows, shapes and rollups say so
//! ([`KernelRow::bytes_source`]: measured, sampled or mixed). FLOPs stay model FLOPs
//! from GEMM shapes: PM sampling has no FLOP counters.
//!
//! **Rollups** ([`Rollup`]) by family, NVTX range and for the run: see [`crate::analysis::rollup`].
//!
//! GEMM shape rollups ([`ShapeRow`]) are per (shape, GPU): all launches of the calls
//! (split-K reductions included) and the calls' model FLOPs, on the shape's roofline.
//!
//! Whatever cannot be computed is `None`, and [`Efficiency::missing`] says what is
//! missing for which kernel.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use wire::Record;

pub use super::dram_bytes::fitted_bytes_per_ns;
use super::dram_bytes::{undetermined_bytes, ClassBytes, RowBytes};
use super::hw_flops::{ConfigCounters, ConfigFlops, RowHwFlops};
use super::peaks::{peaks_for, Overrides, Peaks};
use super::verdict::{shape_verdicts, Verdict};
use crate::analysis::aggregate::{aggregate, Aggregate};
use crate::analysis::classes::Class;
use crate::analysis::family::{classify, Family};
use crate::analysis::gemm::GemmShape;
use crate::analysis::names::demangle;
use crate::analysis::precision::Math;
use crate::analysis::rollup::{by_session, rollups};
pub use crate::analysis::rollup::{BytesSource, FlopSource};
pub use crate::analysis::rollup::{ClassValues, FlopTotals, LaunchFlops};
use crate::analysis::roofline::{evaluate, Inputs, Point};

pub use crate::analysis::rollup::Rollup;

/// The peaks of one GPU model, or why there are none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuPeaks {
    /// The CUDA device name (or a label for devices without a `Device` record).
    pub gpu: String,
    pub peaks: Option<Peaks>,
    /// Why `peaks` is `None`.
    pub error: Option<String>,
    /// The (pid, device id) pairs of this GPU model.
    pub devices: Vec<(u32, u32)>,
}

/// One kernel name on one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRow {
    /// Demangled.
    pub name: String,
    /// As recorded.
    pub mangled: String,
    pub gpu: String,
    pub family: Family,
    /// Launches.
    pub calls: u64,
    /// Sum of the launches' durations.
    pub gpu_ns: u64,
    /// Launches with a GEMM shape, and of those the ones that are not a call's first
    /// launch (they carry no FLOPs).
    pub gemm_launches: u64,
    pub gemm_part_launches: u64,
    /// Model FLOPs of the launches with a shape; `None` without any.
    pub model_flops: Option<f64>,
    /// Hardware FLOPs, scaled to all launches; `None` without FLOP counters.
    pub hw_flops: Option<f64>,
    /// The fewest launches any FLOP counter came from.
    pub hw_flops_launches: u64,
    /// Which FLOPs AI, achieved FLOP/s and MFU use; `None` when neither applies.
    pub flops_source: Option<FlopSource>,
    /// The precision and pipe whose peak applies.
    pub math: Option<Math>,
    /// The precision and pipe of the counter with the most hardware FLOPs (whose peak
    /// the rollups' HFU uses); `None` without hardware FLOPs.
    pub hw_math: Option<Math>,
    /// DRAM bytes, scaled to all launches.
    pub bytes: Option<f64>,
    /// Launches that measured DRAM bytes.
    pub bytes_launches: u64,
    /// Where `bytes` come from; `None` without bytes.
    pub bytes_source: Option<BytesSource>,
    /// Peak FLOP/s for `math` and DRAM bandwidth of the GPU.
    pub peak_flops: Option<f64>,
    pub bandwidth: Option<f64>,
    pub point: Point,
}

impl KernelRow {
    /// The FLOPs AI and MFU use.
    pub fn flops(&self) -> Option<f64> {
        match self.flops_source? {
            FlopSource::Model => self.model_flops,
            FlopSource::Hardware => self.hw_flops,
        }
    }
}

/// One GEMM shape on one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShapeRow {
    pub shape: GemmShape,
    /// See [`GemmShape::label`].
    pub label: String,
    pub gpu: String,
    /// GEMM calls (first launches), and all their launches.
    pub calls: u64,
    pub launches: u64,
    pub gpu_ns: u64,
    pub model_flops: f64,
    pub bytes: Option<f64>,
    pub bytes_launches: u64,
    /// Where `bytes` come from; `None` without bytes.
    pub bytes_source: Option<BytesSource>,
    pub math: Option<Math>,
    pub peak_flops: Option<f64>,
    pub bandwidth: Option<f64>,
    pub point: Point,
    /// The kernel names (demangled) that ran this shape.
    pub kernels: Vec<String>,
    /// Why it is where it is on the roofline ([`super::verdict`]).
    pub verdicts: Vec<Verdict>,
}

/// Something a row could not compute, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// Demangled kernel name, or "GEMM " and the shape's label for a shape row.
    pub kernel: String,
    pub gpu: String,
    pub what: String,
}

/// Everything the report's roofline sections show.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Efficiency {
    /// One entry per GPU model, in order of first appearance.
    pub gpus: Vec<GpuPeaks>,
    /// By GPU time, longest first (ties: name, GPU).
    pub kernels: Vec<KernelRow>,
    /// By GPU time, longest first.
    pub shapes: Vec<ShapeRow>,
    /// In [`Family::ALL`] order, families with launches only.
    pub families: Vec<Rollup>,
    /// By GPU time, longest first (ties: name).
    pub ranges: Vec<Rollup>,
    pub run: Rollup,
    /// The run of each session, when several are read together, in their order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<Rollup>,
    /// Kernel rows' in row order, then shape rows' in shape order.
    pub missing: Vec<Missing>,
    /// `GemmStatus` messages (pid, message).
    pub gemm_statuses: Vec<(u32, String)>,
    /// `Gemm` records joined to no kernel.
    pub gemm_unjoined: u64,
    /// What each launch of each class of the aggregate contributes, in class order
    /// (not in the report: its rows and rollups are made from these).
    #[serde(skip)]
    pub classes: Vec<ClassValues>,
}

impl Efficiency {
    /// Whether the session has what a roofline needs FLOPs from: GEMM records (or a
    /// status saying why there are none) or FLOP counters. Without, the report has no
    /// roofline sections.
    pub fn any(&self) -> bool {
        !self.gemm_statuses.is_empty()
            || self.gemm_unjoined > 0
            || self
                .kernels
                .iter()
                .any(|k| k.gemm_launches > 0 || k.hw_flops.is_some())
    }

    /// The peaks of GPU model `gpu`.
    pub fn peaks(&self, gpu: &str) -> Option<&Peaks> {
        peaks_of(&self.gpus, gpu)
    }
}

/// The peaks of GPU model `gpu` among `gpus`.
fn peaks_of<'g>(gpus: &'g [GpuPeaks], gpu: &str) -> Option<&'g Peaks> {
    gpus.iter()
        .find(|g| g.gpu == gpu)
        .and_then(|g| g.peaks.as_ref())
}

/// The roofline analysis of `records`, read as one part. `overrides` is the user's
/// peaks file (or empty).
pub fn efficiency(records: &[(u32, Record)], overrides: &Overrides) -> Efficiency {
    efficiency_of(&aggregate(records), overrides)
}

/// The roofline analysis of a session's aggregate. `overrides` is the user's peaks
/// file (or empty).
pub fn efficiency_of(a: &Aggregate, overrides: &Overrides) -> Efficiency {
    let mut gpus: Vec<GpuPeaks> = Vec::new();
    let grouping = RowGrouping::of(a, overrides, &mut gpus);
    let bytes = ClassBytes::of(a, &grouping.class_row);
    let config_flops = ConfigFlops::of(a, &grouping.counters, |row| &grouping.accs[row].pids);
    let row_bytes = bytes.per_row(&a.classes.list, &grouping.class_row, grouping.accs.len());
    let (rows, row_missing): (Vec<KernelRow>, Vec<Vec<String>>) = (0..grouping.accs.len())
        .map(|row| kernel_row(&grouping, row, &gpus, &row_bytes[row], &config_flops))
        .unzip();
    let values = class_values(&grouping, &rows, &bytes, &config_flops, &gpus);
    let shapes = shape_rows(&grouping, &rows, &bytes, &gpus);
    let shape_missing = shape_missing(&shapes, &gpus);
    let rolled = rollups(a, &values);
    let ranks = by_session(a, &values);
    let (kernels, mut missing) = by_gpu_time(rows, &row_missing);
    missing.extend(shape_missing);
    Efficiency {
        gpus,
        kernels,
        shapes,
        families: rolled.families,
        ranges: rolled.ranges,
        run: rolled.run,
        ranks,
        missing,
        gemm_statuses: a.gemm_statuses.clone(),
        gemm_unjoined: a.gemm_unjoined,
        classes: values,
    }
}

/// The index in `gpus` of the GPU model of device `device` of process `pid`, its
/// entry made when new (named by the CUDA device name, or a label for a device
/// without a `Device` record, which has no peaks) and the device added to it.
fn gpu_model(
    a: &Aggregate,
    overrides: &Overrides,
    (pid, device): (u32, u32),
    gpus: &mut Vec<GpuPeaks>,
) -> usize {
    let shown = a.pid(pid);
    let (gpu, peaks) = match a.devices.get(&(pid, device)) {
        Some(d) => (d.name.trim().to_string(), peaks_for(d, overrides)),
        None => (
            format!("device {device} of pid {shown}"),
            Err(format!(
                "no device record for device {device} of pid {shown}, so no peaks"
            )),
        ),
    };
    let i = match gpus.iter().position(|g| g.gpu == gpu) {
        Some(i) => i,
        None => {
            let (peaks, error) = match peaks {
                Ok(p) => (Some(p), None),
                Err(e) => (None, Some(e)),
            };
            gpus.push(GpuPeaks {
                gpu,
                peaks,
                error,
                devices: Vec::new(),
            });
            gpus.len() - 1
        }
    };
    gpus[i].devices.push((shown, device));
    i
}

/// A kernel row: one kernel name (as recorded) on one GPU model (index in the GPU
/// list).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct RowKey<'a> {
    mangled: &'a str,
    gpu: usize,
}

/// Per-row accumulation.
#[derive(Default)]
struct RowAcc {
    calls: u64,
    ns: u64,
    gemm_launches: u64,
    gemm_parts: u64,
    model_flops: f64,
    /// math of the shapes -> model FLOPs (count for parts).
    shape_math: BTreeMap<Result<Math, String>, (f64, u64)>,
    bytes_launches: u64,
    /// Launches from CUDA graphs.
    graph_calls: u64,
    /// The processes the launches ran in.
    pids: BTreeSet<u32>,
}

impl RowAcc {
    /// Counts the launches of class `c` in.
    fn add(&mut self, c: &Class) {
        let calls = c.tally.calls;
        self.calls += calls;
        self.graph_calls += c.graph_calls;
        self.pids.insert(c.key.pid);
        self.ns = self.ns.saturating_add(c.tally.ns);
        if let Some(g) = &c.key.gemm {
            self.gemm_launches += calls;
            let flops = g.flops() * calls as f64;
            let e = self.shape_math.entry(g.shape.math()).or_default();
            e.0 += flops;
            e.1 += calls;
            if g.first {
                self.model_flops += flops;
            } else {
                self.gemm_parts += calls;
            }
        }
        self.bytes_launches += c.tally.bytes_calls;
    }
}

/// The classes of a session grouped into kernel rows, with the FLOP counters of each
/// (row, launch configuration).
struct RowGrouping<'a> {
    a: &'a Aggregate,
    /// Per row.
    keys: Vec<RowKey<'a>>,
    accs: Vec<RowAcc>,
    counters: ConfigCounters,
    /// Per class of `a`: its row.
    class_row: Vec<usize>,
}

impl<'a> RowGrouping<'a> {
    /// The rows of the classes of `a`, in order of first class; the GPU models of
    /// their devices are added to `gpus`, with their peaks (`overrides` applied).
    fn of(a: &'a Aggregate, overrides: &Overrides, gpus: &mut Vec<GpuPeaks>) -> Self {
        let classes = &a.classes.list;
        let mut g = RowGrouping {
            a,
            keys: Vec::new(),
            accs: Vec::new(),
            counters: ConfigCounters::default(),
            class_row: Vec::with_capacity(classes.len()),
        };
        let mut gpu_of: HashMap<(u32, u32), usize> = HashMap::new();
        let mut row_of: HashMap<RowKey<'a>, usize> = HashMap::new();
        for c in classes {
            let device = (c.key.pid, c.key.device_id);
            let gpu = *gpu_of
                .entry(device)
                .or_insert_with(|| gpu_model(a, overrides, device, gpus));
            let key = RowKey {
                mangled: c.mangled.as_str(),
                gpu,
            };
            let row = *row_of.entry(key).or_insert_with(|| {
                g.keys.push(key);
                g.accs.push(RowAcc::default());
                g.accs.len() - 1
            });
            g.class_row.push(row);
            g.accs[row].add(c);
            g.counters.add(a, row, c);
        }
        g
    }
}

/// The FLOPs of one kernel row, which of them its point uses, and the precision
/// whose peak applies.
struct RowFlops {
    model: Option<f64>,
    hw: Option<f64>,
    source: Option<FlopSource>,
    math: Option<Math>,
    hw_math: Option<Math>,
}

impl RowFlops {
    /// The FLOPs of the row of `acc` and `hw`; the error of the shapes' precision
    /// goes to `missing`.
    fn of(acc: &RowAcc, hw: &RowHwFlops, missing: &mut Vec<String>) -> RowFlops {
        let model = (acc.gemm_launches > 0).then_some(acc.model_flops);
        let hw_flops = hw.flops();
        let source = if acc.gemm_launches == acc.calls {
            Some(FlopSource::Model)
        } else if hw_flops.is_some() {
            Some(FlopSource::Hardware)
        } else {
            None
        };
        let math = match source {
            Some(FlopSource::Model) => {
                let best = acc
                    .shape_math
                    .iter()
                    .max_by(|a, b| a.1 .0.total_cmp(&b.1 .0).then(a.1 .1.cmp(&b.1 .1)))
                    .map(|(m, _)| m.clone());
                match best {
                    Some(Ok(m)) => Some(m),
                    Some(Err(e)) => {
                        missing.push(e);
                        None
                    }
                    None => None,
                }
            }
            Some(FlopSource::Hardware) => hw.math(),
            None => None,
        };
        RowFlops {
            model,
            hw: hw_flops,
            source,
            math,
            hw_math: hw_flops.and_then(|_| hw.math()),
        }
    }

    /// The FLOPs the row's point uses.
    fn used(&self) -> Option<f64> {
        match self.source {
            Some(FlopSource::Model) => self.model,
            Some(FlopSource::Hardware) => self.hw,
            None => None,
        }
    }
}

/// Kernel row `row` of `g`, and what it could not compute.
fn kernel_row(
    g: &RowGrouping,
    row: usize,
    gpus: &[GpuPeaks],
    bytes: &RowBytes,
    config_flops: &ConfigFlops,
) -> (KernelRow, Vec<String>) {
    let acc = &g.accs[row];
    let RowKey { mangled, gpu } = g.keys[row];
    let gpu_peaks = &gpus[gpu];
    let name = if mangled.is_empty() {
        "(unnamed)".to_string()
    } else {
        demangle(mangled)
    };
    let mut missing = Vec::new();
    let hw = RowHwFlops::of(&g.counters, config_flops, row);
    let f = RowFlops::of(acc, &hw, &mut missing);
    let flops = f.used();
    missing.extend(missing_flops(g.a, acc, &hw, &f));
    missing.extend(hw.incomplete(config_flops));
    let row_bytes = bytes.total();
    if row_bytes.is_none() {
        missing.push(missing_bytes(g, row, bytes));
    }
    let (peak_flops, bandwidth) = ceilings(gpu_peaks, f.math);
    missing.extend(missing_ceilings(gpu_peaks, f.math, peak_flops, flops));
    let mut point = evaluate(&Inputs {
        flops,
        bytes: row_bytes,
        duration_ns: acc.ns,
        peak_flops,
        bandwidth,
    });
    if flops == Some(0.0) && point.mfu.is_none() && acc.ns > 0 {
        // No FLOPs is 0 % of any peak.
        point.mfu = Some(0.0);
    }
    let row = KernelRow {
        family: classify(&name, acc.gemm_launches > 0),
        name,
        mangled: mangled.to_string(),
        gpu: gpu_peaks.gpu.clone(),
        calls: acc.calls,
        gpu_ns: acc.ns,
        gemm_launches: acc.gemm_launches,
        gemm_part_launches: acc.gemm_parts,
        model_flops: f.model,
        hw_flops: f.hw,
        hw_flops_launches: hw.launches(),
        flops_source: f.source,
        math: f.math,
        hw_math: f.hw_math,
        bytes: row_bytes,
        bytes_launches: acc.bytes_launches,
        bytes_source: row_bytes.and(bytes.source),
        peak_flops,
        bandwidth,
        point,
    };
    (row, missing)
}

/// Why a kernel row has no FLOPs for its point (or FLOPs of no known precision), if
/// that needs saying.
fn missing_flops(a: &Aggregate, acc: &RowAcc, hw: &RowHwFlops, f: &RowFlops) -> Option<String> {
    match f.source {
        None if acc.gemm_launches > 0 => Some(format!(
            "GEMM shape for only {} of {} launches, and no FLOP counters",
            acc.gemm_launches, acc.calls
        )),
        None if hw.counted => None,
        None => Some(format!(
            "no GEMM shape and no FLOP counters{}",
            counter_hint(
                a,
                &acc.pids,
                ": not a cuBLAS GEMM, and no launch measured its FLOP counters \
                 (GPUPROF_REPLAY=kernel measures every group on each measured launch)"
            )
        )),
        Some(FlopSource::Hardware) if hw.math().is_none() && f.used().unwrap_or(0.0) > 0.0 => {
            Some("FLOP counters of unknown precision".to_string())
        }
        _ => None,
    }
}

/// Why kernel row `row` of `g`, whose launches have `bytes`, has no DRAM bytes.
fn missing_bytes(g: &RowGrouping, row: usize, bytes: &RowBytes) -> String {
    let acc = &g.accs[row];
    if acc.bytes_launches == 0 {
        match undetermined_bytes(g.a, row, &g.class_row) {
            Some(why) => format!(
                "no DRAM counters, and DRAM bytes not determined from the sampling \
                 windows: {why}"
            ),
            None => no_bytes(g.a, acc),
        }
    } else {
        let (with_bytes, all) = (bytes.with_bytes, bytes.launches);
        format!(
            "DRAM bytes for only {with_bytes} of {all} launches (no launch of the same \
             launch configuration and GEMM shape measured them; a longer run, or \
             GPUPROF_COUNTER_LAUNCHES=0, measures each)"
        )
    }
}

/// The peak FLOP/s for `math` and the DRAM bandwidth of GPU model `g`.
fn ceilings(g: &GpuPeaks, math: Option<Math>) -> (Option<f64>, Option<f64>) {
    let peaks = g.peaks.as_ref();
    let peak_flops = peaks.zip(math).and_then(|(p, m)| p.flops(m));
    (peak_flops, peaks.and_then(Peaks::bandwidth))
}

/// Why a kernel row with `flops` in `math` on GPU model `g` lacks the ceilings
/// [`ceilings`] gave (`peak_flops`, and the bandwidth).
fn missing_ceilings(
    g: &GpuPeaks,
    math: Option<Math>,
    peak_flops: Option<f64>,
    flops: Option<f64>,
) -> Vec<String> {
    let mut missing = Vec::new();
    match (&g.peaks, math) {
        (Some(_), Some(m)) if peak_flops.is_none() && flops.unwrap_or(0.0) > 0.0 => {
            missing.push(format!("no peak for {m} on {}", g.gpu))
        }
        _ => {}
    }
    match &g.peaks {
        None => missing.push(format!("no peaks for {}", g.gpu)),
        Some(p) if p.bandwidth().is_none() => {
            missing.push(format!("no DRAM bandwidth for {}", g.gpu))
        }
        _ => {}
    }
    missing
}

/// Per class of `g`: model and hardware FLOPs per launch with their peaks, bytes and
/// bandwidth, for the rollups.
fn class_values(
    g: &RowGrouping,
    rows: &[KernelRow],
    bytes: &ClassBytes,
    config_flops: &ConfigFlops,
    gpus: &[GpuPeaks],
) -> Vec<ClassValues> {
    g.a.classes
        .list
        .iter()
        .zip(&g.class_row)
        .enumerate()
        .map(|(i, (c, &row))| {
            let r = &rows[row];
            let peaks = peaks_of(gpus, &r.gpu);
            let peak_of = |m: Option<Math>| peaks.zip(m).and_then(|(p, m)| p.flops(m));
            // A launch's own shape decides its peak.
            let model = c.key.gemm.as_ref().map(|g| LaunchFlops {
                flops: g.flops(),
                peak: peak_of(g.shape.math().ok()),
            });
            // Only where the row has hardware FLOPs: the rollups then add up to the
            // kernel rows.
            let hw = r
                .hw_flops
                .and_then(|_| config_flops.per_launch_of(row, c))
                .map(|flops| LaunchFlops {
                    flops,
                    peak: peak_of(r.hw_math),
                });
            ClassValues {
                family: r.family,
                model,
                hw,
                bytes_mean: bytes.mean[i],
                bytes_source: bytes.source(i).unwrap_or(BytesSource::Measured),
                bandwidth: r.bandwidth,
            }
        })
        .collect()
}

/// One row per GEMM shape and GPU model of the classes of `g`, by GPU time, longest
/// first (ties: shape, GPU).
fn shape_rows(
    g: &RowGrouping,
    rows: &[KernelRow],
    bytes: &ClassBytes,
    gpus: &[GpuPeaks],
) -> Vec<ShapeRow> {
    let mut shapes: BTreeMap<(GemmShape, usize), Vec<usize>> = BTreeMap::new();
    for (ci, c) in g.a.classes.list.iter().enumerate() {
        if let Some(gemm) = &c.key.gemm {
            shapes
                .entry((gemm.shape.clone(), g.keys[g.class_row[ci]].gpu))
                .or_default()
                .push(ci);
        }
    }
    let mut out: Vec<ShapeRow> = shapes
        .into_iter()
        .map(|((shape, gpu), cs)| shape_row(shape, &gpus[gpu], &cs, g, rows, bytes))
        .collect();
    out.sort_by(|a, b| {
        b.gpu_ns
            .cmp(&a.gpu_ns)
            .then_with(|| a.shape.cmp(&b.shape))
            .then_with(|| a.gpu.cmp(&b.gpu))
    });
    out
}

/// The row of GEMM shape `shape` on GPU model `gpu`: classes `cs` of `g`.
fn shape_row(
    shape: GemmShape,
    gpu: &GpuPeaks,
    cs: &[usize],
    g: &RowGrouping,
    rows: &[KernelRow],
    bytes: &ClassBytes,
) -> ShapeRow {
    let classes = &g.a.classes.list;
    let math = shape.math().ok();
    let (peak_flops, bandwidth) = ceilings(gpu, math);
    let gpu_ns = cs
        .iter()
        .fold(0u64, |sum, &i| sum.saturating_add(classes[i].tally.ns));
    let model_flops: f64 = cs
        .iter()
        .filter_map(|&i| {
            let c = &classes[i];
            c.key
                .gemm
                .as_ref()
                .map(|g| g.flops() * c.tally.calls as f64)
        })
        .sum();
    let bytes_launches: u64 = cs.iter().map(|&i| classes[i].tally.bytes_calls).sum();
    let shape_bytes: Option<f64> = cs
        .iter()
        .map(|&i| bytes.of_class(i, &classes[i].tally))
        .sum::<Option<f64>>()
        .filter(|_| bytes_launches > 0 || cs.iter().any(|&i| bytes.fitted[i].is_some()));
    let bytes_source = cs
        .iter()
        .fold(None, |s, &i| BytesSource::and(s, bytes.source(i)))
        .filter(|_| shape_bytes.is_some());
    let mut kernels: Vec<String> = cs
        .iter()
        .map(|&i| rows[g.class_row[i]].name.clone())
        .collect();
    kernels.sort();
    kernels.dedup();
    let point = evaluate(&Inputs {
        flops: Some(model_flops),
        bytes: shape_bytes,
        duration_ns: gpu_ns,
        peak_flops,
        bandwidth,
    });
    // Where the counters of its longest-running kernel put most FLOPs.
    let counted = cs
        .iter()
        .map(|&i| &rows[g.class_row[i]])
        .max_by_key(|r| r.gpu_ns)
        .and_then(|r| r.hw_math)
        .map(|m| (m, ceilings(gpu, Some(m)).0));
    ShapeRow {
        label: shape.label(),
        calls: cs
            .iter()
            .filter(|&&i| classes[i].key.gemm.as_ref().is_some_and(|g| g.first))
            .map(|&i| classes[i].tally.calls)
            .sum(),
        launches: cs.iter().map(|&i| classes[i].tally.calls).sum(),
        gpu_ns,
        model_flops,
        bytes: shape_bytes,
        bytes_launches,
        bytes_source,
        math,
        peak_flops,
        bandwidth,
        verdicts: shape_verdicts(&shape, &point, math, &kernels, counted),
        point,
        kernels,
        gpu: gpu.gpu.clone(),
        shape,
    }
}

/// What the shape rows `shapes` could not compute, in their order.
fn shape_missing(shapes: &[ShapeRow], gpus: &[GpuPeaks]) -> Vec<Missing> {
    let mut out = Vec::new();
    for s in shapes {
        let mut what = Vec::new();
        if s.bytes.is_none() {
            what.push("no DRAM counters for this GEMM shape".to_string());
        }
        match (s.math, s.shape.math()) {
            (_, Err(e)) => what.push(e),
            (Some(m), _) if s.peak_flops.is_none() && peaks_of(gpus, &s.gpu).is_some() => {
                what.push(format!("no peak for {m} on {}", s.gpu))
            }
            _ => {}
        }
        out.extend(what.into_iter().map(|what| Missing {
            kernel: format!("GEMM {}", s.label),
            gpu: s.gpu.clone(),
            what,
        }));
    }
    out
}

/// The kernel rows `rows` by GPU time, longest first (ties: name, GPU), and what
/// they could not compute (`row_missing`, per row) in that order.
fn by_gpu_time(
    rows: Vec<KernelRow>,
    row_missing: &[Vec<String>],
) -> (Vec<KernelRow>, Vec<Missing>) {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        rows[b]
            .gpu_ns
            .cmp(&rows[a].gpu_ns)
            .then_with(|| rows[a].mangled.cmp(&rows[b].mangled))
            .then_with(|| rows[a].gpu.cmp(&rows[b].gpu))
    });
    let mut missing = Vec::new();
    for &i in &order {
        for what in &row_missing[i] {
            missing.push(Missing {
                kernel: rows[i].name.clone(),
                gpu: rows[i].gpu.clone(),
                what: what.clone(),
            });
        }
    }
    let mut slots: Vec<Option<KernelRow>> = rows.into_iter().map(Some).collect();
    let kernels = order.iter().filter_map(|&i| slots[i].take()).collect();
    (kernels, missing)
}

/// How the processes `pids` collected counters: `hint` when per kernel (a kernel-mode
/// plan, or any kernel with counters), what stands in the way otherwise (counters
/// off, PM sampling only).
fn counter_hint(a: &Aggregate, pids: &BTreeSet<u32>, hint: &str) -> String {
    let modes: BTreeSet<&str> = a
        .plans
        .iter()
        .filter(|p| pids.contains(&p.pid))
        .map(|p| p.mode.as_str())
        .collect();
    let measured = a
        .classes
        .list
        .iter()
        .any(|c| c.with_counters > 0 && pids.contains(&c.key.pid));
    if modes.contains("kernel") || measured {
        hint.to_string()
    } else if modes.is_empty() {
        ": hardware counters were off (the Counters section says why)".to_string()
    } else {
        ": PM sampling measures the GPU, not each kernel".to_string()
    }
}

/// Why a kernel row has no DRAM counters at all, and what would give them.
fn no_bytes(a: &Aggregate, acc: &RowAcc) -> String {
    let launches = if acc.calls == 1 {
        "its launch was not".to_string()
    } else {
        format!("none of its {} launches was", acc.calls)
    };
    let why = if acc.graph_calls == acc.calls {
        format!(
            ": {launches} measured, from CUDA graphs (their kernels get rates fitted to the \
             PM sampling windows the first graph launch starts, and the windows did not \
             determine this one: a longer run gives more; GPUPROF_GRAPH_REPLAY=on measures \
             graph kernels per kernel by kernel replay, where that cannot harm the graph)"
        )
    } else {
        format!(
            ": {launches} measured (one launch at a time per context is, within \
             GPUPROF_COUNTER_BUDGET; a longer run, GPUPROF_COUNTER_LAUNCHES=0, or \
             GPUPROF_COUNTERS=sampling)"
        )
    };
    format!("no DRAM counters{}", counter_hint(a, &acc.pids, &why))
}

#[cfg(test)]
#[path = "efficiency_tests.rs"]
mod tests;
