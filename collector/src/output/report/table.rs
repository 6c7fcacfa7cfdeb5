//! The report as aligned text for people: a section per table, the kernel table cut
//! to `top` rows and the terminal's width.

use super::*;

/// The report as aligned text. `top` limits the kernel table (`None` or 0: all).
pub fn table(s: &Summary, top: Option<usize>) -> String {
    table_with(s, None, top)
}

/// [`table`] with the roofline sections of `roofline` (shown when
/// [`Efficiency::any`]) after the counters.
pub fn table_with(s: &Summary, roofline: Option<&Efficiency>, top: Option<usize>) -> String {
    table_view(s, roofline, top, &View::default())
}

/// [`table_with`] shown as `view` says.
pub fn table_view(
    s: &Summary,
    roofline: Option<&Efficiency>,
    top: Option<usize>,
    view: &View,
) -> String {
    let names = Names::new(&s.kernels, view.full_names);
    let mut out = String::new();
    sessions_table(&mut out, s);
    processes_table(&mut out, s);
    let kernels = kernels_table(&mut out, s, top, &names);
    if s.counters.any() {
        counters_table(&mut out, s, kernels, view.counters, &names);
    }
    if !s.telemetry.is_empty() {
        devices_table(&mut out, &s.telemetry, !s.sessions.is_empty());
    }
    gpu_activity_table(&mut out, &s.gpu_activity);
    match roofline {
        Some(e) if e.any() => roofline_table(&mut out, e, s.kernel_ns, top, &names),
        Some(_) if s.kernel_count > 0 => out.push_str(
            "\nRoofline\n  (no FLOPs: no cuBLAS GEMM shapes and no FLOP counters in this session; \
             see GPUPROF_GEMM and GPUPROF_COUNTERS)\n",
        ),
        _ => {}
    }
    launch_shape_table(&mut out, &s.launch_shapes, s.kernel_ns, top, &names);
    transfers_table(&mut out, s);
    ranges_table(&mut out, s);
    dropped_table(&mut out, s);
    integrity_table(&mut out, &s.integrity);
    out
}

/// The sessions of a report over several, one row each (nothing for one session).
fn sessions_table(out: &mut String, s: &Summary) {
    if !s.sessions.is_empty() {
        out.push_str("Sessions\n");
        let rows: Vec<Vec<String>> = session_rows(s)
            .into_iter()
            .map(|r| {
                vec![
                    r.session.to_string(),
                    r.processes.to_string(),
                    r.kernels.to_string(),
                    micros(r.kernel_ns),
                    r.dir.to_string(),
                ]
            })
            .collect();
        grid(
            out,
            &["session", "processes", "kernels", "GPU µs", "directory"],
            &[true, true, true, true, false],
            &rows,
        );
        out.push('\n');
    }
}

