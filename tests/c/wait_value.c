/* GPU work that waits for host work issued after it: on stream A (non-blocking), a
 * cuStreamWaitValue32 on a device word the host sets later, then a kernel ("consume")
 * and a copy behind it; the host sleeps, then sets the word with cuStreamWriteValue32
 * on stream B and synchronises A. One line per fact.
 *
 *   wait_value            as above
 *   wait_value sync-first synchronises A before writing: waits forever, as on a GPU
 *   wait_value wide       the same with cuStreamWaitValue64 / cuStreamWriteValue64 on
 *                         a 64-bit word and a value above 2^32
 *   wait_value trace      (with either of the above) installs a tracer through the
 *                         simulated driver's private table (sim_abi.h) and, after
 *                         "done", prints the memory operations' params structs and
 *                         every GPU operation: which call issued it, whether it was
 *                         reported before, inside or after the write call, and the
 *                         simulated times; the write is queued on B behind a long
 *                         kernel ("produce"), so it executes when that kernel ends,
 *                         after the write call has returned, and "consume" must start
 *                         exactly then
 *   wait_value grids N MS N rounds, each a wait on stream A for value i, "consume"
 *                         behind it with a grid of 4 + i blocks (a new one each
 *                         round), the host's write MS ms after the launch, and a
 *                         synchronisation of A; prints "rounds N" and "done"
 *   wait_value comm       no wait: a kernel named as NCCL's all-reduce
 *                         ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL") and
 *                         "produce" on A, then a synchronisation; prints "done"
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_abi.h"

#include "cuda_loader.h"

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
FN(CUresult, cuStreamWaitValue64_v2, (CUstream, CUdeviceptr, uint64_t, unsigned))
FN(CUresult, cuStreamWriteValue64_v2, (CUstream, CUdeviceptr, uint64_t, unsigned))
FN(CUresult, cuGetExportTable, (const void **, const void *))

#define CU_STREAM_NON_BLOCKING 1
#define CU_STREAM_WAIT_VALUE_EQ 1

/* CUPTI driver callback ids (cupti_driver_cbid.h). */
#define CBID_cuLaunchKernel 307
#define CBID_cuMemcpyHtoDAsync_v2 277
#define CBID_cuStreamWaitValue32_v2 659
#define CBID_cuStreamWaitValue64_v2 661
#define CBID_cuStreamWriteValue32_v2 663
#define CBID_cuStreamWriteValue64_v2 665

/* generated_cuda_meta.h: cuStream{Wait,Write}Value{32,64}_v2_params. */
typedef struct { CUstream stream; CUdeviceptr addr; uint32_t value; unsigned flags; } Value32Params;
typedef struct { CUstream stream; CUdeviceptr addr; uint64_t value; unsigned flags; } Value64Params;

/* What the tracer saw; printed at the end (trace mode). */
static const SimDriverTable *T;
static unsigned next_correlation = 100;
static unsigned launch_corr, copy_corr;
static uint64_t write_enter, write_exit;
static char params_lines[4][160];
static int n_params;
static struct { unsigned kind, corr; uint64_t start, end; char name[32]; int when; } ops[16];
static int n_ops;

static void note_params(const char *what, unsigned cbid, const void *p) {
    if (n_params == 4) return;
    if (cbid == CBID_cuStreamWaitValue64_v2 || cbid == CBID_cuStreamWriteValue64_v2) {
        const Value64Params *v = p;
        snprintf(params_lines[n_params++], 160, "params %s value=%llu flags=%u", what,
                 (unsigned long long)v->value, v->flags);
    } else {
        const Value32Params *v = p;
        snprintf(params_lines[n_params++], 160, "params %s value=%u flags=%u", what, v->value, v->flags);
    }
}

