/* A launch flood on the CUDA driver API, for the ring-overflow test and the app-thread
 * overhead benchmark: loads a one-kernel PTX module and launches it N times on one
 * stream, timing the launch loop alone, in wall time (CLOCK_MONOTONIC) and in the
 * launching thread's CPU time (CLOCK_THREAD_CPUTIME_ID), then synchronises.
 * usage: launch_flood N [event|query|runtime]
 * With `event`, each launch is followed by a cuEventRecord of one event on the same
 * stream: a call a profiler traces besides launches (the benchmark's cost per traced
 * call); with `query`, by a cuCtxGetCurrent: a call gpuprof only counts; with
 * `runtime`, the kernel is loaded and launched through the CUDA runtime
 * (libcudart.so.12: cudaLibraryLoadData, cudaLibraryGetKernel, cudaLaunchKernel), as a
 * PyTorch program launches its kernels.
 * prints: launches=N loop_ns=T ns_per_launch=T/N cpu_ns=C cpu_ns_per_launch=C/N
 *         peak_rss_kb=R (the process's peak resident set, VmHWM, after the synchronise)
 *         nvperf_host_rss_kb=H (of the resident set then, NVIDIA's libnvperf_host's) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* VmHWM of /proc/self/status in kB; -1 when it cannot be read. */
static long peak_rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

/* The resident set, in kB, of the mappings of NVIDIA's libnvperf_host (the Profiler
 * Host library CUPTI loads to build counter configurations and evaluate metrics) and
 * of the anonymous mapping right after its last one (its .bss); 0 when not loaded,
 * -1 when /proc cannot be read. */
static long nvperf_host_rss_kb(void) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    long kb = 0;
    int current = 0, previous = 0;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &path_at) == 3) {
            /* A mapping's first line: after the inode, its path, if any. */
            const char *path = line + path_at;
            int named = path_at > 0 && *path != '\n' && *path != '\0';
            previous = current;
            if (named)
                current = strstr(path, "libnvperf_host") != NULL;
            else
                current = previous == 1 ? 2 : 0;
        } else if (strncmp(line, "Rss:", 4) == 0 && current) {
            kb += strtol(line + 4, NULL, 10);
        }
    }
    fclose(f);
    return kb;
}

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;

#define LOAD(name)                                                        \
    name##_t name = (name##_t)dlsym(lib, #name);                          \
    if (!name) {                                                          \
        fprintf(stderr, "launch_flood: libcuda.so.1 lacks %s\n", #name); \
        return 2;                                                         \
    }
#define CHECK(call)                                                            \
    do {                                                                       \
        CUresult rc_ = (call);                                                 \
        if (rc_ != 0) {                                                        \
            fprintf(stderr, "launch_flood: %s failed with %d\n", #call, rc_); \
            return 1;                                                          \
        }                                                                      \
    } while (0)

typedef CUresult (*cuInit_t)(unsigned);
typedef CUresult (*cuDeviceGet_t)(CUdevice *, int);
typedef CUresult (*cuDevicePrimaryCtxRetain_t)(CUcontext *, CUdevice);
typedef CUresult (*cuCtxSetCurrent_t)(CUcontext);
typedef CUresult (*cuModuleLoadData_t)(CUmodule *, const void *);
typedef CUresult (*cuModuleGetFunction_t)(CUfunction *, CUmodule, const char *);
typedef CUresult (*cuLaunchKernel_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                     unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*cuCtxSynchronize_t)(void);
typedef void *CUevent;
typedef CUresult (*cuEventCreate_t)(CUevent *, unsigned);
typedef CUresult (*cuEventRecord_t)(CUevent, CUstream);
typedef CUresult (*cuCtxGetCurrent_t)(CUcontext *);
typedef struct {
    unsigned x, y, z;
} dim3;
typedef int (*cudaLibraryLoadData_t)(void **, const void *, void *, void **, unsigned, void *,
                                     void **, unsigned);
typedef int (*cudaLibraryGetKernel_t)(void **, void *, const char *);
typedef int (*cudaLaunchKernel_t)(const void *, dim3, dim3, void **, size_t, void *);

static const char PTX[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry tiny_elementwise_kernel(.param .u32 n)\n{\n\tret;\n}\n";

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    int record_events = argc > 2 && strcmp(argv[2], "event") == 0;
    int query_context = argc > 2 && strcmp(argv[2], "query") == 0;
    int runtime = argc > 2 && strcmp(argv[2], "runtime") == 0;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "launch_flood: %s\n", dlerror());
        return 2;
    }
    LOAD(cuInit) LOAD(cuDeviceGet) LOAD(cuDevicePrimaryCtxRetain) LOAD(cuCtxSetCurrent)
    LOAD(cuModuleLoadData) LOAD(cuModuleGetFunction) LOAD(cuLaunchKernel) LOAD(cuCtxSynchronize)
    LOAD(cuEventCreate) LOAD(cuEventRecord) LOAD(cuCtxGetCurrent)

    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuModuleLoadData(&mod, PTX));
    CHECK(cuModuleGetFunction(&f, mod, "tiny_elementwise_kernel"));
    CUevent ev;
    CHECK(cuEventCreate(&ev, 0));
    cudaLaunchKernel_t cudaLaunchKernel = NULL;
    void *kernel = NULL;
    if (runtime) {
        void *rt = dlopen("libcudart.so.12", RTLD_NOW);
        if (!rt) {
            fprintf(stderr, "launch_flood: %s\n", dlerror());
            return 2;
        }
        cudaLibraryLoadData_t load = (cudaLibraryLoadData_t)dlsym(rt, "cudaLibraryLoadData");
        cudaLibraryGetKernel_t get = (cudaLibraryGetKernel_t)dlsym(rt, "cudaLibraryGetKernel");
        cudaLaunchKernel = (cudaLaunchKernel_t)dlsym(rt, "cudaLaunchKernel");
        if (!load || !get || !cudaLaunchKernel) {
            fprintf(stderr, "launch_flood: libcudart.so.12 lacks a function\n");
            return 2;
        }
        void *library = NULL;
        CHECK(load(&library, PTX, NULL, NULL, 0, NULL, NULL, 0));
        CHECK(get(&kernel, library, "tiny_elementwise_kernel"));
    }
    dim3 grid = {1, 1, 1}, block = {32, 1, 1};
    unsigned arg = 1;
    void *params[] = {&arg};
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        if (runtime)
            CHECK(cudaLaunchKernel(kernel, grid, block, params, 0, NULL));
        else
            CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, params, 0));
        if (record_events)
            CHECK(cuEventRecord(ev, 0));
        if (query_context) {
            CUcontext current;
            CHECK(cuCtxGetCurrent(&current));
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    CHECK(cuCtxSynchronize());
    long long ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    long long cpu = (c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec);
    printf("launches=%ld loop_ns=%lld ns_per_launch=%.1f cpu_ns=%lld cpu_ns_per_launch=%.1f "
           "peak_rss_kb=%ld nvperf_host_rss_kb=%ld\n",
           n, ns, (double)ns / (double)n, cpu, (double)cpu / (double)n, peak_rss_kb(),
           nvperf_host_rss_kb());
    return 0;
}
