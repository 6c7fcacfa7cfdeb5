//! The session's index through the commands: a part missing, added or never written
//! is named on stderr, the output covers the rest, and the exit status is 3.

use std::path::Path;
use std::process::Output;

use gpuprof_collector::store::{PartLimits, StoreWriter};
use gpuprof_tests::{gpuprof_command, Scratch};
use wire::testing::{k, process, string};

/// A session of three parts of pid 3: a process and kernel name, then 2 and 3
/// kernels. Finished unless `finish` is false (a collector killed between seals).
fn session(dir: &Path, finish: bool) {
    std::fs::create_dir_all(dir).unwrap();
    let mut w = StoreWriter::create(dir, PartLimits::default()).unwrap();
    let parts = [
        vec![process(3, "./app"), string(1, "gemm")],
        (1..=2)
            .map(|c| k(1, c, 10 * c as u64, 10 * c as u64 + 5))
            .collect(),
        (3..=5)
            .map(|c| k(1, c, 10 * c as u64, 10 * c as u64 + 5))
            .collect(),
    ];
    for records in parts {
        for r in &records {
            w.push(3, r);
        }
        w.seal().unwrap();
    }
    if finish {
        w.finish().unwrap();
    }
}

fn report(dir: &Path, what: &str) -> Output {
    gpuprof_command().arg(what).arg(dir).output().unwrap()
}

#[test]
fn a_missing_or_foreign_part_or_an_unfinished_session_exits_3_naming_it() {
    let s = Scratch::new("index-cli");
    let dir = s.join("run");
    session(&dir, true);
    let whole = report(&dir, "report");
    assert_eq!(
        whole.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    assert!(String::from_utf8_lossy(&whole.stdout)
        .contains("Kernels by GPU time (5 kernels, 0.025 µs)"));

    std::fs::rename(dir.join("parts/00000002"), dir.join("parts/00000009")).unwrap();
    let d = dir.display();
    for what in ["report", "pprof"] {
        let out = report(&dir, what);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{what}: {stderr}");
        let word = if what == "pprof" { "profile" } else { what };
        for line in [
            format!(
                "gpuprof: warning: {d}: parts/00000009 is damaged (not a part of this session \
                 (its index does not list it: a copy, or another session's); skipped); its \
                 records (how many: unknown) are left out of the {word}"
            ),
            format!(
                "gpuprof: warning: {d}: parts/00000002 is damaged (missing: the session's index \
                 lists it); its 2 records are left out of the {word}"
            ),
        ] {
            assert!(stderr.lines().any(|l| l == line), "{what}: {stderr}");
        }
    }
    // The report holds the 3 kernels of part 3 only.
    assert_eq!(what_kernels(&report(&dir, "report")), Some(3));

    let s = Scratch::new("index-unfinished");
    let dir = s.join("run");
    session(&dir, false);
    let out = report(&dir, "report");
    assert_eq!(out.status.code(), Some(3));
    let line = format!(
        "gpuprof: warning: {}: index.json is damaged (the session was not finished: its \
         collector stopped before the run's end (killed?), and what it held after part 3 is \
         lost); its records (how many: unknown) are left out of the report",
        dir.display()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.lines().any(|l| l == line), "{stderr}");
}

/// The number of kernels the report's kernel table heads.
fn what_kernels(out: &Output) -> Option<u64> {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("Kernels by GPU time ("))?;
    line["Kernels by GPU time (".len()..]
        .split(' ')
        .next()?
        .parse()
        .ok()
}
