//! `Live` on hand-built records: the DCGM window arithmetic, and final values equal to
//! the report's analysis of the same records.

use wire::testing::{counters, sample, string};
use wire::Record;

use super::snapshot::Snapshot;
use super::{uuid_string, Live};
use crate::analysis::aggregate::aggregate;
use crate::analysis::roofline::efficiency::efficiency_of;
use crate::analysis::roofline::peaks::Overrides;

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

const MS: u64 = 1_000_000;

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-12 * want.abs().max(1e-300)
}

#[test]
fn a_ratio_field_is_its_kernels_share_of_the_wall_clock_window() {
    let mut live = Live::new(20, Overrides::default());
    // 100 ms at 50 %, 300 ms at 100 %, a third launch of the first class (not
    // measured: its class's mean), within 800 ms: 500 ms of kernels and 300 idle.
    live.add(
        PID,
        vec![
            device(),
            string(1, "k"),
            string(2, SM_ACTIVE),
            string(3, PCIE_RX),
            counters(1, 0, &[(2, 50.0), (3, 1000.0)]),
            counters(2, 0, &[(2, 100.0), (3, 3000.0)]),
            kernel(1, 1, 0, 100 * MS, 1),
            kernel(1, 2, 200 * MS, 500 * MS, 2),
            kernel(1, 3, 700 * MS, 800 * MS, 1),
        ],
    );
    let s = live.finish();
    assert_eq!(s.gpus.len(), 1);
    assert_eq!(s.gpus[0].uuid, uuid_string(&[0xab; 16]));
    assert_eq!(s.gpus[0].uuid, "GPU-abababab-abab-abab-abab-abababababab");
    // As DCGM: the active time over the wall-clock window, idle included:
    // (50 % x 100 + 100 % x 300 + 50 % x 100) ms / 800 ms.
    let sm = field(&s, "DCGM_FI_PROF_SM_ACTIVE");
    assert!(close(sm, 400.0 / 800.0), "{sm}");
    // Bytes: 1000 per launch of the first class (2 launches), 3000 for the second,
    // over the 0.8 s.
    let pcie = field(&s, "DCGM_FI_PROF_PCIE_RX_BYTES");
    assert!(close(pcie, 5000.0 / 0.8), "{pcie}");
    // Fields whose metric was never measured are not shown.
    assert!(!s.gpus[0]
        .fields
        .iter()
        .any(|(n, _)| *n == "DCGM_FI_PROF_DRAM_ACTIVE"));
}

/// A live aggregate given one kernel of 100 ms at 100 % SM activity, from time 0.
fn one_kernel_fully_active() -> Live {
    let mut live = Live::new(20, Overrides::default());
    live.add(
        PID,
        vec![
            device(),
            string(1, "k"),
            string(2, SM_ACTIVE),
            counters(1, 0, &[(2, 100.0)]),
            kernel(1, 1, 0, 100 * MS, 1),
        ],
    );
    live
}

#[test]
fn idle_time_counts_and_kernels_wait_two_updates_and_the_lag() {
    let mut live = one_kernel_fully_active();
    let lag = super::dcgm::LAG_NS;
    let first = live.update_at(lag + 1000 * MS);
    assert_eq!(first.run.launches, 0, "counted before its window");
    assert!(first.gpus[0].fields.is_empty());
    let second = live.update_at(lag + 1000 * MS);
    assert_eq!(second.run.launches, 0);
    // Summed: the second's bins up to the lag before the update: 100 ms of 100 % in
    // the first second.
    let third = live.update_at(lag + 1000 * MS);
    assert_eq!(third.run.launches, 1);
    assert!(close(field(&third, "DCGM_FI_PROF_SM_ACTIVE"), 0.1));
    // The next second ran nothing: 0, not the last value.
    let idle = live.update_at(lag + 2000 * MS);
    assert_eq!(field(&idle, "DCGM_FI_PROF_SM_ACTIVE"), 0.0);
    // No second has passed: the last values stay.
    let same = live.update_at(lag + 2050 * MS);
    assert_eq!(field(&same, "DCGM_FI_PROF_SM_ACTIVE"), 0.0);
    assert!(!same.ended);
    assert!(live.finish().ended);
}