/// Each process: its command, host and CUPTI, devices, capture window, kernels and
/// what was left out of them.
fn processes_table(out: &mut String, s: &Summary) {
    out.push_str("Processes\n");
    if s.processes.is_empty() {
        out.push_str("  (none: the session holds no records)\n");
    }
    for p in &s.processes {
        let session = if s.sessions.is_empty() {
            String::new()
        } else {
            format!(" (session {})", p.session + 1)
        };
        if p.known {
            let head = format!("pid {}{session}: ", p.pid);
            let command = cut_to_width(2 + head.chars().count(), &p.command.join(" "));
            let _ = writeln!(out, "  {head}{command}");
            wrapped(
                out,
                4,
                &format!(
                    "host {}; CUPTI API {} (record layouts {}) from {}",
                    p.host, p.cupti_api_version, p.cupti_layouts, p.cupti_path
                ),
            );
        } else {
            let _ = writeln!(out, "  pid {}{session}: (no process record)", p.pid);
        }
        for d in &p.devices {
            let _ = writeln!(
                out,
                "    device {}: {} (compute capability {}.{}, {} SMs)",
                d.id, d.name, d.compute_capability.0, d.compute_capability.1, d.sm_count
            );
        }
        if let Some(c) = &p.capture {
            let _ = writeln!(out, "    {}", capture_line(c));
        }
        let _ = writeln!(
            out,
            "    {} kernels, {} µs GPU time; {}",
            p.kernels,
            micros(p.kernel_ns),
            if p.finished {
                "stream complete"
            } else {
                "stream did not finish"
            }
        );
        if p.untimed_kernels > 0 {
            let _ = writeln!(
                out,
                "    {} kernels without timestamps (CUPTI gives none to a kernel it replays: \
                 GPUPROF_REPLAY=kernel, GPUPROF_GRAPH_REPLAY=on): their GPU time is unknown \
                 and counts as 0",
                p.untimed_kernels
            );
        }
        if p.cupti_kernels > 0 {
            let _ = writeln!(
                out,
                "    left out: {} kernels CUPTI launched to measure counters (WaitNs, one per \
                 measured launch), {} µs",
                p.cupti_kernels,
                micros(p.cupti_kernel_ns)
            );
        }
    }
}

/// The kernel table, the first `top` kernels by GPU time; returns those shown.
fn kernels_table<'s>(
    out: &mut String,
    s: &'s Summary,
    top: Option<usize>,
    names: &Names,
) -> &'s [KernelStats] {
    let _ = writeln!(
        out,
        "\nKernels by GPU time ({} kernels, {} µs)",
        s.kernel_count,
        micros(s.kernel_ns)
    );
    let kernels = shown(&s.kernels, top);
    kernels_grid(out, s, kernels, names);
    if kernels.len() < s.kernels.len() {
        let _ = writeln!(
            out,
            "  ... {} more kernels (--top 0 shows all)",
            s.kernels.len() - kernels.len()
        );
    }
    kernels
}

/// Memory copies and sets by kind.
fn transfers_table(out: &mut String, s: &Summary) {
    out.push_str("\nMemory copies and sets\n");
    let rows: Vec<Vec<String>> = s
        .transfers
        .iter()
        .map(|t| {
            vec![
                t.kind.clone(),
                t.count.to_string(),
                t.bytes.to_string(),
                micros(t.total_ns),
            ]
        })
        .collect();
    grid_or_none(
        out,
        &["kind", "count", "bytes", "total µs"],
        &[false, true, true, true],
        &rows,
    );
}

/// NVTX ranges by name: count, wall and GPU time.
fn ranges_table(out: &mut String, s: &Summary) {
    out.push_str("\nNVTX ranges\n");
    let mut rows: Vec<Vec<String>> = s
        .ranges
        .iter()
        .map(|r| {
            vec![
                r.count.to_string(),
                r.open.to_string(),
                micros(r.wall_ns),
                r.kernels.to_string(),
                micros(r.gpu_ns),
                pct(r.gpu_ns, s.kernel_ns),
                if r.domain.is_empty() {
                    r.name.clone()
                } else {
                    format!("{}: {}", r.domain, r.name)
                },
            ]
        })
        .collect();
    let range_headers = [
        "count",
        "open",
        "wall µs",
        "kernels",
        "GPU µs",
        "GPU time %",
        "range",
    ];
    fit_last_column(&range_headers, &mut rows);
    grid_or_none(
        out,
        &range_headers,
        &[true, true, true, true, true, true, false],
        &rows,
    );
    if s.unmatched_range_ends > 0 {
        let _ = writeln!(
            out,
            "  {} range ends without a start",
            s.unmatched_range_ends
        );
    }
}

