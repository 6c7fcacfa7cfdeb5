//! Every params struct gpuprof hands to CUPTI is never larger than what the user's
//! CUPTI release declares: CUPTI reads `structSize` to know which fields a client
//! passed and refuses a size beyond its own (NVIDIA's 12.9 library answers the 13.2
//! Host Initialize size with `CUPTI_ERROR_INVALID_PARAMETER`).
//!
//! For each pinned release, a C program compiled against that release's headers
//! prints the `<Struct>_STRUCT_SIZE` macro of every profiling params struct; the
//! sizes gpuprof passes (`cupti::params::PROFILER_PARAMS`) must not exceed them, and
//! every struct gpuprof passes must exist from 12.6 on (the first release with the
//! Profiler Host, Range Profiler and PM Sampling APIs gpuprof calls).
//!
//! The same answers, computed by the C compiler, must be each release's generated
//! `cupti_sys::records::vXX_Y::PARAMS_STRUCT_SIZES` (written by
//! `scripts/regen-bindings.sh` from the same headers), which the simulated CUPTI uses
//! to refuse a `structSize` larger than its release's, as the real library does.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use cupti::params::PROFILER_PARAMS;
use gpuprof_tests::{major_minor, manifest, NvidiaRelease};

/// The headers whose `*_STRUCT_SIZE` macros the simulated CUPTI checks.
const PROFILING_HEADERS: [&str; 5] = [
    "cupti_target.h",
    "cupti_profiler_target.h",
    "cupti_profiler_host.h",
    "cupti_range_profiler.h",
    "cupti_pmsampling.h",
];

/// The structs with a `*_STRUCT_SIZE` macro in `r`'s profiling headers, and
/// `CUpti_SubscriberParams` where `cupti_callbacks.h` has it.
fn struct_names(r: &NvidiaRelease) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut scan = |file: &Path, only: Option<&str>| {
        let Ok(text) = std::fs::read_to_string(file) else {
            return;
        };
        for line in text.lines() {
            let Some(rest) = line.trim_start().strip_prefix("#define ") else {
                continue;
            };
            let macro_name = rest.split_whitespace().next().unwrap_or("");
            if let Some(name) = macro_name.strip_suffix("_STRUCT_SIZE") {
                if only.is_none_or(|o| o == name) && !name.is_empty() {
                    names.insert(name.to_string());
                }
            }
        }
    };
    for h in PROFILING_HEADERS {
        scan(&r.cupti_include.join(h), None);
    }
    scan(
        &r.cupti_include.join("cupti_callbacks.h"),
        Some("CUpti_SubscriberParams"),
    );
    names
}

/// The release's `*_STRUCT_SIZE` for each struct of `names` its headers define.
fn header_sizes(r: &NvidiaRelease, names: &[&str]) -> BTreeMap<String, usize> {
    let mut c = String::from(
        "#include <stdio.h>\n#include <cupti.h>\n#include <cupti_profiler_target.h>\n\
         #include <cupti_target.h>\n",
    );
    if major_minor(&r.release) >= (12, 6) {
        c.push_str(
            "#include <cupti_profiler_host.h>\n#include <cupti_range_profiler.h>\n\
             #include <cupti_pmsampling.h>\n",
        );
    }
    c.push_str("int main(void) {\n");
    for n in names {
        let _ = writeln!(
            c,
            "#ifdef {n}_STRUCT_SIZE\n    printf(\"{n} %zu\\n\", (size_t){n}_STRUCT_SIZE);\n#endif"
        );
    }
    c.push_str("    return 0;\n}\n");
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("params-sizes");
    std::fs::create_dir_all(&dir).expect("create dir");
    let stem = format!("sizes-{}", r.release.replace('.', "_"));
    let src = dir.join(format!("{stem}.cc"));
    let exe = dir.join(stem);
    std::fs::write(&src, c).expect("write C source");
    let mut cmd = Command::new("c++");
    for inc in &r.include_dirs {
        cmd.arg("-I").arg(inc);
    }
    let out = cmd.arg("-o").arg(&exe).arg(&src).output().expect("run c++");
    assert!(
        out.status.success(),
        "c++ failed for CUPTI {}:\n{}",
        r.release,
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().expect("run the size program");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (n, v) = l.split_once(' ').expect("name size");
            (n.to_string(), v.parse().expect("size"))
        })
        .collect()
}

/// Every struct name of every release's headers, and per release (manifest order)
/// the sizes its headers give.
type AllSizes = (Vec<String>, Vec<BTreeMap<String, usize>>);

