//! Offline tests against NVIDIA's REAL CUPTI and nvperf libraries and headers: the
//! pinned wheels of `python3 scripts/nvidia-wheels.py fetch` (see
//! `gpuprof_tests::manifest`). No GPU, and no CUDA driver, is needed or expected.
//!
//! What is checked, for every pinned release:
//! - the dynamic symbol tables: every function gpuprof requires is exported, and each
//!   function of `cupti_sys::CUPTI_FN_NAMES` / `NVPERF_HOST_FN_NAMES` is exported from
//!   one release on, by every later release, starting exactly where recorded below;
//! - the activity record layouts of `cupti_sys::records` against what the C compiler
//!   computes from NVIDIA's headers (sizes, alignments, field offsets), and each
//!   release's `api_version` against `CUPTI_API_VERSION` of its headers;
//! - `cupti::Cupti::open` on the real library, and `cuptiActivityGetStructSize`;
//! - NVIDIA's real `libcublas.so.12` / `libcublasLt.so.12` (12.9, the release the cuBLAS
//!   bindings are generated from) export every function `libgpuprof.so` hooks or calls.
//!
//! Calls into a real libcupti run in child processes (this test binary re-invoked
//! with `GPUPROF_TEST_CHILD=<task>:<release>`), one library per process: CUPTI is
//! never unloaded, and CUPTI 13.2 crashes the process that calls it without a driver.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use cupti_sys::records::{Release, RELEASES};
use cupti_sys::{CUPTI_FN_NAMES, NVPERF_HOST_FN_NAMES};
use gpuprof_tests::{major_minor, manifest, manifest_release, nvidia_extra, NvidiaRelease};
use object::{Object, ObjectSymbol};

// ---------------------------------------------------------------------------------
// Manifest vs generated bindings
// ---------------------------------------------------------------------------------

/// The generated layouts are for exactly the pinned releases, from the same headers.
#[test]
fn manifest_releases_are_the_generated_releases() {
    let pinned: Vec<(&str, &str)> = manifest()
        .iter()
        .map(|r| (r.release.as_str(), r.cupti_version.as_str()))
        .collect();
    let generated: Vec<(&str, &str)> = RELEASES.iter().map(|r| (r.name, r.headers)).collect();
    assert_eq!(
        pinned, generated,
        "manifest (release, CUPTI wheel) vs cupti_sys::records::RELEASES"
    );
    let mut sorted = pinned.clone();
    sorted.sort_by_key(|(r, _)| major_minor(r));
    assert_eq!(
        pinned, sorted,
        "the manifest must list releases oldest first"
    );
}

fn generated_release(name: &str) -> &'static Release {
    RELEASES.iter().find(|r| r.name == name).unwrap_or_else(|| {
        panic!("release {name} has no generated layouts in cupti_sys::records::RELEASES")
    })
}

// ---------------------------------------------------------------------------------
// 1. Dynamic symbol tables
// ---------------------------------------------------------------------------------

/// Names of the functions `path` defines in its dynamic symbol table (imports left out;
/// symbol versions such as `@@libcupti.so.13` are not part of the name).
fn exported_functions(path: &Path) -> BTreeSet<String> {
    let data =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let file =
        object::read::File::parse(&*data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let names: BTreeSet<String> = file
        .dynamic_symbols()
        .filter(|s| !s.is_undefined())
        .filter_map(|s| s.name().ok().map(str::to_owned))
        .collect();
    assert!(
        names.len() > 100,
        "{} exports only {} symbols",
        path.display(),
        names.len()
    );
    names
}

/// Per manifest release (same order), what its libcupti / libnvperf_host exports.
fn exports(which: fn(&NvidiaRelease) -> &Path) -> Vec<BTreeSet<String>> {
    std::thread::scope(|s| {
        let jobs: Vec<_> = manifest()
            .iter()
            .map(|r| s.spawn(move || exported_functions(which(r))))
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("reading a symbol table panicked"))
            .collect()
    })
}

fn cupti_exports() -> &'static [BTreeSet<String>] {
    static EXPORTS: OnceLock<Vec<BTreeSet<String>>> = OnceLock::new();
    EXPORTS.get_or_init(|| exports(|r| r.libcupti.as_path()))
}

fn nvperf_host_exports() -> &'static [BTreeSet<String>] {
    static EXPORTS: OnceLock<Vec<BTreeSet<String>>> = OnceLock::new();
    EXPORTS.get_or_init(|| exports(|r| r.libnvperf_host.as_path()))
}

/// The release from which `name` is exported, checking that every later release
/// exports it too and no earlier one does (no gaps). `None` if no release exports it.
fn first_release_exporting(
    name: &str,
    exports: &[BTreeSet<String>],
) -> Result<Option<&'static str>, String> {
    let present: Vec<bool> = exports.iter().map(|e| e.contains(name)).collect();
    let Some(first) = present.iter().position(|&p| p) else {
        return Ok(None);
    };
    let missing_later: Vec<&str> = manifest()[first..]
        .iter()
        .zip(&present[first..])
        .filter(|(_, &p)| !p)
        .map(|(r, _)| r.release.as_str())
        .collect();
    if missing_later.is_empty() {
        Ok(Some(manifest()[first].release.as_str()))
    } else {
        Err(format!(
            "{name}: exported from {} on, but missing again in {}",
            manifest()[first].release,
            missing_later.join(", ")
        ))
    }
}

