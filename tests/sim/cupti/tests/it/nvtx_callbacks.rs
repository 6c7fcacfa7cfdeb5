//! `CUPTI_CB_DOMAIN_NVTX` callbacks of the simulated CUPTI, seen by a C subscriber
//! (`tests/c/nvtx_callbacks.c`) that calls NVTX through NVIDIA's own loader (the NVTX 3
//! headers, or NVIDIA's `libnvtx3interop.so.1`) with `NVTX_INJECTION64_PATH` naming the
//! sim's libcupti, compiled against each release's CUPTI headers so the parameters are
//! decoded with NVIDIA's `generated_nvtx_meta.h` structs and the ids of
//! `cupti_nvtx_cbid.h`.
//!
//! Needs the workspace built (`cargo build --workspace`), the NVIDIA wheels
//! (`python3 scripts/nvidia-wheels.py fetch`) and a C compiler.

use crate::common::{compile, include_dirs, lib_dir, lines, nvtx_include, nvtx_library, run};

/// How the client gets its NVTX implementation.
#[derive(Clone, Copy, PartialEq)]
enum Nvtx {
    /// NVIDIA's header-only NVTX 3, compiled into the program.
    Headers,
    /// NVIDIA's `libnvtx3interop.so.1`, linked.
    Library,
}

fn client_output(release: &str, nvtx: Nvtx) -> Vec<String> {
    let mut args = vec![format!("-I{}", nvtx_include().display())];
    let variant = match nvtx {
        Nvtx::Headers => "headers",
        Nvtx::Library => {
            let lib = nvtx_library();
            let dir = lib.parent().expect("nvtx lib dir");
            args.push("-DNVTX_NO_IMPL".into());
            args.push("-Wl,--no-as-needed".into());
            args.push(lib.display().to_string());
            args.push(format!("-Wl,-rpath,{}", dir.display()));
            "library"
        }
    };
    args.extend(
        include_dirs(release)
            .iter()
            .map(|d| format!("-I{}", d.display())),
    );
    args.extend(["-Wall".into(), "-Werror".into()]);
    let client = compile(
        "nvtx_callbacks.c",
        &format!("nvtx-callbacks-{release}-{variant}-{}", std::process::id()),
        &args,
    );
    let (dir, cupti) = lib_dir("nvtx", &format!("{release}-{variant}"));
    let out = run(
        &client,
        &[&cupti],
        &[
            ("LD_LIBRARY_PATH", dir.as_os_str()),
            ("NVTX_INJECTION64_PATH", cupti.as_os_str()),
            ("SIMCUPTI_VERSION", release.as_ref()),
        ],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&client);
    lines(&out)
}

