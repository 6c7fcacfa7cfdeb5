//! The session read part by part: the same numbers as read whole while a kernel's
//! records are within the join window, bounded memory whatever the length, and what
//! falls outside the window counted.

use wire::testing::{counters, device, gemm, k, launch, marker, on, process, string};
use wire::{marker_flags, CounterPlan, Record};

use super::super::summary::summarize_aggregate;
use super::*;
use crate::analysis::roofline::efficiency::efficiency_of;
use crate::analysis::roofline::peaks::Overrides;
use crate::store::tables::table_of;

const S: u32 = marker_flags::START;
const E: u32 = marker_flags::END;
const GEMM: u32 = 1;
const NORM: u32 = 2;
const DECODE: u32 = 3;
const READ: u32 = 4;
const WRITE: u32 = 5;
const THREAD: u64 = 7;

/// The records of `steps` decode steps of one process, in the order a session gets
/// them: each step's launches and GEMM records as the program calls, its kernels a
/// step later (activity buffers), their counters a step after that; one "decode"
/// push/pop range around all steps.
fn serving(steps: u32) -> Vec<(u32, Record)> {
    let mut out = vec![
        process(1, "serve"),
        Record::Device(device("NVIDIA H100 80GB HBM3", (9, 0), 132, 1_980_000)),
        string(GEMM, "gemm_kernel"),
        string(NORM, "rms_norm"),
        string(DECODE, "decode"),
        string(READ, "dram__bytes_read.sum"),
        string(WRITE, "dram__bytes_write.sum"),
        Record::CounterPlan(Box::new(CounterPlan {
            device_id: 0,
            chip: "GH100".into(),
            mode: "kernel".into(),
            groups: vec![vec![READ, WRITE]],
            policy: "every launch".into(),
        })),
        marker(S, 1, THREAD, 0, DECODE, 0),
    ];
    let mut kernels: Vec<Record> = Vec::new();
    let mut counted: Vec<Record> = Vec::new();
    for step in 0..steps {
        let t = 1_000 + step as u64 * 1_000;
        let (g, n) = (2 * step + 1, 2 * step + 2);
        out.push(launch(g, THREAD, t, t + 10));
        out.push(gemm(g, step as u64 + 1, 0, 64, 4096, 4096));
        out.push(launch(n, THREAD, t + 20, t + 30));
        out.append(&mut counted);
        for r in kernels.drain(..) {
            if let Record::Kernel(kr) = &r {
                if kr.correlation_id % 4 == 1 {
                    counted.push(counters(
                        kr.correlation_id,
                        0,
                        &[(READ, 1000.0 + step as f64), (WRITE, 500.0)],
                    ));
                }
            }
            out.push(r);
        }
        kernels.push(k(GEMM, g, t + 100, t + 400 + (step % 7) as u64));
        kernels.push(k(NORM, n, t + 400, t + 450));
    }
    out.append(&mut kernels);
    out.append(&mut counted);
    let end = 1_000 + steps as u64 * 1_000 + 10_000;
    out.push(marker(E, 1, THREAD, end, 0, 0));
    on(1, out)
}

/// `records` cut into parts of `size`, each in the session's table order.
fn parts(records: &[(u32, Record)], size: usize) -> Vec<Vec<(u32, Record)>> {
    records
        .chunks(size)
        .map(|c| {
            let mut p = c.to_vec();
            p.sort_by_key(|(_, r)| table_of(r));
            p
        })
        .collect()
}

fn report(a: &Aggregate) -> String {
    let s = summarize_aggregate(a);
    let e = efficiency_of(a, &Overrides::default());
    format!("{s:#?}\n{e:#?}")
}

