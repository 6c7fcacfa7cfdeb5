//! Reading a session: its sealed parts in order, each verified against its manifest
//! before a byte of it is decoded.
//!
//! Everything here is read as hostile: names come from the reader's own table list
//! (a manifest naming any other file is damaged), files are opened without following
//! symbolic links, sizes are checked before reading, every file's CRC-32C must match
//! its manifest, and a file that then fails to decode is skipped whole (never half its
//! records). A part whose manifest does not verify is skipped whole; the rest of the
//! session is read.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::ProjectionMask;
use wire::Record;

use super::columns::RowReader;
use super::device_samples::read_sample;
use super::index::{Index, MAX_BYTES as INDEX_MAX_BYTES};
use super::layout::{
    parse_part_dir_name, part_dir_name, INDEX_FILE, MANIFEST_FILE, OLD_SESSION_FILE, PARTS_DIR,
    UNSEALED_PREFIX,
};
use super::manifest::{
    FileEntry, Manifest, FIRST_DIRECTORY_VERSION, INDEXED_VERSION, MAX_BYTES, VERSION,
};
use super::tables::{is_record_table, read_row, rows_may_fail, TableId, TABLE_IDS};
use super::writer::MAX_PART_ROWS;
use crate::store::device_samples::DeviceSample;

/// The largest part file read (a part holds at most a few hundred thousand rows).
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Rows per batch when decoding.
const BATCH_ROWS: usize = 64 << 10;
/// Records handed over at a time from a table whose rows cannot fail: a few hundred
/// kilobytes, which stay in the cache between being made and being read.
const CHUNK_ROWS: usize = 4096;

/// A session directory, listed.
#[derive(Debug)]
pub struct Store {
    pub dir: PathBuf,
    /// Sealed parts, by number.
    pub parts: Vec<(u64, PathBuf)>,
    /// Parts being written when the collector stopped (`.unsealed-<n>`), with their
    /// bytes.
    pub unsealed: Vec<(String, u64)>,
    /// Entries of `parts/` that are not parts (not ours, or not directories).
    pub strangers: Vec<String>,
    /// The session's index, when it has one that verifies.
    pub index: Option<Index>,
    /// What the session as a whole lacks: parts its index lists and `parts/` does not
    /// hold, parts it holds that are not the session's, an index that is damaged or
    /// missing, a session never finished.
    pub damaged: Vec<Damage>,
}

/// A file or part skipped because it does not verify or decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// Relative to the session directory (`parts/00000003/kernels.parquet`).
    pub file: String,
    pub bytes: u64,
    /// Records it held, as its manifest (or the session's index) says; `None` when
    /// nothing says (a damaged manifest of a part the index does not list, a part
    /// not the session's, the session as a whole).
    pub records: Option<u64>,
    pub reason: String,
}

/// One part's records in table order, and what of it could not be read.
#[derive(Debug, Default)]
pub struct Part {
    pub number: u64,
    pub records: Vec<(u32, Record)>,
    pub damaged: Vec<Damage>,
    /// Records of the tables the reader was asked to skip (verified, not decoded).
    pub skipped_rows: u64,
}

fn is_old_session_file(path: &Path) -> Option<String> {
    let mut f = File::open(path).ok()?;
    let mut head = [0u8; 16];
    f.read_exact(&mut head).ok()?;
    if &head[..8] != b"GPUPROFS" {
        return None;
    }
    let format = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
    Some(format!(
        "{} is a session of format {format} (a single session.gpuprof file, gpuprof before \
         the columnar session); this gpuprof reads format {FIRST_DIRECTORY_VERSION} and later \
         (a directory of Parquet parts): record the run again",
        path.display()
    ))
}

