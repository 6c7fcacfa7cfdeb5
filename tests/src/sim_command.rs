//! A command on the simulated CUDA stack: a clean environment, the stack's libraries on
//! the loader path and, as a test asks, CUPTI impersonating a release and libgpuprof.so
//! injected.

use std::path::Path;
use std::process::Command;

use crate::{
    artifact, clean_env, cupti_major, sim_cupti, sim_host_library, sim_lib_dir, Injection,
};

/// Builds a [`Command`] that runs on the simulated stack.
pub struct SimCommand(Command);

impl SimCommand {
    /// `cmd` with a clean environment ([`clean_env`]), the simulated stack
    /// ([`sim_lib_dir`]) on `LD_LIBRARY_PATH`, and the simulated Profiler Host API
    /// answering from NVIDIA's 13.1 library ([`sim_host_library`]).
    pub fn new(mut cmd: Command) -> SimCommand {
        clean_env(&mut cmd);
        cmd.env("LD_LIBRARY_PATH", sim_lib_dir())
            .env("SIMCUPTI_HOST_LIBRARY", sim_host_library("13.1"));
        SimCommand(cmd)
    }

    /// The simulated CUPTI impersonating `release` ("13.4"), named to libgpuprof.so
    /// by `GPUPROF_CUPTI_LIB`, its host API answering as [`sim_host_library`] says.
    pub fn cupti(mut self, release: &str) -> SimCommand {
        self.0
            .env("GPUPROF_CUPTI_LIB", sim_cupti(cupti_major(release)))
            .env("SIMCUPTI_VERSION", release)
            .env("SIMCUPTI_HOST_LIBRARY", sim_host_library(release));
        self
    }

    /// The libraries from `dir` instead (a copy of the stack with a piece missing, ...).
    pub fn libraries(mut self, dir: &Path) -> SimCommand {
        self.0.env("LD_LIBRARY_PATH", dir);
        self
    }

    /// libgpuprof.so injected the `how` way.
    pub fn injected(mut self, how: Injection) -> SimCommand {
        match how {
            Injection::Driver => self
                .0
                .env("CUDA_INJECTION64_PATH", artifact("libgpuprof.so")),
            Injection::Preload => self.0.env("LD_PRELOAD", artifact("libgpuprof.so")),
        };
        self
    }

    /// libgpuprof.so writes its ring into `dir`, with this test process as its
    /// collector (named in `dir/collector.pid`, as a collector does before any
    /// producer joins): the test reads the ring itself.
    pub fn session_dir(mut self, dir: &Path) -> SimCommand {
        wire::session_dir::write_collector_pid(dir, std::process::id())
            .expect("write collector.pid");
        self.0.env("GPUPROF_SESSION_DIR", dir);
        self
    }

    /// The command, to add arguments and variables to and run.
    pub fn command(self) -> Command {
        self.0
    }
}
