//! A [`Snapshot`] in the Prometheus text exposition format (version 0.0.4), written
//! with the `prometheus-client` crate. docs/METRICS.md lists every series.
//!
//! Per GPU, dcgm-exporter's names and labels (`gpu`, `UUID`, `pci_bus_id`, `device`,
//! `modelName`, `Hostname`; one series per GPU); gpuprof's own series are named
//! `gpuprof_*` with Prometheus's conventions (`_total` counters, base units: seconds,
//! bytes, FLOPs, ratios 0 to 1).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::analysis::live::snapshot::{Gpu, Snapshot, Totals};

/// The `Content-Type` of what [`render`] writes.
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

type Labels = Vec<(String, String)>;
type FloatCounters = Family<Labels, Counter<f64, AtomicU64>>;
type Counters = Family<Labels, Counter>;
type Gauges = Family<Labels, Gauge<f64, AtomicU64>>;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// dcgm-exporter's labels of a GPU.
fn gpu_labels(g: &Gpu) -> Labels {
    let gpu = g.gpu.to_string();
    let device = format!("nvidia{}", g.gpu);
    labels(&[
        ("gpu", &gpu),
        ("UUID", &g.uuid),
        ("pci_bus_id", &g.pci_bus_id),
        ("device", &device),
        ("modelName", &g.model),
        ("Hostname", &g.hostname),
    ])
}

/// One of a [`Totals`]' optional sums.
type Sum = fn(&Totals) -> Option<f64>;

/// The sums of `items` (a label set and its [`Totals`] each) as `prefix`'s series:
/// GPU seconds and launches always, model FLOPs, hardware FLOPs and DRAM bytes for
/// the items that have them (a family none has is not registered).
fn totals_series(registry: &mut Registry, prefix: &str, what: &str, items: &[(Labels, &Totals)]) {
    let seconds = FloatCounters::default();
    registry.register(
        format!("{prefix}_seconds"),
        format!("GPU time of the kernels {what}, seconds"),
        seconds.clone(),
    );
    let launches = Counters::default();
    registry.register(
        format!("{prefix}_launches"),
        format!("Kernel launches {what}"),
        launches.clone(),
    );
    for (l, t) in items {
        seconds.get_or_create(l).inc_by(t.gpu_ns as f64 / 1e9);
        launches.get_or_create(l).inc_by(t.launches);
    }
    let sums: [(&str, String, Sum); 3] = [
        (
            "model_flops",
            format!("Model FLOPs (GEMM shapes, 2*M*N*K*batch) of the kernels {what}"),
            |t| t.model_flops,
        ),
        (
            "hardware_flops",
            format!("Hardware FLOPs (tensor ops and FMA/ADD/MUL counters) of the kernels {what}"),
            |t| t.hw_flops,
        ),
        (
            "dram_bytes",
            format!("DRAM bytes read and written by the kernels {what}"),
            |t| t.dram_bytes,
        ),
    ];
    for (name, help, get) in sums {
        if !items.iter().any(|(_, t)| get(t).is_some()) {
            continue;
        }
        let family = FloatCounters::default();
        registry.register(format!("{prefix}_{name}"), help, family.clone());
        for (l, t) in items {
            if let Some(v) = get(t) {
                family.get_or_create(l).inc_by(v);
            }
        }
    }
}

/// Registers a gauge family.
fn gauges(registry: &mut Registry, name: &str, help: &str) -> Gauges {
    let g = Gauges::default();
    registry.register(name, help, g.clone());
    g
}

/// Registers a counter family.
fn counters(registry: &mut Registry, name: &str, help: &str) -> Counters {
    let c = Counters::default();
    registry.register(name, help, c.clone());
    c
}

/// Registers the gauge family `name` with one value per GPU whose `fields` hold it;
/// a field no GPU has is not registered.
fn gpu_field_series(registry: &mut Registry, s: &Snapshot, name: &str, help: &str) {
    if !s
        .gpus
        .iter()
        .any(|g| g.fields.iter().any(|(n, _)| *n == name))
    {
        return;
    }
    let family = gauges(registry, name, help);
    for g in &s.gpus {
        if let Some((_, v)) = g.fields.iter().find(|(n, _)| *n == name) {
            family.get_or_create(&gpu_labels(g)).set(*v);
        }
    }
}

/// The DCGM fields per GPU: NVML's device fields, then the profiling ones with help
/// naming the CUPTI metric each comes from.
fn dcgm_series(registry: &mut Registry, s: &Snapshot) {
    for (name, help) in crate::analysis::live::device_fields::DEVICE_FIELDS {
        gpu_field_series(registry, s, name, help);
    }
    for field in cupti::metrics::DCGM_FIELDS {
        let help = if crate::analysis::gpu_activity::is_ratio(field) {
            format!(
                "Ratio of the last second of wall-clock time (idle included, 5 s ago) the unit \
                 was active, GPU-wide, from {}",
                field.metric
            )
        } else {
            format!(
                "Bytes per second over the last second of wall-clock time (5 s ago), \
                 GPU-wide, from {}",
                field.metric
            )
        };
        gpu_field_series(registry, s, field.name, &help);
    }
}

