//! PM sampling inside libgpuprof.so (`GPUPROF_COUNTERS=sampling`), end to end on the
//! simulated CUDA stack: the cudarc client runs with the profiler injected and a
//! session directory but no collector; the test reads the ring the process left.
//! The simulated PM sampler apportions each kernel's integer counters over the sample
//! windows exactly, so the samples of a counter add up to the cost model's total over
//! the kernels.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use gpuprof_tests::{artifact, sim_cupti, sim_lib_dir, Finished, Scratch, TimedChild};
use sim_core::{CostModel, GemmShape, Launch as SimLaunch};
use wire::ring::RingReader;
use wire::{CounterPlan, CounterSample, Kernel, Record};

const LIMIT: Duration = Duration::from_secs(120);
const STDOUT: &str =
    "cudarc-llm: ok: 2 layers, prompt 128, 4 decode steps: 60 kernel launches, 47 GEMMs\n";
const READ: &str = "dram__bytes_read.sum";
const WRITE: &str = "dram__bytes_write.sum";

/// The cudarc client on the simulated H100 with CUPTI `release`, injected, with `env`.
fn run(name: &str, release: &str, env: &[(&str, &str)]) -> (Finished, Vec<Record>) {
    let dir = Scratch::new(&format!("sampling-{name}"));
    let mut cmd = Command::new(artifact("cudarc-llm"));
    for (k, _) in std::env::vars() {
        if k.starts_with("GPUPROF_")
            || k.starts_with("CUDA_")
            || k.starts_with("SIM")
            || k.starts_with("NVTX_")
        {
            cmd.env_remove(k);
        }
    }
    cmd.env_remove("LD_PRELOAD");
    let major = if release.starts_with("12.") { 12 } else { 13 };
    cmd.env("LD_LIBRARY_PATH", sim_lib_dir())
        .env("RUST_BACKTRACE", "0")
        .env("GPUPROF_CUPTI_LIB", sim_cupti(major))
        .env("SIMCUPTI_VERSION", release)
        .env("GPUPROF_SESSION_DIR", dir.path())
        .env("CUDA_INJECTION64_PATH", artifact("libgpuprof.so"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(
        out.status.success(),
        "{:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    assert_eq!(out.stdout, STDOUT, "the app's output is unchanged");
    let rings = rings(dir.path());
    assert_eq!(rings.len(), 1, "{rings:?}");
    let mut reader = RingReader::open(&rings[0]).expect("open ring");
    let mut records = Vec::new();
    while let Some(frame) = reader.try_read().expect("ring reads") {
        records.extend(wire::decode_batch(&frame).expect("frame decodes"));
    }
    assert!(reader.is_finished());
    let h = reader.header();
    assert_eq!((h.dropped_records, h.dropped_frames), (0, 0), "no drops");
    assert!(!records.iter().any(|r| matches!(r, Record::Dropped(_))));
    match records.last() {
        Some(Record::End(e)) => assert_eq!(e.records, records.len() as u64 - 1),
        other => panic!("last record is {other:?}"),
    }
    (out, records)
}

fn rings(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .expect("read session dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ring"))
        .collect()
}

fn strings(records: &[Record]) -> HashMap<u32, String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::String(s) => Some((s.id, s.text.clone())),
            _ => None,
        })
        .collect()
}

fn plans(records: &[Record]) -> Vec<&CounterPlan> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::CounterPlan(p) => Some(p),
            _ => None,
        })
        .collect()
}

fn statuses(records: &[Record]) -> Vec<&str> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::CounterStatus(s) => Some(s.message.as_str()),
            _ => None,
        })
        .collect()
}

