//! Tests that need what a machine may lack (root, Go, Prometheus): one way to skip.

use std::io::Write;

/// Says that `test` cannot run here and why. Under CI (`CI` set, as `.ci/run` and
/// every CI service set it) that is a failure: the test command installs what the
/// tests need, so a skip there hides a broken setup. Elsewhere the test is skipped:
/// said on stdout, and counted in `target/skipped-tests.txt`, which `scripts/test.sh`
/// reports at its end.
pub fn skip(test: &str, why: &str) {
    assert!(
        std::env::var_os("CI").is_none_or(|v| v.is_empty()),
        "{test} cannot run here: {why}; under CI every test must run"
    );
    println!("{test}: skipped: {why}");
    let list = crate::target_profile_dir()
        .parent()
        .map(|t| t.join("skipped-tests.txt"));
    if let Some(list) = list {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&list)
        {
            let _ = writeln!(f, "{test}: {why}");
        }
    }
}
