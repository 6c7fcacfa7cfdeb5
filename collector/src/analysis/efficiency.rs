//! How well each kernel uses its GPU: FLOPs, DRAM bytes, arithmetic intensity,
//! achieved FLOP/s, MFU, MBU and its place on the roofline ([`super::roofline`]), per
//! kernel and rolled up by GEMM shape, kernel family, NVTX range and for the run.
//!
//! **Rows.** One row per kernel name (as recorded; shown demangled) and GPU model (the
//! CUDA device name, whose peaks apply). Launches on devices without a `Device` record
//! form rows of their own GPU label and have no peaks.
//!
//! **FLOPs.** Two kinds, reported side by side and never added together:
//! - *model* FLOPs, from GEMM shapes ([`super::gemm`]): 2·M·N·K·batch per call,
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
//! says which. The precision whose peak applies is the shapes' ([`super::precision`])
//! for model FLOPs, else the precision and pipe of the counter with the most FLOPs.
//!
//! **Bytes.** DRAM bytes = `dram__bytes_read.sum + dram__bytes_write.sum`. A launch
//! without them is given the mean of the launches of the same kernel name, GPU, launch
//! configuration and GEMM shape that measured them; a row has bytes only when every
//! launch has them, own or so given. [`KernelRow::bytes_launches`] says how many
//! launches measured them. Under PM sampling no launch measures them: a class whose
//! group measured none is given the rates fitted to the sampling windows
//! ([`super::deconvolve`]), `(rate_read + rate_write) × its mean duration` per launch,
//! when both are determined (a metric the sampling set lacks counts as 0, as a launch
//! lacking it does), and rows, shapes and rollups say so
//! ([`KernelRow::bytes_source`]: measured, sampled or mixed). FLOPs stay model FLOPs
//! from GEMM shapes: PM sampling has no FLOP counters.
//!
//! **Rollups** ([`Rollup`]) by family, NVTX range and for the run: see [`super::rollup`].
//!
//! GEMM shape rollups ([`ShapeRow`]) are per (shape, GPU): all launches of the calls
//! (split-K reductions included) and the calls' model FLOPs, on the shape's roofline.
//!
//! Whatever cannot be computed is `None`, and [`Efficiency::missing`] says what is
//! missing for which kernel.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use wire::Record;

use super::aggregate::{aggregate, Aggregate};
use super::classes::{ClassKey, GemmPart};
use super::deconvolve::Fitted;
use super::family::{classify, Family};
use super::flop_metrics::{flop_metric, DRAM_READ, DRAM_WRITE};
use super::gemm::GemmShape;
use super::names::{demangle, dims};
use super::peaks::{peaks_for, Overrides, Peaks};
use super::precision::Math;
pub use super::rollup::ClassValues;
use super::rollup::{by_session, rollups, with_mean};
pub use super::rollup::{BytesSource, FlopSource};
use super::roofline::{evaluate, Inputs, Point};

pub use super::rollup::Rollup;

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
        self.gpus
            .iter()
            .find(|g| g.gpu == gpu)
            .and_then(|g| g.peaks.as_ref())
    }
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

/// A launch configuration: grid, block.
type Config = ([i32; 3], [i32; 3]);

/// The key of a launch's bytes group: (row, configuration, shape).
type BytesKey = (usize, Config, Option<GemmShape>);

/// The FLOP counters measured on the launches of one (row, configuration).
#[derive(Default)]
struct ConfigAcc {
    calls: u64,
    /// metric -> (launches, sum)
    metrics: BTreeMap<String, (u64, f64)>,
}

/// The roofline analysis of `records`, read as one part. `overrides` is the user's
/// peaks file (or empty).
pub fn efficiency(records: &[(u32, Record)], overrides: &Overrides) -> Efficiency {
    efficiency_of(&aggregate(records), overrides)
}