#[test]
fn parts_within_the_window_give_the_numbers_of_the_whole() {
    let records = serving(200);
    let whole = report(&aggregate(&records));
    for size in [37, 100, 401, 2000] {
        let mut a = Aggregator::with_window(2, 300);
        for p in parts(&records, size) {
            a.add_part(p);
        }
        let a = a.finish();
        assert_eq!(a.gemm_unjoined, 0, "parts of {size}");
        assert_eq!(a.counters_unattributed, 0, "parts of {size}");
        assert_eq!(report(&a), whole, "parts of {size}");
    }
    // The numbers themselves: 200 steps, GEMM 2·64·4096·4096 FLOPs per step, the
    // "decode" range covering every kernel.
    let a = aggregate(&records);
    let s = summarize_aggregate(&a);
    assert_eq!(s.kernel_count, 400);
    let gemm_ns: u64 = (0..200u64).map(|s| 300 + s % 7).sum();
    assert_eq!(s.kernels[0].name, "gemm_kernel");
    assert_eq!((s.kernels[0].calls, s.kernels[0].total_ns), (200, gemm_ns));
    assert_eq!(
        (s.ranges[0].kernels, s.ranges[0].gpu_ns),
        (400, gemm_ns + 200 * 50)
    );
    let e = efficiency_of(&a, &Overrides::default());
    let g = e.kernels.iter().find(|r| r.name == "gemm_kernel").unwrap();
    assert_eq!(g.model_flops, Some(200.0 * 2.0 * 64.0 * 4096.0 * 4096.0));
    // Counters on correlation ids 1, 5, 9, ...: every other GEMM launch measured its
    // bytes (1000 + step + 500); the others get the mean.
    assert_eq!(g.bytes_launches, 100);
    let measured: f64 = (0..200u32)
        .filter(|s| (2 * s + 1) % 4 == 1)
        .map(|s| 1501.0 + s as f64)
        .sum();
    assert_eq!(g.bytes, Some(measured * 2.0));
}

/// `parts` read by `a` as the reader does: the tables it skips left out and counted.
fn read_skipping(mut a: Aggregator, parts: Vec<Vec<(u32, Record)>>) -> Aggregate {
    for p in parts {
        let skip = a.skipped_tables();
        let (skipped, read): (Vec<_>, Vec<_>) = p
            .into_iter()
            .partition(|(_, r)| skip.contains(&table_of(r)));
        a.add_skipped_rows(skipped.len() as u64);
        a.add_part(read);
    }
    a.finish()
}

#[test]
fn kernel_rows_read_without_launches_and_ranges_are_the_reports() {
    let records = serving(300);
    for size in [37, 100, 2000] {
        let full = read_skipping(Aggregator::with_window(1, 300), parts(&records, size));
        let rows = Aggregator::with_window(1, 300).kernel_rows_only();
        let rows = read_skipping(rows, parts(&records, size));
        assert!(!full.ranges.names.is_empty());
        assert!(rows.ranges.names.is_empty());
        let kernels = |a: &Aggregate| {
            let e = efficiency_of(a, &Overrides::default());
            format!("{:#?}\n{:#?}", e.kernels, e.gpus)
        };
        assert_eq!(kernels(&rows), kernels(&full), "parts of {size}");
    }
}

#[test]
fn the_records_of_tables_not_read_still_count_towards_the_join_window() {
    // A kernel, then four launches of other calls (not read for kernel rows), then
    // the kernel's counters: with a window of 4 records the kernel is finalized
    // before its counters arrive, read or not.
    let parts = vec![
        on(1, vec![k(GEMM, 1, 100, 200)]),
        on(1, (2..6).map(|c| launch(c, THREAD, 0, 1)).collect()),
        on(1, vec![counters(1, 0, &[(READ, 1.0)])]),
    ];
    let full = read_skipping(Aggregator::with_window(0, 4), parts.clone());
    let rows = read_skipping(Aggregator::with_window(0, 4).kernel_rows_only(), parts);
    assert_eq!(full.counters_unattributed, 1);
    assert_eq!(rows.counters_unattributed, 1);
    assert_eq!(rows.classes.list[0].with_counters, 0);
}

