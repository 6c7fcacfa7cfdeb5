/* A client of CUPTI's profiling APIs (profiler host, range profiler, PM sampling) for
 * the simulated CUPTI's tests (tests/tests/it/sim/cupti_profiler.rs).
 *
 * Compiled once per CUPTI release against that release's own headers (as C, or as
 * C++ where the release's cupti_profiler_host.h needs it: 12.x and 13.0 include
 * <string>), so every params struct and STRUCT_SIZE is NVIDIA's. It dlopens the CUPTI
 * given as argv[1] and libcuda.so.1 from the loader path, launches kernels k_a, k_b,
 * k_c (grids 2x1x1, 4x1x1, 3x2x1; blocks 128, 96, 32) and prints one line per fact. */
#include <stdbool.h>
#include <cuda.h>
#include <cupti.h>
#include <cupti_target.h>
#include <cupti_profiler_target.h>
#include <cupti_profiler_host.h>
#include <cupti_range_profiler.h>
#include <cupti_pmsampling.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(name) static __typeof__(&name) p_##name
F(cuptiProfilerInitialize); F(cuptiProfilerDeInitialize); F(cuptiDeviceGetChipName);
F(cuptiProfilerGetCounterAvailability); F(cuptiGetTimestamp);
F(cuptiProfilerHostInitialize); F(cuptiProfilerHostDeinitialize); F(cuptiProfilerHostConfigAddMetrics);
F(cuptiProfilerHostGetConfigImageSize); F(cuptiProfilerHostGetConfigImage); F(cuptiProfilerHostGetNumOfPasses);
F(cuptiProfilerHostEvaluateToGpuValues); F(cuptiProfilerHostGetRangeName);
F(cuptiRangeProfilerEnable); F(cuptiRangeProfilerDisable); F(cuptiRangeProfilerGetCounterDataSize);
F(cuptiRangeProfilerCounterDataImageInitialize); F(cuptiRangeProfilerSetConfig); F(cuptiRangeProfilerStart);
F(cuptiRangeProfilerStop); F(cuptiRangeProfilerPushRange); F(cuptiRangeProfilerPopRange);
F(cuptiRangeProfilerDecodeData); F(cuptiRangeProfilerGetCounterDataInfo);
F(cuptiRangeProfilerCounterDataGetRangeInfo);
F(cuptiPmSamplingEnable); F(cuptiPmSamplingDisable); F(cuptiPmSamplingSetConfig); F(cuptiPmSamplingStart);
F(cuptiPmSamplingStop); F(cuptiPmSamplingDecodeData); F(cuptiPmSamplingGetCounterDataSize);
F(cuptiPmSamplingCounterDataImageInitialize); F(cuptiPmSamplingGetCounterDataInfo);
F(cuptiPmSamplingCounterDataGetSampleInfo);
F(cuInit); F(cuDeviceGet); F(cuDevicePrimaryCtxRetain); F(cuCtxSetCurrent); F(cuMemAlloc_v2);
F(cuModuleLoadData); F(cuModuleGetFunction); F(cuLaunchKernel); F(cuCtxSynchronize);
F(cuStreamCreate); F(cuStreamBeginCapture_v2); F(cuStreamEndCapture); F(cuGraphInstantiateWithFlags);
F(cuGraphLaunch); F(cuStreamSynchronize);

/* A zeroed params struct with its STRUCT_SIZE. */
#define PARAMS(T, v) T v; memset(&v, 0, sizeof v); v.structSize = T##_STRUCT_SIZE