static void on_api(void *user, SimApiCall *c) {
    (void)user;
    if (c->site == 0) c->correlation_id = next_correlation++;
    int wait = c->cbid == CBID_cuStreamWaitValue32_v2 || c->cbid == CBID_cuStreamWaitValue64_v2;
    int write = c->cbid == CBID_cuStreamWriteValue32_v2 || c->cbid == CBID_cuStreamWriteValue64_v2;
    if (c->site == 0 && (wait || write)) note_params(wait ? "wait" : "write", c->cbid, c->params);
    if (c->site == 0 && c->cbid == CBID_cuLaunchKernel && !launch_corr) launch_corr = c->correlation_id;
    if (c->site == 0 && c->cbid == CBID_cuMemcpyHtoDAsync_v2) copy_corr = c->correlation_id;
    if (write) {
        /* The last write call (wide mode writes twice). */
        if (c->site == 0) {
            write_enter = T->now_ns();
            write_exit = 0;
        } else {
            write_exit = T->now_ns();
        }
    }
}

static void on_resource(void *user, uint32_t cbid, const void *d) { (void)user; (void)cbid; (void)d; }

static void on_op(void *user, const SimGpuOp *op) {
    (void)user;
    if (n_ops == 16) return;
    ops[n_ops].kind = op->kind;
    ops[n_ops].corr = op->correlation_id;
    ops[n_ops].start = op->start_ns;
    ops[n_ops].end = op->end_ns;
    snprintf(ops[n_ops].name, sizeof ops[n_ops].name, "%s", op->name ? op->name : "");
    ops[n_ops].when = write_enter == 0 ? 0 : write_exit == 0 ? 1 : 2;
    n_ops++;
}

static void print_trace(void) {
    static const char *when[] = {"before", "inside", "after"};
    for (int i = 0; i < n_params; i++) printf("%s\n", params_lines[i]);
    int k = -1, c = -1, p = -1;
    for (int i = 0; i < n_ops; i++) {
        const char *by = ops[i].corr == launch_corr ? "launch" : ops[i].corr == copy_corr ? "copy" : "other";
        printf("op kind=%u %s by=%s %s the write\n", ops[i].kind, ops[i].name, by, when[ops[i].when]);
        if (ops[i].corr == launch_corr) k = i;
        if (ops[i].corr == copy_corr) c = i;
        if (strcmp(ops[i].name, "produce") == 0) p = i;
    }
    if (k < 0 || c < 0 || p < 0) { printf("an operation is missing\n"); return; }
    printf("produce ends after the write call %d\n", ops[p].end > write_exit);
    printf("kernel start - produce end %lld\n", (long long)(ops[k].start - ops[p].end));
    printf("kernel duration %llu\n", (unsigned long long)(ops[k].end - ops[k].start));
    printf("copy start - kernel end %lld\n", (long long)(ops[c].start - ops[k].end));
    printf("copy duration %llu\n", (unsigned long long)(ops[c].end - ops[c].start));
}

