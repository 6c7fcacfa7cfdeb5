//! `cupti::metrics` and `gpuprof metrics` against NVIDIA's REAL host-side metrics
//! library (`libnvperf_host.so` of the pinned CUPTI 13.4 wheel), offline: no GPU, no
//! driver. Exact pass counts, as the library computes them.

use std::collections::BTreeSet;
use std::path::Path;

use cupti::metrics::{default_groups, Host, MetricError, DEFAULT_SETS};

const DRAM_READ: &str = "dram__bytes_read.sum";
const DRAM_WRITE: &str = "dram__bytes_write.sum";
const BF16: &str = "sm__ops_path_tensor_src_bf16_dst_fp32.sum";
const TENSOR_ACTIVE: &str = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
const SM_CYCLES: &str = "sm__cycles_active.avg";
const FFMA: &str = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
const FADD: &str = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
const FMUL: &str = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
const SM_THROUGHPUT: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
const L2_HIT_RATE: &str = "lts__t_sector_hit_rate.pct";

const CHIPS: [&str; 4] = ["GH100", "GA100", "AD102", "GB100"];

fn host() -> Host {
    let lib = &gpuprof_tests::manifest_release("13.4").libnvperf_host;
    Host::open(lib).unwrap_or_else(|e| panic!("{e}"))
}

fn passes(chip: &str, metrics: &[&str]) -> usize {
    host()
        .num_passes(chip, metrics)
        .unwrap_or_else(|e| panic!("{chip} {metrics:?}: {e}"))
}

#[test]
fn the_library_knows_the_chips_by_these_names() {
    let chips = host().supported_chips().unwrap();
    for c in CHIPS.iter().chain(["GB202"].iter()) {
        assert!(chips.iter().any(|k| k == c), "{c} not in {chips:?}");
    }
    for set in DEFAULT_SETS {
        for c in set.chips {
            assert!(chips.iter().any(|k| k == c), "default set chip {c} unknown");
        }
    }
}

/// The team's measurements on GH100, reproduced through the NVPW host API.
#[test]
fn measured_pass_counts_on_gh100() {
    let base = [DRAM_READ, DRAM_WRITE, BF16];
    assert_eq!(passes("GH100", &base), 1);
    let plus_ratio = [DRAM_READ, DRAM_WRITE, BF16, TENSOR_ACTIVE];
    assert_eq!(passes("GH100", &plus_ratio), 2);
    let six = [DRAM_READ, DRAM_WRITE, BF16, TENSOR_ACTIVE, SM_CYCLES, FFMA];
    assert_eq!(passes("GH100", &six), 3);
    assert_eq!(passes("GH100", &[SM_THROUGHPUT]), 8);
    assert_eq!(passes("GH100", &[L2_HIT_RATE]), 2);
}

/// The same sets on the other chips: 1, 2, 3 and 2 passes everywhere; the SM
/// throughput breakdown differs by architecture.
#[test]
fn measured_pass_counts_on_other_chips() {
    let six = [DRAM_READ, DRAM_WRITE, BF16, TENSOR_ACTIVE, SM_CYCLES, FFMA];
    for (chip, throughput) in [("GA100", 5), ("AD102", 6), ("GB100", 8)] {
        assert_eq!(passes(chip, &six[..3]), 1, "{chip}");
        assert_eq!(passes(chip, &six[..4]), 2, "{chip}");
        assert_eq!(passes(chip, &six), 3, "{chip}");
        assert_eq!(passes(chip, &[SM_THROUGHPUT]), throughput, "{chip}");
        assert_eq!(passes(chip, &[L2_HIT_RATE]), 2, "{chip}");
    }
}