impl Store {
    /// Lists the session in `path` (the directory `gpuprof record` made, or its
    /// `parts/` directory). Errors when it holds no session, or one of the old format.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        let meta =
            std::fs::metadata(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if !meta.is_dir() {
            if let Some(old) = is_old_session_file(path) {
                anyhow::bail!("{old}");
            }
            anyhow::bail!(
                "{}: not a gpuprof session (a session is the directory `gpuprof record` writes)",
                path.display()
            );
        }
        let dir =
            if path.file_name().is_some_and(|n| n == PARTS_DIR) && !path.join(PARTS_DIR).exists() {
                path.parent().unwrap_or(path).to_path_buf()
            } else {
                path.to_path_buf()
            };
        let parts_dir = dir.join(PARTS_DIR);
        if !parts_dir.is_dir() {
            let old = dir.join(OLD_SESSION_FILE);
            if let Some(msg) = is_old_session_file(&old) {
                anyhow::bail!("{msg}");
            }
            anyhow::bail!(
                "{}: no session here (no {PARTS_DIR}/ directory)",
                dir.display()
            );
        }
        let mut parts = Vec::new();
        let mut strangers = Vec::new();
        let entries = std::fs::read_dir(&parts_dir)
            .map_err(|e| anyhow::anyhow!("{}: {e}", parts_dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| anyhow::anyhow!("{}: {e}", parts_dir.display()))?;
            let name = entry.file_name();
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            match parse_part_dir_name(&name) {
                Some(n) if is_dir => parts.push((n, entry.path())),
                _ => strangers.push(name.to_string_lossy().into_owned()),
            }
        }
        parts.sort();
        strangers.sort();
        let mut unsealed = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(UNSEALED_PREFIX)
                    && entry.file_type().map(|t| t.is_dir()).unwrap_or(false)
                {
                    unsealed.push((name, dir_bytes(&entry.path())));
                }
            }
        }
        unsealed.sort();
        let mut store = Store {
            dir,
            parts,
            unsealed,
            strangers,
            index: None,
            damaged: Vec::new(),
        };
        store.check_index();
        Ok(store)
    }

    /// Checks the parts found against the session's index ([`super::index`]): parts
    /// it lists and `parts/` lacks are missing, parts `parts/` holds and it does not
    /// list are left out, and a session it does not call finished is said to be so.
    /// A session of a layout before the index has none, and is read as found.
    fn check_index(&mut self) {
        // The session as a whole: how many records it lacks, nothing says.
        let whole = |reason: String| Damage {
            file: INDEX_FILE.to_string(),
            bytes: 0,
            records: None,
            reason,
        };
        let index = match read_file(&self.dir.join(INDEX_FILE), INDEX_MAX_BYTES) {
            Ok(bytes) => match Index::parse(&bytes) {
                Ok(index) => index,
                Err(reason) => {
                    self.damaged.push(whole(format!(
                        "{reason}; whole parts may be missing unnoticed"
                    )));
                    return;
                }
            },
            Err(_) if !self.indexed_layout() => return,
            Err(reason) => {
                self.damaged.push(whole(
                    format!("{reason} (a session of layout {INDEXED_VERSION} and later keeps an index); whole parts may be missing unnoticed"),
                ));
                return;
            }
        };
        let (listed, not_listed): (Vec<_>, Vec<_>) = std::mem::take(&mut self.parts)
            .into_iter()
            .partition(|(n, _)| index.part(*n).is_some());
        for (n, path) in not_listed {
            self.damaged.push(Damage {
                file: format!("{PARTS_DIR}/{}", part_dir_name(n)),
                bytes: dir_bytes(&path),
                records: None,
                reason: "not a part of this session (its index does not list it: a copy, or \
                         another session's); skipped"
                    .into(),
            });
        }
        let found: BTreeSet<u64> = listed.iter().map(|(n, _)| *n).collect();
        for p in &index.parts {
            // Killed between writing the index and renaming the part into `parts/`:
            // the part is reported as never sealed.
            let unsealed = format!("{UNSEALED_PREFIX}{}", part_dir_name(p.part));
            let sealing = self.unsealed.iter().any(|(name, _)| *name == unsealed);
            if !sealing && !found.contains(&p.part) {
                self.damaged.push(Damage {
                    file: format!("{PARTS_DIR}/{}", part_dir_name(p.part)),
                    bytes: 0,
                    records: Some(p.records),
                    reason: "missing: the session's index lists it".into(),
                });
            }
        }
        if !index.finished && self.unsealed.is_empty() {
            let last = index.parts.iter().map(|p| p.part).max().unwrap_or(0);
            self.damaged.push(whole(format!(
                "the session was not finished: its collector stopped before the run's end \
                     (killed?), and what it held after part {last} is lost"
            )));
        }
        self.parts = listed;
        self.index = Some(index);
    }

    /// Losses the collector saw and could not count, as its index words them
    /// ([`super::index::Index::lost`]); none without an index that verifies.
    pub fn lost(&self) -> &[String] {
        self.index.as_ref().map_or(&[], |i| &i.lost)
    }

    /// Whether the session's first part is of a layout that keeps an index.
    fn indexed_layout(&self) -> bool {
        self.parts.first().is_some_and(|(_, path)| {
            read_file(&path.join(MANIFEST_FILE), MAX_BYTES)
                .and_then(|b| Manifest::parse(&b))
                .is_ok_and(|m| m.version >= INDEXED_VERSION)
        })
    }

    /// Whether any part's manifest lists rows of `table`: the manifests only, no
    /// table is read. A part whose manifest does not read counts as holding none
    /// (reading the part then names the damage).
    pub fn holds_rows_of(&self, table: TableId) -> bool {
        self.parts.iter().any(|(_, path)| {
            read_file(&path.join(MANIFEST_FILE), MAX_BYTES)
                .and_then(|b| Manifest::parse(&b))
                .is_ok_and(|m| {
                    m.files
                        .iter()
                        .any(|f| f.table == table.table().name && f.rows > 0)
                })
        })
    }

    /// Reads part `index` of [`Store::parts`]. Errors only for a part of a newer
    /// session version than this gpuprof reads.
    pub fn read_part(&self, index: usize) -> anyhow::Result<Part> {
        // Every record is decoded straight into the part's: `each` leaves them all.
        let mut records = Vec::new();
        let mut part = self.read_part_tables(index, &[], &mut records, |_| {})?;
        part.records = records;
        Ok(part)
    }

    /// Reads part `index` table by table, in table order, appending each table's
    /// records to `buffer` and calling `each` with it once its file verifies and
    /// decodes: every few thousand records, or once for the whole table for a table
    /// whose rows can be refused (`hand_rows`). `each` takes what it uses out of the
    /// buffer (then at most a chunk is in memory, and the buffer's memory is reused:
    /// pass the same one for every part); what it leaves stays, before the next
    /// chunk's records ([`Store::read_part`] leaves them all). The returned part has
    /// no records, only what could not be read. The tables in `skip` are verified
    /// (so that damage is reported as for any other file) but not decoded: their
    /// rows are counted in [`Part::skipped_rows`]. Errors as [`Store::read_part`].
    pub fn read_part_tables(
        &self,
        index: usize,
        skip: &[TableId],
        buffer: &mut Vec<(u32, Record)>,
        mut each: impl FnMut(&mut Vec<(u32, Record)>),
    ) -> anyhow::Result<Part> {
        let (number, path) = &self.parts[index];
        let rel = |file: &str| {
            format!(
                "{PARTS_DIR}/{}/{file}",
                super::layout::part_dir_name(*number)
            )
        };
        let mut part = Part {
            number: *number,
            ..Part::default()
        };
        let manifest = match self.manifest_of(*number, path) {
            Ok(m) => m,
            Err(reason) => {
                part.damaged.push(Damage {
                    file: rel(MANIFEST_FILE),
                    bytes: dir_bytes(path),
                    records: self.indexed_records(*number),
                    reason: format!("{reason}; the whole part is skipped"),
                });
                return Ok(part);
            }
        };
        if manifest.version > VERSION {
            anyhow::bail!(
                "{}: session version {}, newer than this gpuprof reads ({VERSION}); use a newer gpuprof",
                path.join(MANIFEST_FILE).display(),
                manifest.version
            );
        }
        if let Err(reason) = check_files(&manifest) {
            part.damaged.push(Damage {
                file: rel(MANIFEST_FILE),
                bytes: dir_bytes(path),
                records: Some(manifest.records),
                reason: format!("{reason}; the whole part is skipped"),
            });
            return Ok(part);
        }
        // In table order, whatever order the manifest lists them in.
        for &id in TABLE_IDS {
            let Some(entry) = manifest.files.iter().find(|f| f.table == id.table().name) else {
                continue;
            };
            let damaged = |reason: String| Damage {
                file: rel(&entry.file),
                bytes: entry.bytes,
                records: Some(entry.rows),
                reason,
            };
            let bytes = match verified(path, entry) {
                Ok(b) => b,
                Err(reason) => {
                    part.damaged.push(damaged(reason));
                    continue;
                }
            };
            if !is_record_table(id) {
                // NVML readings: verified with the rest, read by
                // `Store::read_device_samples`.
                continue;
            }
            if skip.contains(&id) {
                part.skipped_rows += entry.rows;
                continue;
            }
            let kept = buffer.len();
            if let Err(reason) = hand_rows(id, bytes, entry.rows, buffer, &mut each) {
                // None of a damaged table's rows was handed over: dropped whole.
                buffer.truncate(kept);
                part.damaged.push(damaged(reason));
            }
        }
        Ok(part)
    }
}

