//! Per-class counter rates from PM sampling windows, by deconvolution.
//!
//! A PM sampling window is GPU-wide: its value of a metric is what every kernel that
//! ran in it added. Splitting it in proportion to overlap time ([`super::sampled`])
//! assumes every kernel moves bytes at the same rate, which is false exactly where it
//! matters (a GEMV next to an RMS norm). Here each kernel **class**
//! ([`super::classes`]) gets its own rate `x_c` (units per ns of kernel time), and the
//! windows of one (process, device, metric) give the equations
//!
//! ```text
//! y_w = Σ_c x_c · O_{w,c}        O_{w,c}: overlap of class c's launches with window w, ns
//! ```
//!
//! solved as non-negative least squares, `min ||O x − y||², x ≥ 0`.
//!
//! **The amount `y_w` of a window**, from its value `v`, matching how the simulated
//! PM sampler (and the hardware) forms it (`tests/sim/cupti/src/pm_sampling.rs`,
//! `profiling.rs` `combine`), by the rollup after the metric's first `.`:
//! - `.pct_of_peak_sustained_active`: the mean of the kernels' values weighted by
//!   their overlap, so `y = v · Σ_c O_{w,c}`; `x_c` is the class's own value;
//! - other ratios (`pct`, `ratio`, `per_second`, `per_cycle`): the kernels' values
//!   weighted by overlap over the window's length, so `y = v · (end − start)`; `x_c` is
//!   the class's own value;
//! - `.max`, `.min`: not invertible, not fitted;
//! - anything else (`.sum`, and `.avg` over units of a counter): an amount, `y = v`;
//!   `x_c` is per ns, so a launch's amount is `x_c` × its duration.
//!
//! **Bounded memory.** The windows are never held: each adds to the normal equations
//! of its (process, device, metric), the sparse Gram matrix `G = OᵀO` (one entry per
//! pair of classes that ran in a common window), `b = Oᵀy` and `Σ y²`, and per class
//! the windows it ran in and its overlap. A window with more than
//! [`MAX_WINDOW_CLASSES`] classes, one that would take a fit past [`MAX_PAIRS`] pairs,
//! and metrics beyond [`MAX_METRICS`] per device are left out and counted, as are
//! values that are not finite numbers.
//!
//! **Solving.** With at most [`MAX_DENSE`] classes: a pivoted Cholesky factorisation
//! of `G` finds the classes whose column is (nearly) a combination of others', then
//! Lawson–Hanson's active-set method solves the rest exactly. With more: projected
//! cyclic coordinate descent on the sparse `G`, to a relative change of
//! [`TOLERANCE`] or a bounded amount of work. Both are deterministic.
//!
//! **Precision.** With the dense solve, each class also gets a standard error: the
//! windows' misfit `s² = ‖Ox − y‖² / (windows − classes with a positive rate)` times
//! the class's diagonal entry of `G⁻¹` over the classes solved for (ordinary least
//! squares' variance; it takes the misfit as independent noise, which a real GPU's
//! caches and write-backs are not, so it is a floor on the error, not a bound).
//! Coordinate descent gives none.
//!
//! **When a class is not determined** it gets no estimate (never 0), and a reason:
//! - it ran in fewer than [`MIN_WINDOWS`] windows ([`Undetermined::Support`]);
//! - its column is collinear with another class's, `G_ij / √(G_ii G_jj) > 1 − 10⁻⁶`
//!   (two kernels that always run together in fixed proportions), or nearly a
//!   combination of other columns (the pivoted factorisation's remaining diagonal
//!   under `2·10⁻⁶` of `G_jj`, the same bound for a pair): [`Undetermined::Collinear`],
//!   naming the other class. The fit keeps one class of such a group, so the windows'
//!   amounts are still explained; every class in the combination that makes a
//!   dependent column is undetermined too, as its estimate takes a share of that
//!   column's amounts (a weight over 10⁻⁶ of the heaviest's);
//! - its 95% interval (± 2 standard errors) is wider than half of its estimate, the
//!   estimate taken as at least a tenth of the fit's mean rate (`Σ y / Σ kernel time
//!   in windows`) so that a class that moves next to nothing can be determined as
//!   that: [`Undetermined::Imprecise`]. On an H200, decode GEMVs that run in the same
//!   order every step got 0 ± 5 MB per launch from 150 windows: not a value.
//!
//! The fit's residual is `√(‖Ox − y‖² / Σy²)` (RMS of the misfit relative to the RMS of
//! the amounts), from `G`, `b` and `Σy²`.