#[test]
fn raw_dependencies_are_the_library_s() {
    let h = host();
    assert_eq!(h.raw_dependencies("GH100", DRAM_READ).unwrap().len(), 1);
    assert_eq!(h.raw_dependencies("GH100", BF16).unwrap().len(), 6);
    assert_eq!(h.raw_dependencies("GA100", BF16).unwrap().len(), 4);
    assert_eq!(h.raw_dependencies("GH100", L2_HIT_RATE).unwrap().len(), 2);
    assert_eq!(
        h.raw_dependencies("GH100", SM_THROUGHPUT).unwrap().len(),
        49
    );
    // GH100's FP16 tensor ops are the HGMMA and HMMA parts: the same raw counters.
    let whole: BTreeSet<String> = h
        .raw_dependencies("GH100", "sm__ops_path_tensor_src_fp16.sum")
        .unwrap()
        .into_iter()
        .collect();
    let parts: BTreeSet<String> = h
        .raw_counters(
            "GH100",
            &[
                "sm__ops_path_tensor_op_hgmma_src_fp16.sum",
                "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum",
                "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16.sum",
            ],
        )
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(whole, parts);
    assert_eq!(passes("GH100", &["sm__ops_path_tensor_src_fp16.sum"]), 2);
}

/// A typical AI/MFU set of 8 metrics needs 3 passes on every chip, and the planner
/// splits it into exactly 3 single-pass groups.
#[test]
fn eight_metric_set_splits_into_as_many_groups_as_passes() {
    let eight = [
        DRAM_READ,
        DRAM_WRITE,
        BF16,
        TENSOR_ACTIVE,
        SM_CYCLES,
        FFMA,
        FADD,
        FMUL,
    ];
    let h = host();
    for chip in CHIPS {
        assert_eq!(passes(chip, &eight), 3, "{chip}");
        let groups = h.split_into_groups(chip, &eight).unwrap();
        assert_eq!(
            groups,
            vec![
                vec![DRAM_READ, DRAM_WRITE, BF16, SM_CYCLES],
                vec![TENSOR_ACTIVE],
                vec![FFMA, FADD, FMUL],
            ],
            "{chip}"
        );
        for g in &groups {
            let g: Vec<&str> = g.iter().map(String::as_str).collect();
            assert_eq!(passes(chip, &g), 1, "{chip} {g:?}");
        }
    }
}

#[test]
fn a_metric_that_needs_several_passes_gets_its_own_group() {
    let plan = host()
        .plan(
            "GH100",
            &[SM_THROUGHPUT, DRAM_READ, L2_HIT_RATE, DRAM_WRITE],
        )
        .unwrap();
    let summary: Vec<(Vec<&str>, usize)> = plan
        .iter()
        .map(|g| (g.metrics.iter().map(String::as_str).collect(), g.passes))
        .collect();
    assert_eq!(
        summary,
        vec![
            (vec![SM_THROUGHPUT], 8),
            (vec![DRAM_READ, DRAM_WRITE], 1),
            (vec![L2_HIT_RATE], 2),
        ]
    );
    assert_eq!(plan[1].raw_counters.len(), 2);
}

#[test]
fn every_default_group_is_one_pass_on_its_chip() {
    let h = host();
    for chip in CHIPS {
        let groups = default_groups(chip).unwrap_or_else(|| panic!("no default set for {chip}"));
        for (i, g) in groups.iter().enumerate() {
            assert_eq!(passes(chip, g), 1, "{chip} group {i}: {g:?}");
        }
        // Group 0 holds what arithmetic intensity and MFU need.
        for m in [DRAM_READ, DRAM_WRITE, BF16] {
            assert!(groups[0].contains(&m), "{chip} group 0 lacks {m}");
        }
        // The table is what the planner makes of its own concatenation.
        let flat: Vec<&str> = groups.iter().flat_map(|g| g.iter().copied()).collect();
        let replanned = h.split_into_groups(chip, &flat).unwrap();
        let table: Vec<Vec<String>> = groups
            .iter()
            .map(|g| g.iter().map(|m| m.to_string()).collect())
            .collect();
        assert_eq!(replanned, table, "{chip}");
        // No metric twice.
        let distinct: BTreeSet<&str> = flat.iter().copied().collect();
        assert_eq!(distinct.len(), flat.len(), "{chip}");
    }
    let counts: Vec<(&str, usize)> = CHIPS
        .iter()
        .map(|c| (*c, default_groups(c).unwrap().len()))
        .collect();
    assert_eq!(
        counts,
        [("GH100", 5), ("GA100", 6), ("AD102", 6), ("GB100", 7)]
    );
}

