/* A CUDA driver API workload for the simulated driver: a context, a pattern copied
 * H->D->H and checked, a PTX module with two kernels launched on a stream between
 * events, and a graph of 3 launches captured and replayed 3 times; then the error
 * codes of bad handles, bad ranges and unknown names. One line per result. */
/* The cuda.h (CUDA 13) subset this client calls, resolved with dlsym. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream, *CUevent, *CUmodule, *CUfunction, *CUgraph, *CUgraphExec, *CUgraphNode;
typedef struct { char bytes[16]; } CUuuid;

static void *lib;
static void *sym(const char *name) {
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *p = lib ? dlsym(lib, name) : NULL;
    if (!p) { printf("missing %s\n", name); exit(1); }
    return p;
}
#define FN(ret, name, args) static ret(*name) args;
#define LOAD(name) name = sym(#name)
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

#define CK(call) do { CUresult r_ = (call); if (r_) { printf("%s = %d\n", #call, r_); return 1; } } while (0)

int main(void) {
    load_all();
    CK(cuInit(0));
    CUcontext ctx;
    CK(cuCtxCreate_v2(&ctx, 0, 0));
    enum { N = 4096 };
    unsigned char in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = (unsigned char)(i * 7 + 3);
    CUdeviceptr d;
    CK(cuMemAlloc_v2(&d, N));
    printf("alloc 0x%llx\n", d);
    CK(cuMemcpyHtoD_v2(d, in, N));
    memset(out, 0, N);
    CK(cuMemcpyDtoH_v2(out, d, N));
    printf("round trip %s\n", memcmp(in, out, N) == 0 ? "equal" : "DIFFERENT");

    CUmodule mod;
    CK(cuModuleLoadData(&mod, PTX));
    CUfunction fill, scale, none = NULL;
    CK(cuModuleGetFunction(&fill, mod, "fill"));
    CK(cuModuleGetFunction(&scale, mod, "scale"));
    int regs = 0, shared = 0, maxt = 0;
    cuFuncGetAttribute(&regs, 4, fill);
    cuFuncGetAttribute(&shared, 1, fill);
    cuFuncGetAttribute(&maxt, 0, fill);
    printf("fill regs=%d shared=%d max_threads=%d\n", regs, shared, maxt);

    CUstream s;
    CK(cuStreamCreate(&s, 0));
    CUevent e0, e1;
    CK(cuEventCreate(&e0, 0));
    CK(cuEventCreate(&e1, 0));
    /* A long kernel first (2 ms with 1000 + blocks ns), so that e0 completes when it
     * ends and the elapsed time is exactly that of the two kernels after it. */
    CK(cuLaunchKernel(scale, 2000000, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CK(cuEventRecord(e0, s));
    CK(cuLaunchKernel(fill, 4, 1, 1, 128, 1, 1, 0, s, NULL, NULL));
    CK(cuLaunchKernel(scale, 8, 2, 1, 256, 1, 1, 0, s, NULL, NULL));
    CK(cuEventRecord(e1, s));
    CK(cuEventSynchronize(e1));
    float ms = -1;
    CK(cuEventElapsedTime_v2(&ms, e0, e1));
    printf("elapsed %.6f ms\n", ms);

    CK(cuStreamBeginCapture_v2(s, 0));
    CK(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CK(cuLaunchKernel(scale, 2, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CK(cuLaunchKernel(fill, 3, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    size_t n = 0;
    CK(cuGraphGetNodes(g, NULL, &n));
    printf("graph nodes %zu\n", n);
    CUgraphExec ex;
    CK(cuGraphInstantiateWithFlags(&ex, g, 0));
    for (int i = 0; i < 3; i++) CK(cuGraphLaunch(ex, s));
    CK(cuStreamSynchronize(s));
    printf("graph replayed 3 times\n");

    printf("bad function handle %d\n", cuLaunchKernel(none, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    printf("block too large %d\n", cuLaunchKernel(fill, 1, 1, 1, 2048, 1, 1, 0, s, NULL, NULL));
    printf("bad stream %d\n", cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, (CUstream)0x1234, NULL, NULL));
    printf("range past end %d\n", cuMemcpyHtoD_v2(d + 1, in, N));
    printf("not device memory %d\n", cuMemcpyDtoH_v2(out, 0x1000, 16));
    printf("unknown function %d\n", cuModuleGetFunction(&none, mod, "nope"));
    printf("double free %d\n", (cuMemFree_v2(d), cuMemFree_v2(d)));
    printf("end capture not capturing %d\n", cuStreamEndCapture(s, &g));

    CK(cuGraphExecDestroy(ex));
    CK(cuGraphDestroy(g));
    CK(cuEventDestroy_v2(e0));
    CK(cuEventDestroy_v2(e1));
    CK(cuStreamDestroy_v2(s));
    CK(cuModuleUnload(mod));
    CK(cuCtxDestroy_v2(ctx));
    printf("destroyed context %d\n", cuCtxSynchronize());
    return 0;
}
