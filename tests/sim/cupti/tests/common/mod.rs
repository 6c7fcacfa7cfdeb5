//! What the C-client tests of the simulated CUPTI share: the workspace's build
//! products (`libcuda.so`, `libcupti.so` in `target/<profile>/`, built by `cargo build
//! --workspace`), NVIDIA's headers and NVTX library from the wheels that `python3
//! scripts/nvidia-wheels.py fetch` puts in `target/nvidia/` (or `$GPUPROF_NVIDIA_DIR`),
//! and a C compiler.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FETCH: &str = "python3 scripts/nvidia-wheels.py fetch";

/// `target/<profile>/`, from the running test binary (`target/<profile>/deps/..`).
pub fn target_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary under target/<profile>/deps")
        .to_path_buf()
}

/// A build product of the workspace. Panics with what to run when it is missing.
pub fn artifact(name: &str) -> PathBuf {
    let p = target_profile_dir().join(name);
    assert!(
        p.is_file(),
        "{} is missing: build the workspace first (cargo build --workspace)",
        p.display()
    );
    p
}

fn nvidia_dir() -> PathBuf {
    match std::env::var_os("GPUPROF_NVIDIA_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../target/nvidia"),
    }
}

fn read(file: &str) -> String {
    let p = nvidia_dir().join(file);
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}; run {FETCH}", p.display()))
}

/// The quoted strings of the JSON array that follows `key` in `text` from `from`.
fn string_array(text: &str, from: usize, key: &str) -> Vec<String> {
    let at = from + text[from..].find(key).expect("key in manifest");
    let open = at + text[at..].find('[').expect("array");
    let close = open + text[open..].find(']').expect("array end");
    text[open + 1..close]
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The `-I` directories of CUPTI release `release` ("12.9") from `manifest.json`.
pub fn include_dirs(release: &str) -> Vec<PathBuf> {
    let text = read("manifest.json");
    let at = text
        .find(&format!("\"release\": \"{release}\""))
        .unwrap_or_else(|| panic!("release {release} is not in the manifest; run {FETCH}"));
    let dirs: Vec<PathBuf> = string_array(&text, at, "\"include_dirs\"")
        .into_iter()
        .map(PathBuf::from)
        .collect();
    for d in &dirs {
        assert!(d.is_dir(), "{} is missing; run {FETCH}", d.display());
    }
    dirs
}

/// NVIDIA's `libnvtx3interop.so.1` (from `extras.json`).
pub fn nvtx_library() -> PathBuf {
    let text = read("extras.json");
    let key = "\"libnvtx3interop\": \"";
    let at = text.find(key).expect("libnvtx3interop in extras.json") + key.len();
    let end = at + text[at..].find('"').expect("string end");
    let p = PathBuf::from(&text[at..end]);
    assert!(p.is_file(), "{} is missing; run {FETCH}", p.display());
    p
}

/// NVIDIA's NVTX include directory (holding `nvtx3/`), beside the library's `lib/`.
pub fn nvtx_include() -> PathBuf {
    let lib = nvtx_library();
    let dir = lib
        .parent()
        .and_then(Path::parent)
        .expect("nvtx lib dir")
        .join("include");
    assert!(
        dir.join("nvtx3/nvToolsExt.h").is_file(),
        "{} has no nvtx3/nvToolsExt.h",
        dir.display()
    );
    dir
}

/// Compiles `tests/c/<src>` with `args` into `target/<profile>/sim-cupti-tests/<out>`.
pub fn compile(src: &str, out: &str, args: &[String]) -> PathBuf {
    let dir = target_profile_dir().join("sim-cupti-tests");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let dest = dir.join(out);
    let tmp = dir.join(format!(".{out}.{}", std::process::id()));
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(src);
    let status = Command::new("cc")
        .args(args)
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .arg("-ldl")
        .arg("-pthread")
        .status()
        .expect("run cc (a C compiler is needed by the tests)");
    assert!(status.success(), "cc {} failed", src.display());
    std::fs::rename(&tmp, &dest).expect("rename compiled file");
    dest
}

/// A directory laid out as a program finds the CUDA stack: the sim's driver as
/// `libcuda.so.1` and its CUPTI as `libcupti.so.<major of release>`. Returns (dir, CUPTI).
pub fn lib_dir(name: &str, release: &str) -> (PathBuf, PathBuf) {
    let dir = target_profile_dir()
        .join("sim-cupti-tests")
        .join(format!("lib-{name}-{release}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(artifact("libcuda.so"), dir.join("libcuda.so.1")).expect("copy libcuda");
    let major = release.split('.').next().expect("major");
    let cupti = dir.join(format!("libcupti.so.{major}"));
    std::fs::copy(artifact("libcupti.so"), &cupti).expect("copy libcupti");
    (dir, cupti)
}

/// Runs `client` with only `PATH` from this environment, plus `env`.
pub fn run(client: &Path, args: &[&Path], env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut cmd = Command::new(client);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run the client")
}

/// The client's stdout as lines, after checking that it succeeded with nothing on stderr.
pub fn lines(out: &Output) -> Vec<String> {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "client failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert_eq!(stderr, "", "stderr of the client; stdout:\n{stdout}");
    stdout.lines().map(str::to_owned).collect()
}
