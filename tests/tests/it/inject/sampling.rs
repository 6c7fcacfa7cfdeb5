//! PM sampling inside libgpuprof.so (`GPUPROF_COUNTERS=sampling`), end to end on the
//! simulated CUDA stack: the cudarc client runs with the profiler injected and a
//! session directory but no collector; the test reads the ring the process left.
//! The simulated PM sampler apportions each kernel's integer counters over the sample
//! windows exactly, so the samples of a counter add up to the cost model's total over
//! the kernels.

use gpuprof_tests::{
    artifact, cudarc_gemms, kernels_in_order, plans, run_cudarc_injected, run_injected_with_args,
    statuses, strings, Finished, Injection,
};
use sim_core::{CostModel, GemmShape, Launch as SimLaunch};
use wire::{CounterSample, Record};

const READ: &str = "dram__bytes_read.sum";
const WRITE: &str = "dram__bytes_write.sum";
const GPU_TIME: &str = "gpu__time_duration.sum";

fn samples(records: &[Record]) -> Vec<&CounterSample> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::CounterSample(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// The cost model's total of each of `metrics` over the kernels in the ring.
fn model_totals(records: &[Record], metrics: &[&str]) -> Vec<f64> {
    model_totals_on("GH100", records, metrics)
}

/// [`model_totals`] on the simulated `chip`.
fn model_totals_on(chip: &str, records: &[Record], metrics: &[&str]) -> Vec<f64> {
    let names = strings(records);
    let ks = kernels_in_order(records);
    let gemms = cudarc_gemms();
    assert_eq!(ks.len(), gemms.len());
    let model = CostModel::builtin().with_chip(chip);
    let mut totals = vec![0.0; metrics.len()];
    for (k, gemm) in ks.iter().zip(gemms) {
        let launch = SimLaunch {
            name: names[&k.name].clone(),
            grid: k.grid.map(|g| g as u32),
            block: k.block.map(|b| b as u32),
            shared_mem: k.dynamic_shared_memory as u32,
            registers: u32::from(k.registers_per_thread),
            gemm: gemm.map(|(m, n, kk, batch)| GemmShape {
                m,
                n,
                k: kk,
                batch,
                elem_bytes: 2,
            }),
        };
        let cost = model.cost(&launch).expect("costed");
        for (t, m) in totals.iter_mut().zip(metrics) {
            *t += cost.counters.get(*m).copied().unwrap_or(0.0);
        }
    }
    totals
}

/// DRAM bytes sampled every 100 µs on the simulated H100: a sampling plan, samples
/// tiling time in increasing windows, no per-kernel counters, and each counter's sum
/// over the samples equal to the cost model's total over the kernels.
#[test]
fn sampling_sums_equal_the_kernels_totals() {
    let (out, records) = run_sampling(
        "dram",
        "13.4",
        &[
            ("GPUPROF_COUNTERS", "sampling"),
            (
                "GPUPROF_METRICS",
                "dram__bytes_read.sum,dram__bytes_write.sum",
            ),
        ],
    );
    assert_eq!(out.stderr, "");
    assert!(statuses(&records).is_empty(), "{:?}", statuses(&records));
    assert!(
        !records
            .iter()
            .any(|r| matches!(r, Record::KernelCounters(_))),
        "no per-kernel counters in sampling mode"
    );
    let names = strings(&records);
    let ps = plans(&records);
    assert_eq!(ps.len(), 1, "{ps:?}");
    assert_eq!(
        (
            ps[0].device_id,
            ps[0].chip.as_str(),
            ps[0].mode.as_str(),
            ps[0].policy.as_str()
        ),
        (
            0,
            "GH100",
            "sampling",
            "every 100 µs (GPU time trigger), GPU-wide"
        )
    );
    let groups: Vec<Vec<&str>> = ps[0]
        .groups
        .iter()
        .map(|g| g.iter().map(|id| names[id].as_str()).collect())
        .collect();
    assert_eq!(groups, vec![vec![READ, WRITE]]);

    let ss = samples(&records);
    assert!(ss.len() > 1, "{} samples", ss.len());
    let mut prev_end = 0;
    let mut sums = [0.0f64; 2];
    for (i, s) in ss.iter().enumerate() {
        assert_eq!(s.device_id, 0);
        assert!(s.start_ns < s.end_ns, "{s:?}");
        assert!(
            s.start_ns >= prev_end,
            "windows increase and do not overlap: {s:?}"
        );
        // The first window claims to start before the Start (as on an H200).
        assert!(i == 0 || s.end_ns - s.start_ns <= 100_000, "{s:?}");
        prev_end = s.end_ns;
        let got: Vec<&str> = s.metrics.iter().map(|m| names[&m.name].as_str()).collect();
        assert_eq!(got, [READ, WRITE]);
        for (sum, m) in sums.iter_mut().zip(&s.metrics) {
            assert!(m.value >= 0.0 && m.value.fract() == 0.0, "{s:?}");
            *sum += m.value;
        }
    }
    let ks = kernels_in_order(&records);
    assert!(ss[0].start_ns <= ks[0].start_ns);
    assert!(prev_end >= ks.iter().map(|k| k.end_ns).max().unwrap());
    let want = model_totals(&records, &[READ, WRITE]);
    assert!(want[0] > 0.0 && want[1] > 0.0, "{want:?}");
    assert_eq!(sums[0], want[0], "{READ}: samples vs kernels");
    assert_eq!(sums[1], want[1], "{WRITE}: samples vs kernels");
}

/// The default PM sampling set of GH100: only metrics the host API accepts for PM
/// sampling (the range profiler's group 0, with tensor ops and L2 lookups, is
/// refused), one pass, the GPU-time trigger. On 12.9+ DRAM bytes are sampled; 12.8
/// refuses them for PM sampling (NVIDIA's library, which the simulated CUPTI asks),
/// and the plan says so and samples DRAM throughput instead.
#[test]
fn the_default_sampling_set_starts_and_sums_exactly() {
    let rest = [
        "sm__cycles_active.avg",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        GPU_TIME,
    ];
    for (release, dram, note) in [
        ("13.4", &[READ, WRITE][..], ""),
        (
            "12.8",
            &["dram__throughput.avg.pct_of_peak_sustained_elapsed"][..],
            "; not accepted for PM sampling by this CUPTI: dram__bytes_read.sum, \
             dram__bytes_write.sum",
        ),
    ] {
        // Six metrics every 100 µs over a debug-build run on a shared machine: the
        // exit's last decode gets time enough that no sample is cut off.
        let (out, records) = run_sampling(
            &format!("default-{release}"),
            release,
            &[
                ("GPUPROF_COUNTERS", "sampling"),
                ("GPUPROF_EXIT_TIMEOUT_MS", "20000"),
            ],
        );
        assert_eq!(out.stderr, "", "{release}");
        assert!(statuses(&records).is_empty(), "{:?}", statuses(&records));
        let names = strings(&records);
        let ps = plans(&records);
        assert_eq!(ps.len(), 1, "{release}: {ps:?}");
        assert_eq!(
            ps[0].policy,
            format!("every 100 µs (GPU time trigger), GPU-wide{note}"),
            "{release}"
        );
        let want: Vec<&str> = dram.iter().chain(rest.iter()).copied().collect();
        let got: Vec<&str> = ps[0].groups[0]
            .iter()
            .map(|id| names[id].as_str())
            .collect();
        assert_eq!(got, want, "{release}");
        // Every sampled sum of kernel work adds up to the kernels' totals.
        let ss = samples(&records);
        assert!(ss.len() > 1, "{release}: {} samples", ss.len());
        let sums: Vec<&str> = want
            .iter()
            .copied()
            .filter(|m| m.ends_with(".sum") && *m != GPU_TIME)
            .collect();
        // GPU time is each window's length; the first window's, its end timestamp,
        // and it starts before the second by more than an interval (as on an H200).
        let t = want.iter().position(|w| *w == GPU_TIME).expect("GPU time");
        assert_eq!(ss[0].metrics[t].value, ss[0].end_ns as f64, "{release}");
        assert!(
            ss[0].end_ns - ss[0].start_ns > 100_000,
            "{release}: {:?}",
            ss[0]
        );
        for s in &ss[1..] {
            assert_eq!(s.metrics[t].value, (s.end_ns - s.start_ns) as f64, "{s:?}");
        }
        let totals = model_totals(&records, &sums);
        for (m, total) in sums.iter().zip(totals) {
            let i = want.iter().position(|w| w == m).expect("sampled");
            let sampled: f64 = ss.iter().map(|s| s.metrics[i].value).sum();
            assert_eq!(sampled, total, "{release}: {m}");
        }
    }
}

/// The default PM sampling set on the simulated A100, L40S and B200: it starts (the
/// SYSCLK trigger on GA100, where the GPU-time trigger is not supported), and the
/// sampled DRAM bytes add up to the cost model's totals for that chip.
#[test]
fn the_default_sampling_set_sums_exactly_on_every_chip() {
    for (chip, trigger) in [
        ("GA100", "SYSCLK cycles trigger"),
        ("AD102", "GPU time trigger"),
        ("GB100", "GPU time trigger"),
    ] {
        let (out, records) = run_sampling(
            &format!("chip-{chip}"),
            "13.4",
            &[
                ("GPUPROF_COUNTERS", "sampling"),
                ("SIMCUDA_CHIP", chip),
                ("GPUPROF_EXIT_TIMEOUT_MS", "20000"),
            ],
        );
        assert_eq!(out.stderr, "", "{chip}");
        assert!(statuses(&records).is_empty(), "{:?}", statuses(&records));
        let names = strings(&records);
        let ps = plans(&records);
        assert_eq!(ps.len(), 1, "{chip}: {ps:?}");
        assert_eq!(ps[0].chip, chip);
        assert!(ps[0].policy.contains(trigger), "{chip}: {}", ps[0].policy);
        let got: Vec<&str> = ps[0].groups[0]
            .iter()
            .map(|id| names[id].as_str())
            .collect();
        assert_eq!(got[..2], [READ, WRITE], "{chip}");
        let ss = samples(&records);
        let want = model_totals_on(chip, &records, &[READ, WRITE]);
        for (i, total) in want.iter().enumerate() {
            let sampled: f64 = ss.iter().map(|s| s.metrics[i].value).sum();
            assert_eq!(sampled, *total, "{chip}: {}", [READ, WRITE][i]);
        }
    }
}

/// A program that exits with its CUDA context and PM sampler alive, as PyTorch does:
/// the profiler's exit handler must stop the sampler before the teardown that the
/// enable registered for exit (the simulated CUPTI crashes on a Stop after it, as an
/// H200 did). Both ways sampling starts: from the first context
/// (`GPUPROF_COUNTERS=sampling`) and by the hand-over at the first graph launch
/// (default settings). The ring ends finished with nothing dropped (checked by
/// `run_injected_with_args`); from the first context, the samples still add up to
/// the cost model's total over the kernels, the last one taken at exit.
#[test]
fn sampling_ends_cleanly_when_the_program_exits_with_its_context_alive() {
    let metrics = [READ, WRITE].join(",");
    let records = exit_with_context(
        "from-start",
        &["--end-by", "exit-with-context"],
        &[
            ("GPUPROF_COUNTERS", "sampling"),
            ("GPUPROF_METRICS", &metrics),
        ],
    );
    let modes: Vec<&str> = plans(&records).iter().map(|p| p.mode.as_str()).collect();
    assert_eq!(modes, ["sampling"]);
    let names = strings(&records);
    let mut sums = [0.0f64; 2];
    for s in samples(&records) {
        let got: Vec<&str> = s.metrics.iter().map(|m| names[&m.name].as_str()).collect();
        assert_eq!(got, [READ, WRITE]);
        for (sum, m) in sums.iter_mut().zip(&s.metrics) {
            *sum += m.value;
        }
    }
    assert_eq!(sums.to_vec(), model_totals(&records, &[READ, WRITE]));

    let records = exit_with_context(
        "hand-over",
        &["--graph-decode", "--end-by", "exit-with-context"],
        &[],
    );
    let modes: Vec<&str> = plans(&records).iter().map(|p| p.mode.as_str()).collect();
    assert_eq!(modes, ["kernel", "sampling"]);
}

/// The cudarc workload with `args` and `env`, injected: nothing on stderr, samples
/// whose last window ends after the last kernel; the ring's records.
fn exit_with_context(name: &str, args: &[&str], env: &[(&str, &str)]) -> Vec<Record> {
    let mut env = env.to_vec();
    env.push(("GPUPROF_RING_SIZE", "512M"));
    let (out, records) = run_injected_with_args(
        &artifact("cudarc-llm"),
        args,
        Injection::Driver,
        &format!("sampling-exit-{name}"),
        "13.4",
        &env,
    );
    assert_eq!(out.stderr, "", "{name}");
    let ss = samples(&records);
    assert!(ss.len() > 1, "{name}: {} samples", ss.len());
    let last_kernel = kernels_in_order(&records)
        .iter()
        .map(|k| k.end_ns)
        .max()
        .expect("kernels");
    assert!(ss.last().expect("samples").end_ns >= last_kernel, "{name}");
    records
}

fn run_sampling(name: &str, release: &str, env: &[(&str, &str)]) -> (Finished, Vec<Record>) {
    // Nothing drains the ring while the program runs (the test reads it after), and
    // samples come per wall-clock interval: a slow, loaded machine makes more of them
    // than the default 64 MiB holds.
    let mut env = env.to_vec();
    env.push(("GPUPROF_RING_SIZE", "512M"));
    run_cudarc_injected(&format!("sampling-{name}"), release, &env)
}
