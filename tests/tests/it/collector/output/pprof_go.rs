//! `gpuprof pprof` read by the real pprof: `go tool pprof` (Debian's golang-go,
//! installed by scripts/test.sh) on a run of the cudarc-llm workload recorded on the
//! simulated H100, against `gpuprof report --format json` of the same session: totals
//! and per-kernel values of each sample type, family frames, and the NVTX range frames
//! of every stack. Also: the errors of bad arguments.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use gpuprof_tests::{cudarc_llm_calls, gpuprof_command, record_cudarc_llm, report_json, Scratch};
use serde_json::Value;

/// `go tool pprof ARGS FILE`'s stdout, or `None` (test skipped, said why) when Go is
/// not installed and cannot be (scripts/debian-tools.sh needs root).
fn pprof(args: &[&str], file: &Path) -> Option<String> {
    let o = match Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .env("PPROF_TMPDIR", file.parent().unwrap())
        .output()
    {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("go tool pprof: {e}"),
    };
    assert!(
        o.status.success(),
        "go tool pprof {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(String::from_utf8(o.stdout).unwrap())
}

fn go_installed() -> bool {
    if Command::new("go").arg("version").output().is_ok() {
        return true;
    }
    gpuprof_tests::skip(
        "pprof_go",
        "go is not installed (scripts/test.sh installs golang-go: scripts/debian-tools.sh)",
    );
    false
}

/// `-top` output: (the total, each node's (flat, cum) by name). Values are parsed
/// with their unit suffix removed; `unit` is the one asked for with `-unit`.
fn top(text: &str, unit: &str) -> (u64, BTreeMap<String, (u64, u64)>) {
    let value = |s: &str| -> u64 {
        s.strip_suffix(unit)
            .unwrap_or(s)
            .parse()
            .unwrap_or_else(|_| panic!("{s:?} is not a whole number of {unit:?}"))
    };
    let showing = text
        .lines()
        .find_map(|l| l.strip_prefix("Showing nodes accounting for "))
        .expect("a Showing line");
    // "X, 100% of X total"
    let total = showing
        .rsplit_once(" of ")
        .unwrap()
        .1
        .strip_suffix(" total")
        .unwrap();
    let mut nodes = BTreeMap::new();
    let mut rows = false;
    for line in text.lines() {
        if line.trim_start().starts_with("flat") {
            rows = true;
            continue;
        }
        if !rows {
            continue;
        }
        // flat flat% sum% cum cum% name (the name may hold spaces)
        let f: Vec<&str> = line.split_whitespace().collect();
        let name = f[5..].join(" ");
        let old = nodes.insert(name.clone(), (value(f[0]), value(f[3])));
        assert!(old.is_none(), "{name} twice in\n{text}");
    }
    (value(total), nodes)
}

/// `-traces` output: each sample as (value, frames leaf first).
fn traces(text: &str, unit: &str) -> Vec<(u64, Vec<String>)> {
    let mut out = Vec::new();
    // The header (comments, type) comes before the first separator.
    let separator = "-----------+-------------------------------------------------------";
    for block in text.split(separator).skip(1) {
        let mut frames = Vec::new();
        let mut value = None;
        for line in block.lines() {
            // Labels are "key:  value" lines before the stack.
            if value.is_none() && line.contains(":  ") {
                continue;
            }
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            if value.is_none() {
                let (v, frame) = t.split_once(char::is_whitespace).unwrap();
                let v = v.strip_suffix(unit).unwrap_or(v);
                value = Some(v.parse::<u64>().unwrap_or_else(|_| panic!("{line:?}")));
                frames.push(frame.trim().to_string());
            } else {
                frames.push(t.to_string());
            }
        }
        if let Some(v) = value {
            out.push((v, frames));
        }
    }
    out
}

/// The frame the profile names a cudarc-llm kernel by (its function's own name).
/// The kernel frame of the kernel recorded as `mangled`: its short name in the report.
fn frame_of(report: &Value, mangled: &str) -> String {
    report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["mangled"] == mangled)
        .and_then(|k| k["short_name"].as_str())
        .unwrap_or_else(|| panic!("{mangled} is not in the report"))
        .to_string()
}

