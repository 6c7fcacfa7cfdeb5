//! A session as a pprof profile (`gpuprof pprof`): GPU time as a flame graph for
//! `go tool pprof`, Pyroscope, Grafana and other readers of pprof's format
//! ([`proto`]).
//!
//! One sample per (class, NVTX range path) of the aggregate's [`Stacks`], with four
//! values, in this order ([`SAMPLE_TYPES`]):
//! - `gpu_time` / `nanoseconds`: the sum of the launches' durations;
//! - `launches` / `count`;
//! - `flops` / `count`: model FLOPs (2·M·N·K·batch of each GEMM call, on its first
//!   launch; [`crate::analysis::classes::GemmPart::flops`]), 0 for kernels without a shape;
//! - `dram` / `bytes`: DRAM bytes read and written, as the report's rollups count
//!   them ([`crate::analysis::rollup`]): the launches that measured them plus, for each launch
//!   that did not, the mean of its group (kernel, launch configuration, GEMM shape);
//!   a launch of a group no launch measured adds nothing. So the profile's total is
//!   the report's run total, whose coverage (`mbu_ns` of the GPU time) says how much
//!   of the run it covers: one total for one quantity in every output.
//!
//! The stack, root first: the process (`python [pid 1234]`: the command's file name,
//! or `pid 1234` when its `Process` record is missing), the NVTX ranges enclosing the
//! kernel, outermost first ("domain: name", or the name), the kernel's family
//! ([`crate::analysis::family`]), and the kernel: its function name without return type,
//! template arguments and parameters, the full demangled name as the function's
//! `system_name` and as the sample's label `kernel_name`. Labels `grid`, `block` and
//! `gpu` say the launch configuration and the device.
//!
//! Values are integers: GPU time and launches exact, FLOPs and bytes rounded to the
//! nearest integer, each saturating at `i64::MAX`.

pub mod proto;

use std::collections::HashMap;
use std::io::Write;

use prost::Message;

use crate::analysis::aggregate::Aggregate;
use crate::analysis::names::{demangle, dims};
use crate::analysis::range_cover::range_label;
use crate::analysis::rollup::with_mean;
use crate::analysis::roofline::efficiency::Efficiency;
use crate::analysis::short_name::short_name;
use crate::analysis::stacks::Stacks;
use crate::analysis::summary::Summary;
use proto::{Function, Label, Line, Location, Profile, Sample, ValueType};

/// The sample types, (type, unit), in value order.
pub const SAMPLE_TYPES: [(&str, &str); 4] = [
    ("gpu_time", "nanoseconds"),
    ("launches", "count"),
    ("flops", "count"),
    ("dram", "bytes"),
];

/// What a profile holds, for the command's summary.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ProfileStats {
    pub samples: u64,
    pub launches: u64,
    pub gpu_ns: u64,
    /// Distinct frames (functions).
    pub frames: u64,
}

/// Strings, functions and locations of a profile being built, each written once.
#[derive(Default)]
struct Tables {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    functions: Vec<Function>,
    /// (name, system name) -> function id (= its location's id).
    function_ids: HashMap<(i64, i64), u64>,
}

impl Tables {
    fn new() -> Tables {
        let mut t = Tables::default();
        t.string(""); // index 0 must be the empty string
        t
    }

    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.string_ids.get(s) {
            return i;
        }
        let i = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), i);
        i
    }

    /// The location of the frame `name` (`system_name`: the full name).
    fn frame(&mut self, name: &str, system_name: &str) -> u64 {
        let key = (self.string(name), self.string(system_name));
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        self.functions.push(Function {
            id,
            name: key.0,
            system_name: key.1,
            filename: 0,
        });
        self.function_ids.insert(key, id);
        id
    }

    fn label(&mut self, key: &str, value: &str) -> Label {
        Label {
            key: self.string(key),
            str: self.string(value),
            num: 0,
            num_unit: 0,
        }
    }
}

/// A value for pprof: rounded, saturating.
fn int(v: f64) -> i64 {
    // `as` saturates, and maps NaN to 0.
    v.round() as i64
}

/// The frame of a process keyed `key` in `a`.
fn process_frame(a: &Aggregate, key: u32) -> String {
    let (session, pid) = (a.session(key), a.pid(key));
    let command = a
        .processes
        .iter()
        .find(|p| p.pid == pid && p.session == session && p.known)
        .and_then(|p| p.command.first())
        .map(|c| c.rsplit('/').next().unwrap_or(c).to_string())
        .filter(|c| !c.is_empty());
    let at = if a.sessions.len() > 1 {
        format!(", {}", a.sessions[session])
    } else {
        String::new()
    };
    match command {
        Some(c) => format!("{c} [pid {pid}{at}]"),
        None => format!("pid {pid}{at}"),
    }
}

