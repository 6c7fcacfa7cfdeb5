//! NVIDIA's real CUPTI 13.2 in a program whose driver supports only CUDA 12.8 (the
//! simulated driver, `SIMCUDA_DRIVER_VERSION=12080`). Its first call,
//! `cuptiGetVersion`, crashes such a process (SIGSEGV), so gpuprof must refuse it from
//! its soname (`libcupti.so.13`) before loading it: the program runs to its normal
//! end, with one warning saying why profiling is off.

use std::time::Duration;

use gpuprof_tests::{artifact, manifest_release, record_on_sim, Scratch, TimedChild};

#[test]
fn a_cupti_newer_than_the_driver_is_refused_before_it_is_called() {
    let scratch = Scratch::new("cupti-newer-than-driver");
    let real = &manifest_release("13.2").libcupti;
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.env("GPUPROF_CUPTI_LIB", real)
        .env("SIMCUDA_DRIVER_VERSION", "12080")
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"));
    let o = TimedChild::spawn(cmd, Duration::from_secs(120)).wait();
    assert!(
        o.stdout.contains("cudarc-llm: ok"),
        "the program did not finish: {o:?}"
    );
    let off: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.contains("profiling is off"))
        .collect();
    assert_eq!(off.len(), 1, "{}", o.stderr);
    assert!(
        off[0].starts_with("gpuprof: GPUPROF_CUPTI_LIB=")
            && off[0].contains(
                "not loaded: a CUPTI for CUDA 13 (libcupti.so.13) needs a CUDA 13 driver; \
                 the loaded driver supports CUDA 12.8; profiling is off, the program runs \
                 unprofiled"
            ),
        "{}",
        off[0]
    );
}

/// Every real CUPTI's soname names the CUDA it is built for, as `Cupti::open` reads it.
#[test]
fn the_real_libraries_sonames_name_their_cuda_major() {
    for r in gpuprof_tests::manifest() {
        let want = r
            .release
            .split('.')
            .next()
            .and_then(|m| m.parse::<u32>().ok());
        let got = cupti::soname::cupti_cuda_major(r.libcupti.as_os_str());
        assert_eq!(got, want, "{}: {}", r.release, r.libcupti.display());
    }
}
