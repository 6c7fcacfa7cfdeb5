//! The report's tables as raw numbers: processes, kernels by name, copies and sets by
//! kind, NVTX ranges, drops, and processes whose stream did not end. Durations are ns;
//! percentages and means are left to whoever prints them ([`super::percent`]).

use std::collections::BTreeMap;

use serde::Serialize;
use wire::{DropSource, Record};

use super::aggregate::{aggregate, Aggregate};
pub use super::aggregate::{DeviceSummary, ProcessSummary};
use super::api_calls::{ApiCallSummary, CallClass, CallTally, RangeCalls, ThreadCalls};
use super::counters::{counters_of, Counters};
use super::durations::Durations;
use super::gpu_activity::{gpu_activity, GpuActivity};
use super::integrity::Integrity;
use super::launch_shape::{launch_shapes, LaunchShape};
use super::names::{demangle, launch_api_name};
use super::nvtx::{RangeStats, RangeTotals};
use super::short_name::short_name;
use super::telemetry::DeviceTelemetry;

/// Everything `gpuprof report` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The sessions read together, by directory, when there are several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sessions: Vec<String>,
    /// In order of first appearance in the session.
    pub processes: Vec<ProcessSummary>,
    /// Kernel executions in the session.
    pub kernel_count: u64,
    /// Sum of all kernel durations: the "GPU time" percentages refer to.
    pub kernel_ns: u64,
    /// By total time, longest first (ties by name).
    pub kernels: Vec<KernelStats>,
    /// Copies by kind (in `CUpti_ActivityMemcpyKind` order), then sets.
    pub transfers: Vec<TransferStats>,
    /// See [`range_totals`].
    pub ranges: Vec<RangeStats>,
    /// NVTX range ends whose start was never seen.
    pub unmatched_range_ends: u64,
    /// One row per source (CUPTI, channel, ring), zero or not.
    pub dropped: Vec<DroppedStats>,
    /// Processes whose stream has no `End` record, by pid.
    pub unfinished: Vec<u32>,
    /// See [`counters`].
    pub counters: Counters,
    /// What the report leaves out (damaged parts of the session file, impossible
    /// records): empty from [`summarize`], filled in by whoever read the file.
    pub integrity: Integrity,
    /// NVML readings per device over the run.
    pub telemetry: Vec<DeviceTelemetry>,
    /// DCGM's profiling fields per GPU over the run ([`super::gpu_activity`]).
    pub gpu_activity: Vec<GpuActivity>,
    /// Per kernel configuration: occupancy, waves and what they cost
    /// ([`super::launch_shape`]).
    #[serde(skip)]
    pub launch_shapes: Vec<LaunchShape>,
    /// CPU time in the CUDA calls traced one by one ([`super::api_calls`]).
    #[serde(skip_serializing_if = "ApiCallSummary::is_empty")]
    pub api_calls: ApiCallSummary,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelStats {
    /// Demangled (see [`demangle`]).
    pub name: String,
    /// The demangled name folded ([`short_name`]); when two kernels fold to the same
    /// short name, each gets " #1", " #2", ... in the kernels' order.
    pub short_name: String,
    /// As recorded.
    pub mangled: String,
    pub calls: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// See [`Durations::median`]; exact unless `median_exact` is false.
    pub median_ns: u64,
    pub median_exact: bool,
    /// Sample standard deviation of the durations, ns.
    pub stddev_ns: f64,
    /// The most common launch configuration (ties: the smallest).
    pub grid: [i32; 3],
    pub block: [i32; 3],
    /// Every launch configuration, most launches first (ties: the smallest).
    pub configs: Vec<ConfigStats>,
}

/// The launches of one kernel with one launch configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigStats {
    pub grid: [i32; 3],
    pub block: [i32; 3],
    pub calls: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub median_ns: u64,
    pub median_exact: bool,
    pub stddev_ns: f64,
}

/// Min, max and the spread of a set of launches.
struct Spread {
    min: u64,
    max: u64,
    durations: Durations,
}

impl Spread {
    fn new() -> Spread {
        Spread {
            min: u64::MAX,
            max: 0,
            durations: Durations::default(),
        }
    }

