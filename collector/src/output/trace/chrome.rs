//! The trace as Chrome trace-event JSON (the object format: `traceEvents`,
//! `displayTimeUnit`, `otherData`), which chrome://tracing and Perfetto open, written
//! event by event.
//!
//! Each profiled process is a trace process (`pid` = its pid, named by a
//! `process_name` metadata event: "<command line> (pid N)"); its threads and streams
//! have `tid` 1, 2, ... in the order they first get an event, each named by a
//! `thread_name` metadata event ("thread N", "GPU D stream S"). Slices are complete
//! events (`X`), start/end NVTX ranges async events (`b` / `e`, ids from 1) of the
//! process; a flow is an `s` event in the middle of the launch call and an `f` event
//! (`bp: "e"`) in the middle of the kernel, ids from 1. Timestamps and durations are
//! µs (fractional, ns precision) from `origin`, the session's first timestamp.

use ahash::AHashMap;
use std::io::{self, Write};

use serde_json::{json, Map, Value as Json};

use super::event::{Category, Process, Sink, Slice, Track, TrackKind, Value};

/// Writes Chrome trace-event JSON to `W`.
pub struct ChromeWriter<W: Write> {
    out: W,
    origin: u64,
    first: bool,
    /// Track id -> (pid, tid); tid 0 for start/end ranges.
    tracks: AHashMap<u64, (u32, u32)>,
    next_flow: u64,
    next_async: u64,
}

impl<W: Write> ChromeWriter<W> {
    /// Starts the file; times are written relative to `origin` (ns).
    pub fn new(mut out: W, origin: u64) -> io::Result<ChromeWriter<W>> {
        out.write_all(b"{\"traceEvents\":[")?;
        Ok(ChromeWriter {
            out,
            origin,
            first: true,
            tracks: AHashMap::new(),
            next_flow: 1,
            next_async: 1,
        })
    }

    fn us(&self, t: u64) -> f64 {
        t.saturating_sub(self.origin) as f64 / 1000.0
    }

    fn event(&mut self, e: &Json) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, e)?;
        Ok(())
    }

    fn ids(&self, track: u64) -> (u32, u32) {
        self.tracks.get(&track).copied().unwrap_or((0, 0))
    }
}

fn args(s: &Slice) -> Json {
    let mut m = Map::new();
    for a in s.args {
        let v = match a.value {
            Value::U64(v) => json!(v),
            Value::I64(v) => json!(v),
            Value::F64(v) => json!(v),
            Value::Bool(v) => json!(v),
            Value::Str(v) => json!(v),
            Value::Dim(d) => json!(d),
        };
        m.insert(a.name.to_string(), v);
    }
    Json::Object(m)
}

impl<W: Write> Sink for ChromeWriter<W> {
    fn process(&mut self, p: &Process) -> io::Result<()> {
        let name = if p.command.is_empty() {
            format!("pid {}", p.pid)
        } else {
            format!("{} (pid {})", p.command.join(" "), p.pid)
        };
        self.event(&json!({"ph": "M", "name": "process_name", "pid": p.pid, "tid": 0, "args": {"name": name}}))
    }

    fn track(&mut self, t: &Track) -> io::Result<()> {
        if t.kind == TrackKind::Range {
            self.tracks.insert(t.id, (t.pid, 0));
            return Ok(());
        }
        self.tracks.insert(t.id, (t.pid, t.index));
        self.event(&json!({"ph": "M", "name": "thread_name", "pid": t.pid, "tid": t.index, "args": {"name": t.name()}}))
    }

    fn slice(&mut self, s: &Slice) -> io::Result<()> {
        let (pid, tid) = self.ids(s.track);
        let cat = s.category.name();
        if tid == 0 && s.category == Category::Nvtx {
            let id = self.next_async;
            self.next_async += 1;
            self.event(&json!({
                "ph": "b", "cat": cat, "name": s.name, "id": id, "pid": pid, "tid": 0,
                "ts": self.us(s.start_ns), "args": args(s),
            }))?;
            return self.event(&json!({
                "ph": "e", "cat": cat, "name": s.name, "id": id, "pid": pid, "tid": 0,
                "ts": self.us(s.end_ns),
            }));
        }
        self.event(&json!({
            "ph": "X", "cat": cat, "name": s.name, "pid": pid, "tid": tid,
            "ts": self.us(s.start_ns), "dur": s.end_ns.saturating_sub(s.start_ns) as f64 / 1000.0,
            "args": args(s),
        }))?;
        if let Some(f) = s.flow_in {
            let id = self.next_flow;
            self.next_flow += 1;
            let (from_pid, from_tid) = self.ids(f.from_track);
            let kernel_mid = s.start_ns + s.end_ns.saturating_sub(s.start_ns) / 2;
            self.event(&json!({
                "ph": "s", "cat": "launch", "name": "launch", "id": id, "pid": from_pid,
                "tid": from_tid, "ts": self.us(f.from_mid_ns),
            }))?;
            self.event(&json!({
                "ph": "f", "bp": "e", "cat": "launch", "name": "launch", "id": id, "pid": pid,
                "tid": tid, "ts": self.us(kernel_mid),
            }))?;
        }
        Ok(())
    }

    /// Kernels carry their GEMM call and roofline numbers as arguments.
    fn joined(&self) -> bool {
        true
    }

    fn finish(&mut self) -> io::Result<()> {
        let other = json!({
            "generator": format!("gpuprof {}", env!("CARGO_PKG_VERSION")),
            "time_base_ns": self.origin,
        });
        self.out
            .write_all(b"],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        serde_json::to_writer(&mut self.out, &other)?;
        self.out.write_all(b"}\n")?;
        self.out.flush()
    }
}
