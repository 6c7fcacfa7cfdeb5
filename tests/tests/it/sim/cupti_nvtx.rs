//! NVTX through the simulated CUPTI, as through the real one: a C program using
//! NVIDIA's NVTX 3 headers (tests/c/nvtx_client.c) runs with `NVTX_INJECTION64_PATH`
//! naming the sim's libcupti; its ranges and marks come back as MARKER / MARKER_DATA /
//! NAME records, decoded with each release's own CUPTI structs. The program either
//! embeds NVIDIA's header-only NVTX (and so its injection loader), or is built with
//! `NVTX_NO_IMPL` and linked to NVIDIA's NVTX library `libnvtx3interop.so.1` (what
//! cudarc loads as `libnvToolsExt.so`).

use std::path::PathBuf;
use std::process::Command;

use cupti_sys::records::RELEASES;
use gpuprof_tests::{
    artifact, compile_c, cupti_12x, cupti_soname, manifest_release, nvtx_library,
    target_profile_dir,
};

fn family(release: &str, family: &str) -> (&'static str, usize) {
    let r = RELEASES
        .iter()
        .find(|r| r.name == release)
        .expect("release");
    let x = r.records.iter().find(|x| x.0 == family).expect("family");
    (x.1, x.2)
}

/// NVIDIA's NVTX include directory, next to `lib/libnvtx3interop.so.1` in the wheel.
fn nvtx_include() -> PathBuf {
    let lib = nvtx_library();
    let dir = lib
        .parent()
        .and_then(|p| p.parent())
        .expect("nvtx lib dir")
        .join("include");
    assert!(
        dir.join("nvtx3/nvToolsExt.h").is_file(),
        "{} has no nvtx3/nvToolsExt.h",
        dir.display()
    );
    dir
}

/// How the program gets its NVTX implementation.
#[derive(Clone, Copy, PartialEq)]
enum Nvtx {
    /// NVIDIA's header-only NVTX 3, compiled into the program.
    Headers,
    /// NVIDIA's `libnvtx3interop.so.1`, linked.
    Library,
}

fn run(release: &str, nvtx: Nvtx) -> Vec<String> {
    let m = manifest_release(release);
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
    args.extend(m.include_dirs.iter().map(|d| format!("-I{}", d.display())));
    args.push(format!(
        "-DCUPTI_RECORD_MARKER={}",
        family(release, "Marker").0
    ));
    args.push(format!(
        "-DCUPTI_RECORD_MARKER_DATA={}",
        family(release, "MarkerData").0
    ));
    args.push(format!(
        "-DMARKER_DATA_HAS_DOMAIN_ID={}",
        u8::from(has_domain_id(release))
    ));
    args.extend(["-pthread".into(), "-Wall".into(), "-Werror".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let client = compile_c(
        "nvtx_client.c",
        &format!("sim-cupti-nvtx/client-{release}-{variant}"),
        &args,
    );

    let dir: PathBuf = target_profile_dir().join(format!(
        "sim-cupti-nvtx/lib-{release}-{variant}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(artifact("libcuda.so"), dir.join("libcuda.so.1")).expect("copy libcuda");
    let cupti = dir.join(cupti_soname(release));
    std::fs::copy(artifact("libcupti.so"), &cupti).expect("copy libcupti");

    let out = Command::new(&client)
        .arg(&cupti)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LD_LIBRARY_PATH", &dir)
        .env("NVTX_INJECTION64_PATH", &cupti)
        .env("SIMCUPTI_VERSION", release)
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

fn check(release: &str, nvtx: Nvtx) {
    let lines = run(release, nvtx);
    let text = lines.join("\n");

    // What the program saw: every CUPTI call succeeded; push returns the 0-based level
    // of the range started, per domain; pop the level of the range ended, negative
    // with nothing to pop (nvToolsExt.h); range start the marker id.
    let expected_calls = [
        "register 0",
        "enable_marker 0",
        "enable_marker_data 0",
        "enable_name 0",
        "push outer 0",
        "push inner 1",
        "pop inner 1",
        "pop outer 0",
        "pop empty -1",
        "range_start span 5",
        "domain_push registered 0",
        "push default 0",
        "pop default 0",
        "domain_pop registered 0",
        "flush 0",
        "dropped 0",
        "timestamps_ordered 1",
    ];
    let calls: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .filter(|l| !l.starts_with("marker") && !l.starts_with("name "))
        .collect();
    assert_eq!(calls, expected_calls, "{text}");

    // The records, in the order they were made. Id 1 went to the mark made before any
    // activity kind was enabled, which wrote no record.
    let (marker, marker_size) = family(release, "Marker");
    let (_, data_size) = family(release, "MarkerData");
    assert_eq!(marker, "CUpti_ActivityMarker2");
    let dom = |id: u32| {
        if has_domain_id(release) {
            format!(" cuptiDomainId={id}")
        } else {
            String::new()
        }
    };
    let mk = |flags: &str, id: u32, name: &str, domain: &str, thread: &str| {
        format!(
            "marker {flags} id={id} name={name} domain={domain} object=THREAD pid_ok=1 \
             thread={thread} sizeof={marker_size}"
        )
    };
    let data = |id: u32, color: &str, category: u32, payload: &str, domain_id: u32| {
        format!(
            "marker_data id={id} color={color} category={category} payload={payload}{} \
             sizeof={data_size}",
            dom(domain_id)
        )
    };
    let expected_records = vec![
        mk("START", 2, "outer", "(null)", "main"),
        mk("START", 3, "inner", "(null)", "main"),
        data(3, "ARGB:ff00ff00", 7, "u42", 0),
        mk("INSTANT", 4, "tick", "(null)", "main"),
        mk("END", 3, "(null)", "(null)", "main"),
        mk("END", 2, "(null)", "(null)", "main"),
        mk("START", 5, "span", "(null)", "main"),
        mk("END", 5, "(null)", "(null)", "other"),
        mk("START", 6, "registered", "mydomain", "main"),
        data(6, "NONE:00000000", 0, "d0", 1),
        mk("START", 7, "default_level", "(null)", "main"),
        mk("INSTANT", 8, "dmark", "mydomain", "main"),
        data(8, "NONE:00000000", 0, "d2.5", 1),
        mk("START", 9, "dspan", "mydomain", "main"),
        data(9, "NONE:00000000", 0, "i-3", 1),
        mk("END", 9, "(null)", "mydomain", "main"),
        mk("END", 7, "(null)", "(null)", "main"),
        mk("END", 6, "(null)", "mydomain", "main"),
        "name object=THREAD thread_ok=1 name=main-thread".to_string(),
        mk("INSTANT", 10, "with_context", "(null)", "main"),
    ];
    let records: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .filter(|l| l.starts_with("marker") || l.starts_with("name "))
        .collect();
    assert_eq!(records, expected_records, "{text}");
}

fn has_domain_id(release: &str) -> bool {
    !cupti_12x(release)
}

#[test]
fn release_12_9() {
    check("12.9", Nvtx::Headers);
}

#[test]
fn release_13_0() {
    check("13.0", Nvtx::Headers);
}

#[test]
fn release_13_4() {
    check("13.4", Nvtx::Headers);
}

/// NVIDIA's NVTX library performs the same injection as the headers.
#[test]
fn release_13_4_nvtx_library() {
    check("13.4", Nvtx::Library);
}

#[test]
fn release_12_9_nvtx_library() {
    check("12.9", Nvtx::Library);
}