use std::collections::BTreeMap;

use ahash::AHashMap;
use serde::Serialize;

use super::sampled::Window;

/// A class needs this many windows for an estimate.
pub const MIN_WINDOWS: u64 = 2;
/// A class's standard error may be at most this share of its estimate (floored at
/// [`MEAN_FLOOR`] of the mean rate): 2 standard errors within half the estimate.
pub const MAX_RELATIVE_ERROR: f64 = 0.25;
/// The share of the fit's mean rate under which an estimate counts as that share.
pub const MEAN_FLOOR: f64 = 0.1;
/// Two columns with a cosine above `1 − COLLINEAR` cannot be told apart.
pub const COLLINEAR: f64 = 1e-6;
/// Metrics fitted per (process, device); more are left out.
pub const MAX_METRICS: usize = 64;
/// Classes one window may overlap to be fitted.
pub const MAX_WINDOW_CLASSES: usize = 512;
/// Pairs of classes one fit may hold.
pub const MAX_PAIRS: usize = 1 << 18;
/// The most classes of one fit solved densely.
pub const MAX_DENSE: usize = 256;
/// Relative change at which coordinate descent stops.
pub const TOLERANCE: f64 = 1e-13;
/// Coordinate descent's budget: sweeps times (classes + pairs).
const MAX_WORK: usize = 200_000_000;

/// How a window's value of a metric relates to the kernels in it (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    /// Added over time: `y = value`; the estimate is per ns of kernel time.
    Amount,
    /// `.pct_of_peak_sustained_active`: `y = value × kernel time in the window`.
    RatioActive,
    /// Other ratios: `y = value × window length`.
    RatioElapsed,
}

impl MetricKind {
    /// The kind of `metric`; `None` for `.max` and `.min`, which cannot be fitted,
    /// and for the GPU time, which is a window's own length, not kernel work (every
    /// window on an H200 read its length, idle ones too).
    pub fn of(metric: &str) -> Option<MetricKind> {
        if metric.starts_with("gpu__time_duration.") {
            return None;
        }
        let rollup = metric.split_once('.').map_or("", |(_, r)| r);
        if rollup.contains("pct_of_peak_sustained_active") {
            Some(MetricKind::RatioActive)
        } else if ["pct", "ratio", "per_second", "per_cycle"]
            .iter()
            .any(|r| rollup.contains(r))
        {
            Some(MetricKind::RatioElapsed)
        } else if rollup == "max" || rollup == "min" {
            None
        } else {
            Some(MetricKind::Amount)
        }
    }

    /// The amount a window's `value` stands for.
    fn amount(self, value: f64, busy_ns: u64, length_ns: u64) -> f64 {
        match self {
            MetricKind::Amount => value,
            MetricKind::RatioActive => value * busy_ns as f64,
            MetricKind::RatioElapsed => value * length_ns as f64,
        }
    }
}

/// One launch, as the fit sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassSpan {
    pub pid: u32,
    pub device_id: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// The aggregate's class index.
    pub class: usize,
}

/// Why a class has no estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum Undetermined {
    /// It ran in fewer than [`MIN_WINDOWS`] windows.
    Support { windows: u64 },
    /// Its column cannot be told apart from the one of class `with` (or a combination
    /// that includes it).
    Collinear { with: usize },
    /// The solver gave no finite value (a fit too ill-conditioned for f64).
    Unsolved,
    /// Its standard error is over [`MAX_RELATIVE_ERROR`] of its estimate (module doc).
    Imprecise,
}

impl Undetermined {
    /// In words, naming another class with `name_of`.
    pub fn describe(&self, name_of: impl Fn(usize) -> String) -> String {
        match *self {
            Undetermined::Support { windows } => format!(
                "ran in {windows} sampling window{}, {MIN_WINDOWS} needed",
                if windows == 1 { "" } else { "s" }
            ),
            Undetermined::Collinear { with } => format!(
                "cannot be told apart from {} (they run together in fixed proportions)",
                name_of(with)
            ),
            Undetermined::Unsolved => "the fit gave no finite value".to_string(),
            Undetermined::Imprecise => "the windows do not pin it down: its 95% interval \
                (2 standard errors) is wider than half its estimate (a longer run, or \
                GPUPROF_COUNTERS=kernel in an eager run, measures it)"
                .to_string(),
        }
    }
}

