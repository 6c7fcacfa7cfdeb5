//! Regenerates the committed bindings in `cupti-sys/src/generated/` from NVIDIA's
//! headers, as unpacked by `scripts/nvidia-wheels.py fetch`.
//!
//! Output (all deterministic: bindgen with prettyplease, no rustfmt, sorted tables):
//! - `common.rs`: declarations shared by every supported CUPTI release (result codes,
//!   callback ids and data, profiler / range-profiler / PM-sampling / host parameter
//!   structs, nvperf host structs), from the newest pinned headers.
//! - `cupti_fns.rs`, `nvperf_host_fns.rs`: libloading function tables for the calls the
//!   profiler makes, signatures taken verbatim from the headers.
//! - `records/vXX_Y.rs`: per CUPTI release, the activity record layouts that release
//!   writes (the newest variant of each record family in its `cupti_activity.h`), and
//!   `PARAMS_STRUCT_SIZES`: the value of every `<Struct>_STRUCT_SIZE` macro of that
//!   release's profiling headers ([`PARAMS_HEADERS`]) and of `CUpti_SubscriberParams`.
//! - `records/mod.rs`: the list of releases, their API versions and record names.
//! - `cublas.rs`: the cuBLAS / cuBLASLt declarations of the GEMM functions
//!   `libgpuprof.so` hooks ([`CUBLAS_HOOKED`]) and calls ([`CUBLAS_CALLED`]), from the
//!   pinned `nvidia-cublas-cu12` headers: the types, a function-pointer type per
//!   function (`pfn`), and `cublas_hooked!`, which hands the hooked functions'
//!   signatures to a macro of the caller's.
//!
//! `gen-bindings [OUT_DIR]` writes to OUT_DIR (default: the committed directory), so
//! a check can generate elsewhere and compare.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use quote::{format_ident, quote};
use serde::Deserialize;

#[derive(Deserialize)]
struct Release {
    release: String,
    cupti_version: String,
    runtime_version: String,
    cupti_include: PathBuf,
    /// CUPTI, CUDA runtime and (CUDA 13) crt include directories.
    include_dirs: Vec<PathBuf>,
}

/// The release whose headers provide the shared declarations.
const COMMON_FROM: &str = "13.5";

/// Record families decoded from activity buffers. For each release the newest
/// variant its `cupti_activity.h` defines is used (e.g. Kernel9 in 12.x, Kernel13 in 13.4).
const RECORD_FAMILIES: &[&str] = &[
    "API",
    "Context",
    "Device",
    "ExternalCorrelation",
    "GraphTrace",
    "Kernel",
    "Marker",
    "MarkerData",
    "Memcpy",
    "MemcpyPtoP",
    "Memset",
    "Name",
    "Overhead",
    "Synchronization",
];

/// The headers whose `<Struct>_STRUCT_SIZE` macros go into each release's
/// `PARAMS_STRUCT_SIZES` (those the release has; the Profiler Host, Range Profiler
/// and PM Sampling headers exist from 12.6).
const PARAMS_HEADERS: &[&str] = &[
    "cupti_target.h",
    "cupti_profiler_target.h",
    "cupti_profiler_host.h",
    "cupti_range_profiler.h",
    "cupti_pmsampling.h",
];

/// CUPTI functions the profiler resolves (regexes over the exported names).
const CUPTI_FUNCTIONS: &[&str] = &[
    "cuptiGetVersion",
    "cuptiGetResultString",
    "cuptiGetErrorMessage",
    "cuptiGetLastError",
    "cuptiGetTimestamp",
    "cuptiGetContextId",
    "cuptiGetDeviceId",
    "cuptiGetStreamIdEx",
    "cuptiGetGraphId",
    "cuptiGetGraphNodeId",
    "cuptiGetGraphExecId",
    "cuptiGetThreadIdType",
    "cuptiSetThreadIdType",
    "cuptiFinalize",
    "cuptiSubscribe",
    "cuptiSubscribe_v2",
    "cuptiUnsubscribe",
    "cuptiEnableDomain",
    "cuptiEnableCallback",
    "cuptiGetCallbackName",
    "cuptiActivityEnable",
    "cuptiActivityEnable_v2",
    "cuptiActivityDisable",
    "cuptiActivityDisable_v2",
    "cuptiActivityRegisterCallbacks",
    "cuptiActivityRegisterCallbacks_v2",
    "cuptiActivityFlushAll",
    "cuptiActivityGetNextRecord",
    "cuptiActivityGetNextRecord_v2",
    "cuptiActivityGetNumDroppedRecords",
    "cuptiActivityGetNumDroppedRecords_v2",
    "cuptiActivitySetAttribute",
    "cuptiActivitySetAttribute_v2",
    "cuptiActivityGetAttribute",
    "cuptiActivityEnableLaunchAttributes",
    "cuptiActivityGetStructSize",
    "cuptiActivityPushExternalCorrelationId",
    "cuptiActivityPopExternalCorrelationId",
    "cuptiDeviceGetChipName",
    "cuptiProfilerInitialize",
    "cuptiProfilerDeInitialize",
    "cuptiProfilerGetCounterAvailability",
    "cuptiRangeProfiler\\w+",
    "cuptiPmSampling\\w+",
    "cuptiProfilerHost\\w+",
];