impl Store {
    /// Part `number`'s manifest from `path`, verified: its checksum, its part number,
    /// and that it is the manifest the session's index lists.
    fn manifest_of(&self, number: u64, path: &Path) -> Result<Manifest, String> {
        let bytes = read_file(&path.join(MANIFEST_FILE), MAX_BYTES)?;
        let manifest = Manifest::parse(&bytes)?;
        if manifest.version > VERSION {
            // Not read at all: the caller says which gpuprof would.
            return Ok(manifest);
        }
        if manifest.part != number {
            return Err(format!("it is the manifest of part {}", manifest.part));
        }
        match self.index.as_ref().and_then(|i| i.part(number)) {
            Some(p) if p.manifest_crc32c != crc32c::crc32c(&bytes) => Err(
                "it is not the manifest the session's index lists (a part of another session)"
                    .into(),
            ),
            _ => Ok(manifest),
        }
    }

    /// The records the session's index says part `number` holds; 0 without one.
    fn indexed_records(&self, number: u64) -> Option<u64> {
        self.index
            .as_ref()
            .and_then(|i| i.part(number))
            .map(|p| p.records)
    }

    /// Columns `columns` of table `id` of part `index`, a batch at a time (in `each`,
    /// in the order asked: read them with [`super::columns::values`]), without
    /// decoding the other columns: what a pass needs of a table's times and pids. The
    /// file verifies as for [`Store::read_part_tables`] (size, CRC-32C, row counts)
    /// and its schema must be the table's; `Err` says why not (reading the part names
    /// the damage). A table whose rows can be refused ([`rows_may_fail`]) is refused
    /// here: whether its rows count needs every column.
    pub fn read_columns(
        &self,
        index: usize,
        id: TableId,
        columns: &[&str],
        mut each: impl FnMut(&[ArrayRef]) -> Result<(), String>,
    ) -> Result<(), String> {
        let table = id.table();
        if rows_may_fail(id) {
            return Err(format!("table {}: its rows are read whole", table.name));
        }
        let Some((bytes, rows)) = self.table_file(index, id, true)? else {
            return Ok(());
        };
        let builder = parquet_of(bytes, rows)?;
        let at = table_columns(id, builder.schema(), columns)?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), at.iter().copied());
        let reader = builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| format!("not a readable Parquet file: {e}"))?;
        each_batch(reader, rows, |batch| {
            let arrays = columns
                .iter()
                .map(|name| {
                    batch
                        .column_by_name(name)
                        .cloned()
                        .ok_or_else(|| format!("table {}: no column {name:?}", table.name))
                })
                .collect::<Result<Vec<ArrayRef>, String>>()?;
            each(&arrays).map_err(|e| format!("table {}: {e}", table.name))
        })
    }

    /// The verified bytes of table `id`'s file in part `index`, and the rows its
    /// manifest gives; `None` when the part has no such file. With `current`, a part
    /// of a newer session version is refused.
    fn table_file(
        &self,
        index: usize,
        id: TableId,
        current: bool,
    ) -> Result<Option<(Vec<u8>, u64)>, String> {
        let (number, path) = &self.parts[index];
        let manifest = self.manifest_of(*number, path)?;
        if current && manifest.version > VERSION {
            return Err(format!("session version {}", manifest.version));
        }
        check_files(&manifest)?;
        let name = id.table().name;
        match manifest.files.iter().find(|f| f.table == name) {
            None => Ok(None),
            Some(entry) => Ok(Some((verified(path, entry)?, entry.rows))),
        }
    }

    /// The NVML readings of part `index` (its `device_samples` table), in the order
    /// taken. A part or file that does not verify or decode gives none; its damage is
    /// what [`Store::read_part_tables`] reports for the part (`Err` here names it).
    pub fn read_device_samples(&self, index: usize) -> Result<Vec<DeviceSample>, String> {
        let id = TableId::DeviceSamples;
        let Some((bytes, rows)) = self.table_file(index, id, false)? else {
            return Ok(Vec::new());
        };
        let samples = decode_samples(bytes, rows)?;
        if samples.len() as u64 != rows {
            return Err(format!(
                "{}: {} rows, the manifest says {rows}",
                id.table().name,
                samples.len()
            ));
        }
        Ok(samples)
    }
}