/// gpuprof's sums per GPU, kernel, family, NVTX range and of the whole run.
fn kernel_totals_series(registry: &mut Registry, s: &Snapshot) {
    let per_gpu: Vec<(Labels, &Totals)> =
        s.gpus.iter().map(|g| (gpu_labels(g), &g.totals)).collect();
    totals_series(registry, "gpuprof_gpu_kernel", "run on the GPU", &per_gpu);
    let kernels: Vec<(Labels, &Totals)> = s
        .kernels
        .iter()
        .map(|k| {
            let l = labels(&[
                ("kernel", &k.kernel),
                ("family", &k.family),
                ("modelName", &k.model),
            ]);
            (l, &k.totals)
        })
        .collect();
    totals_series(
        registry,
        "gpuprof_kernel",
        "of this name (short name; names past --serve-top are \"other\"), family and GPU model",
        &kernels,
    );
    let families: Vec<(Labels, &Totals)> = s
        .families
        .iter()
        .map(|(name, t)| (labels(&[("family", name)]), t))
        .collect();
    totals_series(registry, "gpuprof_family", "of this family", &families);
    let ranges: Vec<(Labels, &Totals)> = s
        .ranges
        .iter()
        .map(|(name, t)| (labels(&[("range", name)]), t))
        .collect();
    totals_series(
        registry,
        "gpuprof_nvtx_range",
        "inside this NVTX range (each kernel once per range name; names past --serve-top are \"other\")",
        &ranges,
    );
    totals_series(
        registry,
        "gpuprof_run",
        "of the whole run",
        &[(Vec::new(), &s.run)],
    );
}

/// MFU, HFU and MBU over the run so far and over the last update's kernels.
fn utilization_series(registry: &mut Registry, s: &Snapshot) {
    let mfu = gauges(
        registry,
        "gpuprof_mfu_ratio",
        "Time-weighted model FLOPs utilization: (sum of model FLOPs/peak) / GPU time, over the kernels with a GEMM shape, of the run so far or of the last update",
    );
    let hfu = gauges(
        registry,
        "gpuprof_hfu_ratio",
        "Time-weighted hardware FLOPs utilization: (sum of counter FLOPs/peak) / GPU time, over the kernels with FLOP counters, of the run so far or of the last update",
    );
    let mbu = gauges(
        registry,
        "gpuprof_mbu_ratio",
        "Time-weighted memory bandwidth utilization: (sum of bytes/bandwidth) / GPU time, over the run so far or the kernels of the last update",
    );
    for (window, values) in [
        ("run", [s.mfu, s.hfu, s.mbu]),
        ("update", [s.window_mfu, s.window_hfu, s.window_mbu]),
    ] {
        let l = labels(&[("window", window)]);
        for (family, v) in [&mfu, &hfu, &mbu].into_iter().zip(values) {
            if let Some(v) = v {
                family.get_or_create(&l).set(v);
            }
        }
    }
}

/// The collector's own health: records produced, received and dropped, ring fill,
/// and whether the program has ended.
fn collection_series(registry: &mut Registry, s: &Snapshot) {
    for (name, help, n) in [
        (
            "gpuprof_records_produced",
            "Records the profiled processes produced",
            s.collection.produced,
        ),
        (
            "gpuprof_records_received",
            "Records the collector read from the rings",
            s.collection.received,
        ),
    ] {
        counters(registry, name, help)
            .get_or_create(&Vec::new())
            .inc_by(n);
    }
    let dropped = counters(
        registry,
        "gpuprof_records_dropped",
        "Records lost, by where they were lost",
    );
    for (source, n) in &s.dropped {
        dropped
            .get_or_create(&labels(&[("source", source)]))
            .inc_by(*n);
    }
    let fill = gauges(
        registry,
        "gpuprof_ring_fill_ratio",
        "Largest share of a process's ring found filled at a drain since the last update",
    );
    for (pid, f) in &s.collection.ring_fill {
        fill.get_or_create(&labels(&[("pid", &pid.to_string())]))
            .set(*f);
    }
    let ended = gauges(
        registry,
        "gpuprof_program_ended",
        "1 once the profiled program has ended and every value is final",
    );
    ended
        .get_or_create(&Vec::new())
        .set(if s.ended { 1.0 } else { 0.0 });
}

/// The text of every series of `s`.
pub fn render(s: &Snapshot) -> String {
    let mut r = Registry::default();
    // Per GPU: DCGM fields (NVML's, then the profiling ones), then gpuprof's.
    dcgm_series(&mut r, s);
    kernel_totals_series(&mut r, s);
    utilization_series(&mut r, s);
    collection_series(&mut r, s);

    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_text::encode(&mut text, &r);
    text
}
