//! Counter plans: which metrics, in which config images, for a chip and a mode.
//! The one implementation both counter modes of the injected library use, and that
//! `gpuprof metrics --cupti` and the tests against NVIDIA's libraries run offline.
//!
//! - Per-kernel counters, user replay: the chip's default pass groups
//!   ([`crate::metrics::default_groups`]) or the user's metrics as one group; each
//!   group one config image that must be exactly one pass.
//! - Per-kernel counters, kernel replay: every metric of the set in one config image,
//!   however many passes it needs (CUPTI replays the kernel per pass).
//! - PM sampling: the chip's sampling set ([`crate::metrics::sampling_metrics`]),
//!   metrics the Host API accepts for `CUPTI_PROFILER_TYPE_PM_SAMPLING`, or the
//!   user's; one config image of one pass.

use cupti_sys::CuptiFns;

use crate::profiler::{CallError, HostConfig, MetricNames, ProfilerType};

/// Why a plan could not be made.
#[derive(Debug, Clone)]
pub enum PlanError {
    /// The chip has no default set and no metrics were given.
    NoDefaults,
    /// A metric name holds a NUL byte.
    BadName,
    /// CUPTI refused this metric (found by adding the group's metrics one by one
    /// on a scratch host object), with the error of the group's call.
    Refused {
        metric: String,
        sampling: bool,
        error: CallError,
    },
    /// A call failed (for a refused group whose culprit could not be found: the
    /// AddMetrics call itself).
    Call(CallError),
    /// CUPTI accepted none of the default PM sampling metrics.
    NothingAccepted { refused: Vec<String> },
    /// This CUPTI lacks the profiler the mode needs: the range profiler
    /// (`cuptiRangeProfiler*`, absent from CUPTI 12.6 GA, API 24, which has PM
    /// sampling) or PM sampling (`cuptiPmSampling*`).
    Missing { sampling: bool },
    /// A group needs more than one pass where one is required.
    Passes {
        group: usize,
        metrics: Vec<String>,
        passes: usize,
        sampling: bool,
    },
}

impl PlanError {
    /// The error in words; `on` names the chip (and the GPU, where known).
    pub fn describe(&self, on: &str) -> String {
        match self {
            PlanError::NoDefaults => format!(
                "gpuprof has no default metric set for chip {on}; \
                 set GPUPROF_METRICS to choose metrics"
            ),
            PlanError::BadName => "a metric name holds a NUL byte".to_string(),
            PlanError::Refused {
                metric,
                sampling,
                error,
            } => format!(
                "CUPTI does not accept metric {metric} on {on}{}: {error}",
                if *sampling { " for PM sampling" } else { "" }
            ),
            PlanError::Call(e) => format!("{e} (chip {on})"),
            PlanError::Missing { sampling: false } => {
                "this CUPTI has no range profiler (cuptiRangeProfiler*, from CUPTI 12.6 \
                 Update 1 on; 12.6 GA lacks it), which per-kernel counters need: use a newer \
                 CUPTI, or GPUPROF_COUNTERS=sampling (PM sampling, which this CUPTI has)"
                    .to_string()
            }
            PlanError::Missing { sampling: true } => {
                "this CUPTI has no PM sampling (cuptiPmSampling*, from CUPTI 12.6 on)".to_string()
            }
            PlanError::NothingAccepted { refused } => format!(
                "this CUPTI accepts none of the PM sampling metrics on {on} ({})",
                refused.join(", ")
            ),
            PlanError::Passes {
                metrics,
                passes,
                sampling: true,
                ..
            } => format!(
                "the sampled metrics ({}) need {passes} passes on {on}; \
                 PM sampling takes one pass",
                metrics.join(", ")
            ),
            PlanError::Passes {
                group,
                metrics,
                passes,
                sampling: false,
            } => format!(
                "metric group {group} ({}) needs {passes} passes on {on}; \
                 each group must fit in one pass",
                metrics.join(", ")
            ),
        }
    }
}

/// What the plan is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Range profiler, pass groups rotated across launches.
    UserReplay,
    /// Range profiler, every metric on each measured launch.
    KernelReplay,
    /// PM sampling.
    Sampling,
}

impl Mode {
    fn profiler_type(self) -> ProfilerType {
        match self {
            Mode::UserReplay | Mode::KernelReplay => ProfilerType::RangeProfiler,
            Mode::Sampling => ProfilerType::PmSampling,
        }
    }
}

/// A chip's config images for one mode.
pub struct Plan {
    pub chip: String,
    pub mode: Mode,
    /// One host config per group, in group order.
    pub groups: Vec<HostConfig>,
    /// Default PM sampling metrics this CUPTI refused, replaced by their
    /// alternative or left out.
    pub refused: Vec<String>,
}

impl Plan {
    /// Passes of every group together.
    pub fn total_passes(&self) -> usize {
        self.groups.iter().map(HostConfig::passes).sum()
    }
}

/// The metric groups `mode` would use on `chip`: `metrics` as one group when given
/// (a lone preset name, e.g. `dcgm`, stands for its metrics on `chip`:
/// [`crate::metrics::presets`]), else the chip's defaults.
pub fn groups_for(
    chip: &str,
    mode: Mode,
    metrics: Option<&[String]>,
) -> Result<Vec<Vec<String>>, PlanError> {
    let owned = |g: &[&str]| g.iter().map(|m| m.to_string()).collect::<Vec<_>>();
    let groups: Vec<Vec<String>> = match (metrics, mode) {
        (Some(m), _) => vec![crate::metrics::presets::expand(
            m,
            chip,
            mode == Mode::Sampling,
        )],
        (None, Mode::Sampling) => vec![crate::metrics::sampling_metrics(chip)
            .ok_or(PlanError::NoDefaults)?
            .iter()
            .flat_map(|slot| slot[0].iter().map(|m| m.to_string()))
            .collect()],
        (None, _) => crate::metrics::default_groups(chip)
            .ok_or(PlanError::NoDefaults)?
            .iter()
            .map(|g| owned(g))
            .collect(),
    };
    Ok(match mode {
        Mode::KernelReplay => {
            let mut all: Vec<String> = Vec::new();
            for name in groups.into_iter().flatten() {
                if !all.contains(&name) {
                    all.push(name);
                }
            }
            vec![all]
        }
        _ => groups,
    })
}

