/* CUPTI_CB_DOMAIN_NVTX callbacks seen by a subscriber, for tests/it/nvtx_callbacks.rs.
 *
 * Calls NVTX through NVIDIA's own NVTX 3 loader (header-only, or NVIDIA's
 * libnvtx3interop.so.1 when built with NVTX_NO_IMPL), which injects the CUPTI named by
 * NVTX_INJECTION64_PATH. Compiled against a CUPTI release's headers: the callback
 * decodes functionParams with the structs of NVIDIA's generated_nvtx_meta.h and uses
 * the ids of cupti_nvtx_cbid.h. argv[1] is the CUPTI library; libcuda.so.1 comes from
 * the loader path. Prints one line per fact. */
#include <nvtx3/nvToolsExt.h>

#include <cupti.h>
#include <generated_nvtx_meta.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#define F(name) static __typeof__(&name) p_##name
F(cuptiSubscribe); F(cuptiUnsubscribe); F(cuptiEnableCallback); F(cuptiEnableDomain);
F(cuptiEnableAllDomains); F(cuptiGetCallbackState);
F(cuInit); F(cuDevicePrimaryCtxRetain); F(cuCtxSetCurrent);

static void *load(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        printf("missing %s\n", name);
        exit(2);
    }
    return p;
}

static const char *a(const char *s) { return s ? s : "(null)"; }

static const char *attr_msg(const nvtxEventAttributes_t *e) {
    return e ? a(e->message.ascii) : "(no attributes)";
}

