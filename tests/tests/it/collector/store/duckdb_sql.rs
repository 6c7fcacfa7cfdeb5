//! The SQL of docs/SESSION.md ("Reading a session with SQL"), taken from the document
//! itself so that the two cannot drift, run with the real DuckDB on sessions recorded
//! on the simulated stack: its kernel table and roofline per kernel must equal
//! `gpuprof report --format json`'s, value for value (integers exactly, floats as the
//! JSON prints them, which is every bit), except the fields the document says the SQL
//! leaves out.
//!
//! The sessions: the cudarc workload with the default counters (pass groups rotate,
//! so most launches take their DRAM bytes from their group's mean) in several parts;
//! its decode as a CUDA graph (GEMM shapes reached through graph nodes and clones);
//! and with counters and GEMM hooks off (the tables the SQL reads then have no file).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gpuprof_tests::{
    artifact, duckdb, record_on_sim, report_json, sql_blocks, Scratch, TimedChild,
};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(180);

/// The four SQL blocks of docs/SESSION.md, in order: the tables as views, the peaks,
/// the kernel table, the roofline by kernel. Each is recognised by its first line.
fn documented_sql() -> [String; 4] {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/SESSION.md");
    let doc = std::fs::read_to_string(&path).expect("read docs/SESSION.md");
    let blocks = sql_blocks(&doc).expect("the SQL blocks of docs/SESSION.md");
    let firsts: Vec<&str> = blocks.iter().filter_map(|b| b.lines().next()).collect();
    assert_eq!(
        firsts,
        [
            "-- The session's tables as views.",
            "-- Peaks, FLOP/s and bytes/s.",
            "-- Kernels by GPU time.",
            "-- Roofline by kernel.",
        ],
        "the SQL blocks of docs/SESSION.md"
    );
    blocks.try_into().expect("four blocks")
}

/// The first block with the session directory in place of `'DIR'` (which it names
/// exactly once).
fn tables_sql(block: &str, session: &Path) -> String {
    assert_eq!(block.matches("'DIR'").count(), 1, "{block}");
    let dir = session.to_str().expect("a UTF-8 path").replace('\'', "''");
    block.replace("'DIR'", &format!("'{dir}'"))
}

/// `gpuprof record [args] -o <scratch>/out -- cudarc-llm [workload]` on the simulated
/// H100, CUPTI 13.4, with `env`.
fn record(scratch: &Scratch, args: &[&str], workload: &[&str], env: &[(&str, &str)]) -> PathBuf {
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.args(args)
        .arg("-o")
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"))
        .args(workload);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(o.status.code(), Some(0), "gpuprof record: {o:?}");
    out
}