/// One class in one fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassFit {
    pub class: usize,
    /// Windows it ran in, and its kernel time inside them.
    pub windows: u64,
    pub overlap_ns: u64,
    /// Per ns of kernel time for an amount, the class's value for a ratio; `None` when
    /// undetermined.
    pub estimate: Option<f64>,
    /// The estimate's standard error (module doc), in its units; `None` from
    /// coordinate descent, or when not determined for another reason.
    pub std_error: Option<f64>,
    pub undetermined: Option<Undetermined>,
    /// What the overlap split ([`super::sampled`]) gives the class, for comparison:
    /// for an amount, its shares of the windows added up; for a ratio, the windows'
    /// values weighted by its overlap.
    pub split: f64,
}

/// The fit of one metric of one (process, device).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricFit {
    pub pid: u32,
    pub device_id: u32,
    pub metric: String,
    pub kind: MetricKind,
    /// Windows that carried the metric (with or without kernels).
    pub windows: u64,
    /// RMS misfit relative to the RMS amount; `None` when every amount is 0.
    pub residual: Option<f64>,
    /// "lawson-hanson" or "coordinate descent".
    pub method: &'static str,
    /// By class index.
    pub classes: Vec<ClassFit>,
}

/// What was left out of the fits, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct LeftOut {
    /// Window values that are not finite numbers, or whose amount's square is not.
    pub not_finite: u64,
    /// Window values of a window with more than [`MAX_WINDOW_CLASSES`] classes, or one
    /// that would take its fit past [`MAX_PAIRS`].
    pub crowded: u64,
    /// Window values of metrics beyond [`MAX_METRICS`] per device.
    pub metrics: u64,
    /// Windows whose GPU time (`gpu__time_duration.sum`) exceeds their length: the
    /// first sample after a PM sampling start on an H200 claimed to start seconds
    /// before it, with its GPU time counted from 0. Left out of the split too.
    pub inconsistent: u64,
}

/// Every fit of a session.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Fitted {
    /// By pid, device, metric name.
    pub fits: Vec<MetricFit>,
    pub left_out: LeftOut,
}

impl Fitted {
    /// The fit of `metric` for `class`, with its class entry.
    pub fn class(&self, class: usize, metric: &str) -> Option<(&MetricFit, &ClassFit)> {
        self.fits
            .iter()
            .filter(|f| f.metric == metric)
            .find_map(|f| {
                let i = f.classes.binary_search_by_key(&class, |c| c.class).ok()?;
                Some((f, &f.classes[i]))
            })
    }

    /// The estimate of `metric` for `class`, when determined.
    pub fn estimate(&self, class: usize, metric: &str) -> Option<f64> {
        self.class(class, metric).and_then(|(_, c)| c.estimate)
    }

    /// Whether any fit holds `metric`.
    pub fn has(&self, metric: &str) -> bool {
        self.fits.iter().any(|f| f.metric == metric)
    }
}

/// The normal equations of one (process, device, metric).
struct Problem {
    kind: MetricKind,
    windows: u64,
    /// Σ y².
    yy: f64,
    /// Σ y and Σ kernel time over the windows (the mean rate's terms).
    sum_y: f64,
    sum_busy: f64,
    /// Oᵀy by class.
    b: AHashMap<usize, f64>,
    /// OᵀO by (class, class), the smaller first.
    gram: AHashMap<(usize, usize), f64>,
    /// By class: windows, overlap ns, and what the overlap split gives it (shares of
    /// amounts, or Σ value × overlap for ratios).
    support: AHashMap<usize, (u64, u64, f64)>,
}

impl Problem {
    fn new(kind: MetricKind) -> Problem {
        Problem {
            kind,
            windows: 0,
            yy: 0.0,
            sum_y: 0.0,
            sum_busy: 0.0,
            b: AHashMap::new(),
            gram: AHashMap::new(),
            support: AHashMap::new(),
        }
    }

