//! The hardware FLOPs of the kernel rows of the roofline analysis
//! ([`super::efficiency`]), from FLOP counters: each counter's mean over the launches
//! of a (row, launch configuration) that measured it, scaled to all its launches; a
//! row has them only when every configuration measured every FLOP counter of the plan.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::analysis::aggregate::Aggregate;
use crate::analysis::classes::{Class, ClassKey};
use crate::analysis::flop_metrics::flop_metric;
use crate::analysis::names::dims;
use crate::analysis::precision::Math;

/// A launch configuration.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct LaunchConfig {
    grid: [i32; 3],
    block: [i32; 3],
}

impl LaunchConfig {
    const MIN: LaunchConfig = LaunchConfig {
        grid: [i32::MIN; 3],
        block: [i32::MIN; 3],
    };
    const MAX: LaunchConfig = LaunchConfig {
        grid: [i32::MAX; 3],
        block: [i32::MAX; 3],
    };

    /// The configuration of the launches of class `key`.
    fn of(key: &ClassKey) -> LaunchConfig {
        LaunchConfig {
            grid: key.grid,
            block: key.block,
        }
    }
}

/// The launches of one kernel row with one configuration (ordered by row, then
/// configuration).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct ConfigKey {
    row: usize,
    config: LaunchConfig,
}

/// The FLOP counters measured on the launches of one (row, configuration).
#[derive(Default)]
struct ConfigAcc {
    calls: u64,
    /// metric -> (launches, sum)
    metrics: BTreeMap<String, (u64, f64)>,
}

/// The FLOP counters measured on each (kernel row, launch configuration).
#[derive(Default)]
pub(super) struct ConfigCounters {
    configs: BTreeMap<ConfigKey, ConfigAcc>,
}

impl ConfigCounters {
    /// Counts the launches of class `c` of `a`, of kernel row `row`, in.
    pub(super) fn add(&mut self, a: &Aggregate, row: usize, c: &Class) {
        let key = ConfigKey {
            row,
            config: LaunchConfig::of(&c.key),
        };
        let acc = self.configs.entry(key).or_default();
        acc.calls += c.tally.calls;
        for (m, (n, sum)) in &c.flop_metrics {
            let e = acc
                .metrics
                .entry(a.metrics.name(*m).to_string())
                .or_default();
            e.0 += n;
            e.1 += sum;
        }
    }

    /// The configurations of row `row`, in order.
    fn of_row(&self, row: usize) -> Vec<(LaunchConfig, &ConfigAcc)> {
        let first = ConfigKey {
            row,
            config: LaunchConfig::MIN,
        };
        let last = ConfigKey {
            row,
            config: LaunchConfig::MAX,
        };
        self.configs
            .range(first..=last)
            .map(|(k, c)| (k.config, c))
            .collect()
    }
}

/// FLOPs by the precision and pipe they are in (`None`: unknown).
type ByMath = BTreeMap<Option<Math>, f64>;

/// Hardware FLOPs per launch of each (row, configuration), where they are complete.
pub(super) struct ConfigFlops {
    /// By math, for the (row, configuration)s on which every FLOP counter the plan
    /// has was measured.
    per_launch: HashMap<ConfigKey, ByMath>,
    /// Per row: configurations with FLOP counters but not all of them, with the ones
    /// never measured there.
    incomplete: HashMap<usize, Vec<(LaunchConfig, Vec<String>)>>,
}