/// nvperf host functions (libnvperf_host.so), for offline metric configuration.
const NVPERF_HOST_FUNCTIONS: &[&str] = &[
    "NVPW_InitializeHost",
    "NVPW_GetSupportedChipNames",
    "NVPW_CUDA_MetricsEvaluator_\\w+",
    "NVPW_MetricsEvaluator_\\w+",
    "NVPW_CUDA_RawMetricsConfig_Create_V2",
    "NVPW_RawMetricsConfig_\\w+",
    "NVPW_CUDA_CounterDataBuilder_Create",
    "NVPW_CounterDataBuilder_\\w+",
];

/// Driver and runtime API parameter structs the callbacks read
/// (`generated_cuda_meta.h`, `generated_cuda_runtime_api_meta.h`).
const DRIVER_PARAMS: &[&str] = &[
    "cuLaunchKernel_params",
    "cuLaunchKernel_ptsz_params",
    "cuLaunchKernelEx_params",
    "cuLaunchKernelEx_ptsz_params",
    "cuLaunchCooperativeKernel_params",
    "cuLaunchCooperativeKernel_ptsz_params",
    "cuGraphLaunch_params",
    "cuGraphLaunch_ptsz_params",
    // Driver API functions the simulated driver (tests/sim/cuda) implements.
    "cuDevicePrimaryCtxRetain_params",
    "cuDevicePrimaryCtxRelease_v2_params",
    "cuDevicePrimaryCtxGetState_params",
    "cuDevicePrimaryCtxSetFlags_v2_params",
    "cuDevicePrimaryCtxReset_v2_params",
    "cuCtxCreate_v2_params",
    "cuCtxCreate_v3_params",
    "cuCtxCreate_v4_params",
    "cuCtxDestroy_v2_params",
    "cuCtxGetCurrent_params",
    "cuCtxSetCurrent_params",
    "cuCtxPushCurrent_v2_params",
    "cuCtxPopCurrent_v2_params",
    "cuCtxGetDevice_params",
    "cuCtxGetDevice_v2_params",
    "cuCtxSynchronize_v2_params",
    "cuCtxGetId_params",
    "cuCtxGetApiVersion_params",
    "cuStreamCreate_params",
    "cuStreamCreateWithPriority_params",
    "cuStreamDestroy_v2_params",
    "cuStreamSynchronize_params",
    "cuStreamQuery_params",
    "cuStreamWaitEvent_params",
    "cuStreamGetId_params",
    "cuStreamGetCtx_params",
    "cuStreamGetCtx_v2_params",
    "cuStreamBeginCapture_v2_params",
    "cuStreamEndCapture_params",
    "cuStreamIsCapturing_params",
    "cuStreamGetCaptureInfo_v2_params",
    "cuStreamGetCaptureInfo_v3_params",
    "cuEventCreate_params",
    "cuEventRecord_params",
    "cuEventSynchronize_params",
    "cuEventQuery_params",
    "cuEventElapsedTime_params",
    "cuEventElapsedTime_v2_params",
    "cuEventDestroy_v2_params",
    "cuMemAlloc_v2_params",
    "cuMemFree_v2_params",
    "cuMemAllocAsync_params",
    "cuMemAllocManaged_params",
    "cuEventRecordWithFlags_params",
    "cuStreamWaitValue32_v2_params",
    "cuStreamWaitValue64_v2_params",
    "cuMemFreeAsync_params",
    "cuMemAllocHost_v2_params",
    "cuMemHostAlloc_params",
    "cuMemFreeHost_params",
    "cuMemGetInfo_v2_params",
    "cuPointerGetAttribute_params",
    "cuMemcpy_params",
    "cuMemcpyAsync_params",
    "cuMemcpyHtoD_v2_params",
    "cuMemcpyDtoH_v2_params",
    "cuMemcpyDtoD_v2_params",
    "cuMemcpyHtoDAsync_v2_params",
    "cuMemcpyDtoHAsync_v2_params",
    "cuMemcpyDtoDAsync_v2_params",
    "cuMemsetD8_v2_params",
    "cuMemsetD16_v2_params",
    "cuMemsetD32_v2_params",
    "cuMemsetD8Async_params",
    "cuMemsetD16Async_params",
    "cuMemsetD32Async_params",
    "cuModuleLoadData_params",
    "cuModuleLoadDataEx_params",
    "cuModuleUnload_params",
    "cuModuleGetFunction_params",
    "cuModuleGetGlobal_v2_params",
    "cuLibraryLoadData_params",
    "cuLibraryUnload_params",
    "cuLibraryGetKernel_params",
    "cuKernelGetFunction_params",
    "cuFuncGetAttribute_params",
    "cuFuncSetAttribute_params",
    "cuFuncSetCacheConfig_params",
    "cuGraphCreate_params",
    "cuGraphAddKernelNode_v2_params",
    "cuGraphGetNodes_params",
    "cuGraphInstantiateWithFlags_params",
    "cuGraphInstantiate_v2_params",
    "cuGraphExecDestroy_params",
    "cuGraphDestroy_params",
    // Runtime API (CUPTI_CB_DOMAIN_RUNTIME_API) launches.
    "cudaLaunchKernel_v7000_params",
    "cudaLaunchKernel_ptsz_v7000_params",
    "cudaLaunchKernelExC_v11060_params",
    "cudaLaunchKernelExC_ptsz_v11060_params",
    "cudaLaunchCooperativeKernel_v9000_params",
    "cudaLaunchCooperativeKernel_ptsz_v9000_params",
    "cudaGraphLaunch_v10000_params",
    "cudaGraphLaunch_ptsz_v10000_params",
    // Runtime API functions the simulated runtime (tests/sim/cudart) implements and
    // the calls gpuprof traces read.
    "cudaGetDevice_v3020_params",
    "cudaSetDevice_v3020_params",
    "cudaGetDeviceCount_v3020_params",
    "cudaDriverGetVersion_v3020_params",
    "cudaRuntimeGetVersion_v3020_params",
    "cudaMalloc_v3020_params",
    "cudaFree_v3020_params",
    "cudaMallocHost_v3020_params",
    "cudaFreeHost_v3020_params",
    "cudaHostAlloc_v3020_params",
    "cudaMallocManaged_v6000_params",
    "cudaMallocAsync_v11020_params",
    "cudaFreeAsync_v11020_params",
    "cudaMallocAsync_ptsz_v11020_params",
    "cudaFreeAsync_ptsz_v11020_params",
    "cudaMemcpy_v3020_params",
    "cudaMemcpy_ptds_v7000_params",
    "cudaMemcpyAsync_v3020_params",
    "cudaMemcpyAsync_ptsz_v7000_params",
    "cudaMemset_v3020_params",
    "cudaMemset_ptds_v7000_params",
    "cudaMemsetAsync_v3020_params",
    "cudaMemsetAsync_ptsz_v7000_params",
    "cudaStreamCreate_v3020_params",
    "cudaStreamCreateWithFlags_v5000_params",
    "cudaStreamDestroy_v5050_params",
    "cudaStreamSynchronize_v3020_params",
    "cudaStreamSynchronize_ptsz_v7000_params",
    "cudaStreamQuery_v3020_params",
    "cudaStreamWaitEvent_v3020_params",
    "cudaStreamWaitEvent_ptsz_v7000_params",
    "cudaEventCreate_v3020_params",
    "cudaEventCreateWithFlags_v3020_params",
    "cudaEventRecord_v3020_params",
    "cudaEventRecord_ptsz_v7000_params",
    "cudaEventRecordWithFlags_v11010_params",
    "cudaEventRecordWithFlags_ptsz_v11010_params",
    "cudaEventSynchronize_v3020_params",
    "cudaEventQuery_v3020_params",
    "cudaEventDestroy_v3020_params",
    "cudaLibraryLoadData_v12060_params",
    "cudaLibraryGetKernel_v12060_params",
];

