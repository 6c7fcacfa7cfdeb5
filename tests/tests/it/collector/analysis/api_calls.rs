//! CPU time in the CUDA calls traced one by one (`analysis/api_calls.rs`), on the
//! README's workload recorded on the simulated H100: what the workload calls, and the
//! report's sums per thread and per NVTX range against DuckDB's over the session's
//! own tables (`api_calls`, `markers`, `strings`).
//!
//! The workload (tests/workloads/cudarc-llm) copies a 16 KiB pattern to the GPU and
//! back, then reads each of its 4 decode steps' tokens back (2 bytes) and synchronises
//! the stream, and synchronises once more at the end.

use std::collections::BTreeMap;
use std::time::Duration;

use gpuprof_tests::{
    artifact, duckdb, gpuprof_command, record_on_sim, report_json, Scratch, TimedChild,
};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(240);
const DECODE_STEPS: u64 = 4;

/// The report's `api_calls.by_thread` rows of calls traced one by one as function
/// -> (calls, failed, total_ns, max_ns, bytes), every row being of one thread.
fn by_function(v: &Value) -> BTreeMap<String, [u64; 5]> {
    let rows: Vec<&Value> = v["api_calls"]["by_thread"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["traced"] == true && r["class"] != "launch")
        .collect();
    let threads: std::collections::BTreeSet<u64> = rows
        .iter()
        .map(|r| r["thread_id"].as_u64().unwrap())
        .collect();
    assert_eq!(threads.len(), 1, "one thread: {rows:?}");
    rows.iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap();
            (
                r["function"].as_str().unwrap().to_string(),
                [
                    n("calls"),
                    n("failed"),
                    n("total_ns"),
                    n("max_ns"),
                    n("bytes"),
                ],
            )
        })
        .collect()
}

/// The report's launch rows (`api_calls.by_thread`, class "launch") as function ->
/// (calls, total_ns); their failures are not recorded (null).
fn launch_calls(v: &Value) -> BTreeMap<String, Vec<u64>> {
    v["api_calls"]["by_thread"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["class"] == "launch")
        .map(|r| {
            assert!(r["failed"].is_null() && r["traced"] == true, "{r}");
            let n = |k: &str| r[k].as_u64().unwrap();
            (
                r["function"].as_str().unwrap().to_string(),
                vec![n("calls"), n("total_ns")],
            )
        })
        .collect()
}

fn sql_rows(rows: &[Value], key: &[&str], values: &[&str]) -> BTreeMap<String, Vec<u64>> {
    rows.iter()
        .map(|r| {
            let k: Vec<String> = key
                .iter()
                .map(|k| r[*k].as_str().unwrap().to_string())
                .collect();
            let v = values.iter().map(|f| r[*f].as_u64().unwrap()).collect();
            (k.join(" / "), v)
        })
        .collect()
}