    /// Adds one window's `value`, its amount `y` and its overlaps (by class,
    /// ascending, `busy` ns in all); `false` when it would take the fit past
    /// [`MAX_PAIRS`].
    fn add(&mut self, overlaps: &[(usize, u64)], busy: u64, value: f64, y: f64) -> bool {
        let new_pairs = pairs(overlaps)
            .filter(|(i, j, _)| !self.gram.contains_key(&(*i, *j)))
            .count();
        if self.gram.len() + new_pairs > MAX_PAIRS {
            return false;
        }
        self.windows += 1;
        self.yy += y * y;
        self.sum_y += y;
        self.sum_busy += busy as f64;
        for &(c, o) in overlaps {
            *self.b.entry(c).or_default() += o as f64 * y;
            let s = self.support.entry(c).or_default();
            s.0 += 1;
            s.1 = s.1.saturating_add(o);
            s.2 += match self.kind {
                MetricKind::Amount => y * o as f64 / busy.max(1) as f64,
                _ => value * o as f64,
            };
        }
        for (i, j, g) in pairs(overlaps) {
            *self.gram.entry((i, j)).or_default() += g;
        }
        true
    }
}

/// Every pair (i ≤ j) of `overlaps` with the product of their overlaps.
fn pairs(overlaps: &[(usize, u64)]) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
    overlaps.iter().enumerate().flat_map(move |(n, &(i, oi))| {
        overlaps[n..]
            .iter()
            .map(move |&(j, oj)| (i, j, oi as f64 * oj as f64))
    })
}

/// Window-by-window accumulation of the fits: [`Deconvolver::add`] windows with every
/// launch that may overlap them (each window once), then [`Deconvolver::finish`].
#[derive(Default)]
pub struct Deconvolver {
    /// (pid, device) -> metric -> its equations.
    devices: BTreeMap<(u32, u32), BTreeMap<String, Problem>>,
    left_out: LeftOut,
}

impl Deconvolver {
    /// Adds `windows`, with the launches of `spans` that overlap them.
    pub fn add(&mut self, spans: &[ClassSpan], windows: &[Window]) {
        type Device<'s> = (Vec<&'s ClassSpan>, Vec<&'s Window>);
        let mut by_device: BTreeMap<(u32, u32), Device> = BTreeMap::new();
        for w in windows {
            by_device.entry((w.pid, w.device_id)).or_default().1.push(w);
        }
        for s in spans.iter().filter(|s| s.end_ns > s.start_ns) {
            if let Some(d) = by_device.get_mut(&(s.pid, s.device_id)) {
                d.0.push(s);
            }
        }
        for (key, (mut spans, mut windows)) in by_device {
            spans.sort_by_key(|s| (s.start_ns, s.end_ns));
            windows.sort_by_key(|w| (w.start_ns, w.end_ns));
            let mut next = 0;
            let mut active: Vec<&ClassSpan> = Vec::new();
            for w in windows {
                while next < spans.len() && spans[next].start_ns < w.end_ns {
                    active.push(spans[next]);
                    next += 1;
                }
                active.retain(|s| s.end_ns > w.start_ns);
                let overlaps = overlaps(&active, w.start_ns, w.end_ns);
                self.add_window(key, w, &overlaps);
            }
        }
    }

    /// Counts `n` windows left out as inconsistent ([`LeftOut::inconsistent`]).
    pub fn leave_out_inconsistent(&mut self, n: u64) {
        self.left_out.inconsistent += n;
    }

    /// One window's values into the fits of its device.
    fn add_window(&mut self, key: (u32, u32), w: &Window, overlaps: &[(usize, u64)]) {
        let busy = overlaps.iter().fold(0u64, |s, (_, o)| s.saturating_add(*o));
        let length = w.end_ns.saturating_sub(w.start_ns);
        let problems = self.devices.entry(key).or_default();
        for (metric, value) in &w.metrics {
            let Some(kind) = MetricKind::of(metric) else {
                continue;
            };
            let y = kind.amount(*value, busy, length);
            // Its square must be finite too: Σy² is the residual's scale.
            if !(y * y).is_finite() {
                self.left_out.not_finite += 1;
                continue;
            }
            if overlaps.len() > MAX_WINDOW_CLASSES {
                self.left_out.crowded += 1;
                continue;
            }
            if !problems.contains_key(metric.as_str()) {
                if problems.len() >= MAX_METRICS {
                    self.left_out.metrics += 1;
                    continue;
                }
                problems.insert(metric.clone(), Problem::new(kind));
            }
            let Some(problem) = problems.get_mut(metric.as_str()) else {
                continue;
            };
            if !problem.add(overlaps, busy, *value, y) {
                self.left_out.crowded += 1;
            }
        }
    }

