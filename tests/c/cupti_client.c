/* A CUPTI client for the simulated CUPTI's end-to-end tests
 * (tests/tests/it/sim/cupti.rs).
 *
 * Compiled once per CUPTI release against that release's own headers (cupti.h,
 * cuda.h), so every record is decoded with NVIDIA's struct definitions. It dlopens
 * the CUPTI given as argv[1] and libcuda.so.1 from the loader path, subscribes,
 * enables activity kinds, runs a small driver workload, flushes, and prints one line
 * per fact. CUPTI_RECORD_KERNEL etc. name the record struct of the release; the test
 * passes them with -D. */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(name) static __typeof__(&name) p_##name
F(cuptiGetVersion); F(cuptiSubscribe); F(cuptiUnsubscribe); F(cuptiEnableCallback);
F(cuptiActivityRegisterCallbacks); F(cuptiActivityEnable); F(cuptiActivityFlushAll);
F(cuptiActivityGetNextRecord); F(cuptiActivityGetNumDroppedRecords); F(cuptiGetResultString);
F(cuInit); F(cuDeviceGet); F(cuDevicePrimaryCtxRetain); F(cuCtxSetCurrent); F(cuMemAlloc_v2);
F(cuMemcpyHtoD_v2); F(cuMemcpyDtoH_v2); F(cuModuleLoadData); F(cuModuleGetFunction);
F(cuLaunchKernel); F(cuCtxSynchronize);

static pthread_t main_thread;
static volatile int decline = 0;

static void *load(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    if (!p) {
        printf("missing %s\n", name);
        exit(2);
    }
    return p;
}

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
    (void)user;
    const CUpti_CallbackData *d = data;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
        if (d->callbackSite == CUPTI_API_ENTER) {
            *d->correlationData = d->correlationId;
            printf("cb_enter %s corr=%u symbol=%s\n", d->functionName, d->correlationId,
                   d->symbolName ? d->symbolName : "(null)");
        } else {
            printf("cb_exit corr=%u data=%llu result=%d\n", d->correlationId,
                   (unsigned long long)*d->correlationData, *(CUresult *)d->functionReturnValue);
        }
    }
}

static void CUPTIAPI on_request(uint8_t **buffer, size_t *size, size_t *max) {
    if (decline) {
        *buffer = NULL;
        *size = 0;
        return;
    }
    *size = 64 * 1024;
    *buffer = aligned_alloc(8, *size);
    *max = 0;
}

static void CUPTIAPI on_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)ctx; (void)stream; (void)size;
    printf("buffer valid=%zu client_thread=%d\n", valid, pthread_equal(pthread_self(), main_thread) ? 1 : 0);
    CUpti_Activity *rec = NULL;
    for (;;) {
        CUptiResult r = p_cuptiActivityGetNextRecord(buffer, valid, &rec);
        if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
        if (r != CUPTI_SUCCESS) {
            printf("next_record error %d\n", r);
            break;
        }
        if (((uintptr_t)rec & 7) != 0) printf("misaligned record\n");
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: {
            CUPTI_RECORD_KERNEL *k = (CUPTI_RECORD_KERNEL *)rec;
            printf("kernel kind=%d corr=%u name=%s duration=%llu grid=%d,%d,%d block=%d,%d,%d "
                   "regs=%u smem=%d,%d stream=%u sizeof=%zu\n",
                   k->kind, k->correlationId, k->name, (unsigned long long)(k->end - k->start),
                   k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ, k->registersPerThread,
                   k->staticSharedMemory, k->dynamicSharedMemory, k->streamId, sizeof(*k));
            break;
        }
        case CUPTI_ACTIVITY_KIND_MEMCPY: {
            CUPTI_RECORD_MEMCPY *m = (CUPTI_RECORD_MEMCPY *)rec;
            printf("memcpy corr=%u bytes=%llu copyKind=%u duration=%llu sizeof=%zu\n", m->correlationId,
                   (unsigned long long)m->bytes, m->copyKind, (unsigned long long)(m->end - m->start),
                   sizeof(*m));
            break;
        }
        case CUPTI_ACTIVITY_KIND_DRIVER: {
            CUpti_ActivityAPI *a = (CUpti_ActivityAPI *)rec;
            printf("driver cbid=%u corr=%u ret=%u ordered=%d sizeof=%zu\n", a->cbid, a->correlationId,
                   a->returnValue, a->end >= a->start, sizeof(*a));
            break;
        }
        case CUPTI_ACTIVITY_KIND_CONTEXT: {
            CUPTI_RECORD_CONTEXT *c = (CUPTI_RECORD_CONTEXT *)rec;
            printf("context id=%u device=%u sizeof=%zu\n", c->contextId, c->deviceId, sizeof(*c));
            break;
        }
        case CUPTI_ACTIVITY_KIND_DEVICE: {
            CUPTI_RECORD_DEVICE *d = (CUPTI_RECORD_DEVICE *)rec;
            printf("device id=%u name=%s sms=%u cc=%u.%u sizeof=%zu\n", d->id, d->name, d->numMultiprocessors,
                   d->computeCapabilityMajor, d->computeCapabilityMinor, sizeof(*d));
            break;
        }
        default:
            printf("record kind=%d\n", rec->kind);
        }
    }
    free(buffer);
}