/// The roofline analysis of a session's aggregate. `overrides` is the user's peaks
/// file (or empty).
pub fn efficiency_of(a: &Aggregate, overrides: &Overrides) -> Efficiency {
    let mut out = Efficiency {
        gemm_statuses: a.gemm_statuses.clone(),
        gemm_unjoined: a.gemm_unjoined,
        ..Efficiency::default()
    };

    // Devices and their GPU models.
    let devices = &a.devices;
    let mut gpu_of: HashMap<(u32, u32), usize> = HashMap::new();
    let mut gpu_index = |pid: u32, device: u32, gpus: &mut Vec<GpuPeaks>| -> usize {
        *gpu_of.entry((pid, device)).or_insert_with(|| {
            let shown = a.pid(pid);
            let (gpu, peaks) = match devices.get(&(pid, device)) {
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
        })
    };

    // Classes into rows and (row, configuration)s.
    let classes = &a.classes.list;
    let mut row_keys: Vec<(&str, usize)> = Vec::new();
    let mut row_of: HashMap<(&str, usize), usize> = HashMap::new();
    let mut accs: Vec<RowAcc> = Vec::new();
    let mut configs: BTreeMap<(usize, Config), ConfigAcc> = BTreeMap::new();
    let mut class_row: Vec<usize> = Vec::with_capacity(classes.len());
    // (launches that measured bytes, their bytes) per bytes group.
    let mut group_bytes: HashMap<BytesKey, (u64, f64)> = HashMap::new();
    for c in classes {
        let gpu = gpu_index(c.key.pid, c.key.device_id, &mut out.gpus);
        let mangled = c.mangled.as_str();
        let row = *row_of.entry((mangled, gpu)).or_insert_with(|| {
            row_keys.push((mangled, gpu));
            accs.push(RowAcc::default());
            accs.len() - 1
        });
        class_row.push(row);
        let acc = &mut accs[row];
        let calls = c.tally.calls;
        acc.calls += calls;
        acc.graph_calls += c.graph_calls;
        acc.pids.insert(c.key.pid);
        acc.ns = acc.ns.saturating_add(c.tally.ns);
        if let Some(g) = &c.key.gemm {
            acc.gemm_launches += calls;
            let flops = g.flops() * calls as f64;
            let e = acc.shape_math.entry(g.shape.math()).or_default();
            e.0 += flops;
            e.1 += calls;
            if g.first {
                acc.model_flops += flops;
            } else {
                acc.gemm_parts += calls;
            }
        }
        let config = (c.key.grid, c.key.block);
        let cacc = configs.entry((row, config)).or_default();
        cacc.calls += calls;
        for (m, (n, sum)) in &c.flop_metrics {
            let e = cacc
                .metrics
                .entry(a.metrics.name(*m).to_string())
                .or_default();
            e.0 += n;
            e.1 += sum;
        }
        acc.bytes_launches += c.tally.bytes_calls;
        if c.tally.bytes_calls > 0 {
            let e = group_bytes
                .entry((row, config, c.key.gemm.as_ref().map(|g| g.shape.clone())))
                .or_default();
            e.0 += c.tally.bytes_calls;
            e.1 += c.tally.bytes;
        }
    }

    // Bytes per launch: own, else the mean of its (row, configuration, shape) group.
    let group_mean: Vec<Option<f64>> = classes
        .iter()
        .zip(&class_row)
        .map(|(c, row)| {
            let key = (
                *row,
                (c.key.grid, c.key.block),
                c.key.gemm.as_ref().map(|g| g.shape.clone()),
            );
            group_bytes.get(&key).map(|(n, sum)| sum / *n as f64)
        })
        .collect();
    // Classes without measured bytes: the sampling windows' fitted rates.
    let sampled: Vec<bool> = group_mean.iter().map(|m| m.is_none()).collect();
    let group_mean: Vec<Option<f64>> = group_mean
        .iter()
        .enumerate()
        .map(|(i, m)| m.or_else(|| sampled_bytes(a, i)))
        .collect();
    let sampled: Vec<bool> = sampled
        .iter()
        .zip(&group_mean)
        .map(|(s, m)| *s && m.is_some())
        .collect();
    let source = |i: usize| {
        group_mean[i].map(|_| {
            if sampled[i] {
                BytesSource::Sampled
            } else {
                BytesSource::Measured
            }
        })
    };
    // (launches with bytes, launches, sum, source)
    let mut row_bytes = vec![(0u64, 0u64, 0.0, None); accs.len()];
    for (i, (c, row)) in classes.iter().zip(&class_row).enumerate() {
        let r = &mut row_bytes[*row];
        r.1 += c.tally.calls;
        if let Some(m) = group_mean[i] {
            r.0 += c.tally.calls;
            r.2 += with_mean(&c.tally, m);
            r.3 = BytesSource::and(r.3, source(i));
        }
    }

    // Hardware FLOPs per launch of each (row, configuration), by math, when every FLOP
    // counter the plan has was measured on that configuration.
    let mut config_flops: HashMap<(usize, Config), BTreeMap<Option<Math>, f64>> = HashMap::new();
    // Per row: configurations with FLOP counters but not all of them, with the ones
    // never measured there.
    let mut incomplete: HashMap<usize, Vec<(Config, Vec<String>)>> = HashMap::new();
    for ((row, config), c) in &configs {
        let wanted: BTreeSet<&str> = accs[*row]
            .pids
            .iter()
            .filter_map(|pid| a.planned_flops.get(pid))
            .flatten()
            .map(String::as_str)
            .collect();
        let unmeasured: Vec<String> = wanted
            .iter()
            .filter(|m| !c.metrics.contains_key(**m))
            .map(|m| m.to_string())
            .collect();
        if !unmeasured.is_empty() {
            incomplete
                .entry(*row)
                .or_default()
                .push((*config, unmeasured));
            continue;
        }
        let mut by_math: BTreeMap<Option<Math>, f64> = BTreeMap::new();
        for (metric, (n, sum)) in &c.metrics {
            if let Some((w, math)) = flop_metric(metric) {
                *by_math.entry(math).or_default() += w * sum / *n as f64;
            }
        }
        config_flops.insert((*row, *config), by_math);
    }

    // Rows.
    let mut rows: Vec<KernelRow> = Vec::with_capacity(accs.len());
    let mut row_missing: Vec<Vec<String>> = Vec::with_capacity(accs.len());
    for (row, acc) in accs.iter().enumerate() {
        let (mangled, gpu) = row_keys[row];
        let gpu_peaks = &out.gpus[gpu];
        let name = if mangled.is_empty() {
            "(unnamed)".to_string()
        } else {
            demangle(mangled)
        };
        let mut missing = Vec::new();

        // Hardware FLOPs: per configuration, per-launch FLOPs x its launches, by math;
        // none when a configuration's FLOP counters are incomplete.
        let row_configs: Vec<(&Config, &ConfigAcc)> = configs
            .range((row, ([i32::MIN; 3], [i32::MIN; 3]))..=(row, ([i32::MAX; 3], [i32::MAX; 3])))
            .map(|((_, c), a)| (c, a))
            .collect();
        let counted = row_configs.iter().any(|(_, a)| !a.metrics.is_empty());
        let mut hw_by_math: BTreeMap<Option<Math>, f64> = BTreeMap::new();
        let mut hw_launches = u64::MAX;
        let mut hw_complete = counted;
        for (config, a) in &row_configs {
            match config_flops.get(&(row, **config)) {
                Some(by_math) => {
                    for (m, f) in by_math {
                        *hw_by_math.entry(*m).or_default() += f * a.calls as f64;
                    }
                    for (n, _) in a.metrics.values() {
                        hw_launches = hw_launches.min(*n);
                    }
                }
                None => hw_complete = false,
            }
        }
        let hw_flops = hw_complete.then(|| hw_by_math.values().sum::<f64>());
        let hw_math = hw_by_math
            .iter()
            .filter(|(m, v)| m.is_some() && **v > 0.0)
            .max_by(|a, b| a.1.total_cmp(b.1))
            .and_then(|(m, _)| *m);
        let model_flops = (acc.gemm_launches > 0).then_some(acc.model_flops);
        let flops_source = if acc.gemm_launches == acc.calls {
            Some(FlopSource::Model)
        } else if hw_flops.is_some() {
            Some(FlopSource::Hardware)
        } else {
            None
        };
        let math = match flops_source {
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
            Some(FlopSource::Hardware) => hw_math,
            None => None,
        };
        let flops = match flops_source {
            Some(FlopSource::Model) => model_flops,
            Some(FlopSource::Hardware) => hw_flops,
            None => None,
        };
        match flops_source {
            None if acc.gemm_launches > 0 => missing.push(format!(
                "GEMM shape for only {} of {} launches, and no FLOP counters",
                acc.gemm_launches, acc.calls
            )),
            None if counted => {}
            None => missing.push(format!(
                "no GEMM shape and no FLOP counters{}",
                counter_hint(
                    a,
                    &acc.pids,
                    ": not a cuBLAS GEMM, and no launch measured its FLOP counters \
                     (GPUPROF_REPLAY=kernel measures every group on each measured launch)"
                )
            )),
            Some(FlopSource::Hardware) if hw_math.is_none() && flops.unwrap_or(0.0) > 0.0 => {
                missing.push("FLOP counters of unknown precision".to_string())
            }
            _ => {}
        }
        if counted && !hw_complete {
            if let Some(list) = incomplete.get(&row) {
                let (config, unmeasured) = &list[0];
                missing.push(
                    format!(
                        "no hw FLOPs: FLOP counters never measured on {} of its {} launch \
                     configuration{} (grid {}, block {}: {}{})",
                        list.len(),
                        row_configs.len(),
                        if row_configs.len() == 1 { "" } else { "s" },
                        dims(config.0),
                        dims(config.1),
                        unmeasured.join(", "),
                        if list.len() > 1 { "; and others" } else { "" }
                    ) + "; the pass groups rotate over a kernel's launches: a longer run, or \
                     GPUPROF_REPLAY=kernel (every group on each measured launch), gives them",
                );
            }
        }
        let (with_bytes, all, sum, bytes_source) = row_bytes[row];
        let bytes: Option<f64> = (with_bytes == all && all > 0).then_some(sum);
        if bytes.is_some() {
            // Measured, or fitted to sampling windows.
        } else if acc.bytes_launches == 0 {
            missing.push(match undetermined_bytes(a, row, &class_row) {
                Some(why) => format!(
                    "no DRAM counters, and DRAM bytes not determined from the sampling \
                     windows: {why}"
                ),
                None => no_bytes(a, acc),
            });
        } else {
            missing.push(format!(
                "DRAM bytes for only {with_bytes} of {all} launches (no launch of the same \
                 launch configuration and GEMM shape measured them; a longer run, or \
                 GPUPROF_COUNTER_LAUNCHES=0, measures each)"
            ));
        }
        let peaks = gpu_peaks.peaks.as_ref();
        let peak_flops = match (peaks, math) {
            (Some(p), Some(m)) => {
                let v = p.flops(m);
                if v.is_none() && flops.unwrap_or(0.0) > 0.0 {
                    missing.push(format!("no peak for {m} on {}", gpu_peaks.gpu));
                }
                v
            }
            _ => None,
        };
        let bandwidth = peaks.and_then(Peaks::bandwidth);
        match peaks {
            None => missing.push(format!("no peaks for {}", gpu_peaks.gpu)),
            Some(_) if bandwidth.is_none() => {
                missing.push(format!("no DRAM bandwidth for {}", gpu_peaks.gpu))
            }
            _ => {}
        }
        let mut point = evaluate(&Inputs {
            flops,
            bytes,
            duration_ns: acc.ns,
            peak_flops,
            bandwidth,
        });
        if flops == Some(0.0) && point.mfu.is_none() && acc.ns > 0 {
            // No FLOPs is 0 % of any peak.
            point.mfu = Some(0.0);
        }
        rows.push(KernelRow {
            family: classify(&name, acc.gemm_launches > 0),
            name,
            mangled: mangled.to_string(),
            gpu: gpu_peaks.gpu.clone(),
            calls: acc.calls,
            gpu_ns: acc.ns,
            gemm_launches: acc.gemm_launches,
            gemm_part_launches: acc.gemm_parts,
            model_flops,
            hw_flops,
            hw_flops_launches: if hw_flops.is_some() { hw_launches } else { 0 },
            flops_source,
            math,
            bytes,
            bytes_launches: acc.bytes_launches,
            bytes_source: bytes.and(bytes_source),
            peak_flops,
            bandwidth,
            point,
        });
        row_missing.push(missing);
    }

    // Per class: FLOPs per launch, bytes, peak and bandwidth for the rollups.
    let values: Vec<ClassValues> = classes
        .iter()
        .zip(&class_row)
        .zip(&group_mean)
        .zip(&sampled)
        .map(|(((c, row), mean), sampled)| {
            let r = &rows[*row];
            let (flops, source) = match r.flops_source {
                Some(FlopSource::Model) => (
                    c.key.gemm.as_ref().map(GemmPart::flops),
                    Some(FlopSource::Model),
                ),
                Some(FlopSource::Hardware) => (
                    config_flops
                        .get(&(*row, (c.key.grid, c.key.block)))
                        .map(|by_math| by_math.values().sum::<f64>()),
                    Some(FlopSource::Hardware),
                ),
                None => (None, None),
            };
            // A launch's own shape decides its peak; others use the row's.
            let peak = match (&c.key.gemm, r.flops_source) {
                (Some(g), Some(FlopSource::Model)) => {
                    let m = g.shape.math().ok();
                    out.peaks(&r.gpu).zip(m).and_then(|(p, m)| p.flops(m))
                }
                _ => r.peak_flops,
            };
            ClassValues {
                family: r.family,
                flops,
                source,
                bytes_mean: *mean,
                bytes_sampled: *sampled,
                peak,
                bandwidth: r.bandwidth,
            }
        })
        .collect();

    // Shapes.
    let mut shapes: BTreeMap<(GemmShape, usize), Vec<usize>> = BTreeMap::new();
    for (ci, c) in classes.iter().enumerate() {
        if let Some(g) = &c.key.gemm {
            shapes
                .entry((g.shape.clone(), row_keys[class_row[ci]].1))
                .or_default()
                .push(ci);
        }
    }
    for ((shape, gpu), cs) in shapes {
        let g = &out.gpus[gpu];
        let math = shape.math().ok();
        let peak_flops = g.peaks.as_ref().zip(math).and_then(|(p, m)| p.flops(m));
        let bandwidth = g.peaks.as_ref().and_then(Peaks::bandwidth);
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
        let bytes: Option<f64> = cs
            .iter()
            .map(|&i| group_mean[i].map(|m| with_mean(&classes[i].tally, m)))
            .sum::<Option<f64>>()
            .filter(|_| bytes_launches > 0 || cs.iter().any(|&i| sampled[i]));
        let bytes_source = cs
            .iter()
            .fold(None, |s, &i| BytesSource::and(s, source(i)))
            .filter(|_| bytes.is_some());
        let mut kernels: Vec<String> = cs
            .iter()
            .map(|&i| rows[class_row[i]].name.clone())
            .collect();
        kernels.sort();
        kernels.dedup();
        out.shapes.push(ShapeRow {
            label: shape.label(),
            calls: cs
                .iter()
                .filter(|&&i| classes[i].key.gemm.as_ref().is_some_and(|g| g.first))
                .map(|&i| classes[i].tally.calls)
                .sum(),
            launches: cs.iter().map(|&i| classes[i].tally.calls).sum(),
            gpu_ns,
            model_flops,
            bytes,
            bytes_launches,
            bytes_source,
            math,
            peak_flops,
            bandwidth,
            point: evaluate(&Inputs {
                flops: Some(model_flops),
                bytes,
                duration_ns: gpu_ns,
                peak_flops,
                bandwidth,
            }),
            kernels,
            gpu: g.gpu.clone(),
            shape,
        });
    }
    out.shapes.sort_by(|a, b| {
        b.gpu_ns
            .cmp(&a.gpu_ns)
            .then_with(|| a.shape.cmp(&b.shape))
            .then_with(|| a.gpu.cmp(&b.gpu))
    });
    let mut shape_missing: Vec<Missing> = Vec::new();
    for s in &out.shapes {
        let mut what = Vec::new();
        if s.bytes.is_none() {
            what.push("no DRAM counters for this GEMM shape".to_string());
        }
        match (s.math, s.shape.math()) {
            (_, Err(e)) => what.push(e),
            (Some(m), _) if s.peak_flops.is_none() && out.peaks(&s.gpu).is_some() => {
                what.push(format!("no peak for {m} on {}", s.gpu))
            }
            _ => {}
        }
        shape_missing.extend(what.into_iter().map(|what| Missing {
            kernel: format!("GEMM {}", s.label),
            gpu: s.gpu.clone(),
            what,
        }));
    }

    // Families, NVTX ranges and the run.
    let rolled = rollups(a, &values);
    out.families = rolled.families;
    out.ranges = rolled.ranges;
    out.run = rolled.run;
    out.ranks = by_session(a, &values);
    out.classes = values;

    // Rows by GPU time, and their missing values in that order.
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        rows[b]
            .gpu_ns
            .cmp(&rows[a].gpu_ns)
            .then_with(|| rows[a].mangled.cmp(&rows[b].mangled))
            .then_with(|| rows[a].gpu.cmp(&rows[b].gpu))
    });
    for &i in &order {
        for what in &row_missing[i] {
            out.missing.push(Missing {
                kernel: rows[i].name.clone(),
                gpu: rows[i].gpu.clone(),
                what: what.clone(),
            });
        }
    }
    out.missing.extend(shape_missing);
    let mut slots: Vec<Option<KernelRow>> = rows.into_iter().map(Some).collect();
    out.kernels = order.iter().filter_map(|&i| slots[i].take()).collect();
    out
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