#[test]
fn unknown_metric_and_chip_are_named() {
    let h = host();
    let e = h
        .raw_dependencies("GH100", "dram__bytes_red.sum")
        .unwrap_err();
    assert_eq!(
        e,
        MetricError::UnknownMetric {
            chip: "GH100".into(),
            metric: "dram__bytes_red.sum".into()
        }
    );
    assert_eq!(
        e.to_string(),
        "unknown metric \"dram__bytes_red.sum\" on chip GH100"
    );
    // FP8 tensor ops do not exist on Ampere.
    let e = h
        .split_into_groups("GA100", &[DRAM_READ, "sm__ops_path_tensor_src_fp8.sum"])
        .unwrap_err();
    assert!(
        matches!(e, MetricError::UnknownMetric { ref metric, .. } if metric == "sm__ops_path_tensor_src_fp8.sum")
    );
    let e = h.num_passes("GZ999", &[DRAM_READ]).unwrap_err();
    match &e {
        MetricError::UnknownChip { chip, supported } => {
            assert_eq!(chip, "GZ999");
            assert!(supported.iter().any(|c| c == "GH100"));
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("GH100"), "{e}");
}

#[test]
fn open_names_the_missing_library() {
    let e = Host::open(Path::new("/nonexistent/libnvperf_host.so")).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("cannot load /nonexistent/libnvperf_host.so: "),
        "{text}"
    );
}

/// Every counter name the simulated cost model produces resolves on one of the chips
/// it prices (GA100, AD102, GH100, GB100); the model covers each chip's whole default
/// set (so the default plan works on every simulated chip); the names GH100 knows are
/// one pass each and need as many passes together as its set has groups.
#[test]
fn sim_cost_model_counters_resolve_on_its_chips() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sim/core/models/default.toml");
    sim_core::CostModel::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&path).unwrap();
    let names = counter_names(&text);
    assert!(names.len() >= 9, "{names:?}");
    let h = host();
    let chips = ["GA100", "AD102", "GH100", "GB100"];
    let known_on = |chip: &str| -> Vec<&str> {
        names
            .iter()
            .map(String::as_str)
            .filter(|n| h.raw_dependencies(chip, n).is_ok())
            .collect()
    };
    let unresolved: Vec<&String> = names
        .iter()
        .filter(|n| chips.iter().all(|c| h.raw_dependencies(c, n).is_err()))
        .collect();
    assert!(
        unresolved.is_empty(),
        "unknown on every chip: {unresolved:?}"
    );
    for chip in chips {
        let missing: Vec<&&str> = default_groups(chip)
            .expect("a default set")
            .iter()
            .flat_map(|g| g.iter())
            .filter(|m| !names.contains(**m))
            .collect();
        assert!(
            missing.is_empty(),
            "default {chip} metrics the model lacks: {missing:?}"
        );
    }
    let gh100 = known_on("GH100");
    for n in &gh100 {
        assert_eq!(passes("GH100", &[n]), 1, "{n}");
    }
    assert_eq!(
        passes("GH100", &gh100),
        default_groups("GH100").unwrap().len(),
        "{gh100:?}"
    );
}

/// Keys of every `[*.counters]` table of the cost model (TOML keys are quoted there).
fn counter_names(toml: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_counters = false;
    for line in toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_counters = line
                .trim_matches(|c| c == '[' || c == ']')
                .ends_with(".counters");
            continue;
        }
        if !in_counters || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let key = line.split('=').next().unwrap().trim().trim_matches('"');
        out.insert(key.to_string());
    }
    out
}

