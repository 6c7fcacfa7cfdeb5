/* Installs a tracer through the simulated driver's private export table
 * (sim_abi::DriverTable, found with cuGetExportTable and the sim's UUID) and prints one
 * line per API entry / exit, resource event and GPU operation of a small workload. */
#include "cuda_subset.h"

typedef struct {
    unsigned site, cbid;
    const char *function_name;
    const void *params;
    CUcontext context;
    unsigned context_id;
    const char *symbol_name;
    int result;
    unsigned correlation_id;
} ApiCall;
typedef struct { const char *name; double value; } Counter;
typedef struct {
    unsigned kind, correlation_id;
    uint64_t start_ns, end_ns;
    unsigned device_id, context_id;
    uint64_t stream_id;
    const char *name;
    int grid[3], block[3], dynamic_shared_memory, static_shared_memory;
    uint16_t registers_per_thread;
    unsigned graph_id;
    uint64_t graph_node_id, bytes;
    uint8_t copy_kind, src_kind, dst_kind;
    unsigned value;
    const Counter *counters;
    size_t num_counters;
} GpuOp;
typedef struct { CUcontext context; void *handle; void *descriptor; } ResourceData;
typedef struct { unsigned moduleId; size_t cubinSize; const char *pCubin; } ModuleData;
typedef struct {
    CUgraph graph, originalGraph;
    CUgraphNode node, originalNode;
    unsigned nodeType;
    CUgraphNode dependency;
    CUgraphExec graphExec;
} GraphData;
typedef struct {
    size_t size;
    void *user;
    void (*api)(void *, ApiCall *);
    void (*resource)(void *, unsigned, const ResourceData *);
    void (*gpu_op)(void *, const GpuOp *);
} Tracer;
typedef struct {
    size_t size;
    int (*set_tracer)(const Tracer *);
    uint64_t (*now_ns)(void);
    unsigned (*context_id)(CUcontext);
    int (*context_device)(CUcontext);
    uint64_t (*stream_id)(CUcontext, CUstream);
    unsigned (*graph_id)(CUgraph);
    uint64_t (*graph_node_id)(CUgraphNode);
    void (*set_thread_gemm)(const void *);
    int (*invalidate_captures)(CUcontext);
} DriverTable;

static const DriverTable *T;
static unsigned next_correlation = 100;

static void on_api(void *user, ApiCall *c) {
    (void)user;
    if (c->site == 0) c->correlation_id = next_correlation++;
    printf("api %s %s cbid=%u corr=%u ctx=%u", c->site == 0 ? "enter" : "exit ", c->function_name,
           c->cbid, c->correlation_id, c->context_id);
    if (c->symbol_name) printf(" symbol=%s", c->symbol_name);
    if (c->site == 1) printf(" result=%d", c->result);
    printf("\n");
}

static void on_resource(void *user, unsigned cbid, const ResourceData *d) {
    (void)user;
    printf("resource cbid=%u ctx=%u", cbid, T->context_id(d->context));
    if (cbid == 3 || cbid == 4) printf(" stream=%llu", (unsigned long long)T->stream_id(d->context, d->handle));
    if (cbid == 6 || cbid == 7) {
        const ModuleData *m = d->descriptor;
        printf(" module=%u size=%zu", m->moduleId, m->cubinSize);
    }
    if (cbid >= 9 && cbid <= 19) {
        const GraphData *g = d->descriptor;
        printf(" graph=%u", T->graph_id(g->graph));
        if (g->node) printf(" node=%llu type=%u", (unsigned long long)T->graph_node_id(g->node), g->nodeType);
        if (g->graphExec) printf(" exec=set");
    }
    printf("\n");
}

static void on_op(void *user, const GpuOp *op) {
    (void)user;
    printf("op kind=%u corr=%u dur=%llu ctx=%u stream=%llu", op->kind, op->correlation_id,
           (unsigned long long)(op->end_ns - op->start_ns), op->context_id,
           (unsigned long long)op->stream_id);
    if (op->name) printf(" name=%s grid=%d block=%d regs=%u smem=%d", op->name, op->grid[0], op->block[0],
                         op->registers_per_thread, op->static_shared_memory);
    if (op->kind != 1) printf(" bytes=%llu copy=%u src=%u dst=%u value=%u", (unsigned long long)op->bytes,
                              op->copy_kind, op->src_kind, op->dst_kind, op->value);
    if (op->graph_id) printf(" graph=%u node=%llu", op->graph_id, (unsigned long long)op->graph_node_id);
    for (size_t i = 0; i < op->num_counters; i++) printf(" %s=%g", op->counters[i].name, op->counters[i].value);
    printf("\n");
}

int main(void) {
    load_all();
    CUuuid bad = {{0}};
    const void *table = NULL;
    printf("cuGetExportTable(bad id)=%d\n", cuGetExportTable(&table, &bad));
    CUuuid id;
    memcpy(id.bytes, "gpuprof-sim-drv\x01", 16);
    printf("cuGetExportTable=%d\n", cuGetExportTable(&table, &id));
    T = table;
    static const Tracer tracer = {sizeof(Tracer), NULL, on_api, on_resource, on_op};
    int first = T->set_tracer(&tracer);
    int again = T->set_tracer(&tracer);
    printf("set_tracer=%d again=%d\n", first, again);

    printf("cuInit=%d\n", cuInit(0));
    CUcontext ctx;
    cuDevicePrimaryCtxRetain(&ctx, 0);
    cuCtxSetCurrent(ctx);
    CUstream s;
    cuStreamCreate(&s, 0);
    CUmodule mod;
    cuModuleLoadData(&mod, PTX);
    CUfunction fill, scale;
    cuModuleGetFunction(&fill, mod, "fill");
    cuModuleGetFunction(&scale, mod, "scale");
    CUdeviceptr d;
    cuMemAlloc_v2(&d, 4096);
    unsigned char buf[4096] = {1};
    cuMemcpyHtoD_v2(d, buf, sizeof buf);
    cuLaunchKernel(fill, 4, 2, 1, 128, 1, 1, 0, s, NULL, NULL);
    cuMemsetD32Async(d, 7, 1024, s);
    cuStreamBeginCapture_v2(s, 0);
    cuLaunchKernel(scale, 3, 1, 1, 64, 1, 1, 0, s, NULL, NULL);
    cuMemsetD32Async(d, 9, 16, s);
    CUgraph g;
    cuStreamEndCapture(s, &g);
    CUgraphExec ex;
    cuGraphInstantiateWithFlags(&ex, g, 0);
    cuGraphLaunch(ex, s);
    cuGraphLaunch(ex, s);
    cuMemcpyDtoH_v2(buf, d, 64);
    cuGraphExecDestroy(ex);
    cuGraphDestroy(g);
    cuModuleUnload(mod);
    cuStreamDestroy_v2(s);
    cuDevicePrimaryCtxRelease_v2(0);
    T->set_tracer(NULL);
    printf("value %u\n", buf[0]);
    return 0;
}
