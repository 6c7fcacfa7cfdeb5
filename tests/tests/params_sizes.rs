//! Every params struct gpuprof hands to CUPTI is never larger than what the user's
//! CUPTI release declares: CUPTI reads `structSize` to know which fields a client
//! passed and refuses a size beyond its own (NVIDIA's 12.9 library answers the 13.2
//! Host Initialize size with `CUPTI_ERROR_INVALID_PARAMETER`).
//!
//! For each pinned release, a C program compiled against that release's headers
//! prints the `<Struct>_STRUCT_SIZE` macro of every struct in
//! `cupti::params::PROFILER_PARAMS`; the sizes gpuprof passes must not exceed them,
//! and every struct must exist from 12.6 on (the first release with the Profiler Host,
//! Range Profiler and PM Sampling APIs gpuprof calls).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::Command;

use cupti::params::PROFILER_PARAMS;
use gpuprof_tests::{major_minor, manifest, NvidiaRelease};

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

#[test]
fn params_structs_fit_every_release() {
    let mut names: Vec<&str> = PROFILER_PARAMS.iter().map(|(n, _)| *n).collect();
    names.push("CUpti_SubscriberParams");
    let mut report = String::new();
    for r in manifest() {
        let theirs = header_sizes(r, &names);
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
