//! Helpers for the collector's tests: the `gpuprof` binary with a clean environment and
//! scratch directories that disappear with the test.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::artifacts::{artifact, target_profile_dir};

/// `gpuprof` with no `GPUPROF_*`, `CUDA_*`, `SIM*` or `LD_LIBRARY_PATH` from the test's
/// environment (cargo puts the simulated libraries on the loader path for tests).
pub fn gpuprof_command() -> Command {
    let mut cmd = Command::new(artifact("gpuprof"));
    for (k, _) in std::env::vars() {
        if k.starts_with("GPUPROF_")
            || k.starts_with("CUDA_")
            || k.starts_with("SIM")
            || k == "LD_LIBRARY_PATH"
        {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// A fresh directory under `target/<profile>/scratch/`, removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    /// `name` must be unique among the tests of one test binary.
    pub fn new(name: &str) -> Scratch {
        let dir = target_profile_dir()
            .join("scratch")
            .join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, p: impl AsRef<Path>) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