    /// Solves every fit.
    pub fn finish(self) -> Fitted {
        let mut fits = Vec::new();
        for ((pid, device_id), problems) in self.devices {
            for (metric, p) in problems {
                let (classes, residual, method) = solve(&p);
                fits.push(MetricFit {
                    pid,
                    device_id,
                    metric,
                    kind: p.kind,
                    windows: p.windows,
                    residual,
                    method,
                    classes,
                });
            }
        }
        Fitted {
            fits,
            left_out: self.left_out,
        }
    }
}

/// The overlap of each class's `active` launches with `[start, end)`, by class.
fn overlaps(active: &[&ClassSpan], start: u64, end: u64) -> Vec<(usize, u64)> {
    let mut out: Vec<(usize, u64)> = active
        .iter()
        .filter_map(|s| {
            let (a, b) = (s.start_ns.max(start), s.end_ns.min(end));
            (b > a).then(|| (s.class, b - a))
        })
        .collect();
    out.sort_unstable();
    out.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 = kept.1.saturating_add(later.1);
        }
        same
    });
    out
}

/// The equations of one fit over its classes, numbered 0..n in class order.
struct System {
    classes: Vec<usize>,
    diag: Vec<f64>,
    b: Vec<f64>,
    /// (i, j, G_ij) for i < j.
    off: Vec<(usize, usize, f64)>,
}

impl System {
    fn of(p: &Problem) -> System {
        let mut classes: Vec<usize> = p.support.keys().copied().collect();
        classes.sort_unstable();
        let index: AHashMap<usize, usize> =
            classes.iter().enumerate().map(|(i, c)| (*c, i)).collect();
        let mut diag = vec![0.0; classes.len()];
        let mut off = Vec::new();
        for (&(ci, cj), &g) in &p.gram {
            let (Some(&i), Some(&j)) = (index.get(&ci), index.get(&cj)) else {
                continue;
            };
            if i == j {
                diag[i] = g;
            } else {
                off.push((i.min(j), i.max(j), g));
            }
        }
        off.sort_by_key(|a| (a.0, a.1));
        let b = classes
            .iter()
            .map(|c| p.b.get(c).copied().unwrap_or(0.0))
            .collect();
        System {
            classes,
            diag,
            b,
            off,
        }
    }

    fn n(&self) -> usize {
        self.classes.len()
    }

    /// G as a dense row-major matrix.
    fn dense(&self) -> Vec<f64> {
        let n = self.n();
        let mut g = vec![0.0; n * n];
        for (i, d) in self.diag.iter().enumerate() {
            g[i * n + i] = *d;
        }
        for &(i, j, v) in &self.off {
            g[i * n + j] = v;
            g[j * n + i] = v;
        }
        g
    }

    /// ‖Ox − y‖² / Σy², square-rooted; `None` when Σy² is 0.
    fn residual(&self, x: &[f64], yy: f64) -> Option<f64> {
        if yy <= 0.0 {
            return None;
        }
        Some((self.misfit(x, yy) / yy).sqrt())
    }

    /// ‖Ox − y‖², from G, b and Σy².
    fn misfit(&self, x: &[f64], yy: f64) -> f64 {
        let mut xgx: f64 = self.diag.iter().zip(x).map(|(d, v)| d * v * v).sum();
        xgx += 2.0
            * self
                .off
                .iter()
                .map(|&(i, j, g)| g * x[i] * x[j])
                .sum::<f64>();
        let bx: f64 = self.b.iter().zip(x).map(|(b, v)| b * v).sum();
        (xgx - 2.0 * bx + yy).max(0.0)
    }
}

