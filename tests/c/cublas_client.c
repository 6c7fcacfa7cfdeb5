/* A cuBLAS / cuBLASLt client for the simulated libraries' tests: loads libcuda.so.1,
 * libcublas.so.12 and libcublasLt.so.12 from the loader path, installs a tracer through
 * the simulated driver's private table (sim_abi.h) and prints one line per API result
 * and per kernel the driver saw (name, grid, block, shared memory, registers, then its
 * counters, which carry the GEMM shape or the cost model's values).
 *
 * Declarations copied from NVIDIA's headers, cuBLAS 12.9.1.4 (nvidia-cublas-cu12 wheel):
 * cublas_api.h, cublasLt.h; CUDA 12.9 library_types.h; CUDA 13 cuda.h. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_abi.h"

/* cublas_api.h */
typedef int cublasStatus_t;
typedef void *cublasHandle_t;
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum { CUBLAS_TF32_TENSOR_OP_MATH = 3 };
enum { CUBLAS_COMPUTE_32F = 68 };
enum { CUBLAS_GEMM_DEFAULT = -1 };
/* library_types.h */
enum { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
/* cublasLt.h */
typedef void *cublasLtHandle_t, *cublasLtMatmulDesc_t, *cublasLtMatrixLayout_t,
    *cublasLtMatmulPreference_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
    cublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    cublasStatus_t state;
    float wavesCount;
    int reserved[4];
} cublasLtMatmulHeuristicResult_t;
enum { CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_EPILOGUE = 7 };
enum { CUBLASLT_MATRIX_LAYOUT_ROWS = 2, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,
       CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6 };
enum { CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1 };

static void *sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        printf("missing %s\n", name);
        exit(1);
    }
    return p;
}

static void api(void *user, SimApiCall *call) { (void)user, (void)call; }
static void resource(void *user, uint32_t cbid, const void *data) { (void)user, (void)cbid, (void)data; }
static void gpu_op(void *user, const SimGpuOp *op) {
    (void)user;
    if (op->kind != SIM_OP_KERNEL) return;
    printf("launch %s grid=%d,%d,%d block=%d,%d,%d smem=%d regs=%u\n", op->name, op->grid[0],
           op->grid[1], op->grid[2], op->block[0], op->block[1], op->block[2],
           op->dynamic_shared_memory, op->registers_per_thread);
    for (size_t i = 0; i < op->num_counters; i++)
        printf("  %s=%.0f\n", op->counters[i].name, op->counters[i].value);
}

#define CHECK(label, expr) printf("%s=%d\n", label, (int)(expr))

/* This program makes no runtime API calls: none reach its tracer. */
static void runtime_api(void *user, SimApiCall *call) { (void)user; (void)call; }

