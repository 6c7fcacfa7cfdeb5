/* CUDA graph resource callbacks and graph node ids seen by a CUPTI subscriber, for
 * tests/it/graph_callbacks.rs.
 *
 * Compiled against a CUPTI release's headers (CUPTI_RECORD_KERNEL and
 * CUPTI_RECORD_MEMSET name that release's record structs, -D). argv[1] is the CUPTI
 * library; libcuda.so.1 comes from the loader path. Captures a kernel launch and a
 * memset into a graph, instantiates it twice, launches each executable graph, and
 * prints every driver API enter / exit and graph resource callback in between (resource
 * callbacks indented), then the kernel and memset records. Like NVIDIA's
 * cuda_graphs_trace sample it maps node ids to the correlation id of the API call that
 * created them: GRAPHNODE_CREATED outside cuGraphInstantiate records the call's id,
 * GRAPHNODE_CLONED moves it to the clone. */
#include <cupti.h>

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(name) static __typeof__(&name) p_##name
F(cuptiSubscribe); F(cuptiUnsubscribe); F(cuptiEnableDomain); F(cuptiGetGraphId);
F(cuptiGetGraphNodeId); F(cuptiActivityRegisterCallbacks); F(cuptiActivityEnable);
F(cuptiActivityFlushAll); F(cuptiActivityGetNextRecord);
F(cuInit); F(cuDevicePrimaryCtxRetain); F(cuCtxSetCurrent); F(cuStreamCreate);
F(cuModuleLoadData); F(cuModuleGetFunction); F(cuMemAlloc_v2); F(cuMemsetD32Async);
F(cuLaunchKernel); F(cuStreamBeginCapture_v2); F(cuStreamEndCapture); F(cuGraphLaunch);
F(cuGraphExecDestroy); F(cuGraphDestroy); F(cuStreamSynchronize); F(cuGraphGetNodes);
static CUresult (*p_cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);

static void *load(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        printf("missing %s\n", name);
        exit(2);
    }
    return p;
}

static const char PTX[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry scale(\n.param .u64 p\n)\n{\nret;\n}\n";

static int tracing;
static const char *api_name;
static uint32_t api_corr;
static CUgraphExec cloned_exec[8];
static int n_cloned_exec;

/* Node id -> correlation id of the API call that created the node. */
static struct { uint64_t node; uint32_t corr; } created[64];
static int n_created;

static uint32_t *creator(uint64_t node) {
    for (int i = 0; i < n_created; i++)
        if (created[i].node == node) return &created[i].corr;
    return NULL;
}

static uint32_t graph_id(CUgraph g) {
    uint32_t id = 0;
    if (g) p_cuptiGetGraphId(g, &id);
    return id;
}

static uint64_t node_id(CUgraphNode n) {
    uint64_t id = 0;
    if (n) p_cuptiGetGraphNodeId(n, &id);
    return id;
}

static const char *resource_name(CUpti_CallbackId cbid) {
    switch (cbid) {
    case CUPTI_CBID_RESOURCE_GRAPH_CREATED: return "GRAPH_CREATED";
    case CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING: return "GRAPH_DESTROY_STARTING";
    case CUPTI_CBID_RESOURCE_GRAPH_CLONED: return "GRAPH_CLONED";
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATE_STARTING: return "GRAPHNODE_CREATE_STARTING";
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: return "GRAPHNODE_CREATED";
    case CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING: return "GRAPHNODE_DESTROY_STARTING";
    case CUPTI_CBID_RESOURCE_GRAPHNODE_DEPENDENCY_CREATED: return "GRAPHNODE_DEPENDENCY_CREATED";
    case CUPTI_CBID_RESOURCE_GRAPHNODE_DEPENDENCY_DESTROY_STARTING:
        return "GRAPHNODE_DEPENDENCY_DESTROY_STARTING";
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATE_STARTING: return "GRAPHEXEC_CREATE_STARTING";
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED: return "GRAPHEXEC_CREATED";
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING: return "GRAPHEXEC_DESTROY_STARTING";
    case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: return "GRAPHNODE_CLONED";
    default: return NULL;
    }
}

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *cbdata) {
    (void)user;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        const CUpti_CallbackData *d = cbdata;
        if (d->callbackSite == CUPTI_API_ENTER) {
            api_name = d->functionName;
            api_corr = d->correlationId;
        }
        if (tracing)
            printf("%s %s corr=%u\n", d->callbackSite == CUPTI_API_ENTER ? "enter" : "exit ",
                   d->functionName, d->correlationId);
        return;
    }
    if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
    const char *name = resource_name(cbid);
    if (!name) return;
    const CUpti_GraphData *g = ((const CUpti_ResourceData *)cbdata)->resourceDescriptor;
    if (tracing) {
        printf("  %s graph=%u", name, graph_id(g->graph));
        if (g->node) printf(" node=%llu type=%d", (unsigned long long)node_id(g->node), (int)g->nodeType);
        if (g->originalGraph) printf(" originalGraph=%u", graph_id(g->originalGraph));
        if (g->originalNode) printf(" originalNode=%llu", (unsigned long long)node_id(g->originalNode));
        printf(" graphExec=%s\n", g->graphExec ? "set" : "NULL");
    }
    if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
        /* As NVIDIA's sample: nodes made by instantiation are not the user's. */
        if (api_name && !strcmp(api_name, "cuGraphInstantiateWithFlags")) return;
        created[n_created].node = node_id(g->node);
        created[n_created].corr = api_corr;
        n_created++;
    } else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
        uint32_t *c = creator(node_id(g->originalNode));
        if (c) {
            created[n_created].node = node_id(g->node);
            created[n_created].corr = *c;
            n_created++;
        }
        if (n_cloned_exec < 8) cloned_exec[n_cloned_exec++] = g->graphExec;
    }
}

