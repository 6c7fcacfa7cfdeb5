//! Unit tests of the cost model and of the built-in default model.

use super::*;

fn model(text: &str) -> CostModel {
    CostModel::from_toml_str(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn load_err(text: &str) -> String {
    CostModel::from_toml_str(text, "test.toml")
        .unwrap_err()
        .to_string()
}

fn launch(name: &str, grid: [u32; 3], block: [u32; 3]) -> Launch {
    Launch {
        name: name.to_owned(),
        grid,
        block,
        ..Launch::default()
    }
}

fn gemm_launch(name: &str, m: u64, n: u64, k: u64, batch: u64) -> Launch {
    Launch {
        gemm: Some(GemmShape {
            m,
            n,
            k,
            batch,
            elem_bytes: 2,
        }),
        ..launch(name, [32, 32, 1], [384, 1, 1])
    }
}

fn counters(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|&(k, v)| (k.to_owned(), v)).collect()
}

// ---- glob ---------------------------------------------------------------------------------

#[test]
fn glob_edge_cases() {
    // Empty pattern matches only the empty name; `*` matches everything including "".
    assert!(glob_match("", ""));
    assert!(!glob_match("", "a"));
    assert!(glob_match("*", ""));
    assert!(glob_match("*", "anything at all"));
    assert!(glob_match("**", ""));
    assert!(glob_match("***a**", "a"));
    // `?` is exactly one character, never zero.
    assert!(glob_match("?", "a"));
    assert!(!glob_match("?", ""));
    assert!(!glob_match("?", "ab"));
    assert!(glob_match("a??", "abc"));
    assert!(!glob_match("a??", "ab"));
    assert!(glob_match("?*", "a"));
    assert!(!glob_match("?*", ""));
    // ...and one character, not one byte.
    assert!(glob_match("?", "é"));
    assert!(glob_match("a?c", "aµc"));
    // Whole-name match.
    assert!(glob_match("gemm", "gemm"));
    assert!(!glob_match("gemm", "sgemm"));
    assert!(!glob_match("gemm", "gemm_kernel"));
    assert!(glob_match("a*b", "ab"));
    assert!(glob_match("a*b", "axxb"));
    assert!(!glob_match("a*b", "axxbc"));
    assert!(glob_match(
        "*gemm*",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"
    ));
    assert!(glob_match("*gemm*", "gemm"));
    assert!(!glob_match("*gemm*", "gemv2T_kernel_val"));
    // Backtracking: the first `b` is not the right one.
    assert!(glob_match("a*b*c", "abxbxc"));
    assert!(glob_match("*ab", "aab"));
    assert!(glob_match("*aab", "aaab"));
    assert!(!glob_match("*a*b", "bbba"));
    assert!(glob_match("*x*y*z*", "__x__y__z__"));
    assert!(!glob_match("*x*y*z*", "__z__y__x__"));
    // Case-sensitive; other glob syntax is literal.
    assert!(!glob_match("*GEMM*", "sgemm"));
    assert!(glob_match("[ab]", "[ab]"));
    assert!(!glob_match("[ab]", "a"));
    assert!(glob_match("f<int, 4>(*)", "f<int, 4>(float*, int)"));
}

// ---- loading: valid models ----------------------------------------------------------------

#[test]
fn first_match_wins() {
    let m = model(
        r#"
        [[kernel]]
        name = "*gemm*"
        duration_ns = "111"
        [[kernel]]
        name = "sgemm_*"
        duration_ns = "222"
        [[kernel]]
        name = "*"
        duration_ns = "333"
        "#,
    );
    assert_eq!(m.rule_count(), 3);
    assert_eq!(m.rule_pattern(1), Some("sgemm_*"));
    assert_eq!(m.rule_pattern(3), None);
    let c = m.cost(&launch("sgemm_128x64", [1; 3], [1; 3])).unwrap();
    assert_eq!((c.duration_ns, c.rule), (111, 0));
    let c = m.cost(&launch("relu", [1; 3], [1; 3])).unwrap();
    assert_eq!((c.duration_ns, c.rule), (333, 2));
    assert_eq!(m.matching_rule("xgemmx"), Some(0));
    assert_eq!(m.origin(), "test.toml");
}

#[test]
fn defaults_fill_in_and_rules_override() {
    let m = model(
        r#"
        [defaults]
        duration_ns = "1000 + blocks"
        [defaults.counters]
        "a" = "duration_ns * 2"
        "b" = "7"

        [[kernel]]
        name = "own_*"
        duration_ns = "50"
        [kernel.counters]
        "b" = "threads"
        "c" = "-1"

        [[kernel]]
        name = "*"
        "#,
    );
    // A rule with its own duration and an overriding counter.
    let c = m.cost(&launch("own_x", [2, 1, 1], [3, 4, 1])).unwrap();
    assert_eq!(c.duration_ns, 50);
    assert_eq!(
        c.counters,
        counters(&[("a", 100.0), ("b", 12.0), ("c", -1.0)])
    );
    // A rule with neither: both come from [defaults].
    let c = m.cost(&launch("other", [2, 3, 4], [1, 1, 1])).unwrap();
    assert_eq!(c.duration_ns, 1024);
    assert_eq!(c.counters, counters(&[("a", 2048.0), ("b", 7.0)]));
    assert_eq!(c.rule, 1);
}

#[test]
fn numbers_and_inline_tables_are_accepted() {
    let m = model(
        r#"
        kernel = [
            { name = "int", duration_ns = 1500, counters = { x = 2.5, y = -3 } },
            { name = "float", duration_ns = 1e3 },
        ]
        "#,
    );
    let c = m.cost(&launch("int", [1; 3], [1; 3])).unwrap();
    assert_eq!(c.duration_ns, 1500);
    assert_eq!(c.counters, counters(&[("x", 2.5), ("y", -3.0)]));
    assert_eq!(
        m.cost(&launch("float", [1; 3], [1; 3]))
            .unwrap()
            .duration_ns,
        1000
    );
}

#[test]
fn launch_variables() {
    let m = model(
        r#"
        [[kernel]]
        name = "*"
        duration_ns = "1"
        [kernel.counters]
        grid = "grid_x * 10000 + grid_y * 100 + grid_z"
        block = "block_x * 10000 + block_y * 100 + block_z"
        blocks = "blocks"
        threads = "threads"
        shared_mem = "shared_mem"
        registers = "registers"
        gemm = "m * 1e8 + n * 1e6 + k * 1e4 + batch * 100 + elem_bytes"
        "#,
    );
    let l = Launch {
        shared_mem: 49152,
        registers: 168,
        gemm: Some(GemmShape {
            m: 5,
            n: 6,
            k: 7,
            batch: 8,
            elem_bytes: 2,
        }),
        ..launch("k", [4, 3, 2], [32, 4, 2])
    };
    assert_eq!(
        m.cost(&l).unwrap().counters,
        counters(&[
            ("grid", 40302.0),
            ("block", 320402.0),
            ("blocks", 24.0),
            ("threads", 256.0),
            ("shared_mem", 49152.0),
            ("registers", 168.0),
            ("gemm", 506070802.0),
        ])
    );
    // Products are taken in 64 bits: 65535^3 blocks does not wrap.
    let big = launch("k", [65535, 65535, 65535], [1024, 1, 1]);
    assert_eq!(m.cost(&big).unwrap().counters["blocks"], 281462092005375.0);
}

#[test]
fn non_gemm_launch_has_zero_gemm_variables() {
    let m = model(
        r#"
        [[kernel]]
        name = "*"
        duration_ns = "100 + m + n + k + batch + elem_bytes"
        [kernel.counters]
        "flops" = "2*m*n*k*batch"
        "bytes" = "elem_bytes"
        "#,
    );
    let c = m
        .cost(&launch("sgemm_but_not_from_cublas", [8, 1, 1], [128, 1, 1]))
        .unwrap();
    assert_eq!(c.duration_ns, 100);
    assert_eq!(c.counters, counters(&[("bytes", 0.0), ("flops", 0.0)]));
}

#[test]
fn duration_rounds_to_nearest() {
    let m = model(
        r#"
        [[kernel]]
        name = "*"
        duration_ns = "blocks / 4"
        [kernel.counters]
        d = "duration_ns"
        "#,
    );
    let d = |blocks| {
        let c = m.cost(&launch("k", [blocks, 1, 1], [1, 1, 1])).unwrap();
        assert_eq!(c.counters["d"], c.duration_ns as f64);
        c.duration_ns
    };
    assert_eq!(d(4), 1);
    assert_eq!(d(5), 1); // 1.25
    assert_eq!(d(6), 2); // 1.5, half away from zero
    assert_eq!(d(7), 2); // 1.75
    assert_eq!(d(4_000_000_001), 1_000_000_000); // 1e9 + 0.25
}

#[test]
fn load_reads_a_file_and_names_it_in_errors() {
    let dir = std::env::temp_dir().join(format!("sim-core-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.toml");
    std::fs::write(&path, "[[kernel]]\nname = \"*\"\nduration_ns = \"42\"\n").unwrap();
    let m = CostModel::load(&path).unwrap();
    assert_eq!(m.origin(), path.display().to_string());
    assert_eq!(
        m.cost(&launch("k", [1; 3], [1; 3])).unwrap().duration_ns,
        42
    );

    std::fs::write(&path, "[[kernel]]\nname = \"*\"\nduration_ns = \"nope\"\n").unwrap();
    let e = CostModel::load(&path).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}: kernel rule 0", path.display())),
        "{e}"
    );

    let missing = dir.join("missing.toml");
    let e = CostModel::load(&missing).unwrap_err();
    assert!(matches!(&e, ModelError::Io { path, .. } if *path == missing));
    assert!(e
        .to_string()
        .starts_with(&format!("cannot read cost model {}: ", missing.display())));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- loading: errors ----------------------------------------------------------------------

#[test]
fn unknown_variable_is_rejected_at_load() {
    assert_eq!(
        load_err(
            r#"
            [[kernel]]
            name = "*"
            duration_ns = "1"
            [[kernel]]
            name = "*gemm*"
            duration_ns = "max(2*m*n*kk, 2000)"
            "#
        ),
        "test.toml: kernel rule 1 (name = \"*gemm*\"): duration_ns: unknown variable `kk` \
         at column 11 of `max(2*m*n*kk, 2000)`; available variables: grid_x, grid_y, grid_z, \
         block_x, block_y, block_z, blocks, threads, shared_mem, registers, m, n, k, batch, \
         elem_bytes, sm_count, clock_ghz, warps_per_sm, blocks_per_sm, shared_per_sm, \
         dram_rate, dram_per_pct, tensor_per_pct, mma_rate, wgmma_rate, flash_rate, \
         ffma_rate, sgemm_rate"
    );
}

#[test]
fn duration_ns_is_only_a_counter_variable() {
    let e = load_err(
        r#"
        [[kernel]]
        name = "*"
        duration_ns = "duration_ns + 1"
        "#,
    );
    assert!(
        e.starts_with(
            "test.toml: kernel rule 0 (name = \"*\"): duration_ns: unknown variable \
             `duration_ns` at column 1 of `duration_ns + 1`; available variables: grid_x,"
        ),
        "{e}"
    );
    assert!(e.ends_with(", sgemm_rate"), "{e}");
    // ...and counters may use it.
    model(
        r#"
        [[kernel]]
        name = "*"
        duration_ns = "1"
        counters = { cycles = "duration_ns * 1.98" }
        "#,
    );
}

#[test]
fn unknown_counter_variable_is_rejected_at_load() {
    let e = load_err(
        r#"
        [[kernel]]
        name = "k?"
        duration_ns = "1"
        [kernel.counters]
        "dram__bytes_read.sum" = "m * n * bytes"
        "#,
    );
    assert!(
        e.starts_with(
            "test.toml: kernel rule 0 (name = \"k?\"): counters.\"dram__bytes_read.sum\": \
             unknown variable `bytes` at column 9 of `m * n * bytes`; available variables: \
             grid_x,"
        ),
        "{e}"
    );
    assert!(e.ends_with(", sgemm_rate, duration_ns"), "{e}");
}

#[test]
fn bad_arity_is_rejected_at_load() {
    assert_eq!(
        load_err(
            r#"
            [[kernel]]
            name = "*"
            duration_ns = "max(blocks)"
            "#
        ),
        "test.toml: kernel rule 0 (name = \"*\"): duration_ns: function `max` takes \
         2 arguments, got 1 at column 1 of `max(blocks)`"
    );
    assert_eq!(
        load_err(
            r#"
            [defaults.counters]
            x = "1 + ceil(1, 2)"
            [[kernel]]
            name = "*"
            duration_ns = "1"
            "#
        ),
        "test.toml: [defaults]: counters.\"x\": function `ceil` takes 1 argument, got 2 \
         at column 5 of `1 + ceil(1, 2)`"
    );
}

#[test]
fn syntax_error_in_expression_is_rejected_at_load() {
    assert_eq!(
        load_err(
            r#"
            [defaults]
            duration_ns = "(1 + 2"
            [[kernel]]
            name = "*"
            "#
        ),
        "test.toml: [defaults]: duration_ns: unexpected end of expression, expected `)` \
         at column 7 of `(1 + 2`"
    );
}

#[test]
fn missing_duration_and_missing_rules() {
    assert_eq!(
        load_err(
            r#"
            [[kernel]]
            name = "a"
            duration_ns = "1"
            [[kernel]]
            name = "b*"
            counters = { x = "1" }
            "#
        ),
        "test.toml: kernel rule 1 (name = \"b*\"): no duration_ns, and [defaults] gives none"
    );
    assert_eq!(load_err(""), "test.toml: no [[kernel]] rules");
    assert_eq!(
        load_err("[defaults]\nduration_ns = \"1\"\n"),
        "test.toml: no [[kernel]] rules"
    );
}

#[test]
fn toml_syntax_error_names_the_line() {
    let e = CostModel::from_toml_str(
        "[[kernel]]\nname = \"*\"\nduration_ns = \"1\"\ncounters = { x = }\n",
        "test.toml",
    )
    .unwrap_err();
    assert!(
        matches!(&e, ModelError::Toml { line: Some(4), .. }),
        "{e:?}"
    );
    assert!(e.to_string().starts_with("test.toml:4:"), "{e}");
    // Messages are single-line.
    assert!(!e.to_string().contains('\n'), "{e}");
}

#[test]
fn toml_shape_errors_name_the_line() {
    // A misspelt field is an error, not silently ignored.
    let e = load_err("[[kernel]]\nname = \"*\"\nduration_ns = \"1\"\ncounter = {}\n");
    assert!(e.starts_with("test.toml:4:"), "{e}");
    assert!(e.contains("unknown field `counter`"), "{e}");
    let e = load_err("[[kernel]]\nduration_ns = \"1\"\n");
    assert!(e.starts_with("test.toml:1:"), "{e}");
    assert!(e.contains("missing field `name`"), "{e}");
    let e = load_err("[[kernel]]\nname = \"*\"\nduration_ns = true\n");
    assert!(e.starts_with("test.toml:3:"), "{e}");
    assert!(e.contains("an expression (a string) or a number"), "{e}");
}

// ---- costing: errors ----------------------------------------------------------------------

#[test]
fn no_matching_rule_names_the_kernel() {
    let m = model("[[kernel]]\nname = \"*gemm*\"\nduration_ns = \"1\"\n");
    assert_eq!(
        m.cost(&launch("relu_kernel", [1; 3], [1; 3]))
            .unwrap_err()
            .to_string(),
        "test.toml: no kernel rule matches kernel `relu_kernel`"
    );
}

#[test]
fn division_by_zero_at_evaluation() {
    let m = model(
        r#"
        [[kernel]]
        name = "d"
        duration_ns = "1000 / shared_mem"
        [[kernel]]
        name = "c"
        duration_ns = "1"
        counters = { "bytes_per_flop" = "grid_x / (2*m*n*k)" }
        "#,
    );
    assert_eq!(
        m.cost(&launch("d", [1; 3], [1; 3]))
            .unwrap_err()
            .to_string(),
        "test.toml: kernel rule 0 (name = \"d\"): duration_ns for kernel `d`: \
         division by zero at column 6 of `1000 / shared_mem`"
    );
    let mut l = launch("d", [1; 3], [1; 3]);
    l.shared_mem = 1;
    assert_eq!(m.cost(&l).unwrap().duration_ns, 1000);
    assert_eq!(
        m.cost(&launch("c", [1; 3], [1; 3]))
            .unwrap_err()
            .to_string(),
        "test.toml: kernel rule 1 (name = \"c\"): counters.\"bytes_per_flop\" for kernel `c`: \
         division by zero at column 8 of `grid_x / (2*m*n*k)`"
    );
}

#[test]
fn unusable_values() {
    let m = model(
        r#"
        [[kernel]]
        name = "short"
        duration_ns = "0.49"
        [[kernel]]
        name = "negative"
        duration_ns = "-5"
        [[kernel]]
        name = "huge"
        duration_ns = "1e300"
        [[kernel]]
        name = "inf"
        duration_ns = "0.5"
        counters = { x = "1e300 * 1e300" }
        "#,
    );
    let err = |name| {
        m.cost(&launch(name, [1; 3], [1; 3]))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("short"),
        "test.toml: kernel rule 0 (name = \"short\"): duration_ns for kernel `short` is 0.49, \
         must round to an integer from 1 to 2^64-1"
    );
    assert_eq!(
        err("negative"),
        "test.toml: kernel rule 1 (name = \"negative\"): duration_ns for kernel `negative` \
         is -5, must round to an integer from 1 to 2^64-1"
    );
    assert!(err("huge").ends_with("must round to an integer from 1 to 2^64-1"));
    assert_eq!(
        err("inf"),
        "test.toml: kernel rule 3 (name = \"inf\"): counters.\"x\" for kernel `inf` is inf, \
         must be finite"
    );
}

// ---- the built-in default model -----------------------------------------------------------

const SM90_GEMM: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_\
                         warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
const READ: &str = "dram__bytes_read.sum";
const WRITE: &str = "dram__bytes_write.sum";
const TENSOR: &str = "sm__ops_path_tensor_src_bf16_dst_fp32.sum";
const FFMA: &str = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
const FADD: &str = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
const FMUL: &str = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
const CYCLES: &str = "sm__cycles_active.avg";
const TENSOR_PCT: &str = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active";
const TIME: &str = "gpu__time_duration.sum";

/// The nine counters every test below checks by value (the model's other counters are
/// the rest of the GH100 default set, zero but for occupancy; see `default_model_rules`).
fn first_nine(c: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    let keep = [
        TIME, READ, WRITE, TENSOR, FFMA, FADD, FMUL, CYCLES, TENSOR_PCT,
    ];
    c.iter()
        .filter(|(k, _)| keep.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// The cycles counter exactly as the model computes it (same f64 operations, same order).
fn cycles(duration_ns: u64, blocks: f64) -> f64 {
    duration_ns as f64 * 1.98 * blocks.min(132.0) / 132.0
}

#[test]
fn default_model_rules() {
    let m = CostModel::builtin();
    assert_eq!(m.origin(), DEFAULT_MODEL_ORIGIN);
    let patterns: Vec<&str> = (0..m.rule_count())
        .map(|i| m.rule_pattern(i).unwrap())
        .collect();
    assert_eq!(
        patterns,
        [
            "ampere_bf16_s16816gemm_*",
            "*gemv*",
            "*_ffma_*",
            "ampere_sgemm_*",
            "*gemm_f64*",
            "*gemm_f*",
            "*gemm*",
            "*flash*",
            "*attention*",
            "*reduce*",
            "*softmax*",
            "*rms_norm*",
            "*silu*",
            "*add*",
            "*elementwise*",
            "*",
        ]
    );
    // Every rule reports every counter, so the profiler's metric set is always complete.
    let all = [
        TIME,
        READ,
        WRITE,
        TENSOR,
        FFMA,
        FADD,
        FMUL,
        CYCLES,
        TENSOR_PCT,
        "sm__ops_path_tensor_op_hgmma_src_fp16.sum",
        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum",
        "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16.sum",
        "sm__ops_path_tensor_src_fp8.sum",
        "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
        "sm__ops_path_tensor_src_fp64.sum",
        "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
        "lts__t_sectors_lookup_hit.sum",
        "lts__t_sectors_lookup_miss.sum",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
    ];
    // The `dcgm` preset's metrics (GPUPROF_METRICS=dcgm).
    let dcgm = [
        "gr__cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
        "sm__warps_active.avg.pct_of_peak_sustained_elapsed",
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
        "dram__cycles_active.avg.pct_of_peak_sustained_elapsed",
        "pcie__read_bytes.sum",
        "pcie__write_bytes.sum",
        "nvlrx__bytes.sum",
        "nvltx__bytes.sum",
    ];
    let names = [
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
        "gemv2T_kernel_val",
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
        "ampere_sgemm_128x128_nn",
        "sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize128x64x16_cgasize1x1x1_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_cgasize1x1x1_warpgroupsize1x1x1_aligna4_alignc4_execute_segment_k_off_kernel__5x_cublas",
        SM90_GEMM,
        "flash_fwd_kernel",
        "paged_attention_v1_kernel",
        "reduce_kernel",
        "softmax_warp_forward",
        "rms_norm_kernel",
        "act_and_mul_kernel<silu_kernel>",
        "add_kernel",
        "vectorized_elementwise_kernel",
        "my_custom_kernel",
    ];
    for (i, name) in names.iter().enumerate() {
        let c = m.cost(&gemm_launch(name, 64, 64, 64, 1)).unwrap();
        assert_eq!(c.rule, i, "{name}");
        // And DRAM throughput, which equals DRAM activity in this model, and the 14
        // names only the other chips' default sets have (all 0).
        assert_eq!(
            c.counters.keys().count(),
            all.len() + dcgm.len() + 1 + 14,
            "{name}"
        );
        for counter in all.iter().chain(&dcgm) {
            assert!(c.counters.contains_key(*counter), "{name}: {counter}");
        }
        assert_eq!(
            c.counters["dram__throughput.avg.pct_of_peak_sustained_elapsed"], c.counters[dcgm[4]],
            "{name}"
        );
        // The graphics engine is busy for the whole kernel, the grid fills every SM
        // (5 blocks of 12 warps each: 60 of its 64 warps, see below), and nothing
        // crosses PCIe or NVLink.
        assert_eq!(c.counters[dcgm[0]], 100.0, "{name}");
        assert_eq!(c.counters[dcgm[1]], 100.0, "{name}");
        assert_eq!(c.counters[dcgm[2]], 93.75, "{name}");
        for bytes in &dcgm[5..] {
            assert_eq!(c.counters[*bytes], 0.0, "{name}: {bytes}");
        }
        assert_eq!(c.counters[TIME], c.duration_ns as f64);
        // 64 x 64 tiles: grid 32 x 32 x 1 of 384 threads, more blocks than the SMs
        // hold; an SM holds 5 blocks of 12 warps (64 warps at most): 60 of 64.
        assert_eq!(
            c.counters["sm__warps_active.avg.pct_of_peak_sustained_active"], 93.75,
            "{name}"
        );
        for extra in &all[9..all.len() - 1] {
            assert_eq!(c.counters[*extra], 0.0, "{name}: {extra}");
        }
    }
}

#[test]
fn default_model_from_env_without_the_variable_is_builtin() {
    // The variable's value is passed in: tests run in parallel and must not mutate
    // the process environment.
    assert_eq!(
        CostModel::from_env_value(None).unwrap().origin(),
        DEFAULT_MODEL_ORIGIN
    );
    assert_eq!(
        CostModel::from_env_value(Some(std::ffi::OsStr::new("")))
            .unwrap()
            .origin(),
        DEFAULT_MODEL_ORIGIN
    );
    let err = CostModel::from_env_value(Some(std::ffi::OsStr::new("/nonexistent/model.toml")))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "cannot read cost model /nonexistent/model.toml: No such file or directory (os error 2)"
    );
}

#[test]
fn default_model_prefill_gemm_4096_cubed_bf16() {
    let c = CostModel::builtin()
        .cost(&gemm_launch(SM90_GEMM, 4096, 4096, 4096, 1))
        .unwrap();
    assert_eq!(c.rule, 6);
    // Compute: 2 * 4096^3 = 137438953472 FLOP / 700000 FLOP/ns = 196341.36 ns.
    // Memory: 3 * 4096^2 * 2 B = 100663296 B / 3000 B/ns = 33554.43 ns. Compute-bound.
    assert_eq!(c.duration_ns, 196341);
    assert_eq!(
        first_nine(&c.counters),
        counters(&[
            (TIME, 196341.0),
            (READ, 67108864.0),  // A and B: 2 * 4096^2 * 2 B
            (WRITE, 33554432.0), // C: 4096^2 * 2 B
            (TENSOR, 137438953472.0),
            (FFMA, 0.0),
            (FADD, 0.0),
            (FMUL, 16777216.0), // alpha * acc, one per element of C
            (CYCLES, cycles(196341, 1024.0)),
            (TENSOR_PCT, 137438953472.0 / 196341.0 / 9894.0),
        ])
    );
    // The f64 values are the ones computed by hand.
    assert!((c.counters[CYCLES] - 388755.18).abs() < 1e-6);
    assert!((c.counters[TENSOR_PCT] - 70.750_08).abs() < 1e-5);
}

#[test]
fn default_model_batched_gemm_scales_with_batch() {
    let one = CostModel::builtin()
        .cost(&gemm_launch(SM90_GEMM, 1024, 1024, 1024, 1))
        .unwrap();
    let eight = CostModel::builtin()
        .cost(&gemm_launch(SM90_GEMM, 1024, 1024, 1024, 8))
        .unwrap();
    // 2 * 1024^3 / 700000 = 3067.83; times 8 = 24542.67.
    assert_eq!((one.duration_ns, eight.duration_ns), (3068, 24543));
    assert_eq!(eight.counters[TENSOR], 8.0 * one.counters[TENSOR]);
    assert_eq!(eight.counters[READ], 8.0 * 4194304.0);
}

#[test]
fn default_model_decode_gemm_is_memory_bound() {
    let c = CostModel::builtin()
        .cost(&gemm_launch(SM90_GEMM, 4096, 16, 4096, 1))
        .unwrap();
    // Memory: (4096*4096 + 4096*16 + 4096*16) * 2 B = 33816576 B / 3000 = 11272.19 ns;
    // compute: 536870912 FLOP / 700000 = 766.96 ns.
    assert_eq!(c.duration_ns, 11272);
    assert_eq!(c.counters[READ], 33685504.0);
    assert_eq!(c.counters[WRITE], 131072.0);
    assert_eq!(c.counters[TENSOR], 536870912.0);
    assert_eq!(c.counters[TENSOR_PCT], 536870912.0 / 11272.0 / 9894.0);
}

#[test]
fn default_model_decode_gemv() {
    let c = CostModel::builtin()
        .cost(&gemm_launch(
            "gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false>",
            4096,
            1,
            4096,
            1,
        ))
        .unwrap();
    assert_eq!(c.rule, 1);
    // Memory: (4096*4096 + 4096 + 4096) * 2 B = 33570816 B / 3000 = 11190.27 ns.
    assert_eq!(c.duration_ns, 11190);
    assert_eq!(c.counters[READ], 33562624.0);
    assert_eq!(c.counters[WRITE], 8192.0);
    assert_eq!(c.counters[FFMA], 16777216.0);
    assert_eq!(c.counters[TENSOR], 0.0);
    assert_eq!(c.counters[TENSOR_PCT], 0.0);
}

#[test]
fn default_model_small_gemm_has_a_floor() {
    let m = CostModel::builtin();
    let c = m.cost(&gemm_launch(SM90_GEMM, 64, 64, 64, 1)).unwrap();
    assert_eq!(c.duration_ns, 2000);
    // A GEMM-named kernel launched outside the simulated cuBLAS: no shape, floor, no work.
    let c = m
        .cost(&launch(SM90_GEMM, [32, 32, 1], [384, 1, 1]))
        .unwrap();
    assert_eq!(c.duration_ns, 2000);
    assert_eq!((c.counters[TENSOR], c.counters[READ]), (0.0, 0.0));
}

#[test]
fn default_model_ampere_gemm_is_slower() {
    let c = CostModel::builtin()
        .cost(&gemm_launch(
            "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
            4096,
            4096,
            4096,
            1,
        ))
        .unwrap();
    // 137438953472 / 500000 = 274877.91 ns.
    assert_eq!((c.rule, c.duration_ns), (0, 274878));
    assert_eq!(c.counters[TENSOR], 137438953472.0);
}

#[test]
fn default_model_attention() {
    let m = CostModel::builtin();
    let c = m
        .cost(&launch(
            "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>",
            [16, 64, 1],
            [128, 1, 1],
        ))
        .unwrap();
    // 1024 CTAs * 134217728 FLOP / 600000 FLOP/ns = 229064.88 ns.
    assert_eq!((c.rule, c.duration_ns), (7, 229065));
    assert_eq!(c.counters[TENSOR], 137438953472.0);
    assert_eq!(c.counters[READ], 1024.0 * 294912.0);
    assert_eq!(c.counters[WRITE], 33554432.0);
    assert_eq!(c.counters[FFMA], 268435456.0);
    assert_eq!(c.counters[CYCLES], cycles(229065, 1024.0));

    let c = m
        .cost(&launch(
            "paged_attention_v1_kernel",
            [32, 64, 1],
            [128, 1, 1],
        ))
        .unwrap();
    // 2048 CTAs * 1 MiB / 3000 B/ns = 715827.88 ns.
    assert_eq!((c.rule, c.duration_ns), (8, 715828));
    assert_eq!(c.counters[READ], 2147483648.0);
    assert_eq!(c.counters[FFMA], 1073741824.0);
    assert_eq!(c.counters[TENSOR], 0.0);
}

#[test]
fn default_model_elementwise_and_reductions() {
    let m = CostModel::builtin();
    let grid = [4096, 1, 1];
    let block = [256, 1, 1];
    // silu_and_mul: 4096*256 threads * 48 B / 3000 = 16777.22 ns.
    let c = m
        .cost(&launch(
            "act_and_mul_kernel<c10::BFloat16, &silu_kernel>",
            grid,
            block,
        ))
        .unwrap();
    assert_eq!(c.duration_ns, 16777);
    assert_eq!(
        first_nine(&c.counters),
        counters(&[
            (TIME, 16777.0),
            (READ, 33554432.0),
            (WRITE, 16777216.0),
            (TENSOR, 0.0),
            (FFMA, 0.0),
            (FADD, 8388608.0),
            (FMUL, 16777216.0),
            (CYCLES, cycles(16777, 4096.0)),
            (TENSOR_PCT, 0.0),
        ])
    );
    // fused_add_rms_norm matches `*rms_norm*` before `*add*`: 32 B per thread.
    let c = m
        .cost(&launch("fused_add_rms_norm_kernel", grid, block))
        .unwrap();
    assert_eq!((c.rule, c.duration_ns), (11, 11185)); // 33554432 / 3000 = 11184.81
    assert_eq!(c.counters[FMUL], 16777216.0);
    let c = m.cost(&launch("add_kernel", grid, block)).unwrap();
    assert_eq!((c.rule, c.duration_ns), (13, 16777));
    // reduce: 16 B per thread; 4 B per CTA written.
    let c = m
        .cost(&launch("reduce_kernel<512, 1>", grid, block))
        .unwrap();
    assert_eq!((c.rule, c.duration_ns), (9, 5592)); // 16777216 / 3000 = 5592.41
    assert_eq!(c.counters[WRITE], 16384.0);
    // A tiny kernel sits on the 2 us floor, and few CTAs keep most SMs idle.
    let c = m
        .cost(&launch("softmax_warp_forward", [2, 1, 1], [128, 1, 1]))
        .unwrap();
    assert_eq!((c.rule, c.duration_ns), (10, 2000));
    assert_eq!(c.counters[CYCLES], 2000.0 * 1.98 * 2.0 / 132.0);
}

#[test]
fn default_model_catch_all() {
    let m = CostModel::builtin();
    let c = m.cost(&launch("my_kernel", [1, 1, 1], [1, 1, 1])).unwrap();
    assert_eq!((c.rule, c.duration_ns), (15, 1000));
    let c = m
        .cost(&launch("my_kernel", [2, 1, 1], [500, 1, 1]))
        .unwrap();
    assert_eq!(c.duration_ns, 1001);
    let c = m.cost(&launch("", [1000, 1, 1], [1000, 1, 1])).unwrap();
    assert_eq!(c.duration_ns, 2000);
    assert_eq!(c.counters[READ], 0.0);
}

#[test]
fn default_model_fp32_gemm_runs_on_cuda_cores() {
    // 1000 x 500 x 300 FP32: 2*m*n*k = 300000000 FLOP at 50000 FLOP/ns = 6000 ns; DRAM
    // (300000 + 150000 + 500000) * 4 B = 3800000 B at 3000 B/ns = 1266.67 ns: compute-bound.
    let c = CostModel::builtin()
        .cost(&Launch {
            gemm: Some(GemmShape {
                m: 1000,
                n: 500,
                k: 300,
                batch: 1,
                elem_bytes: 4,
            }),
            ..gemm_launch("ampere_sgemm_128x128_nn", 1000, 500, 300, 1)
        })
        .unwrap();
    assert_eq!((c.rule, c.duration_ns), (3, 6000));
    assert_eq!(c.counters[FFMA], 150000000.0);
    assert_eq!(c.counters[TENSOR], 0.0);
    assert_eq!(c.counters[READ], 1800000.0);
    assert_eq!(c.counters[WRITE], 2000000.0);
}

/// Each chip prices with its own constants: the same GEMM takes longer on an A100
/// than on an H100 and moves the same bytes; a `[chips]` table must name every
/// constant, and only those.
#[test]
fn chips_price_with_their_own_constants() {
    let m = CostModel::builtin();
    assert_eq!(
        m.chips().collect::<Vec<_>>(),
        ["AD102", "GA100", "GB100", "GH100"]
    );
    let gemm = gemm_launch(
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
        4096,
        4096,
        4096,
        1,
    );
    let h100 = m.clone().with_chip("GH100").cost(&gemm).unwrap();
    let a100 = m.clone().with_chip("GA100").cost(&gemm).unwrap();
    // 2 * 4096^3 FLOPs at 700000 and 220000 FLOP/ns.
    assert_eq!(
        h100.duration_ns,
        (2.0 * 4096f64.powi(3) / 700000.0).round() as u64
    );
    assert_eq!(
        a100.duration_ns,
        (2.0 * 4096f64.powi(3) / 220000.0).round() as u64
    );
    assert_eq!(
        h100.counters["dram__bytes_read.sum"],
        a100.counters["dram__bytes_read.sum"]
    );
    // A chip without constants is priced as GH100.
    assert_eq!(
        m.with_chip("TU102").cost(&gemm).unwrap().duration_ns,
        h100.duration_ns
    );
    let e = load_err(
        r#"
        [chips.GA100]
        sm_count = 108
        [[kernel]]
        name = "*"
        duration_ns = "1"
        "#,
    );
    assert_eq!(e, "test.toml: [chips.GA100]: clock_ghz is missing");
}