/// The fit of one problem: per class, its residual and the method used.
fn solve(p: &Problem) -> (Vec<ClassFit>, Option<f64>, &'static str) {
    let s = System::of(p);
    let mut why: Vec<Option<Undetermined>> = s
        .classes
        .iter()
        .map(|c| {
            let windows = p.support.get(c).map_or(0, |w| w.0);
            (windows < MIN_WINDOWS).then_some(Undetermined::Support { windows })
        })
        .collect();
    let mut fixed = vec![false; s.n()];
    collinear_pairs(&s, &mut why, &mut fixed);
    let (x, errors, method) = if s.n() <= MAX_DENSE {
        let g = s.dense();
        dependent_columns(&g, &s, &mut why, &mut fixed);
        let x = lawson_hanson(&g, &s.b, &fixed);
        let errors = std_errors(&g, &s, &x, &fixed, p);
        (x, errors, "lawson-hanson")
    } else {
        let x = coordinate_descent(&s, &fixed);
        (x, vec![None; s.n()], "coordinate descent")
    };
    let mean = if p.sum_busy > 0.0 {
        p.sum_y / p.sum_busy
    } else {
        0.0
    };
    let residual = s.residual(&x, p.yy);
    let classes = s
        .classes
        .iter()
        .enumerate()
        .map(|(i, &class)| {
            let (windows, overlap_ns, split) = p.support.get(&class).copied().unwrap_or_default();
            let why = why[i]
                .map(|u| match u {
                    Undetermined::Collinear { with } => Undetermined::Collinear {
                        with: s.classes[with],
                    },
                    other => other,
                })
                .or((!x[i].is_finite()).then_some(Undetermined::Unsolved))
                .or(errors[i]
                    .is_some_and(|se| se > MAX_RELATIVE_ERROR * x[i].max(MEAN_FLOOR * mean))
                    .then_some(Undetermined::Imprecise));
            let kept = !matches!(why, Some(u) if u != Undetermined::Imprecise);
            ClassFit {
                class,
                windows,
                overlap_ns,
                estimate: if why.is_none() { Some(x[i]) } else { None },
                std_error: errors[i].filter(|_| kept),
                undetermined: why,
                split: match p.kind {
                    MetricKind::Amount => split,
                    _ => split / overlap_ns.max(1) as f64,
                },
            }
        })
        .collect();
    (classes, residual, method)
}

/// Marks both classes of every pair whose cosine exceeds `1 − COLLINEAR`; the later
/// one of each pair is left out of the solve (`fixed`), the earlier one stands for
/// both. (Reasons name local indices until [`solve`] maps them.)
fn collinear_pairs(s: &System, why: &mut [Option<Undetermined>], fixed: &mut [bool]) {
    for &(i, j, g) in &s.off {
        let cos = g / (s.diag[i] * s.diag[j]).sqrt();
        if cos > 1.0 - COLLINEAR {
            why[i].get_or_insert(Undetermined::Collinear { with: j });
            why[j].get_or_insert(Undetermined::Collinear { with: i });
            if !fixed[i] {
                fixed[j] = true;
            }
        }
    }
}

/// Pivoted Cholesky of `g` over the classes not yet `fixed`: a column whose remaining
/// diagonal falls under `2·COLLINEAR` of its own is a combination of the pivots; it is
/// fixed and marked, with the pivot that weighs most in the combination (and that
/// pivot is marked too).
fn dependent_columns(g: &[f64], s: &System, why: &mut [Option<Undetermined>], fixed: &mut [bool]) {
    let n = s.n();
    let mut rest: Vec<f64> = s.diag.clone();
    // l[i][k]: row i of the factor, column k (the k-th pivot).
    let mut l: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut pivots: Vec<usize> = Vec::new();
    let mut open: Vec<usize> = (0..n).filter(|&i| !fixed[i]).collect();
    while let Some((pos, &j)) = open
        .iter()
        .enumerate()
        .max_by(|a, b| (rest[*a.1] / s.diag[*a.1]).total_cmp(&(rest[*b.1] / s.diag[*b.1])))
    {
        if rest[j] / s.diag[j] < 2.0 * COLLINEAR {
            break;
        }
        open.swap_remove(pos);
        let pivot = rest[j].sqrt();
        for &i in &open {
            let dot: f64 = l[i].iter().zip(&l[j]).map(|(a, b)| a * b).sum();
            let v = (g[i * n + j] - dot) / pivot;
            l[i].push(v);
            rest[i] -= v * v;
        }
        l[j].push(pivot);
        pivots.push(j);
    }
    for j in open {
        fixed[j] = true;
        let combination = combination_of(&l, &pivots, j, &s.diag);
        let with = combination.first().map_or(j, |&(k, _)| k);
        why[j].get_or_insert(Undetermined::Collinear { with });
        // Every pivot in the combination takes a share of column j's amounts while j
        // is held at 0: none of them is determined.
        let heaviest = combination.first().map_or(0.0, |&(_, w)| w);
        for &(k, w) in &combination {
            if w > COMBINATION_SHARE * heaviest {
                why[k].get_or_insert(Undetermined::Collinear { with: j });
            }
        }
    }
}