/// The bytes of the part file `entry` names in part directory `dir`, checked against
/// the manifest's size and CRC-32C.
fn verified(dir: &Path, entry: &FileEntry) -> Result<Vec<u8>, String> {
    let bytes = read_file(&dir.join(&entry.file), MAX_FILE_BYTES)?;
    if bytes.len() as u64 != entry.bytes {
        return Err(format!(
            "{} bytes, the manifest says {}",
            bytes.len(),
            entry.bytes
        ));
    }
    let crc = crc32c::crc32c(&bytes);
    if crc != entry.crc32c {
        return Err(format!(
            "checksum mismatch (manifest {:08x}, file {crc:08x})",
            entry.crc32c
        ));
    }
    Ok(bytes)
}

/// Every file a manifest lists is a known table's, under its own name, once.
fn check_files(m: &Manifest) -> Result<(), String> {
    let mut seen = Vec::new();
    for f in &m.files {
        let Some(id) = TABLE_IDS.iter().find(|id| id.table().name == f.table) else {
            return Err(format!("the manifest names an unknown table {:?}", f.table));
        };
        if f.file != format!("{}.parquet", id.table().name) {
            return Err(format!(
                "the manifest names the file {:?} for table {}",
                f.file, f.table
            ));
        }
        if seen.contains(id) {
            return Err(format!("the manifest lists table {} twice", f.table));
        }
        seen.push(*id);
    }
    let rows: u64 = m.files.iter().fold(0u64, |s, f| s.saturating_add(f.rows));
    if rows != m.records {
        return Err(format!(
            "the manifest's files hold {rows} rows, its total says {}",
            m.records
        ));
    }
    Ok(())
}

