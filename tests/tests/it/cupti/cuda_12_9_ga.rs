//! CUDA 12.9 GA's CUPTI (the 12.9.19 wheel) answers API version 27; 12.9 Update 1
//! (12.9.79, the pinned 12.9 release) answers 28 (`cupti_version.h`: "v27 : CUDA
//! Toolkit 12.9", "v28 : CUDA Toolkit 12.9 Update 1"). Their headers are identical,
//! so gpuprof decodes 27 with the 12.9 layouts instead of turning tracing off.

use gpuprof_tests::{manifest_release, nvidia_extra};

/// The headers whose structs gpuprof reads or passes.
const HEADERS: [&str; 9] = [
    "cupti_activity.h",
    "cupti_callbacks.h",
    "cupti_driver_cbid.h",
    "cupti_result.h",
    "cupti_profiler_target.h",
    "cupti_profiler_host.h",
    "cupti_range_profiler.h",
    "cupti_pmsampling.h",
    "cupti_target.h",
];

#[test]
fn cuda_12_9_ga_answers_27_and_uses_the_12_9_layouts() {
    // It loads a real libcupti, never unloaded: one CUPTI in the process, its own.
    if !gpuprof_tests::in_own_process(
        module_path!(),
        "cuda_12_9_ga_answers_27_and_uses_the_12_9_layouts",
    ) {
        return;
    }
    let ga = nvidia_extra("cupti_12_9_ga");
    let u1 = manifest_release("12.9");
    for h in HEADERS {
        let a = std::fs::read(ga.join("include").join(h)).expect("12.9 GA header");
        let b = std::fs::read(u1.cupti_include.join(h)).expect("12.9 Update 1 header");
        assert!(
            a == b,
            "{h} differs between CUPTI 12.9 GA and 12.9 Update 1"
        );
    }
    // The only test of this process: one libcupti in it, never unloaded.
    let path = ga.join("lib").join("libcupti.so.12");
    // SAFETY: loading NVIDIA's libcupti runs its initialisers, which need no GPU.
    let lib = unsafe { libloading::Library::new(&path) }.expect("load libcupti 12.9 GA");
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    // SAFETY: `lib` is a real libcupti with the headers' prototypes; never unloaded.
    let fns = unsafe { cupti_sys::CuptiFns::load(lib) };
    let mut v: u32 = 0;
    // SAFETY: cuptiGetVersion writes one uint32_t through the pointer it is given;
    // CUPTI 12.x answers without a driver.
    let rc = unsafe { fns.cuptiGetVersion.expect("cuptiGetVersion")(&mut v) };
    assert_eq!((rc, v), (0, 27));
    let release = cupti::release_for_api_version(cupti::ApiVersion(v)).map(|r| r.name);
    assert_eq!(release, Some("12.9"));
    assert_eq!(
        cupti::release_name_of(cupti::ApiVersion(v)),
        "12.9 (API 27)"
    );
}