    fn add(&mut self, c: &super::classes::Class) {
        self.min = self.min.min(c.min_ns);
        self.max = self.max.max(c.max_ns);
        self.durations.merge(&c.durations);
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TransferStats {
    /// `HtoD`, `DtoH`, ... for copies; `memset` for sets.
    pub kind: String,
    pub count: u64,
    pub bytes: u64,
    pub total_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DroppedStats {
    /// `cupti`, `channel` or `ring`.
    pub source: String,
    pub records: u64,
}

/// Builds the whole summary of `records`, read as one part.
pub fn summarize(records: &[(u32, Record)]) -> Summary {
    summarize_aggregate(&aggregate(records))
}

/// Per range name, the NVTX totals of `records` read as one part.
pub fn range_stats(records: &[(u32, Record)]) -> RangeTotals {
    range_totals(&aggregate(records))
}

/// Per `(domain, name)`, the totals of the ranges (see [`super::nvtx`] for the rules).
pub fn range_totals(a: &Aggregate) -> RangeTotals {
    let r = &a.ranges;
    let open = r.open_counts();
    let mut stats: Vec<RangeStats> = r
        .names
        .iter()
        .zip(&r.totals)
        .zip(open)
        .map(|(((domain, name), t), open)| RangeStats {
            domain: domain.clone(),
            name: name.clone(),
            count: t.count,
            open,
            wall_ns: t.wall_ns,
            kernels: t.classes.values().map(|c| c.calls).sum(),
            gpu_ns: t
                .classes
                .values()
                .fold(0u64, |sum, c| sum.saturating_add(c.ns)),
        })
        .collect();
    // By wall time, longest first; ties by (domain, name).
    stats.sort_by(|a, b| {
        b.wall_ns
            .cmp(&a.wall_ns)
            .then_with(|| (&a.domain, &a.name).cmp(&(&b.domain, &b.name)))
    });
    RangeTotals {
        stats,
        unmatched_ends: r.unmatched_ends,
    }
}

/// Builds the whole summary from a session's aggregate.
pub fn summarize_aggregate(a: &Aggregate) -> Summary {
    type Config = ([i32; 3], [i32; 3]);
    struct Acc {
        calls: u64,
        total: u64,
        all: Spread,
        /// (grid, block) -> (calls, total ns, spread).
        configs: BTreeMap<Config, (u64, u64, Spread)>,
    }
    let mut kernels: BTreeMap<&str, Acc> = BTreeMap::new();
    for c in &a.classes.list {
        let acc = kernels.entry(c.mangled.as_str()).or_insert(Acc {
            calls: 0,
            total: 0,
            all: Spread::new(),
            configs: BTreeMap::new(),
        });
        acc.calls += c.tally.calls;
        acc.total = acc.total.saturating_add(c.tally.ns);
        acc.all.add(c);
        let cfg = acc
            .configs
            .entry((c.key.grid, c.key.block))
            .or_insert_with(|| (0, 0, Spread::new()));
        cfg.0 += c.tally.calls;
        cfg.1 = cfg.1.saturating_add(c.tally.ns);
        cfg.2.add(c);
    }
    let mut kernels: Vec<KernelStats> = kernels
        .into_iter()
        .map(|(mangled, acc)| {
            let mut configs: Vec<ConfigStats> = acc
                .configs
                .into_iter()
                .map(|((grid, block), (calls, total_ns, sp))| ConfigStats {
                    grid,
                    block,
                    calls,
                    total_ns,
                    min_ns: sp.min,
                    max_ns: sp.max,
                    median_ns: sp.durations.median(),
                    median_exact: sp.durations.median_exact(),
                    stddev_ns: sp.durations.stddev(),
                })
                .collect();
            // Most launches first; ties: the smallest configuration (the map's order).
            configs.sort_by_key(|c| std::cmp::Reverse(c.calls));
            let name = if mangled.is_empty() {
                "(unnamed)".to_string()
            } else {
                demangle(mangled)
            };
            KernelStats {
                short_name: short_name(&name),
                name,
                mangled: mangled.to_string(),
                calls: acc.calls,
                total_ns: acc.total,
                min_ns: acc.all.min,
                max_ns: acc.all.max,
                median_ns: acc.all.durations.median(),
                median_exact: acc.all.durations.median_exact(),
                stddev_ns: acc.all.durations.stddev(),
                grid: configs[0].grid,
                block: configs[0].block,
                configs,
            }
        })
        .collect();
    kernels.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.mangled.cmp(&b.mangled))
    });
    number_clashing_short_names(&mut kernels);

    let transfers = a
        .transfers
        .iter()
        .map(|(&(set, kind), &(count, bytes, total_ns))| TransferStats {
            kind: if set {
                "memset".to_string()
            } else {
                super::names::copy_kind_name(kind).to_string()
            },
            count,
            bytes,
            total_ns,
        })
        .collect();

    let dropped = DropSource::ALL
        .into_iter()
        .map(|source| DroppedStats {
            source: source.name().to_string(),
            records: a.dropped[source.index()],
        })
        .collect();