fn availability_table(names: &[&str], exports: &[BTreeSet<String>]) -> String {
    let mut t = format!("{:<52}", "function");
    for r in manifest() {
        let _ = write!(t, " {:>5}", r.release);
    }
    t.push('\n');
    for name in names {
        let _ = write!(t, "{name:<52}");
        for e in exports {
            let _ = write!(t, " {:>5}", if e.contains(*name) { "x" } else { "-" });
        }
        t.push('\n');
    }
    t
}

/// Functions of `CUPTI_FN_NAMES` that the oldest pinned release (12.4) does not export,
/// with the release that first does, as read from the real libraries. Every other
/// function of the table is exported by every pinned release.
const CUPTI_FIRST_EXPORTED_AFTER_OLDEST: &[(&str, &str)] = &[
    // Range profiler, PM sampling and profiler host APIs appeared in CUDA 12.6.
    ("cuptiPmSamplingCounterDataGetSampleInfo", "12.6"),
    ("cuptiPmSamplingCounterDataImageInitialize", "12.6"),
    ("cuptiPmSamplingDecodeData", "12.6"),
    ("cuptiPmSamplingDisable", "12.6"),
    ("cuptiPmSamplingEnable", "12.6"),
    ("cuptiPmSamplingGetCounterAvailability", "12.6"),
    ("cuptiPmSamplingGetCounterDataInfo", "12.6"),
    ("cuptiPmSamplingGetCounterDataSize", "12.6"),
    ("cuptiPmSamplingSetConfig", "12.6"),
    ("cuptiPmSamplingStart", "12.6"),
    ("cuptiPmSamplingStop", "12.6"),
    ("cuptiProfilerHostConfigAddMetrics", "12.6"),
    ("cuptiProfilerHostDeinitialize", "12.6"),
    ("cuptiProfilerHostEvaluateToGpuValues", "12.6"),
    ("cuptiProfilerHostGetBaseMetrics", "12.6"),
    ("cuptiProfilerHostGetConfigImage", "12.6"),
    ("cuptiProfilerHostGetConfigImageSize", "12.6"),
    ("cuptiProfilerHostGetMaxNumHardwareMetricsPerPass", "12.6"),
    ("cuptiProfilerHostGetMetricProperties", "12.6"),
    ("cuptiProfilerHostGetNumOfPasses", "12.6"),
    ("cuptiProfilerHostGetRangeName", "12.6"),
    ("cuptiProfilerHostGetSubMetrics", "12.6"),
    ("cuptiProfilerHostGetSupportedChips", "12.6"),
    ("cuptiProfilerHostInitialize", "12.6"),
    ("cuptiRangeProfilerCounterDataGetRangeInfo", "12.6"),
    ("cuptiRangeProfilerCounterDataImageInitialize", "12.6"),
    ("cuptiRangeProfilerDecodeData", "12.6"),
    ("cuptiRangeProfilerDisable", "12.6"),
    ("cuptiRangeProfilerEnable", "12.6"),
    ("cuptiRangeProfilerGetCounterDataInfo", "12.6"),
    ("cuptiRangeProfilerGetCounterDataSize", "12.6"),
    ("cuptiRangeProfilerPopRange", "12.6"),
    ("cuptiRangeProfilerPushRange", "12.6"),
    ("cuptiRangeProfilerSetConfig", "12.6"),
    ("cuptiRangeProfilerStart", "12.6"),
    ("cuptiRangeProfilerStop", "12.6"),
    // Per-subscriber APIs: cuptiSubscribe_v2 in 13.0, the activity _v2 family in 13.2
    // (GetNextRecord_v2 and GetNumDroppedRecords_v2 only in 13.3).
    ("cuptiSubscribe_v2", "13.0"),
    ("cuptiActivityDisable_v2", "13.2"),
    ("cuptiActivityEnable_v2", "13.2"),
    ("cuptiActivityRegisterCallbacks_v2", "13.2"),
    ("cuptiActivitySetAttribute_v2", "13.2"),
    ("cuptiActivityGetNextRecord_v2", "13.3"),
    ("cuptiActivityGetNumDroppedRecords_v2", "13.3"),
    ("cuptiActivityGetStructSize", "13.2"),
    ("cuptiProfilerHostGetMetricsInSinglePassSet", "13.2"),
    ("cuptiProfilerHostGetSinglePassSets", "13.2"),
    ("cuptiProfilerHostSetDevicePartitionInfo", "13.3"),
    ("cuptiRangeProfilerGetDevicePartitionInfo", "13.3"),
];

