//! The analysis on hand-built record lists: exact summaries, aggregation against a
//! simple model, NVTX pairing and attribution, the trace's events and flows.

use std::collections::BTreeMap;

use crate::output::trace::chrome_trace;
use wire::testing::{
    graph_kernel, k, kernel, launch, marker, memcpy, memset, on, process, string, Lcg,
};
use wire::{marker_flags, DropSource, Dropped, End, Kernel, Record};

use super::*;

/// Two processes: the first with two kernels (one in two configurations), copies, a
/// set, drops and its end; the second with the same kernel name under another string
/// id, and no end.
fn small_session() -> Vec<(u32, Record)> {
    let mut records = on(
        10,
        vec![
            process(10, "./app --fast"),
            string(1, "_Z4gemmPfi"),
            string(2, "softmax"),
            k(1, 1, 1000, 4000),
            k(2, 2, 5000, 6000),
            Record::Kernel(Kernel {
                grid: [4, 1, 1],
                ..kernel(1, 3, 7000, 8000)
            }),
            Record::Kernel(Kernel {
                grid: [4, 1, 1],
                ..kernel(1, 4, 9000, 9500)
            }),
            memcpy(1, 4096, 100, 300),
            memcpy(2, 1024, 9600, 9700),
            memcpy(1, 4096, 200, 350),
            memset(512, 50, 60),
            Record::Dropped(Dropped {
                source: DropSource::Channel,
                records: 3,
            }),
            Record::End(End { records: 20 }),
        ],
    );
    records.extend(on(11, vec![string(5, "softmax"), k(5, 1, 100, 1100)]));
    records
}

#[test]
fn summary_of_a_small_session() {
    let records = small_session();
    let s = summarize(&records);

    assert_eq!(s.kernel_count, 5);
    assert_eq!(s.kernel_ns, 3000 + 1000 + 1000 + 500 + 1000);
    assert_eq!(
        s.kernels,
        vec![
            KernelStats {
                name: "gemm(float*, int)".into(),
                short_name: "gemm".into(),
                mangled: "_Z4gemmPfi".into(),
                calls: 3,
                total_ns: 4500,
                min_ns: 500,
                max_ns: 3000,
                median_ns: 1000,
                median_exact: true,
                // statistics.stdev([3000, 1000, 500])
                stddev_ns: 1322.8756555322952,
                grid: [4, 1, 1],
                block: [128, 1, 1],
                configs: vec![
                    ConfigStats {
                        grid: [4, 1, 1],
                        block: [128, 1, 1],
                        calls: 2,
                        total_ns: 1500,
                        min_ns: 500,
                        max_ns: 1000,
                        median_ns: 750,
                        median_exact: true,
                        // statistics.stdev([1000, 500])
                        stddev_ns: 353.5533905932738,
                    },
                    ConfigStats {
                        grid: [1, 1, 1],
                        block: [128, 1, 1],
                        calls: 1,
                        total_ns: 3000,
                        min_ns: 3000,
                        max_ns: 3000,
                        median_ns: 3000,
                        median_exact: true,
                        stddev_ns: 0.0,
                    },
                ],
            },
            KernelStats {
                name: "softmax".into(),
                short_name: "softmax".into(),
                mangled: "softmax".into(),
                calls: 2,
                total_ns: 2000,
                min_ns: 1000,
                max_ns: 1000,
                median_ns: 1000,
                median_exact: true,
                stddev_ns: 0.0,
                grid: [1, 1, 1],
                block: [128, 1, 1],
                configs: vec![ConfigStats {
                    grid: [1, 1, 1],
                    block: [128, 1, 1],
                    calls: 2,
                    total_ns: 2000,
                    min_ns: 1000,
                    max_ns: 1000,
                    median_ns: 1000,
                    median_exact: true,
                    stddev_ns: 0.0,
                }],
            },
        ]
    );
    assert_eq!(
        s.transfers,
        vec![
            TransferStats {
                kind: "HtoD".into(),
                count: 2,
                bytes: 8192,
                total_ns: 350
            },
            TransferStats {
                kind: "DtoH".into(),
                count: 1,
                bytes: 1024,
                total_ns: 100
            },
            TransferStats {
                kind: "memset".into(),
                count: 1,
                bytes: 512,
                total_ns: 10
            },
        ]
    );
    assert_eq!(
        s.dropped,
        vec![
            DroppedStats {
                source: "cupti".into(),
                records: 0
            },
            DroppedStats {
                source: "channel".into(),
                records: 3
            },
            DroppedStats {
                source: "ring".into(),
                records: 0
            },
            DroppedStats {
                source: "undelivered".into(),
                records: 0
            },
            DroppedStats {
                source: "unwritten".into(),
                records: 0
            },
            DroppedStats {
                source: "unsaved".into(),
                records: 0
            },
        ]
    );
    assert_eq!(s.unfinished, vec![11]);
    assert_eq!(s.processes.len(), 2);
    let p = &s.processes[0];
    assert_eq!(
        (p.pid, p.known, p.finished, p.kernels, p.kernel_ns),
        (10, true, true, 4, 5500)
    );
    assert_eq!(p.command, vec!["./app", "--fast"]);
    let q = &s.processes[1];
    assert_eq!(
        (q.pid, q.known, q.finished, q.kernels, q.kernel_ns),
        (11, false, false, 1, 1000)
    );
}