#[test]
fn blocked_time_per_thread_and_range_is_the_sum_of_the_traced_calls() {
    let scratch = Scratch::new("api-calls");
    let out = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&out)
        .arg("--")
        .arg(artifact("cudarc-llm"));
    let rec = TimedChild::spawn(cmd, LIMIT).wait();
    assert_eq!(rec.status.code(), Some(0), "{}", rec.stderr);
    let v = report_json(&out);
    let calls = by_function(&v);

    // What the workload calls, exactly: the round trip, a token read back and a
    // synchronize per decode step (through the CUDA runtime, as PyTorch's `.item()`),
    // one synchronize at the end; as many frees as allocations, and a set call per
    // memset the GPU ran, with its bytes. The driver calls the runtime makes inside
    // its own are not recorded: each call once, as the program made it.
    let transfers = |kind: &str| -> (u64, u64) {
        let t = v["transfers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["kind"] == kind)
            .unwrap();
        (t["count"].as_u64().unwrap(), t["bytes"].as_u64().unwrap())
    };
    let c = |f: &str| calls[f];
    assert_eq!(c("cuMemcpyHtoDAsync_v2")[0], 1);
    assert_eq!(c("cuMemcpyHtoDAsync_v2")[4], 16384);
    assert_eq!(c("cuMemcpyDtoHAsync_v2")[0], 1);
    assert_eq!(c("cuMemcpyDtoHAsync_v2")[4], 16384);
    assert_eq!(c("cudaMemcpyAsync")[0], DECODE_STEPS);
    assert_eq!(c("cudaMemcpyAsync")[4], 2 * DECODE_STEPS);
    assert_eq!(
        transfers("DtoH"),
        (1 + DECODE_STEPS, 16384 + 2 * DECODE_STEPS)
    );
    assert_eq!(c("cuStreamSynchronize")[0], 1);
    assert_eq!(c("cudaStreamSynchronize")[0], DECODE_STEPS);
    assert_eq!(c("cuMemAllocAsync")[0], c("cuMemFreeAsync")[0]);
    assert_eq!(
        (c("cuMemsetD8Async")[0], c("cuMemsetD8Async")[4]),
        transfers("memset")
    );
    assert!(
        calls.values().all(|t| t[1] == 0),
        "no call failed: {calls:?}"
    );
    assert_eq!(calls.len(), 8, "{calls:?}");

    // The same sums from the session's tables, with DuckDB.
    let dir = out.join("parts").to_str().unwrap().replace('\'', "''");
    let setup = format!(
        "CREATE VIEW calls AS SELECT c.*, s.text AS function, c.end_ns - c.start_ns AS ns \
           FROM read_parquet('{dir}/*/api_calls.parquet') c \
           JOIN read_parquet('{dir}/*/strings.parquet') s ON s.pid = c.pid AND s.id = c.name; \
         CREATE VIEW markers AS SELECT m.*, s.text AS range \
           FROM read_parquet('{dir}/*/markers.parquet') m \
           LEFT JOIN read_parquet('{dir}/*/strings.parquet') s ON s.pid = m.pid AND s.id = m.name; \
         CREATE VIEW ranges AS SELECT a.pid, a.thread_id, a.range, a.timestamp_ns AS start_ns, \
           b.timestamp_ns AS end_ns FROM markers a JOIN markers b \
           ON a.pid = b.pid AND a.id = b.id AND (a.flags & {start}) <> 0 AND (b.flags & {end}) <> 0",
        start = wire::marker_flags::START,
        end = wire::marker_flags::END,
    );
    let per_function = "SELECT function, count(*)::UBIGINT AS calls, \
        count(*) FILTER (NOT ok)::UBIGINT AS failed, sum(ns)::UBIGINT AS total_ns, \
        max(ns)::UBIGINT AS max_ns, sum(bytes)::UBIGINT AS bytes FROM calls GROUP BY function";
    // Launch calls are placed as the other calls are, named by their callback ids.
    let per_range = format!(
        "SELECT r.range, c.function, count(*)::UBIGINT AS calls, \
           sum(c.ns)::UBIGINT AS total_ns \
         FROM (SELECT pid, thread_id, start_ns, ns, function FROM calls UNION ALL \
               SELECT pid, thread_id, start_ns, end_ns - start_ns AS ns, \
                 CASE WHEN runtime AND cbid = 211 THEN 'cudaLaunchKernel' \
                      WHEN NOT runtime AND cbid = 307 THEN 'cuLaunchKernel' END AS function \
               FROM read_parquet('{dir}/*/launches.parquet')) c \
         JOIN ranges r ON c.pid = r.pid AND c.thread_id = r.thread_id \
           AND c.start_ns >= r.start_ns AND c.start_ns < r.end_ns \
         GROUP BY r.range, c.function"
    );
    let walls =
        "SELECT range, sum(end_ns - start_ns)::UBIGINT AS wall_ns FROM ranges GROUP BY range";
    let counted = format!(
        "SELECT s.text AS function, sum(t.calls)::UBIGINT AS calls, \
           sum(t.total_ns)::UBIGINT AS total_ns \
         FROM read_parquet('{dir}/*/api_tallies.parquet') t \
         JOIN read_parquet('{dir}/*/strings.parquet') s ON s.pid = t.pid AND s.id = t.name \
         GROUP BY s.text"
    );
    let launches = format!(
        "SELECT runtime, cbid, count(*)::UBIGINT AS calls, \
           sum(end_ns - start_ns)::UBIGINT AS total_ns \
         FROM read_parquet('{dir}/*/launches.parquet') GROUP BY runtime, cbid"
    );
    let got = duckdb(
        &[&setup],
        &[per_function, &per_range, walls, &counted, &launches],
    );

    let sql = sql_rows(
        &got[0],
        &["function"],
        &["calls", "failed", "total_ns", "max_ns", "bytes"],
    );
    let report: BTreeMap<String, Vec<u64>> =
        calls.iter().map(|(k, v)| (k.clone(), v.to_vec())).collect();
    assert_eq!(report, sql);

    // Per range: every call placed in the range its thread had open at its entry.
    let sql = sql_rows(&got[1], &["range", "function"], &["calls", "total_ns"]);
    let ranges = v["api_calls"]["by_range"].as_array().unwrap();
    let report: BTreeMap<String, Vec<u64>> = ranges
        .iter()
        .map(|r| {
            (
                format!(
                    "{} / {}",
                    r["range"].as_str().unwrap(),
                    r["function"].as_str().unwrap()
                ),
                vec![
                    r["calls"].as_u64().unwrap(),
                    r["total_ns"].as_u64().unwrap(),
                ],
            )
        })
        .collect();
    assert_eq!(report, sql);
    for key in [
        "decode / cudaStreamSynchronize",
        "decode / cudaLaunchKernel",
        "prefill / cuLaunchKernel",
    ] {
        assert!(report.contains_key(key), "{key}: {report:?}");
    }
    // Each row's range wall time is the NVTX table's, and its share of it exact.
    let walls = sql_rows(&got[2], &["range"], &["wall_ns"]);
    for r in ranges {
        let wall = walls[r["range"].as_str().unwrap()][0];
        assert_eq!(r["range_wall_ns"], json!(wall), "{r}");
        let total = r["total_ns"].as_u64().unwrap();
        let pct = ((total as u128 * 10_000 + wall as u128 / 2) / wall as u128) as f64 / 100.0;
        assert_eq!(r["range_wall_pct"], json!(pct), "{r}");
    }

    // The calls not traced one by one are counted: per function, calls and time as
    // the session's tallies sum them, and no counted function is a traced one.
    let sql = sql_rows(&got[3], &["function"], &["calls", "total_ns"]);
    let counted: BTreeMap<String, Vec<u64>> = v["api_calls"]["by_thread"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["traced"] == false)
        .map(|r| {
            for k in ["failed", "max_ns", "bytes"] {
                assert!(r[k].is_null(), "{r}");
            }
            let f = r["function"].as_str().unwrap().to_string();
            (
                f,
                vec![
                    r["calls"].as_u64().unwrap(),
                    r["total_ns"].as_u64().unwrap(),
                ],
            )
        })
        .collect();
    assert_eq!(counted, sql);
    // The workload's context, module and stream set-up, at least, and its kernels
    // loaded through the runtime; not the driver calls the runtime made for those.
    for f in [
        "cuModuleLoadData",
        "cuModuleGetFunction",
        "cuCtxGetCurrent",
        "cudaLibraryLoadData",
        "cudaLibraryGetKernel",
    ] {
        assert!(counted.contains_key(f), "{f}: {counted:?}");
    }
    for f in ["cuLibraryLoadData", "cuLibraryGetKernel"] {
        assert!(!counted.contains_key(f), "{f}: {counted:?}");
    }

    // Launch calls, per function as the session's launches sum them: the workload's
    // own kernels through the runtime (cudaLaunchKernel, runtime cbid 211), cuBLAS's
    // through the driver (cuLaunchKernel, 307).
    let launches = launch_calls(&v);
    let name = |r: &Value| match (r["runtime"].as_bool().unwrap(), r["cbid"].as_u64().unwrap()) {
        (true, 211) => "cudaLaunchKernel",
        (false, 307) => "cuLaunchKernel",
        other => panic!("a launch call {other:?}"),
    };
    let sql: BTreeMap<String, Vec<u64>> = got[4]
        .iter()
        .map(|r| {
            (
                name(r).to_string(),
                vec![
                    r["calls"].as_u64().unwrap(),
                    r["total_ns"].as_u64().unwrap(),
                ],
            )
        })
        .collect();
    assert_eq!(launches, sql);
    assert_eq!(
        (
            launches["cudaLaunchKernel"][0],
            launches["cuLaunchKernel"][0]
        ),
        (60, 47)
    );
    assert!(
        counted.keys().all(|f| !calls.contains_key(f)),
        "{counted:?}"
    );

    // The text report: the thread's blocked time is its synchronize calls' sum.
    let o = gpuprof_command().arg("report").arg(&out).output().unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("CPU time in CUDA calls by thread"))
        .take(3)
        .collect();
    let sum = |f: &[&str]| f.iter().map(|f| c(f)[2]).sum::<u64>();
    // The counted calls are all of class "other" here (set-up and queries).
    let other: u64 = counted.values().map(|t| t[1]).sum();
    let all: u64 = calls.values().map(|t| t[0]).sum::<u64>()
        + counted.values().map(|t| t[0]).sum::<u64>()
        + launches.values().map(|t| t[0]).sum::<u64>();
    let want = [
        ("launch", launches.values().map(|t| t[1]).sum()),
        (
            "synchronize",
            sum(&["cuStreamSynchronize", "cudaStreamSynchronize"]),
        ),
        (
            "copy",
            sum(&[
                "cuMemcpyHtoDAsync_v2",
                "cuMemcpyDtoHAsync_v2",
                "cudaMemcpyAsync",
            ]),
        ),
        ("set", sum(&["cuMemsetD8Async"])),
        ("alloc/free", sum(&["cuMemAllocAsync", "cuMemFreeAsync"])),
        ("other", other),
    ];
    // Each column in the unit its value needs: µs under a second, then ms, then s.
    let shown = |ns: u64| -> (&'static str, String) {
        let (unit, v) = match ns {
            0..1_000_000_000 => ("µs", ns),
            1_000_000_000..1_000_000_000_000 => ("ms", ns / 1000),
            _ => ("s", ns / 1_000_000),
        };
        (unit, format!("{}.{:03}", v / 1000, v % 1000))
    };
    let mut headers = vec!["pid".to_string(), "thread".to_string()];
    let mut values = Vec::new();
    for (class, ns) in want {
        let (unit, v) = shown(ns);
        headers.extend([class.to_string(), unit.to_string()]);
        values.push(v);
    }
    headers.push("calls".to_string());
    values.push(all.to_string());
    assert_eq!(
        section[1].split_whitespace().collect::<Vec<_>>(),
        headers,
        "{text}"
    );
    let row: Vec<&str> = section[2].split_whitespace().collect();
    assert_eq!(row[2..], values, "{text}");
}

