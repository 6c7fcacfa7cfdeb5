/* Asks a real libcupti's Profiler Host API (offline, no driver) the facts gpuprof
 * relies on, with NVIDIA's own structs and *_STRUCT_SIZE macros of that release.
 * Built per release against its headers (as C++: the 12.x cupti_profiler_host.h
 * includes <string>); the library is dlopen'ed from argv[1], with its directory on
 * LD_LIBRARY_PATH so it finds libnvperf_host.so.
 *
 *   profiler_host_facts LIBCUPTI
 *   profiler_host_facts LIBCUPTI pm CHIP METRIC...
 *
 * The second form prints "pm METRIC RESULT" for each metric added alone to a PM
 * sampling host object of CHIP. The first
 * prints "name value" lines:
 *   init_size          the release's CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE
 *   init_own           result of Initialize with that size
 *   init_larger        result of Initialize with 8 bytes more (a newer release's struct)
 *   passes_separate    passes of three metrics added in three AddMetrics calls
 *   passes_one_call    passes of the same three added in one call
 *   refused_unknown    AddMetrics result for a metric that does not exist
 *   refused_pm_tensor  AddMetrics result for sm__ops_path_tensor_src_bf16_dst_fp32.sum
 *                      with the PM sampling profiler type
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_profiler_host.h>

#define CHECK(x)                                                               \
  do {                                                                         \
    if (!(x)) {                                                                \
      fprintf(stderr, "profiler_host_facts: %s failed at line %d\n", #x,      \
              __LINE__);                                                       \
      exit(3);                                                                 \
    }                                                                          \
  } while (0)

typedef CUptiResult (*init_fn)(CUpti_Profiler_Host_Initialize_Params *);
typedef CUptiResult (*deinit_fn)(CUpti_Profiler_Host_Deinitialize_Params *);
typedef CUptiResult (*add_fn)(CUpti_Profiler_Host_ConfigAddMetrics_Params *);
typedef CUptiResult (*size_fn)(CUpti_Profiler_Host_GetConfigImageSize_Params *);
typedef CUptiResult (*image_fn)(CUpti_Profiler_Host_GetConfigImage_Params *);
typedef CUptiResult (*passes_fn)(CUpti_Profiler_Host_GetNumOfPasses_Params *);

static init_fn host_init;
static deinit_fn host_deinit;
static add_fn host_add;
static size_fn host_size;
static image_fn host_image;
static passes_fn host_passes;

static const char *METRICS[3] = {"dram__bytes_read.sum",
                                  "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
                                  "dram__bytes_write.sum"};

static CUptiResult init(const char *chip, CUpti_ProfilerType type, size_t size,
                        CUpti_Profiler_Host_Object **host) {
  /* Room for a larger struct than this release's, zero-filled. */
  unsigned char buf[sizeof(CUpti_Profiler_Host_Initialize_Params) + 64];
  memset(buf, 0, sizeof buf);
  CUpti_Profiler_Host_Initialize_Params *p =
      (CUpti_Profiler_Host_Initialize_Params *)buf;
  p->structSize = size;
  p->profilerType = type;
  p->pChipName = chip;
  CUptiResult r = host_init(p);
  *host = p->pHostObject;
  return r;
}

static void deinit(CUpti_Profiler_Host_Object *host) {
  CUpti_Profiler_Host_Deinitialize_Params p;
  memset(&p, 0, sizeof p);
  p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
  p.pHostObject = host;
  CHECK(host_deinit(&p) == CUPTI_SUCCESS);
}

static CUptiResult add(CUpti_Profiler_Host_Object *host, const char **names,
                       size_t n) {
  CUpti_Profiler_Host_ConfigAddMetrics_Params p;
  memset(&p, 0, sizeof p);
  p.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
  p.pHostObject = host;
  p.ppMetricNames = names;
  p.numMetrics = n;
  return host_add(&p);
}

