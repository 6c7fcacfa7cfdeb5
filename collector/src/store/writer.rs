//! Writing a session: records are appended to per-table columns in memory and sealed
//! into a part when the part holds [`PartLimits::rows`] rows or is
//! [`PartLimits::age`] old, and at the end.
//!
//! Sealing a part: every non-empty table is encoded as one Parquet file (zstd) in
//! memory, the files are written into a new directory `.unsealed-<n>` of the session
//! directory (`O_EXCL | O_NOFOLLOW`, 0600) with the manifest last, each synced, and
//! the directory is renamed to `parts/<n>`. A part is therefore either whole under
//! `parts/` or not there; a collector killed mid-seal leaves an `.unsealed-<n>`
//! directory, which readers report as lost records.
//!
//! A full file system: when a part cannot be written, its directory is removed, its
//! records are counted per process as not saved ([`SealFailure`]) and the caller stops
//! sealing. The session directory holds a reserve file ([`RESERVE_BYTES`], written at
//! creation) that [`StoreWriter::release_reserve`] deletes to make room for one last
//! small part with the drop counts.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use wire::Record;

use super::columns::{Kind, RowWriter};
use super::device_samples::write_sample;
use super::index::{Index, IndexedPart, MAX_LOST, MAX_LOST_BYTES};

use super::layout::{part_dir_name, INDEX_FILE, PARTS_DIR, RESERVE_FILE, UNSEALED_PREFIX};
use super::manifest::{FileEntry, Manifest, FORMAT, VERSION};
use super::tables::{table_of, write_row, TableId, TABLES, TABLE_IDS};
use crate::store::device_samples::DeviceSample;
use crate::store::output_file;

/// Bytes kept aside in the session directory for the last part after the file system
/// filled.
pub const RESERVE_BYTES: usize = 64 << 10;

/// The most rows a part may hold (`record --part-rows` at most this): what a reader
/// believes of a part file, so that a crafted file claiming 10^8 rows is refused
/// before it is decoded rather than allocated.
pub const MAX_PART_ROWS: usize = 1 << 22;

/// When a part is sealed.
#[derive(Debug, Clone, Copy)]
pub struct PartLimits {
    /// Rows in all tables.
    pub rows: usize,
    /// Time since the part's first row.
    pub age: Duration,
}

impl Default for PartLimits {
    fn default() -> Self {
        PartLimits {
            rows: 256 << 10,
            age: Duration::from_secs(5),
        }
    }
}

/// What one process has in the part being filled, for the accounting of a part that
/// cannot be written.
#[derive(Debug, Default)]
struct Pending {
    /// Records other than `Dropped` and `End`.
    records: u64,
    /// Of those, kernels.
    kernels: u64,
    /// Its `Dropped` and `End` records, still owed to the session if the part is lost.
    owed: Vec<Record>,
}

/// What one process lost with a part that could not be written.
#[derive(Debug, Default)]
pub struct Lost {
    /// Records other than `Dropped` and `End`.
    pub records: u64,
    /// Of those, kernels.
    pub kernels: u64,
    /// Its `Dropped` and `End` records, owed to the session.
    pub owed: Vec<Record>,
}

/// A part that could not be written.
#[derive(Debug)]
pub struct SealFailure {
    pub error: std::io::Error,
    /// Whether the file system is full (no space, or over quota).
    pub full: bool,
    /// Per pid: what of it the lost part held.
    pub lost: BTreeMap<u32, Lost>,
}

pub struct StoreWriter {
    dir: PathBuf,
    limits: PartLimits,
    tables: Vec<Option<RowWriter>>,
    rows: usize,
    first_row: Option<Instant>,
    pending: BTreeMap<u32, Pending>,
    next_part: u64,
    /// The session's index as last written.
    index: Index,
    /// Losses beyond [`MAX_LOST`] noted ([`StoreWriter::note_loss`]).
    losses_beyond: u64,
    props: WriterProperties,
    bytes_written: u64,
}

/// Columns whose values grow row by row (timestamps, correlation ids, GEMM call
/// numbers, string and NVTX range ids): stored as deltas.
pub fn delta_encoded(name: &str) -> bool {
    name.ends_with("_ns") || matches!(name, "correlation_id" | "call" | "id")
}

/// How every table is encoded; the choices and the bytes per kernel they give are in
/// docs/ARCHITECTURE.md ("What a kernel costs on disk").
pub fn properties() -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).expect("level 3")))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_max_row_group_row_count(Some(1 << 20))
        // Pages end at the byte limit (1 MiB) only, not every 20,000 rows: nothing
        // reads a page alone, and fewer pages are fewer headers and longer zstd runs.
        .set_data_page_row_count_limit(1 << 20);
    for t in TABLES {
        for (name, kind) in t.columns {
            if delta_encoded(name) {
                let path = ColumnPath::from(*name);
                b = b
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
            }
            // Counter values are mostly distinct: a dictionary only adds its indices.
            let path = match kind {
                Kind::F64 => ColumnPath::from(*name),
                Kind::F64List => {
                    ColumnPath::new(vec![name.to_string(), "list".into(), "item".into()])
                }
                _ => continue,
            };
            b = b
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, Encoding::PLAIN);
        }
    }
    b.build()
}