fn main() -> Result<()> {
    let root = repo_root();
    let nvidia = std::env::var_os("GPUPROF_NVIDIA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/nvidia"));
    let manifest_path = nvidia.join("manifest.json");
    let manifest: Vec<Release> =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).with_context(|| {
            format!(
                "reading {} (run scripts/nvidia-wheels.py fetch)",
                manifest_path.display()
            )
        })?)
        .with_context(|| format!("parsing {}", manifest_path.display()))?;
    let out = match std::env::args_os().nth(1) {
        Some(dir) => PathBuf::from(dir),
        None => root.join("cupti-sys/src/generated"),
    };
    std::fs::create_dir_all(out.join("records"))?;

    let common = manifest
        .iter()
        .find(|r| r.release == COMMON_FROM)
        .with_context(|| format!("release {COMMON_FROM} missing from the manifest"))?;
    let extras_path = nvidia.join("extras.json");
    let extras: std::collections::HashMap<String, PathBuf> =
        serde_json::from_str(&std::fs::read_to_string(&extras_path).with_context(|| {
            format!(
                "reading {} (run scripts/nvidia-wheels.py fetch)",
                extras_path.display()
            )
        })?)
        .with_context(|| format!("parsing {}", extras_path.display()))?;
    let extra = |name: &str| {
        extras
            .get(name)
            .with_context(|| format!("{} names no {name}", extras_path.display()))
    };
    gen_common(common, extra("nvtx_include")?, &out)?;
    let cuda12 = manifest
        .iter()
        .find(|r| r.release == CUBLAS_CUDA_FROM)
        .with_context(|| format!("release {CUBLAS_CUDA_FROM} missing from the manifest"))?;
    let include = [extra("cublas_include")?, extra("cccl_include")?];
    gen_cublas(cuda12, &include, &out)?;

    let mut index = Vec::new();
    for rel in &manifest {
        index.push(gen_records(rel, &out.join("records"))?);
    }
    write(&out.join("records/mod.rs"), &records_index(&index))?;
    Ok(())
}

