//! `gpuprof report`'s counters as percentages of peak on a run recorded on the
//! simulated stack: each figure equals its formula (`gpuprof report --help`) over the
//! raw means of the same JSON report, the device record's clock and the roofline's
//! peak bandwidth; the table shows them with one decimal in one row per kernel within
//! 120 columns, CSV and JSON rounded to two; `--counters raw` leaves out exactly the
//! metrics that are 0 for every kernel.

use std::collections::BTreeMap;
use std::time::Duration;

use gpuprof_tests::{
    artifact, cudarc_llm_calls, gpuprof_command, kernel_calls, record_on_sim, Scratch, TimedChild,
};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(120);
/// The simulated device's core clock: not the cost model's 1.98 GHz, so SM active %
/// shows which clock it used.
const CLOCK_KHZ: f64 = 1_650_000.0;

fn report(dir: &std::path::Path, args: &[&str]) -> String {
    let mut cmd = gpuprof_command();
    cmd.arg("report").args(args).arg(dir);
    let out = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(out.stderr, "");
    out.stdout
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// The expected percentages of one JSON kernel, from its raw means.
fn expected(k: &Value, bandwidth: f64) -> BTreeMap<&'static str, Option<f64>> {
    let mean = |m: &str| {
        k["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["metric"] == m)
            .map(|x| x["mean"].as_f64().unwrap())
    };
    let ns = mean("gpu__time_duration.sum").expect("GPU time");
    let cycles = mean("sm__cycles_active.avg").expect("SM cycles");
    let bytes = mean("dram__bytes_read.sum").unwrap() + mean("dram__bytes_write.sum").unwrap();
    let (hit, miss) = (
        mean("lts__t_sectors_lookup_hit.sum").unwrap(),
        mean("lts__t_sectors_lookup_miss.sum").unwrap(),
    );
    BTreeMap::from([
        (
            "sm_active",
            Some(100.0 * cycles / (ns * CLOCK_KHZ * 1000.0 / 1e9)),
        ),
        (
            "tensor_pipe",
            mean("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
        ),
        (
            "dram_throughput",
            Some(100.0 * bytes / (ns * bandwidth / 1e9)),
        ),
        (
            "l2_hit_rate",
            (hit + miss > 0.0).then(|| 100.0 * hit / (hit + miss)),
        ),
        (
            "achieved_occupancy",
            mean("sm__warps_active.avg.pct_of_peak_sustained_active"),
        ),
    ])
}

#[test]
fn percentages_follow_their_formulas_in_every_format() {
    let scratch = Scratch::new("counter-pct");
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"))
        .env("SIMCUDA_CLOCK_KHZ", "1650000");
    let ended = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(ended.status.code(), Some(0), "{}", ended.stderr);

    let json: Value = serde_json::from_str(&report(&out, &["--format", "json"])).unwrap();
    assert_eq!(kernel_calls(&json), cudarc_llm_calls());
    let bandwidth: BTreeMap<&str, f64> = json["roofline"]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["mangled"].as_str().unwrap(),
                r["dram_bytes_per_s"].as_f64().unwrap(),
            )
        })
        .collect();
    // The datasheet's 3.35 TB/s of the simulated H100 SXM.
    assert!(bandwidth.values().all(|b| *b == 3.35e12), "{bandwidth:?}");

    let kernels = json["counters"]["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 8);
    let table = report(&out, &[]);
    let csv = report(&out, &["--format", "csv"]);
    let csv_pct: Vec<&str> = csv
        .split("\n\n")
        .find(|s| s.starts_with("# counter_pct\n"))
        .expect("a counter_pct section")
        .lines()
        .skip(2)
        .collect();
    assert_eq!(csv_pct.len(), kernels.len());
    let mut any_l2 = false;
    let mut rows = table
        .lines()
        .skip_while(|l| !l.starts_with("  launches  measured  SM active %"))
        .skip(1);
    for (k, csv_row) in kernels.iter().zip(&csv_pct) {
        let mangled = k["mangled"].as_str().unwrap();
        let want = expected(k, bandwidth[mangled]);
        for (key, v) in &want {
            assert_eq!(
                k["pct"][key].as_f64(),
                v.map(round2),
                "{mangled}: {key} in JSON"
            );
        }
        // No L2 lookups in the cost model's rule: unknown, and the JSON says why.
        if want["l2_hit_rate"].is_none() {
            assert_eq!(
                k["pct_unknown"]["l2_hit_rate"], "no L2 sector lookups counted",
                "{mangled}"
            );
        } else {
            any_l2 = true;
        }
        // CSV: the same values, in the columns' order.
        let cell = |v: Option<f64>| v.map_or(String::new(), |v| format!("{:?}", round2(v)));
        let tail: Vec<String> = [
            "sm_active",
            "tensor_pipe",
            "dram_throughput",
            "l2_hit_rate",
            "achieved_occupancy",
        ]
        .iter()
        .map(|key| cell(want[key]))
        .collect();
        assert!(
            csv_row.ends_with(&format!(
                ",{},{},{}",
                k["launches"],
                k["launches_with_counters"],
                tail.join(",")
            )),
            "{csv_row}"
        );
        // The table's row: launches, measured, the five with one decimal.
        let one = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let cells = [
            k["launches"].to_string(),
            k["launches_with_counters"].to_string(),
            one(want["sm_active"]),
            one(want["tensor_pipe"]),
            one(want["dram_throughput"]),
            one(want["l2_hit_rate"]),
            one(want["achieved_occupancy"]),
        ];
        // Kernels by their short names (the kernel table's).
        let name = json["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["mangled"] == k["mangled"])
            .and_then(|r| r["short_name"].as_str())
            .unwrap();
        let row = rows.next().expect("a table row per kernel");
        let shown = row.split_whitespace().skip(7).collect::<Vec<_>>().join(" ");
        // Whole, or cut in the middle.
        assert!(
            shown == name
                || shown.contains('…') && name.starts_with(shown.split('…').next().unwrap()),
            "{name}: {row}"
        );
        let got: Vec<&str> = row.split_whitespace().take(7).collect();
        assert_eq!(got, cells, "{name}: {row}");
    }
    assert!(!any_l2, "the cost model counts no L2 lookups");
    assert!(
        table.contains("\n  \"-\" in L2 hit %: no L2 sector lookups counted (8 kernels)\n"),
        "{table}"
    );
    let section = &table[table.find("\nCounters\n").unwrap()..table.find("\nRoofline").unwrap()];
    for line in section.lines() {
        assert!(
            line.chars().count() <= 120,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    let raw = report(&out, &["--counters", "raw"]);
    let mut zero: BTreeMap<&str, bool> = BTreeMap::new();
    for k in kernels {
        for m in k["metrics"].as_array().unwrap() {
            let z = zero.entry(m["metric"].as_str().unwrap()).or_insert(true);
            *z &= m["mean"].as_f64().unwrap() == 0.0;
        }
    }
    let left_out: Vec<&&str> = zero.iter().filter(|(_, z)| **z).map(|(m, _)| m).collect();
    assert!(!left_out.is_empty());
    assert!(
        raw.contains(&format!(
            "\n  {} metrics left out: 0 for every kernel shown\n",
            left_out.len()
        )),
        "{raw}"
    );
    for m in zero.keys() {
        assert_eq!(
            raw.contains(&format!("\n    {m} ")),
            !left_out.contains(&m),
            "{m}"
        );
    }
}
