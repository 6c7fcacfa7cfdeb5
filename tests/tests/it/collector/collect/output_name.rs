//! `gpuprof record -o NAME` expands %p (the program's pid), %h (the host name),
//! %q{VAR} (an environment variable) and %%, and refuses what it cannot expand
//! before running anything.

use gpuprof_tests::{gpuprof_command, Scratch};

#[test]
fn the_name_expands_to_the_programs_pid_host_and_variable() {
    let scratch = Scratch::new("output-name");
    let template = scratch.join("run-%p-%h-r%q{GPUPROF_TEST_RANK_OF_RUN}-100%%");
    let o = gpuprof_command()
        .arg("record")
        .arg("-o")
        .arg(&template)
        .args(["--", "sh", "-c", "echo $$"])
        .env("GPUPROF_TEST_RANK_OF_RUN", "5")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    // The program's first line is its pid (sh is the program gpuprof started).
    let stdout = String::from_utf8_lossy(&o.stdout);
    let pid: u32 = stdout.lines().next().unwrap().parse().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let want = scratch.join(format!("run-{pid}-{}-r5-100%", host.trim()));
    let entries: Vec<_> = std::fs::read_dir(scratch.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        entries,
        vec![want.clone()],
        "nothing else, no pending directory"
    );
    assert!(
        stderr.contains(&format!("gpuprof: session written to {}", want.display())),
        "{stderr}"
    );
    let r = gpuprof_command().arg("report").arg(&want).output().unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
}

#[test]
fn names_that_cannot_be_expanded_are_errors_before_the_program_runs() {
    let scratch = Scratch::new("output-name-bad");
    let marker = scratch.join("ran");
    for (name, message) in [
        (
            "r-%x",
            "unknown sequence %x: use %p (the program's pid), %h (the host name), %q{VAR} (environment variable VAR) or %% (a %)",
        ),
        (
            "r-%q{GPUPROF_TEST_NOT_SET}",
            "%q{GPUPROF_TEST_NOT_SET} names the environment variable GPUPROF_TEST_NOT_SET, which is not set",
        ),
        ("%p/r", "%p may only be in its last component"),
    ] {
        let path = scratch.join(name);
        let o = gpuprof_command()
            .arg("record")
            .arg("-o")
            .arg(&path)
            .arg("--")
            .arg("touch")
            .arg(&marker)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            format!(
                "gpuprof: error: output name {:?}: {message}\n",
                path.display().to_string()
            )
        );
        assert!(!marker.exists(), "{name}: the program did not run");
        assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0, "{name}");
    }
}
