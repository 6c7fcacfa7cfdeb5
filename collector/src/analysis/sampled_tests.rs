//! Sample attribution on hand-built spans and windows with known overlaps, through
//! `counters` on records, and against a simple model on generated data.

use std::collections::BTreeMap;

use wire::testing::{k, sample, string, Lcg};

use super::counters;
use super::sampled::*;

const READ: &str = "dram__bytes_read.sum";
const PCT: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";

fn span(mangled: &str, start_ns: u64, end_ns: u64) -> KernelSpan<'_> {
    KernelSpan {
        pid: 1,
        device_id: 0,
        start_ns,
        end_ns,
        mangled,
    }
}

fn window(start_ns: u64, end_ns: u64, metrics: &[(&str, f64)]) -> Window {
    Window {
        pid: 1,
        device_id: 0,
        start_ns,
        end_ns,
        metrics: metrics.iter().map(|&(m, v)| (m.to_string(), v)).collect(),
    }
}

type Metrics<'a> = Vec<(&'a str, u64, &'static str, f64)>;

/// (mangled, samples, overlap_ns, [(metric, samples, kind, value)])
type Row<'a> = (&'a str, u64, u64, Metrics<'a>);

fn rows(a: &Attribution) -> Vec<Row<'_>> {
    a.kernels
        .iter()
        .map(|k| {
            (
                k.mangled.as_str(),
                k.samples,
                k.overlap_ns,
                k.metrics
                    .iter()
                    .map(|m| (m.metric.as_str(), m.samples, m.kind, m.value))
                    .collect(),
            )
        })
        .collect()
}

/// (windows, sampled_ns, idle_ns, metrics)
fn idle(a: &Attribution) -> (u64, u64, u64, Metrics<'_>) {
    let i = &a.idle;
    (
        i.windows,
        i.sampled_ns,
        i.idle_ns,
        i.metrics
            .iter()
            .map(|m| (m.metric.as_str(), m.samples, m.kind, m.value))
            .collect(),
    )
}

#[test]
fn additive_is_the_sum_suffix() {
    assert!(additive(READ));
    assert!(!additive(PCT));
    assert!(!additive("dram__bytes_read.sum.per_second"));
    assert!(!additive("smsp__cycles_active.avg"));
}

#[test]
fn kernel_fully_inside_one_window_gets_all_of_it() {
    let a = attribute(
        &[span("a", 120, 170)],
        &[
            window(100, 200, &[(READ, 1000.0), (PCT, 40.0)]),
            window(200, 300, &[(READ, 0.0), (PCT, 0.0)]),
        ],
    );
    assert_eq!(
        rows(&a),
        [(
            "a",
            1,
            50,
            vec![(READ, 1, "sum", 1000.0), (PCT, 1, "mean", 40.0)]
        )]
    );
    // The second window is idle; the first is half uncovered.
    assert_eq!(
        idle(&a),
        (
            1,
            200,
            150,
            vec![(READ, 1, "sum", 0.0), (PCT, 1, "mean", 0.0)]
        )
    );
}

#[test]
fn kernel_spanning_two_windows_gets_a_share_of_each() {
    // "a" runs [150, 250): 50 ns in each window; "b" runs [200, 230) in the second.
    let a = attribute(
        &[span("a", 150, 250), span("b", 200, 230)],
        &[
            window(100, 200, &[(READ, 600.0), (PCT, 30.0)]),
            window(200, 300, &[(READ, 800.0), (PCT, 90.0)]),
        ],
    );
    assert_eq!(
        rows(&a),
        [
            (
                "a",
                2,
                100,
                // 600 (alone in window 1) + 800 * 50 / 80; mean (30*50 + 90*50) / 100.
                vec![(READ, 2, "sum", 1100.0), (PCT, 2, "mean", 60.0)]
            ),
            (
                "b",
                1,
                30,
                vec![(READ, 1, "sum", 300.0), (PCT, 1, "mean", 90.0)]
            ),
        ]
    );
    assert_eq!(idle(&a), (0, 200, 50 + 50, vec![]));
}