fn keys(row: &Value) -> BTreeSet<String> {
    row.as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

/// The report's fields of a kernel that the SQL does not give (docs/SESSION.md).
const KERNEL_LEFT_OUT: &[&str] = &["name", "short_name", "configs"];
const ROOFLINE_LEFT_OUT: &[&str] = &["name", "family", "hw_flops", "hw_flops_launches"];
/// What a roofline row computes from its FLOPs: NULL in the SQL for a row whose
/// FLOPs the report takes from counters.
const FROM_FLOPS: &[&str] = &[
    "flops_source",
    "precision",
    "pipe",
    "peak_flops_per_s",
    "intensity",
    "achieved_flops_per_s",
    "mfu_pct",
    "ridge",
    "bound",
    "attainable_flops_per_s",
    "roofline_efficiency_pct",
];

/// What a roofline row computes from its DRAM bytes: NULL in the SQL for a row whose
/// bytes the report fitted to PM sampling windows, all or some (`bytes_source`
/// `sampled` or `mixed`; the SQL has per-kernel counters only, docs/SESSION.md).
const FROM_BYTES: &[&str] = &[
    "bytes",
    "bytes_source",
    "intensity",
    "mbu_pct",
    "bound",
    "attainable_flops_per_s",
    "roofline_efficiency_pct",
];

/// Every SQL row equals the report's row in the same place, field by field, and the SQL
/// gives every field of the report's rows but `left_out`. A row whose FLOPs the report
/// counted (`flops_source` `hw`) has NULL for each of [`FROM_FLOPS`] instead.
fn assert_rows_equal(what: &str, sql: &[Value], report: &[Value], left_out: &[&str]) {
    assert_eq!(
        sql.iter().map(|r| &r["mangled"]).collect::<Vec<_>>(),
        report.iter().map(|r| &r["mangled"]).collect::<Vec<_>>(),
        "{what}: the rows and their order"
    );
    for (s, r) in sql.iter().zip(report) {
        let mangled = r["mangled"].as_str().unwrap_or_default();
        let mut want = keys(r);
        for f in left_out {
            assert!(
                want.remove(*f),
                "{what}: the report has no field {f}: {r:#}"
            );
        }
        assert_eq!(keys(s), want, "{what}: the SQL's columns, row {mangled}");
        let counted = r["flops_source"] == "hw";
        let fitted = r["bytes_source"] == "sampled" || r["bytes_source"] == "mixed";
        for field in &want {
            if counted && FROM_FLOPS.contains(&field.as_str()) {
                assert_eq!(
                    s[field],
                    Value::Null,
                    "{what}: {field} of {mangled}, whose FLOPs the report counted"
                );
            } else if fitted && FROM_BYTES.contains(&field.as_str()) {
                assert_eq!(
                    s[field],
                    Value::Null,
                    "{what}: {field} of {mangled}, whose bytes the report fitted"
                );
            } else {
                assert_eq!(s[field], r[field], "{what}: {field} of {mangled}");
            }
        }
    }
}

/// Runs the documented SQL on `session`, then `extra` queries, and checks the kernel
/// table and the peaks against the report. Returns the report, the SQL's roofline rows
/// and the rows of `extra`.
fn check(session: &Path, extra: &[&str]) -> (Value, Vec<Value>, Vec<Vec<Value>>) {
    let [tables, peaks, kernels, roofline] = documented_sql();
    let tables = tables_sql(&tables, session);
    let mut queries = vec![kernels.as_str(), roofline.as_str(), "FROM peaks"];
    queries.extend(extra);
    let mut results = duckdb(&[&tables, &peaks], &queries);
    let extra_rows = results.split_off(3);
    let peak_rows = results.pop().unwrap();
    let roofline_rows = results.pop().unwrap();
    let kernel_rows = results.pop().unwrap();

    let v = report_json(session);
    // The common case the document promises equality for: the report left nothing
    // out and joined every GEMM and counter record.
    assert!(
        v.get("session_damage").is_none() && v.get("impossible_records").is_none(),
        "the report left nothing out: {v:#}"
    );
    for (section, field) in [("roofline", "gemm_unjoined"), ("counters", "unattributed")] {
        if let Some(s) = v.get(section) {
            assert_eq!(s[field], 0, "{section}.{field}");
        }
    }
    let report_kernels = v["kernels"].as_array().expect("kernels");
    assert!(!report_kernels.is_empty(), "{v:#}");
    assert_rows_equal("kernels", &kernel_rows, report_kernels, KERNEL_LEFT_OUT);
    let total: u64 = kernel_rows
        .iter()
        .map(|k| k["total_ns"].as_u64().unwrap())
        .sum();
    assert_eq!(total, v["kernel_ns"].as_u64().unwrap());

    // The documented peaks are the report's for the simulated GPU.
    let gpu = &v["processes"][0]["devices"][0]["name"];
    assert_eq!(gpu, "NVIDIA H100 80GB HBM3");
    assert_eq!(peak_rows.len(), 1, "{peak_rows:?}");
    let p = &peak_rows[0];
    assert_eq!(&p["gpu"], gpu);
    if let Some(report_peaks) = v["roofline"]["peaks"].as_array() {
        let r = &report_peaks[0];
        assert_eq!(&r["gpu"], gpu);
        for (sql, report) in [
            ("bf16", "bf16_tensor_flops_per_s"),
            ("fp16", "fp16_tensor_flops_per_s"),
            ("tf32", "tf32_tensor_flops_per_s"),
            ("fp8", "fp8_tensor_flops_per_s"),
            ("int8", "int8_tensor_flops_per_s"),
            ("fp4", "fp4_tensor_flops_per_s"),
            ("fp64_tensor", "fp64_tensor_flops_per_s"),
            ("fp32", "fp32_cuda_flops_per_s"),
            ("fp64", "fp64_cuda_flops_per_s"),
            ("dram_bytes_per_s", "dram_bytes_per_s"),
        ] {
            assert_eq!(p[sql], r[report], "peak {sql}");
        }
    }
    (v, roofline_rows, extra_rows)
}

fn row<'a>(rows: &'a [Value], prefix: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["mangled"].as_str().unwrap().starts_with(prefix))
        .unwrap_or_else(|| panic!("no row {prefix}*: {rows:#?}"))
}

