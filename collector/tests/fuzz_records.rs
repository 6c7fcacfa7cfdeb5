//! Fuzzing the analyses and renderers with arbitrary records: what `gpuprof report`
//! (table, CSV, JSON), `gpuprof trace` and `gpuprof roofline` (points, chart) compute
//! from a session must never panic, overflow or write a number that is not finite,
//! whatever the records hold (timestamps at `u64::MAX`, ends before starts, negative
//! grids, NaN counters, absurd GEMM shapes, unknown ids).
//!
//! Records are drawn from small pools of ids, names and pids so that they join (names
//! resolve, kernels meet their launches, counters and GEMM shapes), with values biased
//! to the edges. Bounded for CI: `GPUPROF_FUZZ_CASES` cases per property (default
//! 400, about 10 s in a debug build); set it higher for a longer run.

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use wire::*;

use gpuprof_collector::analysis::aggregate::aggregate;
use gpuprof_collector::analysis::findings::findings;
use gpuprof_collector::analysis::roofline::peaks::Overrides;
use gpuprof_collector::analysis::{efficiency, screen, summarize, Integrity};
use gpuprof_collector::output::report::{self, Format};
use gpuprof_collector::output::roofline::layout::layout;
use gpuprof_collector::output::roofline::points::{charts, points, points_csv, points_json};
use gpuprof_collector::output::roofline::svg::render_svg;
use gpuprof_collector::output::trace::chrome_trace;
use gpuprof_collector::output::trace::{write_trace, TraceFormat};

fn config() -> Config {
    let cases = std::env::var("GPUPROF_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    Config {
        cases,
        // A failure is kept as a test case by hand (below), not in a file beside the
        // source.
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    }
}

fn ts() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1_700_000_000_000_000_000u64..1_700_000_000_000_100_000,
        2 => 0u64..100_000,
        1 => (0u64..4).prop_map(|k| u64::MAX - k),
        1 => any::<u64>(),
    ]
}

fn big() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..5000,
        1 => Just(u64::MAX),
        1 => Just(u64::MAX / 2 + 1),
        1 => any::<u64>(),
    ]
}

fn id() -> impl Strategy<Value = u32> {
    prop_oneof![6 => 0u32..8, 1 => Just(u32::MAX), 1 => any::<u32>()]
}

fn small() -> impl Strategy<Value = u32> {
    prop_oneof![6 => 0u32..4, 1 => Just(u32::MAX), 1 => any::<u32>()]
}

fn dim() -> impl Strategy<Value = i32> {
    prop_oneof![6 => 1i32..300, 1 => Just(0), 1 => Just(-1), 1 => Just(i32::MAX), 1 => Just(i32::MIN)]
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => 0.0f64..1e12,
        1 => Just(0.0),
        1 => Just(-1.0),
        1 => Just(f64::MAX),
        1 => Just(f64::MIN_POSITIVE),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => any::<f64>(),
    ]
}

/// Names that mean something to the analyses, and some that do not. None holds the
/// words `NaN` or `inf`, which the checks below look for.
const TEXTS: &[&str] = &[
    "",
    "_Z4gemmPfS_i",
    "rmsnorm_kernel",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
    "flash_fwd_kernel",
    "ampere_sgemm_128x64_nn",
    "nccl_allreduce",
    "decode",
    "prefill",
    "cublasGemmEx",
    "cublasLtMatmul",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp4_dst_fp32.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__cycles_active.avg",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__time_duration.sum",
    "_Znot-a-name",
    "a,b\"c\nd",
    "µ✓",
];

const DEVICES: &[&str] = &[
    "NVIDIA H100 80GB HBM3",
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA L4",
    "NVIDIA B200",
    "Some GPU",
    "",
];

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(TEXTS).prop_map(str::to_string),
        1 => "[a-z_]{0,6}".prop_filter("no inf", |s| !s.contains("inf")),
    ]
}

fn metrics() -> impl Strategy<Value = Vec<MetricValue>> {
    proptest::collection::vec(
        (id(), float()).prop_map(|(name, value)| MetricValue { name, value }),
        0..4,
    )
}

/// `(start, end)`: an end after the start mostly; sometimes anything.
fn span() -> impl Strategy<Value = (u64, u64)> {
    (
        ts(),
        prop_oneof![3 => 0u64..10_000, 1 => any::<u64>()],
        any::<bool>(),
    )
        .prop_map(|(start, d, reversed)| {
            if reversed {
                (start, d)
            } else {
                (start, start.saturating_add(d))
            }
        })
}

fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        1 => (small(), small(), text(), ts(), text()).prop_map(|(pid, ppid, cmd, start_ns, layouts)| {
            Record::Process(Box::new(ProcessInfo {
                pid,
                ppid,
                command: vec![cmd],
                host: "host".into(),
                start_ns,
                profiler_version: "0.1.0".into(),
                cupti_api_version: 130401,
                cupti_layouts: layouts,
                cupti_path: "/lib".into(),
                environment: vec![format!("RANK={ppid}")],
            }))
        }),
        1 => (small(), proptest::sample::select(DEVICES), (0u32..12, 0u32..10), small(), id(), id(), id())
            .prop_map(|(id, name, cc, sm_count, core, mem, bus)| {
                Record::Device(DeviceInfo {
                    id,
                    name: name.into(),
                    compute_capability: cc,
                    sm_count: sm_count.wrapping_mul(66),
                    core_clock_khz: core.wrapping_mul(500_000),
                    memory_clock_khz: mem.wrapping_mul(1_000_000),
                    memory_bus_width_bits: bus.wrapping_mul(2048),
                    global_memory_bytes: 80 << 30,
                    l2_cache_bytes: 50 << 20,
                    uuid: [0; 16],
                })
            }),
        1 => (small(), small()).prop_map(|(context_id, device_id)| Record::Context(ContextInfo { context_id, device_id })),
        3 => (id(), text()).prop_map(|(id, text)| Record::String(InternedString { id, text })),
        6 => (small(), small(), small(), id(), span(), id(), [dim(), dim(), dim()], [dim(), dim(), dim()], small(), big())
            .prop_map(|(device_id, context_id, stream_id, correlation_id, (start_ns, end_ns), name, grid, block, graph_id, graph_node_id)| {
                Record::Kernel(Kernel {
                    device_id,
                    context_id,
                    stream_id,
                    correlation_id,
                    start_ns,
                    end_ns,
                    name,
                    grid,
                    block,
                    registers_per_thread: 32,
                    static_shared_memory: 0,
                    dynamic_shared_memory: 0,
                    graph_id,
                    graph_node_id,
                })
            }),
        2 => (small(), small(), id(), span(), big(), any::<u8>()).prop_map(|(device_id, stream_id, correlation_id, (start_ns, end_ns), bytes, copy_kind)| {
            Record::Memcpy(Memcpy {
                device_id,
                context_id: 1,
                stream_id,
                correlation_id,
                start_ns,
                end_ns,
                bytes,
                copy_kind: copy_kind % 12,
                src_kind: 1,
                dst_kind: 3,
                graph_node_id: 0,
            })
        }),
        1 => (small(), span(), big()).prop_map(|(stream_id, (start_ns, end_ns), bytes)| {
            Record::Memset(Memset { stream_id, start_ns, end_ns, bytes, ..Memset::default() })
        }),
        3 => (prop_oneof![Just(marker_flags::START), Just(marker_flags::END), Just(marker_flags::INSTANTANEOUS), any::<u32>()], ts(), small(), small(), id(), id())
            .prop_map(|(flags, timestamp_ns, id, thread_id, name, domain)| {
                Record::Marker(Marker { flags, timestamp_ns, id, thread_id: thread_id as u64, process_id: 0, name, domain })
            }),
        3 => (id(), prop_oneof![Just(307u32), Just(514), any::<u32>()], any::<bool>(), small(), span())
            .prop_map(|(correlation_id, cbid, runtime, thread_id, (start_ns, end_ns))| {
                Record::Launch(Launch { correlation_id, cbid, runtime, thread_id: thread_id as u64, start_ns, end_ns })
            }),
        1 => (small(), span()).prop_map(|(kind, (start_ns, end_ns))| Record::Overhead(Overhead { kind, start_ns, end_ns, thread_id: 1 })),
        3 => (id(), small(), metrics(), prop_oneof![Just(0u32), small()]).prop_map(|(correlation_id, group, metrics, range)| {
            Record::KernelCounters(KernelCounters { correlation_id, group, metrics, range })
        }),
        2 => (small(), span(), metrics()).prop_map(|(device_id, (start_ns, end_ns), metrics)| {
            Record::CounterSample(CounterSample { device_id, start_ns, end_ns, metrics })
        }),
        1 => (small(), prop_oneof![Just("kernel"), Just("sampling"), Just("")], proptest::collection::vec(proptest::collection::vec(id(), 0..4), 0..3))
            .prop_map(|(device_id, mode, groups)| {
                Record::CounterPlan(Box::new(CounterPlan { device_id, chip: "GH100".into(), mode: mode.into(), groups, policy: "all".into() }))
            }),
        1 => text().prop_map(|message| Record::CounterStatus(CounterStatus { message })),
        3 => (id(), big(), small(), id(), (big(), big(), big(), big()), (0u32..3, 0u32..3), (0u32..40, 0u32..40, 0u32..40), prop_oneof![0u32..80, any::<u32>()])
            .prop_map(|(correlation_id, call, launch_index, api, (m, n, k, batch), (trans_a, trans_b), (a_type, b_type, c_type), compute_type)| {
                Record::Gemm(Gemm {
                    correlation_id, call, launch_index, api, m, n, k, batch, trans_a, trans_b,
                    a_type, b_type, c_type, d_type: c_type, compute_type,
                })
            }),
        1 => (big(), id()).prop_map(|(node_id, correlation_id)| Record::GraphNode(GraphNode { node_id, correlation_id })),
        1 => (big(), big()).prop_map(|(node_id, original_node_id)| Record::GraphNodeCloned(GraphNodeCloned { node_id, original_node_id })),
        1 => text().prop_map(|message| Record::GemmStatus(GemmStatus { message })),
        1 => (prop_oneof![Just(DropSource::Cupti), Just(DropSource::Channel), Just(DropSource::Ring)], big())
            .prop_map(|(source, records)| Record::Dropped(Dropped { source, records })),
        1 => big().prop_map(|records| Record::End(End { records })),
    ]
}