/// The DRAM bytes per launch of class `i` from the rates fitted to the sampling
/// windows: `(read + write) × mean duration`; `None` unless each metric the sampling
/// set has is determined for the class (one it lacks counts as 0, as for a launch
/// whose counters lack it) and one of them is.
fn sampled_bytes(a: &Aggregate, i: usize) -> Option<f64> {
    let t = &a.classes.list.get(i)?.tally;
    if t.calls == 0 {
        return None;
    }
    Some(sampled_bytes_per_ns(a, i)? * t.ns as f64 / t.calls as f64)
}

/// The DRAM bytes per ns of class `i`'s GPU time fitted to the sampling windows
/// (read + write; see [`sampled_bytes`]).
fn sampled_bytes_per_ns(a: &Aggregate, i: usize) -> Option<f64> {
    let fitted: &Fitted = a.fitted.as_ref()?;
    let rate = |metric: &str| -> Option<Option<f64>> {
        match fitted.class(i, metric) {
            Some((_, c)) => c.estimate.map(Some),
            None => Some(None),
        }
    };
    match (rate(DRAM_READ)?, rate(DRAM_WRITE)?) {
        (None, None) => None,
        (r, w) => Some(r.unwrap_or(0.0) + w.unwrap_or(0.0)),
    }
}

