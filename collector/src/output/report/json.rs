//! The report as one JSON object: the tables as arrays, with the same names and
//! columns as the CSV's.

use super::*;

/// The report as one JSON object of arrays (see the module documentation).
pub fn json(s: &Summary, top: Option<usize>) -> Value {
    json_with(s, None, top)
}

/// A process's `capture` object (JSON), also the row of CSV `captures`.
fn capture_json(c: &wire::Capture) -> Value {
    json!({
        "range": c.range,
        "delay_ns": c.delay_ns,
        "duration_ns": c.duration_ns,
        "windows": c.windows,
        "launches": c.launches,
        "captured_launches": c.captured_launches,
    })
}

/// [`json()`] with a `roofline` object when [`Efficiency::any`].
pub fn json_with(s: &Summary, roofline: Option<&Efficiency>, top: Option<usize>) -> Value {
    let processes: Vec<Value> = s
        .processes
        .iter()
        .map(|p| {
            json!({
                "pid": p.pid,
                "known": p.known,
                "command": p.command,
                "host": p.host,
                "cupti_api_version": p.cupti_api_version,
                "cupti_layouts": p.cupti_layouts,
                "cupti_path": p.cupti_path,
                "devices": p.devices.iter().map(|d| json!({
                    "id": d.id,
                    "name": d.name,
                    "compute_capability": [d.compute_capability.0, d.compute_capability.1],
                    "sm_count": d.sm_count,
                    "uuid": d.uuid,
                })).collect::<Vec<_>>(),
                "kernels": p.kernels,
                "kernel_ns": p.kernel_ns,
                "finished": p.finished,
            })
        })
        .collect();
    let mut processes = processes;
    for (v, p) in processes.iter_mut().zip(&s.processes) {
        if let Some(c) = &p.capture {
            v["capture"] = capture_json(c);
        }
    }
    if !s.sessions.is_empty() {
        for (v, p) in processes.iter_mut().zip(&s.processes) {
            v["session"] = json!(p.session + 1);
        }
    }
    let kernels: Vec<Value> = shown(&s.kernels, top)
        .iter()
        .map(|k| {
            json!({
                "name": k.name,
                "mangled": k.mangled,
                "calls": k.calls,
                "total_ns": k.total_ns,
                "mean_ns": mean_ns(k.total_ns, k.calls),
                "min_ns": k.min_ns,
                "max_ns": k.max_ns,
                "gpu_time_pct": percent(k.total_ns, s.kernel_ns),
                "grid": k.grid,
                "block": k.block,
                "short_name": k.short_name,
                "median_ns": k.median_ns,
                "median_exact": k.median_exact,
                "stddev_ns": k.stddev_ns,
                "configs": k.configs.iter().map(|c| json!({
                    "grid": c.grid,
                    "block": c.block,
                    "calls": c.calls,
                    "total_ns": c.total_ns,
                    "mean_ns": mean_ns(c.total_ns, c.calls),
                    "min_ns": c.min_ns,
                    "max_ns": c.max_ns,
                    "median_ns": c.median_ns,
                    "median_exact": c.median_exact,
                    "stddev_ns": c.stddev_ns,
                    "gpu_time_pct": percent(c.total_ns, s.kernel_ns),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let transfers: Vec<Value> = s
        .transfers
        .iter()
        .map(
            |t| json!({"kind": t.kind, "count": t.count, "bytes": t.bytes, "total_ns": t.total_ns}),
        )
        .collect();
    let ranges: Vec<Value> = s
        .ranges
        .iter()
        .map(|r| {
            json!({
                "domain": r.domain,
                "name": r.name,
                "count": r.count,
                "open": r.open,
                "wall_ns": r.wall_ns,
                "kernels": r.kernels,
                "gpu_ns": r.gpu_ns,
                "gpu_time_pct": percent(r.gpu_ns, s.kernel_ns),
            })
        })
        .collect();
    let dropped: Vec<Value> = s
        .dropped
        .iter()
        .map(|d| json!({"source": d.source, "records": d.records}))
        .collect();
    let mut out = json!({
        "processes": processes,
        "kernel_count": s.kernel_count,
        "kernel_ns": s.kernel_ns,
        "kernels": kernels,
        "transfers": transfers,
        "nvtx_ranges": ranges,
        "unmatched_range_ends": s.unmatched_range_ends,
        "dropped": dropped,
        "unfinished": s.unfinished,
    });
    if !s.sessions.is_empty() {
        out["sessions"] = json!(session_rows(s)
            .iter()
            .map(|r| json!({
                "session": r.session,
                "dir": r.dir,
                "processes": r.processes,
                "kernels": r.kernels,
                "kernel_ns": r.kernel_ns,
            }))
            .collect::<Vec<_>>());
    }
    if !s.telemetry.is_empty() {
        out["device_telemetry"] = telemetry_json(&s.telemetry);
    }
    if s.gpu_activity.iter().any(|g| !g.fields.is_empty()) {
        out["gpu_activity"] = gpu_activity_json(&s.gpu_activity);
    }
    if s.counters.any() {
        out["counters"] = counters_json(s, top);
    }
    if !s.launch_shapes.is_empty() {
        out["launch_shapes"] = launch_shape_json(&s.launch_shapes, s.kernel_ns, top);
    }
    if let Some(v) = api_calls_json(&s.api_calls) {
        out["api_calls"] = v;
    }
    if let Some(e) = roofline.filter(|e| e.any()) {
        out["roofline"] = roofline_json(e, top);
    }
    integrity_json(&mut out, &s.integrity);
    out
}