/// The bytes of the regular file `path`, at most `max` of them; never through a
/// symbolic link.
fn read_file(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot open: {e}"))?;
    let meta = f.metadata().map_err(|e| format!("cannot stat: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > max {
        return Err(format!(
            "{} bytes, more than a part file can be ({max})",
            meta.len()
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.by_ref()
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("more than {max} bytes"));
    }
    Ok(bytes)
}

/// Decodes a table's Parquet bytes: the batches of a table file the manifest says
/// holds `expected` rows, refused before decoding when the manifest or the file's
/// own metadata claims more than a part can hold ([`MAX_PART_ROWS`]) or the two
/// disagree, so a crafted file is never allocated whole; and refused when it
/// decodes to fewer rows.
fn decode_batches(bytes: Vec<u8>, expected: u64) -> Result<Vec<RecordBatch>, String> {
    let reader = parquet_of(bytes, expected)?
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| format!("not a readable Parquet file: {e}"))?;
    let mut batches = Vec::new();
    each_batch(reader, expected, |batch| {
        batches.push(batch);
        Ok(())
    })?;
    Ok(batches)
}

/// Each batch `reader` decodes, handed to `each`, while they hold no more than the
/// `expected` rows; refused when they hold more, or in the end fewer.
fn each_batch(
    reader: ParquetRecordBatchReader,
    expected: u64,
    mut each: impl FnMut(RecordBatch) -> Result<(), String>,
) -> Result<(), String> {
    let mut rows = 0;
    for batch in reader {
        let batch = batch.map_err(|e| format!("does not decode: {e}"))?;
        rows += batch.num_rows() as u64;
        if rows > expected {
            return Err(format!("more rows than the {expected} it says"));
        }
        each(batch)?;
    }
    if rows != expected {
        return Err(format!("{rows} rows, the manifest says {expected}"));
    }
    Ok(())
}

/// A reader of a table file's Parquet bytes that the manifest says holds `expected`
/// rows, refused when the manifest or the file's own metadata claims more than a
/// part can hold ([`MAX_PART_ROWS`]) or the two disagree.
fn parquet_of(
    bytes: Vec<u8>,
    expected: u64,
) -> Result<ParquetRecordBatchReaderBuilder<bytes::Bytes>, String> {
    if expected > MAX_PART_ROWS as u64 {
        return Err(format!(
            "the manifest says {expected} rows, more than a part holds ({MAX_PART_ROWS})"
        ));
    }
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .map_err(|e| format!("not a readable Parquet file: {e}"))?;
    let claimed = builder.metadata().file_metadata().num_rows();
    if u64::try_from(claimed).ok() != Some(expected) {
        return Err(format!(
            "the file says {claimed} rows, the manifest says {expected}"
        ));
    }
    Ok(builder)
}

/// The positions of `columns` in a file of table `id` whose schema is `schema`: the
/// file's columns must be the table's, in order, each of its kind (or the first
/// [`TableId::required_columns`] of them, as [`RowReader::new`] reads them), and
/// every one asked for among them.
fn table_columns(id: TableId, schema: &SchemaRef, columns: &[&str]) -> Result<Vec<usize>, String> {
    let table = id.table();
    let fields = schema.fields();
    if fields.len() > table.columns.len() || fields.len() < id.required_columns() {
        return Err(format!("table {}: {} columns", table.name, fields.len()));
    }
    for (field, (name, kind)) in fields.iter().zip(table.columns) {
        if field.name() != name || field.data_type() != &kind.data_type() {
            return Err(format!(
                "table {}: column {:?} is not {name:?} of {}",
                table.name,
                field.name(),
                kind.data_type()
            ));
        }
    }
    columns
        .iter()
        .map(|name| {
            fields
                .iter()
                .position(|f| f.name() == name)
                .ok_or_else(|| format!("table {}: no column {name:?}", table.name))
        })
        .collect()
}

/// Row readers over `batches`, each checked against table `id`'s columns.
fn row_readers(id: TableId, batches: &[RecordBatch]) -> Result<Vec<RowReader<'_>>, String> {
    let table = id.table();
    let (names, kinds) = (table.names(), table.kinds());
    batches
        .iter()
        .map(|b| {
            RowReader::new(b, &names, &kinds, id.required_columns())
                .map_err(|e| format!("table {}: {e}", table.name))
        })
        .collect()
}

