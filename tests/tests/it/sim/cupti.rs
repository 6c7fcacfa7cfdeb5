//! The simulated CUPTI end to end: a C client (tests/c/cupti_client.c), compiled per
//! release against that release's own NVIDIA headers, drives the simulated driver
//! with the sim CUPTI impersonating the release, and decodes every record with
//! NVIDIA's structs.

use std::path::PathBuf;
use std::process::Command;

use cupti_sys::records::RELEASES;
use gpuprof_tests::{artifact, compile_c, cupti_soname, manifest_release, target_profile_dir};

/// The record struct a release uses for `family`, e.g. "CUpti_ActivityKernel9".
fn record_struct(release: &str, family: &str) -> &'static str {
    let r = RELEASES
        .iter()
        .find(|r| r.name == release)
        .expect("release");
    r.records.iter().find(|x| x.0 == family).expect("family").1
}

fn record_size(release: &str, family: &str) -> usize {
    let r = RELEASES
        .iter()
        .find(|r| r.name == release)
        .expect("release");
    r.records.iter().find(|x| x.0 == family).expect("family").2
}

/// Runs the client for `release`; returns its stdout lines.
/// The cost model the simulated driver prices the client's kernels with.
const COST_MODEL: &str = r#"
[[kernel]]
name = "axpy"
duration_ns = "1500 + 7 * blocks * threads / 128"
[[kernel]]
name = "*"
duration_ns = "1000"
"#;

/// What the model says the client's `axpy` launch (grid 4,2,1, block 128, 256 bytes of
/// dynamic shared memory) takes.
fn axpy_ns() -> u64 {
    let model = sim_core::CostModel::from_toml_str(COST_MODEL, "sim/cupti.rs").expect("model");
    let launch = sim_core::Launch {
        name: "axpy".into(),
        grid: [4, 2, 1],
        block: [128, 1, 1],
        shared_mem: 256,
        ..Default::default()
    };
    model.cost(&launch).expect("cost").duration_ns
}

