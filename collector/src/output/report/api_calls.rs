//! The report's section of CPU time in the CUDA calls traced one by one
//! (`analysis::api_calls`): per thread, the time in each class of call (the
//! `synchronize` column is the time the thread was blocked waiting for the GPU, the
//! `launch` column its time in kernel and graph launch calls; the calls counted rather
//! than traced, `GPUPROF_API=sync`'s others, are in their class);
//! per NVTX range name, each class's share of the range's wall time (traced calls
//! only: a counted call has no time of its own); and the functions behind them (a
//! counted function's failures, longest call and bytes are unknown: "-", JSON null; a
//! launch function's failures too). Only when the session holds calls other than
//! launches (sessions recorded with `GPUPROF_API=off` or before these calls were
//! traced show nothing).
//!
//! CSV `api_calls_by_thread` and `api_calls_by_range`, JSON `api_calls.by_thread` and
//! `api_calls.by_range`: one row per function, with the same columns.

use std::collections::BTreeMap;

use super::*;
use crate::analysis::api_calls::{ApiCallSummary, CallClass, CallTally};
use crate::analysis::range_cover::range_label;

/// The columns of the CSV tables (and the JSON rows' fields).
pub const THREAD_COLUMNS: [&str; 11] = [
    "pid",
    "thread_id",
    "function",
    "class",
    "traced",
    "calls",
    "failed",
    "total_ns",
    "mean_ns",
    "max_ns",
    "bytes",
];
pub const RANGE_COLUMNS: [&str; 12] = [
    "domain",
    "range",
    "range_wall_ns",
    "function",
    "class",
    "calls",
    "failed",
    "total_ns",
    "mean_ns",
    "max_ns",
    "bytes",
    "range_wall_pct",
];

/// A row's tally; a launch's failures are not recorded: null.
fn tally_json(v: &mut Value, t: &CallTally, class: CallClass) {
    v["calls"] = json!(t.calls);
    v["failed"] = if class == CallClass::Launch {
        Value::Null
    } else {
        json!(t.failed)
    };
    v["total_ns"] = json!(t.total_ns);
    v["mean_ns"] = json!(mean_ns(t.total_ns, t.calls));
    v["max_ns"] = json!(t.max_ns);
    v["bytes"] = json!(t.bytes);
}

/// JSON `api_calls`, `None` when the session has no traced calls.
pub fn api_calls_json(a: &ApiCallSummary) -> Option<Value> {
    if a.is_empty() {
        return None;
    }
    let by_thread: Vec<Value> = a
        .by_thread
        .iter()
        .map(|r| {
            let mut v = json!({
                "pid": r.pid,
                "thread_id": r.thread_id,
                "function": r.function,
                "class": r.class,
                "traced": r.traced,
            });
            tally_json(&mut v, &r.tally, r.class);
            if !r.traced {
                // Counted calls: only their number and time are known.
                for k in ["failed", "max_ns", "bytes"] {
                    v[k] = Value::Null;
                }
            }
            v
        })
        .collect();
    let by_range: Vec<Value> = a
        .by_range
        .iter()
        .map(|r| {
            let mut v = json!({
                "domain": r.domain,
                "range": r.range,
                "range_wall_ns": r.range_wall_ns,
                "function": r.function,
                "class": r.class,
            });
            tally_json(&mut v, &r.tally, r.class);
            // A range never closed has no wall time: its share is unknown, not 0.
            v["range_wall_pct"] = if r.range_wall_ns == 0 {
                Value::Null
            } else {
                json!(percent(r.tally.total_ns, r.range_wall_ns))
            };
            v
        })
        .collect();
    Some(json!({ "by_thread": by_thread, "by_range": by_range }))
}

/// The classes that occur among `classes`, in column order.
fn classes_present(classes: impl Iterator<Item = CallClass> + Clone) -> Vec<CallClass> {
    CallClass::ALL
        .into_iter()
        .filter(|c| classes.clone().any(|r| r == *c))
        .collect()
}

/// Per-class time of rows grouped by `key`, in the keys' first order.
fn per_class<K: Ord + Clone>(
    rows: impl Iterator<Item = (K, CallClass, CallTally)>,
) -> (Vec<K>, BTreeMap<(K, CallClass), CallTally>) {
    let mut order = Vec::new();
    let mut sums: BTreeMap<(K, CallClass), CallTally> = BTreeMap::new();
    for (k, class, t) in rows {
        if !order.contains(&k) {
            order.push(k.clone());
        }
        sums.entry((k, class)).or_default().merge(&t);
    }
    (order, sums)
}