/// One group's config image on `chip` (all its metrics in one AddMetrics call).
pub fn plan_group(
    fns: &'static CuptiFns,
    chip: &str,
    mode: Mode,
    names: &[String],
) -> Result<HostConfig, PlanError> {
    let metrics = MetricNames::new(names).ok_or(PlanError::BadName)?;
    HostConfig::new(fns, chip, mode.profiler_type(), metrics).map_err(|e| match e.metric {
        Some(metric) => PlanError::Refused {
            metric,
            sampling: mode == Mode::Sampling,
            error: e.error,
        },
        None => PlanError::Call(e.error),
    })
}

/// Every group of `mode` on `chip` as a config image, each checked: one pass, except
/// in kernel replay. The default PM sampling set takes, per slot, the first
/// alternative this CUPTI accepts (a slot none of whose alternatives is accepted is
/// left out); the metrics refused are in [`Plan::refused`].
pub fn plan(
    fns: &'static CuptiFns,
    chip: &str,
    mode: Mode,
    metrics: Option<&[String]>,
) -> Result<Plan, PlanError> {
    check_profiler(fns, mode)?;
    if mode == Mode::Sampling && metrics.is_none() {
        return plan_default_sampling(fns, chip);
    }
    let mut groups = Vec::new();
    for (i, names) in groups_for(chip, mode, metrics)?.iter().enumerate() {
        let host = plan_group(fns, chip, mode, names)?;
        check_passes(&host, i, names, mode)?;
        groups.push(host);
    }
    Ok(Plan {
        chip: chip.to_string(),
        mode,
        groups,
        refused: Vec::new(),
    })
}

/// The profiler `mode` runs on is in this CUPTI: every target-side call it makes
/// resolved from the library's symbols.
fn check_profiler(fns: &CuptiFns, mode: Mode) -> Result<(), PlanError> {
    let present = match mode {
        Mode::UserReplay | Mode::KernelReplay => {
            fns.cuptiRangeProfilerEnable.is_some()
                && fns.cuptiRangeProfilerSetConfig.is_some()
                && fns.cuptiRangeProfilerStart.is_some()
                && fns.cuptiRangeProfilerStop.is_some()
                && fns.cuptiRangeProfilerDecodeData.is_some()
        }
        Mode::Sampling => {
            fns.cuptiPmSamplingEnable.is_some()
                && fns.cuptiPmSamplingSetConfig.is_some()
                && fns.cuptiPmSamplingStart.is_some()
                && fns.cuptiPmSamplingDecodeData.is_some()
        }
    };
    if present {
        Ok(())
    } else {
        Err(PlanError::Missing {
            sampling: mode == Mode::Sampling,
        })
    }
}

fn check_passes(
    host: &HostConfig,
    group: usize,
    names: &[String],
    mode: Mode,
) -> Result<(), PlanError> {
    let passes = host.passes();
    if passes != 1 && mode != Mode::KernelReplay {
        return Err(PlanError::Passes {
            group,
            metrics: names.to_vec(),
            passes,
            sampling: mode == Mode::Sampling,
        });
    }
    Ok(())
}

fn plan_default_sampling(fns: &'static CuptiFns, chip: &str) -> Result<Plan, PlanError> {
    let slots = crate::metrics::sampling_metrics(chip).ok_or(PlanError::NoDefaults)?;
    // The alternative chosen per slot (past the end: the slot is left out).
    let mut choice = vec![0usize; slots.len()];
    let mut refused = Vec::new();
    loop {
        let names: Vec<String> = slots
            .iter()
            .zip(&choice)
            .filter_map(|(slot, &c)| slot.get(c))
            .flat_map(|alt| alt.iter().map(|m| m.to_string()))
            .collect();
        if names.is_empty() {
            return Err(PlanError::NothingAccepted { refused });
        }
        match plan_group(fns, chip, Mode::Sampling, &names) {
            Ok(host) => {
                check_passes(&host, 0, &names, Mode::Sampling)?;
                return Ok(Plan {
                    chip: chip.to_string(),
                    mode: Mode::Sampling,
                    groups: vec![host],
                    refused,
                });
            }
            Err(PlanError::Refused { metric, error, .. }) => {
                let slot = slots.iter().zip(&choice).position(|(slot, &c)| {
                    slot.get(c)
                        .is_some_and(|alt| alt.contains(&metric.as_str()))
                });
                match slot {
                    Some(i) => {
                        // The alternative goes: name each of its metrics CUPTI refuses
                        // (asked one by one; the first refusal stopped the group).
                        let alt = slots[i][choice[i]];
                        for m in alt.iter().map(|m| m.to_string()) {
                            let alone = std::slice::from_ref(&m);
                            if m == metric
                                || matches!(
                                    plan_group(fns, chip, Mode::Sampling, alone),
                                    Err(PlanError::Refused { .. })
                                )
                            {
                                refused.push(m);
                            }
                        }
                        choice[i] += 1;
                    }
                    // CUPTI named no metric of ours: give up with its error.
                    None => return Err(PlanError::Call(error)),
                }
            }
            Err(e) => return Err(e),
        }
    }
}
