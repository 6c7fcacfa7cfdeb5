/* An NVTX program observed through CUPTI activity, for tests/tests/it/sim/cupti_nvtx.rs.
 *
 * Uses NVIDIA's NVTX 3 headers (header-only: the program embeds NVIDIA's own injection
 * loader, which reads NVTX_INJECTION64_PATH, dlopens it and calls its
 * InitializeInjectionNvtx2) and is compiled per CUPTI release against that release's
 * headers, so marker records are decoded with NVIDIA's structs. CUPTI_RECORD_MARKER and
 * CUPTI_RECORD_MARKER_DATA name the release's record structs (-D), and
 * MARKER_DATA_HAS_DOMAIN_ID is 1 when the marker data struct has cuptiDomainId.
 *
 * argv[1] is the CUPTI library (the same file NVTX_INJECTION64_PATH names);
 * libcuda.so.1 comes from the loader path. Prints one line per fact. */
#include <nvtx3/nvToolsExt.h>

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define F(name) static __typeof__(&name) p_##name
F(cuptiActivityRegisterCallbacks); F(cuptiActivityEnable); F(cuptiActivityFlushAll);
F(cuptiActivityGetNextRecord); F(cuptiActivityGetNumDroppedRecords);
F(cuInit); F(cuDeviceGet); F(cuDevicePrimaryCtxRetain); F(cuCtxSetCurrent);

static uint32_t main_tid, other_tid, main_os_tid;

static void *load(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        printf("missing %s\n", name);
        exit(2);
    }
    return p;
}

static void CUPTIAPI on_request(uint8_t **buffer, size_t *size, size_t *max) {
    *size = 64 * 1024;
    *buffer = aligned_alloc(8, *size);
    *max = 0;
}

static const char *thread_name(uint32_t tid) {
    if (tid == main_tid) return "main";
    if (tid == other_tid) return "other";
    return "unknown";
}

static const char *flag_name(uint32_t flags) {
    switch (flags) {
    case CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS: return "INSTANT";
    case CUPTI_ACTIVITY_FLAG_MARKER_START: return "START";
    case CUPTI_ACTIVITY_FLAG_MARKER_END: return "END";
    default: return "?";
    }
}

static uint64_t last_ts = 0;
static int ts_ordered = 1;

static void CUPTIAPI on_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)ctx; (void)stream; (void)size;
    CUpti_Activity *rec = NULL;
    for (;;) {
        CUptiResult r = p_cuptiActivityGetNextRecord(buffer, valid, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
        if (r != CUPTI_SUCCESS) {
            printf("next_record error %d\n", r);
            break;
        }
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_MARKER: {
            CUPTI_RECORD_MARKER *m = (CUPTI_RECORD_MARKER *)rec;
            if (m->timestamp < last_ts || m->timestamp == 0) ts_ordered = 0;
            last_ts = m->timestamp;
            printf("marker %s id=%u name=%s domain=%s object=%s pid_ok=%d thread=%s sizeof=%zu\n",
                   flag_name(m->flags), m->id, m->name ? m->name : "(null)",
                   m->domain ? m->domain : "(null)",
                   m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? "THREAD"
                   : m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS ? "PROCESS" : "?",
                   m->objectId.pt.processId == (uint32_t)getpid(), thread_name(m->objectId.pt.threadId),
                   sizeof(*m));
            break;
        }
        case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
            CUPTI_RECORD_MARKER_DATA *d = (CUPTI_RECORD_MARKER_DATA *)rec;
            char payload[64];
            switch (d->payloadKind) {
            case CUPTI_METRIC_VALUE_KIND_UINT64:
                snprintf(payload, sizeof payload, "u%llu", (unsigned long long)d->payload.metricValueUint64);
                break;
            case CUPTI_METRIC_VALUE_KIND_INT64:
                snprintf(payload, sizeof payload, "i%lld", (long long)d->payload.metricValueInt64);
                break;
            case CUPTI_METRIC_VALUE_KIND_DOUBLE:
                snprintf(payload, sizeof payload, "d%g", d->payload.metricValueDouble);
                break;
            default:
                snprintf(payload, sizeof payload, "kind%d", (int)d->payloadKind);
            }
            printf("marker_data id=%u color=%s:%08x category=%u payload=%s", d->id,
                   d->flags == CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB ? "ARGB"
                   : d->flags == CUPTI_ACTIVITY_FLAG_MARKER_COLOR_NONE ? "NONE" : "?",
                   d->color, d->category, payload);
#if MARKER_DATA_HAS_DOMAIN_ID
            printf(" cuptiDomainId=%u", d->cuptiDomainId);
#endif
            printf(" sizeof=%zu\n", sizeof(*d));
            break;
        }
        case CUPTI_ACTIVITY_KIND_NAME: {
            CUpti_ActivityName *n = (CUpti_ActivityName *)rec;
            printf("name object=%s thread_ok=%d name=%s\n",
                   n->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? "THREAD" : "?",
                   n->objectId.pt.threadId == main_os_tid, n->name);
            break;
        }
        default:
            printf("record kind=%d\n", rec->kind);
        }
    }
    free(buffer);
}

