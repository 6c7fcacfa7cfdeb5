/* The private interface between the simulated CUDA libraries, as C: a transcription of
 * tests/sim/abi/src/lib.rs (crate sim-abi). Keep the two in step. */
#ifndef GPUPROF_SIM_ABI_H
#define GPUPROF_SIM_ABI_H

#include <stddef.h>
#include <stdint.h>

/* cuGetExportTable id of SimDriverTable ("gpuprof-sim-drv" + version byte 1). */
static const unsigned char SIM_DRIVER_TABLE_ID[16] = {'g', 'p', 'u', 'p', 'r', 'o', 'f', '-',
                                                      's', 'i', 'm', '-', 'd', 'r', 'v', 1};

#define SIM_OP_KERNEL 1u

typedef struct {
    uint64_t m, n, k, batch;
    uint32_t elem_bytes;
} SimGemmShape;

typedef struct {
    const char *name;
    double value;
} SimCounter;

typedef struct {
    uint32_t kind;
    uint32_t correlation_id;
    uint64_t start_ns;
    uint64_t end_ns;
    uint32_t device_id;
    uint32_t context_id;
    uint64_t stream_id;
    const char *name;
    int32_t grid[3];
    int32_t block[3];
    int32_t dynamic_shared_memory;
    int32_t static_shared_memory;
    uint16_t registers_per_thread;
    uint32_t graph_id;
    uint64_t graph_node_id;
    uint64_t bytes;
    uint8_t copy_kind;
    uint8_t src_kind;
    uint8_t dst_kind;
    uint32_t value;
    const SimCounter *counters;
    size_t num_counters;
} SimGpuOp;

typedef struct {
    uint32_t site;
    uint32_t cbid;
    const char *function_name;
    const void *params;
    void *context;
    uint32_t context_id;
    const char *symbol_name;
    int result;
    uint32_t correlation_id;
} SimApiCall;

typedef struct {
    size_t size;
    void *user;
    void (*api)(void *user, SimApiCall *call);
    void (*resource)(void *user, uint32_t cbid, const void *data);
    void (*gpu_op)(void *user, const SimGpuOp *op);
    void (*runtime_api)(void *user, SimApiCall *call);
} SimTracer;

typedef struct {
    size_t size;
    int (*set_tracer)(const SimTracer *tracer);
    uint64_t (*now_ns)(void);
    uint32_t (*context_id)(void *ctx);
    int (*context_device)(void *ctx);
    uint64_t (*stream_id)(void *ctx, void *stream);
    uint32_t (*graph_id)(void *graph);
    uint64_t (*graph_node_id)(void *node);
    void (*set_thread_gemm)(const SimGemmShape *shape);
    int (*invalidate_captures)(void *ctx);
    void (*runtime_api)(SimApiCall *call);
} SimDriverTable;

#endif