/// The DRAM bytes per ns of GPU time fitted to the PM sampling windows of each class
/// whose bytes the report takes from the fit (no launch of its kernel, launch
/// configuration and GEMM shape measured any; the windows determine it), by class
/// key: a launch of `d` ns moved `d` times that, and the class's launches add up to
/// the report's bytes for it.
pub fn fitted_bytes_per_ns(a: &Aggregate) -> HashMap<ClassKey, f64> {
    let group = |c: &super::classes::Class| {
        (
            c.mangled.clone(),
            c.key.grid,
            c.key.block,
            c.key.gemm.as_ref().map(|g| g.shape.clone()),
        )
    };
    let measured: BTreeSet<_> = a
        .classes
        .list
        .iter()
        .filter(|c| c.tally.bytes_calls > 0)
        .map(group)
        .collect();
    a.classes
        .list
        .iter()
        .enumerate()
        .filter(|(_, c)| !measured.contains(&group(c)))
        .filter_map(|(i, c)| Some((c.key.clone(), sampled_bytes_per_ns(a, i)?)))
        .collect()
}

/// Why the sampling windows do not determine the DRAM bytes of a class of `row`:
/// the first such class's reason, naming other classes by their kernel names.
fn undetermined_bytes(a: &Aggregate, row: usize, class_row: &[usize]) -> Option<String> {
    let fitted = a.fitted.as_ref()?;
    let classes = &a.classes.list;
    let name_of = |c: usize| {
        classes
            .get(c)
            .map_or_else(|| format!("class {c}"), |c| demangle(&c.mangled))
    };
    (0..classes.len())
        .filter(|&i| class_row.get(i) == Some(&row))
        .flat_map(|i| [fitted.class(i, DRAM_READ), fitted.class(i, DRAM_WRITE)])
        .flatten()
        .find_map(|(_, c)| c.undetermined)
        .map(|u| u.describe(name_of))
}

#[cfg(test)]
#[path = "efficiency_tests.rs"]
mod tests;