/// The text section (see the module documentation); nothing without traced calls.
pub fn api_calls_table(out: &mut String, a: &ApiCallSummary, top: Option<usize>) {
    if a.is_empty() {
        return;
    }
    let classes = classes_present(a.by_thread.iter().map(|r| r.class));

    out.push_str(
        "\nCPU time in CUDA calls by thread (synchronize: blocked waiting for the GPU; launch: \
         kernel and graph launches)\n",
    );
    let (threads, sums) = per_class(
        a.by_thread
            .iter()
            .map(|r| ((r.session, r.pid, r.thread_id), r.class, r.tally)),
    );
    // Each column in the unit its largest value needs (µs, ms, s): a run of hours
    // still fits.
    let units: Vec<TimeUnit> = classes
        .iter()
        .map(|c| {
            let largest = threads
                .iter()
                .map(|k| sums.get(&(*k, *c)).map_or(0, |t| t.total_ns));
            TimeUnit::for_column(largest.max().unwrap_or(0))
        })
        .collect();
    let class_headers: Vec<String> = classes
        .iter()
        .zip(&units)
        .map(|(c, u)| format!("{} {}", c.label(), u.name()))
        .collect();
    let rows: Vec<Vec<String>> = threads
        .iter()
        .map(|k| {
            let mut row = vec![k.1.to_string(), k.2.to_string()];
            let mut calls = 0;
            for (c, u) in classes.iter().zip(&units) {
                let t = sums.get(&(*k, *c)).copied().unwrap_or_default();
                calls += t.calls;
                row.push(u.show(t.total_ns));
            }
            row.push(calls.to_string());
            row
        })
        .collect();
    let mut headers: Vec<&str> = vec!["pid", "thread"];
    headers.extend(class_headers.iter().map(String::as_str));
    headers.push("calls");
    let right = vec![true; headers.len()];
    grid(out, &headers, &right, &rows);

    let ranges = &a.by_range;
    if !ranges.is_empty() {
        out.push_str(
            "\nCPU time in CUDA calls by NVTX range, % of the range's wall time (µs: JSON, CSV)\n",
        );
        let (names, sums) = per_class(ranges.iter().map(|r| {
            (
                (r.range_wall_ns, range_label(&r.domain, &r.range)),
                r.class,
                r.tally,
            )
        }));
        // The classes of traced calls only: counted ones are in no range.
        let classes = classes_present(ranges.iter().map(|r| r.class));
        let mut rows: Vec<Vec<String>> = names
            .iter()
            .map(|k| {
                let mut row = vec![micros(k.0)];
                for c in &classes {
                    let t = sums.get(&(k.clone(), *c)).copied().unwrap_or_default();
                    row.push(pct_short(t.total_ns, k.0));
                }
                row.push(k.1.clone());
                row
            })
            .collect();
        let pct_headers: Vec<String> = classes.iter().map(|c| format!("{} %", c.label())).collect();
        let mut headers: Vec<&str> = vec!["wall µs"];
        headers.extend(pct_headers.iter().map(String::as_str));
        headers.push("range");
        fit_last_column(&headers, &mut rows);
        let mut right = vec![true; headers.len()];
        *right.last_mut().expect("a range column") = false;
        grid(out, &headers, &right, &rows);
        if a.by_thread.iter().any(|r| !r.traced) {
            out.push_str(
                "  (calls counted, not traced one by one, are in no range: GPUPROF_API=all traces all)\n",
            );
        }
    }

    out.push_str("\nCUDA calls by function (\"-\": counted, not traced one by one; GPUPROF_API=all traces all;\n  a launch's failure is not recorded)\n");
    let mut by_function: Vec<_> = a.by_thread.iter().collect();
    by_function.sort_by(|x, y| {
        y.tally
            .total_ns
            .cmp(&x.tally.total_ns)
            .then_with(|| (x.pid, x.thread_id, &x.function).cmp(&(y.pid, y.thread_id, &y.function)))
    });
    let all = by_function.len();
    let shown_rows = top.map_or(all, |n| n.min(all));
    let shown_rows = &by_function[..shown_rows];
    let unit = |f: fn(&CallTally) -> u64| {
        TimeUnit::for_column(shown_rows.iter().map(|r| f(&r.tally)).max().unwrap_or(0))
    };
    let (total, mean, max) = (
        unit(|t| t.total_ns),
        unit(|t| mean_ns(t.total_ns, t.calls)),
        unit(|t| t.max_ns),
    );
    let mut rows: Vec<Vec<String>> = shown_rows
        .iter()
        .map(|r| {
            // Counted calls: only their number and time are known.
            let known = |v: String| if r.traced { v } else { "-".to_string() };
            let failed = if r.class == CallClass::Launch {
                "-".to_string()
            } else {
                known(r.tally.failed.to_string())
            };
            vec![
                r.pid.to_string(),
                r.thread_id.to_string(),
                r.tally.calls.to_string(),
                failed,
                total.show(r.tally.total_ns),
                mean.show(mean_ns(r.tally.total_ns, r.tally.calls)),
                known(max.show(r.tally.max_ns)),
                known(r.tally.bytes.to_string()),
                r.function.clone(),
            ]
        })
        .collect();
    let (total_h, mean_h, max_h) = (
        format!("total {}", total.name()),
        format!("mean {}", mean.name()),
        format!("max {}", max.name()),
    );
    let headers = [
        "pid", "thread", "calls", "failed", &total_h, &mean_h, &max_h, "bytes", "function",
    ];
    fit_last_column(&headers, &mut rows);
    let mut right = vec![true; headers.len()];
    right[headers.len() - 1] = false;
    grid(out, &headers, &right, &rows);
    if shown_rows.len() < all {
        let _ = writeln!(
            out,
            "  ({} more rows: --top, or --format csv / json for all)",
            all - shown_rows.len()
        );
    }
}

