/* What the driver API test clients (driver_tracer.c, driver_workload.c) share: the
 * cuda.h (CUDA 13) subset they call (function pointers through cuda_loader.h, and
 * load_all(), which resolves them all or exits), and the PTX module with two kernels
 * they load. */
#ifndef GPUPROF_CUDA_SUBSET_H
#define GPUPROF_CUDA_SUBSET_H

#include "cuda_loader.h"

FN(CUresult, cuInit, (unsigned))
FN(CUresult, cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))
FN(CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice))
FN(CUresult, cuCtxCreate_v2, (CUcontext *, unsigned, CUdevice))
FN(CUresult, cuCtxDestroy_v2, (CUcontext))
FN(CUresult, cuCtxSetCurrent, (CUcontext))
FN(CUresult, cuCtxSynchronize, (void))
FN(CUresult, cuStreamCreate, (CUstream *, unsigned))
FN(CUresult, cuStreamDestroy_v2, (CUstream))
FN(CUresult, cuStreamSynchronize, (CUstream))
FN(CUresult, cuStreamGetId, (CUstream, unsigned long long *))
FN(CUresult, cuEventCreate, (CUevent *, unsigned))
FN(CUresult, cuEventRecord, (CUevent, CUstream))
FN(CUresult, cuEventSynchronize, (CUevent))
FN(CUresult, cuEventElapsedTime_v2, (float *, CUevent, CUevent))
FN(CUresult, cuEventDestroy_v2, (CUevent))
FN(CUresult, cuMemAlloc_v2, (CUdeviceptr *, size_t))
FN(CUresult, cuMemFree_v2, (CUdeviceptr))
FN(CUresult, cuMemcpyHtoD_v2, (CUdeviceptr, const void *, size_t))
FN(CUresult, cuMemcpyDtoH_v2, (void *, CUdeviceptr, size_t))
FN(CUresult, cuMemsetD32Async, (CUdeviceptr, unsigned, size_t, CUstream))
FN(CUresult, cuModuleLoadData, (CUmodule *, const void *))
FN(CUresult, cuModuleUnload, (CUmodule))
FN(CUresult, cuModuleGetFunction, (CUfunction *, CUmodule, const char *))
FN(CUresult, cuFuncGetAttribute, (int *, int, CUfunction))
FN(CUresult, cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **))
FN(CUresult, cuStreamBeginCapture_v2, (CUstream, int))
FN(CUresult, cuStreamEndCapture, (CUstream, CUgraph *))
FN(CUresult, cuGraphGetNodes, (CUgraph, CUgraphNode *, size_t *))
FN(CUresult, cuGraphInstantiateWithFlags, (CUgraphExec *, CUgraph, unsigned long long))
FN(CUresult, cuGraphLaunch, (CUgraphExec, CUstream))
FN(CUresult, cuGraphExecDestroy, (CUgraphExec))
FN(CUresult, cuGraphDestroy, (CUgraph))
FN(CUresult, cuGetExportTable, (const void **, const CUuuid *))

static void load_all(void) {
    LOAD(cuInit); LOAD(cuDevicePrimaryCtxRetain); LOAD(cuDevicePrimaryCtxRelease_v2);
    LOAD(cuCtxCreate_v2); LOAD(cuCtxDestroy_v2); LOAD(cuCtxSetCurrent); LOAD(cuCtxSynchronize);
    LOAD(cuStreamCreate); LOAD(cuStreamDestroy_v2); LOAD(cuStreamSynchronize); LOAD(cuStreamGetId);
    LOAD(cuEventCreate); LOAD(cuEventRecord); LOAD(cuEventSynchronize); LOAD(cuEventElapsedTime_v2);
    LOAD(cuEventDestroy_v2); LOAD(cuMemAlloc_v2); LOAD(cuMemFree_v2); LOAD(cuMemcpyHtoD_v2);
    LOAD(cuMemcpyDtoH_v2); LOAD(cuMemsetD32Async); LOAD(cuModuleLoadData); LOAD(cuModuleUnload);
    LOAD(cuModuleGetFunction); LOAD(cuFuncGetAttribute); LOAD(cuLaunchKernel);
    LOAD(cuStreamBeginCapture_v2); LOAD(cuStreamEndCapture); LOAD(cuGraphGetNodes);
    LOAD(cuGraphInstantiateWithFlags); LOAD(cuGraphLaunch); LOAD(cuGraphExecDestroy);
    LOAD(cuGraphDestroy); LOAD(cuGetExportTable);
}

/* A PTX module with two kernels. */
static const char PTX[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry fill(\n.param .u64 p\n)\n.maxnreg 40\n{\n"
    ".shared .align 4 .b8 tile[1024];\nret;\n}\n"
    ".visible .entry scale(\n.param .u64 p\n)\n{\nret;\n}\n";

#endif