fn samples(records: &[Record]) -> Vec<&CounterSample> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::CounterSample(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// Kernels in execution order.
fn kernels(records: &[Record]) -> Vec<&Kernel> {
    let mut k: Vec<&Kernel> = records
        .iter()
        .filter_map(|r| match r {
            Record::Kernel(x) => Some(x),
            _ => None,
        })
        .collect();
    k.sort_by_key(|k| k.start_ns);
    k
}

/// The GEMM shape (m, n, k, batch) of each cuBLAS call of the cudarc client, in order
/// (tests/workloads/cudarc-llm/src/main.rs with its default shape; as in
/// inject_tracing.rs), `None` for its own kernels.
fn cudarc_gemms() -> Vec<Option<(u64, u64, u64, u64)>> {
    let (layers, h, ffn, heads, vocab, prompt, decode) =
        (2u64, 1024u64, 2816u64, 8u64, 32000u64, 128u64, 4);
    let mut steps = Vec::new();
    let layer = |steps: &mut Vec<_>, t: u64, prefill: bool| {
        steps.push(None);
        steps.push(Some((3 * h, t, h, 1)));
        if prefill {
            steps.push(Some((t, t, h / heads, heads)));
        }
        steps.push(None);
        steps.push(Some((h, t, h, 1)));
        steps.push(None);
        steps.push(None);
        steps.push(Some((2 * ffn, t, h, 1)));
        steps.push(None);
        steps.push(Some((h, t, ffn, 1)));
        steps.push(None);
    };
    for _ in 0..layers {
        layer(&mut steps, prompt, true);
    }
    steps.push(Some((vocab, 1, h, 1)));
    for _ in 0..decode {
        for _ in 0..layers {
            layer(&mut steps, 1, false);
        }
        steps.push(Some((vocab, 1, h, 1)));
    }
    steps
}

/// The cost model's total of each of `metrics` over the kernels in the ring.
fn model_totals(records: &[Record], metrics: &[&str]) -> Vec<f64> {
    let names = strings(records);
    let ks = kernels(records);
    let gemms = cudarc_gemms();
    assert_eq!(ks.len(), gemms.len());
    let model = CostModel::builtin();
    let mut totals = vec![0.0; metrics.len()];
    for (k, gemm) in ks.iter().zip(gemms) {
        let launch = SimLaunch {
            name: names[&k.name].clone(),
            grid: k.grid.map(|g| g as u32),
            block: k.block.map(|b| b as u32),
            shared_mem: k.dynamic_shared_memory as u32,
            registers: u32::from(k.registers_per_thread),
            gemm: gemm.map(|(m, n, kk, batch)| GemmShape {
                m,
                n,
                k: kk,
                batch,
                elem_bytes: 2,
            }),
        };
        let cost = model.cost(&launch).expect("costed");
        for (t, m) in totals.iter_mut().zip(metrics) {
            *t += cost.counters.get(*m).copied().unwrap_or(0.0);
        }
    }
    totals
}

/// DRAM bytes sampled every 100 µs on the simulated H100: a sampling plan, samples
/// tiling time in increasing windows, no per-kernel counters, and each counter's sum
/// over the samples equal to the cost model's total over the kernels.
#[test]
fn sampling_sums_equal_the_kernels_totals() {
    let (out, records) = run(
        "dram",
        "13.4",
        &[
            ("GPUPROF_COUNTERS", "sampling"),
            (
                "GPUPROF_METRICS",
                "dram__bytes_read.sum,dram__bytes_write.sum",
            ),
        ],
    );
    assert_eq!(out.stderr, "");
    assert!(statuses(&records).is_empty(), "{:?}", statuses(&records));
    assert!(
        !records
            .iter()
            .any(|r| matches!(r, Record::KernelCounters(_))),
        "no per-kernel counters in sampling mode"
    );
    let names = strings(&records);
    let ps = plans(&records);
    assert_eq!(ps.len(), 1, "{ps:?}");
    assert_eq!(
        (
            ps[0].device_id,
            ps[0].chip.as_str(),
            ps[0].mode.as_str(),
            ps[0].policy.as_str()
        ),
        (0, "GH100", "sampling", "every 100 µs, GPU-wide")
    );
    let groups: Vec<Vec<&str>> = ps[0]
        .groups
        .iter()
        .map(|g| g.iter().map(|id| names[id].as_str()).collect())
        .collect();
    assert_eq!(groups, vec![vec![READ, WRITE]]);

    let ss = samples(&records);
    assert!(ss.len() > 1, "{} samples", ss.len());
    let mut prev_end = 0;
    let mut sums = [0.0f64; 2];
    for s in &ss {
        assert_eq!(s.device_id, 0);
        assert!(s.start_ns < s.end_ns, "{s:?}");
        assert!(
            s.start_ns >= prev_end,
            "windows increase and do not overlap: {s:?}"
        );
        assert!(s.end_ns - s.start_ns <= 100_000, "{s:?}");
        prev_end = s.end_ns;
        let got: Vec<&str> = s.metrics.iter().map(|m| names[&m.name].as_str()).collect();
        assert_eq!(got, [READ, WRITE]);
        for (sum, m) in sums.iter_mut().zip(&s.metrics) {
            assert!(m.value >= 0.0 && m.value.fract() == 0.0, "{s:?}");
            *sum += m.value;
        }
    }
    let ks = kernels(&records);
    assert!(ss[0].start_ns <= ks[0].start_ns);
    assert!(prev_end >= ks.iter().map(|k| k.end_ns).max().unwrap());
    let want = model_totals(&records, &[READ, WRITE]);
    assert!(want[0] > 0.0 && want[1] > 0.0, "{want:?}");
    assert_eq!(sums[0], want[0], "{READ}: samples vs kernels");
    assert_eq!(sums[1], want[1], "{WRITE}: samples vs kernels");
}
