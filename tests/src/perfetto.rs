//! Reading `gpuprof trace` output with Perfetto's own classes
//! (`tests/perfetto/read_trace.py` in the venv of `scripts/python-env.sh`), and what
//! the tests ask of it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::{venv_python, TimedChild};

/// The Perfetto trace at `path` as `read_trace.py` prints it (tracks, slices in
/// timestamp order, flows, sequences, clock snapshots); panics with the script's
/// message when the trace breaks a rule it checks.
pub fn read_perfetto_trace(path: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("perfetto/read_trace.py");
    let mut cmd = Command::new(venv_python());
    cmd.arg("-W").arg("error").arg(&script).arg(path);
    let out = TimedChild::spawn(cmd, Duration::from_secs(300)).wait();
    assert!(
        out.status.success(),
        "read_trace.py {}: {}",
        path.display(),
        out.stderr
    );
    serde_json::from_str(&out.stdout).expect("read_trace.py prints JSON")
}

/// A track's name as the tests name it: "thread N" for a thread track, else its
/// name (a process track: "process N").
pub fn track_names(trace: &Value) -> BTreeMap<u64, String> {
    trace["tracks"]
        .as_array()
        .expect("tracks")
        .iter()
        .map(|t| {
            let name = if let Some(tid) = t["tid"].as_u64() {
                format!("thread {tid}")
            } else if let Some(name) = t["name"].as_str() {
                name.to_string()
            } else {
                format!("process {}", t["pid"])
            };
            (t["uuid"].as_u64().expect("uuid"), name)
        })
        .collect()
}

/// Slices per (track name, category).
pub fn slices_per_track(trace: &Value) -> BTreeMap<(String, String), u64> {
    let names = track_names(trace);
    let mut out = BTreeMap::new();
    for s in trace["slices"].as_array().expect("slices") {
        let track = names[&s["track"].as_u64().expect("track")].clone();
        let cat = s["category"].as_str().expect("category").to_string();
        *out.entry((track, cat)).or_default() += 1;
    }
    out
}