#[test]
fn cli_json_for_gh100() {
    let lib = &gpuprof_tests::manifest_release("13.4").libnvperf_host;
    let out = gpuprof_tests::gpuprof_command()
        .args(["metrics", "--chip", "GH100", "--format", "json"])
        .env("GPUPROF_NVPERF_HOST_LIB", lib)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["chip"], "GH100");
    assert_eq!(v["architecture"], "Hopper");
    assert_eq!(v["source"], "default");
    assert_eq!(v["library"], lib.display().to_string());
    let groups = v["groups"].as_array().unwrap();
    let expected = default_groups("GH100").unwrap();
    assert_eq!(groups.len(), expected.len());
    for (i, (g, e)) in groups.iter().zip(expected).enumerate() {
        assert_eq!(g["index"], i);
        assert_eq!(g["passes"], 1);
        let metrics: Vec<&str> = g["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert_eq!(&metrics, e);
    }
    let raw: Vec<u64> = groups
        .iter()
        .map(|g| g["raw_counters"].as_u64().unwrap())
        .collect();
    assert_eq!(raw, [20, 5, 6, 6, 9]);
    assert_eq!(v["total_passes"], 5);
}

#[test]
fn cli_user_metrics_and_errors() {
    let lib = &gpuprof_tests::manifest_release("13.4").libnvperf_host;
    let run = |args: &[&str], env: Option<&str>| {
        let mut cmd = gpuprof_tests::gpuprof_command();
        cmd.arg("metrics")
            .args(args)
            .env("GPUPROF_NVPERF_HOST_LIB", lib);
        if let Some(m) = env {
            cmd.env("GPUPROF_METRICS", m);
        }
        cmd.output().unwrap()
    };
    let list = format!("{DRAM_READ},{DRAM_WRITE},{BF16},{TENSOR_ACTIVE},{SM_CYCLES},{FFMA}");
    for out in [
        run(
            &["--chip", "GH100", "--metrics", &list, "--format", "json"],
            None,
        ),
        run(&["--chip", "GH100", "--format", "json"], Some(&list)),
    ] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["source"], "user");
        let groups: Vec<Vec<String>> = v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| serde_json::from_value(g["metrics"].clone()).unwrap())
            .collect();
        assert_eq!(
            groups,
            vec![
                vec![DRAM_READ, DRAM_WRITE, BF16, SM_CYCLES],
                vec![TENSOR_ACTIVE],
                vec![FFMA]
            ]
        );
        assert_eq!(v["total_passes"], 3);
    }

    let out = run(
        &[
            "--chip",
            "GH100",
            "--metrics",
            "dram__bytes_read.sum,bogus__x.sum",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "gpuprof: error: unknown metric \"bogus__x.sum\" on chip GH100\n"
    );

    let out = run(&["--chip", "GZ999"], None);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("gpuprof: error: unknown chip \"GZ999\"; supported chips: TU102, "),
        "{err}"
    );
    assert!(err.contains(", GH100, "), "{err}");

    let out = run(&["--list-chips"], None);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l == "GH100  (default metric set: Hopper)"),
        "{text}"
    );
    assert!(text.lines().any(|l| l == "GB202"), "{text}");

    let out = run(&["--chip", "GH100"], None);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.ends_with(
            "5 groups, 5 passes in total; launches of the same kernel rotate through the groups\n"
        ),
        "{text}"
    );
}

/// `GPUPROF_METRICS=dcgm` with PM sampling: the metrics behind `record --serve`'s
/// DCGM fields are one pass on every chip, and the NVLink ones are left out exactly
/// where the library does not know them (AD102). (The range profiler's set leaves
/// out PCIe and NVLink: `cupti/profiler_host_real.rs` checks CUPTI's refusal.)
#[test]
fn the_dcgm_preset_is_one_pass_and_has_nvlink_where_the_chip_does() {
    let h = host();
    for chip in CHIPS {
        let set = cupti::metrics::preset("dcgm", chip, true).expect("dcgm is a preset");
        let names: Vec<&str> = set.iter().map(String::as_str).collect();
        assert_eq!(passes(chip, &names), 1, "{chip}: {names:?}");
        for f in cupti::metrics::DCGM_FIELDS {
            let known = h.raw_dependencies(chip, f.metric).is_ok();
            assert_eq!(names.contains(&f.metric), known, "{chip}: {}", f.metric);
        }
    }
    assert!(!cupti::metrics::preset("dcgm", "AD102", true)
        .unwrap()
        .iter()
        .any(|m| m.starts_with("nvl")));
}