/// Records dropped by source, and the processes whose stream did not finish.
fn dropped_table(out: &mut String, s: &Summary) {
    out.push_str("\nDropped records\n");
    let rows: Vec<Vec<String>> = s
        .dropped
        .iter()
        .map(|d| vec![d.source.clone(), d.records.to_string()])
        .collect();
    grid(out, &["source", "records"], &[false, true], &rows);

    if !s.unfinished.is_empty() {
        let pids: Vec<String> = s.unfinished.iter().map(|p| p.to_string()).collect();
        let _ = writeln!(
            out,
            "\nProcesses whose stream did not finish: {}",
            pids.join(", ")
        );
        out.push_str(UNFINISHED_NOTE);
    }
}

/// What a process's capture window let through, in one line: "captured:
/// cudaProfilerApi, 2 windows, 12 of 40 launches", with the delay and duration when
/// set.
pub fn capture_line(c: &wire::Capture) -> String {
    let mut what = Vec::new();
    if !c.range.is_empty() {
        what.push(c.range.clone());
    }
    if c.delay_ns > 0 {
        what.push(format!("delay {} s", seconds(c.delay_ns)));
    }
    if c.duration_ns > 0 {
        what.push(format!("duration {} s", seconds(c.duration_ns)));
    }
    format!(
        "captured: {}, {} window{}, {} of {} launches",
        what.join(", "),
        c.windows,
        if c.windows == 1 { "" } else { "s" },
        c.captured_launches,
        c.launches
    )
}

/// ns as seconds, without trailing zeros ("1.5", "2").
fn seconds(ns: u64) -> String {
    let s = format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The columns of the kernel table.
const KERNEL_TABLE_HEADERS: [&str; 11] = [
    "time %",
    "total µs",
    "calls",
    "mean µs",
    "median µs",
    "min µs",
    "max µs",
    "stddev µs",
    "grid",
    "block",
    "name",
];

/// The kernel table: a row per kernel, and under a kernel launched with several
/// configurations a row per configuration (`└` in the name column).
fn kernels_grid(out: &mut String, s: &Summary, kernels: &[KernelStats], names: &Names) {
    let spread = |total: u64, calls: u64, median: u64, exact: bool, min: u64, max: u64, sd: f64| {
        vec![
            pct(total, s.kernel_ns),
            micros(total),
            calls.to_string(),
            micros(mean_ns(total, calls)),
            format!("{}{}", if exact { "" } else { "~" }, micros(median)),
            micros(min),
            micros(max),
            micros(sd.round() as u64),
        ]
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    for k in kernels {
        let mut row = spread(
            k.total_ns,
            k.calls,
            k.median_ns,
            k.median_exact,
            k.min_ns,
            k.max_ns,
            k.stddev_ns,
        );
        if k.configs.len() > 1 {
            row.extend([format!("{} configs", k.configs.len()), String::new()]);
        } else {
            row.extend([dims(k.grid), dims(k.block)]);
        }
        row.push(names.of(&k.mangled, &k.name));
        rows.push(row);
        if k.configs.len() > 1 {
            for c in &k.configs {
                let mut row = spread(
                    c.total_ns,
                    c.calls,
                    c.median_ns,
                    c.median_exact,
                    c.min_ns,
                    c.max_ns,
                    c.stddev_ns,
                );
                row.extend([dims(c.grid), dims(c.block), "└".to_string()]);
                rows.push(row);
            }
        }
    }
    if !names.full {
        fit_last_column(&KERNEL_TABLE_HEADERS, &mut rows);
    }
    grid_or_none(
        out,
        &KERNEL_TABLE_HEADERS,
        &[
            true, true, true, true, true, true, true, true, false, false, false,
        ],
        &rows,
    );
    if kernels.iter().any(|k| !k.median_exact) {
        out.push_str("  ~ median within 0.4% (a kernel with over 256 distinct durations)\n");
    }
}

/// What the table says of processes whose stream did not finish.
const UNFINISHED_NOTE: &str = "  (they or the collector stopped first: what they did not deliver is in the\n   undelivered and unwritten rows above when the collector saw them stop;\n   when the collector itself stopped, records it had not sealed are lost, uncounted)\n";
