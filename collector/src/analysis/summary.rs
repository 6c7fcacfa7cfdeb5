//! The report's tables as raw numbers: processes, kernels by name, copies and sets by
//! kind, NVTX ranges, drops, and processes whose stream did not end. Durations are ns;
//! percentages and means are left to whoever prints them ([`super::percent`]).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use wire::{DropSource, Record};

use super::counters::{counters, Counters};
use super::integrity::Integrity;
use super::names::{demangle, lookup, strings};
use super::nvtx::{range_stats, RangeStats};

/// Everything `gpuprof report` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
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
    /// See [`range_stats`].
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
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessSummary {
    pub pid: u32,
    /// Whether the process's `Process` record was seen (the fields below are empty
    /// without it).
    pub known: bool,
    pub command: Vec<String>,
    pub host: String,
    pub cupti_api_version: u32,
    pub cupti_layouts: String,
    pub cupti_path: String,
    pub devices: Vec<DeviceSummary>,
    pub kernels: u64,
    pub kernel_ns: u64,
    /// An `End` record was seen.
    pub finished: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceSummary {
    pub id: u32,
    pub name: String,
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelStats {
    /// Demangled (see [`demangle`]).
    pub name: String,
    /// As recorded.
    pub mangled: String,
    pub calls: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// The most common launch configuration (ties: the smallest).
    pub grid: [i32; 3],
    pub block: [i32; 3],
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

/// The name a drop source is reported under.
pub fn drop_source_name(source: DropSource) -> &'static str {
    match source {
        DropSource::Cupti => "cupti",
        DropSource::Channel => "channel",
        DropSource::Ring => "ring",
        DropSource::Undelivered => "undelivered",
        DropSource::Unwritten => "unwritten",
        DropSource::Unsaved => "unsaved",
    }
}

/// A kernel's duration; 0 when its end precedes its start.
fn duration(start: u64, end: u64) -> u64 {
    end.saturating_sub(start)
}

/// Totals saturate: records that sum past `u64::MAX` (which the screen of
/// [`super::integrity`] leaves out of a loaded session) never wrap to a small number.
fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

/// Builds the whole summary.
pub fn summarize(records: &[(u32, Record)]) -> Summary {
    let strings = strings(records);

    let mut processes: Vec<ProcessSummary> = Vec::new();
    let mut index: HashMap<u32, usize> = HashMap::new();
    let mut proc_of = |pid: u32, processes: &mut Vec<ProcessSummary>| -> usize {
        *index.entry(pid).or_insert_with(|| {
            processes.push(ProcessSummary {
                pid,
                known: false,
                command: Vec::new(),
                host: String::new(),
                cupti_api_version: 0,
                cupti_layouts: String::new(),
                cupti_path: String::new(),
                devices: Vec::new(),
                kernels: 0,
                kernel_ns: 0,
                finished: false,
            });
            processes.len() - 1
        })
    };

    struct Acc {
        calls: u64,
        total: u64,
        min: u64,
        max: u64,
        configs: HashMap<([i32; 3], [i32; 3]), u64>,
    }
    let mut kernels: HashMap<&str, Acc> = HashMap::new();
    // (is a set, copy kind) -> (count, bytes, ns)
    let mut transfers: BTreeMap<(bool, u8), (u64, u64, u64)> = BTreeMap::new();
    let mut dropped: BTreeMap<u8, u64> = BTreeMap::new();
    let mut kernel_count = 0;
    let mut kernel_ns = 0;

    for (pid, record) in records {
        let p = proc_of(*pid, &mut processes);
        match record {
            Record::Process(info) => {
                let s = &mut processes[p];
                s.known = true;
                s.command = info.command.clone();
                s.host = info.host.clone();
                s.cupti_api_version = info.cupti_api_version;
                s.cupti_layouts = info.cupti_layouts.clone();
                s.cupti_path = info.cupti_path.clone();
            }
            Record::Device(d) => {
                let devices = &mut processes[p].devices;
                if !devices.iter().any(|x| x.id == d.id) {
                    devices.push(DeviceSummary {
                        id: d.id,
                        name: d.name.clone(),
                        compute_capability: d.compute_capability,
                        sm_count: d.sm_count,
                    });
                }
            }
            Record::Kernel(k) => {
                let ns = duration(k.start_ns, k.end_ns);
                kernel_count += 1;
                kernel_ns = add(kernel_ns, ns);
                processes[p].kernels += 1;
                processes[p].kernel_ns = add(processes[p].kernel_ns, ns);
                let name = lookup(&strings, *pid, k.name).unwrap_or("");
                let acc = kernels.entry(name).or_insert(Acc {
                    calls: 0,
                    total: 0,
                    min: u64::MAX,
                    max: 0,
                    configs: HashMap::new(),
                });
                acc.calls += 1;
                acc.total = add(acc.total, ns);
                acc.min = acc.min.min(ns);
                acc.max = acc.max.max(ns);
                *acc.configs.entry((k.grid, k.block)).or_default() += 1;
            }
            Record::Memcpy(m) => {
                let t = transfers.entry((false, m.copy_kind)).or_default();
                t.0 += 1;
                t.1 = add(t.1, m.bytes);
                t.2 = add(t.2, duration(m.start_ns, m.end_ns));
            }
            Record::Memset(m) => {
                let t = transfers.entry((true, 0)).or_default();
                t.0 += 1;
                t.1 = add(t.1, m.bytes);
                t.2 = add(t.2, duration(m.start_ns, m.end_ns));
            }
            Record::Dropped(d) => {
                let key = match d.source {
                    DropSource::Cupti => 0,
                    DropSource::Channel => 1,
                    DropSource::Ring => 2,
                    DropSource::Undelivered => 3,
                    DropSource::Unwritten => 4,
                    DropSource::Unsaved => 5,
                };
                let n = dropped.entry(key).or_default();
                *n = add(*n, d.records);
            }
            Record::End(_) => processes[p].finished = true,
            Record::Context(_)
            | Record::String(_)
            | Record::Marker(_)
            | Record::Launch(_)
            | Record::Overhead(_)
            // Counters are summarised by the counters analysis.
            | Record::KernelCounters(_)
            | Record::CounterSample(_)
            | Record::CounterPlan(_)
            | Record::CounterStatus(_)
            // GEMM shapes are joined to kernels by the roofline analysis.
            | Record::Gemm(_)
            | Record::GraphNode(_)
            | Record::GraphNodeCloned(_)
            | Record::GemmStatus(_) => {}
        }
    }

    let mut kernels: Vec<KernelStats> = kernels
        .into_iter()
        .map(|(mangled, acc)| {
            let ((grid, block), _) = acc
                .configs
                .into_iter()
                .max_by(|(ca, na), (cb, nb)| na.cmp(nb).then_with(|| cb.cmp(ca)))
                .expect("a kernel entry has at least one call");
            KernelStats {
                name: if mangled.is_empty() {
                    "(unnamed)".to_string()
                } else {
                    demangle(mangled)
                },
                mangled: mangled.to_string(),
                calls: acc.calls,
                total_ns: acc.total,
                min_ns: acc.min,
                max_ns: acc.max,
                grid,
                block,
            }
        })
        .collect();
    kernels.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.mangled.cmp(&b.mangled))
    });

    let transfers = transfers
        .into_iter()
        .map(|((set, kind), (count, bytes, total_ns))| TransferStats {
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

    let dropped = [
        DropSource::Cupti,
        DropSource::Channel,
        DropSource::Ring,
        DropSource::Undelivered,
        DropSource::Unwritten,
        DropSource::Unsaved,
    ]
    .into_iter()
    .enumerate()
    .map(|(i, source)| DroppedStats {
        source: drop_source_name(source).to_string(),
        records: dropped.get(&(i as u8)).copied().unwrap_or(0),
    })
    .collect();

    let unfinished = {
        let mut v: Vec<u32> = processes
            .iter()
            .filter(|p| !p.finished)
            .map(|p| p.pid)
            .collect();
        v.sort_unstable();
        v
    };
    let ranges = range_stats(records);

    Summary {
        processes,
        kernel_count,
        kernel_ns,
        kernels,
        transfers,
        ranges: ranges.stats,
        unmatched_range_ends: ranges.unmatched_ends,
        dropped,
        unfinished,
        counters: counters(records),
        integrity: Integrity::default(),
    }
}
