//! The channel from the simulated driver (in the profiled process) to the simulated
//! NVML (in whichever process asks, e.g. the collector): files under the directory
//! `$SIMCUDA_TELEMETRY_DIR` names. Unset, nothing is written and NVML sees idle devices.
//!
//! - `loaded`: when the "driver" was loaded, ns (`CLOCK_REALTIME`), decimal; made by the
//!   first of either library to need it, never changed after. Energy counts from here.
//! - `gpu<N>.busy`: one line per GPU operation device `N` ran, `k <start> <end>` for a
//!   kernel, `m <start> <end>` for a copy or set (ns); appended with one `write` each, so
//!   processes sharing a device interleave whole lines.
//! - `gpu<N>.mem.<pid>`: the bytes process `pid` has allocated on device `N`, decimal;
//!   replaced whole (written aside, then renamed). A process that is gone holds nothing.
//!
//! A line or file that does not parse is skipped: both ends are this crate.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The variable naming the directory.
pub const DIR_ENV: &str = "SIMCUDA_TELEMETRY_DIR";

/// What kind of work kept the device busy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    Kernel,
    /// A copy or set: device memory read or written.
    Transfer,
}

/// One GPU operation: what, from `start_ns` to `end_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busy {
    pub work: Work,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The telemetry directory.
#[derive(Clone, Debug)]
pub struct TelemetryDir(PathBuf);

impl TelemetryDir {
    /// The directory `$SIMCUDA_TELEMETRY_DIR` names, if set and not empty.
    pub fn from_env() -> Option<TelemetryDir> {
        std::env::var_os(DIR_ENV)
            .filter(|v| !v.is_empty())
            .map(|v| TelemetryDir(PathBuf::from(v)))
    }

    pub fn new(dir: impl Into<PathBuf>) -> TelemetryDir {
        TelemetryDir(dir.into())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// When the driver was loaded: the `loaded` file, made with `now_ns` if missing.
    /// `None` when the directory cannot be written or read.
    pub fn loaded_ns(&self, now_ns: u64) -> Option<u64> {
        let p = self.0.join("loaded");
        if let Ok(mut f) = OpenOptions::new().write(true).create_new(true).open(&p) {
            f.write_all(now_ns.to_string().as_bytes()).ok()?;
            return Some(now_ns);
        }
        // Another process made it: it may not have written yet.
        for _ in 0..100 {
            if let Some(v) = std::fs::read_to_string(&p)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return Some(v);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        None
    }

    /// Opens device `dev`'s busy file for appending.
    pub fn busy_writer(&self, dev: u32) -> std::io::Result<File> {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.0.join(format!("gpu{dev}.busy")))
    }

    /// Device `dev`'s operations so far, in the order written.
    pub fn busy(&self, dev: u32) -> Vec<Busy> {
        let text =
            std::fs::read_to_string(self.0.join(format!("gpu{dev}.busy"))).unwrap_or_default();
        text.lines().filter_map(parse_busy).collect()
    }

    /// Records that process `pid` has `bytes` allocated on device `dev`.
    pub fn write_memory(&self, dev: u32, pid: u32, bytes: u64) -> std::io::Result<()> {
        let name = format!("gpu{dev}.mem.{pid}");
        let tmp = self.0.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes.to_string())?;
        std::fs::rename(&tmp, self.0.join(name))
    }

    /// The bytes allocated on device `dev` by processes for which `alive(pid)`.
    pub fn memory_used(&self, dev: u32, alive: impl Fn(u32) -> bool) -> u64 {
        let prefix = format!("gpu{dev}.mem.");
        let Ok(entries) = std::fs::read_dir(&self.0) else {
            return 0;
        };
        entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let pid: u32 = name.strip_prefix(&prefix)?.parse().ok()?;
                if !alive(pid) {
                    return None;
                }
                std::fs::read_to_string(e.path())
                    .ok()?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .sum()
    }
}

/// Formats one busy line.
pub fn busy_line(b: &Busy) -> String {
    let k = match b.work {
        Work::Kernel => 'k',
        Work::Transfer => 'm',
    };
    format!("{k} {} {}\n", b.start_ns, b.end_ns)
}

fn parse_busy(line: &str) -> Option<Busy> {
    let mut f = line.split(' ');
    let work = match f.next()? {
        "k" => Work::Kernel,
        "m" => Work::Transfer,
        _ => return None,
    };
    let start_ns = f.next()?.parse().ok()?;
    let end_ns = f.next()?.parse().ok()?;
    (f.next().is_none() && start_ns <= end_ns).then_some(Busy {
        work,
        start_ns,
        end_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> TelemetryDir {
        let d = std::env::temp_dir().join(format!("simtele-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TelemetryDir::new(d)
    }

    #[test]
    fn busy_lines_round_trip_and_bad_lines_are_skipped() {
        let t = scratch("busy");
        let mut w = t.busy_writer(1).unwrap();
        let a = Busy {
            work: Work::Kernel,
            start_ns: 10,
            end_ns: 25,
        };
        let b = Busy {
            work: Work::Transfer,
            start_ns: 30,
            end_ns: 31,
        };
        w.write_all(busy_line(&a).as_bytes()).unwrap();
        w.write_all(b"x 1 2\nk 5 4\nk 1 2 3\nk 7\n").unwrap();
        w.write_all(busy_line(&b).as_bytes()).unwrap();
        assert_eq!(t.busy(1), vec![a, b]);
        assert_eq!(t.busy(0), vec![]);
        std::fs::remove_dir_all(t.path()).unwrap();
    }

    #[test]
    fn memory_counts_live_processes_only() {
        let t = scratch("mem");
        t.write_memory(0, 100, 4096).unwrap();
        t.write_memory(0, 101, 1000).unwrap();
        t.write_memory(0, 100, 8192).unwrap();
        t.write_memory(1, 100, 7).unwrap();
        assert_eq!(t.memory_used(0, |_| true), 9192);
        assert_eq!(t.memory_used(0, |pid| pid == 100), 8192);
        assert_eq!(t.memory_used(1, |_| true), 7);
        assert_eq!(t.memory_used(2, |_| true), 0);
        std::fs::remove_dir_all(t.path()).unwrap();
    }

    #[test]
    fn loaded_is_made_once() {
        let t = scratch("loaded");
        assert_eq!(t.loaded_ns(5), Some(5));
        assert_eq!(t.loaded_ns(9), Some(5));
        std::fs::remove_dir_all(t.path()).unwrap();
    }
}
