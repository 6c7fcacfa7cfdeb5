//! The one place that says how large a params struct gpuprof hands to CUPTI or to
//! NVIDIA's host metrics library is.
//!
//! Every versioned params struct of `cupti_profiler_target.h`,
//! `cupti_profiler_host.h`, `cupti_range_profiler.h`, `cupti_pmsampling.h` and
//! `nvperf_host.h` starts with `size_t structSize`; the headers' `*_STRUCT_SIZE`
//! macros set it to the offset of the struct's last field plus that field's size
//! (no tail padding), and the library reads it to know which fields the client
//! passed. The bindings come from the newest pinned headers, where some structs have
//! grown (`pSinglePassMetricSetName` of `CUpti_Profiler_Host_Initialize_Params` from
//! 13.2, `hwBufferAppendMode` of `CUpti_PmSampling_SetConfig_Params` from 12.8). An
//! older library refuses a size larger than its own: NVIDIA's 12.9 library answers
//! `CUPTI_ERROR_INVALID_PARAMETER` for the 13.2 Host Initialize size (56) and
//! succeeds with 48. So each struct is passed with the size of the oldest release
//! that has the call, ending at the last field gpuprof sets; every later release
//! accepts that. [`PROFILER_PARAMS`] lists every such size, and
//! `tests/tests/it/cupti/params_sizes.rs` checks each one against every pinned release's
//! headers.

/// The header's `*_STRUCT_SIZE` of struct `$t` ending at field `$last`: the field's
/// offset plus its size. A constant expression.
#[macro_export]
macro_rules! struct_size {
    ($t:ty, $last:ident) => {{
        const fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
            core::mem::size_of::<F>()
        }
        core::mem::offset_of!($t, $last) + field_size(|s: &$t| &s.$last)
    }};
}

/// A CUPTI profiling params struct with the size gpuprof passes.
pub trait Params: Sized {
    /// The struct's name in the headers.
    const NAME: &'static str;
    /// The `structSize` gpuprof passes.
    const SIZE: usize;
    /// All-zero with `structSize` set, what the headers' samples build with memset.
    fn new() -> Self;
}

macro_rules! params {
    ($($t:ident => $last:ident),* $(,)?) => {
        $(
            impl Params for cupti_sys::$t {
                const NAME: &'static str = stringify!($t);
                const SIZE: usize = struct_size!(cupti_sys::$t, $last);
                fn new() -> Self {
                    // SAFETY: CUPTI's params structs are plain C structs of integers,
                    // enums as integers and raw pointers, for which all-zero bytes
                    // are a valid value.
                    let mut p: Self = unsafe { core::mem::zeroed() };
                    p.structSize = Self::SIZE;
                    p
                }
            }
        )*
        /// Every profiling params struct gpuprof passes: (name, `structSize`).
        pub const PROFILER_PARAMS: &[(&str, usize)] = &[
            $((stringify!($t), <cupti_sys::$t as Params>::SIZE)),*
        ];
    };
}

params! {
    CUpti_Profiler_Initialize_Params => pPriv,
    CUpti_Profiler_DeInitialize_Params => pPriv,
    CUpti_Device_GetChipName_Params => pChipName,
    // 12.6-13.1 end at pHostObject; 13.2 adds pSinglePassMetricSetName, unused.
    CUpti_Profiler_Host_Initialize_Params => pHostObject,
    CUpti_Profiler_Host_Deinitialize_Params => pHostObject,
    CUpti_Profiler_Host_GetSupportedChips_Params => ppChipNames,
    CUpti_Profiler_Host_ConfigAddMetrics_Params => numMetrics,
    CUpti_Profiler_Host_GetConfigImageSize_Params => configImageSize,
    CUpti_Profiler_Host_GetConfigImage_Params => pConfigImage,
    CUpti_Profiler_Host_GetNumOfPasses_Params => numOfPasses,
    CUpti_Profiler_Host_EvaluateToGpuValues_Params => pMetricValues,
    CUpti_RangeProfiler_Enable_Params => pRangeProfilerObject,
    CUpti_RangeProfiler_Disable_Params => pRangeProfilerObject,
    CUpti_RangeProfiler_GetCounterDataSize_Params => counterDataSize,
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params => pCounterData,
    CUpti_RangeProfiler_SetConfig_Params => targetNestingLevel,
    CUpti_RangeProfiler_Start_Params => pRangeProfilerObject,
    CUpti_RangeProfiler_Stop_Params => isAllPassSubmitted,
    CUpti_RangeProfiler_DecodeData_Params => numOfRangeDropped,
    CUpti_RangeProfiler_GetCounterDataInfo_Params => numTotalRanges,
    CUpti_PmSampling_Enable_Params => pPmSamplingObject,
    CUpti_PmSampling_Disable_Params => pPmSamplingObject,
    // 12.6-12.7 end at triggerMode; 12.8 adds hwBufferAppendMode (default: keep oldest).
    CUpti_PmSampling_SetConfig_Params => triggerMode,
    CUpti_PmSampling_Start_Params => pPmSamplingObject,
    CUpti_PmSampling_Stop_Params => pPmSamplingObject,
    CUpti_PmSampling_GetCounterDataSize_Params => counterDataSize,
    CUpti_PmSampling_CounterDataImage_Initialize_Params => pCounterData,
    CUpti_PmSampling_DecodeData_Params => overflow,
    CUpti_PmSampling_GetCounterDataInfo_Params => numCompletedSamples,
    CUpti_PmSampling_CounterData_GetSampleInfo_Params => endTimestamp,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_initialize_is_the_12_6_size() {
        // The 12.6-13.1 headers: structSize, pPriv, profilerType (+4 padding),
        // pChipName, pCounterAvailabilityImage, pHostObject.
        assert_eq!(
            <cupti_sys::CUpti_Profiler_Host_Initialize_Params as Params>::SIZE,
            48
        );
        let p = <cupti_sys::CUpti_PmSampling_SetConfig_Params as Params>::new();
        assert_eq!(p.structSize, 60);
        assert_eq!(p.hwBufferAppendMode, 0);
    }
}