/// A pivot whose weight in a dependent column's combination is over this share of
/// the heaviest's is undetermined with it.
const COMBINATION_SHARE: f64 = 1e-6;

/// The pivots of the combination that makes column `j`, `c = L_S⁻ᵀ l_j`, with their
/// weights (|c_k| times the pivot's column norm), heaviest first.
fn combination_of(l: &[Vec<f64>], pivots: &[usize], j: usize, diag: &[f64]) -> Vec<(usize, f64)> {
    let r = pivots.len().min(l[j].len());
    let mut c = vec![0.0; r];
    for k in (0..r).rev() {
        let mut v = l[j][k];
        for (m, cm) in c.iter().enumerate().skip(k + 1) {
            v -= l[pivots[m]][k] * cm;
        }
        c[k] = v / l[pivots[k]][k];
    }
    let mut out: Vec<(usize, f64)> = (0..r)
        .map(|k| (pivots[k], c[k].abs() * diag[pivots[k]].sqrt()))
        .filter(|(_, w)| *w > 0.0 && w.is_finite())
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// Lawson–Hanson's active-set NNLS on the normal equations (`g` dense n×n, `b`), the
/// `fixed` classes held at 0.
fn lawson_hanson(g: &[f64], b: &[f64], fixed: &[bool]) -> Vec<f64> {
    let n = b.len();
    let mut x = vec![0.0; n];
    let mut set: Vec<usize> = Vec::new();
    let scale = (0..n)
        .map(|i| b[i].abs() / g[i * n + i].sqrt())
        .fold(0.0, f64::max);
    for _ in 0..3 * n + 3 {
        let w = gradient(g, b, &x);
        let entering = (0..n)
            .filter(|i| !fixed[*i] && !set.contains(i))
            .map(|i| (i, w[i] / g[i * n + i].sqrt()))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        match entering {
            Some((i, w)) if w > 1e-12 * scale => set.push(i),
            _ => break,
        }
        if !inner_loop(g, b, &mut x, &mut set) {
            break;
        }
    }
    x
}

/// `b − Gx`.
fn gradient(g: &[f64], b: &[f64], x: &[f64]) -> Vec<f64> {
    let n = b.len();
    (0..n)
        .map(|i| b[i] - (0..n).map(|j| g[i * n + j] * x[j]).sum::<f64>())
        .collect()
}

/// Lawson–Hanson's inner loop: the least-squares solution on `set`, stepped back to
/// stay non-negative, dropping classes that reach 0. `false` when a subsystem cannot
/// be solved (the last feasible `x` stands).
fn inner_loop(g: &[f64], b: &[f64], x: &mut [f64], set: &mut Vec<usize>) -> bool {
    for _ in 0..=set.len() + 1 {
        let Some(z) = cholesky_solve(g, b, set) else {
            set.pop();
            return false;
        };
        if z.iter().all(|v| *v > 0.0) {
            for (&i, v) in set.iter().zip(&z) {
                x[i] = *v;
            }
            return true;
        }
        let alpha = set
            .iter()
            .zip(&z)
            .filter(|(&i, v)| **v <= 0.0 && x[i] - **v > 0.0)
            .map(|(&i, v)| x[i] / (x[i] - v))
            .fold(1.0, f64::min);
        for (&i, v) in set.iter().zip(&z) {
            x[i] += alpha * (v - x[i]);
        }
        set.retain(|&i| x[i] > 0.0);
        for (i, v) in x.iter_mut().enumerate() {
            if !set.contains(&i) {
                *v = 0.0;
            }
        }
    }
    true
}

/// Each solved (not `fixed`) class's standard error, `√(s² (G_SS⁻¹)_kk)` with
/// `s² = ‖Ox − y‖² / (windows − positive rates)` (module doc); `None` for the fixed
/// classes, and for all when `G_SS` is not positive definite.
fn std_errors(g: &[f64], s: &System, x: &[f64], fixed: &[bool], p: &Problem) -> Vec<Option<f64>> {
    let n = s.n();
    let mut out = vec![None; n];
    let set: Vec<usize> = (0..n).filter(|&i| !fixed[i]).collect();
    let Some(l) = cholesky(g, n, &set) else {
        return out;
    };
    let positive = x.iter().filter(|v| **v > 0.0).count() as u64;
    let dof = p.windows.saturating_sub(positive).max(1) as f64;
    let s2 = s.misfit(x, p.yy) / dof;
    let m = set.len();
    let mut z = vec![0.0; m];
    for (k, &i) in set.iter().enumerate() {
        // (G_SS⁻¹)_kk = ‖L⁻¹ e_k‖²: forward substitution from row k.
        let mut sum = 0.0;
        for r in k..m {
            let rhs = if r == k { 1.0 } else { 0.0 };
            let dot: f64 = (k..r).map(|c| l[r * m + c] * z[c]).sum();
            z[r] = (rhs - dot) / l[r * m + r];
            sum += z[r] * z[r];
        }
        out[i] = Some((s2 * sum).sqrt()).filter(|v| v.is_finite());
    }
    out
}

/// The Cholesky factor `L` (m×m, row-major) of `G_SS`, `g` dense n×n; `None` when
/// `G_SS` is not positive definite.
fn cholesky(g: &[f64], n: usize, set: &[usize]) -> Option<Vec<f64>> {
    let m = set.len();
    let mut l = vec![0.0; m * m];
    for r in 0..m {
        for c in 0..=r {
            let dot: f64 = (0..c).map(|k| l[r * m + k] * l[c * m + k]).sum();
            let v = g[set[r] * n + set[c]] - dot;
            if r == c {
                if v <= 0.0 || !v.is_finite() {
                    return None;
                }
                l[r * m + r] = v.sqrt();
            } else {
                l[r * m + c] = v / l[c * m + c];
            }
        }
    }
    Some(l)
}

/// Solves `G_SS z = b_S` by Cholesky; `None` when `G_SS` is not positive definite.
fn cholesky_solve(g: &[f64], b: &[f64], set: &[usize]) -> Option<Vec<f64>> {
    let (n, m) = (b.len(), set.len());
    let l = cholesky(g, n, set)?;
    let mut z: Vec<f64> = set.iter().map(|&i| b[i]).collect();
    for r in 0..m {
        let dot: f64 = (0..r).map(|k| l[r * m + k] * z[k]).sum();
        z[r] = (z[r] - dot) / l[r * m + r];
    }
    for r in (0..m).rev() {
        let dot: f64 = (r + 1..m).map(|k| l[k * m + r] * z[k]).sum();
        z[r] = (z[r] - dot) / l[r * m + r];
    }
    Some(z)
}

/// Projected cyclic coordinate descent on the sparse system, the `fixed` classes held
/// at 0: sweeps until no coordinate moves by more than [`TOLERANCE`] of the largest
/// (each weighed by its column norm), or the work budget is spent.
fn coordinate_descent(s: &System, fixed: &[bool]) -> Vec<f64> {
    let n = s.n();
    let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for &(i, j, g) in &s.off {
        rows[i].push((j, g));
        rows[j].push((i, g));
    }
    let mut x = vec![0.0; n];
    let mut w = s.b.clone();
    let sweeps = MAX_WORK / (n + 2 * s.off.len()).max(1);
    for _ in 0..sweeps.max(1) {
        let (mut moved, mut largest) = (0.0f64, 0.0f64);
        for i in (0..n).filter(|i| !fixed[*i]) {
            let next = (x[i] + w[i] / s.diag[i]).max(0.0);
            let delta = next - x[i];
            if delta != 0.0 {
                x[i] = next;
                w[i] -= s.diag[i] * delta;
                for &(j, g) in &rows[i] {
                    w[j] -= g * delta;
                }
            }
            let norm = s.diag[i].sqrt();
            moved = moved.max(delta.abs() * norm);
            largest = largest.max(x[i] * norm);
        }
        if moved <= TOLERANCE * largest {
            break;
        }
    }
    x
}

#[cfg(test)]
#[path = "deconvolve_tests.rs"]
mod tests;