#define NUM_METRICS 5
static const char *METRICS[NUM_METRICS] = {
    "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum", "sm__cycles_active.avg",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"};

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
    ".visible .entry k_a(.param .u64 x)\n{\nret;\n}\n"
    ".visible .entry k_b(.param .u64 x)\n{\nret;\n}\n"
    ".visible .entry k_c(.param .u64 x)\n{\nret;\n}\n";

#define CHECK(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { printf("%s failed %d\n", #call, r_); exit(1); } } while (0)
#define OK(call) do { CUptiResult r_ = (call); if (r_ != CUPTI_SUCCESS) { printf("%s failed %d\n", #call, r_); exit(1); } } while (0)

static CUfunction fns[3];
static CUdeviceptr xbuf;

/* Launches kernel i (0 k_a, 1 k_b, 2 k_c) on `stream`. */
static void launch_on(int i, CUstream stream) {
    static const unsigned grid[3][3] = {{2, 1, 1}, {4, 1, 1}, {3, 2, 1}};
    static const unsigned block[3] = {128, 96, 32};
    void *args[] = {&xbuf};
    CHECK(p_cuLaunchKernel(fns[i], grid[i][0], grid[i][1], grid[i][2], block[i], 1, 1, 0, stream, args, NULL));
}

static void launch(int i) { launch_on(i, NULL); }

static CUpti_Profiler_Host_Object *host_init(const char *chip, CUpti_ProfilerType type, CUptiResult *r) {
    PARAMS(CUpti_Profiler_Host_Initialize_Params, hi);
    hi.profilerType = type;
    hi.pChipName = chip;
    *r = p_cuptiProfilerHostInitialize(&hi);
    return hi.pHostObject;
}

/* The config image of the metrics added to `host` so far (malloced) and its size. */
static uint8_t *image_of(CUpti_Profiler_Host_Object *host, size_t *size) {
    PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params, gs);
    gs.pHostObject = host;
    OK(p_cuptiProfilerHostGetConfigImageSize(&gs));
    uint8_t *img = (uint8_t *)malloc(gs.configImageSize);
    PARAMS(CUpti_Profiler_Host_GetConfigImage_Params, gi);
    gi.pHostObject = host;
    gi.configImageSize = gs.configImageSize;
    gi.pConfigImage = img;
    OK(p_cuptiProfilerHostGetConfigImage(&gi));
    *size = gs.configImageSize;
    return img;
}

/* Builds the config image of METRICS on `host` (one AddMetrics call); returns it
 * (malloced) and its size. */
static uint8_t *config_image(CUpti_Profiler_Host_Object *host, size_t *size) {
    PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, am);
    am.pHostObject = host;
    am.ppMetricNames = METRICS;
    am.numMetrics = NUM_METRICS;
    OK(p_cuptiProfilerHostConfigAddMetrics(&am));
    return image_of(host, size);
}

static void print_values(const char *what, CUpti_Profiler_Host_Object *host, uint8_t *image, size_t size,
                         size_t index) {
    double v[NUM_METRICS];
    PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params, ev);
    ev.pHostObject = host;
    ev.pCounterDataImage = image;
    ev.counterDataImageSize = size;
    ev.rangeIndex = index;
    ev.ppMetricNames = METRICS;
    ev.numMetrics = NUM_METRICS;
    ev.pMetricValues = v;
    OK(p_cuptiProfilerHostEvaluateToGpuValues(&ev));
    printf("%s", what);
    for (int m = 0; m < NUM_METRICS; m++) printf(" %s=%.17g", METRICS[m], v[m]);
    printf("\n");
}

/* A range counter data image for `max_ranges` ranges of METRICS. */
static uint8_t *range_image(CUpti_RangeProfiler_Object *obj, size_t max_ranges, size_t *size) {
    PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params, ds);
    ds.pRangeProfilerObject = obj;
    ds.pMetricNames = METRICS;
    ds.numMetrics = NUM_METRICS;
    ds.maxNumOfRanges = max_ranges;
    ds.maxNumRangeTreeNodes = (uint32_t)max_ranges;
    OK(p_cuptiRangeProfilerGetCounterDataSize(&ds));
    uint8_t *img = (uint8_t *)calloc(1, ds.counterDataSize);
    PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params, ci);
    ci.pRangeProfilerObject = obj;
    ci.counterDataSize = ds.counterDataSize;
    ci.pCounterData = img;
    OK(p_cuptiRangeProfilerCounterDataImageInitialize(&ci));
    *size = ds.counterDataSize;
    return img;
}

static CUptiResult set_config(CUpti_RangeProfiler_Object *obj, uint8_t *cfg, size_t cfg_size, uint8_t *img,
                              size_t img_size, CUpti_ProfilerRange range, CUpti_ProfilerReplayMode replay,
                              size_t max_per_pass, uint16_t levels) {
    PARAMS(CUpti_RangeProfiler_SetConfig_Params, sc);
    sc.pRangeProfilerObject = obj;
    sc.configSize = cfg_size;
    sc.pConfig = cfg;
    sc.counterDataImageSize = img_size;
    sc.pCounterDataImage = img;
    sc.range = range;
    sc.replayMode = replay;
    sc.maxRangesPerPass = max_per_pass;
    sc.numNestingLevels = levels;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    return p_cuptiRangeProfilerSetConfig(&sc);
}

static CUptiResult start(CUpti_RangeProfiler_Object *obj) {
    PARAMS(CUpti_RangeProfiler_Start_Params, s);
    s.pRangeProfilerObject = obj;
    return p_cuptiRangeProfilerStart(&s);
}