/// What the subscriber sees, in order:
/// - nothing while subscribed with no NVTX callback enabled (`cuptiGetCallbackState` 0);
/// - after `cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_NVTX)`, one callback per NVTX
///   call, after the call's work, with the function's name, its params struct holding
///   the caller's arguments, and a pointer to its return value: push and pop the
///   domain-scoped level (-1 for a pop with nothing pushed), range start the range id
///   (the marker id: ids 1 to 7 went to the marks and pushes before), domain create and
///   register string the handle returned, NULL for `void` functions;
/// - callbacks come on the calling thread (the other thread's mark reached the
///   callback on that thread);
/// - a disabled id (`nvtxMarkA`) is not delivered while the others are; with the domain
///   disabled nothing is, until one id (`nvtxRangePop`) is enabled again;
/// - `cuptiEnableAllDomains` includes NVTX; an id past `CUPTI_CBID_NVTX_SIZE` is
///   `CUPTI_ERROR_INVALID_PARAMETER` (1); nothing after unsubscribing.
fn check(release: &str, nvtx: Nvtx) {
    let got = client_output(release, nvtx);
    let expected = "\
cuInit 0
subscribe 0
state 8 r=0 on=0
enable_domain 0
state 8 r=0 on=1
state 43 r=0 on=1
cb 8 nvtxRangePushA message=outer ret=0
  push returned 0, callback saw the same: 1
cb 9 nvtxRangePushW message=wide ret=1
  push returned 1, callback saw the same: 1
cb 10 nvtxRangePushEx eventAttrib=ex ret=2
  push returned 2, callback saw the same: 1
cb 11 nvtxRangePop ret=2
  pop returned 2, callback saw the same: 1
cb 11 nvtxRangePop ret=1
  pop returned 1, callback saw the same: 1
cb 11 nvtxRangePop ret=0
  pop returned 0, callback saw the same: 1
cb 11 nvtxRangePop ret=-1
  pop returned -1, callback saw the same: 1
cb 1 nvtxMarkA message=mark ret=NULL
cb 2 nvtxMarkW message=wmark ret=NULL
cb 3 nvtxMarkEx eventAttrib=exmark ret=NULL
cb 4 nvtxRangeStartA message=span ret=8
  start returned 8, callback saw the same: 1
cb 5 nvtxRangeStartW message=wspan ret=9
  start returned 9, callback saw the same: 1
cb 6 nvtxRangeStartEx eventAttrib=exspan ret=10
  start returned 10, callback saw the same: 1
cb 7 nvtxRangeEnd id=9 ret=NULL
cb 7 nvtxRangeEnd id=8 ret=NULL
cb 7 nvtxRangeEnd id=10 ret=NULL
cb 12 nvtxNameCategoryA category=3 name=cat ret=NULL
cb 13 nvtxNameCategoryW category=4 name=wcat ret=NULL
cb 14 nvtxNameOsThreadA threadId=1234 name=thr ret=NULL
cb 15 nvtxNameOsThreadW threadId=1235 name=wthr ret=NULL
cb 41 nvtxDomainCreateA name=dom ret=handle
  domain create returned a handle, callback saw the same: 1
cb 42 nvtxDomainCreateW name=wdom ret=handle
  domain create returned a handle, callback saw the same: 1
cb 39 nvtxDomainRegisterStringA domain=ok string=reg ret=handle
  register returned a handle, callback saw the same: 1
cb 40 nvtxDomainRegisterStringW domain=ok string=wreg ret=handle
  register returned a handle, callback saw the same: 1
cb 37 nvtxDomainNameCategoryA domain=ok category=5 name=dcat ret=NULL
cb 38 nvtxDomainNameCategoryW domain=ok category=6 name=wdcat ret=NULL
cb 30 nvtxDomainMarkEx domain=ok eventAttrib=dmark ret=NULL
cb 31 nvtxDomainRangeStartEx domain=ok eventAttrib=dspan ret=12
  start returned 12, callback saw the same: 1
cb 32 nvtxDomainRangeEnd domain=ok id=12 ret=NULL
cb 33 nvtxDomainRangePushEx domain=ok eventAttrib=dpush ret=0
  push returned 0, callback saw the same: 1
cb 34 nvtxDomainRangePop domain=ok ret=0
  pop returned 0, callback saw the same: 1
cb 43 nvtxDomainDestroy domain=ok ret=NULL
other thread callback ok 1
disable markA 0
state 1 r=0 on=0
cb 2 nvtxMarkW message=shown ret=NULL
disable_domain 0
enable pop 0
state 8 r=0 on=0
state 11 r=0 on=1
cb 11 nvtxRangePop ret=0
  pop returned 0, callback saw the same: 1
enable_all 0
state 1 r=0 on=1
cb 1 nvtxMarkA message=all ret=NULL
enable invalid 1
state 50 r=1 on=99
unsubscribe 0
done";
    let expected: Vec<&str> = expected.lines().collect();
    assert_eq!(got, expected, "release {release}");
}

#[test]
fn nvtx_callbacks_12_9() {
    check("12.9", Nvtx::Headers);
}

#[test]
fn nvtx_callbacks_13_4() {
    check("13.4", Nvtx::Headers);
}

/// NVIDIA's NVTX library routes the calls to the same callbacks.
#[test]
fn nvtx_callbacks_13_4_nvtx_library() {
    check("13.4", Nvtx::Library);
}
