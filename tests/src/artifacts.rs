//! The workspace's own build products (`libgpuprof.so`, `gpuprof`) and the small C
//! programs of `tests/c/`, compiled on demand.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// `target/<profile>/`, found from the running test binary (`target/<profile>/deps/..`).
pub fn target_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("test binary under target/<profile>/deps")
        .to_path_buf()
}

/// A build product of the workspace, e.g. `libgpuprof.so` or `gpuprof`. Panics with
/// what to run when it has not been built.
pub fn artifact(name: &str) -> PathBuf {
    let p = target_profile_dir().join(name);
    assert!(
        p.is_file(),
        "{} is missing: build the workspace first (cargo build --workspace)",
        p.display()
    );
    p
}

/// Compiles `tests/c/<src>` with `cc` and `args` into `target/<profile>/test-c/<out>`,
/// once per process; the file appears atomically, so concurrent test processes never
/// see a half-written one.
pub fn compile_c(src: &str, out: &str, args: &[&str]) -> PathBuf {
    static BUILT: OnceLock<Mutex<Vec<(String, PathBuf)>>> = OnceLock::new();
    let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
    let mut built = built.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(k, _)| k == out) {
        return p.clone();
    }
    let dest = target_profile_dir().join("test-c").join(out);
    let dir = dest.parent().expect("parent").to_path_buf();
    std::fs::create_dir_all(&dir).expect("create test-c dir");
    let src_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("c").join(src);
    let name = dest
        .file_name()
        .expect("file name")
        .to_string_lossy()
        .into_owned();
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    let status = Command::new("cc")
        .args(args)
        .arg("-o")
        .arg(&tmp)
        .arg(&src_path)
        .arg("-ldl")
        .status()
        .expect("run cc (a C compiler is needed by the tests)");
    assert!(status.success(), "cc {} failed", src_path.display());
    std::fs::rename(&tmp, &dest).expect("rename compiled file");
    built.push((out.to_string(), dest.clone()));
    dest
}

/// The stand-in `libcuda.so.1` (tests/c/stub_libcuda.c): answers
/// `cuDriverGetVersion` with `$STUB_CUDA_DRIVER_VERSION` (default 13000). Built with
/// the driver's soname, so lookups of a loaded `libcuda.so.1` find it. Returns the
/// directory holding it (for `LD_LIBRARY_PATH`) and the file.
pub fn stub_libcuda() -> (PathBuf, PathBuf) {
    let f = compile_c(
        "stub_libcuda.c",
        "driver/libcuda.so.1",
        &["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1"],
    );
    (f.parent().expect("parent").to_path_buf(), f)
}