static nvtxDomainHandle_t the_domain;
static pthread_t main_thread;
static int other_thread_ok = -1;
/* The last callback's return value, to compare with what the call returned. */
static uint64_t last_ret;
static int last_ret_null;

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *cbdata) {
    (void)user;
    if (domain != CUPTI_CB_DOMAIN_NVTX) return;
    const CUpti_NvtxData *d = cbdata;
    const void *p = d->functionParams;
    const char *dom = "";
    if (!pthread_equal(pthread_self(), main_thread)) {
        other_thread_ok = cbid == CUPTI_CBID_NVTX_nvtxMarkA &&
                          !strcmp(((const nvtxMarkA_params *)p)->message, "from other thread");
        return;
    }
    last_ret_null = d->functionReturnValue == NULL;
    last_ret = 0;
    printf("cb %u %s", cbid, d->functionName);
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxMarkA:
        printf(" message=%s", ((const nvtxMarkA_params *)p)->message);
        break;
    case CUPTI_CBID_NVTX_nvtxMarkW:
        printf(" message=%ls", ((const nvtxMarkW_params *)p)->message);
        break;
    case CUPTI_CBID_NVTX_nvtxMarkEx:
        printf(" eventAttrib=%s", attr_msg(((const nvtxMarkEx_params *)p)->eventAttrib));
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
        printf(" message=%s", ((const nvtxRangeStartA_params *)p)->message);
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
        printf(" message=%ls", ((const nvtxRangeStartW_params *)p)->message);
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        printf(" eventAttrib=%s", attr_msg(((const nvtxRangeStartEx_params *)p)->eventAttrib));
        break;
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
        printf(" id=%llu", (unsigned long long)((const nvtxRangeEnd_params *)p)->id);
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushA:
        printf(" message=%s", ((const nvtxRangePushA_params *)p)->message);
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
        printf(" message=%ls", ((const nvtxRangePushW_params *)p)->message);
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        printf(" eventAttrib=%s", attr_msg(((const nvtxRangePushEx_params *)p)->eventAttrib));
        break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
        break;
    case CUPTI_CBID_NVTX_nvtxNameCategoryA: {
        const nvtxNameCategoryA_params *q = p;
        printf(" category=%u name=%s", q->category, q->name);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxNameCategoryW: {
        const nvtxNameCategoryW_params *q = p;
        printf(" category=%u name=%ls", q->category, q->name);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxNameOsThreadA: {
        const nvtxNameOsThreadA_params *q = p;
        printf(" threadId=%u name=%s", q->threadId, q->name);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxNameOsThreadW: {
        const nvtxNameOsThreadW_params *q = p;
        printf(" threadId=%u name=%ls", q->threadId, q->name);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainCreateA:
        printf(" name=%s", ((const nvtxDomainCreateA_params *)p)->name);
        break;
    case CUPTI_CBID_NVTX_nvtxDomainCreateW:
        /* No params struct in generated_nvtx_meta.h: the argument. */
        printf(" name=%ls", *(const wchar_t *const *)p);
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA: {
        const nvtxDomainRegisterStringA_params *q = p;
        dom = q->domain == the_domain ? " domain=ok" : " domain=WRONG";
        printf("%s string=%s", dom, q->string);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW: {
        const nvtxDomainRegisterStringW_params *q = p;
        dom = q->domain == the_domain ? " domain=ok" : " domain=WRONG";
        printf("%s string=%ls", dom, (const wchar_t *)q->string);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainNameCategoryA: {
        /* No params struct in generated_nvtx_meta.h: the arguments in order. */
        const struct { nvtxDomainHandle_t domain; uint32_t category; const char *name; } *q = p;
        dom = q->domain == the_domain ? " domain=ok" : " domain=WRONG";
        printf("%s category=%u name=%s", dom, q->category, q->name);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainNameCategoryW: {
        const struct { nvtxDomainHandle_t domain; uint32_t category; const wchar_t *name; } *q = p;
        dom = q->domain == the_domain ? " domain=ok" : " domain=WRONG";
        printf("%s category=%u name=%ls", dom, q->category, q->name);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx: {
        const nvtxDomainMarkEx_params *q = p;
        dom = q->domain == the_domain ? " domain=ok" : " domain=WRONG";
        printf("%s eventAttrib=%s", dom, attr_msg(q->core.eventAttrib));
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
        const nvtxDomainRangeStartEx_params *q = p;
        dom = q->domain == the_domain ? " domain=ok" : " domain=WRONG";
        printf("%s eventAttrib=%s", dom, attr_msg(q->core.eventAttrib));
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd: {
        const nvtxDomainRangeEnd_params *q = p;
        dom = q->domain == the_domain ? " domain=ok" : " domain=WRONG";
        printf("%s id=%llu", dom, (unsigned long long)q->core.id);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
        const nvtxDomainRangePushEx_params *q = p;
        dom = q->domain == the_domain ? " domain=ok" : " domain=WRONG";
        printf("%s eventAttrib=%s", dom, attr_msg(q->core.eventAttrib));
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
        const nvtxDomainRangePop_params *q = p;
        printf("%s", q->domain == the_domain ? " domain=ok" : " domain=WRONG");
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainDestroy: {
        const nvtxDomainDestroy_params *q = p;
        printf("%s", q->domain == the_domain ? " domain=ok" : " domain=WRONG");
        break;
    }
    default:
        printf(" (unexpected)");
    }
    /* The return value, by the function's return type (nvToolsExt.h). */
    if (d->functionReturnValue) {
        switch (cbid) {
        case CUPTI_CBID_NVTX_nvtxRangePushA:
        case CUPTI_CBID_NVTX_nvtxRangePushW:
        case CUPTI_CBID_NVTX_nvtxRangePushEx:
        case CUPTI_CBID_NVTX_nvtxRangePop:
        case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        case CUPTI_CBID_NVTX_nvtxDomainRangePop:
            printf(" ret=%d", *(const int *)d->functionReturnValue);
            last_ret = (uint64_t)(int64_t)*(const int *)d->functionReturnValue;
            break;
        case CUPTI_CBID_NVTX_nvtxRangeStartA:
        case CUPTI_CBID_NVTX_nvtxRangeStartW:
        case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
            last_ret = *(const nvtxRangeId_t *)d->functionReturnValue;
            printf(" ret=%llu", (unsigned long long)last_ret);
            break;
        case CUPTI_CBID_NVTX_nvtxDomainCreateA:
        case CUPTI_CBID_NVTX_nvtxDomainCreateW:
            last_ret = (uint64_t)(uintptr_t)*(const nvtxDomainHandle_t *)d->functionReturnValue;
            printf(" ret=handle");
            break;
        case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
        case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW:
            last_ret = (uint64_t)(uintptr_t)*(const nvtxStringHandle_t *)d->functionReturnValue;
            printf(" ret=handle");
            break;
        default:
            printf(" ret=(unexpected)");
        }
    } else {
        printf(" ret=NULL");
    }
    printf("\n");
}

/* What the call itself returned, and whether the callback pointed at the same value. */
static void returned(const char *what, uint64_t v) {
    printf("  %s returned %lld, callback saw the same: %d\n", what, (long long)v, !last_ret_null && last_ret == v);
}

/* The same for handles, whose values vary from run to run. */
static void returned_handle(const char *what, const void *h) {
    printf("  %s returned a handle%s, callback saw the same: %d\n", what, h ? "" : " (NULL)",
           !last_ret_null && last_ret == (uint64_t)(uintptr_t)h);
}

static void *other_thread(void *arg) {
    (void)arg;
    nvtxMarkA("from other thread");
    return NULL;
}

static void state(CUpti_SubscriberHandle sub, CUpti_CallbackId cbid) {
    uint32_t on = 99;
    CUptiResult r = p_cuptiGetCallbackState(&on, sub, CUPTI_CB_DOMAIN_NVTX, cbid);
    printf("state %u r=%d on=%u\n", cbid, r, on);
}

static nvtxEventAttributes_t attributes(const char *message) {
    nvtxEventAttributes_t e;
    memset(&e, 0, sizeof e);
    e.version = NVTX_VERSION;
    e.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    e.messageType = NVTX_MESSAGE_TYPE_ASCII;
    e.message.ascii = message;
    return e;
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
    L(cupti, cuptiSubscribe); L(cupti, cuptiUnsubscribe); L(cupti, cuptiEnableCallback);
    L(cupti, cuptiEnableDomain); L(cupti, cuptiEnableAllDomains); L(cupti, cuptiGetCallbackState);
    L(cuda, cuInit); L(cuda, cuDevicePrimaryCtxRetain); L(cuda, cuCtxSetCurrent);
    main_thread = pthread_self();

    CUcontext ctx;
    printf("cuInit %d\n", p_cuInit(0));
    p_cuDevicePrimaryCtxRetain(&ctx, 0);
    p_cuCtxSetCurrent(ctx);

    CUpti_SubscriberHandle sub;
    printf("subscribe %d\n", p_cuptiSubscribe(&sub, (CUpti_CallbackFunc)on_callback, NULL));
    /* Subscribed, nothing enabled: no callback. */
    nvtxMarkA("not enabled");
    state(sub, CUPTI_CBID_NVTX_nvtxRangePushA);

    printf("enable_domain %d\n", p_cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_NVTX));
    state(sub, CUPTI_CBID_NVTX_nvtxRangePushA);
    state(sub, CUPTI_CBID_NVTX_nvtxDomainDestroy);

    returned("push", (uint64_t)(int64_t)nvtxRangePushA("outer"));
    returned("push", (uint64_t)(int64_t)nvtxRangePushW(L"wide"));
    nvtxEventAttributes_t ex = attributes("ex");
    returned("push", (uint64_t)(int64_t)nvtxRangePushEx(&ex));
    returned("pop", (uint64_t)(int64_t)nvtxRangePop());
    returned("pop", (uint64_t)(int64_t)nvtxRangePop());
    returned("pop", (uint64_t)(int64_t)nvtxRangePop());
    returned("pop", (uint64_t)(int64_t)nvtxRangePop());

    nvtxMarkA("mark");
    nvtxMarkW(L"wmark");
    nvtxEventAttributes_t mk = attributes("exmark");
    nvtxMarkEx(&mk);

    nvtxRangeId_t r1 = nvtxRangeStartA("span");
    returned("start", r1);
    nvtxRangeId_t r2 = nvtxRangeStartW(L"wspan");
    returned("start", r2);
    nvtxEventAttributes_t sx = attributes("exspan");
    nvtxRangeId_t r3 = nvtxRangeStartEx(&sx);
    returned("start", r3);
    nvtxRangeEnd(r2);
    nvtxRangeEnd(r1);
    nvtxRangeEnd(r3);

    nvtxNameCategoryA(3, "cat");
    nvtxNameCategoryW(4, L"wcat");
    nvtxNameOsThreadA(1234, "thr");
    nvtxNameOsThreadW(1235, L"wthr");

    the_domain = nvtxDomainCreateA("dom");
    returned_handle("domain create", the_domain);
    nvtxDomainHandle_t wdom = nvtxDomainCreateW(L"wdom");
    returned_handle("domain create", wdom);
    nvtxStringHandle_t s1 = nvtxDomainRegisterStringA(the_domain, "reg");
    returned_handle("register", s1);
    nvtxStringHandle_t s2 = nvtxDomainRegisterStringW(the_domain, L"wreg");
    returned_handle("register", s2);
    nvtxDomainNameCategoryA(the_domain, 5, "dcat");
    nvtxDomainNameCategoryW(the_domain, 6, L"wdcat");
    nvtxEventAttributes_t dm = attributes("dmark");
    nvtxDomainMarkEx(the_domain, &dm);
    nvtxEventAttributes_t ds = attributes("dspan");
    nvtxRangeId_t r4 = nvtxDomainRangeStartEx(the_domain, &ds);
    returned("start", r4);
    nvtxDomainRangeEnd(the_domain, r4);
    nvtxEventAttributes_t dp = attributes("dpush");
    returned("push", (uint64_t)(int64_t)nvtxDomainRangePushEx(the_domain, &dp));
    returned("pop", (uint64_t)(int64_t)nvtxDomainRangePop(the_domain));
    nvtxDomainDestroy(the_domain);

    /* On the calling thread. */
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    printf("other thread callback ok %d\n", other_thread_ok);

    /* One id off: not delivered; the others still are. */
    printf("disable markA %d\n", p_cuptiEnableCallback(0, sub, CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxMarkA));
    state(sub, CUPTI_CBID_NVTX_nvtxMarkA);
    nvtxMarkA("hidden");
    nvtxMarkW(L"shown");

    /* The domain off, then one id on. */
    printf("disable_domain %d\n", p_cuptiEnableDomain(0, sub, CUPTI_CB_DOMAIN_NVTX));
    nvtxRangePushA("quiet");
    printf("enable pop %d\n", p_cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePop));
    state(sub, CUPTI_CBID_NVTX_nvtxRangePushA);
    state(sub, CUPTI_CBID_NVTX_nvtxRangePop);
    returned("pop", (uint64_t)(int64_t)nvtxRangePop());

    /* Every domain, NVTX included. */
    printf("enable_all %d\n", p_cuptiEnableAllDomains(1, sub));
    state(sub, CUPTI_CBID_NVTX_nvtxMarkA);
    nvtxMarkA("all");

    /* Ids outside CUpti_nvtx_api_trace_cbid. */
    printf("enable invalid %d\n", p_cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_SIZE));
    state(sub, CUPTI_CBID_NVTX_SIZE);

    printf("unsubscribe %d\n", p_cuptiUnsubscribe(sub));
    nvtxMarkA("after unsubscribe");
    printf("done\n");
    return 0;
}
