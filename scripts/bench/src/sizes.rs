//! What a session costs on disk, per kernel: every sealed part's files summed per
//! table, and each table's columns as Parquet stores them (compressed bytes of the
//! column chunks, read from the files' own metadata), over the number of kernel rows.
//!
//!   gpuprof-bench sizes DIR [--columns]

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use gpuprof_collector::store::manifest::Manifest;
use gpuprof_collector::store::{MANIFEST_FILE, PARTS_DIR};
use parquet::file::reader::{FileReader, SerializedFileReader};

/// One table's bytes over a whole session.
#[derive(Debug, Default, Clone)]
pub struct TableBytes {
    pub rows: u64,
    /// Bytes of its files.
    pub bytes: u64,
    /// Compressed bytes per column chunk, by column path, in schema order.
    pub columns: Vec<(String, u64)>,
}

/// A session's bytes, by table, and its kernels.
#[derive(Debug, Default)]
pub struct SessionBytes {
    pub parts: u64,
    /// Every file under `parts/`, manifests included.
    pub total: u64,
    pub manifests: u64,
    pub kernels: u64,
    pub tables: BTreeMap<String, TableBytes>,
}

impl SessionBytes {
    pub fn per_kernel(&self) -> f64 {
        self.total as f64 / self.kernels.max(1) as f64
    }
}

/// Measures the session in `dir` from its files and manifests.
pub fn measure(dir: &Path) -> Result<SessionBytes> {
    let parts = dir.join(PARTS_DIR);
    let mut out = SessionBytes::default();
    let mut entries: Vec<_> = std::fs::read_dir(&parts)
        .with_context(|| format!("{}: not a session", parts.display()))?
        .collect::<std::io::Result<_>>()?;
    entries.sort_by_key(|e| e.file_name());
    for part in entries {
        out.parts += 1;
        let path = part.path();
        let text = std::fs::read(path.join(MANIFEST_FILE))
            .with_context(|| format!("{}", path.join(MANIFEST_FILE).display()))?;
        out.manifests += text.len() as u64;
        out.total += text.len() as u64;
        let manifest = Manifest::parse(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.join(MANIFEST_FILE).display()))?;
        for f in &manifest.files {
            let bytes = std::fs::read(path.join(&f.file))
                .with_context(|| format!("{}", path.join(&f.file).display()))?;
            out.total += bytes.len() as u64;
            if f.table == "kernels" {
                out.kernels += f.rows;
            }
            let t = out.tables.entry(f.table.clone()).or_default();
            t.rows += f.rows;
            t.bytes += bytes.len() as u64;
            let reader = SerializedFileReader::new(bytes::Bytes::from(bytes))
                .with_context(|| format!("{}", path.join(&f.file).display()))?;
            for rg in reader.metadata().row_groups() {
                for c in rg.columns() {
                    let name = c.column_path().string();
                    let size = c.compressed_size().max(0) as u64;
                    match t.columns.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, s)) => *s += size,
                        None => t.columns.push((name, size)),
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Prints `s` as a table: bytes per kernel per table, and with `columns` each
/// table's columns.
pub fn print(s: &SessionBytes, columns: bool) {
    let k = s.kernels.max(1) as f64;
    println!(
        "  {} bytes in {} parts, {} kernels: {:.2} bytes per kernel",
        s.total,
        s.parts,
        s.kernels,
        s.per_kernel()
    );
    println!(
        "    {:<20} {:>10} {:>12} {:>10}",
        "table", "rows", "bytes", "B/kernel"
    );
    let mut tables: Vec<_> = s.tables.iter().collect();
    tables.sort_by_key(|(_, t)| std::cmp::Reverse(t.bytes));
    for (name, t) in tables {
        println!(
            "    {name:<20} {:>10} {:>12} {:>10.2}",
            t.rows,
            t.bytes,
            t.bytes as f64 / k
        );
        if columns {
            let mut cols = t.columns.clone();
            cols.sort_by_key(|(_, b)| std::cmp::Reverse(*b));
            for (c, b) in cols {
                println!("      {c:<26} {b:>12} {:>10.2}", b as f64 / k);
            }
        }
    }
    println!(
        "    {:<20} {:>10} {:>12} {:>10.2}",
        "(manifests)",
        s.parts,
        s.manifests,
        s.manifests as f64 / k
    );
}

pub fn run(args: &[String]) -> Result<()> {
    let dir = args
        .first()
        .filter(|a| !a.starts_with("--"))
        .context("usage: gpuprof-bench sizes DIR [--columns]")?;
    let s = measure(Path::new(dir))?;
    println!("sizes: {dir}");
    print(&s, args.iter().any(|a| a == "--columns"));
    Ok(())
}
