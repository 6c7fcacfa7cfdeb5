/* A stand-in libcuda.so.1 with just enough of the driver API for start-up tests:
 * cuDriverGetVersion answers $STUB_CUDA_DRIVER_VERSION (default 13000). The full
 * simulated CUDA stack lives elsewhere; this only lets a test have "a driver loaded". */
#include <stdlib.h>

int cuDriverGetVersion(int *version) {
    const char *v = getenv("STUB_CUDA_DRIVER_VERSION");
    if (!version) return 1; /* CUDA_ERROR_INVALID_VALUE */
    *version = v ? atoi(v) : 13000;
    return 0;
}

int cuInit(unsigned int flags) { return flags == 0 ? 0 : 1; }