/// The workload with the default counters, sealed in parts of 64 records: kernels,
/// names and counters of a launch end up in different parts, and launches measured in
/// another pass group than DRAM bytes' take the mean of their group.
#[test]
fn the_documented_sql_gives_the_reports_tables_of_a_session_in_parts() {
    let scratch = Scratch::new("duckdb-sql-parts");
    let out = record(&scratch, &["--part-rows", "64"], &[], &[]);
    // Records arrive in frames of up to 50 ms of launches, and a part is sealed after
    // the frame that fills it: how many parts depends on the machine's speed.
    let parts = std::fs::read_dir(out.join("parts")).unwrap().count();
    assert!(parts >= 2, "{parts} parts");
    let (v, roofline, _) = check(&out, &[]);
    assert_rows_equal(
        "roofline",
        &roofline,
        v["roofline"]["kernels"]
            .as_array()
            .expect("roofline kernels"),
        ROOFLINE_LEFT_OUT,
    );
    // What the comparison covered: the GEMV row has model FLOPs, and rows have bytes
    // partly from their groups' means (a group all of whose launches missed their
    // measurement, which a slow machine can cause, has none).
    let gemv = row(&roofline, "_Z13gemv2N_kernel");
    assert_eq!(
        (&gemv["calls"], &gemv["flops_source"]),
        (&Value::from(37), &Value::from("model"))
    );
    assert!(gemv["mfu_pct"].as_f64().unwrap() > 0.0, "{gemv:#}");
    assert!(
        roofline.iter().any(|r| r["bytes"].is_f64()
            && r["bytes_launches"].as_u64().unwrap() < r["calls"].as_u64().unwrap()),
        "no row took bytes from a group's mean: {roofline:#?}"
    );
}

/// Decode as one CUDA graph replayed: the graph kernels' GEMM shapes come through
/// `graph_node_clones` and `graph_nodes`. With default settings the first graph launch
/// hands the GPU over to PM sampling: where the windows of these 4 decode steps
/// determine a class's bytes, the report's row has them (`sampled` or `mixed`) and the
/// SQL's is NULL.
#[test]
fn the_documented_sql_follows_graph_kernels_to_their_gemm_calls() {
    let scratch = Scratch::new("duckdb-sql-graph");
    let out = record(&scratch, &[], &["--graph-decode"], &[]);
    let (v, roofline, extra) = check(
        &out,
        &["SELECT count(*) AS n FROM kernels WHERE graph_node_id <> 0"],
    );
    assert_rows_equal(
        "roofline",
        &roofline,
        v["roofline"]["kernels"]
            .as_array()
            .expect("roofline kernels"),
        ROOFLINE_LEFT_OUT,
    );
    assert!(extra[0][0]["n"].as_u64().unwrap() > 0, "{extra:?}");
    let gemv = row(&roofline, "_Z13gemv2N_kernel");
    assert_eq!(
        (
            &gemv["calls"],
            &gemv["gemm_launches"],
            &gemv["flops_source"]
        ),
        (&Value::from(37), &Value::from(37), &Value::from("model"))
    );
}

/// Counters and GEMM hooks off: the session has no `gemms` or `kernel_counters` file
/// (nor graph tables); the views read as empty, the kernel table is the report's and
/// the roofline rows have neither FLOPs nor bytes (the report has no roofline).
#[test]
fn the_documented_sql_reads_a_session_without_gemms_or_counters() {
    let scratch = Scratch::new("duckdb-sql-bare");
    let out = record(
        &scratch,
        &[],
        &[],
        &[("GPUPROF_COUNTERS", "off"), ("GPUPROF_GEMM", "off")],
    );
    let files: BTreeSet<String> = std::fs::read_dir(out.join("parts/00000001"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for absent in [
        "gemms.parquet",
        "kernel_counters.parquet",
        "graph_nodes.parquet",
    ] {
        assert!(!files.contains(absent), "{files:?}");
    }
    let (v, roofline, _) = check(&out, &[]);
    assert!(v.get("roofline").is_none(), "{v:#}");
    assert_eq!(roofline.len(), v["kernels"].as_array().unwrap().len());
    for (r, k) in roofline.iter().zip(v["kernels"].as_array().unwrap()) {
        assert_eq!(
            (&r["mangled"], &r["calls"], &r["gpu_ns"]),
            (&k["mangled"], &k["calls"], &k["total_ns"])
        );
        for f in ["model_flops", "bytes", "mbu_pct", "mfu_pct", "flops_source"] {
            assert_eq!(r[f], Value::Null, "{f}: {r:#}");
        }
        assert_eq!(r["gpu"], "NVIDIA H100 80GB HBM3");
        assert_eq!(r["dram_bytes_per_s"], 3.35e12);
    }
}