#[test]
fn memory_held_stays_within_the_window_whatever_the_length() {
    let records = serving(5000);
    let mut a = Aggregator::with_window(2, 300);
    let mut most = 0;
    for p in parts(&records, 100) {
        a.add_part(p);
        most = most.max(a.held());
    }
    // 100 records a part; the window is 2 parts and 300 records, held twice that
    // long for launches, GEMMs and counters: never more than about 8 parts' worth.
    assert!(most <= 800, "{most} records held");
    let a = a.finish();
    let s = summarize_aggregate(&a);
    assert_eq!(s.kernel_count, 10_000);
    assert_eq!(a.classes.list.len(), 2);
    // The "decode" range closes at the very end and still covers every kernel.
    assert_eq!(s.ranges[0].kernels, 10_000);
    assert_eq!(a.gemm_unjoined, 0);
    assert_eq!(a.counters_unattributed, 0);
}

#[test]
fn records_beyond_the_window_are_counted_not_joined() {
    // A GEMM record, then 5 parts later its kernel; counters 5 parts after that.
    let mut records: Vec<Vec<(u32, Record)>> = vec![on(
        1,
        vec![
            string(GEMM, "gemm_kernel"),
            launch(1, THREAD, 10, 20),
            gemm(1, 1, 0, 8, 8, 8),
        ],
    )];
    records.extend((0..4).map(|_| Vec::new()));
    records.push(on(1, vec![k(GEMM, 1, 100, 200)]));
    records.extend((0..4).map(|_| Vec::new()));
    records.push(on(1, vec![counters(1, 0, &[(READ, 1.0)])]));
    let mut a = Aggregator::with_window(1, 0);
    for p in records {
        a.add_part(p);
    }
    let a = a.finish();
    assert_eq!(a.kernel_count, 1);
    assert_eq!(a.classes.list[0].key.gemm, None);
    assert_eq!(a.gemm_unjoined, 1);
    assert_eq!(a.counters_unattributed, 1);
    assert_eq!(a.classes.list[0].with_counters, 0);
}

#[test]
fn a_range_never_closed_covers_nothing_and_nested_ranges_of_one_name_count_once() {
    let records = on(
        1,
        vec![
            string(GEMM, "k"),
            string(DECODE, "layer"),
            string(NORM, "open"),
            marker(S, 1, THREAD, 0, DECODE, 0),
            marker(S, 2, THREAD, 5, DECODE, 0),
            marker(S, 3, THREAD, 6, NORM, 0),
            launch(1, THREAD, 10, 11),
            k(GEMM, 1, 20, 30),
            marker(E, 3 + 100, THREAD, 40, 0, 0),
            marker(E, 2, THREAD, 50, 0, 0),
            launch(2, THREAD, 60, 61),
            k(GEMM, 2, 70, 90),
            marker(E, 1, THREAD, 100, 0, 0),
        ],
    );
    // Read part by part, each record its own part, kernels waiting one part: the
    // answer is the same as read whole.
    for a in [aggregate(&records), {
        let mut a = Aggregator::with_window(1, 0);
        for r in records.clone() {
            a.add_part(vec![r]);
        }
        a.finish()
    }] {
        let s = summarize_aggregate(&a);
        let layer = s.ranges.iter().find(|r| r.name == "layer").unwrap();
        assert_eq!((layer.count, layer.kernels, layer.gpu_ns), (2, 2, 30));
        let open = s.ranges.iter().find(|r| r.name == "open").unwrap();
        assert_eq!((open.count, open.open, open.kernels), (0, 1, 0));
        assert_eq!(s.unmatched_range_ends, 1);
    }
}