/// Every row of a table file decoded into `out`, each made by `row`: all or an error.
fn decode_rows<T>(
    id: TableId,
    bytes: Vec<u8>,
    expected: u64,
    out: &mut Vec<T>,
    mut row: impl FnMut(&mut RowReader, usize) -> Result<T, String>,
) -> Result<(), String> {
    let batches = decode_batches(bytes, expected)?;
    out.reserve(expected as usize);
    for mut rows in row_readers(id, &batches)? {
        for i in 0..rows.rows() {
            out.push(row(&mut rows, i).map_err(|e| format!("row {i}: {e}"))?);
        }
    }
    Ok(())
}

/// A record table file's records appended to `buffer` and handed to `each`: in
/// chunks of [`CHUNK_ROWS`] once the whole file has decoded and its columns checked,
/// when reading a row cannot fail ([`rows_may_fail`]); otherwise all at once, once
/// every row has been read. Either way none is handed over from a file that is then
/// found damaged (the caller drops what was appended).
fn hand_rows(
    id: TableId,
    bytes: Vec<u8>,
    expected: u64,
    buffer: &mut Vec<(u32, Record)>,
    each: &mut impl FnMut(&mut Vec<(u32, Record)>),
) -> Result<(), String> {
    if rows_may_fail(id) {
        decode_rows(id, bytes, expected, buffer, |r, i| read_row(id, r, i))?;
        each(buffer);
        return Ok(());
    }
    let batches = decode_batches(bytes, expected)?;
    for mut rows in row_readers(id, &batches)? {
        let len = rows.rows();
        buffer.reserve(len.min(CHUNK_ROWS));
        for start in (0..len).step_by(CHUNK_ROWS) {
            for i in start..len.min(start + CHUNK_ROWS) {
                // Cannot fail (`rows_may_fail`); were it to, the file would be named
                // damaged with the chunks before this one already used.
                buffer.push(read_row(id, &mut rows, i).map_err(|e| format!("row {i}: {e}"))?);
            }
            each(buffer);
        }
    }
    Ok(())
}

fn decode_samples(bytes: Vec<u8>, expected: u64) -> Result<Vec<DeviceSample>, String> {
    let mut out = Vec::new();
    decode_rows(
        TableId::DeviceSamples,
        bytes,
        expected,
        &mut out,
        read_sample,
    )?;
    Ok(out)
}

/// Bytes of the regular files directly in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .fold(0u64, |s, m| s.saturating_add(m.len()))
        })
        .unwrap_or(0)
}
