/* NVIDIA's occupancy calculator (cuda_occupancy.h, from the CUDA runtime wheel) on
 * launches read from stdin, one per line:
 *   major minor max_threads_per_sm regs_per_sm regs_per_block max_threads_per_block
 *   smem_per_sm smem_per_block smem_per_block_optin reserved_smem_per_block
 *   threads registers_per_thread static_smem dynamic_smem
 * For each it prints "blocks limiting_factors" (cudaOccResult's
 * activeBlocksPerMultiprocessor and limitingFactors bits), or "error CODE".
 * The kernel opts in to the dynamic shared memory it launches with (as a kernel
 * launched with more than the default limit must have). */
#include <stdio.h>
#include <string.h>
#include "cuda_occupancy.h"

int main(void) {
    int major, minor, threads_per_sm, regs_per_sm, regs_per_block, threads_per_block;
    unsigned long smem_per_sm, smem_per_block, smem_optin, reserved;
    int threads, regs;
    unsigned long static_smem, dynamic_smem;
    while (scanf("%d %d %d %d %d %d %lu %lu %lu %lu %d %d %lu %lu", &major, &minor,
                 &threads_per_sm, &regs_per_sm, &regs_per_block, &threads_per_block,
                 &smem_per_sm, &smem_per_block, &smem_optin, &reserved, &threads, &regs,
                 &static_smem, &dynamic_smem) == 14) {
        cudaOccDeviceProp prop;
        memset(&prop, 0, sizeof prop);
        prop.computeMajor = major;
        prop.computeMinor = minor;
        prop.maxThreadsPerBlock = threads_per_block;
        prop.maxThreadsPerMultiprocessor = threads_per_sm;
        prop.regsPerBlock = regs_per_block;
        prop.regsPerMultiprocessor = regs_per_sm;
        prop.warpSize = 32;
        prop.sharedMemPerBlock = smem_per_block;
        prop.sharedMemPerMultiprocessor = smem_per_sm;
        prop.numSms = 1;
        prop.sharedMemPerBlockOptin = smem_optin;
        prop.reservedSharedMemPerBlock = reserved;

        cudaOccFuncAttributes attr;
        memset(&attr, 0, sizeof attr);
        attr.maxThreadsPerBlock = threads_per_block;
        attr.numRegs = regs;
        attr.sharedSizeBytes = static_smem;
        attr.partitionedGCConfig = PARTITIONED_GC_OFF;
        attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        attr.maxDynamicSharedSizeBytes = dynamic_smem;
        attr.numBlockBarriers = 1;

        cudaOccDeviceState state;
        memset(&state, 0, sizeof state);
        state.cacheConfig = CACHE_PREFER_NONE;
        state.carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT;

        cudaOccResult result;
        memset(&result, 0, sizeof result);
        cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state,
                                                                 threads, dynamic_smem);
        if (e != CUDA_OCC_SUCCESS)
            printf("error %d\n", (int)e);
        else
            printf("%d %u\n", result.activeBlocksPerMultiprocessor, result.limitingFactors);
    }
    return 0;
}
