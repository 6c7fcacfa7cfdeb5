//! The tracing pipeline inside libgpuprof.so, end to end on the simulated CUDA stack:
//! real client programs run with the profiler injected and a session directory but
//! no collector; the test reads the ring the process left, as the collector would.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gpuprof_tests::{
    artifact, cupti_major, ring_files, sim_cupti, strings, venv_python, Finished, Injection,
    Scratch, SimCommand, TimedChild,
};
use sim_core::{CostModel, GemmShape, Launch as SimLaunch};
use wire::ring::{HeaderInfo, RingReader};
use wire::{marker_flags, ContextInfo, DeviceInfo, GemmCall, Kernel, Launch, Memcpy, Record};

const LIMIT: Duration = Duration::from_secs(120);

/// What a ring held.
#[derive(Debug)]
struct RingDump {
    header: HeaderInfo,
    finished: bool,
    records: Vec<Record>,
}

fn drain(reader: &mut RingReader, into: &mut Vec<Record>) {
    while let Some(frame) = reader.try_read().expect("ring reads") {
        into.extend(wire::decode_batch(&frame).expect("frame decodes"));
    }
}

fn read_ring(path: &Path) -> RingDump {
    let mut reader =
        RingReader::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let mut records = Vec::new();
    drain(&mut reader, &mut records);
    RingDump {
        header: reader.header(),
        finished: reader.is_finished(),
        records,
    }
}

/// `cmd` on the simulated stack with CUPTI `release`, profiled the `how` way into `dir`.
fn profiled(cmd: Command, release: &str, how: Injection, dir: &Path) -> Command {
    SimCommand::new(cmd)
        .cupti(release)
        .injected(how)
        .session_dir(dir)
        .command()
}

fn cudarc_llm() -> Command {
    Command::new(artifact("cudarc-llm"))
}

fn python_llm() -> Command {
    let mut cmd = Command::new(venv_python());
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/python/llm_driver.py"));
    cmd
}

fn run(cmd: Command) -> Finished {
    let out = TimedChild::spawn(cmd, LIMIT).wait();
    assert!(
        out.status.success(),
        "{:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        out.stdout,
        out.stderr
    );
    out
}

/// The stream's framing: Process first, End last with what was produced, nothing lost.
fn assert_complete_without_loss(d: &RingDump, release: &str, program: &str) {
    assert!(d.finished, "ring not finished: {:?}", d.header);
    assert_eq!((d.header.dropped_records, d.header.dropped_frames), (0, 0));
    match d.records.first() {
        Some(Record::Process(p)) => {
            assert_eq!(p.pid, d.header.producer_pid);
            assert!(p.command[0].ends_with(program), "{:?}", p.command);
            assert_eq!(p.cupti_layouts, release);
            assert_eq!(
                p.cupti_path,
                sim_cupti(cupti_major(release)).display().to_string()
            );
            assert!(!p.host.is_empty());
        }
        other => panic!("first record is {other:?}"),
    }
    match d.records.last() {
        Some(Record::End(e)) => assert_eq!(e.records, d.records.len() as u64 - 1),
        other => panic!("last record is {other:?}"),
    }
    assert!(!d.records.iter().any(|r| matches!(r, Record::Dropped(_))));
}

/// The simulated H100 (tests/sim/core/src/machine.rs).
fn assert_h100(d: &RingDump) {
    let devices: Vec<&DeviceInfo> = d
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Device(x) => Some(x),
            _ => None,
        })
        .collect();
    assert_eq!(devices.len(), 1, "{devices:?}");
    let dev = devices[0];
    assert_eq!(
        (
            dev.id,
            dev.name.as_str(),
            dev.compute_capability,
            dev.sm_count,
            dev.core_clock_khz,
            dev.memory_clock_khz,
            dev.memory_bus_width_bits,
            dev.global_memory_bytes,
            dev.l2_cache_bytes
        ),
        (
            0,
            "NVIDIA H100 80GB HBM3",
            (9, 0),
            132,
            1_980_000,
            2_619_000,
            5120,
            80 << 30,
            50 << 20
        )
    );
    assert_ne!(dev.uuid, [0; 16]);
    let contexts: Vec<&ContextInfo> = d
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Context(x) => Some(x),
            _ => None,
        })
        .collect();
    assert_eq!(contexts.len(), 1, "{contexts:?}");
    assert_eq!(contexts[0].device_id, 0);
}

fn kernels(d: &RingDump) -> Vec<&Kernel> {
    let mut k: Vec<&Kernel> = d
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Kernel(x) => Some(x),
            _ => None,
        })
        .collect();
    k.sort_by_key(|k| k.start_ns);
    k
}