static void stop_decode(const char *what, CUpti_RangeProfiler_Object *obj) {
    PARAMS(CUpti_RangeProfiler_Stop_Params, st);
    st.pRangeProfilerObject = obj;
    OK(p_cuptiRangeProfilerStop(&st));
    PARAMS(CUpti_RangeProfiler_DecodeData_Params, dd);
    dd.pRangeProfilerObject = obj;
    OK(p_cuptiRangeProfilerDecodeData(&dd));
    printf("%s all_passes=%u dropped=%zu\n", what, st.isAllPassSubmitted, dd.numOfRangeDropped);
}

static void print_ranges(const char *what, CUpti_Profiler_Host_Object *host, uint8_t *img, size_t size) {
    PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params, di);
    di.pCounterDataImage = img;
    di.counterDataImageSize = size;
    OK(p_cuptiRangeProfilerGetCounterDataInfo(&di));
    printf("%s ranges=%zu\n", what, di.numTotalRanges);
    for (size_t r = 0; r < di.numTotalRanges; r++) {
        PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params, ri);
        ri.pCounterDataImage = img;
        ri.counterDataImageSize = size;
        ri.rangeIndex = r;
        ri.rangeDelimiter = "/";
        OK(p_cuptiRangeProfilerCounterDataGetRangeInfo(&ri));
        PARAMS(CUpti_Profiler_Host_GetRangeName_Params, rn);
        rn.pCounterDataImage = img;
        rn.counterDataImageSize = size;
        rn.rangeIndex = r;
        rn.delimiter = "::";
        OK(p_cuptiProfilerHostGetRangeName(&rn));
        char line[512];
        snprintf(line, sizeof line, "%s range=%zu name=%s host_name=%s", what, r, ri.rangeName, rn.pRangeName);
        free((void *)ri.rangeName);
        free((void *)rn.pRangeName);
        print_values(line, host, img, size, r);
    }
}

static void push(CUpti_RangeProfiler_Object *obj, const char *name) {
    PARAMS(CUpti_RangeProfiler_PushRange_Params, p);
    p.pRangeProfilerObject = obj;
    p.pRangeName = name;
    OK(p_cuptiRangeProfilerPushRange(&p));
}

static CUptiResult pop(CUpti_RangeProfiler_Object *obj) {
    PARAMS(CUpti_RangeProfiler_PopRange_Params, p);
    p.pRangeProfilerObject = obj;
    return p_cuptiRangeProfilerPopRange(&p);
}

/* A CUDA graph of k_a, k_b, k_c (captured on a stream), launched under the range
 * profiler: auto range with kernel replay (a range per kernel node), auto range with
 * user replay (not supported for graph kernel nodes), user range with user replay
 * (the whole graph one range). */
