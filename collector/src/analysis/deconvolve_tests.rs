//! The deconvolution on synthetic sessions whose rates are known exactly.

use super::*;

const READ: &str = "dram__bytes_read.sum";
const ACTIVE: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";
const ELAPSED: &str = "dram__throughput.avg.pct_of_peak_sustained_elapsed";

/// A launch of `class` on pid 1, device 0.
fn span(class: usize, start_ns: u64, end_ns: u64) -> ClassSpan {
    ClassSpan {
        pid: 1,
        device_id: 0,
        start_ns,
        end_ns,
        class,
    }
}

/// `steps` repetitions of `step` (class, duration ns) back to back, each step
/// followed by `gap` ns idle plus a few ns more every step, from t = 1000.
fn steps(step: &[(usize, u64)], count: u64, gap: u64) -> Vec<ClassSpan> {
    let mut t = 1000;
    let mut out = Vec::new();
    for n in 0..count {
        for &(class, d) in step {
            out.push(span(class, t, t + d));
            t += d;
        }
        t += gap + (n * 7) % 13;
    }
    out
}

/// Windows of `length` ns tiling the spans' time, each with the exact value of every
/// metric given the per-class `rates` (amount per ns for amounts, the value for
/// ratios), as the simulated sampler forms it.
fn windows(spans: &[ClassSpan], length: u64, rates: &[f64], metrics: &[&str]) -> Vec<Window> {
    let end = spans.iter().map(|s| s.end_ns).max().unwrap_or(0);
    let mut out = Vec::new();
    let mut a = 0;
    while a < end + length {
        let b = a + length;
        let mut values = Vec::new();
        for m in metrics {
            let (mut sum, mut busy) = (0.0, 0.0);
            for s in spans {
                let o = s.end_ns.min(b).saturating_sub(s.start_ns.max(a)) as f64;
                sum += rates[s.class] * o;
                busy += o;
            }
            let v = match MetricKind::of(m) {
                Some(MetricKind::RatioActive) if busy > 0.0 => sum / busy,
                Some(MetricKind::RatioActive) => 0.0,
                Some(MetricKind::RatioElapsed) => sum / length as f64,
                _ => sum,
            };
            values.push((m.to_string(), v));
        }
        out.push(Window {
            pid: 1,
            device_id: 0,
            start_ns: a,
            end_ns: b,
            metrics: values,
        });
        a = b;
    }
    out
}

fn fit(spans: &[ClassSpan], windows: &[Window]) -> Fitted {
    let mut d = Deconvolver::default();
    d.add(spans, windows);
    d.finish()
}

fn assert_rel(got: Option<f64>, want: f64, tol: f64, what: &str) {
    let got = got.unwrap_or_else(|| panic!("{what}: no estimate"));
    assert!(
        (got - want).abs() <= tol * want.abs().max(1e-300),
        "{what}: got {got}, want {want}"
    );
}

#[test]
fn the_kind_of_each_metric() {
    assert_eq!(MetricKind::of(READ), Some(MetricKind::Amount));
    assert_eq!(
        MetricKind::of("sm__cycles_active.avg"),
        Some(MetricKind::Amount)
    );
    assert_eq!(MetricKind::of(ACTIVE), Some(MetricKind::RatioActive));
    assert_eq!(MetricKind::of(ELAPSED), Some(MetricKind::RatioElapsed));
    assert_eq!(
        MetricKind::of("dram__bytes.sum.per_second"),
        Some(MetricKind::RatioElapsed)
    );
    assert_eq!(MetricKind::of("sm__warps_active.max"), None);
    assert_eq!(MetricKind::of("sm__warps_active.min"), None);
}

/// Four classes of different rates and durations, one of them twice per step,
/// sampled by windows whose length is no multiple of the step: every rate comes
/// back within 1e-9, for amounts and both kinds of ratio.
#[test]
fn rates_of_four_classes_are_recovered_exactly() {
    let step = [(0, 2000), (1, 2100), (2, 3000), (0, 2000), (3, 21800)];
    let spans = steps(&step, 60, 5000);
    let rates = [4.096, 3000.0 / 1.0e3, 2796.5, 2999.1];
    let ws = windows(&spans, 13_000, &rates, &[READ, ACTIVE, ELAPSED]);
    let f = fit(&spans, &ws);
    assert_eq!(f.fits.len(), 3);
    for m in [READ, ACTIVE, ELAPSED] {
        for (class, want) in rates.iter().enumerate() {
            assert_rel(
                f.estimate(class, m),
                *want,
                1e-9,
                &format!("{m} class {class}"),
            );
        }
        let (fit, c) = f.class(3, m).expect("fitted");
        assert!(fit.residual.expect("amounts") < 1e-6, "{fit:?}");
        assert_eq!(fit.method, "lawson-hanson");
        assert_eq!(c.windows, fit.classes[3].windows);
        assert!(c.undetermined.is_none());
    }
    // Support: every launch's time is inside some window.
    let (_, c0) = f.class(0, READ).expect("class 0");
    assert_eq!(c0.overlap_ns, 2 * 2000 * 60);
}

