/* Plays the CUDA driver's part in injection: optionally loads a libcuda.so.1 first
 * (as a process using CUDA has), then dlopens the injection library and calls
 * InitializeInjection twice, as the driver would if cuInit ran twice.
 * usage: inject_host LIBGPUPROF [LIBCUDA] */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (argc > 2 && !dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)) {
        printf("dlopen driver: %s\n", dlerror());
        return 3;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen: %s\n", dlerror());
        return 4;
    }
    int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
    if (!init) {
        printf("no InitializeInjection\n");
        return 5;
    }
    int a = init();
    int b = init();
    printf("InitializeInjection=%d,%d\n", a, b);
    return 0;
}