static size_t passes(CUpti_Profiler_Host_Object *host) {
  CUpti_Profiler_Host_GetConfigImageSize_Params s;
  memset(&s, 0, sizeof s);
  s.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
  s.pHostObject = host;
  CHECK(host_size(&s) == CUPTI_SUCCESS);
  uint8_t *image = (uint8_t *)malloc(s.configImageSize);
  CHECK(image != NULL);
  CUpti_Profiler_Host_GetConfigImage_Params g;
  memset(&g, 0, sizeof g);
  g.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
  g.pHostObject = host;
  g.configImageSize = s.configImageSize;
  g.pConfigImage = image;
  CHECK(host_image(&g) == CUPTI_SUCCESS);
  CUpti_Profiler_Host_GetNumOfPasses_Params n;
  memset(&n, 0, sizeof n);
  n.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
  n.configImageSize = s.configImageSize;
  n.pConfigImage = image;
  CHECK(host_passes(&n) == CUPTI_SUCCESS);
  free(image);
  return n.numOfPasses;
}

int main(int argc, char **argv) {
  CHECK(argc == 2 || (argc >= 4 && strcmp(argv[2], "pm") == 0));
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "profiler_host_facts: %s\n", dlerror());
    return 2;
  }
  CHECK((host_init = (init_fn)dlsym(lib, "cuptiProfilerHostInitialize")));
  CHECK((host_deinit = (deinit_fn)dlsym(lib, "cuptiProfilerHostDeinitialize")));
  CHECK((host_add = (add_fn)dlsym(lib, "cuptiProfilerHostConfigAddMetrics")));
  CHECK((host_size = (size_fn)dlsym(lib, "cuptiProfilerHostGetConfigImageSize")));
  CHECK((host_image = (image_fn)dlsym(lib, "cuptiProfilerHostGetConfigImage")));
  CHECK((host_passes = (passes_fn)dlsym(lib, "cuptiProfilerHostGetNumOfPasses")));

  const size_t own = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
  CUpti_Profiler_Host_Object *host = NULL;
  if (argc >= 4) {
    for (int i = 4; i < argc; i++) {
      /* A fresh host object per metric: a refused call leaves it unusable. */
      CHECK(init(argv[3], CUPTI_PROFILER_TYPE_PM_SAMPLING, own, &host) == CUPTI_SUCCESS);
      const char *name = argv[i];
      printf("pm %s %d\n", name, (int)add(host, &name, 1));
      deinit(host);
    }
    return 0;
  }
  printf("init_size %zu\n", own);
  printf("init_larger %d\n", (int)init("GH100", CUPTI_PROFILER_TYPE_RANGE_PROFILER, own + 8, &host));
  CUptiResult r = init("GH100", CUPTI_PROFILER_TYPE_RANGE_PROFILER, own, &host);
  printf("init_own %d\n", (int)r);
  CHECK(r == CUPTI_SUCCESS);
  for (int i = 0; i < 3; i++) CHECK(add(host, &METRICS[i], 1) == CUPTI_SUCCESS);
  printf("passes_separate %zu\n", passes(host));
  deinit(host);

  CHECK(init("GH100", CUPTI_PROFILER_TYPE_RANGE_PROFILER, own, &host) == CUPTI_SUCCESS);
  CHECK(add(host, METRICS, 3) == CUPTI_SUCCESS);
  printf("passes_one_call %zu\n", passes(host));
  deinit(host);

  static const char *UNKNOWN[1] = {"not_a_real_metric.sum"};
  CHECK(init("GH100", CUPTI_PROFILER_TYPE_RANGE_PROFILER, own, &host) == CUPTI_SUCCESS);
  printf("refused_unknown %d\n", (int)add(host, UNKNOWN, 1));
  deinit(host);

  CHECK(init("GH100", CUPTI_PROFILER_TYPE_PM_SAMPLING, own, &host) == CUPTI_SUCCESS);
  printf("refused_pm_tensor %d\n", (int)add(host, &METRICS[1], 1));
  deinit(host);
  return 0;
}
