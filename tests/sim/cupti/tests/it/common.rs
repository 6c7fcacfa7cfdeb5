//! What the C-client tests of the simulated CUPTI share: the workspace's build
//! products (`libcuda.so`, `libcupti.so` in `target/<profile>/`, built by `cargo build
//! --workspace`), NVIDIA's headers and NVTX library from the wheels that `python3
//! scripts/nvidia-wheels.py fetch` puts in `target/nvidia/` (or `$GPUPROF_NVIDIA_DIR`),
//! and a C compiler.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use gpuprof_tests::{artifact, nvtx_library, target_profile_dir};

/// The `-I` directories of CUPTI release `release` ("12.9") from the wheel manifest.
pub fn include_dirs(release: &str) -> Vec<PathBuf> {
    gpuprof_tests::manifest_release(release)
        .include_dirs
        .clone()
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