fn session() -> impl Strategy<Value = Vec<(u32, Record)>> {
    proptest::collection::vec(
        (
            prop_oneof![4 => Just(1u32), 1 => Just(2u32), 1 => Just(u32::MAX)],
            record(),
        ),
        0..60,
    )
}

/// Words of `text` that spell a non-finite number as Rust and most formatters print
/// one.
fn non_finite_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| matches!(*w, "NaN" | "inf" | "nan" | "Infinity"))
        .map(str::to_string)
        .collect()
}

/// `debug` (a `{:?}` rendering) without its quoted strings, whose contents came from
/// the records.
fn outside_strings(debug: &str) -> String {
    let mut out = String::new();
    let mut chars = debug.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            out.push(c);
            continue;
        }
        out.push(' ');
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => break,
                _ => {}
            }
        }
    }
    out
}

/// Everything the commands compute and write from `records`, checked.
fn run_commands(records: &[(u32, Record)], integrity: &Integrity) -> Result<(), TestCaseError> {
    let peaks = Overrides::default();
    let a = aggregate(records);
    for format in [Format::Table, Format::Csv, Format::Json] {
        let text = report::report(&findings(&a, integrity, &peaks), format, None);
        if format == Format::Json {
            prop_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
        } else {
            let words = non_finite_words(&text);
            prop_assert!(
                words.is_empty(),
                "{format:?} report writes {words:?}:\n{text}"
            );
        }
    }
    // What the JSON serialises: a number that is not finite would be written as null.
    let summary = summarize(records);
    let e = efficiency(records, &peaks);
    for (what, debug) in [
        ("summary", format!("{summary:?}")),
        ("roofline", format!("{e:?}")),
    ] {
        let words = non_finite_words(&outside_strings(&debug));
        prop_assert!(words.is_empty(), "{what} holds {words:?}: {debug}");
    }
    let trace = chrome_trace(records);
    prop_assert!(serde_json::to_string(&trace).is_ok());
    for format in [TraceFormat::Perfetto, TraceFormat::Chrome] {
        prop_assert!(write_trace(records, format, None, Vec::new()).is_ok());
    }
    let rows = points(&e);
    let csv = points_csv(&rows);
    let words = non_finite_words(&csv);
    prop_assert!(words.is_empty(), "roofline CSV writes {words:?}:\n{csv}");
    let words = non_finite_words(&outside_strings(&format!("{rows:?}")));
    prop_assert!(words.is_empty(), "roofline points hold {words:?}");
    prop_assert!(serde_json::to_string(&points_json(&rows)).is_ok());
    for (_, chart) in charts(&e) {
        let l = layout(&chart);
        let words = non_finite_words(&outside_strings(&format!("{l:?}")));
        prop_assert!(words.is_empty(), "chart layout holds {words:?}");
        let svg = render_svg(&chart);
        let words = non_finite_words(&svg);
        prop_assert!(words.is_empty(), "SVG writes {words:?}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// The production path: records screened as `session::analyse` screens them.
    #[test]
    fn screened_records_render_without_panics_or_non_finite_numbers(records in session()) {
        let (records, impossible) = screen(records);
        let integrity = Integrity { impossible, ..Integrity::default() };
        run_commands(&records, &integrity)?;
    }

    /// The library's analyses on records nobody screened (the aggregate screens them
    /// itself; the trace takes them as they are): no panic, no overflow.
    #[test]
    fn unscreened_records_never_panic(records in session()) {
        let peaks = Overrides::default();
        let a = aggregate(&records);
        for format in [Format::Table, Format::Csv, Format::Json] {
            let _ = report::report(&findings(&a, &Integrity::default(), &peaks), format, None);
        }
        let _ = chrome_trace(&records);
        let _ = write_trace(&records, TraceFormat::Perfetto, None, Vec::new());
        let e = efficiency(&records, &peaks);
        let _ = points_csv(&points(&e));
        for (_, chart) in charts(&e) {
            let _ = render_svg(&chart);
        }
    }
}
