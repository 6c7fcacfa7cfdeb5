/* Launch batches for capture windows, on the driver API (cuda_subset.h).
 *
 *   capture_window profiler   launches 3 fill, then cuProfilerStart, 2 scale + a copy
 *                             H->D + a set, cuProfilerStop, 4 fill + a copy,
 *                             cuProfilerStart, 1 scale (8 blocks), cuProfilerStop, 2
 *                             fill: 12 launches, 3 of them (and 1 copy, 1 set) between
 *                             a start and a stop, in 2 windows. Also: start twice and
 *                             stop twice are not errors; without a current context
 *                             both answer CUDA_ERROR_INVALID_CONTEXT (201).
 *   capture_window sleep      batches at 0 s (2 fill), 2 s (3 scale) and 4 s (4 fill)
 *                             after main starts, each followed by a synchronisation.
 *
 * fill runs 1 block, scale 2 blocks (8 in the second window), so with a cost model of
 * `1000 + blocks` ns every kernel's time is exact. One line per step. */
#include <time.h>
#include "cuda_subset.h"

FN(CUresult, cuProfilerStart, (void))
FN(CUresult, cuProfilerStop, (void))

#define CK(call) do { CUresult r_ = (call); if (r_) { printf("%s = %d\n", #call, r_); exit(1); } } while (0)

static CUfunction fill, scale;
static CUstream s;

static void launch(CUfunction f, unsigned blocks, int n) {
    for (int i = 0; i < n; i++) CK(cuLaunchKernel(f, blocks, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
}

static double since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Sleeps until `at` seconds after t0. */
static void sleep_until(const struct timespec *t0, double at) {
    double left = at - since(t0);
    if (left <= 0) return;
    struct timespec d = {(time_t)left, (long)((left - (time_t)left) * 1e9)};
    nanosleep(&d, NULL);
}

int main(int argc, char **argv) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (argc != 2 || (strcmp(argv[1], "profiler") && strcmp(argv[1], "sleep"))) {
        printf("usage: capture_window profiler|sleep\n");
        return 2;
    }
    load_all();
    LOAD(cuProfilerStart); LOAD(cuProfilerStop);
    CK(cuInit(0));
    printf("no context: start %d stop %d\n", cuProfilerStart(), cuProfilerStop());
    CUcontext ctx;
    CK(cuCtxCreate_v2(&ctx, 0, 0));
    CUmodule mod;
    CK(cuModuleLoadData(&mod, PTX));
    CK(cuModuleGetFunction(&fill, mod, "fill"));
    CK(cuModuleGetFunction(&scale, mod, "scale"));
    CK(cuStreamCreate(&s, 0));
    enum { N = 4096 };
    static unsigned char host[N];
    CUdeviceptr d;
    CK(cuMemAlloc_v2(&d, N));

    if (!strcmp(argv[1], "profiler")) {
        launch(fill, 1, 3);
        CK(cuProfilerStart());
        CK(cuProfilerStart());
        launch(scale, 2, 2);
        CK(cuMemcpyHtoD_v2(d, host, N));
        CK(cuMemsetD32Async(d, 7, N / 4, s));
        CK(cuProfilerStop());
        CK(cuProfilerStop());
        launch(fill, 1, 4);
        CK(cuMemcpyHtoD_v2(d, host, N / 2));
        CK(cuProfilerStart());
        launch(scale, 8, 1);
        CK(cuProfilerStop());
        launch(fill, 1, 2);
        CK(cuStreamSynchronize(s));
        printf("12 launches, 3 between start and stop\n");
    } else {
        launch(fill, 1, 2);
        CK(cuStreamSynchronize(s));
        sleep_until(&t0, 2.0);
        launch(scale, 2, 3);
        CK(cuStreamSynchronize(s));
        sleep_until(&t0, 4.0);
        launch(fill, 1, 4);
        CK(cuStreamSynchronize(s));
        printf("batches of 2, 3, 4 launches at 0, 2, 4 s\n");
    }
    CK(cuMemFree_v2(d));
    CK(cuStreamDestroy_v2(s));
    CK(cuModuleUnload(mod));
    CK(cuCtxDestroy_v2(ctx));
    return 0;
}