#[test]
fn ranges_started_and_never_ended_are_counted_open_and_held_within_a_bound() {
    use super::super::range_cover::MAX_OPEN;
    let n = MAX_OPEN as u32 + 1000;
    let mut list = vec![string(GEMM, "k"), string(DECODE, "request")];
    for i in 0..n {
        list.push(marker(S, i + 1, THREAD, i as u64 * 10, DECODE, 0));
    }
    // The last range opened does end, and covers the kernel launched inside it.
    list.push(launch(1, THREAD, n as u64 * 10, n as u64 * 10 + 1));
    list.push(k(GEMM, 1, n as u64 * 10 + 5, n as u64 * 10 + 25));
    list.push(marker(E, n, THREAD, n as u64 * 10 + 100, 0, 0));
    // The first one's end comes after it was given up: an unmatched end.
    list.push(marker(E, 1, THREAD, n as u64 * 10 + 200, 0, 0));
    let records = on(1, list);
    let mut a = Aggregator::default();
    a.add_part(records);
    let a = a.finish();
    let s = summarize_aggregate(&a);
    let r = &s.ranges[0];
    assert_eq!(
        (r.count, r.open, r.kernels, r.gpu_ns),
        (1, n as u64 - 1, 1, 20)
    );
    assert_eq!(s.unmatched_range_ends, 1);
}

#[test]
fn stacks_hold_the_ranges_enclosing_each_launch_outermost_first() {
    const SPAN: u32 = 8;
    let records = on(
        1,
        vec![
            string(GEMM, "k"),
            string(DECODE, "layer"),
            string(NORM, "open"),
            string(SPAN, "span"),
            marker(S, 1, THREAD, 0, DECODE, 0),
            marker(S, 2, THREAD, 5, NORM, 0),
            // A start/end range (no thread) around the first kernel's GPU start.
            marker(S, 9, 0, 15, SPAN, 0),
            launch(1, THREAD, 10, 11),
            k(GEMM, 1, 20, 30),
            marker(E, 9, 0, 35, 0, 0),
            marker(E, 1, THREAD, 50, 0, 0),
            // "open" never ends: it encloses what its thread launches after it.
            launch(2, THREAD, 60, 61),
            k(GEMM, 2, 70, 90),
            // No launch record, outside every start/end range: no range.
            k(GEMM, 3, 100, 110),
        ],
    );
    for parts in [1, records.len()] {
        let mut a = Aggregator::with_stacks();
        for part in records.chunks(records.len().div_ceil(parts)) {
            a.add_part(part.to_vec());
        }
        let a = a.finish();
        let names: Vec<&str> = a.ranges.names.iter().map(|(_, n)| n.as_str()).collect();
        let stacks = a.stacks.as_ref().unwrap();
        let got: Vec<(Vec<&str>, u64, u64)> = stacks
            .sorted()
            .into_iter()
            .map(|(c, p, t)| {
                assert_eq!(c, 0);
                let path = stacks.paths[p].iter().map(|&n| names[n]).collect();
                (path, t.calls, t.ns)
            })
            .collect();
        let mut got = got;
        got.sort();
        assert_eq!(
            got,
            vec![
                (vec![], 1, 10),
                (vec!["layer", "open", "span"], 1, 10),
                (vec!["open"], 1, 20),
            ],
            "{parts} parts"
        );
    }
    // Without asking, no stacks are kept.
    assert!(aggregate(&records).stacks.is_none());
}

/// [`serving`] sampled: windows of 700 ns carrying the DRAM bytes the kernels moved at
/// 5 bytes/ns (GEMM) and 0.5 (norm), each record placed after the first kernel
/// record that starts past its end (as a sampler decoding behind the GPU would).
fn serving_sampled(steps: u32) -> Vec<(u32, Record)> {
    let records = serving(steps);
    let spans: Vec<(u64, u64, f64)> = records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Kernel(k) => Some((k.start_ns, k.end_ns, [5.0, 0.5][(k.name - 1) as usize])),
            _ => None,
        })
        .collect();
    let end = spans.iter().map(|s| s.1).max().unwrap_or(0);
    let mut windows: Vec<(u64, Record)> = (0..end / 700 + 1)
        .map(|i| {
            let (a, b) = (i * 700, i * 700 + 700);
            let bytes: f64 = spans
                .iter()
                .map(|&(s, e, rate)| rate * e.min(b).saturating_sub(s.max(a)) as f64)
                .sum();
            (b, wire::testing::sample(a, b, &[(READ, bytes)]))
        })
        .collect();
    windows.reverse();
    let mut out = Vec::new();
    for (pid, r) in records {
        let start = match &r {
            Record::Kernel(k) => Some(k.start_ns),
            _ => None,
        };
        out.push((pid, r));
        while start.is_some_and(|s| windows.last().is_some_and(|w| w.0 <= s)) {
            if let Some((_, w)) = windows.pop() {
                out.push((1, w));
            }
        }
    }
    out.extend(windows.into_iter().rev().map(|(_, w)| (1, w)));
    out
}

