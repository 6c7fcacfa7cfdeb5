//! `gpu_activity` on hand-built records: DCGM's definition (wall clock from the
//! GPU's first kernel to its last, idle included), class means for launches not
//! measured, and kernel time without a value left out and counted.

use wire::testing::{counters, string};
use wire::Record;

use super::gpu_activity;
use crate::analysis::aggregate::aggregate;

const PID: u32 = 7;
const MS: u64 = 1_000_000;
const SM_ACTIVE: &str = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed";
const DRAM_ACTIVE: &str = "dram__cycles_active.avg.pct_of_peak_sustained_elapsed";
const PCIE_RX: &str = "pcie__read_bytes.sum";

fn device(id: u32, uuid: u8) -> Record {
    let mut d = wire::testing::device("NVIDIA H100 80GB HBM3", (9, 0), 132, 1_980_000);
    d.id = id;
    d.uuid = [uuid; 16];
    Record::Device(d)
}

/// A kernel with `blocks` blocks (a class per grid) on device `device`.
fn kernel(corr: u32, start: u64, end: u64, blocks: i32, device: u32) -> Record {
    let mut k = wire::testing::kernel(1, corr, start, end);
    k.grid = [blocks, 1, 1];
    k.device_id = device;
    Record::Kernel(k)
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-12 * want.abs().max(1e-300)
}

#[test]
fn a_ratio_is_kernel_time_times_the_class_mean_over_the_gpu_span() {
    let a = aggregate(&[
        (PID, device(0, 0xab)),
        (PID, string(1, "k")),
        (PID, string(2, SM_ACTIVE)),
        (PID, string(3, PCIE_RX)),
        (PID, counters(1, 0, &[(2, 50.0), (3, 1000.0)])),
        (PID, counters(2, 0, &[(2, 100.0), (3, 3000.0)])),
        // 100 ms at 50 %, 300 ms at 100 %, then a launch of the first class that was
        // not measured (its class's mean, 50 %), from 100 ms to 900 ms.
        (PID, kernel(1, 100 * MS, 200 * MS, 1, 0)),
        (PID, kernel(2, 300 * MS, 600 * MS, 2, 0)),
        (PID, kernel(3, 800 * MS, 900 * MS, 1, 0)),
    ]);
    let gpus = gpu_activity(&a);
    assert_eq!(gpus.len(), 1);
    let g = &gpus[0];
    assert_eq!(g.uuid, "GPU-abababab-abab-abab-abab-abababababab");
    assert_eq!(
        (g.first_ns, g.last_ns, g.span_ns()),
        (100 * MS, 900 * MS, 800 * MS)
    );
    assert_eq!(g.kernel_ns, 500 * MS);
    let names: Vec<&str> = g.fields.iter().map(|f| f.field).collect();
    // Only the fields whose metric was measured, in DCGM_FIELDS' order.
    assert_eq!(
        names,
        ["DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PCIE_RX_BYTES"]
    );
    // (0.5 x 100 + 1.0 x 300 + 0.5 x 100) ms over 800 ms.
    assert!(close(g.fields[0].value, 400.0 / 800.0), "{:?}", g.fields[0]);
    assert_eq!(g.fields[0].valued_ns, 500 * MS);
    // 1000 + 3000 + 1000 bytes over 0.8 s.
    assert!(close(g.fields[1].value, 5000.0 / 0.8), "{:?}", g.fields[1]);
}

#[test]
fn kernel_time_without_a_value_is_left_out_and_counted() {
    let a = aggregate(&[
        (PID, device(0, 0xab)),
        (PID, string(1, "k")),
        (PID, string(2, SM_ACTIVE)),
        (PID, string(4, DRAM_ACTIVE)),
        (PID, counters(1, 0, &[(2, 80.0), (4, 40.0)])),
        (PID, counters(2, 0, &[(2, 20.0)])),
        (PID, kernel(1, 0, 200 * MS, 1, 0)),
        // Another class, measured with SM active only: DRAM active has no value
        // for its 600 ms.
        (PID, kernel(2, 400 * MS, 1000 * MS, 2, 0)),
    ]);
    let g = &gpu_activity(&a)[0];
    assert_eq!(g.span_ns(), 1000 * MS);
    let sm = &g.fields[0];
    assert_eq!(sm.field, "DCGM_FI_PROF_SM_ACTIVE");
    assert!(close(sm.value, (0.8 * 200.0 + 0.2 * 600.0) / 1000.0));
    assert_eq!(sm.valued_ns, 800 * MS);
    let dram = &g.fields[1];
    assert_eq!(dram.field, "DCGM_FI_PROF_DRAM_ACTIVE");
    assert!(close(dram.value, 0.4 * 200.0 / 1000.0));
    assert_eq!(
        dram.valued_ns,
        200 * MS,
        "the other class's time is not valued"
    );
}

#[test]
fn each_gpu_has_its_own_span_and_untimed_kernels_are_left_out() {
    let a = aggregate(&[
        (PID, device(0, 0xab)),
        (PID, device(1, 0xcd)),
        (PID, string(1, "k")),
        (PID, string(2, SM_ACTIVE)),
        (PID, counters(1, 0, &[(2, 100.0)])),
        (PID, counters(2, 0, &[(2, 100.0)])),
        (PID, kernel(1, 0, 100 * MS, 1, 0)),
        (PID, kernel(2, 500 * MS, 600 * MS, 2, 1)),
        (PID, kernel(3, 900 * MS, 1000 * MS, 2, 1)),
        // Kernel replay gives replayed kernels no timestamps.
        (PID, kernel(4, 0, 0, 2, 1)),
    ]);
    let gpus = gpu_activity(&a);
    assert_eq!(gpus.len(), 2);
    assert_eq!((gpus[0].index, gpus[0].span_ns()), (0, 100 * MS));
    assert!(close(gpus[0].fields[0].value, 1.0));
    assert_eq!((gpus[1].index, gpus[1].span_ns()), (1, 500 * MS));
    assert_eq!(gpus[1].first_ns, 500 * MS);
    assert!(close(gpus[1].fields[0].value, 200.0 / 500.0));
}