static void CUPTIAPI on_request(uint8_t **buffer, size_t *size, size_t *max) {
    *size = 64 * 1024;
    *buffer = aligned_alloc(8, *size);
    *max = 0;
}

static char records[32][160];
static int n_records;

static void CUPTIAPI on_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)ctx; (void)stream; (void)size;
    CUpti_Activity *rec = NULL;
    while (p_cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS && n_records < 32) {
        uint32_t corr, graph;
        uint64_t node;
        const char *what;
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            CUPTI_RECORD_KERNEL *k = (CUPTI_RECORD_KERNEL *)rec;
            what = k->name;
            corr = k->correlationId;
            graph = k->graphId;
            node = k->graphNodeId;
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            CUPTI_RECORD_MEMSET *m = (CUPTI_RECORD_MEMSET *)rec;
            what = "memset";
            corr = m->correlationId;
            graph = m->graphId;
            node = m->graphNodeId;
        } else {
            continue;
        }
        uint32_t *c = creator(node);
        snprintf(records[n_records++], sizeof records[0],
                 "record %s corr=%u graphId=%u graphNodeId=%llu node created by corr=%d", what, corr,
                 graph, (unsigned long long)node, c ? (int)*c : -1);
    }
    free(buffer);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *cupti = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cupti || !cuda) {
        printf("dlopen failed: %s\n", dlerror());
        return 2;
    }
#define L(lib, name) p_##name = load(lib, #name)
    L(cupti, cuptiSubscribe); L(cupti, cuptiUnsubscribe); L(cupti, cuptiEnableDomain);
    L(cupti, cuptiGetGraphId); L(cupti, cuptiGetGraphNodeId); L(cupti, cuptiActivityRegisterCallbacks);
    L(cupti, cuptiActivityEnable); L(cupti, cuptiActivityFlushAll); L(cupti, cuptiActivityGetNextRecord);
    L(cuda, cuInit); L(cuda, cuDevicePrimaryCtxRetain); L(cuda, cuCtxSetCurrent); L(cuda, cuStreamCreate);
    L(cuda, cuModuleLoadData); L(cuda, cuModuleGetFunction); L(cuda, cuMemAlloc_v2);
    L(cuda, cuMemsetD32Async); L(cuda, cuLaunchKernel); L(cuda, cuStreamBeginCapture_v2);
    L(cuda, cuStreamEndCapture); L(cuda, cuGraphLaunch); L(cuda, cuGraphExecDestroy);
    L(cuda, cuGraphDestroy); L(cuda, cuStreamSynchronize); L(cuda, cuGraphGetNodes);
    L(cuda, cuGraphInstantiateWithFlags);

    printf("cuInit %d\n", p_cuInit(0));
    CUcontext ctx;
    p_cuDevicePrimaryCtxRetain(&ctx, 0);
    p_cuCtxSetCurrent(ctx);
    CUstream s;
    p_cuStreamCreate(&s, 0);
    CUmodule mod;
    p_cuModuleLoadData(&mod, PTX);
    CUfunction scale;
    p_cuModuleGetFunction(&scale, mod, "scale");
    CUdeviceptr d;
    p_cuMemAlloc_v2(&d, 4096);

    CUpti_SubscriberHandle sub;
    printf("subscribe %d\n", p_cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_callback, NULL));
    printf("enable driver %d\n", p_cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
    printf("enable resource %d\n", p_cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE));
    p_cuptiActivityRegisterCallbacks(on_request, on_complete);
    p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);

    tracing = 1;
    p_cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    p_cuLaunchKernel(scale, 3, 1, 1, 64, 1, 1, 0, s, NULL, NULL);
    p_cuMemsetD32Async(d, 9, 16, s);
    CUgraph g;
    p_cuStreamEndCapture(s, &g);
    CUgraphExec e1, e2;
    p_cuGraphInstantiateWithFlags(&e1, g, 0);
    printf("cloned graphExec is the one returned: %d\n", n_cloned_exec == 2 && cloned_exec[0] == e1 && cloned_exec[1] == e1);
    p_cuGraphInstantiateWithFlags(&e2, g, 0);
    printf("cloned graphExec is the one returned: %d\n", n_cloned_exec == 4 && cloned_exec[2] == e2 && cloned_exec[3] == e2);
    p_cuGraphLaunch(e1, s);
    p_cuGraphLaunch(e2, s);
    p_cuStreamSynchronize(s);
    p_cuGraphExecDestroy(e1);
    p_cuGraphExecDestroy(e2);
    /* The graph keeps its own nodes. */
    CUgraphNode nodes[4];
    size_t n = 4;
    p_cuGraphGetNodes(g, nodes, &n);
    tracing = 0;
    printf("graph %u nodes:", graph_id(g));
    for (size_t i = 0; i < n; i++) printf(" %llu", (unsigned long long)node_id(nodes[i]));
    printf("\n");
    p_cuGraphDestroy(g);

    printf("flush %d\n", p_cuptiActivityFlushAll(1));
    for (int i = 0; i < n_records; i++) printf("%s\n", records[i]);
    printf("unsubscribe %d\n", p_cuptiUnsubscribe(sub));
    return 0;
}
