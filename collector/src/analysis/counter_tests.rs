//! The counter analysis on hand-built record lists: merging pass groups per kernel,
//! launches per metric, kernels without counters, plans and statuses, samples, and the
//! merge against a simple model on generated records.

use std::collections::BTreeMap;

use wire::testing::{
    counters as kc, graph_kernel, k, kernel, on, process, range_counters, string, values, Lcg,
};
use wire::{CounterPlan, CounterSample, CounterStatus, Kernel, Record};

use super::*;

fn metric(m: &MetricStats) -> (&str, u64, f64, f64) {
    (m.metric.as_str(), m.launches, m.sum, m.mean)
}

/// Strings 1..=2 kernels, 11..=13 metrics.
fn names() -> Vec<Record> {
    vec![
        string(1, "_Z4gemmPfi"),
        string(2, "softmax"),
        string(11, "dram__bytes_read.sum"),
        string(12, "dram__bytes_write.sum"),
        string(13, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ]
}

#[test]
fn pass_groups_merge_per_kernel_and_each_metric_counts_its_launches() {
    let mut r = names();
    r.extend([
        k(1, 1, 0, 10),
        k(1, 2, 20, 30),
        k(1, 3, 40, 50),
        k(1, 4, 60, 70),
        Record::Kernel(Kernel {
            grid: [8, 1, 1],
            ..kernel(1, 5, 80, 90)
        }),
        kc(1, 0, &[(11, 100.0), (12, 50.0)]),
        kc(2, 1, &[(13, 40.0)]),
        kc(3, 0, &[(11, 300.0), (12, 70.0)]),
        // Launch 4 had no counters; launch 5 (another configuration) had group 0.
        kc(5, 0, &[(11, 1000.0), (12, 0.0)]),
    ]);
    let c = counters(&on(7, r));
    assert!(c.any());
    assert_eq!(c.unattributed, 0);

    let gemm = c.kernel("_Z4gemmPfi").unwrap();
    assert_eq!(gemm.name, "gemm(float*, int)");
    assert_eq!((gemm.launches, gemm.launches_with_counters), (5, 4));
    let got: Vec<_> = gemm.metrics.iter().map(metric).collect();
    assert_eq!(
        got,
        [
            ("dram__bytes_read.sum", 3, 1400.0, 1400.0 / 3.0),
            ("dram__bytes_write.sum", 3, 120.0, 40.0),
            (
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                1,
                40.0,
                40.0
            ),
        ]
    );

    // Per kernel key: the two configurations apart.
    assert_eq!(c.configs.len(), 2);
    let small = &c.configs[0];
    assert_eq!((small.grid, small.block), ([1, 1, 1], [128, 1, 1]));
    assert_eq!((small.launches, small.launches_with_counters), (4, 3));
    let got: Vec<_> = small.metrics.iter().map(metric).collect();
    assert_eq!(
        got,
        [
            ("dram__bytes_read.sum", 2, 400.0, 200.0),
            ("dram__bytes_write.sum", 2, 120.0, 60.0),
            (
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                1,
                40.0,
                40.0
            ),
        ]
    );
    let big = &c.configs[1];
    assert_eq!(big.grid, [8, 1, 1]);
    assert_eq!((big.launches, big.launches_with_counters), (1, 1));
    assert_eq!(big.metrics[0].mean, 1000.0);
}

#[test]
fn one_launch_with_several_groups_counts_once_per_kernel_but_per_metric_each() {
    // With replay a launch can bring every group: one launch with counters, each
    // metric from that one launch.
    let mut r = names();
    r.extend([
        k(1, 1, 0, 10),
        kc(1, 0, &[(11, 8.0)]),
        kc(1, 1, &[(13, 90.0)]),
    ]);
    let c = counters(&on(7, r));
    let gemm = c.kernel("_Z4gemmPfi").unwrap();
    assert_eq!(gemm.launches_with_counters, 1);
    let got: Vec<_> = gemm.metrics.iter().map(|m| (m.launches, m.mean)).collect();
    assert_eq!(got, [(1, 8.0), (1, 90.0)]);
}

#[test]
fn counters_join_kernels_recorded_later_and_by_pid() {
    // Counters usually arrive before the activity buffer with the kernel is flushed;
    // the same correlation id in another process is another launch.
    let mut r = on(7, names());
    r.extend(on(7, vec![kc(1, 0, &[(11, 5.0)])]));
    r.extend(on(
        8,
        vec![string(3, "softmax"), string(4, "dram__bytes_read.sum")],
    ));
    r.extend(on(8, vec![k(3, 1, 0, 10), kc(1, 0, &[(4, 7.0)])]));
    r.extend(on(7, vec![k(1, 1, 0, 10)]));
    let c = counters(&r);
    assert_eq!(c.unattributed, 0);
    let gemm = c.kernel("_Z4gemmPfi").unwrap();
    assert_eq!(
        metric(&gemm.metrics[0]),
        ("dram__bytes_read.sum", 1, 5.0, 5.0)
    );
    // Metric names interned under different ids merge by text.
    let softmax = c.kernel("softmax").unwrap();
    assert_eq!(
        metric(&softmax.metrics[0]),
        ("dram__bytes_read.sum", 1, 7.0, 7.0)
    );
}

#[test]
fn kernels_without_counters_are_listed_as_such() {
    let mut r = names();
    r.extend([
        k(1, 1, 0, 10),
        k(2, 2, 20, 30),
        k(2, 3, 40, 50),
        kc(1, 0, &[(11, 1.0)]),
    ]);
    let c = counters(&on(7, r));
    let softmax = c.kernel("softmax").unwrap();
    assert_eq!((softmax.launches, softmax.launches_with_counters), (2, 0));
    assert!(softmax.metrics.is_empty());
    assert_eq!(c.kernels_without_counters(), 1);
    assert_eq!(c.kernels.len(), 2);
}

#[test]
fn counters_without_their_kernel_are_unattributed() {
    let mut r = names();
    r.extend([
        // A graph launch: two kernels under one correlation id, the softmax first.
        graph_kernel(1, 9, 1, 10, 20),
        graph_kernel(2, 9, 2, 0, 10),
        // Its pass's range 1 is the second kernel to start: the gemm.
        range_counters(9, 0, 1, &[(11, 2.0)]),
        // A range the launch had no kernel for.
        range_counters(9, 0, 5, &[(11, 1.0)]),
        // No kernel with this id at all.
        kc(42, 0, &[(11, 1.0)]),
    ]);
    let c = counters(&on(7, r));
    assert_eq!(c.unattributed, 2);
    assert_eq!(c.kernels_without_counters(), 1);
    let gemm = c.kernel("_Z4gemmPfi").unwrap();
    assert_eq!(gemm.launches_with_counters, 1);
    let got: Vec<_> = gemm.metrics.iter().map(metric).collect();
    assert_eq!(got, [("dram__bytes_read.sum", 1, 2.0, 2.0)]);
    assert_eq!(c.kernel("softmax").unwrap().launches_with_counters, 0);
    assert!(c.any());
}

#[test]
fn plans_and_statuses_per_process_verbatim() {
    let message = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES from cuptiRangeProfilerEnable: \
                   another tool holds the counters";
    let mut r = on(7, vec![process(7, "./a")]);
    r.extend(on(7, names()));
    r.push((
        7,
        Record::CounterPlan(Box::new(CounterPlan {
            device_id: 0,
            chip: "GH100".into(),
            mode: "kernel".into(),
            groups: vec![vec![11, 12], vec![13], vec![99]],
            policy: "first 64 launches of each kernel".into(),
        })),
    ));
    r.push((
        8,
        Record::CounterStatus(CounterStatus {
            message: message.into(),
        }),
    ));
    let c = counters(&r);
    assert!(c.any());
    assert_eq!(
        c.plans,
        [PlanSummary {
            pid: 7,
            device_id: 0,
            chip: "GH100".into(),
            mode: "kernel".into(),
            policy: "first 64 launches of each kernel".into(),
            groups: vec![
                vec![
                    "dram__bytes_read.sum".to_string(),
                    "dram__bytes_write.sum".to_string()
                ],
                vec!["sm__throughput.avg.pct_of_peak_sustained_elapsed".to_string()],
                // A name never interned stays recognisable.
                vec!["#99".to_string()],
            ],
        }]
    );
    assert_eq!(
        c.statuses,
        [StatusSummary {
            pid: 8,
            message: message.into(),
        }]
    );
}

#[test]
fn samples_sum_per_process_device_and_metric() {
    let sample = |device_id, start_ns, metrics: &[(u32, f64)]| {
        Record::CounterSample(CounterSample {
            device_id,
            start_ns,
            end_ns: start_ns + 100,
            metrics: values(metrics),
        })
    };
    let mut r = names();
    r.extend([
        sample(0, 0, &[(11, 10.0), (13, 50.0)]),
        sample(0, 100, &[(11, 30.0)]),
        sample(1, 0, &[(11, 1.0)]),
    ]);
    let c = counters(&on(7, r));
    let got: Vec<_> = c
        .samples
        .iter()
        .map(|s| (s.pid, s.device_id, s.metric.as_str(), s.samples, s.sum))
        .collect();
    assert_eq!(
        got,
        [
            (7, 0, "dram__bytes_read.sum", 2, 40.0),
            (
                7,
                0,
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                1,
                50.0
            ),
            (7, 1, "dram__bytes_read.sum", 1, 1.0),
        ]
    );
    assert!(c.any());
}

#[test]
fn no_counter_records_no_counter_section() {
    let mut r = names();
    r.extend([k(1, 1, 0, 10), k(2, 2, 10, 20)]);
    let c = counters(&on(7, r));
    assert!(!c.any());
    assert_eq!(c.kernels_without_counters(), 2);
    assert!(!counters(&[]).any());
    assert_eq!(summarize(&[]).counters, Counters::default());
}

#[test]
fn values_print_with_at_most_three_decimals() {
    use crate::output::report::value;
    assert_eq!(value(1024.0), "1024");
    assert_eq!(value(55.5), "55.5");
    assert_eq!(value(1.0 / 3.0), "0.333");
    assert_eq!(value(-0.0001), "0");
    assert_eq!(value(2.0005), "2.001");
    assert_eq!(value(f64::NAN), "NaN");
}

#[test]
fn merge_matches_a_simple_model_on_generated_records() {
    let mut g = Lcg(0x5eed);
    let pids = [100u32, 200, 300];
    let mut records: Vec<(u32, Record)> = Vec::new();
    for &pid in &pids {
        // Kernel names 1..=4, metric names 11..=15, with per-process texts shared.
        for (id, text) in [(1, "k_a"), (2, "k_b"), (3, "_Z3fooi"), (4, "k_d")] {
            records.push((pid, string(id, text)));
        }
        for m in 11..=15 {
            records.push((pid, string(m, &format!("metric_{m}"))));
        }
    }
    let mut next_corr: BTreeMap<u32, u32> = BTreeMap::new();
    for _ in 0..4000 {
        let pid = pids[g.next(3) as usize];
        match g.next(10) {
            0..=5 => {
                let corr = next_corr.entry(pid).or_insert(0);
                *corr += 1;
                let mut kr = kernel(1 + g.next(4) as u32, *corr, 0, 10);
                kr.grid = [1 + g.next(2) as i32, 1, 1];
                records.push((pid, Record::Kernel(kr)));
            }
            _ => {
                // Mostly existing launches (earlier or later), sometimes unknown ids.
                let corr = 1 + g.next(next_corr.get(&pid).copied().unwrap_or(0) as u64 + 30);
                let metrics: Vec<(u32, f64)> = (0..1 + g.next(3))
                    .map(|_| (11 + g.next(5) as u32, g.next(1000) as f64 / 8.0))
                    .collect();
                records.push((pid, kc(corr as u32, g.next(3) as u32, &metrics)));
            }
        }
    }

    // The model: look every counter record's kernel up by scanning.
    let name_of = |pid: u32, id: u32| -> String {
        records
            .iter()
            .find_map(|(p, r)| match r {
                Record::String(s) if *p == pid && s.id == id => Some(s.text.clone()),
                _ => None,
            })
            .unwrap()
    };
    /// metric -> (launches, sum)
    type Metrics = BTreeMap<String, (u64, f64)>;
    /// kernel name -> (launches, launches with counters, metrics)
    type Model = BTreeMap<String, (u64, Vec<(u32, u32)>, Metrics)>;
    let mut model: Model = BTreeMap::new();
    let mut model_keys: BTreeMap<(String, [i32; 3]), Metrics> = BTreeMap::new();
    let mut unattributed = 0;
    for (pid, r) in &records {
        if let Record::Kernel(kr) = r {
            model.entry(name_of(*pid, kr.name)).or_default().0 += 1;
        }
    }
    for (pid, r) in &records {
        let Record::KernelCounters(c) = r else {
            continue;
        };
        let matches: Vec<&Kernel> = records
            .iter()
            .filter_map(|(p, r)| match r {
                Record::Kernel(kr) if p == pid && kr.correlation_id == c.correlation_id => Some(kr),
                _ => None,
            })
            .collect();
        let [kr] = matches[..] else {
            unattributed += 1;
            continue;
        };
        let name = name_of(*pid, kr.name);
        let e = model.get_mut(&name).unwrap();
        if !e.1.contains(&(*pid, c.correlation_id)) {
            e.1.push((*pid, c.correlation_id));
        }
        for m in &c.metrics {
            let metric = name_of(*pid, m.name);
            let x = e.2.entry(metric.clone()).or_default();
            x.0 += 1;
            x.1 += m.value;
            let y = model_keys
                .entry((name.clone(), kr.grid))
                .or_default()
                .entry(metric)
                .or_default();
            y.0 += 1;
            y.1 += m.value;
        }
    }

    let c = counters(&records);
    assert!(unattributed > 0, "the generator makes unknown ids too");
    assert_eq!(c.unattributed, unattributed);
    assert_eq!(c.kernels.len(), model.len());
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    for kstats in &c.kernels {
        let (launches, with, metrics) = &model[&kstats.mangled];
        assert_eq!(kstats.launches, *launches, "{}", kstats.mangled);
        assert_eq!(kstats.launches_with_counters, with.len() as u64);
        assert_eq!(kstats.metrics.len(), metrics.len());
        for (m, (name, (n, sum))) in kstats.metrics.iter().zip(metrics) {
            assert_eq!((&m.metric, m.launches), (name, *n));
            assert!(
                close(m.sum, *sum),
                "{} {}: {} vs {sum}",
                kstats.mangled,
                name,
                m.sum
            );
            assert!(close(m.mean, sum / *n as f64));
        }
    }
    let with_counters: Vec<_> = c.configs.iter().filter(|x| !x.metrics.is_empty()).collect();
    assert_eq!(with_counters.len(), model_keys.len());
    for (x, ((name, grid), metrics)) in with_counters.iter().zip(&model_keys) {
        assert_eq!((&x.mangled, &x.grid), (name, grid));
        for (m, (metric, (n, sum))) in x.metrics.iter().zip(metrics) {
            assert_eq!((&m.metric, m.launches), (metric, *n));
            assert!(close(m.sum, *sum));
        }
    }
}
