/* A cuBLAS / cuBLASLt client linked against the libraries (calls go through its PLT),
 * as PyTorch and most C++ programs are, for the GEMM-shape tests of the profiler:
 * direct GEMMs of several APIs, then a CUDA graph of GEMMs captured from a stream and
 * replayed REPLAYS times. Prints one line "ok: ..." at the end.
 *
 * Declarations copied from NVIDIA's headers, cuBLAS 12.9.1.4 (nvidia-cublas-cu12 wheel):
 * cublas_api.h, cublasLt.h; CUDA 12.9 library_types.h; CUDA 13 cuda.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define REPLAYS 100

/* cuda.h */
typedef int CUresult;
typedef void *CUcontext, *CUstream, *CUgraph, *CUgraphExec;
CUresult cuInit(unsigned);
CUresult cuDeviceGet(int *, int);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, int);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuStreamCreate(CUstream *, unsigned);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamBeginCapture_v2(CUstream, unsigned);
CUresult cuStreamEndCapture(CUstream, CUgraph *);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *, CUgraph, unsigned long long);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
enum { CU_STREAM_CAPTURE_MODE_GLOBAL = 0 };

/* cublas_api.h */
typedef int cublasStatus_t;
typedef void *cublasHandle_t;
enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum { CUBLAS_TF32_TENSOR_OP_MATH = 3 };
enum { CUBLAS_COMPUTE_32F = 68 };
enum { CUBLAS_GEMM_DEFAULT = -1 };
/* library_types.h */
enum { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
cublasStatus_t cublasCreate_v2(cublasHandle_t *);
cublasStatus_t cublasSetStream_v2(cublasHandle_t, CUstream);
cublasStatus_t cublasSetMathMode(cublasHandle_t, int);
cublasStatus_t cublasGemmEx(cublasHandle_t, int, int, int, int, int, const void *, const void *,
                            int, int, const void *, int, int, const void *, void *, int, int, int,
                            int);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t, int, int, int, int, int, const void *,
                                          const void *, int, int, long long, const void *, int,
                                          int, long long, const void *, void *, int, int,
                                          long long, int, int, int);
cublasStatus_t cublasSgemm_v2(cublasHandle_t, int, int, int, int, int, const float *,
                              const float *, int, const float *, int, const float *, float *, int);
cublasStatus_t cublasHgemm(cublasHandle_t, int, int, int, int, int, const void *, const void *,
                           int, const void *, int, const void *, void *, int);

/* cublasLt.h */
typedef void *cublasLtHandle_t, *cublasLtMatmulDesc_t, *cublasLtMatrixLayout_t;
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
enum { CUBLASLT_MATMUL_DESC_TRANSA = 3 };
enum { CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6 };
cublasStatus_t cublasLtCreate(cublasLtHandle_t *);
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *, int, int);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t, int, const void *, size_t);
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *, int, uint64_t, uint64_t,
                                          int64_t);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t, int, const void *, size_t);
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
                              cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t,
                              const void *, const void *, cublasLtMatrixLayout_t, void *,
                              cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
                              CUstream);

static int failures = 0;
#define CHECK(expr)                                                     \
    do {                                                                \
        int _r = (int)(expr);                                           \
        if (_r) {                                                       \
            printf("%s:%d: %s = %d\n", __FILE__, __LINE__, #expr, _r); \
            failures++;                                                 \
        }                                                               \
    } while (0)

int main(void) {
    int dev = -1;
    CUcontext ctx = NULL;
    CUstream stream = NULL;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreate(&stream, 0));
    if (failures) return 1;

    /* Fake device pointers: the simulated libraries compute nothing. */
    void *A = (void *)0x7f0000000000, *B = (void *)0x7f1000000000, *C = (void *)0x7f2000000000;
    float one = 1.0f, zero = 0.0f;
    uint16_t hone = 0x3c00, hzero = 0;

    cublasHandle_t h = NULL;
    CHECK(cublasCreate_v2(&h));
    CHECK(cublasSetStream_v2(h, stream));
    /* 1. BF16 T,N 4096x4096x4096 */
    CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4096, 4096, 4096, &one, A, CUDA_R_16BF, 4096,
                       B, CUDA_R_16BF, 4096, &zero, C, CUDA_R_16BF, 4096, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT));
    /* 2. BF16 N,N 128x256x64, batch 32 */
    CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 128, 256, 64, &one, A,
                                     CUDA_R_16BF, 128, 128 * 64, B, CUDA_R_16BF, 64, 64 * 256,
                                     &zero, C, CUDA_R_16BF, 128, 128 * 256, 32,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    /* 3. FP32 N,T 1000x500x300 */
    CHECK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_T, 1000, 500, 300, &one, A, 1000, B, 500,
                         &zero, C, 1000));
    /* 4. FP32 with TF32 math, 256x256x256 */
    CHECK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
    CHECK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 256, 256, 256, &one, A, 256, B, 256, &zero,
                         C, 256));
    CHECK(cublasSetMathMode(h, 0));
    /* 5. FP16 N,N 512x512x512 */
    CHECK(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 512, 512, 512, &hone, A, 512, B, 512, &hzero,
                      C, 512));
    /* 6. cuBLASLt BF16 T,N m=2048 n=512 k=1024 batch 4 */
    cublasLtHandle_t lh = NULL;
    cublasLtMatmulDesc_t desc = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    int trans = CUBLAS_OP_T, batch = 4;
    int64_t sa = 1024 * 2048, sb = 1024 * 512, sc = 2048 * 512;
    CHECK(cublasLtCreate(&lh));
    CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans));
    CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, 1024, 2048, 1024));
    CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, 1024, 512, 1024));
    CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, 2048, 512, 2048));
    cublasLtMatrixLayout_t layouts[3] = {la, lb, lc};
    int64_t strides[3] = {sa, sb, sc};
    for (int i = 0; i < 3; i++) {
        CHECK(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                               &batch, sizeof batch));
        CHECK(cublasLtMatrixLayoutSetAttribute(
            layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i], sizeof sa));
    }
    CHECK(cublasLtMatmul(lh, desc, &one, A, la, B, lb, &zero, C, lc, C, lc, NULL, NULL, 0,
                         stream));
    CHECK(cuStreamSynchronize(stream));

    /* A decode step as a CUDA graph: three GEMMs captured, replayed REPLAYS times. */
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CHECK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 3072, 8, 1024, &one, A, CUDA_R_16BF, 1024, B,
                       CUDA_R_16BF, 1024, &zero, C, CUDA_R_16BF, 3072, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT));
    CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 1024, 8, 1024, &one, A, CUDA_R_16BF, 1024, B,
                       CUDA_R_16BF, 1024, &zero, C, CUDA_R_16BF, 1024, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT));
    CHECK(cublasLtMatmul(lh, desc, &one, A, la, B, lb, &zero, C, lc, C, lc, NULL, NULL, 0,
                         stream));
    CHECK(cuStreamEndCapture(stream, &graph));
    CHECK(cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int i = 0; i < REPLAYS; i++) CHECK(cuGraphLaunch(exec, stream));
    CHECK(cuStreamSynchronize(stream));

    if (failures) return 1;
    printf("ok: 6 GEMMs, a graph of 3 GEMMs replayed %d times\n", REPLAYS);
    return 0;
}
