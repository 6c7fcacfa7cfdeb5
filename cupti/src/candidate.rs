//! A CUPTI library to try, where it came from, and why one was not used: what
//! discovery produces and load errors report.

use std::ffi::OsString;
use std::fmt;

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    AlreadyLoaded,
    EnvVar,
    PythonPackage,
    CudaHome,
    LoaderPath,
}

impl Source {
    /// Whether candidates from here are tried only after `GPUPROF_CUPTI_LIB`'s: once
    /// they are reached, an explicit choice has failed and none of them is used.
    pub fn after_explicit(self) -> bool {
        matches!(
            self,
            Source::PythonPackage | Source::CudaHome | Source::LoaderPath
        )
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::AlreadyLoaded => "already loaded in the process",
            Source::EnvVar => "GPUPROF_CUPTI_LIB",
            Source::PythonPackage => "Python nvidia package",
            Source::CudaHome => "CUDA_HOME",
            Source::LoaderPath => "loader search path",
        })
    }
}

/// A library to try: a path, or for [`Source::LoaderPath`] a bare soname.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub path: OsString,
    pub source: Source,
}

/// A candidate that was tried and not used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub path: String,
    pub source: Source,
    pub reason: String,
}
