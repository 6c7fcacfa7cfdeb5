//! Running the cudarc workload with libgpuprof.so injected and reading back the ring it
//! leaves: the harness of the injected-library tests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use wire::ring::RingReader;
use wire::{CounterPlan, Kernel, Record};

use crate::{artifact, sim_lib_dir, Finished, Scratch, SimCommand, TimedChild};

/// How long one run may take.
pub const RUN_LIMIT: Duration = Duration::from_secs(120);

/// What the cudarc workload prints with its default shape.
pub const CUDARC_LLM_STDOUT: &str =
    "cudarc-llm: ok: 2 layers, prompt 128, 4 decode steps: 60 kernel launches, 47 GEMMs\n";

/// What `tests/c/wait_value.c` prints, but for its `write_ns` line: the work behind
/// the wait has not run before the host's write (600: `CUDA_ERROR_NOT_READY`, the
/// copy's data not landed) and has after it.
pub const WAIT_VALUE_STDOUT: [&str; 6] = [
    "launched",
    "query before write 600",
    "data before write 0",
    "query after sync 0",
    "data after sync 42",
    "done",
];

/// How the profiler gets into the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injection {
    /// `CUDA_INJECTION64_PATH=libgpuprof.so`: the driver loads it at `cuInit`.
    Driver,
    /// `LD_PRELOAD=libgpuprof.so`.
    Preload,
}

/// The cudarc client on the simulated H100 with CUPTI `release`, libgpuprof.so
/// injected into a session directory of its own (no collector), with `env` on top of a
/// clean environment. Checks the app's output is unchanged, one ring, finished, nothing
/// dropped, `End` last; returns the run and the ring's records.
pub fn run_cudarc_injected(
    scratch: &str,
    release: &str,
    env: &[(&str, &str)],
) -> (Finished, Vec<Record>) {
    let (out, records) = run_injected(
        &artifact("cudarc-llm"),
        Injection::Driver,
        scratch,
        release,
        env,
    );
    assert_eq!(
        out.stdout, CUDARC_LLM_STDOUT,
        "the app's output is unchanged"
    );
    (out, records)
}

/// `program` on the simulated H100 with CUPTI `release`, libgpuprof.so injected the
/// `how` way into a session directory of its own (no collector), with `env` on top of
/// a clean environment. Checks the program succeeded, one ring, finished, nothing
/// dropped, `End` last; returns the run and the ring's records.
pub fn run_injected(
    program: &Path,
    how: Injection,
    scratch: &str,
    release: &str,
    env: &[(&str, &str)],
) -> (Finished, Vec<Record>) {
    run_injected_with_args(program, &[], how, scratch, release, env)
}

/// [`run_injected`] with command-line arguments for `program`.
pub fn run_injected_with_args(
    program: &Path,
    args: &[&str],
    how: Injection,
    scratch: &str,
    release: &str,
    env: &[(&str, &str)],
) -> (Finished, Vec<Record>) {
    run_injected_within(program, args, how, scratch, release, env, RUN_LIMIT)
}

/// [`run_injected_with_args`] killed (and the test failed, with what the program
/// printed) if it has not finished within `limit`.
pub fn run_injected_within(
    program: &Path,
    args: &[&str],
    how: Injection,
    scratch: &str,
    release: &str,
    env: &[(&str, &str)],
    limit: Duration,
) -> (Finished, Vec<Record>) {
    let dir = Scratch::new(scratch);
    let mut cmd = SimCommand::new(Command::new(program))
        .cupti(release)
        .injected(how)
        .session_dir(dir.path())
        .command();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = TimedChild::spawn(cmd, limit).wait();
    assert!(
        out.status.success(),
        "{:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    let rings = ring_files(dir.path());
    assert_eq!(rings.len(), 1, "{rings:?}");
    let mut reader = RingReader::open(&rings[0]).expect("open ring");
    let mut records = Vec::new();
    while let Some(frame) = reader.try_read().expect("ring reads") {
        records.extend(wire::decode_batch(&frame).expect("frame decodes"));
    }
    assert!(reader.is_finished());
    let h = reader.header();
    assert_eq!(
        (h.dropped_records, h.dropped_frames),
        (0, 0),
        "no drops: {h:?}"
    );
    assert!(!records.iter().any(|r| matches!(r, Record::Dropped(_))));
    match records.last() {
        Some(Record::End(e)) => assert_eq!(e.records, records.len() as u64 - 1),
        other => panic!("last record is {other:?}"),
    }
    (out, records)
}

/// `tests/c/gemm_linked.c` built against the simulated cuBLAS, cuBLASLt and driver:
/// a client whose GEMM calls go through its PLT, as PyTorch's do.
pub fn gemm_linked_client() -> PathBuf {
    let lib_dir = format!("-L{}", sim_lib_dir().display());
    crate::compile_c(
        "gemm_linked.c",
        "gemm_linked",
        &[
            "-Wl,--no-as-needed",
            &lib_dir,
            "-lcublas",
            "-lcublasLt",
            "-lcuda",
        ],
    )
}

pub fn ring_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .expect("read session dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ring"))
        .collect()
}

pub fn strings(records: &[Record]) -> HashMap<u32, String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::String(s) => Some((s.id, s.text.clone())),
            _ => None,
        })
        .collect()
}

pub fn plans(records: &[Record]) -> Vec<&CounterPlan> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::CounterPlan(p) => Some(&**p),
            _ => None,
        })
        .collect()
}

pub fn statuses(records: &[Record]) -> Vec<&str> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::CounterStatus(s) => Some(s.message.as_str()),
            _ => None,
        })
        .collect()
}

/// Kernels in execution order.
pub fn kernels_in_order(records: &[Record]) -> Vec<&Kernel> {
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
/// tests/tests/it/inject/tracing.rs), `None` for its own kernels.
pub fn cudarc_gemms() -> Vec<Option<(u64, u64, u64, u64)>> {
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