int main(void) {
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *blas = dlopen("libcublas.so.12", RTLD_NOW | RTLD_LOCAL);
    void *lt = dlopen("libcublasLt.so.12", RTLD_NOW | RTLD_LOCAL);
    if (!cu || !blas || !lt) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    int (*cuInit)(unsigned) = sym(cu, "cuInit");
    int (*cuDeviceGet)(int *, int) = sym(cu, "cuDeviceGet");
    int (*cuDevicePrimaryCtxRetain)(void **, int) = sym(cu, "cuDevicePrimaryCtxRetain");
    int (*cuCtxSetCurrent)(void *) = sym(cu, "cuCtxSetCurrent");
    int (*cuStreamCreate)(void **, unsigned) = sym(cu, "cuStreamCreate");
    int (*cuGetExportTable)(const void **, const void *) = sym(cu, "cuGetExportTable");

    cublasStatus_t (*cublasCreate)(cublasHandle_t *) = sym(blas, "cublasCreate_v2");
    cublasStatus_t (*cublasDestroy)(cublasHandle_t) = sym(blas, "cublasDestroy_v2");
    cublasStatus_t (*cublasGetVersion)(cublasHandle_t, int *) = sym(blas, "cublasGetVersion_v2");
    cublasStatus_t (*cublasSetStream)(cublasHandle_t, void *) = sym(blas, "cublasSetStream_v2");
    cublasStatus_t (*cublasGetStream)(cublasHandle_t, void **) = sym(blas, "cublasGetStream_v2");
    cublasStatus_t (*cublasSetMathMode)(cublasHandle_t, int) = sym(blas, "cublasSetMathMode");
    const char *(*cublasGetStatusName)(cublasStatus_t) = sym(blas, "cublasGetStatusName");
    cublasStatus_t (*cublasGemmEx)(cublasHandle_t, int, int, int, int, int, const void *, const void *,
                                   int, int, const void *, int, int, const void *, void *, int, int,
                                   int, int) = sym(blas, "cublasGemmEx");
    cublasStatus_t (*cublasGemmStridedBatchedEx)(
        cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int, long long,
        const void *, int, int, long long, const void *, void *, int, int, long long, int, int,
        int) = sym(blas, "cublasGemmStridedBatchedEx");
    cublasStatus_t (*cublasSgemm)(cublasHandle_t, int, int, int, int, int, const float *,
                                  const float *, int, const float *, int, const float *, float *,
                                  int) = sym(blas, "cublasSgemm_v2");

    cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t *) = sym(lt, "cublasLtCreate");
    cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t) = sym(lt, "cublasLtDestroy");
    cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *, int, int) =
        sym(lt, "cublasLtMatmulDescCreate");
    cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t, int, const void *,
                                                     size_t) = sym(lt, "cublasLtMatmulDescSetAttribute");
    cublasStatus_t (*cublasLtMatmulDescGetAttribute)(cublasLtMatmulDesc_t, int, void *, size_t,
                                                     size_t *) = sym(lt, "cublasLtMatmulDescGetAttribute");
    cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *, int, uint64_t, uint64_t,
                                                 int64_t) = sym(lt, "cublasLtMatrixLayoutCreate");
    cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t, int, const void *,
                                                       size_t) = sym(lt, "cublasLtMatrixLayoutSetAttribute");
    cublasStatus_t (*cublasLtMatrixLayoutGetAttribute)(cublasLtMatrixLayout_t, int, void *, size_t,
                                                       size_t *) = sym(lt, "cublasLtMatrixLayoutGetAttribute");
    cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t *) =
        sym(lt, "cublasLtMatmulPreferenceCreate");
    cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t, int,
                                                           const void *, size_t) =
        sym(lt, "cublasLtMatmulPreferenceSetAttribute");
    cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(
        cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
        cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
        cublasLtMatmulHeuristicResult_t *, int *) = sym(lt, "cublasLtMatmulAlgoGetHeuristic");
    cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,
                                     const void *, cublasLtMatrixLayout_t, const void *,
                                     cublasLtMatrixLayout_t, const void *, const void *,
                                     cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                     const cublasLtMatmulAlgo_t *, void *, size_t, void *) =
        sym(lt, "cublasLtMatmul");

    int dev = -1;
    void *ctx = NULL, *stream = NULL;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuStreamCreate(&stream, 0)) {
        printf("driver setup failed\n");
        return 1;
    }
    const SimDriverTable *table = NULL;
    if (cuGetExportTable((const void **)&table, SIM_DRIVER_TABLE_ID) || !table) {
        printf("no driver table\n");
        return 1;
    }
    static SimTracer tracer = {sizeof(SimTracer), NULL, api, resource, gpu_op, runtime_api};
    CHECK("set_tracer", table->set_tracer(&tracer));

    /* Fake device pointers: the sim computes nothing and never dereferences them. */
    void *A = (void *)0x7f0000000000, *B = (void *)0x7f1000000000, *C = (void *)0x7f2000000000;
    float one = 1.0f, zero = 0.0f;

    cublasHandle_t h = NULL;
    CHECK("cublasCreate_v2", cublasCreate(&h));
    int version = 0;
    cublasStatus_t r = cublasGetVersion(h, &version);
    printf("cublasGetVersion_v2=%d %d\n", r, version);
    CHECK("cublasSetStream_v2", cublasSetStream(h, stream));
    void *got = NULL;
    r = cublasGetStream(h, &got);
    printf("cublasGetStream_v2=%d same=%d\n", r, got == stream);

    printf("-- GemmEx bf16 T,N 4096x4096x4096\n");
    CHECK("cublasGemmEx", cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 4096, 4096, &one, A,
                                       CUDA_R_16BF, 4096, B, CUDA_R_16BF, 4096, &zero, C,
                                       CUDA_R_16BF, 4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    printf("-- GemmStridedBatchedEx bf16 N,N 128x256x64 batch 32\n");
    CHECK("cublasGemmStridedBatchedEx",
          cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 128, 256, 64, &one, A, CUDA_R_16BF,
                                     128, 128 * 64, B, CUDA_R_16BF, 64, 64 * 256, &zero, C,
                                     CUDA_R_16BF, 128, 128 * 256, 32, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT));
    printf("-- Sgemm N,T 1000x500x300\n");
    CHECK("cublasSgemm_v2", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, 1000, 500, 300, &one, A, 1000,
                                        B, 500, &zero, C, 1000));
    printf("-- Sgemm with TF32 math 256x256x256\n");
    CHECK("cublasSetMathMode", cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
    CHECK("cublasSgemm_v2", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 256, 256, 256, &one, A, 256, B,
                                        256, &zero, C, 256));
    CHECK("cublasSetMathMode", cublasSetMathMode(h, 0));
    printf("-- GemmEx bf16 T,N 4096x1x4096 (GEMV)\n");
    CHECK("cublasGemmEx", cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 1, 4096, &one, A,
                                       CUDA_R_16BF, 4096, B, CUDA_R_16BF, 4096, &zero, C,
                                       CUDA_R_16BF, 4096, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));

    printf("-- errors\n");
    CHECK("m<0", cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 16, 16, &one, A, CUDA_R_16BF, 16, B,
                              CUDA_R_16BF, 16, &zero, C, CUDA_R_16BF, 16, CUBLAS_COMPUTE_32F, -1));
    CHECK("lda<k (op T)", cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 64, 16, 32, &one, A, CUDA_R_16BF,
                                       31, B, CUDA_R_16BF, 32, &zero, C, CUDA_R_16BF, 64,
                                       CUBLAS_COMPUTE_32F, -1));
    CHECK("ldc<m", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 64, 16, 32, &one, A, 64, B, 32, &zero, C, 63));
    CHECK("bf16 x fp16", cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, A, CUDA_R_16BF,
                                      16, B, CUDA_R_16F, 16, &zero, C, CUDA_R_16BF, 16,
                                      CUBLAS_COMPUTE_32F, -1));
    CHECK("alpha NULL", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, NULL, A, 16, B, 16, &zero, C, 16));
    CHECK("m=0", cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 16, 16, &one, A, CUDA_R_16BF, 1, B,
                              CUDA_R_16BF, 16, &zero, C, CUDA_R_16BF, 1, CUBLAS_COMPUTE_32F, -1));
    CHECK("batch=0", cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, A,
                                                CUDA_R_16BF, 16, 256, B, CUDA_R_16BF, 16, 256, &zero,
                                                C, CUDA_R_16BF, 16, 256, 0, CUBLAS_COMPUTE_32F, -1));
    printf("cublasGetStatusName(15)=%s\n", cublasGetStatusName(15));

    printf("-- cublasLt bf16 T,N m=2048 n=512 k=1024 batch 4\n");
    cublasLtHandle_t lh = NULL;
    CHECK("cublasLtCreate", cublasLtCreate(&lh));
    cublasLtMatmulDesc_t desc = NULL;
    CHECK("cublasLtMatmulDescCreate", cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t trans = CUBLAS_OP_T;
    CHECK("set TRANSA", cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans));
    CHECK("set TRANSA size 8", cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, 8));
    int32_t got32 = -1;
    size_t written = 0;
    r = cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &got32, sizeof got32, &written);
    printf("get TRANSA=%d %d written=%zu\n", r, got32, written);
    uint32_t epilogue = 0;
    r = cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue, NULL);
    printf("get EPILOGUE=%d %u\n", r, epilogue);

    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    CHECK("layout A", cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, 1024, 2048, 1024));
    CHECK("layout B", cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, 1024, 512, 1024));
    CHECK("layout C", cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, 2048, 512, 2048));
    int32_t batch = 4;
    int64_t stride = 0;
    cublasLtMatrixLayout_t layouts[3] = {la, lb, lc};
    int64_t strides[3] = {1024 * 2048, 1024 * 512, 2048 * 512};
    for (int i = 0; i < 3; i++) {
        stride = strides[i];
        printf("batch %d=%d\n", i, cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
        printf("stride %d=%d\n", i, cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    }
    uint64_t rows = 0;
    r = cublasLtMatrixLayoutGetAttribute(la, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, sizeof rows, &written);
    printf("get ROWS=%d %llu written=%zu\n", r, (unsigned long long)rows, written);

    cublasLtMatmulPreference_t pref = NULL;
    CHECK("cublasLtMatmulPreferenceCreate", cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = 32 << 20;
    CHECK("set MAX_WORKSPACE_BYTES", cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t heur;
    memset(&heur, 0xff, sizeof heur);
    int count = -1;
    r = cublasLtMatmulAlgoGetHeuristic(lh, desc, la, lb, lc, lc, pref, 1, &heur, &count);
    printf("cublasLtMatmulAlgoGetHeuristic=%d count=%d state=%d workspace=%zu waves=%.3f\n", r, count,
           heur.state, heur.workspaceSize, heur.wavesCount);
    CHECK("cublasLtMatmul", cublasLtMatmul(lh, desc, &one, A, la, B, lb, &zero, C, lc, C, lc,
                                           &heur.algo, NULL, 0, stream));
    batch = 2;
    cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
    CHECK("batch mismatch", cublasLtMatmul(lh, desc, &one, A, la, B, lb, &zero, C, lc, C, lc, NULL, NULL, 0, stream));
    CHECK("bad Lt handle", cublasLtMatmul((void *)0x10, desc, &one, A, la, B, lb, &zero, C, lc, C, lc, NULL, NULL, 0, stream));
    CHECK("cublasLtDestroy", cublasLtDestroy(lh));

    CHECK("cublasDestroy_v2", cublasDestroy(h));
    CHECK("destroyed handle", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &one, A, 16, B, 16, &zero, C, 16));
    CHECK("cublasDestroy_v2 again", cublasDestroy(h));
    table->set_tracer(NULL);
    return 0;
}