/// The Arrow schema of table `id`.
pub fn schema(id: TableId) -> Arc<Schema> {
    let t = id.table();
    Arc::new(Schema::new(
        t.columns
            .iter()
            .map(|(name, kind)| Field::new(*name, kind.data_type(), false))
            .collect::<Vec<_>>(),
    ))
}

fn is_full(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

impl StoreWriter {
    /// Starts a session in `dir` (an empty directory of ours): makes `parts/` and the
    /// reserve file.
    pub fn create(dir: &Path, limits: PartLimits) -> std::io::Result<StoreWriter> {
        output_file::make_dir_new(&dir.join(PARTS_DIR))?;
        let mut reserve = output_file::create_new(&dir.join(RESERVE_FILE))?;
        reserve.write_all(&vec![0u8; RESERVE_BYTES])?;
        reserve.sync_all()?;
        let index = Index::default();
        index.write(dir)?;
        Ok(StoreWriter {
            dir: dir.to_path_buf(),
            limits,
            tables: TABLES.iter().map(|_| None).collect(),
            rows: 0,
            first_row: None,
            pending: BTreeMap::new(),
            next_part: 1,
            index,
            losses_beyond: 0,
            props: properties(),
            bytes_written: 0,
        })
    }

    /// Appends one record of process `pid`.
    pub fn push(&mut self, pid: u32, record: &Record) {
        self.push_all(pid, std::slice::from_ref(record));
    }

    /// [`StoreWriter::push`] of every record of `records`, all of process `pid` (a
    /// batch from its ring): its accounting is looked up once.
    pub fn push_all(&mut self, pid: u32, records: &[Record]) {
        if records.is_empty() {
            return;
        }
        self.rows += records.len();
        self.first_row.get_or_insert_with(Instant::now);
        let p = self.pending.entry(pid).or_default();
        for record in records {
            let id = table_of(record);
            let w =
                self.tables[id as usize].get_or_insert_with(|| RowWriter::new(&id.table().kinds()));
            write_row(w, pid, record);
            match record {
                Record::Dropped(_) | Record::End(_) => p.owed.push(record.clone()),
                Record::Kernel(_) => {
                    p.records += 1;
                    p.kernels += 1;
                }
                _ => p.records += 1,
            }
        }
    }

    /// Appends one NVML reading (the `device_samples` table).
    pub fn push_sample(&mut self, sample: &DeviceSample) {
        let id = TableId::DeviceSamples;
        let w = self.tables[id as usize].get_or_insert_with(|| RowWriter::new(&id.table().kinds()));
        write_sample(w, sample);
        self.rows += 1;
        self.first_row.get_or_insert_with(Instant::now);
    }

    /// Whether the part being filled should be sealed now.
    pub fn due(&self) -> bool {
        self.rows >= self.limits.rows
            || self
                .first_row
                .is_some_and(|t| t.elapsed() >= self.limits.age)
    }

    /// Bytes of the parts sealed so far (files and manifests).
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Parts sealed so far.
    pub fn parts(&self) -> u64 {
        self.next_part - 1
    }

    /// Removes what [`StoreWriter::create`] made, when no part was sealed.
    pub fn remove_unused(self) {
        if self.parts() == 0 {
            let _ = std::fs::remove_file(self.dir.join(RESERVE_FILE));
            let _ = std::fs::remove_file(self.dir.join(INDEX_FILE));
            let _ = std::fs::remove_dir(self.dir.join(PARTS_DIR));
        }
    }

    /// The session directory was renamed to `dir` (nothing is being written: parts
    /// are written whole between calls).
    pub fn moved_to(&mut self, dir: &Path) {
        self.dir = dir.to_path_buf();
    }

    /// Deletes the reserve file, making room for a last part.
    pub fn release_reserve(&mut self) {
        let _ = std::fs::remove_file(self.dir.join(RESERVE_FILE));
    }

    /// Notes a loss the collector could not count ([`Index::lost`]), written to the
    /// index with the next part or at [`StoreWriter::finish`]; at most
    /// [`MAX_LOST`] are kept, the rest counted in the last.
    pub fn note_loss(&mut self, what: String) {
        let lost = &mut self.index.lost;
        if lost.len() < MAX_LOST {
            let mut what = what;
            if what.len() > MAX_LOST_BYTES {
                let mut end = MAX_LOST_BYTES - 3;
                while !what.is_char_boundary(end) {
                    end -= 1;
                }
                what.truncate(end);
                what.push_str("...");
            }
            lost.push(what);
        } else {
            self.losses_beyond = self.losses_beyond.saturating_add(1);
            lost[MAX_LOST - 1] = format!("{} more losses like those above", self.losses_beyond + 1);
        }
    }

    /// The session is done (its last part sealed): the reserve file goes and the
    /// index says the session was finished.
    pub fn finish(&mut self) -> std::io::Result<()> {
        self.release_reserve();
        self.index.finished = true;
        self.index.write(&self.dir)
    }

    /// Seals what is buffered as the next part (nothing when nothing is).
    pub fn seal(&mut self) -> Result<(), SealFailure> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut files = Vec::new();
        let mut encoded = Vec::new();
        for &id in TABLE_IDS {
            let Some(w) = &mut self.tables[id as usize] else {
                continue;
            };
            if w.rows() == 0 {
                continue;
            }
            let rows = w.rows() as u64;
            let batch = RecordBatch::try_new(schema(id), w.finish())
                .expect("a table's columns match its schema");
            let bytes = self.encode(&batch);
            let name = format!("{}.parquet", id.table().name);
            files.push(FileEntry {
                table: id.table().name.to_string(),
                file: name,
                rows,
                bytes: bytes.len() as u64,
                crc32c: crc32c::crc32c(&bytes),
            });
            encoded.push(bytes);
        }
        let part = self.next_part;
        let manifest = Manifest {
            format: FORMAT.into(),
            version: VERSION,
            part,
            records: self.rows as u64,
            files,
        };
        self.rows = 0;
        self.first_row = None;
        let pending = std::mem::take(&mut self.pending);
        match self.write_part(&manifest, &encoded) {
            Ok((bytes, index)) => {
                self.index = index;
                self.next_part += 1;
                self.bytes_written += bytes;
                Ok(())
            }
            Err(error) => Err(SealFailure {
                full: is_full(&error),
                error,
                lost: pending
                    .into_iter()
                    .map(|(pid, p)| {
                        let lost = Lost {
                            records: p.records,
                            kernels: p.kernels,
                            owed: p.owed,
                        };
                        (pid, lost)
                    })
                    .collect(),
            }),
        }
    }

    fn encode(&self, batch: &RecordBatch) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(self.props.clone()))
            .expect("the writer takes the table's schema");
        w.write(batch).expect("encoding into memory cannot fail");
        w.close().expect("encoding into memory cannot fail");
        out
    }

    /// Writes the part's files under `.unsealed-<n>`, the index listing it, and
    /// renames it into `parts/`. Returns the bytes written and the index. On error,
    /// what was made is removed and the index is rewritten as it was.
    fn write_part(
        &self,
        manifest: &Manifest,
        encoded: &[Vec<u8>],
    ) -> std::io::Result<(u64, Index)> {
        let name = part_dir_name(manifest.part);
        let tmp = self.dir.join(format!("{UNSEALED_PREFIX}{name}"));
        output_file::make_dir_new(&tmp)?;
        let mut made: Vec<PathBuf> = Vec::new();
        let result = (|| {
            let mut total = 0u64;
            let write = |path: PathBuf, bytes: &[u8], made: &mut Vec<PathBuf>| {
                let mut f: File = output_file::create_new(&path)?;
                made.push(path);
                f.write_all(bytes)?;
                f.sync_all()
            };
            for (entry, bytes) in manifest.files.iter().zip(encoded) {
                write(tmp.join(&entry.file), bytes, &mut made)?;
                total += bytes.len() as u64;
            }
            let m = manifest.to_bytes();
            write(tmp.join(super::layout::MANIFEST_FILE), &m, &mut made)?;
            total += m.len() as u64;
            File::open(&tmp)?.sync_all()?;
            let mut index = self.index.clone();
            index.parts.push(IndexedPart {
                part: manifest.part,
                records: manifest.records,
                manifest_crc32c: crc32c::crc32c(&m),
            });
            index.write(&self.dir)?;
            std::fs::rename(&tmp, self.dir.join(PARTS_DIR).join(&name))?;
            File::open(self.dir.join(PARTS_DIR))?.sync_all()?;
            Ok((total, index))
        })();
        if result.is_err() {
            for p in &made {
                let _ = std::fs::remove_file(p);
            }
            let _ = std::fs::remove_dir(&tmp);
            let _ = self.index.write(&self.dir);
        }
        result
    }
}

/// Writes `frames` as a session in the empty directory `dir`, one part per frame:
/// for tests and benchmarks that need a session of known records.
pub fn write_parts(dir: &Path, frames: &[(u32, Vec<Record>)]) -> std::io::Result<()> {
    let mut w = StoreWriter::create(dir, PartLimits::default())?;
    for (pid, records) in frames {
        for r in records {
            w.push(*pid, r);
        }
        w.seal().map_err(|f| f.error)?;
    }
    w.finish()
}