/// The functions `libgpuprof.so` hooks, in hook order (the cuBLASLt one last).
const CUBLAS_HOOKED: &[&str] = &[
    "cublasSgemm_v2",
    "cublasSgemm_v2_64",
    "cublasDgemm_v2",
    "cublasDgemm_v2_64",
    "cublasCgemm_v2",
    "cublasCgemm_v2_64",
    "cublasZgemm_v2",
    "cublasZgemm_v2_64",
    "cublasHgemm",
    "cublasHgemm_64",
    "cublasSgemmStridedBatched",
    "cublasSgemmStridedBatched_64",
    "cublasDgemmStridedBatched",
    "cublasDgemmStridedBatched_64",
    "cublasCgemmStridedBatched",
    "cublasCgemmStridedBatched_64",
    "cublasZgemmStridedBatched",
    "cublasZgemmStridedBatched_64",
    "cublasHgemmStridedBatched",
    "cublasHgemmStridedBatched_64",
    "cublasSgemmBatched",
    "cublasSgemmBatched_64",
    "cublasDgemmBatched",
    "cublasDgemmBatched_64",
    "cublasCgemmBatched",
    "cublasCgemmBatched_64",
    "cublasZgemmBatched",
    "cublasZgemmBatched_64",
    "cublasHgemmBatched",
    "cublasHgemmBatched_64",
    "cublasSgemmEx",
    "cublasSgemmEx_64",
    "cublasGemmEx",
    "cublasGemmEx_64",
    "cublasGemmStridedBatchedEx",
    "cublasGemmStridedBatchedEx_64",
    "cublasGemmBatchedEx",
    "cublasGemmBatchedEx_64",
    "cublasLtMatmul",
];

/// Functions `libgpuprof.so` calls through a pointer it looked up (never linked).
const CUBLAS_CALLED: &[&str] = &[
    "cublasGetMathMode",
    "cublasLtMatmulDescGetAttribute",
    "cublasLtMatrixLayoutGetAttribute",
];

/// The CUDA release whose runtime headers (`library_types.h`, `cuda_fp16.h`, ...) the
/// cuBLAS headers are read with: the one the cuBLAS wheel belongs to.
const CUBLAS_CUDA_FROM: &str = "12.9";

/// Rewrites every type named by a bare identifier (a type of the generated module)
/// to `$crate::cublas::Name`, for use inside an exported macro.
struct Qualify;