static void graph_ranges(CUpti_RangeProfiler_Object *obj, CUpti_Profiler_Host_Object *host, uint8_t *cfg,
                         size_t cfg_size) {
    CUstream stream;
    CUgraph graph;
    CUgraphExec exec;
    CHECK(p_cuStreamCreate(&stream, 0));
    CHECK(p_cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    launch_on(0, stream);
    launch_on(1, stream);
    launch_on(2, stream);
    CHECK(p_cuStreamEndCapture(stream, &graph));
    CHECK(p_cuGraphInstantiateWithFlags(&exec, graph, 0));

    size_t size;
    uint8_t *img = range_image(obj, 3, &size);
    OK(set_config(obj, cfg, cfg_size, img, size, CUPTI_AutoRange, CUPTI_KernelReplay, 3, 1));
    OK(start(obj));
    CHECK(p_cuGraphLaunch(exec, stream));
    CHECK(p_cuStreamSynchronize(stream));
    stop_decode("graph_auto", obj);
    print_ranges("graph_auto", host, img, size);
    free(img);

    img = range_image(obj, 3, &size);
    OK(set_config(obj, cfg, cfg_size, img, size, CUPTI_AutoRange, CUPTI_UserReplay, 3, 1));
    OK(start(obj));
    CHECK(p_cuGraphLaunch(exec, stream));
    CHECK(p_cuStreamSynchronize(stream));
    PARAMS(CUpti_RangeProfiler_Stop_Params, st);
    st.pRangeProfilerObject = obj;
    OK(p_cuptiRangeProfilerStop(&st));
    PARAMS(CUpti_RangeProfiler_DecodeData_Params, dd);
    dd.pRangeProfilerObject = obj;
    printf("err graph_auto_user_replay %d\n", p_cuptiRangeProfilerDecodeData(&dd));
    free(img);

    img = range_image(obj, 2, &size);
    OK(set_config(obj, cfg, cfg_size, img, size, CUPTI_UserRange, CUPTI_UserReplay, 2, 1));
    OK(start(obj));
    push(obj, "graph");
    CHECK(p_cuGraphLaunch(exec, stream));
    CHECK(p_cuStreamSynchronize(stream));
    OK(pop(obj));
    stop_decode("graph_user", obj);
    print_ranges("graph_user", host, img, size);
    free(img);
}

static void range_profiler(CUcontext ctx, CUpti_Profiler_Host_Object *host, uint8_t *cfg, size_t cfg_size) {
    PARAMS(CUpti_RangeProfiler_Enable_Params, en);
    en.ctx = ctx;
    OK(p_cuptiRangeProfilerEnable(&en));
    CUpti_RangeProfiler_Object *obj = en.pRangeProfilerObject;
    printf("err enable_twice %d\n", p_cuptiRangeProfilerEnable(&en));
    printf("err start_before_setconfig %d\n", start(obj));
    PARAMS(CUpti_RangeProfiler_Start_Params, small);
    small.structSize = 8;
    small.pRangeProfilerObject = obj;
    printf("err start_small_struct %d\n", p_cuptiRangeProfilerStart(&small));
    /* One field (8 bytes) beyond the release's struct. */
    small.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE + 8;
    printf("err start_larger_struct %d\n", p_cuptiRangeProfilerStart(&small));
    PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params, bad);
    const char *unknown[1] = {"no__such_metric.sum"};
    bad.pRangeProfilerObject = obj;
    bad.pMetricNames = unknown;
    bad.numMetrics = 1;
    bad.maxNumOfRanges = 1;
    bad.maxNumRangeTreeNodes = 1;
    printf("err counter_data_unknown_metric %d\n", p_cuptiRangeProfilerGetCounterDataSize(&bad));

    /* Auto range: one range per kernel. */
    size_t size;
    uint8_t *img = range_image(obj, 8, &size);
    printf("err user_range_kernel_replay %d\n",
           set_config(obj, cfg, cfg_size, img, size, CUPTI_UserRange, CUPTI_KernelReplay, 8, 1));
    OK(set_config(obj, cfg, cfg_size, img, size, CUPTI_AutoRange, CUPTI_KernelReplay, 8, 1));
    OK(start(obj));
    printf("err start_twice %d\n", start(obj));
    PARAMS(CUpti_RangeProfiler_DecodeData_Params, early);
    early.pRangeProfilerObject = obj;
    printf("err decode_before_stop %d\n", p_cuptiRangeProfilerDecodeData(&early));
    PARAMS(CUpti_RangeProfiler_PushRange_Params, pr);
    pr.pRangeProfilerObject = obj;
    pr.pRangeName = "x";
    printf("err push_in_auto_range %d\n", p_cuptiRangeProfilerPushRange(&pr));
    launch(0);
    launch(1);
    launch(2);
    CHECK(p_cuCtxSynchronize());
    stop_decode("auto", obj);
    print_ranges("auto", host, img, size);
    free(img);

    /* A full image: 3 kernels, room for 2. */
    img = range_image(obj, 2, &size);
    OK(set_config(obj, cfg, cfg_size, img, size, CUPTI_AutoRange, CUPTI_KernelReplay, 8, 1));
    OK(start(obj));
    launch(0);
    launch(1);
    launch(2);
    CHECK(p_cuCtxSynchronize());
    stop_decode("full", obj);
    print_ranges("full", host, img, size);
    free(img);

    /* User range around k_a and k_b; k_c outside any range. */
    img = range_image(obj, 4, &size);
    OK(set_config(obj, cfg, cfg_size, img, size, CUPTI_UserRange, CUPTI_UserReplay, 4, 1));
    printf("err pop_before_start %d\n", pop(obj));
    OK(start(obj));
    push(obj, "pair");
    launch(0);
    launch(1);
    CHECK(p_cuCtxSynchronize());
    OK(pop(obj));
    printf("err pop_unbalanced %d\n", pop(obj));
    launch(2);
    CHECK(p_cuCtxSynchronize());
    stop_decode("user", obj);
    print_ranges("user", host, img, size);
    free(img);

    /* Two nesting levels: outer holds k_a and k_b, outer/inner k_b. */
    img = range_image(obj, 4, &size);
    OK(set_config(obj, cfg, cfg_size, img, size, CUPTI_UserRange, CUPTI_UserReplay, 4, 2));
    OK(start(obj));
    push(obj, "outer");
    launch(0);
    push(obj, "inner");
    launch(1);
    CHECK(p_cuCtxSynchronize());
    OK(pop(obj));
    OK(pop(obj));
    stop_decode("nested", obj);
    print_ranges("nested", host, img, size);
    free(img);

    graph_ranges(obj, host, cfg, cfg_size);

    PARAMS(CUpti_RangeProfiler_Disable_Params, dis);
    dis.pRangeProfilerObject = obj;
    OK(p_cuptiRangeProfilerDisable(&dis));
    printf("err start_after_disable %d\n", start(obj));
}

