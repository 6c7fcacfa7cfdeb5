/* The driver API the test programs call, resolved with dlsym from libcuda.so.1 as a
 * program that loads CUDA at run time does: the cuda.h types they use, sym() (which
 * exits naming a missing function), and FN / LOAD to declare and resolve a function
 * pointer of the cuda.h name. */
#ifndef GPUPROF_CUDA_LOADER_H
#define GPUPROF_CUDA_LOADER_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream, *CUevent, *CUmodule, *CUfunction, *CUgraph, *CUgraphExec, *CUgraphNode;
typedef struct { char bytes[16]; } CUuuid;

static void *lib;
static void *sym(const char *name) {
    if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *p = lib ? dlsym(lib, name) : NULL;
    if (!p) { printf("missing %s\n", name); exit(1); }
    return p;
}
#define FN(ret, name, args) static ret(*name) args;
#define LOAD(name) name = sym(#name)

#endif