impl syn::visit_mut::VisitMut for Qualify {
    fn visit_type_path_mut(&mut self, tp: &mut syn::TypePath) {
        const PRIMITIVE: &[&str] = &[
            "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "usize", "isize", "f32", "f64",
            "bool",
        ];
        if tp.qself.is_none() && tp.path.leading_colon.is_none() {
            let first = tp.path.segments[0].ident.to_string();
            if !PRIMITIVE.contains(&first.as_str()) {
                let path = &tp.path;
                *tp = syn::parse_quote!(__CRATE__::cublas::#path);
                return;
            }
        }
        syn::visit_mut::visit_type_path_mut(self, tp);
    }
}

fn gen_cublas(cuda: &Release, include: &[&PathBuf], out: &Path) -> Result<()> {
    // cublas_v2.h defines CUBLASAPI and includes cublas_api.h (the `_v2` API).
    let header = "#include <cublas_v2.h>\n#include <cublasLt.h>\n";
    // As C++: cublas_api.h declares the half-precision GEMMs (cublasHgemm*) for C++
    // only, where cuda_fp16.h defines `__half`. `__half` is only ever behind a
    // pointer here, so bindgen's opaque blob of its size and alignment is enough.
    let mut b = builder(cuda, header)
        .clang_args(include.iter().map(|d| format!("-I{}", d.display())))
        .clang_args(["-xc++", "-std=c++17"])
        .opaque_type("__half")
        .opaque_type("__nv_bfloat16")
        .blocklist_type("cudaDataType(_t)?")
        .raw_line("pub use super::common::{cudaDataType, cudaDataType_t};");
    for f in CUBLAS_HOOKED.iter().chain(CUBLAS_CALLED) {
        b = b.allowlist_function(format!("^{f}$"));
    }
    let code = b.generate().context("bindgen (cuBLAS)")?.to_string();
    let mut file: syn::File = syn::parse_str(&code).context("parsing bindgen output")?;
    let fns: BTreeMap<String, syn::Signature> = take_functions(&mut file)
        .into_iter()
        .map(|sig| (sig.ident.to_string(), sig))
        .collect();
    for f in CUBLAS_HOOKED.iter().chain(CUBLAS_CALLED) {
        if !fns.contains_key(*f) {
            bail!("{f} is not declared in the cuBLAS headers");
        }
    }
    let fn_type = |s: &syn::Signature| {
        let inputs = &s.inputs;
        let output = &s.output;
        quote!(unsafe extern "C" fn(#inputs) #output)
    };
    let pfns = fns.values().map(|s| {
        let name = &s.ident;
        let ty = fn_type(s);
        quote! { pub type #name = #ty; }
    });
    let types = prettyplease::unparse(&file);
    let pfn_file: syn::File = syn::parse2(quote! {
        /// A pointer to each function, typed from its declaration.
        pub mod pfn {
            use super::*;
            #(#pfns)*
        }
    })?;
    // The hooked signatures as `fn name(arg: Type, ..) -> Ret;` items, formatted as an
    // extern block's and taken out of it.
    let mut items = Vec::new();
    for f in CUBLAS_HOOKED {
        let mut sig = fns[*f].clone();
        for arg in sig.inputs.iter_mut() {
            if let syn::FnArg::Typed(pt) = arg {
                syn::visit_mut::VisitMut::visit_type_mut(&mut Qualify, &mut pt.ty);
            }
        }
        if let syn::ReturnType::Type(_, ty) = &mut sig.output {
            syn::visit_mut::VisitMut::visit_type_mut(&mut Qualify, ty);
        }
        items.push(quote!(#sig;));
    }
    let block: syn::File = syn::parse2(quote!(extern "C" { #(#items)* }))?;
    let block = prettyplease::unparse(&block).replace("__CRATE__", "$crate");
    let lines: Vec<&str> = block.lines().collect();
    let mut hooked = String::new();
    for line in &lines[1..lines.len() - 1] {
        writeln!(hooked, "        {line}")?;
    }
    let mut text = format!(
        "// @generated by scripts/regen-bindings.sh from NVIDIA's headers: the cuBLAS / cuBLASLt\n\
         // functions libgpuprof.so hooks and calls. nvidia-cublas-cu12 headers with the CUDA\n\
         // runtime headers {}. Do not edit.\n\n",
        cuda.runtime_version
    );
    text.push_str(&types);
    text.push('\n');
    text.push_str(&prettyplease::unparse(&pfn_file));
    text.push_str(
        "\n/// Calls `$m! { fn name(arg: Type, ..) -> Ret; .. }` with the signature of every\n\
         /// function libgpuprof.so hooks, in hook order, types as declared in the headers.\n\
         #[macro_export]\n\
         macro_rules! cublas_hooked {\n    ($m:ident) => {\n        $m! {\n",
    );
    text.push_str(&hooked);
    text.push_str("        }\n    };\n}\n");
    write(&out.join("cublas.rs"), &text)
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

fn header_comment(what: &str, rel: &Release) -> String {
    format!(
        "// @generated by scripts/regen-bindings.sh from NVIDIA's headers: {what}.\n\
         // CUPTI {} (CUDA runtime headers {}). Do not edit.\n\n",
        rel.cupti_version, rel.runtime_version
    )
}

fn builder(rel: &Release, header: &str) -> bindgen::Builder {
    bindgen::Builder::default()
        .header_contents("wrapper.h", header)
        .clang_args(
            rel.include_dirs
                .iter()
                .map(|d| format!("-I{}", d.display())),
        )
        // nvperf_host.h announces its own deprecation with #pragma message.
        .clang_arg("-Wno-#pragma-messages")
        .formatter(bindgen::Formatter::Prettyplease)
        .default_enum_style(bindgen::EnumVariation::ModuleConsts)
        .derive_default(true)
        .derive_debug(true)
        .layout_tests(true)
        .generate_comments(false)
        .size_t_is_usize(true)
        .use_core()
        .merge_extern_blocks(true)
        .sort_semantically(true)
}

fn gen_common(rel: &Release, nvtx_include: &Path, out: &Path) -> Result<()> {
    let header = "#include <cupti.h>\n#include <cupti_target.h>\n#include <cupti_profiler_target.h>\n\
                  #include <cupti_profiler_host.h>\n#include <cupti_range_profiler.h>\n\
                  #include <cupti_pmsampling.h>\n#include <nvperf_host.h>\n#include <nvperf_cuda_host.h>\n\
                  #include <generated_nvtx_meta.h>\n#include <library_types.h>\n";
    let mut b = builder(rel, header)
        .clang_arg(format!("-I{}", nvtx_include.display()))
        // The NVTX callback domain's parameter structs (CUpti_NvtxData::functionParams).
        .allowlist_type("nvtx(Range|DomainRange|DomainRegisterString)\\w*_params")
        .allowlist_type("nvtxEventAttributes_t|nvtxMessageType_t|nvtxRangeId_t")
        // Everything CUPTI declares except activity records (per release, see records/).
        .allowlist_type("CUpti_([B-Zb-z_]|A[^c]|Ac[^t]).*")
        .allowlist_type("CUptiResult")
        .allowlist_type(
            "CUpti_Activity(|Kind|Attribute|Flag|ObjectKind|ObjectKindId|OverheadKind|MemcpyKind|\
             MemoryKind|LaunchType|SynchronizationType|ComputeApiKind|PartitionedGlobalCacheConfig|\
             ThreadIdType|StreamFlag|MemoryOperationType|MemoryPoolType|MemoryPoolOperationType|\
             Config|FieldSelection|RecordLayout|FieldLayoutEntry|\\w+FieldIds)",
        )
        .allowlist_type("CUresult|CUdevice|CUcontext|CUstream|CUfunction|CUgraph|CUgraphExec|CUgraphNode|CUuuid")
        .allowlist_var("CUPTI_.*")
        .allowlist_var("NVPW_.*")
        // GEMM data types, from the newest runtime headers (the cuBLAS bindings use
        // these too: the newest release knows the most types).
        .allowlist_type("cudaDataType(_t)?");
    for p in DRIVER_PARAMS {
        b = b.allowlist_type(p);
    }
    for f in CUPTI_FUNCTIONS.iter().chain(NVPERF_HOST_FUNCTIONS) {
        b = b.allowlist_function(f);
    }
    let code = b.generate().context("bindgen (common)")?.to_string();
    let mut file: syn::File = syn::parse_str(&code).context("parsing bindgen output")?;

    // Functions are reached only through the tables.
    let mut fns = take_functions(&mut file);
    fns.sort_by_key(|s| s.ident.to_string());

    let body = prettyplease::unparse(&file);
    for p in DRIVER_PARAMS {
        if !body.contains(&format!("pub type {p} = "))
            && !body.contains(&format!("pub struct {p} "))
        {
            bail!("parameter struct {p} not found in the headers");
        }
    }
    let mut text = header_comment("shared declarations", rel);
    text.push_str(&body);
    write(&out.join("common.rs"), &text)?;

    let (cupti, nvperf): (Vec<_>, Vec<_>) = fns
        .into_iter()
        .partition(|s| s.ident.to_string().starts_with("cupti"));
    if cupti.is_empty() || nvperf.is_empty() {
        bail!("no functions matched the allowlists");
    }
    check_allowlist_hit(CUPTI_FUNCTIONS, &cupti)?;
    check_allowlist_hit(NVPERF_HOST_FUNCTIONS, &nvperf)?;
    let mut t = header_comment("libcupti function table", rel);
    t.push_str(&table("CuptiFns", "CUPTI_FN_NAMES", "libcupti", &cupti)?);
    write(&out.join("cupti_fns.rs"), &t)?;
    let mut t = header_comment("libnvperf_host function table", rel);
    t.push_str(&table(
        "NvperfHostFns",
        "NVPERF_HOST_FN_NAMES",
        "libnvperf_host",
        &nvperf,
    )?);
    write(&out.join("nvperf_host_fns.rs"), &t)?;
    Ok(())
}

/// Takes bindgen's extern blocks out of `file` and returns their functions'
/// signatures: nothing is linked, functions are reached through pointers.
fn take_functions(file: &mut syn::File) -> Vec<syn::Signature> {
    let mut fns = Vec::new();
    file.items.retain(|item| match item {
        syn::Item::ForeignMod(fm) => {
            for fi in &fm.items {
                if let syn::ForeignItem::Fn(f) = fi {
                    fns.push(f.sig.clone());
                }
            }
            false
        }
        _ => true,
    });
    fns
}

/// Every allowlist entry must name at least one function: a typo must not silently
/// drop a function from the table.
fn check_allowlist_hit(patterns: &[&str], sigs: &[syn::Signature]) -> Result<()> {
    for p in patterns {
        let re = regex::Regex::new(&format!("^(?:{p})$"))?;
        if !sigs.iter().any(|s| re.is_match(&s.ident.to_string())) {
            bail!("function allowlist entry {p:?} matched nothing in the headers");
        }
    }
    Ok(())
}

fn table(ty: &str, names_const: &str, lib: &str, sigs: &[syn::Signature]) -> Result<String> {
    let ty = format_ident!("{ty}");
    let names_const = format_ident!("{names_const}");
    let mut fields = Vec::new();
    let mut loads = Vec::new();
    let mut names = Vec::new();
    for s in sigs {
        let name = &s.ident;
        let inputs = s.inputs.iter().map(|arg| match arg {
            syn::FnArg::Typed(pt) => {
                let t = &pt.ty;
                quote!(#t)
            }
            syn::FnArg::Receiver(_) => unreachable!("extern fn with self"),
        });
        let output = &s.output;
        let fn_ty = quote!(unsafe extern "C" fn(#(#inputs),*) #output);
        let name_str = name.to_string();
        let sym = syn::LitByteStr::new(
            format!("{name_str}\0").as_bytes(),
            proc_macro2::Span::call_site(),
        );
        fields.push(quote! { pub #name: Option<#fn_ty> });
        loads.push(quote! {
            // SAFETY: the symbol's type is the prototype from NVIDIA's header (see `load`).
            #name: unsafe { lib.get::<#fn_ty>(#sym) }.ok().map(|s| *s)
        });
        names.push(name_str);
    }
    let doc = format!(
        " The functions gpuprof resolves from `{lib}`, each `None` where the loaded\n \
         library does not export it (older releases lack newer APIs)."
    );
    let tokens = quote! {
        #[allow(unused_imports)]
        use super::common::*;

        #[doc = #doc]
        #[allow(non_snake_case)]
        #[derive(Clone, Copy)]
        pub struct #ty { #(#fields,)* }

        /// Names of every function in the table, in table order.
        pub const #names_const: &[&str] = &[#(#names),*];

        impl #ty {
            /// Resolves every function of the table from `lib`.
            ///
            /// # Safety
            /// `lib` must be the NVIDIA library these prototypes come from (any release
            /// with the same C ABI), and it must stay loaded for as long as any pointer
            /// taken from the table is called.
            pub unsafe fn load(lib: &libloading::Library) -> Self {
                Self { #(#loads,)* }
            }
        }
    };
    let file: syn::File = syn::parse2(tokens)?;
    Ok(prettyplease::unparse(&file))
}

struct RecordIndex {
    module: String,
    release: String,
    cupti_version: String,
    api_version: u32,
    records: BTreeMap<&'static str, String>,
}

fn gen_records(rel: &Release, dir: &Path) -> Result<RecordIndex> {
    let activity_h = rel.cupti_include.join("cupti_activity.h");
    let text = std::fs::read_to_string(&activity_h)
        .with_context(|| format!("reading {}", activity_h.display()))?;
    let version_h = rel.cupti_include.join("cupti_version.h");
    let vtext = std::fs::read_to_string(&version_h)
        .with_context(|| format!("reading {}", version_h.display()))?;
    let api_version: u32 = regex::Regex::new(r"(?m)^#define CUPTI_API_VERSION (\d+)")?
        .captures(&vtext)
        .with_context(|| format!("no CUPTI_API_VERSION in {}", version_h.display()))?[1]
        .parse()?;

    let mut records = BTreeMap::new();
    for fam in RECORD_FAMILIES {
        let re = regex::Regex::new(&format!(r"\}} (CUpti_Activity{fam}(\d*));"))?;
        let newest = re
            .captures_iter(&text)
            .map(|c| (c[2].parse::<u32>().unwrap_or(1), c[1].to_string()))
            .max()
            .with_context(|| format!("{}: no CUpti_Activity{fam} record", activity_h.display()))?;
        records.insert(*fam, newest.1);
    }

    let mut b = builder(rel, "#include <cupti_activity.h>\n").allowlist_type("CUpti_Activity");
    for name in records.values() {
        b = b.allowlist_type(format!("^{name}$"));
    }
    let code = b
        .generate()
        .with_context(|| format!("bindgen (records {})", rel.release))?
        .to_string();
    let module = format!("v{}", rel.release.replace('.', "_"));
    let mut out = header_comment(
        &format!("activity record layouts of CUPTI {}", rel.release),
        rel,
    );
    out.push_str(&code);
    out.push_str(
        "\n/// The record layout of each family that this release writes.\npub mod layout {\n",
    );
    for (fam, name) in &records {
        let _ = writeln!(out, "    pub type {fam} = super::{name};");
    }
    out.push_str("}\n");
    out.push_str(&params_struct_sizes(rel)?);
    write(&dir.join(format!("{module}.rs")), &out)?;
    Ok(RecordIndex {
        module,
        release: rel.release.clone(),
        cupti_version: rel.cupti_version.clone(),
        api_version,
        records,
    })
}

/// The `PARAMS_STRUCT_SIZES` table of `rel`: every `<Struct>_STRUCT_SIZE` macro of
/// its [`PARAMS_HEADERS`] (and `CUpti_SubscriberParams_STRUCT_SIZE` of
/// `cupti_callbacks.h`, 13.0 on), evaluated by clang against the release's own
/// headers. Each macro is `CUPTI_PROFILER_STRUCT_SIZE(Struct, lastField)` (or
/// `CUPTI_CALLBACK_STRUCT_SIZE`): the offset of the named last field plus its size,
/// without tail padding.
fn params_struct_sizes(rel: &Release) -> Result<String> {
    let define = regex::Regex::new(r"(?m)^\s*#\s*define\s+(\w+)_STRUCT_SIZE\s")?;
    let mut names = Vec::new();
    let mut includes = String::new();
    let mut scan = |header: &str, only: Option<&str>| -> Result<()> {
        let path = rel.cupti_include.join(header);
        if !path.exists() {
            return Ok(());
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let _ = writeln!(includes, "#include <{header}>");
        for c in define.captures_iter(&text) {
            if only.is_none_or(|o| o == &c[1]) {
                names.push(c[1].to_string());
            }
        }
        Ok(())
    };
    for h in PARAMS_HEADERS {
        scan(h, None)?;
    }
    scan("cupti_callbacks.h", Some("CUpti_SubscriberParams"))?;
    names.sort();
    names.dedup();
    if names.is_empty() {
        bail!(
            "CUPTI {}: no *_STRUCT_SIZE macro in its headers",
            rel.release
        );
    }
    // An enum makes clang evaluate each macro; bindgen reports the values.
    let mut header = format!("#include <stddef.h>\n#include <cupti.h>\n{includes}");
    header.push_str("enum gpuprof_params_struct_size {\n");
    for n in &names {
        let _ = writeln!(header, "    gpuprof_size_{n} = {n}_STRUCT_SIZE,");
    }
    header.push_str("};\n");
    // 12.x's cupti_profiler_host.h includes <string>.
    let code = builder(rel, &header)
        .clang_args(["-x", "c++"])
        .allowlist_type("gpuprof_params_struct_size")
        .generate()
        .with_context(|| format!("bindgen (params struct sizes {})", rel.release))?
        .to_string();
    let value = regex::Regex::new(r"pub const gpuprof_size_(\w+): Type = (\d+);")?;
    let sizes: BTreeMap<String, usize> = value
        .captures_iter(&code)
        .map(|c| Ok((c[1].to_string(), c[2].parse()?)))
        .collect::<Result<_>>()?;
    if sizes.len() != names.len() {
        bail!(
            "CUPTI {}: {} *_STRUCT_SIZE macros, {} values from clang",
            rel.release,
            names.len(),
            sizes.len()
        );
    }
    let mut s = String::from(
        "\n/// `(struct, <struct>_STRUCT_SIZE)` for every params struct of this release's\n\
         /// `cupti_target.h`, `cupti_profiler_target.h`, `cupti_profiler_host.h`,\n\
         /// `cupti_range_profiler.h`, `cupti_pmsampling.h` (those it has) and\n\
         /// `CUpti_SubscriberParams` (13.0 on), sorted by name: the offset of the last field\n\
         /// the macro names plus that field's size, without tail padding.\n",
    );
    let _ = writeln!(s, "pub const PARAMS_STRUCT_SIZES: &[(&str, usize)] = &[");
    for (n, v) in &sizes {
        let _ = writeln!(s, "    (\"{n}\", {v}),");
    }
    s.push_str("];\n");
    Ok(s)
}

fn records_index(index: &[RecordIndex]) -> String {
    let mut s = String::from(
        "// @generated by scripts/regen-bindings.sh. Do not edit.\n\n\
         //! Activity record layouts, one module per CUPTI release whose records gpuprof decodes.\n\n",
    );
    for r in index {
        let _ = writeln!(s, "pub mod {};", r.module);
    }
    s.push_str(
        "\n/// A CUPTI release gpuprof has record layouts for.\n\
         #[derive(Debug, Clone, Copy, PartialEq, Eq)]\n\
         pub struct Release {\n\
         \x20   /// `major.minor`, e.g. \"13.4\".\n\
         \x20   pub name: &'static str,\n\
         \x20   /// The wheel version whose headers the layouts come from.\n\
         \x20   pub headers: &'static str,\n\
         \x20   /// `CUPTI_API_VERSION` of those headers (what `cuptiGetVersion` answers).\n\
         \x20   pub api_version: u32,\n\
         \x20   /// (family, struct name, size in bytes) of every decoded record.\n\
         \x20   pub records: &'static [(&'static str, &'static str, usize)],\n\
         \x20   /// `(struct, <struct>_STRUCT_SIZE)` of the release's profiling params structs\n\
         \x20   /// and `CUpti_SubscriberParams` (the module's `PARAMS_STRUCT_SIZES`).\n\
         \x20   pub params_struct_sizes: &'static [(&'static str, usize)],\n\
         }\n\n\
         /// Every release with generated layouts, oldest first.\n\
         pub const RELEASES: &[Release] = &[\n",
    );
    for r in index {
        let _ = writeln!(
            s,
            "    Release {{\n        name: \"{}\",\n        headers: \"{}\",\n        api_version: {},\n        records: &[",
            r.release, r.cupti_version, r.api_version
        );
        for (fam, name) in &r.records {
            let _ = writeln!(
                s,
                "            (\"{fam}\", \"{name}\", core::mem::size_of::<{}::{name}>()),",
                r.module
            );
        }
        let _ = writeln!(
            s,
            "        ],\n        params_struct_sizes: {}::PARAMS_STRUCT_SIZES,\n    }},",
            r.module
        );
    }
    s.push_str("];\n");
    s
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