/// `GPUPROF_API=off` traces and counts no call but launches: the report has no
/// section; `all` traces every driver call, so none is only counted.
#[test]
fn gpuprof_api_off_and_all() {
    for (setting, expect_some) in [("off", false), ("all", true)] {
        let scratch = Scratch::new("api-calls-setting");
        let out = scratch.join("out");
        let mut cmd = record_on_sim("13.4");
        cmd.env("GPUPROF_API", setting)
            .arg("-o")
            .arg(&out)
            .arg("--")
            .arg(artifact("cudarc-llm"))
            .args(["--layers", "1", "--decode-steps", "1"]);
        let rec = TimedChild::spawn(cmd, LIMIT).wait();
        assert_eq!(rec.status.code(), Some(0), "{}", rec.stderr);
        let v = report_json(&out);
        if !expect_some {
            assert!(v.get("api_calls").is_none(), "{setting}: {v:#}");
            continue;
        }
        // Every call traced one by one: none is only counted.
        let rows = v["api_calls"]["by_thread"].as_array().unwrap();
        assert!(rows.iter().all(|r| r["traced"] == true), "{rows:?}");
        let calls = by_function(&v);
        // Every driver call: also those the default leaves out (context and module
        // calls), never a launch (those are launch records).
        for f in ["cuCtxGetCurrent", "cuStreamSynchronize", "cuMemAllocAsync"] {
            assert!(calls.contains_key(f), "{setting}: {f} in {calls:?}");
        }
        assert!(!calls.contains_key("cuLaunchKernel"), "{calls:?}");
    }
}
