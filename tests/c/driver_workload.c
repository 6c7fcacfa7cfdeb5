/* A CUDA driver API workload for the simulated driver: a context, a pattern copied
 * H->D->H and checked, a PTX module with two kernels launched on a stream between
 * events, and a graph of 3 launches captured and replayed 3 times; then the error
 * codes of bad handles, bad ranges and unknown names. One line per result. */
#include "cuda_subset.h"

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