fn launches(d: &RingDump) -> Vec<&Launch> {
    d.records
        .iter()
        .filter_map(|r| match r {
            Record::Launch(x) => Some(x),
            _ => None,
        })
        .collect()
}

/// What the cudarc client launches, in order: (name, grid x, block x) for its own
/// kernels, `None` for a GEMM with its (m, n, k, batch).
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Kernel(&'static str, u32, u32),
    Gemm(u64, u64, u64, u64),
}

/// tests/workloads/cudarc-llm/src/main.rs with its default shape.
fn cudarc_steps() -> Vec<Step> {
    let (layers, h, ffn, heads, vocab, prompt, decode) =
        (2u64, 1024u64, 2816u64, 8u64, 32000u64, 128u64, 4);
    let mut steps = Vec::new();
    let layer = |steps: &mut Vec<Step>, t: u64, prefill: bool| {
        steps.push(Step::Kernel("rms_norm_kernel", t as u32, 256));
        steps.push(Step::Gemm(3 * h, t, h, 1));
        if prefill {
            steps.push(Step::Gemm(t, t, h / heads, heads));
            steps.push(Step::Kernel(
                "flash_fwd_kernel",
                (t.div_ceil(128) * heads) as u32,
                128,
            ));
        } else {
            steps.push(Step::Kernel(
                "paged_attention_v1_kernel",
                (heads * t) as u32,
                128,
            ));
        }
        steps.push(Step::Gemm(h, t, h, 1));
        steps.push(Step::Kernel(
            "add_residual_kernel",
            (h * t).div_ceil(1024) as u32,
            1024,
        ));
        steps.push(Step::Kernel("rms_norm_kernel", t as u32, 256));
        steps.push(Step::Gemm(2 * ffn, t, h, 1));
        steps.push(Step::Kernel(
            "silu_and_mul_kernel",
            (ffn * t).div_ceil(1024) as u32,
            1024,
        ));
        steps.push(Step::Gemm(h, t, ffn, 1));
        steps.push(Step::Kernel(
            "add_residual_kernel",
            (h * t).div_ceil(1024) as u32,
            1024,
        ));
    };
    for _ in 0..layers {
        layer(&mut steps, prompt, true);
    }
    steps.push(Step::Gemm(vocab, 1, h, 1));
    for _ in 0..decode {
        for _ in 0..layers {
            layer(&mut steps, 1, false);
        }
        steps.push(Step::Gemm(vocab, 1, h, 1));
    }
    steps
}