#[test]
fn empty_session_still_lists_every_drop_source() {
    let s = summarize(&[]);
    assert_eq!(s.kernel_count, 0);
    assert!(s.kernels.is_empty() && s.processes.is_empty() && s.ranges.is_empty());
    assert_eq!(
        s.dropped
            .iter()
            .map(|d| (d.source.as_str(), d.records))
            .collect::<Vec<_>>(),
        [
            ("cupti", 0),
            ("channel", 0),
            ("ring", 0),
            ("undelivered", 0),
            ("unwritten", 0),
            ("unsaved", 0)
        ]
    );
}

/// Found by fuzzing (collector/tests/fuzz_records.rs): durations, bytes and drop
/// counts that add up past `u64::MAX` give totals that stop at `u64::MAX` rather than
/// overflow (a panic in a debug build, a small number in a release build). Each
/// record is possible (a kernel of at most a year); 600 of them are not summable.
#[test]
fn totals_saturate_instead_of_wrapping() {
    use super::integrity::MAX_SPAN_NS;
    const S: u32 = marker_flags::START;
    const E: u32 = marker_flags::END;
    let n = 600u64;
    assert!(n as u128 * MAX_SPAN_NS as u128 > u64::MAX as u128);
    let mut list = vec![string(1, "k"), string(2, "r"), marker(S, 1, 7, 0, 2, 0)];
    for i in 0..n as u32 {
        list.push(launch(i + 1, 7, 1 + i as u64, 2 + i as u64));
        list.push(k(1, i + 1, i as u64, i as u64 + MAX_SPAN_NS));
    }
    list.push(marker(E, 1, 7, 10_000, 0, 0));
    list.push(memcpy(1, u64::MAX, 0, 10));
    list.push(memcpy(1, 2, 0, 10));
    let mut records = on(1, list);
    for records_lost in [u64::MAX, 2] {
        records.push((
            1,
            Record::Dropped(Dropped {
                source: DropSource::Ring,
                records: records_lost,
            }),
        ));
    }
    let s = summarize(&records);
    assert_eq!((s.kernel_count, s.kernel_ns), (n, u64::MAX));
    assert_eq!(s.processes[0].kernel_ns, u64::MAX);
    assert_eq!((s.kernels[0].calls, s.kernels[0].total_ns), (n, u64::MAX));
    assert_eq!(
        (
            s.transfers[0].count,
            s.transfers[0].bytes,
            s.transfers[0].total_ns
        ),
        (2, u64::MAX, 20)
    );
    assert_eq!(s.dropped[2].records, u64::MAX);
    assert_eq!((s.ranges[0].kernels, s.ranges[0].gpu_ns), (n, u64::MAX));
    let e = crate::analysis::roofline::efficiency::efficiency(&records, &Default::default());
    assert_eq!((e.kernels[0].calls, e.kernels[0].gpu_ns), (n, u64::MAX));
    assert_eq!(e.run.gpu_ns, u64::MAX);
}

