//! `GPUPROF_SERVE` in env-var-only mode (`CUDA_INJECTION64_PATH` without `gpuprof
//! record`): the collector the first profiled process starts (`gpuprof collect`)
//! inherits the variable and serves; a real Prometheus server scrapes it while the
//! program runs. An address it cannot listen on stops that collector before it
//! announces itself: the program runs unprofiled, saying so, and writes no session.

use std::process::Command;
use std::time::{Duration, Instant};

use gpuprof_tests::{
    artifact, free_port, prometheus_binary, sim_lib_dir, Injection, Prometheus, Scratch,
    SimCommand, TimedChild,
};

const LIMIT: Duration = Duration::from_secs(240);

/// The cudarc workload with `args` in env-var-only mode on the simulated H100 with
/// `GPUPROF_SERVE=serve` and `GPUPROF_OUT=out`.
fn env_only(scratch: &Scratch, serve: &str, args: &[&str]) -> Command {
    let mut cmd = SimCommand::new(Command::new(artifact("cudarc-llm")))
        .libraries(&sim_lib_dir())
        .injected(Injection::Driver)
        .cupti("13.4")
        .command();
    cmd.args(args)
        .env("GPUPROF_SERVE", serve)
        .env("GPUPROF_OUT", scratch.join("out"));
    cmd
}

#[test]
fn the_collector_of_env_only_mode_serves_what_gpuprof_serve_names() {
    let Some(binary) = prometheus_binary() else {
        gpuprof_tests::skip(
            "the_collector_of_env_only_mode_serves_what_gpuprof_serve_names",
            "prometheus is not installed (scripts/debian-tools.sh prometheus)",
        );
        return;
    };
    let scratch = Scratch::new("serve-env-only");
    let addr = format!("127.0.0.1:{}", free_port());
    let prometheus = Prometheus::start(&binary, &scratch, &addr);
    // 100 steps 20 ms apart: about 2 s, 10 scrapes at Prometheus's 200 ms.
    let args = ["--decode-steps", "100", "--step-gap-ms", "20"];
    let o = TimedChild::spawn(env_only(&scratch, &addr, &args), LIMIT).wait();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    // The collector outlives the program briefly; the session appears when it is done.
    let start = Instant::now();
    while !scratch.join("out").join("parts").exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "no session");
        std::thread::sleep(Duration::from_millis(100));
    }
    let up = prometheus.query("max_over_time(up[10m])");
    assert_eq!(up.len(), 1, "{up:?}");
    assert_eq!(up[0].2, 1.0, "Prometheus never scraped the collector");
    // Over the run: the collector has ended, and Prometheus marks its series stale.
    let series = prometheus.query("max_over_time(gpuprof_program_ended[10m])");
    assert_eq!(series.len(), 1, "{series:?}");
    let gpus = prometheus.query("max_over_time(gpuprof_gpu_kernel_launches_total[10m])");
    assert!(
        gpus.iter()
            .all(|(_, l, _)| l.get("UUID").is_some_and(|u| u.starts_with("GPU-"))),
        "{gpus:?}"
    );
    assert!(!gpus.is_empty(), "no GPU series");
}

#[test]
fn an_address_the_collector_cannot_use_leaves_the_program_unprofiled() {
    let scratch = Scratch::new("serve-env-only-bad");
    let o = TimedChild::spawn(
        env_only(&scratch, "not-an-address", &["--decode-steps", "4"]),
        LIMIT,
    )
    .wait();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(
        o.stderr.contains("gpuprof: cannot start the collector")
            && o.stderr
                .contains("profiling is off, the program runs unprofiled"),
        "{}",
        o.stderr
    );
    assert!(o.stdout.starts_with("cudarc-llm: ok"), "{}", o.stdout);
    assert!(!scratch.join("out").exists(), "a session was written");
}
