//! Names and formatting shared by the analyses: interned strings, demangled kernel
//! names, grid sizes, percentages, copy kinds and launch API names.

use std::collections::HashMap;

use wire::Record;

/// Interned strings of every process: `(pid, id) -> text`.
pub fn strings(records: &[(u32, Record)]) -> HashMap<(u32, u32), &str> {
    records
        .iter()
        .filter_map(|(pid, r)| match r {
            Record::String(s) => Some(((*pid, s.id), s.text.as_str())),
            _ => None,
        })
        .collect()
}

/// The text of interned string `id` of `pid`; `None` for id 0 (no string).
pub fn lookup<'a>(strings: &HashMap<(u32, u32), &'a str>, pid: u32, id: u32) -> Option<&'a str> {
    if id == 0 {
        return None;
    }
    strings.get(&(pid, id)).copied()
}

/// A kernel's name for people: the C++ name demangled when it is an Itanium-mangled
/// one (`_Z...`), otherwise as recorded.
pub fn demangle(name: &str) -> String {
    if !name.starts_with("_Z") {
        return name.to_string();
    }
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| name.to_string())
}

/// A grid or block as "4x1x1".
pub fn dims(d: [i32; 3]) -> String {
    format!("{}x{}x{}", d[0], d[1], d[2])
}

/// `part` as a percentage of `whole`, rounded to two decimals; 0 when `whole` is 0.
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    // Integer arithmetic in hundredths of a percent, rounded half up, so the value
    // printed is the same on every platform.
    let hundredths = (part as u128 * 10_000 + whole as u128 / 2) / whole as u128;
    hundredths as f64 / 100.0
}

/// `CUpti_ActivityMemcpyKind` as the usual short name.
pub fn copy_kind_name(kind: u8) -> &'static str {
    match kind {
        1 => "HtoD",
        2 => "DtoH",
        3 => "HtoA",
        4 => "AtoH",
        5 => "AtoA",
        6 => "AtoD",
        7 => "DtoA",
        8 => "DtoD",
        9 => "HtoH",
        10 => "PtoP",
        _ => "unknown",
    }
}

/// The API function behind a launch callback id, for launch calls CUPTI reports;
/// others as `driver API cbid N` / `runtime API cbid N`.
pub fn launch_api_name(cbid: u32, runtime: bool) -> String {
    use cupti_sys::CUpti_driver_api_trace_cbid_enum as d;
    use cupti_sys::CUpti_runtime_api_trace_cbid_enum as r;
    let known: &[(u32, &str)] = if runtime {
        &[
            (r::CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020, "cudaLaunch"),
            (
                r::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                "cudaLaunchKernel",
            ),
            (
                r::CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000,
                "cudaLaunch_ptsz",
            ),
            (
                r::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                "cudaLaunchKernel_ptsz",
            ),
            (
                r::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                "cudaLaunchCooperativeKernel",
            ),
            (
                r::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                "cudaLaunchKernelExC",
            ),
            (
                r::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                "cudaLaunchKernelExC_ptsz",
            ),
        ]
    } else {
        &[
            (d::CUPTI_DRIVER_TRACE_CBID_cuLaunch, "cuLaunch"),
            (d::CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid, "cuLaunchGrid"),
            (
                d::CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync,
                "cuLaunchGridAsync",
            ),
            (d::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"),
            (
                d::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                "cuLaunchKernel_ptsz",
            ),
            (
                d::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                "cuLaunchCooperativeKernel",
            ),
            (
                d::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
                "cuLaunchCooperativeKernel_ptsz",
            ),
            (d::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch"),
            (
                d::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
                "cuGraphLaunch_ptsz",
            ),
            (
                d::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                "cuLaunchKernelEx",
            ),
            (
                d::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                "cuLaunchKernelEx_ptsz",
            ),
        ]
    };
    match known.iter().find(|(id, _)| *id == cbid) {
        Some((_, name)) => name.to_string(),
        None if runtime => format!("runtime API cbid {cbid}"),
        None => format!("driver API cbid {cbid}"),
    }
}

/// A device UUID as NVML and `nvidia-smi` show it: `GPU-` and 8-4-4-4-12 hex digits.
pub fn gpu_uuid(bytes: &[u8; 16]) -> String {
    let h: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}
