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
    Value::Object(
        members(s, roofline, top)
            .into_iter()
            .map(|(key, make)| (key.to_string(), make()))
            .collect(),
    )
}

/// One member of the report's JSON object: its key, and what makes its value when
/// it is written ([`write_members`]).
pub type Member<'a> = (&'static str, Box<dyn FnOnce() -> Value + 'a>);

fn member<'a>(key: &'static str, make: impl FnOnce() -> Value + 'a) -> Member<'a> {
    (key, Box::new(make))
}

/// The members of [`json_with`]'s object, each made only when asked for.
pub fn members<'a>(
    s: &'a Summary,
    roofline: Option<&'a Efficiency>,
    top: Option<usize>,
) -> Vec<Member<'a>> {
    let mut out = vec![
        member("processes", || processes_json(s)),
        member("kernel_count", || json!(s.kernel_count)),
        member("kernel_ns", || json!(s.kernel_ns)),
        member("kernels", move || kernels_json(s, top)),
        member("transfers", || transfers_json(s)),
        member("nvtx_ranges", || ranges_json(s)),
        member("unmatched_range_ends", || json!(s.unmatched_range_ends)),
        member("dropped", || dropped_json(s)),
        member("unfinished", || json!(s.unfinished)),
    ];
    if !s.sessions.is_empty() {
        out.push(member("sessions", || sessions_json(s)));
    }
    if !s.telemetry.is_empty() {
        out.push(member("device_telemetry", || telemetry_json(&s.telemetry)));
    }
    if s.gpu_activity.iter().any(|g| !g.fields.is_empty()) {
        out.push(member("gpu_activity", || {
            gpu_activity_json(&s.gpu_activity)
        }));
    }
    if s.counters.any() {
        out.push(member("counters", move || counters_json(s, top)));
    }
    if !s.launch_shapes.is_empty() {
        out.push(member("launch_shapes", move || {
            launch_shape_json(&s.launch_shapes, s.kernel_ns, top)
        }));
    }
    if !s.api_calls.is_empty() {
        out.push(member("api_calls", || {
            api_calls_json(&s.api_calls).unwrap_or(Value::Null)
        }));
    }
    if let Some(e) = roofline.filter(|e| e.any()) {
        out.push(member("roofline", move || roofline_json(e, top)));
    }
    out.extend(
        integrity_json(&s.integrity)
            .into_iter()
            .map(|(key, v)| member(key, || v)),
    );
    out
}

/// `members` as one pretty-printed JSON object, in the order of their keys, each
/// value made, written and dropped before the next is made: the bytes
/// `serde_json::to_string_pretty` gives for the object [`json_with`] makes, without
/// the whole document in memory at once (its largest member at a time).
pub fn write_members(mut members: Vec<Member>, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    // A `serde_json` object's keys are in order (a BTreeMap); the last of a key wins.
    members.reverse();
    members.sort_by_key(|(key, _)| *key);
    members.dedup_by_key(|(key, _)| *key);
    if members.is_empty() {
        return w.write_all(b"{}");
    }
    w.write_all(b"{")?;
    let last = members.len() - 1;
    for (i, (key, make)) in members.into_iter().enumerate() {
        let key = serde_json::to_string(key).map_err(std::io::Error::other)?;
        write!(w, "\n  {key}: ")?;
        serde_json::to_writer_pretty(Indented(&mut *w), &make()).map_err(std::io::Error::other)?;
        if i < last {
            w.write_all(b",")?;
        }
    }
    w.write_all(b"\n}")
}

/// A writer that puts each line after the first one level (two spaces) deeper: a
/// pretty-printed value written at the top level then reads as one nested in an
/// object. Only pretty-printed JSON goes through it: its newlines are all between
/// tokens (a string's are escaped).
struct Indented<'a>(&'a mut dyn std::io::Write);

impl std::io::Write for Indented<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut lines = buf.split(|&b| b == b'\n');
        if let Some(first) = lines.next() {
            self.0.write_all(first)?;
        }
        for line in lines {
            self.0.write_all(b"\n  ")?;
            self.0.write_all(line)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn processes_json(s: &Summary) -> Value {
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
    json!(processes)
}

fn kernels_json(s: &Summary, top: Option<usize>) -> Value {
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
    json!(kernels)
}

fn transfers_json(s: &Summary) -> Value {
    let transfers: Vec<Value> = s
        .transfers
        .iter()
        .map(
            |t| json!({"kind": t.kind, "count": t.count, "bytes": t.bytes, "total_ns": t.total_ns}),
        )
        .collect();
    json!(transfers)
}

fn ranges_json(s: &Summary) -> Value {
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
    json!(ranges)
}

fn dropped_json(s: &Summary) -> Value {
    let dropped: Vec<Value> = s
        .dropped
        .iter()
        .map(|d| json!({"source": d.source, "records": d.records}))
        .collect();
    json!(dropped)
}

fn sessions_json(s: &Summary) -> Value {
    json!(session_rows(s)
        .iter()
        .map(|r| json!({
            "session": r.session,
            "dir": r.dir,
            "processes": r.processes,
            "kernels": r.kernels,
            "kernel_ns": r.kernel_ns,
        }))
        .collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `serde_json` writes for the object of `members` made whole.
    fn whole(members: Vec<(&'static str, Value)>) -> String {
        let object: serde_json::Map<String, Value> = members
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        serde_json::to_string_pretty(&Value::Object(object)).unwrap()
    }

    fn written(members: Vec<(&'static str, Value)>) -> String {
        let mut out = Vec::new();
        let members = members
            .into_iter()
            .map(|(k, v)| member(k, move || v))
            .collect();
        write_members(members, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn members_written_one_at_a_time_are_the_whole_objects_bytes() {
        let members = || {
            vec![
                (
                    "kernels",
                    json!([{"name": "a\nb", "grid": [1, 2, 3], "configs": []}]),
                ),
                ("empty", json!({})),
                ("count", json!(7)),
                (
                    "nested",
                    json!({"z": {"y": [[], {}], "x": "\"quoted\"\n"}, "a": null}),
                ),
                // A key given twice: the last value, as an object built key by key.
                ("count", json!(8.5)),
                ("after", json!([])),
            ]
        };
        let expected = whole(members());
        assert!(expected.contains("\"count\": 8.5"));
        assert_eq!(written(members()), expected);
        assert_eq!(written(Vec::new()), whole(Vec::new()));
    }
}