    let unfinished = {
        let mut v: Vec<u32> = a
            .processes
            .iter()
            .filter(|p| !p.finished)
            .map(|p| p.pid)
            .collect();
        v.sort_unstable();
        v
    };
    let ranges = range_totals(a);

    Summary {
        sessions: if a.sessions.len() > 1 {
            a.sessions.clone()
        } else {
            Vec::new()
        },
        processes: a.processes.clone(),
        kernel_count: a.kernel_count,
        kernel_ns: a.kernel_ns,
        kernels,
        transfers,
        ranges: ranges.stats,
        unmatched_range_ends: ranges.unmatched_ends,
        dropped,
        unfinished,
        counters: counters_of(a),
        integrity: Integrity {
            impossible: a.impossible_records(),
            ..Integrity::default()
        },
        telemetry: a.telemetry.clone(),
        gpu_activity: gpu_activity(a),
        launch_shapes: launch_shapes(a),
        api_calls: api_call_summary(a),
    }
}

/// The traced calls other than launches placed in aggregate `a`
/// ([`super::api_calls`]), as the report shows them.
fn api_call_summary(a: &Aggregate) -> ApiCallSummary {
    let t = &a.api_calls;
    let mut by_thread: Vec<ThreadCalls> = t
        .by_thread
        .iter()
        .map(|((key, thread, function), tally)| ThreadCalls {
            pid: a.pid(*key),
            session: a.session(*key),
            thread_id: *thread,
            function: function.clone(),
            class: CallClass::of(function),
            traced: true,
            tally: *tally,
        })
        .collect();
    for (&(key, thread, name), &(calls, total_ns)) in &t.counted {
        let function = a
            .string(key, name)
            .map_or_else(|| format!("#{name}"), str::to_string);
        by_thread.push(ThreadCalls {
            pid: a.pid(key),
            session: a.session(key),
            thread_id: thread,
            class: CallClass::of(&function),
            function,
            traced: false,
            tally: CallTally {
                calls,
                total_ns,
                ..CallTally::default()
            },
        });
    }
    for (&(key, thread, cbid, runtime), tally) in &t.launches {
        let function = launch_api_name(cbid, runtime);
        by_thread.push(ThreadCalls {
            pid: a.pid(key),
            session: a.session(key),
            thread_id: thread,
            class: CallClass::Launch,
            function,
            traced: true,
            tally: *tally,
        });
    }
    by_thread.sort_by(|x, y| {
        (x.session, x.pid, x.thread_id)
            .cmp(&(y.session, y.pid, y.thread_id))
            .then(y.tally.total_ns.cmp(&x.tally.total_ns))
            .then_with(|| x.function.cmp(&y.function))
    });
    let range_row = |name: usize, function: String, class: CallClass, tally: CallTally| {
        let (domain, range) = a.ranges.names[name].clone();
        RangeCalls {
            domain,
            range,
            range_wall_ns: a.ranges.totals[name].wall_ns,
            function,
            class,
            tally,
        }
    };
    let mut by_range: Vec<RangeCalls> = t
        .by_range
        .iter()
        .map(|((name, function), tally)| {
            range_row(*name, function.clone(), CallClass::of(function), *tally)
        })
        .collect();
    for (&(name, cbid, runtime), tally) in &t.launch_ranges {
        let function = launch_api_name(cbid, runtime);
        by_range.push(range_row(name, function, CallClass::Launch, *tally));
    }
    by_range.sort_by(|x, y| {
        y.range_wall_ns
            .cmp(&x.range_wall_ns)
            .then_with(|| (&x.domain, &x.range).cmp(&(&y.domain, &y.range)))
            .then(y.tally.total_ns.cmp(&x.tally.total_ns))
            .then_with(|| x.function.cmp(&y.function))
    });
    ApiCallSummary {
        by_thread,
        by_range,
    }
}

/// Gives kernels whose short names are the same (two instantiations of one template)
/// " #1", " #2", ... in the kernels' order, so no two rows print the same name.
fn number_clashing_short_names(kernels: &mut [KernelStats]) {
    let mut count: std::collections::HashMap<String, usize> = Default::default();
    for k in kernels.iter() {
        *count.entry(k.short_name.clone()).or_default() += 1;
    }
    let mut next: std::collections::HashMap<String, usize> = Default::default();
    for k in kernels.iter_mut() {
        if count[&k.short_name] > 1 {
            let n = next.entry(k.short_name.clone()).or_default();
            *n += 1;
            k.short_name = format!("{} #{n}", k.short_name);
        }
    }
}