#[test]
fn kernel_aggregation_matches_a_simple_model() {
    let mut rng = Lcg(42);
    let mut records = Vec::new();
    for pid in [100u32, 200, 300] {
        for (id, name) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            // Per process, the ids of the names differ.
            records.push((pid, string(id as u32 + 1 + pid, name)));
        }
    }
    for i in 0..5000u32 {
        let pid = [100u32, 200, 300][rng.next(3) as usize];
        let name = rng.next(5) as u32 + 1 + pid;
        let start = rng.next(1_000_000);
        let dur = rng.next(10_000);
        let grid = [rng.next(3) as i32 + 1, 1, 1];
        records.push((
            pid,
            Record::Kernel(Kernel {
                grid,
                ..kernel(name, i, start, start + dur)
            }),
        ));
    }

    // The model: the obvious loops over a BTreeMap.
    /// calls, total, min, max, launches per grid
    type Entry = (u64, u64, u64, u64, BTreeMap<[i32; 3], u64>);
    let mut model: BTreeMap<String, Entry> = BTreeMap::new();
    for (pid, r) in &records {
        if let Record::Kernel(k) = r {
            let name = ["a", "b", "c", "d", "e"][(k.name - 1 - pid) as usize].to_string();
            let d = k.end_ns - k.start_ns;
            let e = model
                .entry(name)
                .or_insert((0, 0, u64::MAX, 0, BTreeMap::new()));
            e.0 += 1;
            e.1 += d;
            e.2 = e.2.min(d);
            e.3 = e.3.max(d);
            *e.4.entry(k.grid).or_default() += 1;
        }
    }
    let s = summarize(&records);
    assert_eq!(s.kernel_count, 5000);
    assert_eq!(s.kernel_ns, model.values().map(|e| e.1).sum::<u64>());
    assert_eq!(s.kernels.len(), 5);
    for w in s.kernels.windows(2) {
        assert!(w[0].total_ns >= w[1].total_ns);
    }
    for ks in &s.kernels {
        let e = &model[&ks.name];
        let most =
            e.4.iter()
                .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                .unwrap()
                .0;
        assert_eq!(
            (ks.calls, ks.total_ns, ks.min_ns, ks.max_ns, ks.grid),
            (e.0, e.1, e.2, e.3, *most),
            "{}",
            ks.name
        );
    }
    let pct: f64 = s
        .kernels
        .iter()
        .map(|k| percent(k.total_ns, s.kernel_ns))
        .sum();
    assert!((pct - 100.0).abs() < 0.05, "{pct}");
}

#[test]
fn most_common_launch_configuration_ties_go_to_the_smallest() {
    let records = on(
        1,
        vec![
            string(1, "k"),
            Record::Kernel(Kernel {
                grid: [8, 1, 1],
                ..kernel(1, 1, 0, 1)
            }),
            Record::Kernel(Kernel {
                grid: [2, 1, 1],
                ..kernel(1, 2, 0, 1)
            }),
        ],
    );
    assert_eq!(summarize(&records).kernels[0].grid, [2, 1, 1]);
}

const S: u32 = marker_flags::START;
const E: u32 = marker_flags::END;

