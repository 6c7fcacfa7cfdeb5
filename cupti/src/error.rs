//! Errors: CUPTI result codes as an open newtype, and library loading failures.

use std::fmt;
use std::path::PathBuf;

use cupti_sys::CUptiResult;

use crate::candidate::Rejection;

/// What `CUPTI_ERROR_HARDWARE_BUSY` from a counter call means for the user: another
/// tool holds the GPU's performance counters (DCGM's profiling module, which
/// dcgm-exporter runs, or another profiler). Unchecked: needs a GPU with DCGM.
pub const HARDWARE_BUSY_EXPLAINED: &str = "the GPU's performance counters are held by \
another tool (DCGM: `dcgmi profile --pause`, or another profiler); kernels are recorded \
without counters";

/// A CUPTI result code other than `CUPTI_SUCCESS`. Open: codes this build does not
/// know still pass through with their number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CuptiError(pub CUptiResult::Type);

impl CuptiError {
    /// `Ok(())` for `CUPTI_SUCCESS`, the error otherwise.
    pub fn check(code: CUptiResult::Type) -> Result<(), CuptiError> {
        if code == CUptiResult::CUPTI_SUCCESS {
            Ok(())
        } else {
            Err(CuptiError(code))
        }
    }

    /// The symbolic name from `cupti_result.h`, if this build knows the code.
    pub fn name(self) -> Option<&'static str> {
        use CUptiResult::*;
        Some(match self.0 {
            CUPTI_ERROR_INVALID_PARAMETER => "CUPTI_ERROR_INVALID_PARAMETER",
            CUPTI_ERROR_INVALID_DEVICE => "CUPTI_ERROR_INVALID_DEVICE",
            CUPTI_ERROR_INVALID_CONTEXT => "CUPTI_ERROR_INVALID_CONTEXT",
            CUPTI_ERROR_INVALID_OPERATION => "CUPTI_ERROR_INVALID_OPERATION",
            CUPTI_ERROR_OUT_OF_MEMORY => "CUPTI_ERROR_OUT_OF_MEMORY",
            CUPTI_ERROR_HARDWARE => "CUPTI_ERROR_HARDWARE",
            CUPTI_ERROR_NOT_READY => "CUPTI_ERROR_NOT_READY",
            CUPTI_ERROR_NOT_COMPATIBLE => "CUPTI_ERROR_NOT_COMPATIBLE",
            CUPTI_ERROR_NOT_INITIALIZED => "CUPTI_ERROR_NOT_INITIALIZED",
            CUPTI_ERROR_INVALID_KIND => "CUPTI_ERROR_INVALID_KIND",
            CUPTI_ERROR_MAX_LIMIT_REACHED => "CUPTI_ERROR_MAX_LIMIT_REACHED",
            CUPTI_ERROR_NOT_SUPPORTED => "CUPTI_ERROR_NOT_SUPPORTED",
            CUPTI_ERROR_INSUFFICIENT_PRIVILEGES => "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
            CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED => {
                "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
            }
            CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE => "CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE",
            CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED => {
                "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED"
            }
            CUPTI_ERROR_INVALID_METRIC_NAME => "CUPTI_ERROR_INVALID_METRIC_NAME",
            CUPTI_ERROR_HARDWARE_BUSY => "CUPTI_ERROR_HARDWARE_BUSY",
            CUPTI_ERROR_INVALID_CHIP_NAME => "CUPTI_ERROR_INVALID_CHIP_NAME",
            CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES => {
                "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES"
            }
            CUPTI_ERROR_UNKNOWN => "CUPTI_ERROR_UNKNOWN",
            _ => return None,
        })
    }
}

impl fmt::Display for CuptiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n} ({})", self.0),
            None => write!(f, "CUPTI error {}", self.0),
        }
    }
}

impl std::error::Error for CuptiError {}

/// Why no usable CUPTI could be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Every candidate was rejected (or there were none).
    #[error("no usable CUPTI library found; {}", describe_rejections(.0))]
    NotFound(Vec<Rejection>),
    /// `GPUPROF_CUPTI_LIB` names a library that could not be used. An explicit
    /// choice is not silently replaced by another library.
    #[error("GPUPROF_CUPTI_LIB={}: {reason}", path.display())]
    Explicit { path: PathBuf, reason: String },
}

fn describe_rejections(r: &[Rejection]) -> String {
    if r.is_empty() {
        return "no candidate paths (set GPUPROF_CUPTI_LIB to the libcupti.so to use)".into();
    }
    let parts: Vec<String> = r
        .iter()
        .map(|r| format!("{} ({}): {}", r.path, r.source, r.reason))
        .collect();
    format!("tried {}", parts.join("; "))
}
