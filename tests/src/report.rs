//! Reading `gpuprof report --format json` in tests, and what the workloads are known
//! to launch.

use std::collections::BTreeMap;

/// Calls per kernel (by mangled name) in a JSON report.
pub fn kernel_calls(report: &serde_json::Value) -> BTreeMap<String, u64> {
    report["kernels"]
        .as_array()
        .expect("report has kernels")
        .iter()
        .map(|k| {
            (
                k["mangled"]
                    .as_str()
                    .expect("kernel has a mangled name")
                    .to_string(),
                k["calls"].as_u64().expect("kernel has calls"),
            )
        })
        .collect()
}

/// What `tests/workloads/cudarc-llm` launches with its default shape (60 launches of
/// its own kernels and 47 GEMMs, which the simulated cuBLAS runs as these kernels).
pub fn cudarc_llm_calls() -> BTreeMap<String, u64> {
    [
        (
            "_Z13gemv2N_kernelIii13__nv_bfloat16S0_S0_fLi128ELi1ELi2ELi2ELi11ELb0E18cublasGemvParamsExIi30cublasGemvTensorStridedBatchedIKS0_ES4_S2_IS0_EfEEvT11_",
            37,
        ),
        ("add_residual_kernel", 20),
        ("rms_norm_kernel", 20),
        ("silu_and_mul_kernel", 10),
        ("paged_attention_v1_kernel", 8),
        (
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_cgasize1x1x1_warpgroupsize1x1x1_aligna4_alignc4_execute_segment_k_off_kernel__5x_cublas",
            8,
        ),
        ("flash_fwd_kernel", 2),
        (
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cgasize1x1x1_warpgroupsize1x1x1_aligna4_alignc4_execute_segment_k_off_kernel__5x_cublas",
            2,
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// `gpuprof record -o OUT -- cudarc-llm ARGS` on the simulated H100, CUPTI
/// impersonating `release`; panics unless it exits 0.
pub fn record_cudarc_llm(out: &std::path::Path, release: &str, args: &[&str]) {
    record_cudarc_llm_with(out, release, args, &[]);
}

/// [`record_cudarc_llm`] with the environment variables `env` set for the run.
pub fn record_cudarc_llm_with(
    out: &std::path::Path,
    release: &str,
    args: &[&str],
    env: &[(&str, &str)],
) {
    let mut cmd = crate::record_on_sim(release);
    cmd.arg("-o")
        .arg(out)
        .arg("--")
        .arg(crate::artifact("cudarc-llm"))
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = crate::TimedChild::spawn(cmd, std::time::Duration::from_secs(180)).wait();
    assert_eq!(o.status.code(), Some(0), "gpuprof record: {}", o.stderr);
}

/// Every record of the session in `dir`, with its pid, part by part; panics on a
/// damaged part.
pub fn session_records(dir: &std::path::Path) -> Vec<(u32, wire::Record)> {
    let store = gpuprof_collector::store::Store::open(dir).expect("a session");
    let mut out = Vec::new();
    for i in 0..store.parts.len() {
        let part = store.read_part(i).expect("a part");
        assert!(part.damaged.is_empty(), "{:?}", part.damaged);
        out.extend(part.records);
    }
    out
}

/// The decode GEMM shapes of a JSON report's roofline (N = 1: one token), by label.
pub fn decode_shapes(report: &serde_json::Value) -> BTreeMap<String, &serde_json::Value> {
    report["roofline"]["shapes"]
        .as_array()
        .expect("roofline shapes")
        .iter()
        .filter(|s| s["n"] == 1)
        .map(|s| (s["shape"].as_str().expect("shape label").to_string(), s))
        .collect()
}

/// `gpuprof report SESSION` (the table); panics unless it exits 0.
pub fn report_text(session: &std::path::Path) -> String {
    let mut cmd = crate::gpuprof_command();
    cmd.arg("report").arg(session);
    let o = crate::TimedChild::spawn(cmd, std::time::Duration::from_secs(180)).wait();
    assert_eq!(o.status.code(), Some(0), "gpuprof report: {}", o.stderr);
    o.stdout
}

/// `gpuprof report --format json SESSION`; panics unless it exits 0.
pub fn report_json(session: &std::path::Path) -> serde_json::Value {
    let mut cmd = crate::gpuprof_command();
    cmd.args(["report", "--format", "json"]).arg(session);
    let o = crate::TimedChild::spawn(cmd, std::time::Duration::from_secs(180)).wait();
    assert_eq!(o.status.code(), Some(0), "gpuprof report: {}", o.stderr);
    serde_json::from_str(&o.stdout).expect("report JSON")
}

/// The key of a kernel class: "name grid block GEMM-label" (`null` without a GEMM),
/// the JSON values as written.
pub fn class_key(
    name: &str,
    grid: &serde_json::Value,
    block: &serde_json::Value,
    gemm: &serde_json::Value,
) -> String {
    format!("{name} {grid} {block} {gemm}")
}

/// The DRAM bytes (read + write) a JSON report fits to PM sampling per kernel class
/// ([`class_key`]): each fitted class's per-launch bytes times its launches.
pub fn fitted_bytes_by_class(report: &serde_json::Value) -> BTreeMap<String, f64> {
    let mut fitted = BTreeMap::new();
    for c in report["counters"]["fitted"]
        .as_array()
        .expect("fitted classes")
    {
        let per_launch = |metric: &str| {
            c["metrics"]
                .as_array()
                .expect("metrics")
                .iter()
                .find(|m| m["metric"] == metric)
                .and_then(|m| m["value"].as_f64())
        };
        let (Some(read), Some(write)) = (
            per_launch("dram__bytes_read.sum"),
            per_launch("dram__bytes_write.sum"),
        ) else {
            continue;
        };
        let calls = c["calls"].as_f64().expect("calls");
        let name = c["name"].as_str().expect("name");
        let key = class_key(name, &c["grid"], &c["block"], &c["shape"]);
        fitted.insert(key, (read + write) * calls);
    }
    fitted
}
