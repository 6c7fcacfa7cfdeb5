//! The report as aligned text for people: a section per table, the kernel table cut
//! to `top` rows and the terminal's width.

use super::roles::roles_table;
use super::*;
use crate::analysis::roles::ModelRoles;
use crate::analysis::roofline::what_if::WhatIfs;
use crate::analysis::ConfigStats;

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
    table_view_with(s, roofline, (None, None), top, view)
}

/// [`table_view`] with the sections asked for after the roofline's, when given: the
/// GEMMs by role in the model, and the what-if.
pub fn table_view_with(
    s: &Summary,
    roofline: Option<&Efficiency>,
    (what_if, roles): (Option<&WhatIfs>, Option<&ModelRoles>),
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
    if let Some(r) = roles {
        roles_table(&mut out, r);
    }
    if let Some((rows, skipped)) = what_if {
        what_if_table(&mut out, rows, skipped);
    }
    launch_shape_table(&mut out, &s.launch_shapes, s.kernel_ns, top, &names);
    transfers_table(&mut out, s);
    api_calls_table(&mut out, &s.api_calls, top);
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
    kernels_grid(out, s, kernels, top, names);
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

/// The columns of the kernel table; the times' units are set per column
/// ([`TimeUnit`]).
const KERNEL_TABLE_HEADERS: [&str; 11] = [
    "time %", "total", "calls", "mean", "median", "min", "max", "stddev", "grid", "block", "name",
];

/// One row's times, ns: total, mean, median, min, max, stddev.
type Times = [u64; 6];

/// The row that stands for the configurations not shown: their calls and times in
/// all (no median or standard deviation: those of the set are not known).
fn rest_of_configs(rest: &[ConfigStats]) -> (Times, u64, [String; 3]) {
    let calls: u64 = rest.iter().map(|c| c.calls).sum();
    let total = rest.iter().fold(0u64, |t, c| t.saturating_add(c.total_ns));
    let min = rest.iter().map(|c| c.min_ns).min().unwrap_or(0);
    let max = rest.iter().map(|c| c.max_ns).max().unwrap_or(0);
    let text = [
        format!("+{}", rest.len()),
        "configs".to_string(),
        "└ the rest".to_string(),
    ];
    ([total, mean_ns(total, calls), 0, min, max, 0], calls, text)
}

/// The kernel table: a row per kernel, and under a kernel launched with several
/// configurations a row per configuration (`└` in the name column), the first `top`
/// of them and one row for the rest.
fn kernels_grid(
    out: &mut String,
    s: &Summary,
    kernels: &[KernelStats],
    top: Option<usize>,
    names: &Names,
) {
    // (times, calls, median exact, grid, block, name) per row; `None` for the median
    // exactness of a row whose median and standard deviation are not known.
    let mut rows: Vec<(Times, u64, Option<bool>, [String; 3])> = Vec::new();
    for k in kernels {
        let times = [
            k.total_ns,
            mean_ns(k.total_ns, k.calls),
            k.median_ns,
            k.min_ns,
            k.max_ns,
            k.stddev_ns.round() as u64,
        ];
        let name = names.of(&k.mangled, &k.name);
        // Several configurations: "N" and "configs" across the grid and block
        // columns, each configuration a row below.
        let [grid, block] = if k.configs.len() > 1 {
            [k.configs.len().to_string(), "configs".to_string()]
        } else {
            [dims(k.grid), dims(k.block)]
        };
        rows.push((times, k.calls, Some(k.median_exact), [grid, block, name]));
        if k.configs.len() > 1 {
            let shown = shown_rows(&k.configs, top).len();
            for c in &k.configs[..shown] {
                let times = [
                    c.total_ns,
                    mean_ns(c.total_ns, c.calls),
                    c.median_ns,
                    c.min_ns,
                    c.max_ns,
                    c.stddev_ns.round() as u64,
                ];
                let text = [dims(c.grid), dims(c.block), "└".to_string()];
                rows.push((times, c.calls, Some(c.median_exact), text));
            }
            if shown < k.configs.len() {
                let (times, calls, text) = rest_of_configs(&k.configs[shown..]);
                rows.push((times, calls, None, text));
            }
        }
    }
    let units: [TimeUnit; 6] = std::array::from_fn(|i| {
        TimeUnit::for_column(rows.iter().map(|r| r.0[i]).max().unwrap_or(0))
    });
    let headers: Vec<String> = KERNEL_TABLE_HEADERS
        .iter()
        .enumerate()
        .map(|(i, h)| match i {
            1 => format!("{h} {}", units[0].name()),
            3..=7 => format!("{h} {}", units[i - 2].name()),
            _ => h.to_string(),
        })
        .collect();
    let mut headers = headers;
    let mut cells: Vec<Vec<String>> = rows
        .into_iter()
        .map(|(t, calls, exact, [grid, block, name])| {
            let time = |i: usize| units[i].show(t[i]);
            let (median, stddev) = match exact {
                Some(exact) => (
                    format!("{}{}", if exact { "" } else { "~" }, time(2)),
                    time(5),
                ),
                None => ("-".to_string(), "-".to_string()),
            };
            vec![
                pct(t[0], s.kernel_ns),
                time(0),
                calls.to_string(),
                time(1),
                median,
                time(3),
                time(4),
                stddev,
                grid,
                block,
                name,
            ]
        })
        .collect();
    let mut right = vec![
        true, true, true, true, true, true, true, true, false, false, false,
    ];
    // A long run's widest figures: stddev, then min and max, go first.
    let dropped = if names.full {
        Vec::new()
    } else {
        drop_to_fit(&mut headers, &mut right, &mut cells, &[7, 5, 6])
    };
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    if !names.full {
        fit_last_column(&headers, &mut cells);
    }
    grid_or_none(out, &headers, &right, &cells);
    note_left_out(out, &dropped);
    if kernels
        .iter()
        .any(|k| shown_rows(&k.configs, top).len() < k.configs.len())
    {
        out.push_str(
            "  +N configs: a kernel's other configurations in one row (--top 0 lists each)\n",
        );
    }
    if kernels.iter().any(|k| !k.median_exact) {
        out.push_str("  ~ median within 0.4% (a kernel with over 256 distinct durations)\n");
    }
}

/// What the table says of processes whose stream did not finish.
const UNFINISHED_NOTE: &str = "  (they or the collector stopped first: what they did not deliver is in the\n   undelivered and unwritten rows above when the collector saw them stop;\n   when the collector itself stopped, records it had not sealed are lost, uncounted)\n";