#[test]
fn go_tool_pprof_reads_the_reports_totals_kernels_families_and_ranges() {
    if !go_installed() {
        return;
    }
    let scratch = Scratch::new("pprof-go");
    let out = scratch.join("run");
    record_cudarc_llm(&out, "13.4", &[]);
    let r = report_json(&out);

    let o = gpuprof_command().arg("pprof").arg(&out).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let file = out.join("gpu.pb.gz");
    let kernel_ns = r["kernel_ns"].as_u64().unwrap();
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with(&format!(
            "gpuprof: profile written to {}: 107 launches, {kernel_ns} ns of GPU time,",
            file.display()
        )),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // Per kernel frame, from the report: (launches, GPU ns, model FLOPs, DRAM bytes).
    let mut want: BTreeMap<String, (u64, u64, u64, u64)> = BTreeMap::new();
    let mut partial: std::collections::BTreeSet<String> = Default::default();
    for k in r["kernels"].as_array().unwrap() {
        let e = want
            .entry(frame_of(&r, k["mangled"].as_str().unwrap()))
            .or_default();
        e.0 += k["calls"].as_u64().unwrap();
        e.1 += k["total_ns"].as_u64().unwrap();
    }
    for k in r["roofline"]["kernels"].as_array().unwrap() {
        let e = want
            .get_mut(&frame_of(&r, k["mangled"].as_str().unwrap()))
            .unwrap();
        e.2 += k["model_flops"].as_f64().unwrap_or(0.0) as u64;
        // Launches the counter policy did not measure are given their group's mean. A
        // kernel the report has no bytes for (some group of its launches never
        // measured them) has the bytes of the others in the profile, as the report's
        // run total does: checked through that total only.
        match k["bytes"].as_f64() {
            Some(b) => e.3 += b.round() as u64,
            None => {
                partial.insert(frame_of(&r, k["mangled"].as_str().unwrap()));
            }
        }
    }
    let calls: BTreeMap<String, u64> = cudarc_llm_calls()
        .into_iter()
        .map(|(m, n)| (frame_of(&r, &m), n))
        .collect();
    assert_eq!(
        want.iter()
            .map(|(k, v)| (k.clone(), v.0))
            .collect::<BTreeMap<_, _>>(),
        calls
    );

    let pid = r["processes"][0]["pid"].as_u64().unwrap();
    let process = format!("cudarc-llm [pid {pid}]");
    let families: BTreeMap<String, (u64, u64)> = r["roofline"]["families"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                (
                    f["gpu_ns"].as_u64().unwrap(),
                    f["launches"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    let ranges: BTreeMap<String, (u64, u64)> = r["nvtx_ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["name"].as_str().unwrap().to_string(),
                (
                    x["gpu_ns"].as_u64().unwrap(),
                    x["kernels"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(
        ranges.keys().collect::<Vec<_>>(),
        ["decode", "prefill"],
        "the workload's ranges"
    );
    let run_flops = r["roofline"]["run"]["model_flops"].as_f64().unwrap() as u64;

    // Every stack: kernel, family, the ranges (outermost last here, leaf first), the
    // process; the stacks through each range add up to the report's range totals.
    let Some(text) = pprof(&["-traces", "-sample_index=gpu_time", "-unit=ns"], &file) else {
        return;
    };
    let stacks = traces(&text, "ns");
    assert_eq!(stacks.iter().map(|s| s.0).sum::<u64>(), kernel_ns, "{text}");
    let mut per_range: BTreeMap<String, u64> = BTreeMap::new();
    // Samples per kernel frame: DRAM bytes are rounded per sample.
    let mut samples: BTreeMap<String, u64> = BTreeMap::new();
    for (ns, frames) in &stacks {
        assert_eq!(
            frames.len(),
            4,
            "kernel, family, one range, process: {frames:?}"
        );
        assert!(want.contains_key(&frames[0]), "{frames:?}");
        assert!(families.contains_key(&frames[1]), "{frames:?}");
        assert_eq!(frames[3], process);
        *per_range.entry(frames[2].clone()).or_default() += ns;
        *samples.entry(frames[0].clone()).or_default() += 1;
    }
    assert_eq!(
        per_range,
        ranges.iter().map(|(k, v)| (k.clone(), v.0)).collect(),
        "{text}"
    );

    // (sample index, unit asked for, the report's total, index into `want`'s tuple)
    let cases: [(&str, &str, u64, usize); 4] = [
        ("gpu_time", "ns", kernel_ns, 1),
        ("launches", "", r["kernel_count"].as_u64().unwrap(), 0),
        ("flops", "", run_flops, 2),
        // One total for one quantity: the report's run total of DRAM bytes.
        (
            "dram",
            "B",
            r["roofline"]["run"]["bytes"].as_f64().unwrap().round() as u64,
            3,
        ),
    ];
    for (index, unit, total, field) in cases {
        let mut args = vec!["-top", "-nodefraction=0", "-nodecount=1000"];
        let sample_index = format!("-sample_index={index}");
        let unit_arg = format!("-unit={unit}");
        args.push(&sample_index);
        if !unit.is_empty() {
            args.push(&unit_arg);
        }
        let Some(text) = pprof(&args, &file) else {
            return;
        };
        let (got_total, nodes) = top(&text, unit);
        // DRAM bytes are rounded per sample, by at most half a byte each.
        let slack = |n: u64| if index == "dram" { n } else { 0 };
        let near = |got: u64, want: u64, n: u64| got.abs_diff(want) <= slack(n);
        let all = stacks.len() as u64;
        assert!(near(got_total, total, all), "{index} total {total}\n{text}");
        assert_eq!(
            nodes[&process],
            (0, got_total),
            "{index}: the process frame\n{text}"
        );
        for (frame, w) in &want {
            let v = [w.0, w.1, w.2, w.3][field];
            if index == "dram" && partial.contains(frame) {
                assert!(nodes.contains_key(frame), "{index}: {frame}\n{text}");
                continue;
            }
            if v == 0 {
                assert!(!nodes.contains_key(frame), "{index}: {frame}\n{text}");
                continue;
            }
            let (flat, cum) = nodes[frame];
            assert_eq!(flat, cum, "{index}: {frame}\n{text}");
            assert!(
                near(flat, v, samples[frame]),
                "{index}: {frame}: {v}\n{text}"
            );
        }
        if index == "gpu_time" || index == "launches" {
            for (family, (ns, launches)) in &families {
                let v = if index == "gpu_time" { *ns } else { *launches };
                assert_eq!(nodes[family], (0, v), "{index}: family {family}\n{text}");
            }
            for (range, (ns, kernels)) in &ranges {
                let v = if index == "gpu_time" { *ns } else { *kernels };
                assert_eq!(nodes[range], (0, v), "{index}: range {range}\n{text}");
            }
        }
    }
}

#[test]
fn bad_arguments_are_errors_naming_them() {
    let scratch = Scratch::new("pprof-bad");
    let missing = scratch.join("no-such-session");
    let o = gpuprof_command()
        .arg("pprof")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&missing.display().to_string()), "{err}");

    let (a, b) = (scratch.join("a"), scratch.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let o = gpuprof_command()
        .arg("pprof")
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "gpuprof: error: 2 sessions given and no -o FILE: say where to write their profile\n"
    );
}
