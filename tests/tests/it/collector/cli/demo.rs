//! `gpuprof demo`, the README's main command, on a machine without a GPU: the
//! built-in workload on the simulated H100 through the real injection path, and its
//! outputs.

use gpuprof_tests::{gpuprof_command, Scratch};

#[test]
fn demo_on_the_simulated_gpu_writes_report_roofline_and_trace() {
    let scratch = Scratch::new("demo-sim");
    let out_dir = scratch.join("out");
    let out = gpuprof_command()
        .args(["demo", "--sim", "-o"])
        .arg(&out_dir)
        .args(["--", "--decode-steps", "2"])
        .output()
        .expect("run gpuprof demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with(
            "cudarc-llm: ok: 2 layers, prompt 128, 2 decode steps: 36 kernel launches, 29 GEMMs\n"
        ),
        "{stdout}"
    );
    for section in [
        "Kernels by GPU time (65 kernels,",
        "Roofline by kernel",
        "Roofline by NVTX range",
        "Dropped records",
    ] {
        assert!(stdout.contains(section), "{section} missing:\n{stdout}");
    }
    let d = out_dir.display();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 6, "{stderr}");
    assert_eq!(
        lines[..4],
        [
            "gpuprof: demo: the workload runs on the simulated H100 (tests/sim: driver, CUPTI, \
             cuBLAS, cuBLASLt), through the real injection path"
                .to_string(),
            format!("gpuprof: session written to {d} (1 process, 65 kernels, 0 dropped); gpuprof report {d}"),
            // The demo asks for kernel replay, so even kernels launched twice have every
            // counter and every point (10 GEMM shapes, 5 other kernels) is drawn.
            format!("gpuprof: roofline of NVIDIA H100 80GB HBM3 written to {d}/roofline.svg (15 of 15 points plotted)"),
            format!("gpuprof: the points: {d}/roofline.csv and {d}/roofline.json"),
        ]
    );
    assert!(
        lines[4].starts_with(&format!(
            "gpuprof: trace written to {d}/trace.perfetto-trace: 65 kernels, " // A flow from each launch, and from the calls of the 4 copies and 43 sets.
        )) && lines[4]
            .ends_with(" 112 flows from CPU call to GPU work; open it in ui.perfetto.dev"),
        "{}",
        lines[4]
    );
    assert_eq!(
        lines[5],
        format!("gpuprof: demo: everything is in {d}: gpuprof report {d} [--format csv|json]")
    );
    let mut files: Vec<String> = std::fs::read_dir(&out_dir)
        .expect("output directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "index.json",
            "parts",
            "roofline.csv",
            "roofline.json",
            "roofline.svg",
            "trace.perfetto-trace"
        ]
    );
}

#[test]
fn demo_on_a_gpu_that_is_not_there_says_so() {
    let scratch = Scratch::new("demo-gpu");
    let out = gpuprof_command()
        .args(["demo", "--gpu", "-o"])
        .arg(scratch.join("out"))
        .output()
        .expect("run gpuprof demo");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "gpuprof: error: --gpu: gpuprof doctor finds no usable CUDA driver and CUPTI here \
         (run it to see why)\n"
    );
}

#[test]
fn demo_without_the_nvtx_library_names_what_to_do() {
    let scratch = Scratch::new("demo-nvtx");
    let out = gpuprof_command()
        .args(["demo", "--sim", "-o"])
        .arg(scratch.join("out"))
        .env("GPUPROF_NVTX_LIB", scratch.join("nope.so"))
        .output()
        .expect("run gpuprof demo");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "gpuprof: error: GPUPROF_NVTX_LIB={} is not a file\n",
            scratch.join("nope.so").display()
        )
    );
}