/// A share in percent with one decimal; "-" of nothing.
fn pct_short(part: u64, whole: u64) -> String {
    if whole == 0 {
        // Of a range never closed: no wall time to be a share of.
        return "-".to_string();
    }
    format!("{:.1}", percent(part, whole))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::api_calls::{RangeCalls, ThreadCalls};

    #[test]
    fn every_line_fits_120_columns_with_every_class() {
        let tally = CallTally {
            calls: 123_456_789,
            failed: 12,
            total_ns: 98_765_432_109_876,
            max_ns: 9_876_543_210,
            bytes: 1 << 40,
        };
        let functions = [
            "cuStreamSynchronize_ptsz",
            "cuMemcpyDtoHAsync_v2_ptsz",
            "cuMemsetD2D32Async_ptsz",
            "cuMemAllocFromPoolAsync_ptsz",
            "cuStreamWaitValue64_v2_ptsz",
            "cuDevicePrimaryCtxGetState",
        ];
        let mut a = ApiCallSummary::default();
        for (i, f) in functions.iter().enumerate() {
            a.by_thread.push(ThreadCalls {
                pid: 4_194_304,
                session: 0,
                thread_id: 4_194_303,
                function: f.to_string(),
                class: CallClass::of(f),
                traced: i % 2 == 0,
                tally,
            });
            a.by_range.push(RangeCalls {
                domain: "a domain with a long name".into(),
                range: "a range with a name longer than any column could hold".into(),
                range_wall_ns: 123_456_789_012_345,
                function: f.to_string(),
                class: CallClass::of(f),
                tally,
            });
        }
        let launch = "cudaLaunchKernelExC_ptsz";
        a.by_thread.push(ThreadCalls {
            pid: 4_194_304,
            session: 0,
            thread_id: 4_194_303,
            function: launch.into(),
            class: CallClass::Launch,
            traced: true,
            tally,
        });
        a.by_range.push(RangeCalls {
            domain: "a domain with a long name".into(),
            range: "a range with a name longer than any column could hold".into(),
            range_wall_ns: 123_456_789_012_345,
            function: launch.into(),
            class: CallClass::Launch,
            tally,
        });
        let mut out = String::new();
        api_calls_table(&mut out, &a, None);
        for class in CallClass::ALL {
            assert!(out.contains(&format!("{} s ", class.label())), "{out}");
            assert!(out.contains(&format!("{} %", class.label())), "{out}");
        }
        for line in out.lines() {
            assert!(
                line.chars().count() <= 120,
                "{} columns: {line}",
                line.chars().count()
            );
        }
    }

    #[test]
    fn a_range_never_closed_has_no_share_not_zero() {
        let tally = CallTally {
            calls: 2,
            total_ns: 5_000,
            ..CallTally::default()
        };
        let a = ApiCallSummary {
            by_thread: vec![ThreadCalls {
                pid: 7,
                session: 0,
                thread_id: 7,
                function: "cuStreamSynchronize".into(),
                class: CallClass::Synchronize,
                traced: true,
                tally,
            }],
            by_range: vec![RangeCalls {
                domain: String::new(),
                range: "decode".into(),
                range_wall_ns: 0,
                function: "cuStreamSynchronize".into(),
                class: CallClass::Synchronize,
                tally,
            }],
        };
        let v = api_calls_json(&a).unwrap();
        assert_eq!(v["by_range"][0]["range_wall_pct"], Value::Null);
        assert_eq!(v["by_range"][0]["total_ns"], json!(5_000));
        let mut out = String::new();
        api_calls_table(&mut out, &a, None);
        let row = out.lines().find(|l| l.ends_with("decode")).unwrap();
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["0.000", "-", "decode"]
        );
    }
}
