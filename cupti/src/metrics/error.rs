//! What goes wrong when asking `libnvperf_host` about metrics, and the names of its
//! status codes.

use std::path::PathBuf;

use cupti_sys::NVPA_Status;

/// Why a metric question could not be answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricError {
    /// The library could not be loaded.
    #[error("cannot load {}: {reason}", path.display())]
    Load { path: PathBuf, reason: String },
    /// No libnvperf_host.so was found.
    #[error(
        "no libnvperf_host.so found (set GPUPROF_NVPERF_HOST_LIB to its path); tried {}",
        tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NotFound { tried: Vec<PathBuf> },
    /// The library lacks a function this code calls.
    #[error("{} does not export {symbol}", library.display())]
    MissingSymbol {
        library: PathBuf,
        symbol: &'static str,
    },
    /// An NVPW call failed.
    #[error("{function} failed in {}: {}", library.display(), describe_status(*.status))]
    Nvpw {
        library: PathBuf,
        function: &'static str,
        status: cupti_sys::NVPA_Status::Type,
    },
    /// The library does not know this chip.
    #[error("unknown chip {chip:?}; supported chips: {}", supported.join(", "))]
    UnknownChip {
        chip: String,
        supported: Vec<String>,
    },
    /// The chip has no metric of this name.
    #[error("unknown metric {metric:?} on chip {chip}")]
    UnknownMetric { chip: String, metric: String },
    /// The library refused to schedule these raw counters together at all.
    #[error("the raw counters {} cannot be collected on {chip}", counters.join(", "))]
    NotSchedulable { chip: String, counters: Vec<String> },
    /// A name with an interior NUL byte.
    #[error("invalid name {0:?}")]
    InvalidName(String),
}

fn describe_status(status: cupti_sys::NVPA_Status::Type) -> String {
    match status_name(status) {
        Some(n) => format!("{n} ({status})"),
        None => format!("NVPA status {status}"),
    }
}

/// The symbolic name of an `NVPA_Status`, when this build knows it.
pub fn status_name(status: NVPA_Status::Type) -> Option<&'static str> {
    use NVPA_Status::*;
    Some(match status {
        NVPA_STATUS_SUCCESS => "NVPA_STATUS_SUCCESS",
        NVPA_STATUS_ERROR => "NVPA_STATUS_ERROR",
        NVPA_STATUS_INTERNAL_ERROR => "NVPA_STATUS_INTERNAL_ERROR",
        NVPA_STATUS_NOT_INITIALIZED => "NVPA_STATUS_NOT_INITIALIZED",
        NVPA_STATUS_NOT_LOADED => "NVPA_STATUS_NOT_LOADED",
        NVPA_STATUS_FUNCTION_NOT_FOUND => "NVPA_STATUS_FUNCTION_NOT_FOUND",
        NVPA_STATUS_NOT_SUPPORTED => "NVPA_STATUS_NOT_SUPPORTED",
        NVPA_STATUS_NOT_IMPLEMENTED => "NVPA_STATUS_NOT_IMPLEMENTED",
        NVPA_STATUS_INVALID_ARGUMENT => "NVPA_STATUS_INVALID_ARGUMENT",
        NVPA_STATUS_INVALID_METRIC_ID => "NVPA_STATUS_INVALID_METRIC_ID",
        NVPA_STATUS_DRIVER_NOT_LOADED => "NVPA_STATUS_DRIVER_NOT_LOADED",
        NVPA_STATUS_OUT_OF_MEMORY => "NVPA_STATUS_OUT_OF_MEMORY",
        NVPA_STATUS_INVALID_THREAD_STATE => "NVPA_STATUS_INVALID_THREAD_STATE",
        NVPA_STATUS_FAILED_CONTEXT_ALLOC => "NVPA_STATUS_FAILED_CONTEXT_ALLOC",
        NVPA_STATUS_UNSUPPORTED_GPU => "NVPA_STATUS_UNSUPPORTED_GPU",
        NVPA_STATUS_INSUFFICIENT_DRIVER_VERSION => "NVPA_STATUS_INSUFFICIENT_DRIVER_VERSION",
        NVPA_STATUS_OBJECT_NOT_REGISTERED => "NVPA_STATUS_OBJECT_NOT_REGISTERED",
        NVPA_STATUS_INSUFFICIENT_PRIVILEGE => "NVPA_STATUS_INSUFFICIENT_PRIVILEGE",
        NVPA_STATUS_INVALID_CONTEXT_STATE => "NVPA_STATUS_INVALID_CONTEXT_STATE",
        NVPA_STATUS_INVALID_OBJECT_STATE => "NVPA_STATUS_INVALID_OBJECT_STATE",
        NVPA_STATUS_RESOURCE_UNAVAILABLE => "NVPA_STATUS_RESOURCE_UNAVAILABLE",
        NVPA_STATUS_DRIVER_LOADED_TOO_LATE => "NVPA_STATUS_DRIVER_LOADED_TOO_LATE",
        NVPA_STATUS_INSUFFICIENT_SPACE => "NVPA_STATUS_INSUFFICIENT_SPACE",
        NVPA_STATUS_OBJECT_MISMATCH => "NVPA_STATUS_OBJECT_MISMATCH",
        NVPA_STATUS_VIRTUALIZED_DEVICE_NOT_SUPPORTED => {
            "NVPA_STATUS_VIRTUALIZED_DEVICE_NOT_SUPPORTED"
        }
        NVPA_STATUS_PROFILING_NOT_ALLOWED => "NVPA_STATUS_PROFILING_NOT_ALLOWED",
        _ => return None,
    })
}
