//! The session as a Chrome trace event file (JSON object format), which Perfetto and
//! `chrome://tracing` open.
//!
//! Tracks: each profiled process is a trace process (`pid` = its pid). Inside it,
//! every CPU thread seen (NVTX push/pop ranges, launch calls) and every
//! `(device, stream)` the GPU ran work on is a track with a small `tid` (threads first,
//! by thread id, then streams, by device and stream) named by a `thread_name`
//! metadata event; start/end NVTX ranges are async events of the process.
//!
//! Events: kernels, copies and sets as complete events (`X`) on their stream's track;
//! push/pop ranges as `X` on their thread; start/end ranges as `b`/`e` pairs; launch
//! calls as `X` on the launching thread; and for every kernel whose launch was seen, a
//! flow (`s` in the middle of the launch call, `f` with `bp: "e"` in the middle of the
//! kernel; ids numbered from 1). Timestamps and durations are µs (fractional, ns
//! precision) from the earliest timestamp of any event.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Value};
use wire::Record;

use super::names::{copy_kind_name, demangle, launch_api_name, lookup, strings};
use super::nvtx::{pair_ranges, RangeKind};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Track {
    Thread(u64),
    Stream { device: u32, stream: u32 },
}

/// Builds the trace (a JSON object with `traceEvents`).
pub fn chrome_trace(records: &[(u32, Record)]) -> Value {
    let strings = strings(records);
    let ranges = pair_ranges(records);

    // Tracks and the time base.
    let mut tracks: BTreeMap<u32, BTreeSet<Track>> = BTreeMap::new();
    let mut base = u64::MAX;
    let mut launches: HashMap<(u32, u32), &wire::Launch> = HashMap::new();
    for (pid, record) in records {
        let (track, t) = match record {
            Record::Kernel(k) => (
                Some(Track::Stream {
                    device: k.device_id,
                    stream: k.stream_id,
                }),
                k.start_ns,
            ),
            Record::Memcpy(m) => (
                Some(Track::Stream {
                    device: m.device_id,
                    stream: m.stream_id,
                }),
                m.start_ns,
            ),
            Record::Memset(m) => (
                Some(Track::Stream {
                    device: m.device_id,
                    stream: m.stream_id,
                }),
                m.start_ns,
            ),
            Record::Launch(l) => {
                launches.entry((*pid, l.correlation_id)).or_insert(l);
                (Some(Track::Thread(l.thread_id)), l.start_ns)
            }
            Record::Marker(m) => (None, m.timestamp_ns),
            Record::Process(_) => {
                tracks.entry(*pid).or_default();
                continue;
            }
            _ => continue,
        };
        base = base.min(t);
        let set = tracks.entry(*pid).or_default();
        if let Some(track) = track {
            set.insert(track);
        }
    }
    for r in &ranges.ranges {
        if r.kind == RangeKind::PushPop && r.end_ns.is_some() {
            tracks
                .entry(r.pid)
                .or_default()
                .insert(Track::Thread(r.thread_id));
        }
    }
    if base == u64::MAX {
        base = 0;
    }
    let us = |t: u64| t.saturating_sub(base) as f64 / 1000.0;
    let dur = |s: u64, e: u64| e.saturating_sub(s) as f64 / 1000.0;
    let tid_of: HashMap<(u32, Track), usize> = tracks
        .iter()
        .flat_map(|(pid, set)| {
            set.iter()
                .enumerate()
                .map(move |(i, t)| ((*pid, *t), i + 1))
        })
        .collect();
    let tid = |pid: u32, t: Track| tid_of[&(pid, t)];

    let mut events: Vec<Value> = Vec::new();
    let commands: HashMap<u32, String> = records
        .iter()
        .filter_map(|(pid, r)| match r {
            Record::Process(p) => Some((*pid, p.command.join(" "))),
            _ => None,
        })
        .collect();
    for (pid, set) in &tracks {
        let name = match commands.get(pid) {
            Some(c) => format!("{c} (pid {pid})"),
            None => format!("pid {pid}"),
        };
        events.push(json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}));
        for t in set {
            let name = match t {
                Track::Thread(id) => format!("thread {id}"),
                Track::Stream { device, stream } => format!("GPU {device} stream {stream}"),
            };
            events.push(json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid(*pid, *t), "args": {"name": name}}));
        }
    }

    let mut flow_id = 0u64;
    for (pid, record) in records {
        let pid = *pid;
        match record {
            Record::Kernel(k) => {
                let track = tid(pid, Track::Stream { device: k.device_id, stream: k.stream_id });
                let name = lookup(&strings, pid, k.name).map(demangle).unwrap_or_else(|| "(unnamed)".to_string());
                events.push(json!({
                    "ph": "X", "cat": "kernel", "name": name, "pid": pid, "tid": track,
                    "ts": us(k.start_ns), "dur": dur(k.start_ns, k.end_ns),
                    "args": {
                        "correlation_id": k.correlation_id, "device": k.device_id, "context": k.context_id,
                        "stream": k.stream_id, "grid": k.grid, "block": k.block,
                        "registers_per_thread": k.registers_per_thread,
                        "static_shared_memory": k.static_shared_memory,
                        "dynamic_shared_memory": k.dynamic_shared_memory,
                        "graph_id": k.graph_id, "graph_node_id": k.graph_node_id,
                    },
                }));
                if let Some(l) = launches.get(&(pid, k.correlation_id)) {
                    flow_id += 1;
                    let mid = |s: u64, e: u64| s + e.saturating_sub(s) / 2;
                    events.push(json!({
                        "ph": "s", "cat": "launch", "name": "launch", "id": flow_id, "pid": pid,
                        "tid": tid(pid, Track::Thread(l.thread_id)), "ts": us(mid(l.start_ns, l.end_ns)),
                    }));
                    events.push(json!({
                        "ph": "f", "bp": "e", "cat": "launch", "name": "launch", "id": flow_id, "pid": pid,
                        "tid": track, "ts": us(mid(k.start_ns, k.end_ns)),
                    }));
                }
            }
            Record::Memcpy(m) => events.push(json!({
                "ph": "X", "cat": "memcpy", "name": format!("memcpy {}", copy_kind_name(m.copy_kind)),
                "pid": pid, "tid": tid(pid, Track::Stream { device: m.device_id, stream: m.stream_id }),
                "ts": us(m.start_ns), "dur": dur(m.start_ns, m.end_ns),
                "args": {
                    "correlation_id": m.correlation_id, "bytes": m.bytes, "copy_kind": m.copy_kind,
                    "src_kind": m.src_kind, "dst_kind": m.dst_kind, "graph_node_id": m.graph_node_id,
                },
            })),
            Record::Memset(m) => events.push(json!({
                "ph": "X", "cat": "memset", "name": "memset",
                "pid": pid, "tid": tid(pid, Track::Stream { device: m.device_id, stream: m.stream_id }),
                "ts": us(m.start_ns), "dur": dur(m.start_ns, m.end_ns),
                "args": {
                    "correlation_id": m.correlation_id, "bytes": m.bytes, "value": m.value,
                    "memory_kind": m.memory_kind, "graph_node_id": m.graph_node_id,
                },
            })),
            Record::Launch(l) => events.push(json!({
                "ph": "X", "cat": "cuda_api", "name": launch_api_name(l.cbid, l.runtime),
                "pid": pid, "tid": tid(pid, Track::Thread(l.thread_id)),
                "ts": us(l.start_ns), "dur": dur(l.start_ns, l.end_ns),
                "args": {"correlation_id": l.correlation_id, "cbid": l.cbid, "runtime": l.runtime},
            })),
            _ => {}
        }
    }

    let mut async_id = 0u64;
    for r in &ranges.ranges {
        let Some(end) = r.end_ns else { continue };
        let name = if r.name.is_empty() {
            "(unnamed range)".to_string()
        } else {
            r.name.clone()
        };
        let args = json!({"domain": r.domain, "marker_id": r.id});
        match r.kind {
            RangeKind::PushPop => events.push(json!({
                "ph": "X", "cat": "nvtx", "name": name, "pid": r.pid, "tid": tid(r.pid, Track::Thread(r.thread_id)),
                "ts": us(r.start_ns), "dur": dur(r.start_ns, end), "args": args,
            })),
            RangeKind::StartEnd => {
                async_id += 1;
                events.push(json!({
                    "ph": "b", "cat": "nvtx", "name": name, "id": async_id, "pid": r.pid, "tid": 0,
                    "ts": us(r.start_ns), "args": args,
                }));
                events.push(json!({
                    "ph": "e", "cat": "nvtx", "name": name, "id": async_id, "pid": r.pid, "tid": 0, "ts": us(end),
                }));
            }
        }
    }

    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"generator": format!("gpuprof {}", env!("CARGO_PKG_VERSION")), "time_base_ns": base},
    })
}
