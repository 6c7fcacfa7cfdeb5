/* A program that is itself a CUPTI client, as an application with the PyTorch profiler
 * or another tracing tool built in is: it dlopens the CUPTI library given as argv[1]
 * and subscribes BEFORE cuInit (so before any injected profiler starts), enables the
 * driver-API callback domain, then runs cuInit and LAUNCHES kernel launches, and
 * prints how many cuLaunchKernel callbacks (API enter) it saw.
 *
 * usage: second_subscriber CUPTI_LIB v1|v2 [LAUNCHES]
 *   v1: cuptiSubscribe (the only way before CUPTI 13.0; one subscriber at a time)
 *   v2: cuptiSubscribe_v2 with allowMultipleSubscribers = 1 (CUPTI 13.2 and later)
 * prints: "second_subscriber: subscribed (v1|v2)" then
 *         "second_subscriber: LAUNCHES launches, N launch callbacks"
 * exits 0 when every call succeeded (whatever N is), 1 on a CUDA or CUPTI error,
 * 2 when a library or symbol is missing.
 *
 * Compiled against NVIDIA's CUPTI 13.4 headers: CUpti_SubscriberParams and the
 * callback ids are theirs. */
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(name) static __typeof__(&name) p_##name
F(cuptiSubscribe); F(cuptiSubscribe_v2); F(cuptiEnableDomain); F(cuptiUnsubscribe);
F(cuInit); F(cuDeviceGet); F(cuDevicePrimaryCtxRetain); F(cuCtxSetCurrent); F(cuModuleLoadData);
F(cuModuleGetFunction); F(cuLaunchKernel); F(cuCtxSynchronize);

static volatile long launch_callbacks = 0;

static void *load(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "second_subscriber: missing %s\n", name);
        exit(2);
    }
    return p;
}

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
    (void)user;
    const CUpti_CallbackData *d = data;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel &&
        d->callbackSite == CUPTI_API_ENTER)
        __atomic_add_fetch(&launch_callbacks, 1, __ATOMIC_RELAXED);
}

#define CU(call)                                                                      \
    do {                                                                              \
        CUresult rc_ = (call);                                                        \
        if (rc_ != CUDA_SUCCESS) {                                                    \
            fprintf(stderr, "second_subscriber: %s failed with %d\n", #call, (int)rc_); \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

static const char PTX[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry second_subscriber_kernel(.param .u32 n)\n{\n\tret;\n}\n";

int main(int argc, char **argv) {
    if (argc < 3 || (strcmp(argv[2], "v1") != 0 && strcmp(argv[2], "v2") != 0)) {
        fprintf(stderr, "usage: second_subscriber CUPTI_LIB v1|v2 [LAUNCHES]\n");
        return 2;
    }
    long launches = argc > 3 ? atol(argv[3]) : 10;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cuda) {
        fprintf(stderr, "second_subscriber: %s\n", dlerror());
        return 2;
    }
    void *cupti = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!cupti) {
        fprintf(stderr, "second_subscriber: %s\n", dlerror());
        return 2;
    }
#define C(name) p_##name = (__typeof__(p_##name))load(cupti, #name)
#define D(name) p_##name = (__typeof__(p_##name))load(cuda, #name)
    C(cuptiSubscribe); C(cuptiSubscribe_v2); C(cuptiEnableDomain); C(cuptiUnsubscribe);
    D(cuInit); D(cuDeviceGet); D(cuDevicePrimaryCtxRetain); D(cuCtxSetCurrent);
    D(cuModuleLoadData); D(cuModuleGetFunction); D(cuLaunchKernel); D(cuCtxSynchronize);

    CUpti_SubscriberHandle sub = NULL;
    CUptiResult rc;
    if (strcmp(argv[2], "v1") == 0) {
        rc = p_cuptiSubscribe(&sub, on_callback, NULL);
    } else {
        char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN > 64 ? CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN : 64];
        memset(old, 0, sizeof old);
        CUpti_SubscriberParams params;
        memset(&params, 0, sizeof params);
        params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
        params.subscriberName = "second_subscriber";
        params.oldSubscriberName = old;
        params.oldSubscriberSize = sizeof old;
        params.allowMultipleSubscribers = 1;
        rc = p_cuptiSubscribe_v2(&sub, on_callback, NULL, &params);
    }
    if (rc != CUPTI_SUCCESS) {
        fprintf(stderr, "second_subscriber: subscribe (%s) failed with %d\n", argv[2], (int)rc);
        return 1;
    }
    rc = p_cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
    if (rc != CUPTI_SUCCESS) {
        fprintf(stderr, "second_subscriber: cuptiEnableDomain failed with %d\n", (int)rc);
        return 1;
    }
    printf("second_subscriber: subscribed (%s)\n", argv[2]);
    fflush(stdout);

    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction f;
    CU(p_cuInit(0));
    CU(p_cuDeviceGet(&dev, 0));
    CU(p_cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(p_cuCtxSetCurrent(ctx));
    CU(p_cuModuleLoadData(&mod, PTX));
    CU(p_cuModuleGetFunction(&f, mod, "second_subscriber_kernel"));
    unsigned arg = 1;
    void *params[] = {&arg};
    for (long i = 0; i < launches; i++)
        CU(p_cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    CU(p_cuCtxSynchronize());
    printf("second_subscriber: %ld launches, %ld launch callbacks\n", launches,
           __atomic_load_n(&launch_callbacks, __ATOMIC_RELAXED));
    fflush(stdout);
    /* Stay subscribed until exit, as a tool would: the profiler's exit-time flush
     * must not depend on us letting go. */
    return 0;
}
