/* A stand-in libcuda.so.1 for the simulated cuBLAS / cuBLASLt tests while the simulated
 * driver (tests/sim/cuda) cannot launch kernels yet: just the driver calls the sim
 * cuBLAS makes (signatures from cuda.h), and the private table of sim_abi.h. Each
 * cuLaunchKernel reports a kernel to the installed tracer with the GEMM shape set by
 * set_thread_gemm as its counters (m, n, k, batch, elem_bytes), so tests see exactly
 * what the library told the driver. The device: compute capability $FAKE_CC (default
 * "9.0"), $FAKE_SMS SMs (default 132). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_abi.h"

typedef int CUresult;
#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_INVALID_HANDLE 400

static int initialized;
static int ctx_storage;
static __thread void *current;
static __thread const SimGemmShape *thread_gemm;
static __thread SimGemmShape thread_gemm_copy;
static const SimTracer *tracer;

#define MAX_FUNCS 256
typedef struct {
    char name[512];
    int registers;
    int max_dyn_smem;
} Func;
typedef struct {
    Func funcs[MAX_FUNCS];
    int count;
} Module;

CUresult cuInit(unsigned flags) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    initialized = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(int *dev, int ordinal) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal != 0 || !dev) return CUDA_ERROR_INVALID_VALUE;
    *dev = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (!v || dev != 0) return CUDA_ERROR_INVALID_VALUE;
    const char *cc = getenv("FAKE_CC");
    const char *sms = getenv("FAKE_SMS");
    int major = 9, minor = 0;
    if (cc) sscanf(cc, "%d.%d", &major, &minor);
    switch (attr) {
    case 75: *v = major; return CUDA_SUCCESS;
    case 76: *v = minor; return CUDA_SUCCESS;
    case 16: *v = sms ? atoi(sms) : 132; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx || dev != 0) return CUDA_ERROR_INVALID_VALUE;
    *ctx = &ctx_storage;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(void *ctx) {
    current = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(void **ctx) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    *ctx = current;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(int *dev) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    *dev = 0;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(void **stream, unsigned flags) {
    (void)flags;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    *stream = malloc(1);
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(void **module, const void *image) {
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    Module *m = calloc(1, sizeof *m);
    const char *p = image;
    while ((p = strstr(p, ".visible .entry ")) != NULL) {
        p += strlen(".visible .entry ");
        const char *end = strchr(p, '(');
        if (!end || m->count == MAX_FUNCS || (size_t)(end - p) >= sizeof m->funcs[0].name) {
            free(m);
            return CUDA_ERROR_INVALID_IMAGE;
        }
        Func *f = &m->funcs[m->count++];
        memcpy(f->name, p, (size_t)(end - p));
        f->registers = 32;
        f->max_dyn_smem = 48 * 1024;
        const char *reg = strstr(end, ".maxnreg ");
        const char *next = strstr(end, ".visible .entry ");
        if (reg && (!next || reg < next)) f->registers = atoi(reg + strlen(".maxnreg "));
        p = end;
    }
    *module = m;
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(void *module) {
    free(module);
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(void **fn, void *module, const char *name) {
    Module *m = module;
    for (int i = 0; i < m->count; i++) {
        if (strcmp(m->funcs[i].name, name) == 0) {
            *fn = &m->funcs[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncSetAttribute(void *fn, int attr, int value) {
    if (attr != 8 || value < 0 || value > 227 * 1024) return CUDA_ERROR_INVALID_VALUE;
    ((Func *)fn)->max_dyn_smem = value;
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned smem, void *stream, void **params, void **extra) {
    (void)extra;
    Func *f = fn;
    if (!current) return CUDA_ERROR_INVALID_CONTEXT;
    if (!f || !params || (int)smem > f->max_dyn_smem) return CUDA_ERROR_INVALID_VALUE;
    if (gx == 0 || gy == 0 || gz == 0 || gz > 65535 || gy > 65535 || bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (tracer) {
        SimCounter counters[5];
        size_t n = 0;
        if (thread_gemm) {
            counters[0] = (SimCounter){"m", (double)thread_gemm->m};
            counters[1] = (SimCounter){"n", (double)thread_gemm->n};
            counters[2] = (SimCounter){"k", (double)thread_gemm->k};
            counters[3] = (SimCounter){"batch", (double)thread_gemm->batch};
            counters[4] = (SimCounter){"elem_bytes", (double)thread_gemm->elem_bytes};
            n = 5;
        }
        SimGpuOp op;
        memset(&op, 0, sizeof op);
        op.kind = SIM_OP_KERNEL;
        op.stream_id = stream ? 100 : 7;
        op.name = f->name;
        op.grid[0] = (int)gx, op.grid[1] = (int)gy, op.grid[2] = (int)gz;
        op.block[0] = (int)bx, op.block[1] = (int)by, op.block[2] = (int)bz;
        op.dynamic_shared_memory = (int)smem;
        op.registers_per_thread = (uint16_t)f->registers;
        op.counters = counters;
        op.num_counters = n;
        tracer->gpu_op(tracer->user, &op);
    }
    return CUDA_SUCCESS;
}

static int set_tracer(const SimTracer *t) {
    if (t && tracer) return 1;
    tracer = t;
    return 0;
}
static uint64_t now_ns(void) { return 0; }
static uint32_t context_id(void *ctx) { return ctx ? 1 : 0; }
static int context_device(void *ctx) { return ctx ? 0 : -1; }
static uint64_t stream_id(void *ctx, void *stream) { (void)ctx; return stream ? 100 : 7; }
static uint32_t graph_id(void *g) { (void)g; return 0; }
static uint64_t graph_node_id(void *n) { (void)n; return 0; }
static void set_thread_gemm(const SimGemmShape *shape) {
    if (shape) {
        thread_gemm_copy = *shape;
        thread_gemm = &thread_gemm_copy;
    } else {
        thread_gemm = NULL;
    }
}

static int invalidate_captures(void *ctx) { (void)ctx; return 0; }
static void runtime_api(SimApiCall *call) { (void)call; }

static const SimDriverTable table = {sizeof(SimDriverTable), set_tracer, now_ns, context_id,
                                     context_device, stream_id, graph_id, graph_node_id,
                                     set_thread_gemm, invalidate_captures, runtime_api};

CUresult cuGetExportTable(const void **out, const unsigned char *id) {
    if (!out || !id) return CUDA_ERROR_INVALID_VALUE;
    if (memcmp(id, SIM_DRIVER_TABLE_ID, 16) != 0) return CUDA_ERROR_INVALID_VALUE;
    *out = &table;
    return CUDA_SUCCESS;
}
