//! The report as people read it, on the demo workload recorded on the simulated H100:
//! the text fits 120 columns and names kernels by their short names; every CSV table
//! of `report --format csv -o DIR` is read by pandas (`tests/pandas/read_tables.py`)
//! with the columns and rows of the CSV stream and the values of the JSON report.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use gpuprof_tests::{
    artifact, gpuprof_command, record_on_sim, venv_python_of, Scratch, TimedChild,
};
use serde_json::Value;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn report(dir: &Path, args: &[&str]) -> String {
    let out = gpuprof_command()
        .arg("report")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// The demo workload recorded on the simulated H100 into `scratch`/out.
fn recorded_demo(scratch: &Scratch) -> std::path::PathBuf {
    let session = scratch.join("out");
    let mut cmd = record_on_sim("13.4");
    cmd.arg("-o")
        .arg(&session)
        .arg("--")
        .arg(artifact("cudarc-llm"));
    let rec = TimedChild::spawn(cmd, Duration::from_secs(180)).wait();
    assert_eq!(rec.status.code(), Some(0), "{}", rec.stderr);
    session
}

/// `gpuprof report SESSION --format csv -o OUT`.
fn csv_to(session: &Path, out: &Path) -> std::process::Output {
    gpuprof_command()
        .arg("report")
        .arg(session)
        .args(["--format", "csv", "-o"])
        .arg(out)
        .output()
        .unwrap()
}

/// The sections of the CSV stream: name -> (header, data rows).
fn csv_sections(csv: &str) -> BTreeMap<String, (Vec<String>, usize)> {
    let mut out = BTreeMap::new();
    for section in csv.split("\n\n") {
        let mut lines = section.lines();
        let name = lines
            .next()
            .unwrap()
            .strip_prefix("# ")
            .unwrap()
            .to_string();
        let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
        out.insert(name, (header, lines.count()));
    }
    out
}

#[test]
fn the_demo_report_fits_120_columns_and_pandas_reads_every_csv_table() {
    let scratch = Scratch::new("readable");
    let session = recorded_demo(&scratch);

    let json: Value = serde_json::from_str(&report(&session, &["--format", "json"])).unwrap();
    let kernels = json["kernels"].as_array().unwrap();
    assert_eq!(json["kernel_count"], 107);

    // The text: 120 columns, every kernel by its short name.
    let table = report(&session, &[]);
    for line in table.lines() {
        assert!(
            line.chars().count() <= 120,
            "{} columns: {line}\n{table}",
            line.chars().count()
        );
    }
    for k in kernels {
        let short = k["short_name"].as_str().unwrap();
        let name = k["name"].as_str().unwrap();
        assert!(!short.contains('('), "{short}");
        if short.chars().count() <= 24 {
            assert!(table.contains(&format!("  {short}\n")), "{short}\n{table}");
        }
        if name.chars().count() > 120 {
            assert!(!table.contains(name), "{name}");
        }
    }
    assert!(table.contains("  gemv2N_kernel<…>\n"), "{table}");
    // A kernel with several launch configurations: a row per configuration under it.
    let several = kernels
        .iter()
        .find(|k| k["configs"].as_array().unwrap().len() > 1)
        .expect("the demo launches a kernel with several configurations");
    let n = several["configs"].as_array().unwrap().len();
    // "N" under grid and "configs" under block.
    let count = n.to_string();
    assert!(
        table.lines().any(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.windows(2).any(|w| w == [count.as_str(), "configs"])
        }),
        "{n} configs\n{table}"
    );
    let config_calls: u64 = several["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(config_calls, several["calls"].as_u64().unwrap());

    // CSV: one file per table, each read by pandas as the stream's section.
    let stream = csv_sections(&report(&session, &["--format", "csv"]));
    let dir = scratch.join("csv");
    let out = csv_to(&session, &dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        format!(
            "gpuprof: {} CSV tables written to {}\n",
            stream.len(),
            dir.display()
        )
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("pandas/read_tables.py");
    let py = Command::new(venv_python_of("pandas"))
        .arg(&script)
        .arg(&dir)
        .output()
        .unwrap();
    assert!(py.status.success(), "{}", text(&py.stderr));
    let seen: Value = serde_json::from_slice(&py.stdout).unwrap();
    let seen = seen.as_object().unwrap();
    assert_eq!(
        seen.keys().collect::<Vec<_>>(),
        stream.keys().collect::<Vec<_>>(),
        "the files pandas read are the stream's tables"
    );
    for (name, (header, rows)) in &stream {
        let t = &seen[name];
        let columns: Vec<String> = t["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        assert_eq!(&columns, header, "{name}: columns");
        // A quoted field may hold a line break; none of the demo's do.
        assert_eq!(t["rows"].as_u64().unwrap() as usize, *rows, "{name}: rows");
    }
    let k = &seen["kernels"];
    assert_eq!(k["total_ns"], json["kernel_ns"]);
    for kernel in kernels {
        let m = kernel["mangled"].as_str().unwrap();
        assert_eq!(k["median_ns"][m], kernel["median_ns"], "median of {m}");
        assert_eq!(k["stddev_ns"][m], kernel["stddev_ns"], "stddev of {m}");
    }
    assert_eq!(seen["kernel_configs"]["calls"], json["kernel_count"]);

    // Written again: the files are replaced. A file where the directory should be:
    // an error naming it.
    let again = csv_to(&session, &dir);
    assert!(again.status.success(), "{}", text(&again.stderr));
    let file = scratch.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let bad = csv_to(&session, &file);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    assert!(
        text(&bad.stderr).contains(&format!(
            "{} is not a directory: with --format csv, -o names a directory",
            file.display()
        )),
        "{}",
        text(&bad.stderr)
    );
}

/// `report --format csv -o DIR --peaks F` and the CSV stream with the same peaks file
/// hold the same tables, byte for byte (the directory's counter % of peak once used
/// the built-in peaks); and the peaks file changes what depends on it.
#[test]
fn csv_files_and_the_csv_stream_agree_with_a_peaks_file() {
    let scratch = Scratch::new("readable-peaks");
    let session = recorded_demo(&scratch);
    let peaks = scratch.join("peaks.toml");
    std::fs::write(
        &peaks,
        "[[gpu]]\nname = \"NVIDIA H100 80GB HBM3\"\nbf16 = 500\ndram_tb_s = 2\n",
    )
    .unwrap();
    let peaks_arg = peaks.to_str().unwrap();
    let stream = report(&session, &["--format", "csv", "--peaks", peaks_arg]);
    let built_in = report(&session, &["--format", "csv"]);
    let dir = scratch.join("csv");
    let o = gpuprof_command()
        .arg("report")
        .arg(&session)
        .args(["--format", "csv", "--peaks", peaks_arg, "-o"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let tables = |csv: &str| -> BTreeMap<String, String> {
        csv.split("\n\n")
            .map(|section| {
                let (head, body) = section.split_once('\n').unwrap();
                (
                    head.strip_prefix("# ").unwrap().to_string(),
                    body.to_string(),
                )
            })
            .collect()
    };
    let streamed = tables(&stream);
    assert!(streamed.len() >= 8, "{:?}", streamed.keys());
    for (name, body) in &streamed {
        let file = std::fs::read_to_string(dir.join(format!("{name}.csv")))
            .unwrap_or_else(|e| panic!("{name}.csv: {e}"));
        // The stream's sections are split at their blank lines.
        assert_eq!(
            file.trim_end_matches('\n'),
            body.trim_end_matches('\n'),
            "{name}"
        );
    }
    let built_in = tables(&built_in);
    for name in ["counter_pct", "roofline_run"] {
        assert_ne!(
            streamed.get(name),
            built_in.get(name),
            "{name}: the peaks file changed nothing"
        );
    }
}