impl ConfigFlops {
    /// The hardware FLOPs of the configurations of `counters`, the launches of row
    /// `row` having run in the processes `pids(row)` of `a`.
    pub(super) fn of<'p>(
        a: &Aggregate,
        counters: &ConfigCounters,
        pids: impl Fn(usize) -> &'p BTreeSet<u32>,
    ) -> ConfigFlops {
        let mut out = ConfigFlops {
            per_launch: HashMap::new(),
            incomplete: HashMap::new(),
        };
        for (key, c) in &counters.configs {
            let wanted: BTreeSet<&str> = pids(key.row)
                .iter()
                .filter_map(|pid| a.planned_flops.get(pid))
                .flatten()
                .map(String::as_str)
                .collect();
            let unmeasured: Vec<String> = wanted
                .iter()
                .filter(|m| !c.metrics.contains_key(**m))
                .map(|m| m.to_string())
                .collect();
            if !unmeasured.is_empty() {
                out.incomplete
                    .entry(key.row)
                    .or_default()
                    .push((key.config, unmeasured));
                continue;
            }
            let mut by_math = ByMath::new();
            for (metric, (n, sum)) in &c.metrics {
                if let Some((w, math)) = flop_metric(metric) {
                    *by_math.entry(math).or_default() += w * sum / *n as f64;
                }
            }
            out.per_launch.insert(*key, by_math);
        }
        out
    }

    /// The hardware FLOPs per launch of class `c` of row `row`, all maths together.
    pub(super) fn per_launch_of(&self, row: usize, c: &Class) -> Option<f64> {
        let key = ConfigKey {
            row,
            config: LaunchConfig::of(&c.key),
        };
        self.per_launch
            .get(&key)
            .map(|by_math| by_math.values().sum::<f64>())
    }
}

/// The hardware FLOPs of one kernel row: per configuration, per-launch FLOPs × its
/// launches, by math.
pub(super) struct RowHwFlops {
    row: usize,
    /// Some configuration of the row measured FLOP counters.
    pub(super) counted: bool,
    /// Every configuration measured every FLOP counter of the plan (and one did).
    complete: bool,
    by_math: ByMath,
    /// The fewest launches any FLOP counter came from (`u64::MAX` without any).
    launches: u64,
    /// The row's configurations.
    configs: usize,
}

impl RowHwFlops {
    /// The hardware FLOPs of row `row`, whose configurations `counters` has.
    pub(super) fn of(counters: &ConfigCounters, flops: &ConfigFlops, row: usize) -> RowHwFlops {
        let row_configs = counters.of_row(row);
        let counted = row_configs.iter().any(|(_, c)| !c.metrics.is_empty());
        let mut out = RowHwFlops {
            row,
            counted,
            complete: counted,
            by_math: ByMath::new(),
            launches: u64::MAX,
            configs: row_configs.len(),
        };
        for (config, c) in &row_configs {
            match flops.per_launch.get(&ConfigKey {
                row,
                config: *config,
            }) {
                Some(by_math) => {
                    for (m, f) in by_math {
                        *out.by_math.entry(*m).or_default() += f * c.calls as f64;
                    }
                    for (n, _) in c.metrics.values() {
                        out.launches = out.launches.min(*n);
                    }
                }
                None => out.complete = false,
            }
        }
        out
    }

    /// All maths together; `None` unless complete.
    pub(super) fn flops(&self) -> Option<f64> {
        self.complete.then(|| self.by_math.values().sum::<f64>())
    }

    /// The fewest launches any FLOP counter came from; 0 without FLOPs.
    pub(super) fn launches(&self) -> u64 {
        if self.flops().is_some() {
            self.launches
        } else {
            0
        }
    }

    /// The known math with the most FLOPs.
    pub(super) fn math(&self) -> Option<Math> {
        self.by_math
            .iter()
            .filter(|(m, v)| m.is_some() && **v > 0.0)
            .max_by(|a, b| a.1.total_cmp(b.1))
            .and_then(|(m, _)| *m)
    }

    /// Why the row has no hardware FLOPs though it measured FLOP counters
    /// (`flops` were made from the same counters): the configurations whose FLOP
    /// counters were not all measured.
    pub(super) fn incomplete(&self, flops: &ConfigFlops) -> Option<String> {
        if !self.counted || self.complete {
            return None;
        }
        let list = flops.incomplete.get(&self.row)?;
        let configs = self.configs;
        let (config, unmeasured) = &list[0];
        Some(
            format!(
                "no hw FLOPs: FLOP counters never measured on {} of its {} launch \
                 configuration{} (grid {}, block {}: {}{})",
                list.len(),
                configs,
                if configs == 1 { "" } else { "s" },
                dims(config.grid),
                dims(config.block),
                unmeasured.join(", "),
                if list.len() > 1 { "; and others" } else { "" }
            ) + "; the pass groups rotate over a kernel's launches: a longer run, or \
                 GPUPROF_REPLAY=kernel (every group on each measured launch), gives them",
        )
    }
}
