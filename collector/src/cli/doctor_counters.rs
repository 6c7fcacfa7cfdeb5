//! `gpuprof doctor`'s counter check: with the CUPTI doctor would use and the machine's
//! driver, plan each GPU's counters exactly as `libgpuprof.so` does at its first
//! context (`cupti::plan::plan`, per-kernel counters and PM sampling), so a user
//! learns before a long run whether counters will start, and why not.
//!
//! Runs in a child process (`gpuprof doctor --counters LIB`): it initialises the
//! driver and loads the user's CUPTI, either of which may crash. The child prints one
//! line per GPU; the parent prints them.

use std::ffi::OsStr;
use std::process::ExitCode;
use std::time::Duration;

use cupti::plan::{self, Mode};
use cupti::pm_sampling::Trigger;

/// How long the check may take (driver start-up included).
const LIMIT: Duration = Duration::from_secs(60);

/// In the child: one line per GPU, or one line saying why none could be checked.
pub fn check(path: &OsStr) -> ExitCode {
    match lines(path) {
        Ok(lines) => {
            for l in lines {
                println!("{l}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("not checked: {e}");
            ExitCode::SUCCESS
        }
    }
}

fn lines(path: &OsStr) -> Result<Vec<String>, String> {
    let (version, _) = cupti::driver_version(true)?;
    let count = cupti::driver_init()?;
    let c = cupti::Cupti::open(path, Some(version))?;
    let c: &'static cupti::Cupti = Box::leak(Box::new(c));
    cupti::preload_perf_libraries(c.path());
    let fns = c.fns();
    cupti::profiler::profiler_initialize(fns).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for dev in 0..count {
        let chip = match cupti::profiler::chip_name(fns, dev) {
            Ok(chip) => chip,
            Err(e) => {
                out.push(format!("GPU {dev}: {e}"));
                continue;
            }
        };
        let on = format!("{chip} (GPU {dev})");
        let kernel = match plan::plan(fns, &chip, Mode::UserReplay, None) {
            Ok(p) => format!(
                "per-kernel counters ready ({} pass groups, one pass each)",
                p.groups.len()
            ),
            Err(e) => format!("per-kernel counters would be off: {}", e.describe(&on)),
        };
        let sampling = match plan::plan(fns, &chip, Mode::Sampling, None) {
            Ok(p) => {
                let mut s = format!(
                    "PM sampling ready ({} metrics, {} trigger)",
                    p.groups.first().map_or(0, |g| g.metrics().len()),
                    Trigger::for_chip(&chip).describe()
                );
                if !p.refused.is_empty() {
                    s.push_str(&format!("; not accepted: {}", p.refused.join(", ")));
                }
                s
            }
            Err(e) => format!("PM sampling would be off: {}", e.describe(&on)),
        };
        out.push(format!("GPU {dev} {chip}: {kernel}; {sampling}"));
    }
    if out.is_empty() {
        return Err("the driver reports no GPU".into());
    }
    Ok(out)
}

/// In doctor: runs [`check`] for `path` in a child and returns its lines.
pub fn check_in_child(path: &OsStr) -> Vec<String> {
    let args: [&OsStr; 3] = ["doctor".as_ref(), "--counters".as_ref(), path];
    match crate::collect::child::run_self(args, LIMIT) {
        Ok(o) if o.status.success() => o.stdout.lines().map(str::to_string).collect(),
        Ok(o) => vec![match o.signal() {
            Some(sig) => format!("not checked: the check crashed ({sig})"),
            None => format!("not checked: the check failed ({})", o.status),
        }],
        Err(e) => vec![format!("not checked: the check {e}")],
    }
}