#[test]
fn pairs_nested_and_unmatched_ranges() {
    let records = on(
        1,
        vec![
            string(1, "outer"),
            string(2, "inner"),
            string(3, "phase"),
            string(4, "mydomain"),
            marker(S, 10, 77, 100, 1, 0),
            marker(S, 11, 77, 200, 2, 0),
            marker(E, 11, 77, 300, 0, 0),
            marker(E, 10, 77, 400, 0, 0),
            marker(S, 12, 0, 150, 3, 4),
            marker(E, 99, 77, 500, 0, 0),
            marker(marker_flags::INSTANTANEOUS, 13, 77, 160, 1, 0),
            marker(E, 12, 0, 450, 0, 0),
            marker(S, 14, 77, 600, 2, 0),
        ],
    );
    let r = pair_ranges(&records);
    assert_eq!(r.unmatched_ends, 1);
    type Row<'a> = (u32, RangeKind, &'a str, &'a str, u64, Option<u64>);
    let got: Vec<Row> = r
        .ranges
        .iter()
        .map(|x| {
            (
                x.id,
                x.kind,
                x.name.as_str(),
                x.domain.as_str(),
                x.start_ns,
                x.end_ns,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (10, RangeKind::PushPop, "outer", "", 100, Some(400)),
            (11, RangeKind::PushPop, "inner", "", 200, Some(300)),
            (12, RangeKind::StartEnd, "phase", "mydomain", 150, Some(450)),
            (14, RangeKind::PushPop, "inner", "", 600, None),
        ]
    );
}

#[test]
fn range_ids_are_per_process() {
    let mut records = on(1, vec![string(1, "a"), marker(S, 5, 9, 100, 1, 0)]);
    records.extend(on(2, vec![marker(E, 5, 9, 200, 0, 0)]));
    records.push((1, marker(E, 5, 9, 300, 0, 0)));
    let r = pair_ranges(&records);
    assert_eq!(r.unmatched_ends, 1);
    assert_eq!(r.ranges[0].end_ns, Some(300));
}

#[test]
fn kernels_are_attributed_by_the_documented_rules() {
    const T: u64 = 77;
    let mut records = on(
        1,
        vec![
            string(1, "decode"),
            string(2, "layer"),
            string(3, "prefill"),
            string(9, "kern"),
            // push/pop "decode" [1000, 5000) on thread T, with "layer" nested twice
            // (recursively named) inside it.
            marker(S, 1, T, 1000, 1, 0),
            marker(S, 2, T, 1100, 2, 0),
            marker(S, 3, T, 1200, 2, 0),
            // Launched inside both "layer"s, runs after every range ended.
            launch(100, T, 1300, 1310),
            k(9, 100, 9000, 9100),
            marker(E, 3, T, 1400, 0, 0),
            marker(E, 2, T, 1500, 0, 0),
            // A graph launch inside "decode": both of its kernels (each of a node of
            // the graph, as CUPTI reports them) count.
            launch(101, T, 2000, 2010),
            graph_kernel(9, 101, 1, 2100, 2200),
            graph_kernel(9, 101, 2, 2200, 2400),
            // Another thread's launch inside the time of "decode": not decode's.
            launch(102, 88, 2500, 2510),
            k(9, 102, 2600, 2700),
            // A kernel without a Launch record: no push/pop range gets it.
            k(9, 103, 3000, 3050),
            marker(E, 1, T, 5000, 0, 0),
            // start/end "prefill" [2550, 3100): by GPU start time, any thread.
            marker(S, 4, 0, 2550, 3, 0),
            marker(E, 4, 0, 3100, 0, 0),
            // Launched inside "decode"'s time but after its end on the GPU side: still
            // counted for decode (launch time decides), ends exactly at the boundary.
            launch(104, T, 4999, 5001),
            k(9, 104, 6000, 6001),
            // Launched exactly at the end: not inside [start, end).
            launch(105, T, 5000, 5001),
            k(9, 105, 7000, 7010),
        ],
    );
    // Another process: same thread id, same marker id, same times: never mixed in.
    records.extend(on(
        2,
        vec![
            string(1, "decode"),
            launch(100, T, 1300, 1310),
            k(1, 100, 1400, 2400),
        ],
    ));
    let t = range_stats(&records);
    assert_eq!(t.unmatched_ends, 0);
    let got: Vec<(&str, u64, u64, u64, u64, u64)> = t
        .stats
        .iter()
        .map(|r| {
            (
                r.name.as_str(),
                r.count,
                r.open,
                r.wall_ns,
                r.kernels,
                r.gpu_ns,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("decode", 1, 0, 4000, 4, 100 + 100 + 200 + 1),
            // Two closed "layer" ranges, the same kernel in both: counted once.
            ("layer", 2, 0, 400 + 200, 1, 100),
            ("prefill", 1, 0, 550, 2, 100 + 50),
        ]
    );
}

#[test]
fn open_ranges_have_no_time_and_no_kernels() {
    let records = on(
        1,
        vec![
            string(1, "r"),
            marker(S, 1, 0, 100, 1, 0),
            k(1, 1, 200, 300),
        ],
    );
    let t = range_stats(&records);
    assert_eq!(
        t.stats,
        vec![RangeStats {
            domain: String::new(),
            name: "r".into(),
            count: 0,
            open: 1,
            wall_ns: 0,
            kernels: 0,
            gpu_ns: 0
        }]
    );
}

#[test]
fn trace_events_tracks_and_flows() {
    const T: u64 = 123456789;
    let records = on(
        5,
        vec![
            process(5, "./app"),
            string(1, "_Z4gemmPfi"),
            string(2, "step"),
            marker(S, 1, T, 1000, 2, 0),
            launch(1, T, 1100, 1200),
            launch(2, T, 1300, 1400),
            k(1, 1, 2000, 3000),
            Record::Kernel(Kernel {
                stream_id: 9,
                ..kernel(1, 2, 3000, 3500)
            }),
            k(1, 3, 4000, 4500),
            memcpy(1, 64, 900, 950),
            marker(E, 1, T, 5000, 0, 0),
            marker(S, 2, 0, 1500, 2, 0),
            marker(E, 2, 0, 1600, 0, 0),
        ],
    );
    let v = chrome_trace(&records);
    let events = v["traceEvents"].as_array().unwrap();
    let count = |ph: &str, cat: Option<&str>| {
        events
            .iter()
            .filter(|e| e["ph"] == ph && cat.is_none_or(|c| e["cat"] == c))
            .count()
    };
    assert_eq!(count("X", Some("kernel")), 3);
    assert_eq!(count("X", Some("memcpy")), 1);
    assert_eq!(count("X", Some("cuda_api")), 2);
    assert_eq!(count("X", Some("nvtx")), 1);
    assert_eq!((count("b", Some("nvtx")), count("e", Some("nvtx"))), (1, 1));
    assert_eq!((count("s", None), count("f", None)), (2, 2));
    // One process name, three tracks: the thread, stream 7, stream 9.
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "./app (pid 5)",
            "thread 123456789",
            "GPU 0 stream 7",
            "GPU 0 stream 9"
        ]
    );
    // Times are µs from the first event (the memcpy at 900 ns).
    let gemm = events.iter().find(|e| e["cat"] == "kernel").unwrap();
    assert_eq!(gemm["name"], "gemm(float*, int)");
    assert_eq!(
        (gemm["ts"].as_f64(), gemm["dur"].as_f64()),
        (Some(1.1), Some(1.0))
    );
    assert_eq!(
        (
            gemm["tid"].as_u64(),
            gemm["args"]["correlation_id"].as_u64()
        ),
        (Some(2), Some(1))
    );
    // Each flow: s on the launching thread (mid-call), f on the kernel's stream (mid-kernel).
    let flow = |ph: &str, id: u64| {
        events
            .iter()
            .find(|e| e["ph"] == ph && e["id"] == id)
            .unwrap()
    };
    assert_eq!(
        (flow("s", 1)["tid"].as_u64(), flow("s", 1)["ts"].as_f64()),
        (Some(1), Some(0.25))
    );
    assert_eq!(
        (flow("f", 1)["tid"].as_u64(), flow("f", 1)["ts"].as_f64()),
        (Some(2), Some(1.6))
    );
    assert_eq!(
        (flow("f", 2)["tid"].as_u64(), flow("f", 2)["bp"].as_str()),
        (Some(3), Some("e"))
    );
}
