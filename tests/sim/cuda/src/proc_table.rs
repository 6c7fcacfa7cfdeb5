//! The entry points `cuGetProcAddress` serves: base name, the CUDA version that
//! introduced the ABI (the `_vNNNN` of `PFN_<name>_vNNNN` in CUDA 13.5's
//! `cudaTypedefs.h`) and the exported function. Per-thread-default-stream variants
//! (`_ptds` / `_ptsz`, the `_v7000` typedefs) are not simulated and not listed.

use std::ffi::{c_int, c_void};

use crate::{
    api_capture as cap, api_context as ctx, api_device as dev, api_event as ev, api_graph as gr,
    api_init as init, api_launch as la, api_memcpy as mc, api_memory as mem, api_module as md,
    api_profiler as pr, api_stream as st, api_stream_memop as mo, errors, export_table,
    proc_address as pa,
};

/// One versioned entry point.
pub(crate) struct Entry {
    pub(crate) name: &'static str,
    pub(crate) since: c_int,
    pub(crate) func: *const c_void,
}

/// Every entry point the sim exports, by base name and version.
pub(crate) fn table() -> Vec<Entry> {
    macro_rules! e {
        ($name:literal, $since:literal, $f:path) => {
            Entry {
                name: $name,
                since: $since,
                func: $f as *const c_void,
            }
        };
    }
    vec![
        e!("cuGetErrorString", 6000, errors::cuGetErrorString),
        e!("cuGetErrorName", 6000, errors::cuGetErrorName),
        e!("cuInit", 2000, init::cuInit),
        e!("cuDriverGetVersion", 2020, init::cuDriverGetVersion),
        e!("cuDeviceGet", 2000, dev::cuDeviceGet),
        e!("cuDeviceGetCount", 2000, dev::cuDeviceGetCount),
        e!("cuDeviceGetName", 2000, dev::cuDeviceGetName),
        e!("cuDeviceGetUuid", 9020, dev::cuDeviceGetUuid),
        e!("cuDeviceGetUuid", 11040, dev::cuDeviceGetUuid_v2),
        e!("cuDeviceTotalMem", 3020, dev::cuDeviceTotalMem_v2),
        e!("cuDeviceGetAttribute", 2000, dev::cuDeviceGetAttribute),
        e!("cuGetProcAddress", 11030, pa::cuGetProcAddress),
        e!("cuGetProcAddress", 12000, pa::cuGetProcAddress_v2),
        e!("cuGetExportTable", 3000, export_table::cuGetExportTable),
        e!("cuProfilerStart", 4000, pr::cuProfilerStart),
        e!("cuProfilerStop", 4000, pr::cuProfilerStop),
        // Contexts.
        e!(
            "cuDevicePrimaryCtxRetain",
            7000,
            ctx::cuDevicePrimaryCtxRetain
        ),
        e!(
            "cuDevicePrimaryCtxRelease",
            11000,
            ctx::cuDevicePrimaryCtxRelease_v2
        ),
        e!(
            "cuDevicePrimaryCtxGetState",
            7000,
            ctx::cuDevicePrimaryCtxGetState
        ),
        e!(
            "cuDevicePrimaryCtxSetFlags",
            11000,
            ctx::cuDevicePrimaryCtxSetFlags_v2
        ),
        e!(
            "cuDevicePrimaryCtxReset",
            11000,
            ctx::cuDevicePrimaryCtxReset_v2
        ),
        e!("cuCtxCreate", 3020, ctx::cuCtxCreate_v2),
        e!("cuCtxCreate", 11040, ctx::cuCtxCreate_v3),
        e!("cuCtxCreate", 12050, ctx::cuCtxCreate_v4),
        e!("cuCtxDestroy", 4000, ctx::cuCtxDestroy_v2),
        e!("cuCtxGetCurrent", 4000, ctx::cuCtxGetCurrent),
        e!("cuCtxSetCurrent", 4000, ctx::cuCtxSetCurrent),
        e!("cuCtxPushCurrent", 4000, ctx::cuCtxPushCurrent_v2),
        e!("cuCtxPopCurrent", 4000, ctx::cuCtxPopCurrent_v2),
        e!("cuCtxGetDevice", 2000, ctx::cuCtxGetDevice),
        e!("cuCtxGetDevice", 13000, ctx::cuCtxGetDevice_v2),
        e!("cuCtxSynchronize", 2000, ctx::cuCtxSynchronize),
        e!("cuCtxSynchronize", 13000, ctx::cuCtxSynchronize_v2),
        e!("cuCtxGetId", 12000, ctx::cuCtxGetId),
        e!("cuCtxGetApiVersion", 3020, ctx::cuCtxGetApiVersion),
        // Streams and events.
        e!("cuStreamCreate", 2000, st::cuStreamCreate),
        e!(
            "cuStreamCreateWithPriority",
            5050,
            st::cuStreamCreateWithPriority
        ),
        e!("cuStreamDestroy", 4000, st::cuStreamDestroy_v2),
        e!("cuStreamSynchronize", 2000, st::cuStreamSynchronize),
        e!("cuStreamQuery", 2000, st::cuStreamQuery),
        e!("cuStreamWaitValue32", 8000, mo::cuStreamWaitValue32),
        e!("cuStreamWaitValue32", 11070, mo::cuStreamWaitValue32_v2),
        e!("cuStreamWriteValue32", 8000, mo::cuStreamWriteValue32),
        e!("cuStreamWriteValue32", 11070, mo::cuStreamWriteValue32_v2),
        e!("cuStreamWaitValue64", 9000, mo::cuStreamWaitValue64),
        e!("cuStreamWaitValue64", 11070, mo::cuStreamWaitValue64_v2),
        e!("cuStreamWriteValue64", 9000, mo::cuStreamWriteValue64),
        e!("cuStreamWriteValue64", 11070, mo::cuStreamWriteValue64_v2),
        e!("cuStreamWaitEvent", 3020, st::cuStreamWaitEvent),
        e!("cuStreamGetId", 12000, st::cuStreamGetId),
        e!("cuStreamGetCtx", 9020, st::cuStreamGetCtx),
        e!("cuStreamGetCtx", 12050, st::cuStreamGetCtx_v2),
        e!("cuEventCreate", 2000, ev::cuEventCreate),
        e!("cuEventRecord", 2000, ev::cuEventRecord),
        e!("cuEventSynchronize", 2000, ev::cuEventSynchronize),
        e!("cuEventQuery", 2000, ev::cuEventQuery),
        e!("cuEventElapsedTime", 2000, ev::cuEventElapsedTime),
        e!("cuEventElapsedTime", 12080, ev::cuEventElapsedTime_v2),
        e!("cuEventDestroy", 4000, ev::cuEventDestroy_v2),
        // Memory.
        e!("cuMemAlloc", 3020, mem::cuMemAlloc_v2),
        e!("cuMemFree", 3020, mem::cuMemFree_v2),
        e!("cuMemAllocAsync", 11020, mem::cuMemAllocAsync),
        e!("cuMemFreeAsync", 11020, mem::cuMemFreeAsync),
        e!("cuMemAllocHost", 3020, mem::cuMemAllocHost_v2),
        e!("cuMemHostAlloc", 2020, mem::cuMemHostAlloc),
        e!("cuMemFreeHost", 2000, mem::cuMemFreeHost),
        e!("cuMemGetInfo", 3020, mem::cuMemGetInfo_v2),
        e!("cuPointerGetAttribute", 4000, mem::cuPointerGetAttribute),
        e!("cuMemcpy", 4000, mc::cuMemcpy),
        e!("cuMemcpyAsync", 4000, mc::cuMemcpyAsync),
        e!("cuMemcpyHtoD", 3020, mc::cuMemcpyHtoD_v2),
        e!("cuMemcpyDtoH", 3020, mc::cuMemcpyDtoH_v2),
        e!("cuMemcpyDtoD", 3020, mc::cuMemcpyDtoD_v2),
        e!("cuMemcpyHtoDAsync", 3020, mc::cuMemcpyHtoDAsync_v2),
        e!("cuMemcpyDtoHAsync", 3020, mc::cuMemcpyDtoHAsync_v2),
        e!("cuMemcpyDtoDAsync", 3020, mc::cuMemcpyDtoDAsync_v2),
        e!("cuMemsetD8", 3020, mc::cuMemsetD8_v2),
        e!("cuMemsetD16", 3020, mc::cuMemsetD16_v2),
        e!("cuMemsetD32", 3020, mc::cuMemsetD32_v2),
        e!("cuMemsetD8Async", 3020, mc::cuMemsetD8Async),
        e!("cuMemsetD16Async", 3020, mc::cuMemsetD16Async),
        e!("cuMemsetD32Async", 3020, mc::cuMemsetD32Async),
        // Modules, libraries, functions.
        e!("cuModuleLoadData", 2000, md::cuModuleLoadData),
        e!("cuModuleLoadDataEx", 2010, md::cuModuleLoadDataEx),
        e!("cuModuleUnload", 2000, md::cuModuleUnload),
        e!("cuModuleGetFunction", 2000, md::cuModuleGetFunction),
        e!("cuLibraryLoadData", 12000, md::cuLibraryLoadData),
        e!("cuLibraryUnload", 12000, md::cuLibraryUnload),
        e!("cuLibraryGetKernel", 12000, md::cuLibraryGetKernel),
        e!("cuKernelGetFunction", 12000, md::cuKernelGetFunction),
        e!("cuFuncGetAttribute", 2020, md::cuFuncGetAttribute),
        e!("cuFuncSetAttribute", 9000, md::cuFuncSetAttribute),
        e!("cuFuncSetCacheConfig", 3000, md::cuFuncSetCacheConfig),
        // Launches.
        e!("cuLaunchKernel", 4000, la::cuLaunchKernel),
        e!("cuLaunchKernelEx", 11060, la::cuLaunchKernelEx),
        e!(
            "cuLaunchCooperativeKernel",
            9000,
            la::cuLaunchCooperativeKernel
        ),
        // Graphs and capture.
        e!("cuStreamBeginCapture", 10010, cap::cuStreamBeginCapture_v2),
        e!("cuStreamEndCapture", 10000, cap::cuStreamEndCapture),
        e!("cuStreamIsCapturing", 10000, cap::cuStreamIsCapturing),
        e!(
            "cuStreamGetCaptureInfo",
            11030,
            cap::cuStreamGetCaptureInfo_v2
        ),
        e!(
            "cuStreamGetCaptureInfo",
            12030,
            cap::cuStreamGetCaptureInfo_v3
        ),
        e!("cuGraphCreate", 10000, gr::cuGraphCreate),
        e!("cuGraphAddKernelNode", 12000, gr::cuGraphAddKernelNode_v2),
        e!("cuGraphGetNodes", 10000, gr::cuGraphGetNodes),
        e!("cuGraphInstantiate", 11000, gr::cuGraphInstantiate_v2),
        e!(
            "cuGraphInstantiateWithFlags",
            11040,
            gr::cuGraphInstantiateWithFlags
        ),
        e!("cuGraphLaunch", 10000, gr::cuGraphLaunch),
        e!("cuGraphExecDestroy", 10000, gr::cuGraphExecDestroy),
        e!("cuGraphDestroy", 10000, gr::cuGraphDestroy),
    ]
}