static const char PTX[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry axpy(.param .u64 x)\n{\n.shared .align 4 .f32 tile[64];\nret;\n}\n";

#define CHECK(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { printf("%s failed %d\n", #call, r_); return 1; } } while (0)

static int launch(CUfunction f, CUdeviceptr x) {
    void *args[] = {&x};
    CHECK(p_cuLaunchKernel(f, 4, 2, 1, 128, 1, 1, 256, NULL, args, NULL));
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    main_thread = pthread_self();
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cuda) { printf("dlopen libcuda: %s\n", dlerror()); return 2; }
    void *cupti = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!cupti) { printf("dlopen cupti: %s\n", dlerror()); return 2; }
#define L(lib, name) p_##name = load(lib, #name)
    L(cupti, cuptiGetVersion); L(cupti, cuptiSubscribe); L(cupti, cuptiUnsubscribe); L(cupti, cuptiEnableCallback);
    L(cupti, cuptiActivityRegisterCallbacks); L(cupti, cuptiActivityEnable); L(cupti, cuptiActivityFlushAll);
    L(cupti, cuptiActivityGetNextRecord); L(cupti, cuptiActivityGetNumDroppedRecords); L(cupti, cuptiGetResultString);
    L(cuda, cuInit); L(cuda, cuDeviceGet); L(cuda, cuDevicePrimaryCtxRetain); L(cuda, cuCtxSetCurrent);
    L(cuda, cuMemAlloc_v2); L(cuda, cuMemcpyHtoD_v2); L(cuda, cuMemcpyDtoH_v2); L(cuda, cuModuleLoadData);
    L(cuda, cuModuleGetFunction); L(cuda, cuLaunchKernel); L(cuda, cuCtxSynchronize);

    uint32_t version = 0;
    CUptiResult vr = p_cuptiGetVersion(&version);
    printf("version %d %u\n", vr, version);

    CUpti_SubscriberHandle sub, second;
    printf("subscribe %d\n", p_cuptiSubscribe(&sub, on_callback, NULL));
    CUptiResult r = p_cuptiSubscribe(&second, on_callback, NULL);
    const char *rs = "?";
    p_cuptiGetResultString(r, &rs);
    printf("second_subscribe %d %s\n", r, rs);
    printf("enable_callback %d\n", p_cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
    printf("register %d\n", p_cuptiActivityRegisterCallbacks(on_request, on_complete));
    CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                  CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_DEVICE};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        printf("enable %d %d\n", kinds[i], p_cuptiActivityEnable(kinds[i]));
    }

    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr x;
    float host[256] = {0};
    CHECK(p_cuInit(0));
    CHECK(p_cuDeviceGet(&dev, 0));
    CHECK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(p_cuCtxSetCurrent(ctx));
    CHECK(p_cuMemAlloc_v2(&x, sizeof(host)));
    CHECK(p_cuMemcpyHtoD_v2(x, host, sizeof(host)));
    CHECK(p_cuModuleLoadData(&mod, PTX));
    CHECK(p_cuModuleGetFunction(&fn, mod, "axpy"));
    for (int i = 0; i < 3; i++) {
        if (launch(fn, x)) return 1;
    }
    CHECK(p_cuCtxSynchronize());
    CHECK(p_cuMemcpyDtoH_v2(host, x, sizeof(host)));
    printf("flush %d\n", p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));

    decline = 1;
    for (int i = 0; i < 2; i++) {
        if (launch(fn, x)) return 1;
    }
    CHECK(p_cuCtxSynchronize());
    printf("flush_declined %d\n", p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    size_t dropped = 0;
    CUptiResult dr = p_cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
    printf("dropped %d %zu\n", dr, dropped);
    printf("unsubscribe %d\n", p_cuptiUnsubscribe(sub));
    return 0;
}
