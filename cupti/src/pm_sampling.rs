//! CUPTI's PM sampling calls (`cupti_pmsampling.h`, CUDA 12.6 on) with an owning
//! sampler handle that disables sampling on drop, and the trigger each chip
//! supports.
//!
//! Reference: <https://docs.nvidia.com/cupti/api/group__CUPTI__PM__SAMPLING__API.html>.

use cupti_sys::CUpti_PmSampling_DecodeStopReason::CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
use cupti_sys::CUpti_PmSampling_TriggerMode::{
    CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL,
    CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL,
};
use cupti_sys::*;

use crate::params::Params;
use crate::profiler::{call, MetricNames, Result};

/// What starts a PM sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// `CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL`: every `interval` ns of a
    /// fixed-frequency clock.
    GpuTime,
    /// `CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL`: every `interval` SYSCLK
    /// cycles ("SYS frequency by default is variable").
    SysClk,
}

/// The nominal SYSCLK rate used to turn a time interval into SYSCLK cycles where
/// only the SYSCLK trigger exists. SYSCLK varies, so the interval is approximate
/// there; each sample's window comes from its own timestamps
/// (`cuptiPmSamplingCounterDataGetSampleInfo`), so attribution stays exact.
pub const NOMINAL_SYSCLK_HZ: u64 = 1_000_000_000;

impl Trigger {
    /// The trigger `chip` supports. `cupti_pmsampling.h`: the GPU-time trigger "is
    /// not supported on Turing GPU architecture and GA100 GPU. It is supported on
    /// Ampere GA10x and later GPU architectures."
    pub fn for_chip(chip: &str) -> Trigger {
        if chip == "GA100" || chip.starts_with("TU") {
            Trigger::SysClk
        } else {
            Trigger::GpuTime
        }
    }

    /// `samplingInterval` for a period of `interval_ns`.
    pub fn interval(self, interval_ns: u64) -> u64 {
        match self {
            Trigger::GpuTime => interval_ns,
            Trigger::SysClk => (u128::from(interval_ns) * u128::from(NOMINAL_SYSCLK_HZ)
                / 1_000_000_000)
                .clamp(1, u128::from(u64::MAX)) as u64,
        }
    }

    fn raw(self) -> CUpti_PmSampling_TriggerMode::Type {
        match self {
            Trigger::GpuTime => CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL,
            Trigger::SysClk => CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL,
        }
    }

    /// The name users see.
    pub fn describe(self) -> &'static str {
        match self {
            Trigger::GpuTime => "GPU time",
            Trigger::SysClk => "SYSCLK cycles",
        }
    }
}

/// A PM sampling object (`cuptiPmSamplingEnable` on one device), disabled on drop.
/// An opaque token; we never dereference it.
pub struct PmSampler {
    fns: &'static CuptiFns,
    object: *mut CUpti_PmSampling_Object,
}

// SAFETY: an opaque CUPTI handle; its owner serialises its use (one lock per
// process guards every sampler).
unsafe impl Send for PmSampler {}

impl PmSampler {
    /// `cuptiPmSamplingEnable` on device ordinal `device`.
    pub fn enable(fns: &'static CuptiFns, device: u32) -> Result<PmSampler> {
        let mut p = CUpti_PmSampling_Enable_Params::new();
        p.deviceIndex = device as usize;
        call!(fns, cuptiPmSamplingEnable, &mut p)?;
        Ok(PmSampler {
            fns,
            object: p.pPmSamplingObject,
        })
    }

