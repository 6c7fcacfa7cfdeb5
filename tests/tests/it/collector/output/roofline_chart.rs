//! `gpuprof roofline` on a session of the cudarc workload recorded on the simulated
//! H100: the SVG is exactly the chart of the points the CSV lists (rebuilt from the
//! CSV, it renders to the same bytes), it renders (resvg), and each plotted point's
//! circle (a GEMM shape, or a kernel that is not only GEMMs) is where the CSV puts it,
//! in its family's colour.

use gpuprof_collector::analysis::roofline::peaks;
use gpuprof_collector::output::roofline::layout::{
    family_rgb, layout, Ceiling, Chart, ChartPoint, POINT_OPACITY,
};
use gpuprof_collector::output::roofline::svg::render_svg;
use gpuprof_tests::{artifact, gpuprof_command, record_on_sim, Scratch};

const GPU: &str = "NVIDIA H100 80GB HBM3";

/// Splits one CSV line (fields quoted when they hold commas or quotes).
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[test]
fn the_chart_is_the_csv_drawn() {
    let scratch = Scratch::new("roofline-chart");
    let session = scratch.join("session");
    let out = record_on_sim("13.4")
        .arg("-o")
        .arg(&session)
        .arg("--")
        .arg(artifact("cudarc-llm"))
        // Every counter on every measured launch: every kernel can be plotted.
        .env("GPUPROF_REPLAY", "kernel")
        .output()
        .expect("run gpuprof record");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The points: the report's GEMM shape rows, and its kernel rows whose launches are
    // not all GEMM calls (a kernel that only runs GEMMs is drawn as its shapes).
    let report = gpuprof_command()
        .args(["report", "--format", "json"])
        .arg(&session)
        .output()
        .expect("run gpuprof report");
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).expect("report JSON");
    let kernels: Vec<&serde_json::Value> = report["roofline"]["kernels"]
        .as_array()
        .expect("roofline kernels")
        .iter()
        .filter(|k| !(k["gemm_launches"].as_u64() > Some(0) && k["gemm_launches"] == k["calls"]))
        .collect();
    let shapes = report["roofline"]["shapes"]
        .as_array()
        .expect("roofline shapes");
    // A shape as a row-major caller reads it: tokens x out x in, batch, types, ops.
    let as_read = |s: &serde_json::Value| {
        let t = |k: &str| s[k].as_str().unwrap().to_string();
        format!(
            "GEMM {}x{}x{} x{} {}·{}->{} ({}) {}{}",
            s["n"],
            s["m"],
            s["k"],
            s["batch"],
            t("a_type"),
            t("b_type"),
            t("d_type"),
            t("compute_type"),
            t("trans_a"),
            t("trans_b")
        )
    };
    let n_points = kernels.len() + shapes.len();
    // 5 kernels besides the GEMMs (attention, elementwise, reduction), 10 GEMM shapes.
    assert_eq!((kernels.len(), shapes.len()), (5, 10));

    let svg_path = scratch.join("chart.svg");
    let out = gpuprof_command()
        .arg("roofline")
        .arg(&session)
        .arg("-o")
        .arg(&svg_path)
        .output()
        .expect("run gpuprof roofline");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "gpuprof: roofline of {GPU} written to {} ({n_points} of {n_points} points plotted)\n\
             gpuprof: the points: {} and {}\n",
            svg_path.display(),
            scratch.join("chart.csv").display(),
            scratch.join("chart.json").display()
        )
    );
    let svg = std::fs::read_to_string(&svg_path).expect("svg written");
    let csv = std::fs::read_to_string(scratch.join("chart.csv")).expect("csv written");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(scratch.join("chart.json")).expect("json written"))
            .expect("json parses");

    // The chart rebuilt from the CSV and the built-in H100 peaks.
    let mut lines = csv.lines();
    let header = fields(lines.next().expect("header"));
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    let rows: Vec<Vec<String>> = lines.map(fields).collect();
    assert_eq!(rows.len(), n_points);
    assert_eq!(json.as_array().map(Vec::len), Some(n_points));

    // One name, one unit: each point's figures are the report's row's (kernel or GEMM
    // shape), under the same names (MFU and MBU in percent), in the CSV and the JSON
    // alike.
    for (r, j) in rows.iter().zip(json.as_array().unwrap()) {
        let name = r[col("name")].as_str();
        let k = match r[col("kind")].as_str() {
            "kernel" => kernels
                .iter()
                .copied()
                .find(|k| k["name"].as_str() == Some(name)),
            "gemm_shape" => shapes.iter().find(|s| as_read(s) == name),
            other => panic!("kind {other}"),
        }
        .unwrap_or_else(|| panic!("the point's report row: {name}"));
        for key in [
            "bytes",
            "intensity",
            "achieved_flops_per_s",
            "mfu_pct",
            "mbu_pct",
        ] {
            // The CSV's shortest round-trip text, parsed exactly by Rust; the report's
            // JSON parsed by serde_json, whose parser may be an ulp off.
            let csv_value: f64 = r[col(key)].parse().expect(key);
            let want = k[key].as_f64().expect(key);
            assert!(
                (csv_value - want).abs() <= want.abs() * 4.0 * f64::EPSILON,
                "{key} of {name}: {csv_value} vs {want}"
            );
            assert_eq!(j[key], k[key], "{key} of {name}");
        }
    }
    let num = |r: &Vec<String>, c: &str| r[col(c)].parse::<f64>().expect(c);
    let mut used = Vec::new();
    let points: Vec<ChartPoint> = rows
        .iter()
        .map(|r| {
            assert_eq!(r[col("gpu")], GPU);
            assert_eq!(r[col("plotted")], "true");
            if !used.contains(&r[col("math")]) {
                used.push(r[col("math")].clone());
            }
            ChartPoint {
                label: r[col("name")].clone(),
                family: r[col("family")].clone(),
                intensity: num(r, "intensity"),
                flops_per_s: num(r, "achieved_flops_per_s"),
                gpu_ns: r[col("gpu_ns")].parse().expect("gpu_ns"),
            }
        })
        .collect();
    let h100 = peaks::known(GPU).expect("H100 in the peak table");
    let ceilings: Vec<Ceiling> = h100
        .ceilings()
        .into_iter()
        .filter(|(m, _)| used.contains(&m.to_string()))
        .map(|(m, v)| Ceiling {
            label: m.to_string(),
            flops_per_s: v,
        })
        .collect();
    assert_eq!(
        ceilings
            .iter()
            .map(|c| c.label.as_str())
            .collect::<Vec<_>>(),
        ["BF16 tensor", "FP32 CUDA cores"]
    );
    let chart = Chart {
        title: format!("{GPU} \u{2014} roofline"),
        bandwidth_bytes_per_s: h100.bandwidth().expect("bandwidth"),
        ceilings,
        points,
    };
    assert_eq!(svg, render_svg(&chart), "the SVG is the CSV's points drawn");

    // It renders, and each circle's centre has its family's colour over white (the
    // biggest circle is drawn first, so take points no other circle covers).
    let tree = resvg::usvg::Tree::from_str(&svg, &resvg::usvg::Options::default())
        .expect("the SVG parses");
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).expect("pixmap");
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    let l = layout(&chart);
    assert_eq!(l.points.len(), n_points);
    assert!(l.skipped.is_empty());
    let mut checked = 0;
    for p in &l.points {
        let alone = l.points.iter().all(|q| {
            q.index == p.index
                || ((q.x - p.x).powi(2) + (q.y - p.y).powi(2)).sqrt() > q.radius + 2.0
        });
        if !alone {
            continue;
        }
        let px = pixmap
            .pixel(p.x.round() as u32, p.y.round() as u32)
            .expect("inside the image")
            .demultiply();
        let (r, g, b) = family_rgb(&chart.points[p.index].family);
        let blend = |c: u8| (c as f64 * POINT_OPACITY + 255.0 * (1.0 - POINT_OPACITY)).round();
        let got = [px.red() as f64, px.green() as f64, px.blue() as f64];
        let want = [blend(r), blend(g), blend(b)];
        // Grid lines under a centre shift a channel by a few units at most.
        assert!(
            got.iter().zip(want).all(|(a, b)| (a - b).abs() <= 8.0),
            "{}: pixel {got:?}, want {want:?}",
            chart.points[p.index].label
        );
        checked += 1;
    }
    assert!(checked >= 4, "only {checked} circles stand alone");
}