#[test]
fn the_sampling_fit_of_parts_is_the_fit_of_the_whole() {
    let records = serving_sampled(200);
    let whole = aggregate(&records);
    let fitted = whole.fitted.as_ref().expect("fitted");
    let gemm = whole
        .classes
        .list
        .iter()
        .position(|c| c.mangled == "gemm_kernel");
    let norm = whole
        .classes
        .list
        .iter()
        .position(|c| c.mangled == "rms_norm");
    for (class, rate) in [(gemm, 5.0), (norm, 0.5)] {
        let got = fitted.estimate(class.expect("class"), "dram__bytes_read.sum");
        let got = got.expect("determined");
        assert!((got - rate).abs() < 1e-9 * rate, "{got} vs {rate}");
    }
    for size in [37, 100, 401, 2000] {
        let mut a = Aggregator::with_window(2, 300);
        for p in parts(&records, size) {
            a.add_part(p);
        }
        let a = a.finish();
        assert_eq!(a.fitted, whole.fitted, "parts of {size}");
    }
}

/// CUPTI's `WaitNs` kernel, launched with a measured launch's correlation id on a
/// stream of its own, is counted apart: the launch's GEMM call and counters stay with
/// the program's kernel, and GPU time is the program's alone. A one-thread kernel of
/// another name, and a `WaitNs` of more threads, are the program's. A kernel without
/// timestamps (replayed by CUPTI) is counted as such.
#[test]
fn cuptis_own_kernel_is_left_out_and_takes_nothing_from_the_launch() {
    const WAIT: u32 = 9;
    let cupti = |corr: u32, start: u64| {
        let mut w = wire::testing::kernel(WAIT, corr, start, start + 80_800);
        w.block = [1, 1, 1];
        w.stream_id = 6;
        Record::Kernel(w)
    };
    let mut own = wire::testing::kernel(WAIT, 3, 300_000, 300_100);
    own.block = [32, 1, 1];
    let records = on(
        1,
        vec![
            process(1, "serve"),
            string(GEMM, "gemm_kernel"),
            string(WAIT, "WaitNs"),
            string(READ, "dram__bytes_read.sum"),
            launch(1, THREAD, 0, 10),
            gemm(1, 1, 0, 64, 4096, 4096),
            launch(2, THREAD, 200_000, 200_010),
            launch(3, THREAD, 300_000, 300_010),
            // CUPTI's kernel ends first and comes first.
            cupti(1, 20),
            k(GEMM, 1, 100_000, 101_000),
            counters(1, 0, &[(READ, 4096.0)]),
            k(GEMM, 2, 200_100, 201_100),
            Record::Kernel(own),
            // A kernel CUPTI replayed: no timestamps.
            launch(4, THREAD, 400_000, 400_010),
            k(GEMM, 4, 0, 0),
        ],
    );
    let mut a = Aggregator::default();
    a.add_part(records);
    let a = a.finish();
    let p = &a.processes[0];
    assert_eq!(
        (
            p.kernels,
            p.kernel_ns,
            p.cupti_kernels,
            p.cupti_kernel_ns,
            p.untimed_kernels
        ),
        (4, 2_100, 1, 80_800, 1)
    );
    let s = summarize_aggregate(&a);
    assert_eq!(s.kernel_count, 4);
    let gemm_class = a
        .classes
        .list
        .iter()
        .find(|c| c.key.name == GEMM && c.key.gemm.is_some())
        .expect("the GEMM launch keeps its GEMM call");
    assert_eq!((gemm_class.tally.calls, gemm_class.with_counters), (1, 1));
}