static void *end_elsewhere(void *arg) {
    other_tid = (uint32_t)pthread_self();
    nvtxRangeEnd(*(nvtxRangeId_t *)arg);
    return NULL;
}

static nvtxEventAttributes_t attributes(void) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    return a;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    main_tid = (uint32_t)pthread_self();
    main_os_tid = (uint32_t)syscall(SYS_gettid);

    /* The first NVTX call loads the injection (before CUPTI is set up and before any
     * CUDA call); with no activity kind enabled it gives no record. */
    nvtxMarkA("before_enable");

    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cuda) { printf("dlopen libcuda: %s\n", dlerror()); return 2; }
    void *cupti = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!cupti) { printf("dlopen cupti: %s\n", dlerror()); return 2; }
#define L(lib, name) p_##name = load(lib, #name)
    L(cupti, cuptiActivityRegisterCallbacks); L(cupti, cuptiActivityEnable); L(cupti, cuptiActivityFlushAll);
    L(cupti, cuptiActivityGetNextRecord); L(cupti, cuptiActivityGetNumDroppedRecords);
    L(cuda, cuInit); L(cuda, cuDeviceGet); L(cuda, cuDevicePrimaryCtxRetain); L(cuda, cuCtxSetCurrent);

    printf("register %d\n", p_cuptiActivityRegisterCallbacks(on_request, on_complete));
    printf("enable_marker %d\n", p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER));
    printf("enable_marker_data %d\n", p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER_DATA));
    printf("enable_name %d\n", p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_NAME));

    /* Nested push / pop, no CUDA context yet. */
    printf("push outer %d\n", nvtxRangePushA("outer"));
    nvtxEventAttributes_t a = attributes();
    a.colorType = NVTX_COLOR_ARGB;
    a.color = 0xFF00FF00u;
    a.category = 7;
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = 42;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "inner";
    printf("push inner %d\n", nvtxRangePushEx(&a));
    nvtxMarkA("tick");
    printf("pop inner %d\n", nvtxRangePop());
    printf("pop outer %d\n", nvtxRangePop());
    printf("pop empty %d\n", nvtxRangePop() < 0 ? -1 : 0);

    /* A process range started here and ended on another thread. */
    nvtxRangeId_t span = nvtxRangeStartA("span");
    printf("range_start span %llu\n", (unsigned long long)span);
    pthread_t t;
    pthread_create(&t, NULL, end_elsewhere, &span);
    pthread_join(t, NULL);

    /* A domain with a registered string. */
    nvtxDomainHandle_t d = nvtxDomainCreateA("mydomain");
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "registered");
    nvtxEventAttributes_t r = attributes();
    r.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    r.message.registered = s;
    printf("domain_push registered %d\n", nvtxDomainRangePushEx(d, &r));
    printf("push default %d\n", nvtxRangePushA("default_level"));
    nvtxEventAttributes_t m = attributes();
    m.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
    m.payload.dValue = 2.5;
    m.messageType = NVTX_MESSAGE_TYPE_ASCII;
    m.message.ascii = "dmark";
    nvtxDomainMarkEx(d, &m);
    nvtxEventAttributes_t ds = attributes();
    ds.payloadType = NVTX_PAYLOAD_TYPE_INT32;
    ds.payload.iValue = -3;
    ds.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    ds.message.unicode = L"dspan";
    nvtxRangeId_t dr = nvtxDomainRangeStartEx(d, &ds);
    nvtxDomainRangeEnd(d, dr);
    printf("pop default %d\n", nvtxRangePop());
    printf("domain_pop registered %d\n", nvtxDomainRangePop(d));
    nvtxNameOsThreadA(main_os_tid, "main-thread");

    /* After the driver is initialised and a context is current. */
    CUdevice dev;
    CUcontext ctx;
    if (p_cuInit(0) || p_cuDeviceGet(&dev, 0) || p_cuDevicePrimaryCtxRetain(&ctx, dev) || p_cuCtxSetCurrent(ctx)) {
        printf("cuda setup failed\n");
        return 1;
    }
    nvtxMarkW(L"with_context");

    printf("flush %d\n", p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    size_t dropped = 0;
    p_cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
    printf("dropped %zu\n", dropped);
    printf("timestamps_ordered %d\n", ts_ordered);
    return 0;
}