/// The old split (in proportion to overlap) would give every class the same rate;
/// the fit does not.
#[test]
fn the_fit_tells_a_gemv_from_a_norm_where_the_split_cannot() {
    let step = [(0, 2000), (1, 20_000)];
    let spans = steps(&step, 40, 3000);
    let rates = [4.0, 3000.0];
    let ws = windows(&spans, 7_000, &rates, &[READ]);
    let f = fit(&spans, &ws);
    assert_rel(f.estimate(0, READ), 4.0, 1e-9, "norm");
    assert_rel(f.estimate(1, READ), 3000.0, 1e-9, "gemv");
    // The split shares every window's bytes by overlap: they add up to all bytes,
    // and the norm gets far more than its own.
    let split: Vec<f64> = (0..2)
        .map(|c| f.class(c, READ).expect("fitted").1.split)
        .collect();
    let total: f64 = ws.iter().map(|w| w.metrics[0].1).sum();
    assert_rel(Some(split[0] + split[1]), total, 1e-9, "split total");
    assert!(split[0] > 10.0 * 4.0 * 2000.0 * 40.0, "{split:?}");
}

/// Two classes that always run together, over the same time (two streams), cannot
/// be told apart: both are undetermined, each naming the other; a third class is
/// still exact, and the pair's amounts do not leak into it.
#[test]
fn a_collinear_pair_is_undetermined() {
    let mut spans = steps(&[(0, 3000), (2, 5000)], 50, 4000);
    let twins: Vec<ClassSpan> = spans
        .iter()
        .filter(|s| s.class == 0)
        .map(|s| span(1, s.start_ns, s.end_ns))
        .collect();
    spans.extend(twins);
    let rates = [10.0, 30.0, 7.0];
    let ws = windows(&spans, 11_000, &rates, &[READ]);
    let f = fit(&spans, &ws);
    let (fit, a) = f.class(0, READ).expect("class 0");
    let (_, b) = f.class(1, READ).expect("class 1");
    assert_eq!(a.estimate, None);
    assert_eq!(b.estimate, None);
    assert_eq!(a.undetermined, Some(Undetermined::Collinear { with: 1 }));
    assert_eq!(b.undetermined, Some(Undetermined::Collinear { with: 0 }));
    assert_rel(f.estimate(2, READ), 7.0, 1e-9, "the third class");
    assert!(fit.residual.expect("amounts") < 1e-6, "{fit:?}");
}

/// Three classes where the third's overlaps are always the sum of the other two's
/// (it runs alongside both, on another stream): no pair is collinear, but the three
/// are dependent, and none of them is estimated.
#[test]
fn a_column_that_is_a_combination_of_others_is_undetermined() {
    let base = steps(&[(0, 3000), (1, 5000), (3, 4000)], 50, 4000);
    let mut spans = base.clone();
    for s in base.iter().filter(|s| s.class < 2) {
        spans.push(span(2, s.start_ns, s.end_ns));
    }
    let rates = [10.0, 30.0, 5.0, 2.0];
    let ws = windows(&spans, 11_000, &rates, &[READ]);
    let f = fit(&spans, &ws);
    let undetermined: Vec<usize> = (0..4).filter(|c| f.estimate(*c, READ).is_none()).collect();
    assert!(
        undetermined.len() >= 2 && undetermined.contains(&2),
        "{:?}",
        f.fits
    );
    assert_rel(f.estimate(3, READ), 2.0, 1e-9, "the independent class");
}