/* cuptiPmSamplingSetConfig of `cfg` with a 512 MiB hardware buffer. */
static CUptiResult pm_set_config(CUpti_PmSampling_Object *obj, uint8_t *cfg, size_t cfg_size,
                                 CUpti_PmSampling_TriggerMode trigger, uint64_t interval) {
    PARAMS(CUpti_PmSampling_SetConfig_Params, sc);
    sc.pPmSamplingObject = obj;
    sc.configSize = cfg_size;
    sc.pConfig = cfg;
    sc.hardwareBufferSize = 512u << 20;
    sc.samplingInterval = interval;
    sc.triggerMode = trigger;
    return p_cuptiPmSamplingSetConfig(&sc);
}

static void pm_sampling(CUpti_Profiler_Host_Object *host, uint8_t *cfg, size_t cfg_size, uint8_t *two_pass_cfg,
                        size_t two_pass_size) {
    PARAMS(CUpti_PmSampling_Enable_Params, en);
    en.deviceIndex = 0;
    OK(p_cuptiPmSamplingEnable(&en));
    CUpti_PmSampling_Object *obj = en.pPmSamplingObject;
    printf("err pm_enable_twice %d\n", p_cuptiPmSamplingEnable(&en));
    /* "CUPTI_ERROR_NOT_SUPPORTED for config image which require multiple passes". */
    printf("err pm_setconfig_two_passes %d\n",
           pm_set_config(obj, two_pass_cfg, two_pass_size, CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL, 2000));
    PARAMS(CUpti_PmSampling_SetConfig_Params, big);
    big.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE + 8;
    big.pPmSamplingObject = obj;
    printf("err pm_setconfig_larger_struct %d\n", p_cuptiPmSamplingSetConfig(&big));
    PARAMS(CUpti_PmSampling_Start_Params, st);
    st.pPmSamplingObject = obj;
    printf("err pm_start_before_setconfig %d\n", p_cuptiPmSamplingStart(&st));

    const uint32_t max_samples = 16;
    PARAMS(CUpti_PmSampling_GetCounterDataSize_Params, ds);
    ds.pPmSamplingObject = obj;
    ds.pMetricNames = METRICS;
    ds.numMetrics = NUM_METRICS;
    ds.maxSamples = max_samples;
    OK(p_cuptiPmSamplingGetCounterDataSize(&ds));
    uint8_t *img = (uint8_t *)calloc(1, ds.counterDataSize);
    PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params, ci);
    ci.pPmSamplingObject = obj;
    ci.counterDataSize = ds.counterDataSize;
    ci.pCounterData = img;
    OK(p_cuptiPmSamplingCounterDataImageInitialize(&ci));

    OK(pm_set_config(obj, cfg, cfg_size, CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL, 2000));

    uint64_t before = 0, after = 0;
    OK(p_cuptiPmSamplingStart(&st));
    printf("err pm_start_twice %d\n", p_cuptiPmSamplingStart(&st));
    OK(p_cuptiGetTimestamp(&before));
    for (int i = 0; i < 4; i++) {
        launch(0);
        launch(1);
        launch(2);
    }
    CHECK(p_cuCtxSynchronize());
    OK(p_cuptiGetTimestamp(&after));
    PARAMS(CUpti_PmSampling_Stop_Params, sp);
    sp.pPmSamplingObject = obj;
    OK(p_cuptiPmSamplingStop(&sp));
    printf("err pm_stop_twice %d\n", p_cuptiPmSamplingStop(&sp));

    double sums[NUM_METRICS] = {0};
    size_t samples = 0, gaps = 0, decodes = 0;
    uint64_t first = 0, last = 0, prev_end = 0;
    for (;;) {
        PARAMS(CUpti_PmSampling_DecodeData_Params, dd);
        dd.pPmSamplingObject = obj;
        dd.pCounterDataImage = img;
        dd.counterDataImageSize = ds.counterDataSize;
        OK(p_cuptiPmSamplingDecodeData(&dd));
        decodes++;
        PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params, di);
        di.pCounterDataImage = img;
        di.counterDataImageSize = ds.counterDataSize;
        OK(p_cuptiPmSamplingGetCounterDataInfo(&di));
        if (di.numTotalSamples != max_samples) printf("bad numTotalSamples %zu\n", di.numTotalSamples);
        for (size_t s = 0; s < di.numCompletedSamples; s++) {
            PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params, si);
            si.pPmSamplingObject = obj;
            si.pCounterDataImage = img;
            si.counterDataImageSize = ds.counterDataSize;
            si.sampleIndex = s;
            OK(p_cuptiPmSamplingCounterDataGetSampleInfo(&si));
            if (samples == 0) first = si.startTimestamp;
            else if (si.startTimestamp != prev_end) gaps++;
            prev_end = last = si.endTimestamp;
            double v[NUM_METRICS];
            PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params, ev);
            ev.pHostObject = host;
            ev.pCounterDataImage = img;
            ev.counterDataImageSize = ds.counterDataSize;
            ev.rangeIndex = s;
            ev.ppMetricNames = METRICS;
            ev.numMetrics = NUM_METRICS;
            ev.pMetricValues = v;
            OK(p_cuptiProfilerHostEvaluateToGpuValues(&ev));
            for (int m = 0; m < NUM_METRICS; m++) sums[m] += v[m];
            samples++;
        }
        if (dd.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS) break;
        if (dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) {
            printf("bad stop reason %d\n", (int)dd.decodeStopReason);
            break;
        }
        OK(p_cuptiPmSamplingCounterDataImageInitialize(&ci));
    }
    printf("pm samples=%zu gaps=%zu multiple_decodes=%d covers=%d interval_ok=%d\n", samples, gaps,
           decodes > 1, first <= before && last >= after, samples >= (after - before) / 2000);
    for (int m = 0; m < NUM_METRICS; m++) printf("pm_sum %s=%.17g\n", METRICS[m], sums[m]);
    free(img);
    PARAMS(CUpti_PmSampling_Disable_Params, dis);
    dis.pPmSamplingObject = obj;
    OK(p_cuptiPmSamplingDisable(&dis));
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!cuda) { printf("dlopen libcuda: %s\n", dlerror()); return 2; }
    void *cupti = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!cupti) { printf("dlopen cupti: %s\n", dlerror()); return 2; }