/// The profile of `a` (read with stacks: [`crate::analysis::session::analyse_stacks`]), with
/// the kernels' short names of its `summary` and the per-class values of its roofline
/// analysis `e`. `comment` goes into the
/// profile's comments.
pub fn profile(
    a: &Aggregate,
    summary: &Summary,
    e: &Efficiency,
    comment: &str,
) -> (Profile, ProfileStats) {
    let mut t = Tables::new();
    let short_names: HashMap<&str, &str> = summary
        .kernels
        .iter()
        .map(|k| (k.mangled.as_str(), k.short_name.as_str()))
        .collect();
    let empty = Stacks::default();
    let stacks = a.stacks.as_ref().unwrap_or(&empty);
    let mut stats = ProfileStats::default();
    let sample_type = SAMPLE_TYPES
        .iter()
        .map(|(ty, unit)| ValueType {
            r#type: t.string(ty),
            unit: t.string(unit),
        })
        .collect();
    let comment = vec![t.string(comment)];
    let default_sample_type = t.string(SAMPLE_TYPES[0].0);

    let mut processes: HashMap<u32, u64> = HashMap::new();
    let mut ranges: HashMap<usize, u64> = HashMap::new();
    // Per class: (family frame, kernel frame, labels).
    let mut kernels: HashMap<usize, (u64, u64, Vec<Label>)> = HashMap::new();
    let mut samples = Vec::with_capacity(stacks.sums.len());
    for (class, path, tally) in stacks.sorted() {
        let c = &a.classes.list[class];
        let process = *processes
            .entry(c.key.pid)
            .or_insert_with(|| t.frame(&process_frame(a, c.key.pid), ""));
        let values = e.classes.get(class);
        let (family, kernel, labels) = kernels.entry(class).or_insert_with(|| {
            let full = if c.mangled.is_empty() {
                "(unknown kernel)".to_string()
            } else {
                demangle(&c.mangled)
            };
            let family = values.map_or("other", |v| v.family.name());
            let gpu = a.devices.get(&(c.key.pid, c.key.device_id)).map_or_else(
                || format!("device {}", c.key.device_id),
                |d| d.name.trim().to_string(),
            );
            let labels = vec![
                t.label("kernel_name", &full),
                t.label("grid", &dims(c.key.grid)),
                t.label("block", &dims(c.key.block)),
                t.label("gpu", &gpu),
            ];
            // The report's short name: two instantiations of one template are
            // numbered there, and must not merge into one function here.
            let short = short_names
                .get(c.mangled.as_str())
                .map_or_else(|| short_name(&full), |s| s.to_string());
            (t.frame(family, ""), t.frame(&short, &full), labels)
        });
        // Leaf first.
        let mut location_id = vec![*kernel, *family];
        for &r in stacks.paths[path].iter().rev() {
            let id = *ranges.entry(r).or_insert_with(|| {
                let (domain, name) = &a.ranges.names[r];
                t.frame(&range_label(domain, name), "")
            });
            location_id.push(id);
        }
        location_id.push(process);
        let flops = c.key.gemm.as_ref().map_or(0.0, |g| g.flops()) * tally.calls as f64;
        let bytes = values
            .and_then(|v| v.bytes_mean)
            .map_or(0.0, |m| with_mean(&tally, m));
        samples.push(Sample {
            location_id,
            value: vec![
                i64::try_from(tally.ns).unwrap_or(i64::MAX),
                i64::try_from(tally.calls).unwrap_or(i64::MAX),
                int(flops),
                int(bytes),
            ],
            label: labels.clone(),
        });
        stats.samples += 1;
        stats.launches += tally.calls;
        stats.gpu_ns = stats.gpu_ns.saturating_add(tally.ns);
    }
    stats.frames = t.functions.len() as u64;
    let location = t
        .functions
        .iter()
        .map(|f| Location {
            id: f.id,
            line: vec![Line { function_id: f.id }],
        })
        .collect();
    let profile = Profile {
        sample_type,
        sample: samples,
        location,
        function: t.functions,
        string_table: t.strings,
        time_nanos: 0,
        duration_nanos: 0,
        comment,
        default_sample_type,
    };
    (profile, stats)
}

/// `profile` encoded and gzipped into `w`, as pprof's readers expect a profile file.
pub fn write_gzipped(profile: &Profile, w: impl Write) -> std::io::Result<()> {
    let mut gz = flate2::write::GzEncoder::new(w, flate2::Compression::default());
    gz.write_all(&profile.encode_to_vec())?;
    gz.finish()?.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two instantiations of one template fold to one short name; the frames carry
    /// the report's numbered names, so `go tool pprof` does not merge them.
    #[test]
    fn kernels_sharing_a_short_name_stay_apart() {
        use wire::testing::{k, on, process, string};
        let records = on(
            1,
            vec![
                process(1, "app"),
                string(1, "_Z1kIiEvv"),
                string(2, "_Z1kIfEvv"),
                k(1, 1, 0, 3000),
                k(2, 2, 4000, 5000),
            ],
        );
        let mut agg = crate::analysis::aggregate::Aggregator::with_stacks();
        agg.add_part(records);
        let a = agg.finish();
        let e = crate::analysis::roofline::efficiency::efficiency_of(
            &a,
            &crate::analysis::roofline::peaks::Overrides::default(),
        );
        let summary = crate::analysis::summary::summarize_aggregate(&a);
        let (p, _) = profile(&a, &summary, &e, "");
        let mut names: Vec<(&str, &str)> = p
            .function
            .iter()
            .map(|f| {
                (
                    p.string_table[f.name as usize].as_str(),
                    p.string_table[f.system_name as usize].as_str(),
                )
            })
            .filter(|(_, system)| system.starts_with("void k<"))
            .collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [("k<…> #1", "void k<int>()"), ("k<…> #2", "void k<float>()")]
        );
    }

    #[test]
    fn values_are_rounded_and_saturate() {
        assert_eq!(int(2.5), 3);
        assert_eq!(int(1e30), i64::MAX);
        assert_eq!(int(f64::NAN), 0);
    }
}