#[test]
fn two_kernels_sharing_a_window_split_by_overlap() {
    // Concurrent: "a" 75 ns, "b" 25 ns, overlapping each other; two launches of "a"
    // in the same window count that window once.
    let a = attribute(
        &[
            span("a", 0, 50),
            span("b", 40, 65),
            span("a", 60, 85),
            // Another process and another device: not this window's.
            KernelSpan {
                pid: 2,
                ..span("c", 0, 100)
            },
            KernelSpan {
                device_id: 1,
                ..span("c", 0, 100)
            },
        ],
        &[window(0, 100, &[(READ, 400.0), (PCT, 12.5)])],
    );
    assert_eq!(
        rows(&a),
        [
            (
                "a",
                1,
                75,
                vec![(READ, 1, "sum", 300.0), (PCT, 1, "mean", 12.5)]
            ),
            (
                "b",
                1,
                25,
                vec![(READ, 1, "sum", 100.0), (PCT, 1, "mean", 12.5)]
            ),
        ]
    );
    // Covered: [0, 85); idle 15 ns, but the window had kernels.
    assert_eq!(idle(&a), (0, 100, 15, vec![]));
}

#[test]
fn idle_windows_keep_their_values() {
    let a = attribute(
        &[span("a", 500, 600), span("zero", 50, 50)],
        &[
            window(0, 100, &[(READ, 3.0), (PCT, 10.0)]),
            window(100, 400, &[(READ, 1.0), (PCT, 2.0)]),
            // Empty window: idle, weight 0 in the mean.
            window(450, 450, &[(READ, 5.0), (PCT, 99.0)]),
            // Touching the kernel's start only: [start, end) do not overlap.
            window(400, 500, &[(READ, 7.0)]),
        ],
    );
    assert!(a.kernels.is_empty(), "{:?}", a.kernels);
    assert_eq!(
        idle(&a),
        (
            4,
            500,
            500,
            // (10*100 + 2*300) / 400 = 4.
            vec![(READ, 4, "sum", 16.0), (PCT, 3, "mean", 4.0)]
        )
    );
    // Only empty windows: a plain mean.
    let a = attribute(
        &[],
        &[window(5, 5, &[(PCT, 1.0)]), window(9, 9, &[(PCT, 2.0)])],
    );
    assert_eq!(idle(&a), (2, 0, 0, vec![(PCT, 2, "mean", 1.5)]));
}

#[test]
fn counters_attribute_samples_only_when_there_are_samples() {
    let mut r = vec![
        string(1, "gemm"),
        string(2, "softmax"),
        string(11, READ),
        k(1, 1, 0, 100),
        k(2, 2, 100, 150),
    ];
    let c = counters(&r.iter().map(|x| (7, x.clone())).collect::<Vec<_>>());
    assert!(c.sampled.is_empty());
    assert_eq!(c.sample_idle, SampleIdle::default());
    r.extend([
        sample(0, 100, &[(11, 10.0)]),
        sample(100, 200, &[(11, 20.0)]),
        sample(200, 300, &[(11, 0.0)]),
    ]);
    let c = counters(&r.into_iter().map(|x| (7, x)).collect::<Vec<_>>());
    let got: Vec<_> = c
        .sampled
        .iter()
        .map(|k| (k.mangled.as_str(), k.samples, k.metrics[0].value))
        .collect();
    assert_eq!(got, [("gemm", 1, 10.0), ("softmax", 1, 20.0)]);
    assert_eq!(c.sampled_kernel("softmax").unwrap().overlap_ns, 50);
    assert_eq!(
        (
            c.sample_idle.windows,
            c.sample_idle.idle_ns,
            c.sample_idle.sampled_ns
        ),
        (1, 150, 300)
    );
}

/// The rule written out launch by launch, window by window, every pair tried.
fn model(kernels: &[KernelSpan], windows: &[Window]) -> (BTreeMap<String, Row2>, Row2) {
    let mut out: BTreeMap<String, Row2> = BTreeMap::new();
    let mut idle = Row2::default();
    for w in windows {
        let overlap = |k: &KernelSpan| {
            if k.pid != w.pid || k.device_id != w.device_id {
                return 0;
            }
            let (a, b) = (k.start_ns.max(w.start_ns), k.end_ns.min(w.end_ns));
            b.saturating_sub(a)
        };
        let busy: u64 = kernels.iter().map(overlap).sum();
        if busy == 0 {
            idle.samples += 1;
            for (m, v) in &w.metrics {
                let e = idle.metrics.entry(m.clone()).or_default();
                e.0 += v;
                e.1 += v * (w.end_ns - w.start_ns) as f64;
                e.2 += (w.end_ns - w.start_ns) as f64;
            }
            continue;
        }
        let mut seen: Vec<&str> = Vec::new();
        for k in kernels {
            let o = overlap(k);
            if o == 0 {
                continue;
            }
            let row = out.entry(k.mangled.to_string()).or_default();
            if !seen.contains(&k.mangled) {
                seen.push(k.mangled);
                row.samples += 1;
            }
            for (m, v) in &w.metrics {
                let e = row.metrics.entry(m.clone()).or_default();
                e.0 += v * o as f64 / busy as f64;
                e.1 += v * o as f64;
                e.2 += o as f64;
            }
        }
    }
    (out, idle)
}