fn check_cudarc(release: &str, mode: Injection) {
    let dir = Scratch::new(&format!("cudarc-{release}-{mode:?}"));
    let out = run(profiled(cudarc_llm(), release, mode, dir.path()));
    assert_eq!(
        out.stdout,
        "cudarc-llm: ok: 2 layers, prompt 128, 4 decode steps: 60 kernel launches, 47 GEMMs\n"
    );
    assert_eq!(out.stderr, "");
    let ring = ring_files(dir.path());
    assert_eq!(ring.len(), 1, "{ring:?}");
    let d = read_ring(&ring[0]);
    let ctx = format!("CUPTI {release}, {mode:?}");
    assert_complete_without_loss(&d, release, "cudarc-llm");
    assert_h100(&d);

    // Every kernel, with name, grid, block and the cost model's exact duration.
    let names = strings(&d.records);
    let model = CostModel::builtin();
    let ks = kernels(&d);
    let steps = cudarc_steps();
    assert_eq!(ks.len(), steps.len(), "{ctx}");
    for (k, step) in ks.iter().zip(&steps) {
        let name = names
            .get(&k.name)
            .unwrap_or_else(|| panic!("{ctx}: name {} not interned", k.name));
        let gemm = match step {
            Step::Kernel(n, g, b) => {
                assert_eq!(
                    (name.as_str(), k.grid, k.block),
                    (*n, [*g as i32, 1, 1], [*b as i32, 1, 1]),
                    "{ctx}"
                );
                None
            }
            Step::Gemm(m, n, kk, batch) => {
                assert!(
                    name.contains("gemm") || name.contains("gemv"),
                    "{ctx}: {name} for {step:?}"
                );
                Some(GemmShape {
                    m: *m,
                    n: *n,
                    k: *kk,
                    batch: *batch,
                    elem_bytes: 2,
                })
            }
        };
        let launch = SimLaunch {
            name: name.clone(),
            grid: k.grid.map(|g| g as u32),
            block: k.block.map(|b| b as u32),
            shared_mem: k.dynamic_shared_memory as u32,
            registers: u32::from(k.registers_per_thread),
            gemm,
        };
        let cost = model.cost(&launch).expect("costed");
        assert_eq!(
            k.end_ns - k.start_ns,
            cost.duration_ns,
            "{ctx}: {name} {:?} {step:?}",
            k.grid
        );
        assert_eq!((k.device_id, k.graph_id), (0, 0), "{ctx}");
    }

    // Each kernel's launch: same correlation id, a launch callback id, the API call's
    // interval around the moment of the launch.
    let ls = launches(&d);
    let by_corr: HashMap<u32, &Launch> = ls.iter().map(|l| (l.correlation_id, *l)).collect();
    assert_eq!(by_corr.len(), ls.len(), "{ctx}: correlation ids repeat");
    let kernel_corr: HashSet<u32> = ks.iter().map(|k| k.correlation_id).collect();
    assert_eq!(kernel_corr.len(), ks.len(), "{ctx}");
    assert_eq!(
        by_corr.keys().copied().collect::<HashSet<u32>>(),
        kernel_corr,
        "{ctx}"
    );
    let pid = d.header.producer_pid as u64;
    // The workload's own kernels go through the CUDA runtime (cudaLaunchKernel, runtime
    // callback id 211: one launch record, the runtime call's, not also the driver
    // launch inside it); cuBLAS's through the driver.
    let runtime_kernels: HashSet<u32> = ks
        .iter()
        .zip(&steps)
        .filter(|(_, s)| matches!(s, Step::Kernel(..)))
        .map(|(k, _)| k.correlation_id)
        .collect();
    assert_eq!(runtime_kernels.len(), 60, "{ctx}");
    for l in &ls {
        if runtime_kernels.contains(&l.correlation_id) {
            assert!(l.runtime && l.cbid == 211, "{ctx}: {l:?}");
        } else {
            assert!(
                !l.runtime && [307, 442, 652, 653].contains(&l.cbid),
                "{ctx}: {l:?}"
            );
        }
        assert!(l.start_ns > 0 && l.start_ns <= l.end_ns, "{ctx}: {l:?}");
        // cudarc launches from its main thread, whose kernel id is the pid.
        assert_eq!(l.thread_id, pid, "{ctx}: {l:?}");
    }

    // Each GEMM call's own span, from its hook: one per call (47), on the launching
    // thread, enclosing the launches it made (the `Gemm` records of its number).
    let calls: HashMap<u64, &GemmCall> = d
        .records
        .iter()
        .filter_map(|r| match r {
            Record::GemmCall(c) => Some((c.call, c)),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 47, "{ctx}");
    let mut launched = HashSet::new();
    for g in d.records.iter().filter_map(|r| match r {
        Record::Gemm(g) => Some(g),
        _ => None,
    }) {
        let (c, l) = (calls[&g.call], by_corr[&g.correlation_id]);
        assert!(
            c.thread_id == pid && c.start_ns <= l.start_ns && l.end_ns <= c.end_ns,
            "{ctx}: {c:?} {l:?}"
        );
        launched.insert(g.call);
    }
    assert_eq!(launched.len(), calls.len(), "{ctx}");

    // The host -> device -> host round trip of 4096 u32, at the simulated link's rate,
    // then each of the four decode steps' token (one bf16) read back.
    let copies: Vec<&Memcpy> = d
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Memcpy(m) if m.copy_kind == 1 || m.copy_kind == 2 => Some(m),
            _ => None,
        })
        .collect();
    let round_trip: Vec<(u8, u64, u64)> = copies
        .iter()
        .map(|m| (m.copy_kind, m.bytes, m.end_ns - m.start_ns))
        .collect();
    let t = sim_core::transfer::transfer_ns(16384, sim_core::transfer::HOST_LINK_BYTES_PER_NS);
    let token = sim_core::transfer::transfer_ns(2, sim_core::transfer::HOST_LINK_BYTES_PER_NS);
    let mut want = vec![(1, 16384, t), (2, 16384, t)];
    want.extend([(2, 2, token); 4]);
    assert_eq!(round_trip, want, "{ctx}");

    // NVTX ranges through CUPTI: one "prefill", four "decode".
    let starts: Vec<&str> = d
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Marker(m) if m.flags & marker_flags::START != 0 => {
                Some(names[&m.name].as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        vec!["prefill", "decode", "decode", "decode", "decode"],
        "{ctx}"
    );
}

#[test]
fn cudarc_cupti_12_9_injected() {
    check_cudarc("12.9", Injection::Driver);
}

#[test]
fn cudarc_cupti_12_9_preloaded() {
    check_cudarc("12.9", Injection::Preload);
}

#[test]
fn cudarc_cupti_13_0_injected() {
    check_cudarc("13.0", Injection::Driver);
}

