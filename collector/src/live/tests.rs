//! `Live` on hand-built records: the DCGM window arithmetic, and final values equal to
//! the report's analysis of the same records.

use wire::testing::{counters, sample, string};
use wire::Record;

use super::snapshot::Snapshot;
use super::{uuid_string, Live};
use crate::analysis::aggregate::aggregate;
use crate::analysis::efficiency::efficiency_of;
use crate::analysis::peaks::Overrides;

const PID: u32 = 7;
const SM_ACTIVE: &str = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed";
const PCIE_RX: &str = "pcie__read_bytes.sum";

/// The H100 of the shared builders, with a UUID.
fn device() -> Record {
    let mut d = wire::testing::device("NVIDIA H100 80GB HBM3", (9, 0), 132, 1_980_000);
    d.uuid = [0xab; 16];
    Record::Device(d)
}

/// A kernel of the shared builders with `blocks` blocks (a class per grid).
fn kernel(name: u32, corr: u32, start: u64, end: u64, blocks: i32) -> Record {
    let mut k = wire::testing::kernel(name, corr, start, end);
    k.grid = [blocks, 1, 1];
    Record::Kernel(k)
}

fn field(s: &Snapshot, name: &str) -> f64 {
    s.gpus[0]
        .fields
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", s.gpus))
        .1
}

#[test]
fn a_ratio_field_is_the_time_weighted_mean_times_the_busy_share_of_the_window() {
    let mut live = Live::new(20, Overrides::default());
    // Two classes: 100 ns at 50 %, 300 ns at 100 %, spanning 0..800 ns. A third
    // launch of the first class, not measured, takes its class's mean.
    live.add(
        PID,
        vec![
            device(),
            string(1, "k"),
            string(2, SM_ACTIVE),
            string(3, PCIE_RX),
            counters(1, 0, &[(2, 50.0), (3, 1000.0)]),
            counters(2, 0, &[(2, 100.0), (3, 3000.0)]),
            kernel(1, 1, 0, 100, 1),
            kernel(1, 2, 200, 500, 2),
            kernel(1, 3, 700, 800, 1),
        ],
    );
    let s = live.finish();
    assert_eq!(s.gpus.len(), 1);
    assert_eq!(s.gpus[0].uuid, uuid_string(&[0xab; 16]));
    assert_eq!(s.gpus[0].uuid, "GPU-abababab-abab-abab-abab-abababababab");
    // Mean over 500 ns of kernels: (50 x 200 + 100 x 300) / 500 = 80 %; busy 500 of
    // 800 ns.
    assert_eq!(field(&s, "DCGM_FI_PROF_SM_ACTIVE"), 0.8 * (500.0 / 800.0));
    // Bytes: 1000 per launch of the first class (2 launches), 3000 for the second,
    // over 800 ns.
    assert_eq!(
        field(&s, "DCGM_FI_PROF_PCIE_RX_BYTES"),
        5000.0 / (800.0 / 1e9)
    );
    // Fields whose metric was never measured are not shown.
    assert!(!s.gpus[0]
        .fields
        .iter()
        .any(|(n, _)| *n == "DCGM_FI_PROF_DRAM_ACTIVE"));
}

#[test]
fn a_window_without_kernels_gives_zero_and_kernels_wait_two_updates() {
    let mut live = Live::new(20, Overrides::default());
    live.add(
        PID,
        vec![
            device(),
            string(1, "k"),
            string(2, SM_ACTIVE),
            counters(1, 0, &[(2, 100.0)]),
            kernel(1, 1, 0, 100, 1),
        ],
    );
    let first = live.update();
    assert_eq!(first.run.launches, 0, "counted before its window");
    let second = live.update();
    assert_eq!(second.run.launches, 0);
    let third = live.update();
    assert_eq!(third.run.launches, 1);
    assert_eq!(field(&third, "DCGM_FI_PROF_SM_ACTIVE"), 1.0);
    let idle = live.update();
    assert_eq!(field(&idle, "DCGM_FI_PROF_SM_ACTIVE"), 0.0);
    assert!(!idle.ended);
    assert!(live.finish().ended);
}

#[test]
fn the_final_values_are_the_report_s_whatever_the_updates() {
    let names = [
        "ampere_bf16_s16816gemm_bf16_128x128",
        "rms_norm_kernel",
        "_Z6matmulPfS_S_i",
    ];
    let mut records = vec![device()];
    for (i, n) in names.iter().enumerate() {
        records.push(string(i as u32 + 1, n));
    }
    for c in 1..=300u32 {
        let name = c % 3 + 1;
        let start = c as u64 * 1000;
        records.push(kernel(
            name,
            c,
            start,
            start + 100 * name as u64,
            name as i32,
        ));
    }
    let expected = efficiency_of(
        &aggregate(&records.iter().map(|r| (PID, r.clone())).collect::<Vec<_>>()),
        &Overrides::default(),
    );
    let mut live = Live::new(2, Overrides::default());
    for chunk in records.chunks(37) {
        live.add(PID, chunk.to_vec());
        live.update();
    }
    let s = live.finish();
    assert_eq!(s.run.launches, expected.run.launches);
    assert_eq!(s.run.gpu_ns, expected.run.gpu_ns);
    let launches: u64 = s.kernels.iter().map(|k| k.totals.launches).sum();
    assert_eq!(launches, 300);
    // Two names have labels of their own, the third is "other".
    let labels: Vec<&str> = s.kernels.iter().map(|k| k.kernel.as_str()).collect();
    assert_eq!(labels.len(), 3, "{labels:?}");
    assert!(labels.contains(&"other"), "{labels:?}");
    for k in &s.kernels {
        if k.kernel == "other" {
            continue;
        }
        let row = expected
            .kernels
            .iter()
            .find(|r| super::short_name::short_name(&r.mangled) == k.kernel)
            .unwrap_or_else(|| panic!("{}", k.kernel));
        assert_eq!(
            (k.totals.launches, k.totals.gpu_ns),
            (row.calls, row.gpu_ns)
        );
    }
    assert_eq!(s.gpus[0].totals.launches, 300);
}

#[test]
fn under_pm_sampling_the_fields_are_the_windows_time_weighted_means() {
    let mut live = Live::new(20, Overrides::default());
    live.add(
        PID,
        vec![
            device(),
            string(2, SM_ACTIVE),
            string(3, PCIE_RX),
            sample(0, 100, &[(2, 50.0), (3, 1000.0)]),
            sample(100, 300, &[(2, 80.0), (3, 3000.0)]),
        ],
    );
    let s = live.update();
    // (50 x 100 + 80 x 200) / 300 = 70 %, GPU-wide.
    assert_eq!(field(&s, "DCGM_FI_PROF_SM_ACTIVE"), 21000.0 / 300.0 / 100.0);
    assert_eq!(
        field(&s, "DCGM_FI_PROF_PCIE_RX_BYTES"),
        4000.0 / (300.0 / 1e9)
    );
    // An update without windows keeps the last values.
    assert_eq!(live.update().gpus[0].fields, s.gpus[0].fields);
}
