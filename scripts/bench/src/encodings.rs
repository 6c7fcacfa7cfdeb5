//! What each encoding choice of the session is worth: every table file of a session
//! decoded and encoded again, with the production settings
//! (`store::writer::properties`) and with each alternative, in bytes per kernel, with
//! the time the encoding took.
//!
//!   gpuprof-bench encodings DIR

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{Field, Schema};
use gpuprof_collector::store::writer::{delta_encoded, properties};
use gpuprof_collector::store::PARTS_DIR;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{WriterProperties, WriterPropertiesBuilder};
use parquet::schema::types::ColumnPath;

/// The columns of all tables the production settings store as deltas.
fn delta_columns() -> Vec<ColumnPath> {
    let mut v: Vec<ColumnPath> = gpuprof_collector::store::tables::TABLES
        .iter()
        .flat_map(|t| t.columns.iter())
        .filter(|(n, _)| delta_encoded(n))
        .map(|(n, _)| ColumnPath::from(*n))
        .collect();
    v.sort_by_key(|p| p.string());
    v.dedup();
    v
}

fn counter_values() -> ColumnPath {
    ColumnPath::new(vec!["value".into(), "list".into(), "item".into()])
}

/// An alternative: its name, the settings, and whether `end_ns` is stored as
/// `duration_ns` (end - start).
struct Alternative {
    name: &'static str,
    props: WriterProperties,
    durations: bool,
}

fn alternatives() -> Vec<Alternative> {
    let prod = || properties().into_builder();
    let zstd = |level: i32| {
        prod()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(level).expect("a zstd level"),
            ))
            .build()
    };
    let each_delta =
        |f: &dyn Fn(WriterPropertiesBuilder, ColumnPath) -> WriterPropertiesBuilder| {
            delta_columns().into_iter().fold(prod(), f).build()
        };
    let alt = |name, props| Alternative {
        name,
        props,
        durations: false,
    };
    vec![
        alt("production", properties()),
        alt("zstd level 1", zstd(1)),
        alt("zstd level 9", zstd(9)),
        alt("zstd level 19", zstd(19)),
        alt(
            "dictionaries in place of deltas",
            each_delta(&|b, p| {
                b.set_column_dictionary_enabled(p.clone(), true)
                    .set_column_encoding(p, Encoding::PLAIN)
            }),
        ),
        alt(
            "byte-stream-split in place of deltas",
            each_delta(&|b, p| b.set_column_encoding(p, Encoding::BYTE_STREAM_SPLIT)),
        ),
        alt(
            "counter values with a dictionary",
            prod()
                .set_column_dictionary_enabled(counter_values(), true)
                .build(),
        ),
        alt(
            "counter values byte-stream-split",
            prod()
                .set_column_encoding(counter_values(), Encoding::BYTE_STREAM_SPLIT)
                .build(),
        ),
        alt(
            "pages of 20,000 rows",
            prod().set_data_page_row_count_limit(20_000).build(),
        ),
        Alternative {
            name: "duration_ns in place of end_ns",
            props: prod()
                .set_column_dictionary_enabled(ColumnPath::from("duration_ns"), false)
                .set_column_encoding(
                    ColumnPath::from("duration_ns"),
                    Encoding::DELTA_BINARY_PACKED,
                )
                .build(),
            durations: true,
        },
    ]
}

/// `b` with `end_ns` replaced by `duration_ns`, when it has both.
fn with_durations(b: &RecordBatch) -> Result<RecordBatch> {
    let s = b.schema();
    let (Ok(si), Ok(ei)) = (s.index_of("start_ns"), s.index_of("end_ns")) else {
        return Ok(b.clone());
    };
    let start = b.column(si).as_primitive::<UInt64Type>();
    let end = b.column(ei).as_primitive::<UInt64Type>();
    let d: UInt64Array = start
        .values()
        .iter()
        .zip(end.values())
        .map(|(s, e)| e.wrapping_sub(*s))
        .collect();
    let mut cols: Vec<ArrayRef> = b.columns().to_vec();
    cols[ei] = Arc::new(d);
    let mut fields: Vec<Field> = s.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields[ei] = Field::new("duration_ns", fields[ei].data_type().clone(), false);
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

fn encode(batches: &[RecordBatch], props: &WriterProperties) -> Result<u64> {
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batches[0].schema(), Some(props.clone()))?;
    for b in batches {
        w.write(b)?;
    }
    w.close()?;
    Ok(out.len() as u64)
}

pub fn run(args: &[String]) -> Result<()> {
    let dir = Path::new(args.first().context("usage: gpuprof-bench encodings DIR")?);
    let alts = alternatives();
    // Bytes per alternative and table.
    let mut bytes: Vec<BTreeMap<String, u64>> = alts.iter().map(|_| BTreeMap::new()).collect();
    // Seconds spent encoding, per alternative.
    let mut seconds = vec![0f64; alts.len()];
    let mut kernels = 0u64;
    let parts = dir.join(PARTS_DIR);
    for part in std::fs::read_dir(&parts).with_context(|| format!("{}", parts.display()))? {
        let part = part?.path();
        for file in std::fs::read_dir(&part)? {
            let file = file?.path();
            if file.extension().is_none_or(|e| e != "parquet") {
                continue;
            }
            let table = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let data = bytes::Bytes::from(std::fs::read(&file)?);
            let batches: Vec<RecordBatch> = ParquetRecordBatchReaderBuilder::try_new(data)
                .and_then(|b| b.with_batch_size(1 << 20).build())
                .with_context(|| format!("{}", file.display()))?
                .collect::<Result<_, _>>()?;
            if table == "kernels" {
                kernels += batches.iter().map(|b| b.num_rows() as u64).sum::<u64>();
            }
            let durations: Vec<RecordBatch> =
                batches.iter().map(with_durations).collect::<Result<_>>()?;
            for ((alt, sum), secs) in alts.iter().zip(&mut bytes).zip(&mut seconds) {
                let b = if alt.durations { &durations } else { &batches };
                let t = std::time::Instant::now();
                *sum.entry(table.clone()).or_default() += encode(b, &alt.props)?;
                *secs += t.elapsed().as_secs_f64();
            }
        }
    }
    let k = kernels.max(1) as f64;
    println!(
        "encodings: {} ({kernels} kernels), table files only, bytes per kernel",
        dir.display()
    );
    let shown = ["kernels", "launches", "kernel_counters", "gemms", "markers"];
    print!("  {:<38} {:>8} {:>7}", "settings", "encode s", "total");
    for t in shown {
        print!(" {t:>15}");
    }
    println!(" {:>15}", "other");
    for ((alt, sum), secs) in alts.iter().zip(&bytes).zip(&seconds) {
        let total: u64 = sum.values().sum();
        print!("  {:<38} {secs:>8.2} {:>7.2}", alt.name, total as f64 / k);
        let mut rest = total;
        for t in shown {
            let b = sum.get(t).copied().unwrap_or(0);
            rest -= b;
            print!(" {:>15.2}", b as f64 / k);
        }
        println!(" {:>15.2}", rest as f64 / k);
    }
    Ok(())
}
