//! The simulated CUDA stack laid out as a program finds a real one: one directory with
//! `libcuda.so.1`, `libcupti.so.12/.13`, `libcublas.so(.12)`, `libcublasLt.so(.12)`,
//! `libcudart.so(.12)`, `libnvidia-ml.so.1` and NVIDIA's real NVTX library as
//! `libnvToolsExt.so`, for `LD_LIBRARY_PATH`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::artifacts::{artifact, target_profile_dir};

/// (name in the directory, workspace artifact it points at)
const LINKS: &[(&str, &str)] = &[
    ("libcuda.so.1", "libcuda.so"),
    ("libcuda.so", "libcuda.so"),
    ("libcupti.so.12", "libcupti.so"),
    ("libcupti.so.13", "libcupti.so"),
    ("libcublas.so", "libcublas.so"),
    ("libcublas.so.12", "libcublas.so"),
    ("libcublasLt.so", "libcublasLt.so"),
    ("libcublasLt.so.12", "libcublasLt.so"),
    ("libcudart.so", "libcudart.so"),
    ("libcudart.so.12", "libcudart.so"),
    ("libnvidia-ml.so.1", "libnvidia_ml.so"),
];

/// The directory, made once per process (atomically, so parallel test processes
/// agree on it). Panics with what to run when a piece is missing.
pub fn sim_lib_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(make).clone()
}

/// `libcupti.so.<major>` of the simulated stack (which release it impersonates is
/// chosen with `SIMCUPTI_VERSION`).
pub fn sim_cupti(major: u32) -> PathBuf {
    sim_lib_dir().join(format!("libcupti.so.{major}"))
}

fn make() -> PathBuf {
    let dir = target_profile_dir().join("sim-env");
    // Reuse a complete directory: another test process may be running from it.
    let wanted: Vec<(PathBuf, PathBuf)> = LINKS
        .iter()
        .map(|(name, target)| (dir.join(name), artifact(target)))
        .chain(std::iter::once((
            dir.join("libnvToolsExt.so"),
            nvtx_library(),
        )))
        .collect();
    if wanted
        .iter()
        .all(|(at, target)| std::fs::read_link(at).is_ok_and(|t| &t == target))
    {
        return dir;
    }
    let tmp = target_profile_dir().join(format!(".sim-env.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("create sim-env");
    for (name, target) in LINKS {
        link(&artifact(target), &tmp.join(name));
    }
    link(&nvtx_library(), &tmp.join("libnvToolsExt.so"));
    // Replace an incomplete or stale directory; a concurrent process doing the same
    // produces an identical one, so whichever rename wins is right.
    let _ = std::fs::remove_dir_all(&dir);
    if std::fs::rename(&tmp, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
        assert!(
            dir.join("libcuda.so.1").exists(),
            "{} was not created",
            dir.display()
        );
    }
    dir
}

fn link(target: &Path, at: &Path) {
    std::os::unix::fs::symlink(target, at)
        .unwrap_or_else(|e| panic!("symlink {} -> {}: {e}", at.display(), target.display()));
}

/// NVIDIA's NVTX implementation from the pinned `nvidia-nvtx-cu12` wheel.
pub fn nvtx_library() -> PathBuf {
    nvidia_extra("libnvtx3interop")
}

/// An extra NVIDIA file or directory of `scripts/nvidia-wheels.py` (`EXTRAS`), by
/// name, from `extras.json`.
pub fn nvidia_extra(name: &str) -> PathBuf {
    let extras = crate::nvidia_dir().join("extras.json");
    let text = std::fs::read_to_string(&extras).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; run {}",
            extras.display(),
            crate::FETCH_COMMAND
        )
    });
    let v: serde_json::Value = serde_json::from_str(&text).expect("extras.json is JSON");
    let recorded = PathBuf::from(v[name].as_str().unwrap_or_else(|| {
        panic!(
            "{name} is not in {}; run {}",
            extras.display(),
            crate::FETCH_COMMAND
        )
    }));
    // The paths are absolute: when the directory was fetched under another checkout's
    // `target/nvidia` and is reached here through a link, the same file is at the
    // same place under ours.
    match recorded
        .to_str()
        .and_then(|p| p.split_once("/target/nvidia/"))
    {
        Some((_, tail)) if !recorded.exists() => crate::nvidia_dir().join(tail),
        _ => recorded,
    }
}

/// The Python of `target/venv` (made by `scripts/python-env.sh`, which the test command
/// runs first), with NVIDIA's `cuda-bindings` installed.
pub fn venv_python() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/python-env.sh",
        p.display()
    );
    p
}

/// The Python of `target/venv-SET` (made by `scripts/python-env.sh SET` from
/// `scripts/python-requirements-SET.txt`, which the test command runs first): a
/// third-party tool in a venv of its own, so its pins do not fight the others'.
pub fn venv_python_of(set: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../target/venv-{set}/bin/python"));
    assert!(
        p.exists(),
        "{} is missing: run scripts/python-env.sh {set}",
        p.display()
    );
    p
}
