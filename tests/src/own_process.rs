//! Tests that change what their whole process shares run in a process of their own:
//! the integration tests are one binary, and every other test runs beside them.

use std::path::PathBuf;
use std::process::Command;

/// Set in the process [`in_own_process`] starts: the name of the one test it runs.
const OWN_PROCESS_ENV: &str = "GPUPROF_TEST_OWN_PROCESS";

/// A test's name as the harness knows it (and `--exact` wants it): its module path
/// (`module_path!()` in the test's file, which starts with the crate's name) without
/// the crate's name, then `test`.
pub fn harness_name(module: &str, test: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_owned(),
    }
}

/// For a test that changes something every test of the binary would see (makes the
/// process a child subreaper, say), called first in the test: `module` is the test's
/// `module_path!()`, `test` its function's name. In the process of its own, true: the
/// test goes on. Elsewhere it runs the test binary again for that one test, prints what
/// it printed, fails if it failed, and returns false: the test is done.
pub fn in_own_process(module: &str, test: &str) -> bool {
    let name = harness_name(module, test);
    if std::env::var_os(OWN_PROCESS_ENV).is_some_and(|v| v == name.as_str()) {
        return true;
    }
    let exe = running_binary();
    let out = Command::new(&exe)
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(OWN_PROCESS_ENV, &name)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{name}, in a process of its own: {}",
        out.status
    );
    assert!(
        stdout.contains("test result: ok. 1 passed;"),
        "{name} did not run in its process of its own (no such test?)"
    );
    false
}

/// The test binary this process runs, to start again: `/proc/<pid>/exe`, which stays
/// the running file even when a build replaces the one at its path meanwhile (as
/// `cargo build` does while a long test run goes on).
pub fn running_binary() -> PathBuf {
    PathBuf::from(format!("/proc/{}/exe", std::process::id()))
}