#[test]
fn a_late_kernel_counts_in_the_next_window_and_the_run_adds_up() {
    let mut live = one_kernel_fully_active();
    let lag = super::dcgm::LAG_NS;
    for _ in 0..3 {
        live.update_at(lag + 1000 * MS);
    }
    // A kernel of the first second that arrives only now: its 200 ms go to the next
    // window, so the two windows add up to the 300 ms that ran.
    live.add(
        PID,
        vec![
            counters(2, 0, &[(2, 100.0)]),
            kernel(1, 2, 300 * MS, 500 * MS, 1),
        ],
    );
    live.update_at(lag + 1000 * MS);
    live.update_at(lag + 1000 * MS);
    let late = live.update_at(lag + 2000 * MS);
    assert_eq!(late.run.launches, 2);
    assert!(close(field(&late, "DCGM_FI_PROF_SM_ACTIVE"), 0.2));
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
fn under_pm_sampling_the_fields_are_the_windows_over_the_wall_clock() {
    let mut live = Live::new(20, Overrides::default());
    live.add(
        PID,
        vec![
            device(),
            string(2, SM_ACTIVE),
            string(3, PCIE_RX),
            sample(0, 100 * MS, &[(2, 50.0), (3, 1000.0)]),
            sample(100 * MS, 300 * MS, &[(2, 80.0), (3, 3000.0)]),
        ],
    );
    let lag = super::dcgm::LAG_NS;
    // Less than a window is due: nothing is published yet.
    let early = live.update_at(lag + 300 * MS);
    assert!(early.gpus[0].fields.is_empty(), "{:?}", early.gpus);
    let s = live.update_at(lag + 1000 * MS);
    // (50 x 100 + 80 x 200) ms over the 1 s window, GPU-wide: 21 %.
    assert!(close(field(&s, "DCGM_FI_PROF_SM_ACTIVE"), 0.21));
    assert!(close(field(&s, "DCGM_FI_PROF_PCIE_RX_BYTES"), 4000.0));
    // The next second had no window: nothing was sampled there, 0.
    let next = live.update_at(lag + 2000 * MS);
    assert_eq!(field(&next, "DCGM_FI_PROF_SM_ACTIVE"), 0.0);
}

#[test]
fn after_the_end_the_last_windows_come_one_per_step_the_last_step_holding_the_rest() {
    let records = |live: &mut Live| {
        live.add(
            PID,
            vec![
                device(),
                string(1, "k"),
                string(2, SM_ACTIVE),
                counters(1, 0, &[(2, 100.0)]),
                counters(2, 0, &[(2, 50.0)]),
                kernel(1, 1, 0, 1000 * MS, 1),
                kernel(1, 2, 1500 * MS, 2500 * MS, 2),
            ],
        )
    };
    let lag = super::dcgm::LAG_NS;
    let sm = |fields: &super::GpuFields| {
        let (_, f) = fields.iter().next().expect("a GPU");
        f.iter()
            .find(|(n, _)| *n == "DCGM_FI_PROF_SM_ACTIVE")
            .expect("SM active")
            .1
    };
    // The first second is due at the end; the rest waits for the lag.
    let mut live = Live::new(20, Overrides::default());
    records(&mut live);
    let (s, tail) = live.finish_at(lag + 1000 * MS, 2);
    assert!(s.ended);
    assert!(close(field(&s, "DCGM_FI_PROF_SM_ACTIVE"), 1.0));
    // 1.0 to 1.5 s idle, then 50 % to 2.0 s: 0.25; the last step holds the rest
    // (2.0 to 2.5 s at 50 %).
    let values: Vec<f64> = tail.iter().map(sm).collect();
    assert_eq!(values.len(), 2, "{tail:?}");
    assert!(close(values[0], 0.25), "{values:?}");
    assert!(close(values[1], 0.5), "{values:?}");
    // One step: everything left as one window, 500 ms of 50 % over 1.5 s.
    let mut live = Live::new(20, Overrides::default());
    records(&mut live);
    let (_, tail) = live.finish_at(lag + 1000 * MS, 1);
    assert_eq!(tail.len(), 1);
    assert!(close(sm(&tail[0]), 0.25 / 1.5 * 2.0), "{tail:?}");
}