/// samples, metric -> (sum of shares, sum of value * weight, sum of weights)
#[derive(Default, Debug)]
struct Row2 {
    samples: u64,
    metrics: BTreeMap<String, (f64, f64, f64)>,
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-9 * scale.max(1.0)
}

/// Tolerance: relative 1e-9 of the magnitude involved. Each share is one
/// multiplication and one division (<= 2 ulps), and a kernel's sum adds at most a few
/// hundred shares in a different order than the model, so the error is a few hundred
/// ulps (~1e-13 relative) at most; 1e-9 leaves room without hiding a wrong share,
/// which would be off by whole percent.
#[test]
fn attribution_matches_a_simple_model_and_conserves_sums() {
    let names = ["a", "b", "c", "d"];
    for seed in 1..=20u64 {
        let mut rng = Lcg(seed);
        let mut kernels = Vec::new();
        for _ in 0..rng.next(60) {
            let start = rng.next(10_000);
            let end = start + rng.next(800);
            kernels.push(KernelSpan {
                pid: 1 + rng.next(2) as u32,
                device_id: rng.next(2) as u32,
                start_ns: start,
                end_ns: end,
                mangled: names[rng.next(4) as usize],
            });
        }
        let mut windows = Vec::new();
        for pid in 1..=2 {
            for device_id in 0..2 {
                let mut t = rng.next(300);
                while t < 11_000 {
                    let len = rng.next(400);
                    let mut metrics = vec![(READ.to_string(), rng.next(1_000_000) as f64 / 7.0)];
                    if rng.next(3) > 0 {
                        metrics.push((PCT.to_string(), rng.next(10_000) as f64 / 100.0));
                    }
                    windows.push(Window {
                        pid,
                        device_id,
                        start_ns: t,
                        end_ns: t + len,
                        metrics,
                    });
                    t += len + rng.next(3) * 50;
                }
            }
        }
        // File order is not time order.
        for i in (1..windows.len()).rev() {
            windows.swap(i, rng.next(i as u64 + 1) as usize);
        }

        let got = attribute(&kernels, &windows);
        let (want, want_idle) = model(&kernels, &windows);
        let total: f64 = windows
            .iter()
            .flat_map(|w| &w.metrics)
            .filter(|(m, _)| m == READ)
            .map(|(_, v)| v)
            .sum();
        assert_eq!(got.kernels.len(), want.len(), "seed {seed}");
        let mut attributed = 0.0;
        for k in &got.kernels {
            let w = &want[&k.mangled];
            assert_eq!(k.samples, w.samples, "seed {seed} {}", k.mangled);
            assert_eq!(k.metrics.len(), w.metrics.len());
            for m in &k.metrics {
                let (sum, wsum, weight) = w.metrics[&m.metric];
                if additive(&m.metric) {
                    attributed += m.value;
                    assert!(close(m.value, sum, total), "seed {seed} {m:?} {sum}");
                } else {
                    assert!(close(m.value, wsum / weight, 100.0), "seed {seed} {m:?}");
                }
            }
        }
        assert_eq!(got.idle.windows, want_idle.samples, "seed {seed}");
        for m in &got.idle.metrics {
            let (sum, wsum, weight) = want_idle.metrics[&m.metric];
            if additive(&m.metric) {
                attributed += m.value;
                assert!(close(m.value, sum, total), "seed {seed} {m:?}");
            } else if weight > 0.0 {
                assert!(close(m.value, wsum / weight, 100.0), "seed {seed} {m:?}");
            }
        }
        // Conservation: every window's additive value lands somewhere, once.
        assert!(
            close(attributed, total, total),
            "seed {seed}: {attributed} vs {total}"
        );
    }
}

/// A window whose GPU time exceeds its length (the first PM sample after a start on
/// an H200: GPU time counted from 0) is inconsistent; one whose GPU time is its
/// length, or that has none, is not.
#[test]
fn windows_whose_gpu_time_exceeds_their_length_are_inconsistent() {
    let gpu = "gpu__time_duration.sum";
    assert!(!consistent(&window(0, 100_000, &[(gpu, 1.8e18)])));
    assert!(!consistent(&window(0, 100_000, &[(gpu, 102_001.0)])));
    assert!(consistent(&window(0, 100_000, &[(gpu, 100_001.0)])));
    assert!(consistent(&window(
        0,
        100_000,
        &[("dram__bytes_read.sum", 1e9)]
    )));
}