#[test]
fn libcupti_exports_every_required_function() {
    let exports = cupti_exports();
    let mut missing = Vec::new();
    for (r, e) in manifest().iter().zip(exports) {
        for name in cupti::required_functions() {
            if !e.contains(*name) {
                missing.push(format!("{} ({}): {name}", r.release, r.libcupti.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "required CUPTI functions not exported:\n{}",
        missing.join("\n")
    );
    for name in cupti::required_functions() {
        assert!(
            CUPTI_FN_NAMES.contains(name),
            "required {name} is not in cupti_sys::CUPTI_FN_NAMES"
        );
    }
}

#[test]
fn libcupti_function_availability_starts_at_one_release_without_gaps() {
    let exports = cupti_exports();
    println!(
        "libcupti exports (x) per release:\n{}",
        availability_table(CUPTI_FN_NAMES, exports)
    );

    let oldest = manifest()[0].release.as_str();
    let expected: BTreeMap<&str, &str> =
        CUPTI_FIRST_EXPORTED_AFTER_OLDEST.iter().copied().collect();
    assert_eq!(
        expected.len(),
        CUPTI_FIRST_EXPORTED_AFTER_OLDEST.len(),
        "duplicate entry in the table"
    );
    for name in expected.keys() {
        assert!(
            CUPTI_FN_NAMES.contains(name),
            "{name} is listed above but not in CUPTI_FN_NAMES"
        );
    }

    let mut problems = Vec::new();
    for name in CUPTI_FN_NAMES {
        match first_release_exporting(name, exports) {
            Err(gap) => problems.push(gap),
            Ok(None) => problems.push(format!("{name}: exported by no pinned release")),
            Ok(Some(first)) => {
                let want = expected.get(name).copied().unwrap_or(oldest);
                if first != want {
                    problems.push(format!(
                        "{name}: first exported by {first}, expected {want}"
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "libcupti availability differs:\n{}",
        problems.join("\n")
    );
}

/// A few facts spelled out, read straight from the symbol tables.
#[test]
fn libcupti_known_first_releases() {
    let exports = cupti_exports();
    let exported_by = |name: &str| -> Vec<&str> {
        manifest()
            .iter()
            .zip(exports)
            .filter(|(_, e)| e.contains(name))
            .map(|(r, _)| r.release.as_str())
            .collect()
    };
    let releases_from = |first: (u32, u32)| -> Vec<&str> {
        manifest()
            .iter()
            .filter(|r| major_minor(&r.release) >= first)
            .map(|r| r.release.as_str())
            .collect()
    };
    // cuptiActivityGetStructSize (the library's own record sizes) is new in CUDA 13.2.
    assert_eq!(
        exported_by("cuptiActivityGetStructSize"),
        releases_from((13, 2))
    );
    // cuptiSubscribe_v2 (several subscribers) is exported from CUDA 13.0 on; no CUDA 12
    // library has it, 12.9 included.
    assert_eq!(exported_by("cuptiSubscribe_v2"), releases_from((13, 0)));
    // The range profiler API is exported from 12.6 on: 12.4 does not have it.
    assert_eq!(
        exported_by("cuptiRangeProfilerEnable"),
        releases_from((12, 6))
    );
    assert!(!exported_by("cuptiRangeProfilerEnable").contains(&"12.4"));
    // The legacy entry points gpuprof uses are in every pinned release.
    for name in [
        "cuptiSubscribe",
        "cuptiActivityGetNextRecord",
        "cuptiGetVersion",
        "cuptiFinalize",
    ] {
        assert_eq!(exported_by(name), releases_from((0, 0)), "{name}");
    }
}

#[test]
fn libnvperf_host_exports_every_table_function_in_every_release() {
    let exports = nvperf_host_exports();
    println!(
        "libnvperf_host exports (x) per release:\n{}",
        availability_table(NVPERF_HOST_FN_NAMES, exports)
    );
    let oldest = manifest()[0].release.as_str();
    let mut problems = Vec::new();
    for name in NVPERF_HOST_FN_NAMES {
        match first_release_exporting(name, exports) {
            Err(gap) => problems.push(gap),
            Ok(None) => problems.push(format!("{name}: exported by no pinned release")),
            // Every function of the nvperf table is in every pinned libnvperf_host.so.
            Ok(Some(first)) if first != oldest => {
                problems.push(format!("{name}: first exported by {first}"))
            }
            Ok(Some(_)) => {}
        }
    }
    assert!(
        problems.is_empty(),
        "libnvperf_host availability differs:\n{}",
        problems.join("\n")
    );
    for (r, e) in manifest().iter().zip(exports) {
        assert!(
            e.contains("NVPW_InitializeHost"),
            "{}: no NVPW_InitializeHost",
            r.release
        );
    }
}

// ---------------------------------------------------------------------------------
// 2. Record layouts vs the C compiler
// ---------------------------------------------------------------------------------

/// Size, alignment and field offsets of one record family, as Rust sees it.
struct RustLayout {
    family: &'static str,
    type_name: &'static str,
    size: usize,
    align: usize,
    fields: Vec<(&'static str, usize)>,
}

macro_rules! family {
    ($m:ident, $family:ident, [$($field:ident),* $(,)?]) => {{
        type T = cupti_sys::records::$m::layout::$family;
        RustLayout {
            family: stringify!($family),
            type_name: std::any::type_name::<T>(),
            size: std::mem::size_of::<T>(),
            align: std::mem::align_of::<T>(),
            fields: vec![$((stringify!($field), std::mem::offset_of!(T, $field))),*],
        }
    }};
}

/// Every decoded record family with the fields whose offsets are checked: those the
/// profiler reads, present in the record of every pinned release.
#[rustfmt::skip]
macro_rules! release_layouts {
    ($m:ident) => {
        vec![
            family!($m, API, [kind, cbid, start, end, processId, threadId, correlationId, returnValue]),
            family!($m, Context, [
                kind, contextId, deviceId, computeApiKind, nullStreamId, parentContextId, isGreenContext,
            ]),
            family!($m, Device, [
                kind, flags, globalMemoryBandwidth, globalMemorySize, l2CacheSize, coreClockRate,
                numMultiprocessors, maxThreadsPerBlock, computeCapabilityMajor, computeCapabilityMinor,
                id, uuid, name, isMigEnabled, gpuInstanceId, computeInstanceId, migUuid, numaId,
            ]),
            family!($m, ExternalCorrelation, [kind, externalKind, externalId, correlationId]),
            family!($m, GraphTrace, [
                kind, correlationId, start, end, deviceId, graphId, contextId, streamId, endDeviceId,
                endContextId,
            ]),
            family!($m, Kernel, [
                kind, cacheConfig, sharedMemoryConfig, registersPerThread, start, end, completed,
                deviceId, contextId, streamId, gridX, gridY, gridZ, blockX, blockY, blockZ,
                staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, correlationId, gridId,
                name, queued, submitted, launchType, sharedMemoryExecuted, graphNodeId, graphId,
                channelID, channelType, clusterX, clusterY, clusterZ, localMemoryTotal_v2,
                maxPotentialClusterSize, maxActiveClusters,
            ]),
            family!($m, Marker, [kind, flags, timestamp, id, objectKind, objectId, name, domain]),
            family!($m, MarkerData, [kind, flags, id, payloadKind, payload, color, category]),
            family!($m, Memcpy, [
                kind, copyKind, srcKind, dstKind, flags, bytes, start, end, deviceId, contextId,
                streamId, correlationId, runtimeCorrelationId, graphNodeId, graphId, channelID,
                channelType,
            ]),
            family!($m, MemcpyPtoP, [
                kind, copyKind, srcKind, dstKind, flags, bytes, start, end, deviceId, contextId,
                streamId, srcDeviceId, srcContextId, dstDeviceId, dstContextId, correlationId,
                graphNodeId, graphId,
            ]),
            family!($m, Memset, [
                kind, value, bytes, start, end, deviceId, contextId, streamId, correlationId, flags,
                memoryKind, graphNodeId, graphId, channelID, channelType,
            ]),
            family!($m, Name, [kind, objectKind, objectId, name]),
            family!($m, Overhead, [kind, overheadKind, objectKind, objectId, start, end, correlationId]),
            family!($m, Synchronization, [
                kind, type_, start, end, correlationId, contextId, streamId, cudaEventId,
            ]),
        ]
    };
}

fn rust_layouts(release: &str) -> Vec<RustLayout> {
    match release {
        "12.4" => release_layouts!(v12_4),
        "12.6" => release_layouts!(v12_6),
        "12.8" => release_layouts!(v12_8),
        "12.9" => release_layouts!(v12_9),
        "13.0" => release_layouts!(v13_0),
        "13.1" => release_layouts!(v13_1),
        "13.2" => release_layouts!(v13_2),
        "13.3" => release_layouts!(v13_3),
        "13.4" => release_layouts!(v13_4),
        "13.5" => release_layouts!(v13_5),
        other => panic!("release {other} has no entry in rust_layouts(): add `\"{other}\" => release_layouts!(...)`"),
    }
}

/// The C name of a field: bindgen appends `_` to names that are Rust keywords (`type`).
fn c_field(rust: &str) -> &str {
    rust.strip_suffix('_').unwrap_or(rust)
}

/// What the C compiler says about one release's headers.
#[derive(Debug, Default)]
struct CLayouts {
    api_version: u64,
    /// family -> (sizeof, _Alignof)
    sizes: BTreeMap<String, (usize, usize)>,
    /// (family, field) -> offsetof
    offsets: BTreeMap<(String, String), usize>,
}

fn c_program(release: &Release, layouts: &[RustLayout]) -> String {
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <cupti_activity.h>\n#include <cupti_version.h>\n\n\
         int main(void) {\n    printf(\"api %lu\\n\", (unsigned long)CUPTI_API_VERSION);\n",
    );
    for (family, struct_name, _) in release.records {
        let _ = writeln!(
            c,
            "    printf(\"size {family} %zu %zu\\n\", sizeof({struct_name}), (size_t)_Alignof({struct_name}));"
        );
        let layout = layouts.iter().find(|l| l.family == *family);
        for (field, _) in layout.map(|l| l.fields.as_slice()).unwrap_or_default() {
            let _ = writeln!(
                c,
                "    printf(\"offset {family} {field} %zu\\n\", offsetof({struct_name}, {}));",
                c_field(field)
            );
        }
    }
    c.push_str("    return 0;\n}\n");
    c
}

fn compile_and_run(r: &NvidiaRelease, source: &str) -> CLayouts {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nvidia-layouts");
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let stem = format!("layouts-{}", r.release.replace('.', "_"));
    let src = dir.join(format!("{stem}.c"));
    let exe = dir.join(stem);
    std::fs::write(&src, source).unwrap_or_else(|e| panic!("cannot write {}: {e}", src.display()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cmd = Command::new(&cc);
    for inc in &r.include_dirs {
        cmd.arg("-I").arg(inc);
    }
    let out = cmd
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cc}: {e}"));
    assert!(
        out.status.success(),
        "{cc} failed on {} for CUPTI {}:\n{}",
        src.display(),
        r.release,
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    assert!(
        out.status.success(),
        "{} failed: {:?}",
        exe.display(),
        out.status
    );
    let mut c = CLayouts::default();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let n = |s: &str| -> usize { s.parse().unwrap_or_else(|_| panic!("bad line {line:?}")) };
        match w.as_slice() {
            ["api", v] => c.api_version = v.parse().unwrap_or_else(|_| panic!("bad line {line:?}")),
            ["size", fam, size, align] => {
                c.sizes.insert(fam.to_string(), (n(size), n(align)));
            }
            ["offset", fam, field, off] => {
                c.offsets
                    .insert((fam.to_string(), field.to_string()), n(off));
            }
            _ => panic!("{}: unexpected output line {line:?}", exe.display()),
        }
    }
    c
}

/// Per manifest release (same order): the C compiler's answers, computed once.
fn c_layouts() -> &'static [CLayouts] {
    static LAYOUTS: OnceLock<Vec<CLayouts>> = OnceLock::new();
    LAYOUTS.get_or_init(|| {
        std::thread::scope(|s| {
            let jobs: Vec<_> = manifest()
                .iter()
                .map(|r| {
                    s.spawn(move || {
                        let source =
                            c_program(generated_release(&r.release), &rust_layouts(&r.release));
                        compile_and_run(r, &source)
                    })
                })
                .collect();
            jobs.into_iter()
                .map(|j| j.join().expect("compiling a layout probe panicked"))
                .collect()
        })
    })
}

#[test]
fn record_layouts_match_the_c_compiler() {
    let mut problems = Vec::new();
    let mut checked = 0usize;
    for (r, c) in manifest().iter().zip(c_layouts()) {
        let generated = generated_release(&r.release);
        let rust = rust_layouts(&r.release);
        let generated_families: BTreeSet<&str> =
            generated.records.iter().map(|(f, _, _)| *f).collect();
        let rust_families: BTreeSet<&str> = rust.iter().map(|l| l.family).collect();
        assert_eq!(
            generated_families, rust_families,
            "{}: the families of RELEASES.records and of release_layouts!() must be the same",
            r.release
        );
        let mut line = format!("{:>5}:", r.release);
        for (family, struct_name, size) in generated.records {
            let l = rust
                .iter()
                .find(|l| l.family == *family)
                .expect("checked above");
            // The `layout` alias is the struct RELEASES names.
            if !l
                .type_name
                .ends_with(&format!("::{}::{struct_name}", module_name(&r.release)))
            {
                problems.push(format!(
                    "{} {family}: layout::{family} is {}, RELEASES says {struct_name}",
                    r.release, l.type_name
                ));
            }
            let (c_size, c_align) = c
                .sizes
                .get(*family)
                .copied()
                .expect("printed for every family");
            if c_size != *size || c_size != l.size {
                problems.push(format!(
                    "{} {struct_name}: sizeof = {c_size} in C, RELEASES says {size}, size_of = {}",
                    r.release, l.size
                ));
            }
            if c_align != l.align {
                problems.push(format!(
                    "{} {struct_name}: _Alignof = {c_align} in C, align_of = {}",
                    r.release, l.align
                ));
            }
            for (field, rust_off) in &l.fields {
                let c_off = c.offsets[&(family.to_string(), field.to_string())];
                if c_off != *rust_off {
                    problems.push(format!(
                        "{} {struct_name}.{field}: offsetof = {c_off} in C, offset_of! = {rust_off}",
                        r.release
                    ));
                }
                checked += 1;
            }
            let _ = write!(line, " {struct_name}={c_size}");
        }
        println!("{line}");
    }
    assert!(
        problems.is_empty(),
        "record layouts differ from NVIDIA's headers:\n{}",
        problems.join("\n")
    );
    println!("{checked} field offsets compared");
}

fn module_name(release: &str) -> String {
    format!("v{}", release.replace('.', "_"))
}

/// `RELEASES[].api_version` is `CUPTI_API_VERSION` of that release's headers, which
/// `release_for_api_version` maps back to the same release.
#[test]
fn api_versions_match_cupti_version_h() {
    for (r, c) in manifest().iter().zip(c_layouts()) {
        let generated = generated_release(&r.release);
        assert_eq!(
            u64::from(generated.api_version),
            c.api_version,
            "{}: CUPTI_API_VERSION",
            r.release
        );
        let mapped = cupti::release_for_api_version(cupti::ApiVersion(generated.api_version));
        assert_eq!(
            mapped.map(|m| m.name),
            Some(r.release.as_str()),
            "release_for_api_version({})",
            c.api_version
        );
    }
}

// ---------------------------------------------------------------------------------
// Child processes: one real libcupti per process
// ---------------------------------------------------------------------------------

const CHILD_ENV: &str = "GPUPROF_TEST_CHILD";
const CHILD_MARK: &str = "gpuprof-test-child-result: ";

/// `(task, release)` when this process is a child started by [`run_child`].
fn child_task() -> Option<(String, String)> {
    let v = std::env::var(CHILD_ENV).ok()?;
    let (task, release) = v
        .split_once(':')
        .unwrap_or_else(|| panic!("{CHILD_ENV}={v:?} is not task:release"));
    Some((task.to_owned(), release.to_owned()))
}

fn child_report(value: serde_json::Value) {
    println!("{CHILD_MARK}{value}");
}

/// How a child ended.
#[derive(Debug)]
struct ChildOutcome {
    /// Its report, if it printed one and exited successfully.
    report: Option<serde_json::Value>,
    /// The signal that killed it, if one did.
    signal: Option<i32>,
    status: std::process::ExitStatus,
    stderr: String,
}

/// Re-runs this test binary's `test` (a test of this module, by its function's name)
/// with `GPUPROF_TEST_CHILD=task:release`, core dumps off (a child may crash inside
/// CUPTI).
fn run_child(test: &str, task: &str, release: &str) -> ChildOutcome {
    let exe = gpuprof_tests::running_binary();
    let exact = gpuprof_tests::harness_name(module_path!(), test);
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -c 0; exec \"$0\" \"$@\"")
        .arg(&exe)
        .args([exact.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{task}:{release}"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The harness prints "test <name> ... " before the test's own output on that line.
    let report = stdout
        .lines()
        .find_map(|l| l.split_once(CHILD_MARK).map(|(_, json)| json))
        .map(|json| {
            serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("child {task}:{release} printed bad JSON {json:?}: {e}"))
        });
    ChildOutcome {
        report: report.filter(|_| out.status.success()),
        signal: out.status.signal(),
        status: out.status,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn run_children(test: &str, task: &str, releases: &[&str]) -> Vec<ChildOutcome> {
    std::thread::scope(|s| {
        let jobs: Vec<_> = releases
            .iter()
            .map(|r| s.spawn(move || run_child(test, task, r)))
            .collect();
        jobs.into_iter()
            .map(|j| j.join().expect("child runner panicked"))
            .collect()
    })
}

/// In a child: loads the release's real libcupti (never unloaded) and its function table.
fn load_cupti_fns(release: &str) -> cupti_sys::CuptiFns {
    let r = manifest_release(release);
    // SAFETY: loading NVIDIA's libcupti runs its initialisers, which need no GPU.
    let lib = unsafe { libloading::Library::new(&r.libcupti) }.expect("load libcupti");
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    // SAFETY: `lib` is a real libcupti, whose functions have the prototypes of
    // NVIDIA's headers; it is never unloaded.
    unsafe { cupti_sys::CuptiFns::load(lib) }
}

/// Whether a CUDA driver (`libcuda.so.1`) can be loaded here. The offline
/// expectations below are for a machine without one.
fn driver_present() -> bool {
    cupti::driver_version(true).is_ok()
}

/// CUPTI 13.2.86 without a driver: its first API call fails to load libcuda.so.1 and
/// the error path recurses (cuptiGetVersion -> ... -> cuptiGetResultString -> ... ->
/// cuptiGetResultString ...) until the stack overflows. Rust's handler reports the
/// overflow of the thread's stack and aborts.
fn assert_stack_overflow_crash(what: &str, o: &ChildOutcome) {
    const SIGABRT: i32 = 6;
    assert_eq!(
        o.signal,
        Some(SIGABRT),
        "{what}: expected SIGABRT after a stack overflow, got {:?}\n{}",
        o.status,
        o.stderr
    );
    assert!(
        o.stderr.contains("has overflowed its stack"),
        "{what}: stderr:\n{}",
        o.stderr
    );
}

// ---------------------------------------------------------------------------------
// 3. cuptiGetVersion and cupti::Cupti::open on the real libraries
// ---------------------------------------------------------------------------------

impl ChildOutcome {
    fn expect_report(&self, what: &str) -> &serde_json::Value {
        self.report
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: child failed: {:?}\n{}", self.status, self.stderr))
    }
}

/// cuptiGetVersion called straight through `cupti_sys::CuptiFns`, in a process without
/// libcuda.so.1 (unless the machine has a driver, which CUPTI then loads itself).
#[test]
fn cupti_get_version_on_every_real_release() {
    if let Some((task, release)) = child_task() {
        assert_eq!(task, "get-version");
        let fns = load_cupti_fns(&release);
        let get_version = fns.cuptiGetVersion.expect("cuptiGetVersion");
        let mut v: u32 = 0;
        // SAFETY: cuptiGetVersion writes one uint32_t through the pointer it is given.
        let rc = unsafe { get_version(&mut v) };
        child_report(serde_json::json!({"rc": rc, "version": v}));
        return;
    }

    let driver = driver_present();
    let releases: Vec<&str> = manifest().iter().map(|r| r.release.as_str()).collect();
    let outcomes = run_children(
        "cupti_get_version_on_every_real_release",
        "get-version",
        &releases,
    );
    for (release, o) in releases.iter().zip(&outcomes) {
        let generated = generated_release(release);
        let what = format!("cuptiGetVersion(CUPTI {release})");
        let expect_version = || {
            let report = o.expect_report(&what);
            assert_eq!(
                report["rc"],
                cupti_sys::CUptiResult::CUPTI_SUCCESS,
                "{what}: {report}"
            );
            assert_eq!(
                report["version"], generated.api_version,
                "{what}: RELEASES api_version"
            );
            let v = report["version"]
                .as_u64()
                .and_then(|v| u32::try_from(v).ok())
                .expect("u32 version");
            let mapped = cupti::release_for_api_version(cupti::ApiVersion(v)).map(|r| r.name);
            assert_eq!(
                mapped,
                Some(*release),
                "{what}: release_for_api_version({v})"
            );
        };
        match major_minor(release) {
            // Up to 13.1, cuptiGetVersion needs no driver: it answers CUPTI_API_VERSION.
            mm if mm < (13, 2) => expect_version(),
            // With a driver, 13.2+ is expected to answer too (not verifiable offline).
            _ if driver => expect_version(),
            // From 13.2 on, every CUPTI API call (cuptiGetVersion included) first loads
            // libcuda.so.1 and resolves driver entry points (cuDeviceGet, ...); without a
            // driver it cannot answer.
            (13, 2) => assert_stack_overflow_crash(&what, o),
            // 13.3 on return CUPTI_ERROR_UNKNOWN, and leave the version unwritten.
            (13, 3..=5) => {
                let report = o.expect_report(&what);
                assert_eq!(report["rc"], cupti_sys::CUptiResult::CUPTI_ERROR_UNKNOWN, "{what}: {report}");
                assert_eq!(report["version"], 0, "{what}: {report}");
            }
            _ => panic!("{what}: no driverless behaviour recorded for CUPTI {release}: measure it and add it here"),
        }
    }
}

/// `cupti::Cupti::open` on each real library, the child loading the driver first when
/// the machine has one (as a CUDA application would have).
#[test]
fn cupti_open_on_every_real_release() {
    if let Some((task, release)) = child_task() {
        assert_eq!(task, "open");
        let r = manifest_release(&release);
        let driver = cupti::driver_version(true).is_ok();
        let report = match cupti::Cupti::open(r.libcupti.as_os_str(), None) {
            Ok(c) => serde_json::json!({
                "driver": driver, "ok": true, "api_version": c.api_version().0, "release": c.release().name,
            }),
            Err(e) => serde_json::json!({"driver": driver, "ok": false, "error": e}),
        };
        child_report(report);
        return;
    }

    let driver = driver_present();
    let releases: Vec<&str> = manifest().iter().map(|r| r.release.as_str()).collect();
    let outcomes = run_children("cupti_open_on_every_real_release", "open", &releases);
    for (release, o) in releases.iter().zip(&outcomes) {
        let what = format!("Cupti::open(CUPTI {release})");
        let report = o.expect_report(&what);
        assert_eq!(
            report["driver"], driver,
            "{what}: the child sees the driver as this process does"
        );
        if driver {
            // Not verifiable offline: with the driver loaded every release must open.
            assert_eq!(report["ok"], true, "{what}: {report}");
            assert_eq!(
                report["api_version"],
                generated_release(release).api_version,
                "{what}: api_version()"
            );
            assert_eq!(report["release"], *release, "{what}: release().name");
        } else {
            // Without libcuda.so.1 in the process, Cupti::open does not call cuptiGetVersion
            // at all (see cupti_get_version_on_every_real_release for why), whatever the
            // release: 12.x would answer, but it cannot know the release before asking.
            assert_eq!(report["ok"], false, "{what}: {report}");
            let error = report["error"].as_str().expect("error string");
            assert!(
                error.contains("no CUDA driver (libcuda.so.1) is loaded"),
                "{what}: {error}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------
// 4. cuptiActivityGetStructSize on the real libraries
// ---------------------------------------------------------------------------------

/// Activity kinds asked about, with the record family whose layout they use.
const STRUCT_SIZE_KINDS: &[(&str, cupti_sys::CUpti_ActivityKind::Type, &str)] = {
    use cupti_sys::CUpti_ActivityKind::*;
    &[
        (
            "CONCURRENT_KERNEL",
            CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
            "Kernel",
        ),
        ("MEMCPY", CUPTI_ACTIVITY_KIND_MEMCPY, "Memcpy"),
        ("MEMSET", CUPTI_ACTIVITY_KIND_MEMSET, "Memset"),
        ("MARKER", CUPTI_ACTIVITY_KIND_MARKER, "Marker"),
        ("MARKER_DATA", CUPTI_ACTIVITY_KIND_MARKER_DATA, "MarkerData"),
        ("OVERHEAD", CUPTI_ACTIVITY_KIND_OVERHEAD, "Overhead"),
        ("DEVICE", CUPTI_ACTIVITY_KIND_DEVICE, "Device"),
        ("CONTEXT", CUPTI_ACTIVITY_KIND_CONTEXT, "Context"),
    ]
};

/// Written into the size before each call, to see whether CUPTI wrote it.
const SIZE_SENTINEL: u64 = u64::MAX;

#[test]
fn activity_get_struct_size_on_real_libraries() {
    if let Some((task, release)) = child_task() {
        assert_eq!(task, "struct-size");
        let fns = load_cupti_fns(&release);
        let get_struct_size = fns
            .cuptiActivityGetStructSize
            .expect("cuptiActivityGetStructSize");
        let mut calls = Vec::new();
        for (name, kind, _) in STRUCT_SIZE_KINDS {
            let mut size = SIZE_SENTINEL as usize;
            // SAFETY: cuptiActivityGetStructSize(kind, version, size_t *size) writes at
            // most one size_t through the pointer; version 0 means the current layout.
            let rc = unsafe { get_struct_size(*kind, 0, &mut size) };
            calls.push(serde_json::json!({"kind": name, "rc": rc, "size": size as u64}));
        }
        child_report(serde_json::json!({ "calls": calls }));
        return;
    }

    let driver = driver_present();
    // The releases whose library exports it: 13.2 on (libcupti_known_first_releases).
    let releases: Vec<&str> = manifest()
        .iter()
        .zip(cupti_exports())
        .filter(|(_, e)| e.contains("cuptiActivityGetStructSize"))
        .map(|(r, _)| r.release.as_str())
        .collect();
    assert!(releases.len() >= 4 && releases[0] == "13.2", "{releases:?}");
    let outcomes = run_children(
        "activity_get_struct_size_on_real_libraries",
        "struct-size",
        &releases,
    );
    for (release, o) in releases.iter().zip(&outcomes) {
        let what = format!("cuptiActivityGetStructSize(CUPTI {release})");
        let generated = generated_release(release);
        let calls = || -> Vec<(String, u64, u64)> {
            let calls = o.expect_report(&what)["calls"].as_array().expect("calls");
            assert_eq!(calls.len(), STRUCT_SIZE_KINDS.len());
            calls
                .iter()
                .map(|c| {
                    (
                        c["kind"].as_str().unwrap().to_owned(),
                        c["rc"].as_u64().unwrap(),
                        c["size"].as_u64().unwrap(),
                    )
                })
                .collect()
        };
        if driver {
            // With a driver the library is expected to answer its own record sizes, and
            // they must be ours (not verifiable offline).
            for ((kind, rc, size), (_, _, family)) in calls().into_iter().zip(STRUCT_SIZE_KINDS) {
                let (_, struct_name, ours) = generated
                    .records
                    .iter()
                    .find(|(f, _, _)| f == family)
                    .expect("family");
                assert_eq!(
                    rc,
                    u64::from(cupti_sys::CUptiResult::CUPTI_SUCCESS),
                    "{what} {kind}"
                );
                assert_eq!(
                    size, *ours as u64,
                    "{what} {kind}: size_of::<{struct_name}>()"
                );
            }
            continue;
        }
        // Without a driver it cannot answer: like every CUPTI 13.2+ API call, it first
        // loads libcuda.so.1. 13.2 overflows its stack (see assert_stack_overflow_crash);
        // 13.3 on return CUPTI_ERROR_UNKNOWN and leave the size untouched. The sizes are
        // compared with the C compiler's instead, by record_layouts_match_the_c_compiler.
        match major_minor(release) {
            (13, 2) => assert_stack_overflow_crash(&what, o),
            (13, 3..=5) => {
                for (kind, rc, size) in calls() {
                    assert_eq!(rc, u64::from(cupti_sys::CUptiResult::CUPTI_ERROR_UNKNOWN), "{what} {kind}");
                    assert_eq!(size, SIZE_SENTINEL, "{what} {kind}: size written on error");
                }
            }
            _ => panic!("{what}: no driverless behaviour recorded for CUPTI {release}: measure it and add it here"),
        }
    }
}

// ---------------------------------------------------------------------------------
// 5. cuBLAS / cuBLASLt: the hooked functions exist under the declared names
// ---------------------------------------------------------------------------------

/// The names `cupti_sys::cublas_hooked!` declares, in hook order.
macro_rules! hooked_names {
    ($( fn $name:ident ( $($a:ident : $t:ty),* $(,)? ) -> $ret:ty; )*) => {
        &[$(stringify!($name)),*]
    };
}

/// The GEMM hooks patch GOT slots by name and hand their hook out for `dlsym` of the
/// name: a name the real library does not export would never be caught. Every hooked
/// function, and the getters the hooks call, must be exported by NVIDIA's 12.9
/// `libcublas.so.12` (cuBLAS) or `libcublasLt.so.12` (cuBLASLt).
#[test]
fn real_cublas_exports_every_hooked_and_called_function() {
    let lib = nvidia_extra("cublas_lib");
    let cublas = exported_functions(&lib.join("libcublas.so.12"));
    let cublas_lt = exported_functions(&lib.join("libcublasLt.so.12"));
    let hooked: &[&str] = cupti_sys::cublas_hooked!(hooked_names);
    assert_eq!(hooked.len(), 39);
    assert_eq!(hooked.last(), Some(&"cublasLtMatmul"));
    let called = [
        "cublasGetMathMode",
        "cublasLtMatmulDescGetAttribute",
        "cublasLtMatrixLayoutGetAttribute",
    ];
    let mut missing = Vec::new();
    for name in hooked.iter().chain(&called) {
        let exports = if name.starts_with("cublasLt") {
            &cublas_lt
        } else {
            &cublas
        };
        if !exports.contains(*name) {
            missing.push(*name);
        }
    }
    assert_eq!(
        missing,
        Vec::<&str>::new(),
        "not exported by NVIDIA's cuBLAS 12.9"
    );
}