/// [`AllSizes`], computed once per process.
fn all_sizes() -> &'static AllSizes {
    static SIZES: OnceLock<AllSizes> = OnceLock::new();
    SIZES.get_or_init(|| {
        let releases = manifest();
        let mut all: BTreeSet<String> = BTreeSet::new();
        for r in releases {
            all.extend(struct_names(r));
        }
        let names: Vec<String> = all.into_iter().collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let sizes = std::thread::scope(|s| {
            let jobs: Vec<_> = releases
                .iter()
                .map(|r| {
                    let refs = &refs;
                    s.spawn(move || header_sizes(r, refs))
                })
                .collect();
            jobs.into_iter().map(|j| j.join().expect("sizes")).collect()
        });
        (names, sizes)
    })
}

#[test]
fn params_structs_fit_every_release() {
    let (names, sizes) = all_sizes();
    for (n, _) in PROFILER_PARAMS {
        assert!(
            names.iter().any(|x| x == n),
            "{n} is in no release's headers"
        );
    }
    let mut report = String::new();
    for (r, theirs) in manifest().iter().zip(sizes) {
        for (name, ours) in PROFILER_PARAMS {
            match theirs.get(*name) {
                Some(&t) if *ours > t => {
                    let _ = writeln!(
                        report,
                        "CUPTI {}: gpuprof passes {name} with structSize {ours}, \
                         the release's {name}_STRUCT_SIZE is {t}",
                        r.release
                    );
                }
                Some(_) => {}
                None if major_minor(&r.release) >= (12, 6) => {
                    let _ = writeln!(report, "CUPTI {}: no {name}_STRUCT_SIZE", r.release);
                }
                None => {}
            }
        }
        // cuptiSubscribe_v2 exists from 13.0; the size passed depends on the release.
        if let Some(&t) = theirs.get("CUpti_SubscriberParams") {
            let (major, minor) = major_minor(&r.release);
            let api = cupti::ApiVersion(major * 10_000 + minor * 100);
            let ours = cupti::callback::subscriber_params_size(api);
            if ours > t {
                let _ = writeln!(
                    report,
                    "CUPTI {}: CUpti_SubscriberParams {ours} > {t}",
                    r.release
                );
            }
        }
    }
    assert!(report.is_empty(), "{report}");
}

/// Every release's generated `PARAMS_STRUCT_SIZES` holds exactly the
/// `<Struct>_STRUCT_SIZE` macros of its headers, with the values the C compiler
/// computes from them.
#[test]
fn generated_struct_sizes_are_the_headers() {
    let (_, sizes) = all_sizes();
    let mut report = String::new();
    for (r, theirs) in manifest().iter().zip(sizes) {
        let generated = cupti_sys::records::RELEASES
            .iter()
            .find(|g| g.name == r.release)
            .unwrap_or_else(|| panic!("no generated module for CUPTI {}", r.release));
        let ours: BTreeMap<String, usize> = generated
            .params_struct_sizes
            .iter()
            .map(|&(n, v)| (n.to_string(), v))
            .collect();
        assert_eq!(
            ours.len(),
            generated.params_struct_sizes.len(),
            "CUPTI {}: duplicate names",
            r.release
        );
        if &ours != theirs {
            let _ = writeln!(
                report,
                "CUPTI {}: generated {ours:?}\n  headers {theirs:?}",
                r.release
            );
        }
    }
    assert!(
        report.is_empty(),
        "regenerate with scripts/regen-bindings.sh:\n{report}"
    );
}

/// Spot checks against the header text: Host Initialize grew by one pointer
/// (`pSinglePassMetricSetName`) in 13.2, `CUpti_SubscriberParams` exists from 13.0.
#[test]
fn generated_struct_sizes_spot_checks() {
    let size = |release: &str, name: &str| {
        cupti_sys::records::RELEASES
            .iter()
            .find(|g| g.name == release)
            .and_then(|g| g.params_struct_sizes.iter().find(|(n, _)| *n == name))
            .map(|&(_, v)| v)
    };
    let host = "CUpti_Profiler_Host_Initialize_Params";
    assert_eq!(size("12.4", host), None);
    for r in ["12.6", "12.8", "12.9", "13.0", "13.1"] {
        assert_eq!(size(r, host), Some(48), "{r}");
    }
    for r in ["13.2", "13.3", "13.4", "13.5"] {
        assert_eq!(size(r, host), Some(56), "{r}");
    }
    assert_eq!(size("12.9", "CUpti_SubscriberParams"), None);
    assert_eq!(size("13.0", "CUpti_SubscriberParams"), Some(32));
    assert_eq!(size("13.5", "CUpti_SubscriberParams"), Some(40));
    assert_eq!(size("12.6", "CUpti_PmSampling_SetConfig_Params"), Some(60));
    assert_eq!(size("12.8", "CUpti_PmSampling_SetConfig_Params"), Some(64));
}
