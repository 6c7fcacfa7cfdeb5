/* A minimal CUDA driver API client: dlopens libcuda.so.1 from the loader search path
 * and prints the result of each call, one line per call, for the simulated driver's
 * tests. Declarations are copied from cuda.h (CUDA 13). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct { char bytes[16]; } CUuuid;

static void *lib;

static void *sym(const char *name) {
    void *p = dlsym(lib, name);
    if (p == NULL) {
        printf("missing %s\n", name);
    }
    return p;
}

int main(void) {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    CUresult (*cuInit)(unsigned) = sym("cuInit");
    CUresult (*cuDriverGetVersion)(int *) = sym("cuDriverGetVersion");
    CUresult (*cuDeviceGetCount)(int *) = sym("cuDeviceGetCount");
    CUresult (*cuDeviceGet)(CUdevice *, int) = sym("cuDeviceGet");
    CUresult (*cuDeviceGetName)(char *, int, CUdevice) = sym("cuDeviceGetName");
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = sym("cuDeviceGetAttribute");
    CUresult (*cuDeviceTotalMem)(size_t *, CUdevice) = sym("cuDeviceTotalMem_v2");
    CUresult (*cuDeviceGetUuid)(CUuuid *, CUdevice) = sym("cuDeviceGetUuid_v2");
    CUresult (*cuGetErrorName)(CUresult, const char **) = sym("cuGetErrorName");
    CUresult (*cuGetErrorString)(CUresult, const char **) = sym("cuGetErrorString");
    CUresult (*cuGetProcAddress)(const char *, void **, int, uint64_t, int *) = sym("cuGetProcAddress_v2");
    if (!cuInit || !cuDriverGetVersion || !cuDeviceGetCount || !cuDeviceGet || !cuDeviceGetName ||
        !cuDeviceGetAttribute || !cuDeviceTotalMem || !cuDeviceGetUuid || !cuGetErrorName ||
        !cuGetErrorString || !cuGetProcAddress) {
        return 1;
    }

    int n = -1;
    CUresult r = cuDeviceGetCount(&n);
    const char *name = NULL, *desc = NULL;
    cuGetErrorName(r, &name);
    cuGetErrorString(r, &desc);
    printf("before cuInit: cuDeviceGetCount=%d %s (%s)\n", r, name, desc);

    int version = -1;
    r = cuDriverGetVersion(&version);
    printf("cuDriverGetVersion=%d %d\n", r, version);

    void *pfn = NULL;
    int status = -1;
    r = cuGetProcAddress("cuInit", &pfn, 12000, 0, &status);
    printf("cuGetProcAddress_v2(cuInit)=%d status=%d same=%d\n", r, status, pfn == (void *)cuInit);
    pfn = (void *)&pfn;
    status = -1;
    r = cuGetProcAddress("cuBogusFunction", &pfn, 12000, 0, &status);
    printf("cuGetProcAddress_v2(cuBogusFunction)=%d status=%d pfn=%s\n", r, status, pfn ? "set" : "NULL");

    printf("cuInit(1)=%d\n", cuInit(1));
    printf("cuInit(0)=%d\n", cuInit(0));
    printf("cuInit(0)=%d\n", cuInit(0));

    r = cuDeviceGetCount(&n);
    printf("cuDeviceGetCount=%d %d\n", r, n);
    CUdevice dev = -1;
    r = cuDeviceGet(&dev, 0);
    printf("cuDeviceGet(0)=%d %d\n", r, dev);
    printf("cuDeviceGet(%d)=%d\n", n, cuDeviceGet(&dev, n));
    dev = 0;

    char buf[256];
    r = cuDeviceGetName(buf, sizeof buf, dev);
    printf("cuDeviceGetName=%d \"%s\"\n", r, buf);
    r = cuDeviceGetName(buf, 7, dev);
    printf("cuDeviceGetName(len 7)=%d \"%s\"\n", r, buf);

    static const struct { int attr; const char *name; } attrs[] = {
        {75, "COMPUTE_CAPABILITY_MAJOR"}, {76, "COMPUTE_CAPABILITY_MINOR"},
        {16, "MULTIPROCESSOR_COUNT"},     {13, "CLOCK_RATE"},
        {36, "MEMORY_CLOCK_RATE"},        {37, "GLOBAL_MEMORY_BUS_WIDTH"},
        {1, "MAX_THREADS_PER_BLOCK"},     {10, "WARP_SIZE"},
        {38, "L2_CACHE_SIZE"},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = -1;
        r = cuDeviceGetAttribute(&v, attrs[i].attr, dev);
        printf("%s=%d %d\n", attrs[i].name, r, v);
    }
    printf("cuDeviceGetAttribute(MAX)=%d\n", cuDeviceGetAttribute(&n, 162, dev));

    size_t mem = 0;
    r = cuDeviceTotalMem(&mem, dev);
    printf("cuDeviceTotalMem_v2=%d %zu\n", r, mem);
    CUuuid u;
    memset(&u, 0, sizeof u);
    r = cuDeviceGetUuid(&u, dev);
    printf("cuDeviceGetUuid_v2=%d", r);
    for (int i = 0; i < 16; i++) {
        printf("%s%02x", i ? "" : " ", (unsigned char)u.bytes[i]);
    }
    printf("\n");
    return 0;
}