static const char PTX[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry consume(\n.param .u64 p\n)\n{\nret;\n}\n"
    ".visible .entry produce(\n.param .u64 p\n)\n{\nret;\n}\n"
    ".visible .entry ncclDevKernel_AllReduce_Sum_bf16_RING_LL(\n.param .u64 p\n)\n{\nret;\n}\n";

#define CK(call) do { CUresult r_ = (call); if (r_) { printf("%s = %d\n", #call, r_); return 1; } } while (0)

static unsigned long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* This program makes no runtime API calls: none reach its tracer. */
static void runtime_api(void *user, SimApiCall *call) { (void)user; (void)call; }

int main(int argc, char **argv) {
    int sync_first = 0, wide = 0, trace = 0, grids = 0, gap_ms = 0, comm = 0;
    for (int i = 1; i < argc; i++) {
        sync_first |= strcmp(argv[i], "sync-first") == 0;
        wide |= strcmp(argv[i], "wide") == 0;
        trace |= strcmp(argv[i], "trace") == 0;
        comm |= strcmp(argv[i], "comm") == 0;
        if (strcmp(argv[i], "grids") == 0 && i + 2 < argc) {
            grids = atoi(argv[++i]);
            gap_ms = atoi(argv[++i]);
        }
    }
    LOAD(cuInit); LOAD(cuCtxCreate_v2); LOAD(cuCtxDestroy_v2); LOAD(cuStreamCreate);
    LOAD(cuStreamSynchronize); LOAD(cuStreamQuery); LOAD(cuMemAlloc_v2); LOAD(cuMemcpyHtoD_v2);
    LOAD(cuMemcpyHtoDAsync_v2); LOAD(cuMemcpyDtoH_v2); LOAD(cuModuleLoadData);
    LOAD(cuModuleGetFunction); LOAD(cuLaunchKernel); LOAD(cuStreamWaitValue32_v2);
    LOAD(cuStreamWriteValue32_v2); LOAD(cuStreamWaitValue64_v2); LOAD(cuStreamWriteValue64_v2);
    LOAD(cuGetExportTable);
    if (trace) {
        const void *table = NULL;
        CK(cuGetExportTable(&table, SIM_DRIVER_TABLE_ID));
        T = table;
        static const SimTracer tracer = {sizeof(SimTracer), NULL, on_api, on_resource, on_op, runtime_api};
        if (T->set_tracer(&tracer)) { printf("set_tracer failed\n"); return 1; }
    }
    CK(cuInit(0));
    CUcontext ctx;
    CK(cuCtxCreate_v2(&ctx, 0, 0));
    CUmodule mod;
    CK(cuModuleLoadData(&mod, PTX));
    CUfunction consume, produce;
    CK(cuModuleGetFunction(&consume, mod, "consume"));
    CK(cuModuleGetFunction(&produce, mod, "produce"));
    CUdeviceptr flag, data;
    CK(cuMemAlloc_v2(&flag, 8));
    CK(cuMemAlloc_v2(&data, 4));
    uint32_t zero = 0, value = 42, got = 7;
    uint64_t zero64 = 0, wide_value = (1ull << 40) | 1;
    CK(cuMemcpyHtoD_v2(flag, &zero64, 8));
    CK(cuMemcpyHtoD_v2(data, &zero, 4));
    CUstream a, b;
    CK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));

    if (grids > 0) {
        struct timespec gap = {gap_ms / 1000, (long)(gap_ms % 1000) * 1000 * 1000};
        for (int i = 1; i <= grids; i++) {
            CK(cuStreamWaitValue32_v2(a, flag, (uint32_t)i, CU_STREAM_WAIT_VALUE_EQ));
            CK(cuLaunchKernel(consume, 4 + (unsigned)i, 1, 1, 128, 1, 1, 0, a, NULL, NULL));
            nanosleep(&gap, NULL);
            CK(cuStreamWriteValue32_v2(b, flag, (uint32_t)i, 0));
            CK(cuStreamSynchronize(a));
        }
        printf("rounds %d\n", grids);
        CK(cuCtxDestroy_v2(ctx));
        printf("done\n");
        return 0;
    }
    if (comm) {
        CUfunction allreduce;
        CK(cuModuleGetFunction(&allreduce, mod, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"));
        CK(cuLaunchKernel(allreduce, 8, 1, 1, 256, 1, 1, 0, a, NULL, NULL));
        CK(cuLaunchKernel(produce, 2, 1, 1, 64, 1, 1, 0, a, NULL, NULL));
        CK(cuStreamSynchronize(a));
        CK(cuCtxDestroy_v2(ctx));
        printf("done\n");
        return 0;
    }
    if (wide) CK(cuStreamWaitValue64_v2(a, flag, wide_value, CU_STREAM_WAIT_VALUE_EQ));
    else CK(cuStreamWaitValue32_v2(a, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
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
    /* With the tracer: the write waits behind a long kernel on B, so it executes well
     * after the write call, and the kernel on A must start exactly when it does. */
    if (trace) CK(cuLaunchKernel(produce, 20000000, 1, 1, 32, 1, 1, 0, b, NULL, NULL));
    if (wide) {
        /* The low 32 bits alone would not satisfy the wait. */
        CK(cuStreamWriteValue64_v2(b, flag, 1, 0));
        printf("query after a partial write %d\n", cuStreamQuery(a));
        CK(cuStreamWriteValue64_v2(b, flag, wide_value, 0));
    } else {
        CK(cuStreamWriteValue32_v2(b, flag, 1, 0));
    }
    CK(cuStreamSynchronize(a));
    printf("query after sync %d\n", cuStreamQuery(a));
    CK(cuMemcpyDtoH_v2(&got, data, 4));
    printf("data after sync %u\n", got);
    printf("write_ns %llu\n", write_ns);
    CK(cuCtxDestroy_v2(ctx));
    printf("done\n");
    if (trace) print_trace();
    return 0;
}