/// Amounts a non-negative rate cannot explain (here, fewer bytes wherever class 1
/// runs) give class 1 a rate of 0, never a negative one, and a residual above 0.
#[test]
fn estimates_are_never_negative() {
    let step = [(0, 3000), (1, 4000), (2, 2500)];
    let spans = steps(&step, 40, 2000);
    let ws = windows(&spans, 9_000, &[5.0, -1.0, 3.0], &[READ]);
    let f = fit(&spans, &ws);
    // The misfit is large, so a class may also be too imprecise to give.
    for c in 0..3 {
        match f.class(c, READ).expect("fitted") {
            (
                _,
                ClassFit {
                    estimate: Some(e), ..
                },
            ) => assert!(*e >= 0.0, "class {c}: {e}"),
            (_, c) => assert_eq!(c.undetermined, Some(Undetermined::Imprecise), "{c:?}"),
        }
    }
    assert!(matches!(f.estimate(1, READ), Some(0.0) | None));
    let r = f.fits[0].residual.expect("amounts");
    assert!(r > 1e-3, "{r}");
}

/// A class seen in one window only has no estimate (too little support), and the
/// others keep theirs.
#[test]
fn a_class_in_a_single_window_has_no_estimate() {
    let mut spans = steps(&[(0, 3000), (1, 5000)], 30, 4000);
    let end = spans.iter().map(|s| s.end_ns).max().unwrap_or(0);
    spans.push(span(2, end + 50_000, end + 52_000));
    let ws = windows(&spans, 10_000, &[10.0, 30.0, 99.0], &[READ]);
    let f = fit(&spans, &ws);
    let (_, c) = f.class(2, READ).expect("class 2 is in the fit");
    assert_eq!(c.windows, 1);
    assert_eq!(c.estimate, None);
    assert_eq!(c.undetermined, Some(Undetermined::Support { windows: 1 }));
    assert_rel(f.estimate(0, READ), 10.0, 1e-9, "class 0");
    assert_rel(f.estimate(1, READ), 30.0, 1e-9, "class 1");
}

/// Values that are not finite are left out and counted; `.max` is not fitted; a
/// window without kernels only adds to Σy².
#[test]
fn bad_values_are_counted_and_unfittable_metrics_left_alone() {
    let spans = steps(&[(0, 3000), (1, 5000)], 20, 4000);
    let mut ws = windows(&spans, 10_000, &[10.0, 30.0], &[READ, "x.max"]);
    ws[3].metrics[0].1 = f64::NAN;
    ws[4].metrics[0].1 = f64::INFINITY;
    let f = fit(&spans, &ws);
    assert_eq!(f.left_out.not_finite, 2);
    assert_eq!(f.fits.len(), 1, "x.max is not fitted");
    assert!(!f.has("x.max"));
    assert_rel(f.estimate(0, READ), 10.0, 1e-9, "class 0");
    assert_eq!(f.fits[0].windows as usize, ws.len() - 2);
}

/// More classes than the dense solver takes: coordinate descent, to the same rates.
#[test]
fn many_classes_go_to_coordinate_descent() {
    let step: Vec<(usize, u64)> = (0..MAX_DENSE + 4)
        .map(|c| (c, 1000 + (c as u64 * 37) % 900))
        .collect();
    let spans = steps(&step, 6, 1500);
    let rates: Vec<f64> = (0..step.len()).map(|c| 1.0 + (c % 5) as f64).collect();
    let ws = windows(&spans, 2_300, &rates, &[READ]);
    let f = fit(&spans, &ws);
    assert_eq!(f.fits[0].method, "coordinate descent");
    for (c, want) in rates.iter().enumerate() {
        assert_rel(f.estimate(c, READ), *want, 1e-6, &format!("class {c}"));
    }
}

/// Pairs are bounded: a window that would take a fit past them is left out.
#[test]
fn crowded_windows_are_left_out() {
    let mut spans = Vec::new();
    for c in 0..MAX_WINDOW_CLASSES + 1 {
        spans.push(span(c, 100, 200));
    }
    let ws = windows(&spans, 1000, &vec![1.0; spans.len()], &[READ]);
    let f = fit(&spans, &ws);
    assert_eq!(f.left_out.crowded, 1);
}

