//! Real third-party clients, unmodified, on the simulated CUDA stack: a Rust program on
//! `cudarc` (driver, cuBLAS, cuBLASLt, NVTX through NVIDIA's own NVTX library) and a
//! Python program on NVIDIA's `cuda-bindings` (driver API through cuGetProcAddress,
//! CUDA graphs). Each runs to completion with correct results from the sim's point of
//! view, alone and with libgpuprof.so injected through CUDA_INJECTION64_PATH.

use std::path::Path;
use std::process::{Command, Output};

use gpuprof_tests::{
    artifact, cupti_major, sim_cupti, venv_python, Injection, Scratch, SimCommand,
};

/// `cmd` on the simulated stack.
fn on_the_sim(cmd: Command) -> Command {
    SimCommand::new(cmd).command()
}

/// `cmd` on the simulated stack with CUPTI `cupti_release`, injected into a session
/// directory of the test's (no collector: the rings stay in `session`, which the test
/// removes; `inject/tracing.rs` reads them).
fn injected(cmd: Command, cupti_release: &str, session: &Scratch) -> Command {
    let mut cmd = SimCommand::new(cmd)
        .cupti(cupti_release)
        .injected(Injection::Driver)
        .session_dir(session.path())
        .command();
    cmd.env("GPUPROF_LOG", "info");
    cmd
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "{:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn cudarc_llm() -> Command {
    Command::new(artifact("cudarc-llm"))
}

const CUDARC_SUMMARY: &str =
    "cudarc-llm: ok: 2 layers, prompt 128, 4 decode steps: 60 kernel launches, 47 GEMMs\n";

#[test]
fn cudarc_program_runs_on_the_sim() {
    let out = on_the_sim(cudarc_llm()).output().unwrap();
    assert_ok(&out);
    assert_eq!(text(&out.stdout), CUDARC_SUMMARY);
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn cudarc_program_runs_with_the_profiler_injected() {
    for (release, line) in [
        ("13.4", "CUPTI 13.4.1 (API 130401)"),
        ("12.9", "CUPTI 12.9 (API 28)"),
    ] {
        let session = Scratch::new(&format!("sim-clients-cudarc-{release}"));
        let out = injected(cudarc_llm(), release, &session).output().unwrap();
        assert_ok(&out);
        assert_eq!(text(&out.stdout), CUDARC_SUMMARY);
        assert_eq!(
            text(&out.stderr),
            format!(
                "gpuprof: {line} from {} (GPUPROF_CUPTI_LIB); record layouts of CUPTI {release}; driver supports \
                 CUDA 13.0\n",
                sim_cupti(cupti_major(release)).display()
            )
        );
    }
}

#[test]
fn cudarc_program_reports_a_bad_argument_like_any_program() {
    let mut cmd = on_the_sim(cudarc_llm());
    cmd.args(["--heads", "0"]);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: invalid value '0' for '--heads <HEADS>': needs a positive integer, not 0\n\n\
         For more information, try '--help'.\n"
    );
}

/// The demo's help sends users to `cudarc-llm --help`: it lists every option and
/// exits 0 without touching CUDA.
#[test]
fn cudarc_program_help_lists_its_options() {
    let out = cudarc_llm().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    for option in [
        "--layers <LAYERS>",
        "--hidden <HIDDEN>",
        "--ffn <FFN>",
        "--heads <HEADS>",
        "--vocab <VOCAB>",
        "--prompt <PROMPT>",
        "--decode-steps <DECODE_STEPS>",
        "--graph-decode",
    ] {
        assert!(help.contains(option), "{option} missing from:\n{help}");
    }
}

fn python_llm() -> Command {
    let mut cmd = Command::new(venv_python());
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/python/llm_driver.py"));
    cmd
}

/// The summary line up to the measured GPU time, and that time.
fn python_summary(stdout: &str) -> (&str, f64) {
    let line = stdout
        .strip_suffix(" ms on the GPU\n")
        .unwrap_or_else(|| panic!("unexpected output: {stdout}"));
    let (head, ms) = line.rsplit_once(", ").expect("summary has a GPU time");
    (head, ms.parse().expect("GPU time is a number"))
}

#[test]
fn cuda_python_program_runs_on_the_sim() {
    let out = on_the_sim(python_llm()).output().unwrap();
    assert_ok(&out);
    let stdout = text(&out.stdout);
    let (head, ms) = python_summary(&stdout);
    assert_eq!(
        head,
        "llm_driver: ok: 2 layers, prompt 128, 4 decode steps (graph replays): 24 launches captured or issued"
    );
    // Between the two events: 12 prefill kernels and 4 replays of 12 decode kernels,
    // each at least the cost model's 2 us floor (the device runs one at a time).
    assert!(ms >= 60.0 * 0.002, "{ms} ms");
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn cuda_python_program_runs_with_the_profiler_injected() {
    let session = Scratch::new("sim-clients-python");
    let out = injected(python_llm(), "13.0", &session).output().unwrap();
    assert_ok(&out);
    assert!(
        text(&out.stdout).starts_with("llm_driver: ok: "),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: CUPTI 13.0.1 (API 130001) from {} (GPUPROF_CUPTI_LIB); record layouts of CUPTI 13.0; driver \
             supports CUDA 13.0\n",
            sim_cupti(13).display()
        )
    );
}
