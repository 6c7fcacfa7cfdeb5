/* GPU work that waits for host work issued after it: on stream A (non-blocking), a
 * cuStreamWaitValue32 on a device word the host sets later, then a kernel ("consume")
 * and a copy behind it; the host sleeps, then sets the word with cuStreamWriteValue32
 * on stream B and synchronises A. One line per fact.
 *
 *   wait_value            as above
 *   wait_value sync-first synchronises A before writing: waits forever, as on a GPU
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream, *CUmodule, *CUfunction;

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
FN(CUresult, cuCtxCreate_v2, (CUcontext *, unsigned, int))
FN(CUresult, cuCtxDestroy_v2, (CUcontext))
FN(CUresult, cuStreamCreate, (CUstream *, unsigned))
FN(CUresult, cuStreamSynchronize, (CUstream))
FN(CUresult, cuStreamQuery, (CUstream))
FN(CUresult, cuMemAlloc_v2, (CUdeviceptr *, size_t))
FN(CUresult, cuMemcpyHtoD_v2, (CUdeviceptr, const void *, size_t))
FN(CUresult, cuMemcpyHtoDAsync_v2, (CUdeviceptr, const void *, size_t, CUstream))
FN(CUresult, cuMemcpyDtoH_v2, (void *, CUdeviceptr, size_t))
FN(CUresult, cuModuleLoadData, (CUmodule *, const void *))
FN(CUresult, cuModuleGetFunction, (CUfunction *, CUmodule, const char *))
FN(CUresult, cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **))
/* cuda.h of CUDA 12+ maps cuStreamWaitValue32 / cuStreamWriteValue32 to the _v2 ABI. */
FN(CUresult, cuStreamWaitValue32_v2, (CUstream, CUdeviceptr, uint32_t, unsigned))
FN(CUresult, cuStreamWriteValue32_v2, (CUstream, CUdeviceptr, uint32_t, unsigned))

#define CU_STREAM_NON_BLOCKING 1
#define CU_STREAM_WAIT_VALUE_EQ 1

static const char PTX[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry consume(\n.param .u64 p\n)\n{\nret;\n}\n";

#define CK(call) do { CUresult r_ = (call); if (r_) { printf("%s = %d\n", #call, r_); return 1; } } while (0)

static unsigned long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

int main(int argc, char **argv) {
    int sync_first = argc > 1 && strcmp(argv[1], "sync-first") == 0;
    LOAD(cuInit); LOAD(cuCtxCreate_v2); LOAD(cuCtxDestroy_v2); LOAD(cuStreamCreate);
    LOAD(cuStreamSynchronize); LOAD(cuStreamQuery); LOAD(cuMemAlloc_v2); LOAD(cuMemcpyHtoD_v2);
    LOAD(cuMemcpyHtoDAsync_v2); LOAD(cuMemcpyDtoH_v2); LOAD(cuModuleLoadData);
    LOAD(cuModuleGetFunction); LOAD(cuLaunchKernel); LOAD(cuStreamWaitValue32_v2);
    LOAD(cuStreamWriteValue32_v2);
    CK(cuInit(0));
    CUcontext ctx;
    CK(cuCtxCreate_v2(&ctx, 0, 0));
    CUmodule mod;
    CK(cuModuleLoadData(&mod, PTX));
    CUfunction consume;
    CK(cuModuleGetFunction(&consume, mod, "consume"));
    CUdeviceptr flag, data;
    CK(cuMemAlloc_v2(&flag, 4));
    CK(cuMemAlloc_v2(&data, 4));
    uint32_t zero = 0, value = 42, got = 7;
    CK(cuMemcpyHtoD_v2(flag, &zero, 4));
    CK(cuMemcpyHtoD_v2(data, &zero, 4));
    CUstream a, b;
    CK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));

    CK(cuStreamWaitValue32_v2(a, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
    CK(cuLaunchKernel(consume, 4, 1, 1, 128, 1, 1, 0, a, NULL, NULL));
    CK(cuMemcpyHtoDAsync_v2(data, &value, 4, a));
    printf("launched\n");
    fflush(stdout);
    if (sync_first) {
        CK(cuStreamSynchronize(a));
        printf("synchronised before the write\n");
        return 1;
    }
    /* Host work after the launch; the GPU work on A cannot have run. */
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    printf("query before write %d\n", cuStreamQuery(a));
    CK(cuMemcpyDtoH_v2(&got, data, 4));
    printf("data before write %u\n", got);
    unsigned long long write_ns = now_ns();
    CK(cuStreamWriteValue32_v2(b, flag, 1, 0));
    CK(cuStreamSynchronize(a));
    printf("query after sync %d\n", cuStreamQuery(a));
    CK(cuMemcpyDtoH_v2(&got, data, 4));
    printf("data after sync %u\n", got);
    printf("write_ns %llu\n", write_ns);
    CK(cuCtxDestroy_v2(ctx));
    printf("done\n");
    return 0;
}