/// Hostile input: overlapping and reversed windows, launches of every length, values
/// up to 1e30 and beyond, negative ones. Nothing panics, every estimate is finite or
/// absent with a reason, and every residual is finite.
#[test]
fn hostile_windows_give_finite_numbers_or_none() {
    let mut rng = wire::testing::Lcg(7);
    for round in 0..20 {
        let spans: Vec<ClassSpan> = (0..200)
            .map(|_| {
                let start = rng.next(1 << 40);
                span(
                    rng.next(12) as usize,
                    start,
                    start + rng.next(1 << (round + 4)),
                )
            })
            .collect();
        let ws: Vec<Window> = (0..300)
            .map(|_| {
                let start = rng.next(1 << 40);
                let scale = [1.0, 1e30, -5.0, 1e300][rng.next(4) as usize];
                Window {
                    pid: 1,
                    device_id: 0,
                    start_ns: start,
                    end_ns: start.wrapping_add(rng.next(1 << 41)),
                    metrics: vec![
                        (READ.to_string(), scale * rng.next(1000) as f64),
                        (ACTIVE.to_string(), scale),
                        (ELAPSED.to_string(), scale),
                    ],
                }
            })
            .collect();
        let f = fit(&spans, &ws);
        for fit in &f.fits {
            assert!(fit.residual.is_none_or(f64::is_finite), "{fit:?}");
            for c in &fit.classes {
                match c.estimate {
                    Some(e) => assert!(e.is_finite() && e >= 0.0, "{c:?}"),
                    None => assert!(c.undetermined.is_some(), "{c:?}"),
                }
            }
        }
    }
}

/// An exact fit has standard errors of (nearly) 0 and every class determined; the
/// same windows with a misfit of ±30% (a window's value off by a factor that cycles
/// with its index, as caches and write-backs put it off on a GPU) give standard
/// errors, and the class that runs least is too imprecise to give.
#[test]
fn standard_errors_grow_with_the_misfit() {
    let step = [(0, 3000), (1, 400), (2, 2500)];
    let spans = steps(&step, 40, 2000);
    let rates = [5.0, 1.0, 3.0];
    let exact = windows(&spans, 9_000, &rates, &[READ]);
    let f = fit(&spans, &exact);
    for (c, want) in rates.iter().enumerate() {
        let (_, fc) = f.class(c, READ).expect("fitted");
        assert_rel(fc.estimate, *want, 1e-9, "exact");
        let se = fc.std_error.expect("a standard error");
        assert!(se <= 1e-6 * want, "class {c}: {se}");
    }
    let noisy: Vec<Window> = exact
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let mut w = w.clone();
            w.metrics[0].1 *= 1.0 + 0.3 * (i as f64 * 2.1).sin();
            w
        })
        .collect();
    let f = fit(&spans, &noisy);
    let (_, small) = f.class(1, READ).expect("fitted");
    assert_eq!(
        small.undetermined,
        Some(Undetermined::Imprecise),
        "{small:?}"
    );
    assert_eq!(small.estimate, None);
    assert!(small.std_error.is_some_and(|se| se > 0.0), "{small:?}");
    let (_, big) = f.class(0, READ).expect("fitted");
    let (e, se) = (
        big.estimate.expect("determined"),
        big.std_error.expect("se"),
    );
    assert!(se > 0.0 && se <= MAX_RELATIVE_ERROR * e, "{big:?}");
}

/// A window's GPU time is not a kernel amount: it is not fitted.
#[test]
fn gpu_time_is_not_fitted() {
    assert_eq!(MetricKind::of("gpu__time_duration.sum"), None);
    assert_eq!(MetricKind::of(READ), Some(MetricKind::Amount));
}

/// A class whose column is the sum of two others' (it runs beside each of them, on
/// another stream) leaves neither of the two determined: held at 0, its amounts go
/// to both, so each would be biased.
#[test]
fn every_class_of_a_dependent_combination_is_undetermined() {
    let mut spans = steps(&[(0, 3000), (1, 1000), (3, 2000)], 40, 1500);
    let beside: Vec<ClassSpan> = spans
        .iter()
        .filter(|s| s.class < 2)
        .map(|s| span(2, s.start_ns, s.end_ns))
        .collect();
    spans.extend(beside);
    let ws = windows(&spans, 7_000, &[5.0, 1.0, 3.0, 2.0], &[READ]);
    let f = fit(&spans, &ws);
    for c in 0..3 {
        let (_, fc) = f.class(c, READ).expect("fitted");
        assert!(
            matches!(fc.undetermined, Some(Undetermined::Collinear { .. })),
            "class {c}: {fc:?}"
        );
    }
    assert_rel(f.estimate(3, READ), 2.0, 1e-9, "the class apart");
}