#define L(lib, name) p_##name = (__typeof__(p_##name))load(lib, #name)
    L(cupti, cuptiProfilerInitialize); L(cupti, cuptiProfilerDeInitialize); L(cupti, cuptiDeviceGetChipName);
    L(cupti, cuptiProfilerGetCounterAvailability); L(cupti, cuptiGetTimestamp);
    L(cupti, cuptiProfilerHostInitialize); L(cupti, cuptiProfilerHostDeinitialize);
    L(cupti, cuptiProfilerHostConfigAddMetrics); L(cupti, cuptiProfilerHostGetConfigImageSize);
    L(cupti, cuptiProfilerHostGetConfigImage); L(cupti, cuptiProfilerHostGetNumOfPasses);
    L(cupti, cuptiProfilerHostEvaluateToGpuValues); L(cupti, cuptiProfilerHostGetRangeName);
    L(cupti, cuptiRangeProfilerEnable); L(cupti, cuptiRangeProfilerDisable);
    L(cupti, cuptiRangeProfilerGetCounterDataSize); L(cupti, cuptiRangeProfilerCounterDataImageInitialize);
    L(cupti, cuptiRangeProfilerSetConfig); L(cupti, cuptiRangeProfilerStart); L(cupti, cuptiRangeProfilerStop);
    L(cupti, cuptiRangeProfilerPushRange); L(cupti, cuptiRangeProfilerPopRange);
    L(cupti, cuptiRangeProfilerDecodeData); L(cupti, cuptiRangeProfilerGetCounterDataInfo);
    L(cupti, cuptiRangeProfilerCounterDataGetRangeInfo);
    L(cupti, cuptiPmSamplingEnable); L(cupti, cuptiPmSamplingDisable); L(cupti, cuptiPmSamplingSetConfig);
    L(cupti, cuptiPmSamplingStart); L(cupti, cuptiPmSamplingStop); L(cupti, cuptiPmSamplingDecodeData);
    L(cupti, cuptiPmSamplingGetCounterDataSize); L(cupti, cuptiPmSamplingCounterDataImageInitialize);
    L(cupti, cuptiPmSamplingGetCounterDataInfo); L(cupti, cuptiPmSamplingCounterDataGetSampleInfo);
    L(cuda, cuInit); L(cuda, cuDeviceGet); L(cuda, cuDevicePrimaryCtxRetain); L(cuda, cuCtxSetCurrent);
    L(cuda, cuMemAlloc_v2); L(cuda, cuModuleLoadData); L(cuda, cuModuleGetFunction); L(cuda, cuLaunchKernel);
    L(cuda, cuCtxSynchronize);
    L(cuda, cuStreamCreate); L(cuda, cuStreamBeginCapture_v2); L(cuda, cuStreamEndCapture);
    L(cuda, cuGraphInstantiateWithFlags); L(cuda, cuGraphLaunch); L(cuda, cuStreamSynchronize);

    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CHECK(p_cuInit(0));
    CHECK(p_cuDeviceGet(&dev, 0));
    CHECK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(p_cuCtxSetCurrent(ctx));
    CHECK(p_cuMemAlloc_v2(&xbuf, 1024));
    CHECK(p_cuModuleLoadData(&mod, PTX));
    CHECK(p_cuModuleGetFunction(&fns[0], mod, "k_a"));
    CHECK(p_cuModuleGetFunction(&fns[1], mod, "k_b"));
    CHECK(p_cuModuleGetFunction(&fns[2], mod, "k_c"));

    PARAMS(CUpti_Device_GetChipName_Params, cn);
    cn.deviceIndex = 0;
    CUptiResult r = p_cuptiDeviceGetChipName(&cn);
    printf("chip %d %s\n", r, r == CUPTI_SUCCESS ? cn.pChipName : "-");
    if (argc > 2 && strcmp(argv[2], "chip") == 0) return 0;

    if (argc > 2 && strcmp(argv[2], "trigger") == 0) {
        /* Which PM sampling triggers the device's chip takes. */
        PARAMS(CUpti_Profiler_Initialize_Params, ti);
        OK(p_cuptiProfilerInitialize(&ti));
        CUpti_Profiler_Host_Object *th = host_init(cn.pChipName, CUPTI_PROFILER_TYPE_PM_SAMPLING, &r);
        OK(r);
        size_t tsize;
        uint8_t *tcfg = config_image(th, &tsize);
        PARAMS(CUpti_PmSampling_Enable_Params, ten);
        ten.deviceIndex = 0;
        OK(p_cuptiPmSamplingEnable(&ten));
        printf("trigger gpu_time %d\n", pm_set_config(ten.pPmSamplingObject, tcfg, tsize,
                                                     CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL, 2000));
        printf("trigger sysclk %d\n", pm_set_config(ten.pPmSamplingObject, tcfg, tsize,
                                                   CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL, 2000));
        PARAMS(CUpti_PmSampling_Disable_Params, tdis);
        tdis.pPmSamplingObject = ten.pPmSamplingObject;
        OK(p_cuptiPmSamplingDisable(&tdis));
        free(tcfg);
        return 0;
    }

    PARAMS(CUpti_RangeProfiler_Enable_Params, early);
    early.ctx = ctx;
    printf("err enable_before_initialize %d\n", p_cuptiRangeProfilerEnable(&early));
    PARAMS(CUpti_Profiler_Initialize_Params, pi);
    pi.structSize = 4;
    printf("err initialize_small_struct %d\n", p_cuptiProfilerInitialize(&pi));
    pi.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
    OK(p_cuptiProfilerInitialize(&pi));

    PARAMS(CUpti_Profiler_GetCounterAvailability_Params, ca);
    ca.ctx = ctx;
    OK(p_cuptiProfilerGetCounterAvailability(&ca));
    uint8_t *avail = (uint8_t *)malloc(ca.counterAvailabilityImageSize);
    ca.pCounterAvailabilityImage = avail;
    OK(p_cuptiProfilerGetCounterAvailability(&ca));

    CUpti_Profiler_Host_Object *host = host_init(cn.pChipName, CUPTI_PROFILER_TYPE_RANGE_PROFILER, &r);
    OK(r);
    host_init("NOPE100", CUPTI_PROFILER_TYPE_RANGE_PROFILER, &r);
    printf("err host_unknown_chip %d\n", r);
    /* A refused AddMetrics leaves NVIDIA's host object unusable (its next
     * AddMetrics answers CUPTI_ERROR_UNKNOWN): each refusal on a host of its own. */
    CUpti_Profiler_Host_Object *probe = host_init(cn.pChipName, CUPTI_PROFILER_TYPE_RANGE_PROFILER, &r);
    OK(r);
    PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, am);
    const char *unknown[1] = {"no__such_metric.sum"};
    am.pHostObject = probe;
    am.ppMetricNames = unknown;
    am.numMetrics = 1;
    printf("err add_unknown_metric %d\n", p_cuptiProfilerHostConfigAddMetrics(&am));
    printf("err add_after_refusal %d\n", p_cuptiProfilerHostConfigAddMetrics(&am));
    size_t cfg_size;
    uint8_t *cfg = config_image(host, &cfg_size);
    PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params, np);
    np.configImageSize = cfg_size;
    np.pConfigImage = cfg;
    OK(p_cuptiProfilerHostGetNumOfPasses(&np));
    printf("passes %zu\n", np.numOfPasses);

    /* What NVIDIA's library refuses, and how it counts passes. */
    PARAMS(CUpti_Profiler_Host_Initialize_Params, big);
    big.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE + 8;
    big.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    big.pChipName = cn.pChipName;
    printf("err host_init_larger_struct %d\n", p_cuptiProfilerHostInitialize(&big));
    CUpti_Profiler_Host_Object *sep = host_init(cn.pChipName, CUPTI_PROFILER_TYPE_RANGE_PROFILER, &r);
    OK(r);
    for (int i = 0; i < 3; i++) {
        PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, one);
        one.pHostObject = sep;
        one.ppMetricNames = &METRICS[i];
        one.numMetrics = 1;
        OK(p_cuptiProfilerHostConfigAddMetrics(&one));
    }
    size_t sep_size;
    uint8_t *sep_img = image_of(sep, &sep_size);
    PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params, snp);
    snp.configImageSize = sep_size;
    snp.pConfigImage = sep_img;
    OK(p_cuptiProfilerHostGetNumOfPasses(&snp));
    printf("passes_three_calls %zu\n", snp.numOfPasses);
    free(sep_img);
    CUpti_Profiler_Host_Object *pm_probe = host_init(cn.pChipName, CUPTI_PROFILER_TYPE_PM_SAMPLING, &r);
    OK(r);
    const char *tensor[1] = {"sm__ops_path_tensor_src_bf16_dst_fp32.sum"};
    PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, pma);
    pma.pHostObject = pm_probe;
    pma.ppMetricNames = tensor;
    pma.numMetrics = 1;
    printf("err pm_add_tensor_ops %d\n", p_cuptiProfilerHostConfigAddMetrics(&pma));
    CUpti_Profiler_Host_Object *pm_probe2 = host_init(cn.pChipName, CUPTI_PROFILER_TYPE_PM_SAMPLING, &r);
    OK(r);
    pma.pHostObject = pm_probe2;
    pma.ppMetricNames = unknown;
    printf("err pm_add_unknown_metric %d\n", p_cuptiProfilerHostConfigAddMetrics(&pma));
    /* Nothing was added: there is no config image. */
    CUpti_Profiler_Host_Object *pm_empty = host_init(cn.pChipName, CUPTI_PROFILER_TYPE_PM_SAMPLING, &r);
    OK(r);
    PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params, empty);
    empty.pHostObject = pm_empty;
    printf("err config_size_no_metrics %d\n", p_cuptiProfilerHostGetConfigImageSize(&empty));

    range_profiler(ctx, host, cfg, cfg_size);

    CUpti_Profiler_Host_Object *pm_host = host_init(cn.pChipName, CUPTI_PROFILER_TYPE_PM_SAMPLING, &r);
    OK(r);
    size_t pm_cfg_size;
    uint8_t *pm_cfg = config_image(pm_host, &pm_cfg_size);
    /* Two AddMetrics calls: a two-pass config. */
    CUpti_Profiler_Host_Object *two = host_init(cn.pChipName, CUPTI_PROFILER_TYPE_PM_SAMPLING, &r);
    OK(r);
    for (int i = 0; i < 2; i++) {
        PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params, one);
        one.pHostObject = two;
        one.ppMetricNames = &METRICS[2 + i];
        one.numMetrics = 1;
        OK(p_cuptiProfilerHostConfigAddMetrics(&one));
    }
    size_t two_size;
    uint8_t *two_cfg = image_of(two, &two_size);
    PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params, tnp);
    tnp.configImageSize = two_size;
    tnp.pConfigImage = two_cfg;
    OK(p_cuptiProfilerHostGetNumOfPasses(&tnp));
    printf("pm_passes_two_calls %zu\n", tnp.numOfPasses);
    pm_sampling(pm_host, pm_cfg, pm_cfg_size, two_cfg, two_size);
    free(two_cfg);

    PARAMS(CUpti_Profiler_Host_Deinitialize_Params, hd);
    hd.pHostObject = host;
    OK(p_cuptiProfilerHostDeinitialize(&hd));
    hd.pHostObject = pm_host;
    OK(p_cuptiProfilerHostDeinitialize(&hd));
    hd.pHostObject = sep;
    OK(p_cuptiProfilerHostDeinitialize(&hd));
    hd.pHostObject = pm_probe;
    OK(p_cuptiProfilerHostDeinitialize(&hd));
    hd.pHostObject = pm_probe2;
    OK(p_cuptiProfilerHostDeinitialize(&hd));
    hd.pHostObject = pm_empty;
    OK(p_cuptiProfilerHostDeinitialize(&hd));
    hd.pHostObject = probe;
    OK(p_cuptiProfilerHostDeinitialize(&hd));
    hd.pHostObject = two;
    OK(p_cuptiProfilerHostDeinitialize(&hd));
    PARAMS(CUpti_Profiler_DeInitialize_Params, pd);
    OK(p_cuptiProfilerDeInitialize(&pd));
    free(cfg);
    free(pm_cfg);
    free(avail);
    printf("done\n");
    return 0;
}