    /// The function table the object was made with.
    pub fn fns(&self) -> &'static CuptiFns {
        self.fns
    }

    /// `cuptiPmSamplingSetConfig`: `config` (a PM sampling host config image),
    /// `trigger` every `interval_ns`, a hardware buffer of `buffer_bytes`. The struct
    /// stops before `hwBufferAppendMode` (12.8): the 12.6 default, keep oldest.
    pub fn set_config(
        &self,
        config: &[u8],
        trigger: Trigger,
        interval_ns: u64,
        buffer_bytes: usize,
    ) -> Result<()> {
        let mut p = CUpti_PmSampling_SetConfig_Params::new();
        p.pPmSamplingObject = self.object;
        p.configSize = config.len();
        p.pConfig = config.as_ptr();
        p.hardwareBufferSize = buffer_bytes;
        p.samplingInterval = trigger.interval(interval_ns);
        p.triggerMode = trigger.raw();
        call!(self.fns, cuptiPmSamplingSetConfig, &mut p)
    }

    /// `cuptiPmSamplingStart`.
    pub fn start(&self) -> Result<()> {
        let mut p = CUpti_PmSampling_Start_Params::new();
        p.pPmSamplingObject = self.object;
        call!(self.fns, cuptiPmSamplingStart, &mut p)
    }

    /// `cuptiPmSamplingStop`.
    pub fn stop(&self) -> Result<()> {
        let mut p = CUpti_PmSampling_Stop_Params::new();
        p.pPmSamplingObject = self.object;
        call!(self.fns, cuptiPmSamplingStop, &mut p)
    }

    /// `cuptiPmSamplingGetCounterDataSize` for `max_samples` samples of `metrics`.
    pub fn counter_data_size(&self, metrics: &MetricNames, max_samples: u32) -> Result<usize> {
        let mut p = CUpti_PmSampling_GetCounterDataSize_Params::new();
        p.pPmSamplingObject = self.object;
        p.pMetricNames = metrics.array();
        p.numMetrics = metrics.len();
        p.maxSamples = max_samples;
        call!(self.fns, cuptiPmSamplingGetCounterDataSize, &mut p)?;
        Ok(p.counterDataSize)
    }

    /// `cuptiPmSamplingCounterDataImageInitialize` of `image`.
    pub fn initialize_image(&self, image: &mut [u8]) -> Result<()> {
        let mut p = CUpti_PmSampling_CounterDataImage_Initialize_Params::new();
        p.pPmSamplingObject = self.object;
        p.counterDataSize = image.len();
        p.pCounterData = image.as_mut_ptr();
        call!(self.fns, cuptiPmSamplingCounterDataImageInitialize, &mut p)
    }

    /// `cuptiPmSamplingDecodeData` into `image`; returns whether samples are left
    /// (`CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL`: the image is full).
    pub fn decode(&self, image: &mut [u8]) -> Result<bool> {
        let mut p = CUpti_PmSampling_DecodeData_Params::new();
        p.pPmSamplingObject = self.object;
        p.pCounterDataImage = image.as_mut_ptr();
        p.counterDataImageSize = image.len();
        call!(self.fns, cuptiPmSamplingDecodeData, &mut p)?;
        Ok(p.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
    }

    /// `cuptiPmSamplingCounterDataGetSampleInfo`: sample `index`'s start and end
    /// timestamps (ns).
    pub fn sample_times(&self, image: &[u8], index: usize) -> Result<(u64, u64)> {
        let mut p = CUpti_PmSampling_CounterData_GetSampleInfo_Params::new();
        p.pPmSamplingObject = self.object;
        p.pCounterDataImage = image.as_ptr();
        p.counterDataImageSize = image.len();
        p.sampleIndex = index;
        call!(self.fns, cuptiPmSamplingCounterDataGetSampleInfo, &mut p)?;
        Ok((p.startTimestamp, p.endTimestamp))
    }
}

impl Drop for PmSampler {
    fn drop(&mut self) {
        let mut p = CUpti_PmSampling_Disable_Params::new();
        p.pPmSamplingObject = self.object;
        let _ = call!(self.fns, cuptiPmSamplingDisable, &mut p);
    }
}

/// `cuptiPmSamplingGetCounterDataInfo`: the completed samples in `image`.
pub fn completed_samples(fns: &CuptiFns, image: &[u8]) -> Result<usize> {
    let mut p = CUpti_PmSampling_GetCounterDataInfo_Params::new();
    p.pCounterDataImage = image.as_ptr();
    p.counterDataImageSize = image.len();
    call!(fns, cuptiPmSamplingGetCounterDataInfo, &mut p)?;
    Ok(p.numCompletedSamples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_per_chip() {
        assert_eq!(Trigger::for_chip("GA100"), Trigger::SysClk);
        assert_eq!(Trigger::for_chip("TU102"), Trigger::SysClk);
        assert_eq!(Trigger::for_chip("GA102"), Trigger::GpuTime);
        assert_eq!(Trigger::for_chip("GH100"), Trigger::GpuTime);
        assert_eq!(Trigger::GpuTime.interval(100_000), 100_000);
        assert_eq!(Trigger::SysClk.interval(100_000), 100_000);
        assert_eq!(Trigger::SysClk.interval(0), 1);
    }
}