#[test]
fn cudarc_cupti_13_0_preloaded() {
    check_cudarc("13.0", Injection::Preload);
}

#[test]
fn cudarc_cupti_13_4_injected() {
    check_cudarc("13.4", Injection::Driver);
}

#[test]
fn cudarc_cupti_13_4_preloaded() {
    check_cudarc("13.4", Injection::Preload);
}

/// cuda-python with a CUDA graph: replayed kernels carry the graph launch's
/// correlation id and their graph ids.
#[test]
fn cuda_python_graph_replays_are_attributed() {
    let dir = Scratch::new("python-13.0");
    let out = run(profiled(
        python_llm(),
        "13.0",
        Injection::Driver,
        dir.path(),
    ));
    assert!(out.stdout.starts_with("llm_driver: ok: "), "{}", out.stdout);
    assert_eq!(out.stderr, "");
    let ring = ring_files(dir.path());
    let d = read_ring(&ring[0]);
    assert_complete_without_loss(&d, "13.0", "python");
    assert_h100(&d);
    let ks = kernels(&d);
    // 12 prefill kernels, then 4 replays of the 12 captured decode kernels.
    assert_eq!(ks.len(), 60);
    let ls = launches(&d);
    let by_corr: HashMap<u32, &Launch> = ls.iter().map(|l| (l.correlation_id, *l)).collect();
    let mut graph_launches = HashSet::new();
    for k in &ks {
        let l = by_corr
            .get(&k.correlation_id)
            .unwrap_or_else(|| panic!("no launch for {k:?}"));
        if k.graph_id != 0 {
            assert_eq!(l.cbid, 514, "{l:?}");
            assert_ne!(k.graph_node_id, 0);
            graph_launches.insert(l.correlation_id);
        } else {
            assert_eq!(l.cbid, 307, "{l:?}");
        }
    }
    assert_eq!(graph_launches.len(), 4);
    assert_eq!(ks.iter().filter(|k| k.graph_id != 0).count(), 48);
}

/// A 4 KiB ring under a flood of launches, drained while the program runs as a slow
/// collector would: the program is unaffected, the loss is reported exactly, both in
/// `Dropped` records and in the ring header, and the stream still ends properly.
#[test]
fn a_tiny_ring_loses_records_and_says_how_many() {
    let dir = Scratch::new("tiny-ring");
    let mut cmd = profiled(cudarc_llm(), "13.4", Injection::Driver, dir.path());
    cmd.args(["--layers", "4", "--decode-steps", "60"])
        .env("GPUPROF_RING_SIZE", "4K");
    let mut child = TimedChild::spawn(cmd, LIMIT);
    let deadline = Instant::now() + LIMIT;
    // The ring appears complete (header written, file sized) before the writer starts.
    let path = loop {
        let full = (wire::ring::HEADER_SIZE + 4096) as u64;
        if let Some(p) = ring_files(dir.path())
            .into_iter()
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.len() == full))
        {
            break p;
        }
        assert!(
            Instant::now() < deadline && !child.exited(),
            "no ring appeared"
        );
        std::thread::sleep(Duration::from_millis(1));
    };
    let mut reader = RingReader::open(&path).expect("open ring");
    let mut records = Vec::new();
    loop {
        drain(&mut reader, &mut records);
        if reader.is_finished() {
            drain(&mut reader, &mut records);
            break;
        }
        assert!(Instant::now() < deadline, "ring never finished");
        std::thread::sleep(Duration::from_millis(2));
    }
    let out = child.wait();
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "cudarc-llm: ok: 4 layers, prompt 128, 60 decode steps: 1464 kernel launches, 1041 GEMMs\n"
    );
    assert_eq!(out.stderr, "");

    assert!(
        matches!(records.first(), Some(Record::Process(_))),
        "{:?}",
        records.first()
    );
    let Some(Record::End(end)) = records.last() else {
        panic!("last record is {:?}", records.last())
    };
    let mut dropped = 0;
    let mut received = 0;
    for r in &records {
        match r {
            Record::Dropped(d) => {
                assert_ne!(d.source, wire::DropSource::Cupti, "{d:?}");
                dropped += d.records;
            }
            Record::End(_) => {}
            _ => received += 1,
        }
    }
    let header = reader.header();
    assert!(dropped > 0, "nothing was lost: {header:?}");
    assert_eq!(end.records, received + dropped, "{header:?}");
    assert_eq!(header.dropped_records, dropped);
    // Every name that arrived resolves: strings are never among the losses.
    let names = strings(&records);
    for r in &records {
        if let Record::Kernel(k) = r {
            assert!(names.contains_key(&k.name), "{k:?}");
        }
    }
}
