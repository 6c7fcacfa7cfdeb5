//! The simulated CUDA driver (`tests/sim/cuda`, built as `libcuda.so`) seen by a C
//! client that loads it as `libcuda.so.1`: results of the driver API as `cuda.h`
//! documents them, the `SIMCUDA_*` device description, and `CUDA_INJECTION64_PATH`
//! honoured once per process.

use std::path::PathBuf;
use std::process::{Command, Output};

use gpuprof_tests::{compile_c, target_profile_dir, SimCommand};

fn count_injection() -> PathBuf {
    compile_c(
        "count_injection.c",
        "libcount_injection.so",
        &["-shared", "-fPIC"],
    )
}

/// Runs the client on the simulated stack with `env`; returns its output and process id.
fn run_client(env: &[(&str, &str)]) -> (Output, u32) {
    let mut cmd = SimCommand::new(Command::new(compile_c(
        "driver_client.c",
        "driver_client",
        &[],
    )))
    .command();
    cmd.env_remove("COUNT_FILE");
    cmd.envs(env.iter().copied());
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("run driver_client");
    let pid = child.id();
    (
        child.wait_with_output().expect("wait for driver_client"),
        pid,
    )
}

/// A fresh, absent file under `target/` for the injection library to append to.
fn count_file(test: &str) -> PathBuf {
    let dir = target_profile_dir().join("sim-driver");
    std::fs::create_dir_all(&dir).expect("create sim-driver dir");
    let f = dir.join(format!("count-{test}-{}", std::process::id()));
    let _ = std::fs::remove_file(&f);
    f
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The client's output up to the device name, for a device named `name`.
fn expected_head(name: &str) -> String {
    format!(
        "before cuInit: cuDeviceGetCount=3 CUDA_ERROR_NOT_INITIALIZED (initialization error)\n\
         cuDriverGetVersion=0 13000\n\
         cuGetProcAddress_v2(cuInit)=0 status=0 same=1\n\
         cuGetProcAddress_v2(cuBogusFunction)=0 status=1 pfn=NULL\n\
         cuInit(1)=1\n\
         cuInit(0)=0\n\
         cuInit(0)=0\n\
         cuDeviceGetCount=0 1\n\
         cuDeviceGet(0)=0 0\n\
         cuDeviceGet(1)=101\n\
         cuDeviceGetName=0 \"{name}\"\n"
    )
}

#[test]
fn an_h100_by_default_and_injection_runs_once() {
    let counts = count_file("default");
    let (out, pid) = run_client(&[
        ("CUDA_INJECTION64_PATH", count_injection().to_str().unwrap()),
        ("COUNT_FILE", counts.to_str().unwrap()),
    ]);
    let expected = expected_head("NVIDIA H100 80GB HBM3")
        + "cuDeviceGetName(len 7)=0 \"NVIDIA\"\n\
           COMPUTE_CAPABILITY_MAJOR=0 9\n\
           COMPUTE_CAPABILITY_MINOR=0 0\n\
           MULTIPROCESSOR_COUNT=0 132\n\
           CLOCK_RATE=0 1980000\n\
           MEMORY_CLOCK_RATE=0 2619000\n\
           GLOBAL_MEMORY_BUS_WIDTH=0 5120\n\
           MAX_THREADS_PER_BLOCK=0 1024\n\
           WARP_SIZE=0 32\n\
           L2_CACHE_SIZE=0 52428800\n\
           cuDeviceGetAttribute(MAX)=1\n\
           cuDeviceTotalMem_v2=0 85899345920\n\
           cuDeviceGetUuid_v2=0 5a1c0da090004e11800051c000000000\n";
    assert_eq!(stdout(&out), expected);
    assert_eq!(stderr(&out), "");
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(&counts).expect("count file written"),
        format!("{pid}\n")
    );
    let _ = std::fs::remove_file(&counts);
}

#[test]
fn environment_overrides_the_device_and_names_invalid_values() {
    let (out, _) = run_client(&[
        ("SIMCUDA_DEVICE_NAME", "NVIDIA A100-SXM4-80GB"),
        ("SIMCUDA_CC", "8.0"),
        ("SIMCUDA_SM_COUNT", "108"),
        ("SIMCUDA_CLOCK_KHZ", "1410000"),
        ("SIMCUDA_MEM_CLOCK_KHZ", "1593000"),
        ("SIMCUDA_BUS_WIDTH", "five thousand"),
    ]);
    let expected = expected_head("NVIDIA A100-SXM4-80GB")
        + "cuDeviceGetName(len 7)=0 \"NVIDIA\"\n\
           COMPUTE_CAPABILITY_MAJOR=0 8\n\
           COMPUTE_CAPABILITY_MINOR=0 0\n\
           MULTIPROCESSOR_COUNT=0 108\n\
           CLOCK_RATE=0 1410000\n\
           MEMORY_CLOCK_RATE=0 1593000\n\
           GLOBAL_MEMORY_BUS_WIDTH=0 5120\n\
           MAX_THREADS_PER_BLOCK=0 1024\n\
           WARP_SIZE=0 32\n\
           L2_CACHE_SIZE=0 52428800\n\
           cuDeviceGetAttribute(MAX)=1\n\
           cuDeviceTotalMem_v2=0 85899345920\n\
           cuDeviceGetUuid_v2=0 5a1c0da090004e11800051c000000000\n";
    assert_eq!(stdout(&out), expected);
    assert_eq!(
        stderr(&out),
        "simcuda: SIMCUDA_BUS_WIDTH=five thousand is invalid, using 5120\n"
    );
}

#[test]
fn a_missing_injection_library_is_skipped_silently() {
    let (out, _) = run_client(&[("CUDA_INJECTION64_PATH", "/nonexistent/libinject.so")]);
    assert!(
        stdout(&out).starts_with(&expected_head("NVIDIA H100 80GB HBM3")),
        "{}",
        stdout(&out)
    );
    assert_eq!(stderr(&out), "");
    assert!(out.status.success());
}

#[test]
fn no_devices_fails_cuinit_and_skips_injection() {
    let counts = count_file("nodevice");
    let (out, _) = run_client(&[
        ("SIMCUDA_DEVICE_COUNT", "0"),
        ("CUDA_INJECTION64_PATH", count_injection().to_str().unwrap()),
        ("COUNT_FILE", counts.to_str().unwrap()),
    ]);
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(
        lines[5..8],
        ["cuInit(0)=100", "cuInit(0)=100", "cuDeviceGetCount=3 -1"]
    );
    assert!(
        !counts.exists(),
        "InitializeInjection ran without a successful cuInit"
    );
}
