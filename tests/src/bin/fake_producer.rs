//! A stand-in profiled program for `tests/tests/it/collector/collect/drain.rs`: it
//! writes a ring in the session directory as libgpuprof.so would and plays the scenario
//! named by `COLLECTOR_TEST_SCENARIO` (exit codes, signals, children, lost records).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use wire::ring::{RingWriter, WriteError};
use wire::{DropSource, Dropped, End, InternedString, Kernel, ProcessInfo, Record};

const SCENARIO: &str = "COLLECTOR_TEST_SCENARIO";
const NOTES: &str = "COLLECTOR_TEST_NOTES";
const KERNELS: &str = "COLLECTOR_TEST_KERNELS";

fn main() {
    let Ok(scenario) = std::env::var(SCENARIO) else {
        eprintln!("fake_producer: {SCENARIO} names the scenario to play");
        std::process::exit(2);
    };
    let code = produce(&scenario);
    std::process::exit(code);
}

fn produce(scenario: &str) -> i32 {
    let dir = PathBuf::from(std::env::var_os("GPUPROF_SESSION_DIR").expect("GPUPROF_SESSION_DIR"));
    let pid = std::process::id();
    if let Some(notes) = std::env::var_os(NOTES) {
        let text = format!(
            "{}\n{}\n{}\n",
            dir.display(),
            std::env::var("CUDA_INJECTION64_PATH").unwrap_or_default(),
            std::env::var("GPUPROF_RING_SIZE").unwrap_or_default()
        );
        std::fs::write(Path::new(&notes).join(format!("{pid}.txt")), text).unwrap();
    }
    let capacity = match std::env::var("GPUPROF_RING_SIZE").as_deref() {
        Ok("4K") => 4096,
        _ => 1 << 16,
    };
    let mut ring =
        RingWriter::create(&wire::session_dir::ring_path(&dir, pid), capacity, pid).unwrap();
    let kernels: u32 = std::env::var(KERNELS)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let mut children: Vec<Child> = Vec::new();
    if scenario == "parent" {
        for _ in 0..2 {
            children.push(
                Command::new(std::env::current_exe().unwrap())
                    .env(SCENARIO, "exit0")
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
        }
    }
    send(
        &mut ring,
        &[
            Record::Process(Box::new(ProcessInfo {
                pid,
                ppid: 0,
                command: vec!["fake-producer".into(), scenario.into()],
                host: "test".into(),
                start_ns: 1,
                profiler_version: "test".into(),
                cupti_api_version: 28,
                cupti_layouts: "12.9".into(),
                cupti_path: "none".into(),
                environment: Vec::new(),
            })),
            Record::String(InternedString {
                id: 1,
                text: "fake_kernel".into(),
            }),
        ],
    );
    for batch in 0..kernels.div_ceil(10) {
        let records: Vec<Record> = (batch * 10..kernels.min(batch * 10 + 10))
            .map(|i| {
                Record::Kernel(Kernel {
                    context_id: 1,
                    stream_id: 7,
                    correlation_id: i + 1,
                    start_ns: 1000 + 100 * u64::from(i),
                    end_ns: 1050 + 100 * u64::from(i),
                    name: 1,
                    grid: [1, 1, 1],
                    block: [32, 1, 1],
                    registers_per_thread: 8,
                    ..Kernel::default()
                })
            })
            .collect();
        send(&mut ring, &records);
    }
    match scenario {
        "tally" => {
            // Killed with records in flight: 30 more kernels launched than left
            // CUPTI... of the 60 that left it, 10 (and 5 other records) were never
            // written; 52 records were (Process, String, 50 kernels).
            use std::sync::atomic::Ordering::Relaxed;
            let t = ring.tally();
            t.launches.store(80, Relaxed);
            t.kernels.store(60, Relaxed);
            t.produced.store(67, Relaxed);
            Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        "die" => {
            // Ends without finishing its stream, killed by a signal.
            Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status()
                .unwrap();
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        "wait" => {
            // Says it has written everything, then runs until a signal ends it.
            let notes = std::env::var_os(NOTES).expect(NOTES);
            std::fs::write(Path::new(&notes).join(format!("{pid}.ready")), "").unwrap();
            // Bounded, so that a failed test cannot leave it behind for long.
            std::thread::sleep(Duration::from_secs(60));
            return 0;
        }
        _ => {}
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    // As libgpuprof.so does: the header counts every loss (7 frames' worth the ring
    // refused, never reported in the stream, plus the 3 the channel lost, which the
    // stream reports below); the collector adds only what the stream did not report.
    ring.add_dropped(10, 1);
    send(
        &mut ring,
        &[
            Record::Dropped(Dropped {
                source: DropSource::Channel,
                records: 3,
            }),
            Record::End(End {
                records: kernels as u64 + 5,
            }),
        ],
    );
    ring.finish();
    match scenario {
        "exit3" => 3,
        "signal" => {
            Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .unwrap();
            std::thread::sleep(Duration::from_secs(10));
            0
        }
        _ => 0,
    }
}

/// Writes a frame, waiting while the collector catches up (a test producer may wait;
/// the real one counts the frame as dropped instead).
fn send(ring: &mut RingWriter, records: &[Record]) {
    let payload = wire::encode_batch(records).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match ring.try_write(&payload) {
            Ok(()) => return,
            Err(WriteError::Full { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => panic!("try_write: {e}"),
        }
    }
}