fn run(release: &str) -> Vec<String> {
    let m = manifest_release(release);
    let mut args: Vec<String> = m
        .include_dirs
        .iter()
        .map(|d| format!("-I{}", d.display()))
        .collect();
    for (macro_name, family) in [
        ("CUPTI_RECORD_KERNEL", "Kernel"),
        ("CUPTI_RECORD_MEMCPY", "Memcpy"),
        ("CUPTI_RECORD_CONTEXT", "Context"),
        ("CUPTI_RECORD_DEVICE", "Device"),
    ] {
        args.push(format!("-D{macro_name}={}", record_struct(release, family)));
    }
    args.push("-pthread".into());
    args.push("-Wall".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let client = compile_c(
        "cupti_client.c",
        &format!("sim-cupti/client-{release}"),
        &args,
    );

    let dir: PathBuf =
        target_profile_dir().join(format!("sim-cupti/lib-{release}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(artifact("libcuda.so"), dir.join("libcuda.so.1")).expect("copy libcuda");
    let cupti = dir.join(cupti_soname(release));
    std::fs::copy(artifact("libcupti.so"), &cupti).expect("copy libcupti");

    std::fs::write(dir.join("model.toml"), COST_MODEL).expect("write the cost model");
    let out = Command::new(&client)
        .arg(&cupti)
        .env("LD_LIBRARY_PATH", &dir)
        .env("SIMCUDA_COST_MODEL", dir.join("model.toml"))
        .env("SIMCUPTI_VERSION", release)
        .env_remove("CUDA_INJECTION64_PATH")
        .output()
        .expect("run the client");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "client for {release} failed: {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.lines().map(str::to_owned).collect()
}

/// The value of `key=` in `line`.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let pat = format!("{key}=");
    let start = line.find(&pat).unwrap_or_else(|| panic!("{key} in {line}")) + pat.len();
    line[start..].split(' ').next().unwrap_or("")
}

fn check(release: &str) {
    let lines = run(release);
    let text = lines.join("\n");
    let api = RELEASES
        .iter()
        .find(|r| r.name == release)
        .unwrap()
        .api_version;
    assert!(lines.contains(&format!("version 0 {api}")), "{text}");
    assert!(lines.contains(&"subscribe 0".to_string()), "{text}");
    // One subscriber at a time for cuptiSubscribe, in every release.
    assert!(
        lines.contains(
            &"second_subscribe 39 CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED".to_string()
        ),
        "{text}"
    );
    for l in lines.iter().filter(|l| l.starts_with("enable ")) {
        assert!(l.ends_with(" 0"), "{l}");
    }

    let enter_ids: Vec<u32> = lines
        .iter()
        .filter(|l| l.starts_with("cb_enter cuLaunchKernel"))
        .map(|l| field(l, "corr").parse().unwrap())
        .collect();
    assert_eq!(enter_ids.len(), 5, "{text}");
    for l in lines.iter().filter(|l| l.starts_with("cb_exit")) {
        assert_eq!(
            field(l, "corr"),
            field(l, "data"),
            "correlationData shared: {l}"
        );
        assert_eq!(field(l, "result"), "0");
    }

    let kernels: Vec<&String> = lines.iter().filter(|l| l.starts_with("kernel ")).collect();
    assert_eq!(kernels.len(), 3, "{text}");
    let ksize = record_size(release, "Kernel").to_string();
    for (k, id) in kernels.iter().zip(&enter_ids) {
        assert_eq!(field(k, "kind"), "10");
        assert_eq!(
            field(k, "corr"),
            id.to_string(),
            "kernel correlation = launch callback's"
        );
        assert_eq!(field(k, "name"), "axpy");
        assert_eq!(field(k, "grid"), "4,2,1");
        assert_eq!(field(k, "block"), "128,1,1");
        assert_eq!(field(k, "smem"), "256,256");
        assert_eq!(
            field(k, "sizeof"),
            ksize,
            "the C side's struct is the release's"
        );
        assert_eq!(field(k, "duration"), axpy_ns().to_string());
    }
    let memcpys: Vec<&String> = lines.iter().filter(|l| l.starts_with("memcpy ")).collect();
    assert_eq!(memcpys.len(), 2, "{text}");
    assert_eq!(field(memcpys[0], "copyKind"), "1", "HtoD");
    assert_eq!(field(memcpys[1], "copyKind"), "2", "DtoH");
    assert!(memcpys.iter().all(|m| field(m, "bytes") == "1024"));
    let copy_ns = sim_core::transfer::transfer_ns(1024, sim_core::transfer::HOST_LINK_BYTES_PER_NS);
    assert!(
        memcpys
            .iter()
            .all(|m| field(m, "duration") == copy_ns.to_string()),
        "{text}"
    );
    assert!(lines.iter().any(|l| l.starts_with("context ")), "{text}");
    let device = lines
        .iter()
        .find(|l| l.starts_with("device "))
        .expect("device record");
    assert_eq!(
        field(device, "sizeof"),
        record_size(release, "Device").to_string()
    );
    // Every launch has its driver API record with the same correlation id.
    for id in &enter_ids[..3] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("driver cbid=307") && field(l, "corr") == id.to_string()),
            "{text}"
        );
    }
    assert!(lines
        .iter()
        .filter(|l| l.starts_with("driver "))
        .all(|l| field(l, "ordered") == "1"));
    assert!(
        !text.contains("misaligned") && !text.contains("next_record error"),
        "{text}"
    );

    // Buffers come back on a CUPTI thread.
    let buffers: Vec<&String> = lines.iter().filter(|l| l.starts_with("buffer ")).collect();
    assert_eq!(buffers.len(), 1, "{text}");
    assert_eq!(field(buffers[0], "client_thread"), "0");

    // With the request callback declining: 2 kernels + 2 launch API records + the
    // cuCtxSynchronize API record are dropped, and counted once.
    assert!(lines.contains(&"flush_declined 0".to_string()), "{text}");
    assert!(lines.contains(&"dropped 0 5".to_string()), "{text}");
    assert!(lines.contains(&"unsubscribe 0".to_string()), "{text}");
}

#[test]
fn release_12_9() {
    check("12.9");
}

#[test]
fn release_13_0() {
    check("13.0");
}

#[test]
fn release_13_4() {
    check("13.4");
}

/// Every other release the profiler has layouts for.
#[test]
fn every_other_release() {
    let done = ["12.9", "13.0", "13.4"];
    let others: Vec<&str> = cupti_sys::records::RELEASES
        .iter()
        .map(|r| r.name)
        .filter(|n| !done.contains(n))
        .collect();
    assert_eq!(
        others,
        ["12.4", "12.6", "12.8", "13.1", "13.2", "13.3", "13.5"]
    );
    for release in others {
        check(release);
    }
}
