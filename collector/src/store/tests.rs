use std::path::{Path, PathBuf};
use std::time::Duration;

use wire::testing::*;
use wire::*;

use super::columns::Kind;
use super::tables::{table_of, TABLES};
use super::*;

struct Tmp(PathBuf);
impl Tmp {
    fn new(name: &str) -> Tmp {
        let d = std::env::temp_dir().join(format!("gpuprof-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Tmp(d)
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One record of every kind, with values that differ field by field.
fn every_kind(pid: u32) -> Vec<Record> {
    vec![
        Record::Process(Box::new(ProcessInfo {
            pid,
            ppid: 11,
            command: vec!["python".into(), "infer.py".into(), "--x=ü".into()],
            host: "node-7".into(),
            start_ns: 1_700_000_000_000_000_001,
            profiler_version: "0.1.0".into(),
            cupti_api_version: 130401,
            cupti_layouts: "13.4".into(),
            cupti_path: "/usr/lib/libcupti.so.13".into(),
            environment: vec!["RANK=3".into(), "WORLD_SIZE=8".into()],
        })),
        Record::Device(DeviceInfo {
            id: 3,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            core_clock_khz: 1_980_000,
            memory_clock_khz: 2_619_000,
            memory_bus_width_bits: 5120,
            global_memory_bytes: 85_520_809_984,
            l2_cache_bytes: 52_428_800,
            uuid: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16],
        }),
        Record::Context(ContextInfo {
            context_id: 4,
            device_id: 3,
        }),
        string(9, "ampere_bf16_s16816gemm"),
        Record::CounterPlan(Box::new(CounterPlan {
            device_id: 3,
            chip: "GH100".into(),
            mode: "kernel".into(),
            groups: vec![vec![1, 2, 3], vec![], vec![7]],
            policy: "first 64 launches of each kernel".into(),
        })),
        Record::CounterStatus(CounterStatus {
            message: "counters off".into(),
        }),
        Record::GemmStatus(GemmStatus {
            message: "no cuBLAS".into(),
        }),
        Record::Capture(Capture {
            range: "nvtx:decode".into(),
            delay_ns: 1,
            duration_ns: u64::MAX,
            windows: 2,
            launches: 40,
            captured_launches: 12,
        }),
        graph_node(0xdead_beef_0001, 77),
        cloned(0xdead_beef_0002, 0xdead_beef_0001),
        Record::Launch(Launch {
            correlation_id: 77,
            cbid: 307,
            runtime: true,
            thread_id: 0xffff_0000_1234,
            start_ns: 1_700_000_000_000_001_000,
            end_ns: 1_700_000_000_000_001_900,
        }),
        Record::ApiCall(ApiCall {
            correlation_id: 78,
            cbid: 131,
            runtime: false,
            name: 9,
            context_id: 2,
            thread_id: 0xffff_0000_1234,
            start_ns: 1_700_000_000_000_002_000,
            end_ns: 1_700_000_000_000_009_500,
            bytes: 1 << 33,
            stream_id: wire::NO_STREAM,
            event: 0x7f00_0000_beef,
            ok: false,
        }),
        Record::ApiTally(ApiTally {
            thread_id: 0,
            cbid: 17,
            runtime: false,
            name: 9,
            calls: 3,
            total_ns: 12_345,
        }),
        Record::GemmCall(GemmCall {
            call: 5,
            thread_id: 0xffff_0000_1234,
            start_ns: 1_700_000_000_000_001_500,
            end_ns: 1_700_000_000_000_003_000,
        }),
        gemm(77, 5, 1, 4096, 128, 8192),
        Record::Kernel(Kernel {
            device_id: 3,
            context_id: 4,
            stream_id: 13,
            correlation_id: 77,
            start_ns: 1_700_000_000_000_002_000,
            end_ns: 1_700_000_000_000_009_000,
            name: 9,
            grid: [132, -1, 3],
            block: [384, 2, 1],
            registers_per_thread: 168,
            static_shared_memory: -5,
            dynamic_shared_memory: 196_608,
            graph_id: 21,
            graph_node_id: 0xdead_beef_0002,
        }),
        Record::Memcpy(Memcpy {
            device_id: 3,
            context_id: 4,
            stream_id: 14,
            correlation_id: 78,
            start_ns: 10,
            end_ns: 20,
            bytes: 1 << 33,
            copy_kind: 1,
            src_kind: 2,
            dst_kind: 3,
            graph_node_id: 5,
        }),
        Record::Memset(Memset {
            device_id: 3,
            context_id: 4,
            stream_id: 15,
            correlation_id: 79,
            start_ns: 30,
            end_ns: 40,
            bytes: 4096,
            value: 0xab,
            memory_kind: 3,
            graph_node_id: 6,
        }),
        marker(marker_flags::START, 2, 8, 50, 9, 10),
        Record::Overhead(Overhead {
            kind: 2,
            start_ns: 60,
            end_ns: 70,
            thread_id: 8,
        }),
        counters(77, 1, &[(9, 1.5e12), (10, -0.25)]),
        counters(78, 0, &[]),
        sample(80, 90, &[(11, f64::MAX), (12, 0.0)]),
        Record::Dropped(Dropped {
            source: DropSource::Undelivered,
            records: 12,
        }),
        Record::End(End { records: u64::MAX }),
    ]
}

fn write(dir: &Path, batches: &[(u32, Vec<Record>)]) -> StoreWriter {
    let mut w = StoreWriter::create(dir, PartLimits::default()).unwrap();
    for (pid, records) in batches {
        for r in records {
            w.push(*pid, r);
        }
        w.seal().unwrap();
    }
    w
}

fn read_all(dir: &Path) -> (Vec<(u32, Record)>, Vec<Damage>) {
    let store = Store::open(dir).unwrap();
    let mut records = Vec::new();
    let mut damaged = Vec::new();
    for i in 0..store.parts.len() {
        let p = store.read_part(i).unwrap();
        records.extend(p.records);
        damaged.extend(p.damaged);
    }
    (records, damaged)
}

/// `records` of `pid` as a part gives them back: in table order, file order within.
fn in_table_order(pid: u32, records: &[Record]) -> Vec<(u32, Record)> {
    let mut v: Vec<(u32, Record)> = records.iter().map(|r| (pid, r.clone())).collect();
    v.sort_by_key(|(_, r)| table_of(r));
    v
}

#[test]
fn every_record_kind_comes_back_as_written() {
    let t = Tmp::new("kinds");
    let records = every_kind(4242);
    let mut kinds = records.iter().map(table_of).collect::<Vec<_>>();
    kinds.dedup();
    let record_tables: Vec<_> = tables::TABLE_IDS
        .iter()
        .copied()
        .filter(|id| tables::is_record_table(*id))
        .collect();
    assert_eq!(kinds, record_tables, "every record table, in table order");
    // And the one table that holds no records: an NVML reading.
    let sample = crate::store::device_samples::DeviceSample {
        time_ns: 1_700_000_000_123_456_789,
        index: 1,
        uuid: "GPU-5a1c0da0-9000-4e11-8000-51c000000001".into(),
        name: "NVIDIA H100 80GB HBM3".into(),
        pci_bus_id: "00000000:02:00.0".into(),
        gpu_util_pct: 37,
        mem_util_pct: 4,
        power_w: 303.125,
        energy_mj: 9_876_543,
        fb_used_mib: 1536,
        sm_clock_mhz: 1500,
        mem_clock_mhz: 2619,
        max_sm_clock_mhz: 1980,
        temperature_c: 40,
        throttle_reasons: 0x4,
    };
    let mut w = StoreWriter::create(&t.0, PartLimits::default()).unwrap();
    for r in &records {
        w.push(4242, r);
    }
    w.push_sample(&sample);
    w.seal().unwrap();
    assert_eq!(w.parts(), 1);
    let (back, damaged) = read_all(&t.0);
    assert!(damaged.is_empty(), "{damaged:?}");
    assert_eq!(back, in_table_order(4242, &records));
    let store = Store::open(&t.0).unwrap();
    assert_eq!(store.read_device_samples(0), Ok(vec![sample]));
    // Nothing else is left in the directory: the part, and the reserve.
    let mut names: Vec<String> = std::fs::read_dir(&t.0)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".reserve", "index.json", "parts"]);
    let part = t.0.join("parts/00000001");
    let mut files: Vec<String> = std::fs::read_dir(&part)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), tables::TABLES.len() + 1);
    assert!(files.contains(&"kernels.parquet".to_string()));
    assert!(files.contains(&"manifest.json".to_string()));
}

#[test]
fn parts_are_read_in_order_and_records_keep_their_order_within_a_table() {
    let t = Tmp::new("order");
    let a: Vec<Record> = (0..5).map(|i| k(1, i, 100 + i as u64, 200)).collect();
    let b: Vec<Record> = (5..9).map(|i| k(1, i, 100 + i as u64, 200)).collect();
    let mut first = vec![string(1, "k")];
    first.extend(a.clone());
    write(&t.0, &[(7, first.clone()), (8, b.clone())]);
    let (back, _) = read_all(&t.0);
    let mut want = in_table_order(7, &first);
    want.extend(in_table_order(8, &b));
    assert_eq!(back, want);
}

#[test]
fn a_part_seals_when_it_is_full_or_old() {
    let t = Tmp::new("limits");
    let mut w = StoreWriter::create(
        &t.0,
        PartLimits {
            rows: 3,
            age: Duration::from_millis(50),
        },
    )
    .unwrap();
    assert!(!w.due());
    w.push(1, &k(1, 1, 1, 2));
    w.push(1, &k(1, 2, 1, 2));
    assert!(!w.due());
    w.push(1, &k(1, 3, 1, 2));
    assert!(w.due());
    w.seal().unwrap();
    assert!(!w.due());
    w.push(1, &k(1, 4, 1, 2));
    std::thread::sleep(Duration::from_millis(60));
    assert!(w.due());
    w.seal().unwrap();
    assert_eq!(w.parts(), 2);
    assert_eq!(Store::open(&t.0).unwrap().parts.len(), 2);
}

fn flip(path: &Path, at: usize) {
    let mut b = std::fs::read(path).unwrap();
    b[at] ^= 0x10;
    std::fs::write(path, b).unwrap();
}

#[test]
fn a_damaged_file_is_skipped_with_its_record_count_and_the_rest_is_read() {
    let t = Tmp::new("damaged");
    let records: Vec<Record> = (0..50)
        .map(|i| k(1, i, 100, 200))
        .chain((0..30).map(|i| launch(i, 1, 50, 60)))
        .collect();
    write(&t.0, &[(3, records.clone())]);
    let file = t.0.join("parts/00000001/kernels.parquet");
    let len = std::fs::metadata(&file).unwrap().len();
    flip(&file, 40);
    let (back, damaged) = read_all(&t.0);
    assert_eq!(back.len(), 30);
    assert!(back.iter().all(|(_, r)| matches!(r, Record::Launch(_))));
    assert_eq!(damaged.len(), 1);
    assert_eq!(damaged[0].file, "parts/00000001/kernels.parquet");
    assert_eq!(damaged[0].records, Some(50));
    assert_eq!(damaged[0].bytes, len);
    assert!(
        damaged[0]
            .reason
            .starts_with("checksum mismatch (manifest "),
        "{}",
        damaged[0].reason
    );
}

/// Writes `bytes` as the manifest at `path` and lists it in the session's index, as
/// someone forging a part would: the checks below the index are then what stands.
fn forge_manifest(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
    let session = path.ancestors().nth(3).unwrap();
    let part: u64 = path
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let index_path = session.join(layout::INDEX_FILE);
    let mut index = index::Index::parse(&std::fs::read(&index_path).unwrap()).unwrap();
    let entry = index.parts.iter_mut().find(|p| p.part == part).unwrap();
    entry.manifest_crc32c = crc32c::crc32c(bytes);
    std::fs::write(&index_path, index.to_bytes()).unwrap();
}

#[test]
fn a_damaged_manifest_skips_its_part_and_only_it() {
    let t = Tmp::new("manifest");
    write(
        &t.0,
        &[
            (3, vec![k(1, 1, 1, 2)]),
            (3, vec![k(1, 2, 1, 2), k(1, 3, 1, 2)]),
        ],
    );
    flip(&t.0.join("parts/00000001/manifest.json"), 20);
    let (back, damaged) = read_all(&t.0);
    assert_eq!(back.len(), 2);
    assert_eq!(damaged.len(), 1);
    assert_eq!(damaged[0].file, "parts/00000001/manifest.json");
    // Its record count from the session's index.
    assert_eq!(damaged[0].records, Some(1));
    assert!(
        damaged[0].reason.starts_with("checksum mismatch (stored ")
            && damaged[0].reason.ends_with("; the whole part is skipped"),
        "{}",
        damaged[0].reason
    );
}

#[test]
fn a_manifest_naming_another_file_is_not_followed() {
    let t = Tmp::new("hostile");
    write(&t.0, &[(3, vec![k(1, 1, 1, 2)])]);
    let path = t.0.join("parts/00000001/manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let json = text.lines().next().unwrap().replace(
        "\"file\":\"kernels.parquet\"",
        "\"file\":\"../../../etc/passwd\"",
    );
    let forged = format!("{json}\ncrc32c {:08x}\n", crc32c::crc32c(json.as_bytes()));
    forge_manifest(&path, forged.as_bytes());
    let (back, damaged) = read_all(&t.0);
    assert!(back.is_empty());
    assert_eq!(
        damaged[0].reason,
        "the manifest names the file \"../../../etc/passwd\" for table kernels; the whole part is skipped"
    );
}

/// A manifest (checksum and all) claiming more rows than a part holds, or rows the
/// table file does not hold: the file is refused before it is decoded, named, and
/// counted with the rows its manifest gives; the other tables of the part are read.
#[test]
fn row_counts_beyond_a_part_or_the_file_are_refused_before_decoding() {
    for (rows, reason) in [
        (
            "100000000",
            "the manifest says 100000000 rows, more than a part holds (4194304)",
        ),
        ("3", "the file says 2 rows, the manifest says 3"),
    ] {
        let t = Tmp::new("rows");
        write(
            &t.0,
            &[(3, vec![k(1, 1, 1, 2), k(1, 2, 3, 4), string(1, "k")])],
        );
        let path = t.0.join("parts/00000001/manifest.json");
        let text = std::fs::read_to_string(&path).unwrap();
        let json = text.lines().next().unwrap().to_string();
        let entry = "\"table\":\"kernels\",\"file\":\"kernels.parquet\",\"rows\":2";
        assert!(json.contains(entry), "{json}");
        let total: u64 = rows.parse::<u64>().unwrap() + 1;
        assert!(json.contains("\"records\":3"), "{json}");
        let json = json
            .replace(
                entry,
                &format!("\"table\":\"kernels\",\"file\":\"kernels.parquet\",\"rows\":{rows}"),
            )
            .replace("\"records\":3", &format!("\"records\":{total}"));
        let forged = format!("{json}\ncrc32c {:08x}\n", crc32c::crc32c(json.as_bytes()));
        forge_manifest(&path, forged.as_bytes());
        let (back, damaged) = read_all(&t.0);
        assert_eq!(back.len(), 1, "the string record is read: {back:?}");
        assert_eq!(damaged.len(), 1);
        assert_eq!(damaged[0].file, "parts/00000001/kernels.parquet");
        assert_eq!(
            damaged[0].records.map(|r| r.to_string()),
            Some(rows.to_string())
        );
        assert_eq!(damaged[0].reason, reason);
    }
}

#[test]
fn an_unsealed_part_and_strangers_are_listed() {
    let t = Tmp::new("unsealed");
    write(&t.0, &[(3, vec![k(1, 1, 1, 2)])]);
    std::fs::create_dir(t.0.join(".unsealed-00000002")).unwrap();
    std::fs::write(t.0.join(".unsealed-00000002/kernels.parquet"), [0u8; 100]).unwrap();
    std::fs::write(t.0.join("parts/notes.txt"), "x").unwrap();
    std::fs::write(t.0.join("parts/00000009"), "not a directory").unwrap();
    let s = Store::open(&t.0).unwrap();
    assert_eq!(s.parts.len(), 1);
    assert_eq!(s.unsealed, vec![(".unsealed-00000002".to_string(), 100)]);
    assert_eq!(s.strangers, ["00000009", "notes.txt"]);
}

#[test]
fn an_old_session_file_is_refused_naming_its_format() {
    let t = Tmp::new("old");
    let mut old = b"GPUPROFS".to_vec();
    old.extend(2u32.to_le_bytes());
    old.extend(4u32.to_le_bytes());
    old.extend([0u8; 4]);
    std::fs::write(t.0.join("session.gpuprof"), &old).unwrap();
    let want = format!(
        "{} is a session of format 2 (a single session.gpuprof file, gpuprof before the \
         columnar session); this gpuprof reads format 3 and later (a directory of Parquet parts): \
         record the run again",
        t.0.join("session.gpuprof").display()
    );
    assert_eq!(Store::open(&t.0).unwrap_err().to_string(), want);
    assert_eq!(
        Store::open(&t.0.join("session.gpuprof"))
            .unwrap_err()
            .to_string(),
        want
    );
    std::fs::remove_file(t.0.join("session.gpuprof")).unwrap();
    assert_eq!(
        Store::open(&t.0).unwrap_err().to_string(),
        format!("{}: no session here (no parts/ directory)", t.0.display())
    );
}

#[test]
fn a_newer_part_version_is_an_error_naming_it() {
    let t = Tmp::new("newer");
    write(&t.0, &[(3, vec![k(1, 1, 1, 2)])]);
    let path = t.0.join("parts/00000001/manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let json = text
        .lines()
        .next()
        .unwrap()
        .replace("\"version\":4", "\"version\":5");
    forge_manifest(
        &path,
        format!("{json}\ncrc32c {:08x}\n", crc32c::crc32c(json.as_bytes())).as_bytes(),
    );
    let s = Store::open(&t.0).unwrap();
    assert_eq!(
        s.read_part(0).unwrap_err().to_string(),
        format!(
            "{}: session version 5, newer than this gpuprof reads (4); use a newer gpuprof",
            path.display()
        )
    );
}

/// The encodings of every column chunk of `file`, by column path, and whether it has
/// a dictionary page.
fn column_encodings(file: &Path) -> Vec<(String, Vec<parquet::basic::Encoding>, bool)> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let bytes = bytes::Bytes::from(std::fs::read(file).unwrap());
    let reader = SerializedFileReader::new(bytes).unwrap();
    let mut out = Vec::new();
    for rg in reader.metadata().row_groups() {
        for c in rg.columns() {
            out.push((
                c.column_path().string(),
                c.encodings().collect(),
                c.dictionary_page_offset().is_some(),
            ));
        }
    }
    out
}

#[test]
fn columns_are_encoded_as_documented_and_a_kernel_costs_at_most_40_bytes() {
    use parquet::basic::Encoding;
    let t = Tmp::new("encodings");
    // A busy stream with noisy times (an LCG), counters on every launch, NVTX ranges:
    // every value distinct where a real run's would be.
    let mut x = 12345u64;
    let mut next = move |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let kernels = 20_000u32;
    let (mut cpu, mut gpu) = (1_764_000_000_000_000_000u64, 1_764_000_000_000_000_000u64);
    let mut records = Vec::new();
    for i in 0..kernels {
        let corr = 100 + 2 * i + next(2) as u32;
        let start = cpu + next(1_000);
        cpu = start + 2_000 + next(6_000);
        records.push(launch(corr, 77, start, cpu));
        let k_start = gpu.max(start) + 600 + next(1_200);
        gpu = k_start + 1_500 + next(if i % 4 == 0 { 200_000 } else { 8_000 });
        records.push(k(1 + i % 12, corr, k_start, gpu));
        let d = (gpu - k_start) as f64;
        records.push(counters(
            corr,
            i % 5,
            &[
                (20, d * 1_024.0 + next(1 << 20) as f64),
                (21, d * 1.755),
                (22, -0.0),
            ],
        ));
        if i % 300 == 0 {
            records.push(marker(marker_flags::START, i / 300 + 1, 77, start, 3, 0));
            records.push(marker(marker_flags::END, i / 300 + 1, 77, cpu, 0, 0));
        }
    }
    records.push(Record::CounterSample(CounterSample {
        device_id: 0,
        start_ns: 5,
        end_ns: 9,
        metrics: wire::testing::values(&[(20, f64::MIN_POSITIVE), (21, 1e300)]),
    }));
    write(&t.0, &[(9, records.clone())]);
    let (back, damaged) = read_all(&t.0);
    assert!(damaged.is_empty(), "{damaged:?}");
    assert_eq!(
        back,
        in_table_order(9, &records),
        "every value comes back exactly"
    );

    let part = t.0.join("parts/00000001");
    let mut checked = 0;
    for table in tables::TABLES {
        let file = part.join(format!("{}.parquet", table.name));
        if !file.exists() {
            continue;
        }
        for (path, encodings, dictionary) in column_encodings(&file) {
            let name = path.split('.').next().unwrap();
            let delta = name.ends_with("_ns") || ["correlation_id", "call", "id"].contains(&name);
            if delta {
                assert_eq!(
                    (
                        encodings.contains(&Encoding::DELTA_BINARY_PACKED),
                        dictionary
                    ),
                    (true, false),
                    "{}.{path}: {encodings:?}",
                    table.name
                );
                checked += 1;
            } else if path == "value.list.item" {
                assert_eq!(
                    (encodings.contains(&Encoding::PLAIN), dictionary),
                    (true, false),
                    "{}.{path}: {encodings:?}",
                    table.name
                );
                checked += 1;
            }
        }
    }
    // launches 3, kernels 3, counters 2, markers 2, samples 3.
    assert_eq!(checked, 13);
    let bytes: u64 = std::fs::read_dir(&part)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let per_kernel = bytes as f64 / kernels as f64;
    assert!(
        per_kernel <= 40.0,
        "{bytes} bytes: {per_kernel:.1} per kernel"
    );
}

#[test]
fn a_processes_file_from_before_the_environment_column_reads_without_one() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let t = Tmp::new("old-processes");
    let process = every_kind(7).remove(0);
    write(&t.0, &[(7, vec![process.clone(), k(1, 1, 100, 200)])]);
    let part = t.0.join("parts/00000001");
    let file = part.join("processes.parquet");
    // The file as gpuprof wrote it before `environment`: the same columns but that one.
    let bytes = bytes::Bytes::from(std::fs::read(&file).unwrap());
    let batch = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .unwrap()
        .build()
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let last = batch.num_columns() - 1;
    assert_eq!(batch.schema().field(last).name(), "environment");
    let old = batch.project(&(0..last).collect::<Vec<_>>()).unwrap();
    let mut out = Vec::new();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(&mut out, old.schema(), Some(writer::properties()))
            .unwrap();
    w.write(&old).unwrap();
    w.close().unwrap();
    std::fs::write(&file, &out).unwrap();
    let manifest_path = part.join("manifest.json");
    let mut m = manifest::Manifest::parse(&std::fs::read(&manifest_path).unwrap()).unwrap();
    let entry = m.files.iter_mut().find(|f| f.table == "processes").unwrap();
    entry.bytes = out.len() as u64;
    entry.crc32c = crc32c::crc32c(&out);
    forge_manifest(&manifest_path, &m.to_bytes());

    let (back, damaged) = read_all(&t.0);
    assert_eq!(damaged, Vec::new());
    let Record::Process(mut want) = process else {
        unreachable!()
    };
    want.environment = Vec::new();
    assert_eq!(back[0], (7, Record::Process(want)));
    assert_eq!(back.len(), 2);

    // One column fewer than that is a damaged file, not a process without a command.
    let fewer = batch.project(&(0..last - 1).collect::<Vec<_>>()).unwrap();
    let mut out = Vec::new();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(&mut out, fewer.schema(), Some(writer::properties()))
            .unwrap();
    w.write(&fewer).unwrap();
    w.close().unwrap();
    std::fs::write(&file, &out).unwrap();
    let mut m = manifest::Manifest::parse(&std::fs::read(&manifest_path).unwrap()).unwrap();
    let entry = m.files.iter_mut().find(|f| f.table == "processes").unwrap();
    entry.bytes = out.len() as u64;
    entry.crc32c = crc32c::crc32c(&out);
    forge_manifest(&manifest_path, &m.to_bytes());
    let (back, damaged) = read_all(&t.0);
    assert_eq!(back.len(), 1);
    assert_eq!(damaged.len(), 1);
    assert_eq!(
        damaged[0].reason,
        format!(
            "table processes: {} columns, expected {} to {}",
            last - 1,
            last,
            last + 1
        )
    );
}

/// docs/SESSION.md's table of tables: for each table, its columns in order, each
/// with its kind as the doc writes it ("a, b (u32)": the type after a group of names
/// applies to all of them).
fn documented_tables() -> Vec<(String, Vec<(String, String)>)> {
    let doc = include_str!("../../../docs/SESSION.md");
    let section = doc
        .split("\n## The session's tables")
        .nth(1)
        .expect("SESSION.md has the section")
        .split("\n## ")
        .next()
        .unwrap();
    let mut out = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let names: Vec<String> = cells[0]
            .trim_start_matches("| ")
            .split(", ")
            .map(|n| n.trim_matches('`').to_string())
            .collect();
        let mut columns = Vec::new();
        let mut untyped = Vec::new();
        for item in split_top_level(cells[1]) {
            let (name, kind) = match item.split_once(" (") {
                Some((name, rest)) => (name, Some(rest)),
                None => (item.as_str(), None),
            };
            untyped.push(name.to_string());
            if let Some(rest) = kind {
                let kind = rest.split([',', ':', ')']).next().unwrap().trim();
                columns.extend(untyped.drain(..).map(|n| (n, kind.to_string())));
            }
        }
        assert!(
            untyped.is_empty(),
            "{line}: columns without a type: {untyped:?}"
        );
        for name in names {
            out.push((name, columns.clone()));
        }
    }
    out
}

/// `s` split at the commas outside parentheses.
fn split_top_level(s: &str) -> Vec<String> {
    let (mut out, mut depth, mut cur) = (Vec::new(), 0, String::new());
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur.trim().to_string());
    out
}

#[test]
fn session_md_lists_every_table_with_the_columns_and_kinds_it_has() {
    let word = |k: Kind| match k {
        Kind::U8 => "u8",
        Kind::U16 => "u16",
        Kind::U32 => "u32",
        Kind::U64 => "u64",
        Kind::I32 => "i32",
        Kind::F64 => "f64",
        Kind::Bool => "bool",
        Kind::Str => "string",
        Kind::Uuid => "16 bytes",
        Kind::StrList => "list of string",
        Kind::U32List => "list of u32",
        Kind::F64List => "list of f64",
        Kind::U32ListList => "list of list of u32",
    };
    let declared: Vec<(String, Vec<(String, String)>)> = TABLES
        .iter()
        .map(|t| {
            let columns = t
                .columns
                .iter()
                .map(|(n, k)| (n.to_string(), word(*k).to_string()));
            (t.name.to_string(), columns.collect())
        })
        .collect();
    assert_eq!(documented_tables(), declared);
}

/// A finished session of three parts holding 1, 2 and 3 kernels.
fn three_parts(dir: &Path) {
    let kernels = |n: u32| (1..=n).map(|c| k(1, c, 1, 2)).collect::<Vec<_>>();
    write_parts(dir, &[(3, kernels(1)), (3, kernels(2)), (3, kernels(3))]).unwrap();
}

/// What a reader finds of the session in `dir`: the kernels read, and every damage
/// (the session's, then the parts') as (file, records, reason).
fn read_with_damage(dir: &Path) -> (usize, Vec<(String, Option<u64>, String)>) {
    let store = Store::open(dir).unwrap();
    let mut damage: Vec<Damage> = store.damaged.clone();
    let mut kernels = 0;
    for i in 0..store.parts.len() {
        let p = store.read_part(i).unwrap();
        kernels += p.records.len();
        damage.extend(p.damaged);
    }
    let damage = damage.into_iter().map(|d| (d.file, d.records, d.reason));
    (kernels, damage.collect())
}

/// A damage of `file` with `records` (`None`: unknown) and `reason`.
fn d(file: &str, records: Option<u64>, reason: &str) -> (String, Option<u64>, String) {
    (file.to_string(), records, reason.to_string())
}

const MISSING: &str = "missing: the session's index lists it";
const NOT_OURS: &str =
    "not a part of this session (its index does not list it: a copy, or another session's); skipped";

#[test]
fn the_index_names_every_part_missing_added_replaced_or_renumbered() {
    let t = Tmp::new("index");
    let parts = t.0.join("parts");
    let fresh = || {
        let _ = std::fs::remove_dir_all(&t.0);
        std::fs::create_dir_all(&t.0).unwrap();
        three_parts(&t.0);
    };
    fresh();
    assert_eq!(read_with_damage(&t.0), (6, vec![]));

    // Deleted.
    std::fs::remove_dir_all(parts.join("00000002")).unwrap();
    assert_eq!(
        read_with_damage(&t.0),
        (4, vec![d("parts/00000002", Some(2), MISSING)])
    );

    // Duplicated: a copy of part 1 as part 4 is read once.
    fresh();
    std::fs::create_dir(parts.join("00000004")).unwrap();
    for f in ["kernels.parquet", "manifest.json"] {
        std::fs::copy(
            parts.join("00000001").join(f),
            parts.join("00000004").join(f),
        )
        .unwrap();
    }
    assert_eq!(
        read_with_damage(&t.0),
        (6, vec![d("parts/00000004", None, NOT_OURS)])
    );

    // Renumbered: part 3 moved to 5.
    fresh();
    std::fs::rename(parts.join("00000003"), parts.join("00000005")).unwrap();
    assert_eq!(
        read_with_damage(&t.0),
        (
            3,
            vec![
                d("parts/00000005", None, NOT_OURS),
                d("parts/00000003", Some(3), MISSING)
            ]
        )
    );

    // Another session's part 2 in place of ours.
    let other = Tmp::new("index-other");
    write_parts(
        &other.0,
        &[(9, vec![k(1, 1, 1, 2)]), (9, vec![k(1, 2, 1, 2)])],
    )
    .unwrap();
    fresh();
    std::fs::remove_dir_all(parts.join("00000002")).unwrap();
    std::fs::rename(other.0.join("parts/00000002"), parts.join("00000002")).unwrap();
    let foreign = "it is not the manifest the session's index lists (a part of another \
                   session); the whole part is skipped";
    assert_eq!(
        read_with_damage(&t.0),
        (4, vec![d("parts/00000002/manifest.json", Some(2), foreign)])
    );

    // A part directory replaced by a symbolic link to it: not followed, so missing.
    fresh();
    std::fs::rename(parts.join("00000002"), t.0.join("moved")).unwrap();
    std::os::unix::fs::symlink(t.0.join("moved"), parts.join("00000002")).unwrap();
    assert_eq!(
        read_with_damage(&t.0),
        (4, vec![d("parts/00000002", Some(2), MISSING)])
    );

    // Every part gone.
    fresh();
    for n in 1..=3 {
        std::fs::remove_dir_all(parts.join(format!("0000000{n}"))).unwrap();
    }
    let all_missing = (1..=3).map(|n| d(&format!("parts/0000000{n}"), Some(n), MISSING));
    assert_eq!(read_with_damage(&t.0), (0, all_missing.collect()));

    // A deleted manifest counts the records the index gives.
    fresh();
    std::fs::remove_file(parts.join("00000003/manifest.json")).unwrap();
    let (kernels, damage) = read_with_damage(&t.0);
    assert_eq!((kernels, damage.len()), (3, 1));
    assert_eq!(
        (damage[0].0.as_str(), damage[0].1),
        ("parts/00000003/manifest.json", Some(3))
    );
}

#[test]
fn a_session_without_its_index_or_never_finished_says_so() {
    let t = Tmp::new("unfinished");
    // A collector killed between seals: two parts, never finished.
    let w = write(&t.0, &[(3, vec![k(1, 1, 1, 2)]), (3, vec![k(1, 2, 1, 2)])]);
    drop(w);
    let unfinished = "the session was not finished: its collector stopped before the run's \
                      end (killed?), and what it held after part 2 is lost";
    assert_eq!(
        read_with_damage(&t.0),
        (2, vec![d("index.json", None, unfinished)])
    );

    let t = Tmp::new("no-index");
    three_parts(&t.0);
    std::fs::remove_file(t.0.join("index.json")).unwrap();
    let (kernels, damage) = read_with_damage(&t.0);
    assert_eq!((kernels, damage.len()), (6, 1));
    assert!(
        damage[0].2.starts_with("cannot open: ")
            && damage[0].2.ends_with(
                " (a session of layout 4 and later keeps an index); whole parts may be \
                 missing unnoticed"
            ),
        "{:?}",
        damage[0]
    );

    // Parts listed out of order (not as a collector writes them): not believed.
    let t = Tmp::new("unordered-index");
    three_parts(&t.0);
    let path = t.0.join("index.json");
    let mut index = index::Index::parse(&std::fs::read(&path).unwrap()).unwrap();
    index.parts.swap(0, 1);
    std::fs::write(&path, index.to_bytes()).unwrap();
    let (kernels, damage) = read_with_damage(&t.0);
    assert_eq!((kernels, damage.len()), (6, 1));
    assert_eq!(
        damage[0].2,
        "part 1 listed after part 2: not in increasing order; whole parts may be missing unnoticed"
    );

    // A flipped bit: the index is not believed, the parts are read as found.
    let t = Tmp::new("bad-index");
    three_parts(&t.0);
    flip(&t.0.join("index.json"), 30);
    let (kernels, damage) = read_with_damage(&t.0);
    assert_eq!((kernels, damage.len()), (6, 1));
    assert!(
        damage[0].2.starts_with("checksum mismatch"),
        "{:?}",
        damage[0]
    );
}

/// An index lists its uncounted losses as a collector writes them: at most 64, each
/// at most 8192 bytes; one listing more, or a longer one, is not believed (a forged
/// index could otherwise fill a report with lines). The writer keeps to it: the 65th
/// loss and beyond are counted in the last entry, a long message is cut.
#[test]
fn an_index_lists_at_most_64_uncounted_losses_of_bounded_length() {
    use super::index::{Index, MAX_LOST, MAX_LOST_BYTES};
    let with = |lost: Vec<String>| Index {
        lost,
        ..Index::default()
    };
    let ok = with(vec!["process 1: lost".to_string(); MAX_LOST]);
    assert_eq!(Index::parse(&ok.to_bytes()), Ok(ok.clone()));
    let many = with(vec!["process 1: lost".to_string(); MAX_LOST + 1]);
    let e = Index::parse(&many.to_bytes()).unwrap_err();
    assert!(e.starts_with("65 uncounted losses listed"), "{e}");
    let long = with(vec!["x".repeat(MAX_LOST_BYTES + 1)]);
    assert!(Index::parse(&long.to_bytes()).is_err());

    let t = Tmp::new("lost");
    let mut w = StoreWriter::create(&t.0, PartLimits::default()).unwrap();
    w.note_loss("é".repeat(MAX_LOST_BYTES));
    for n in 0..MAX_LOST + 9 {
        w.note_loss(format!("loss {n}"));
    }
    w.finish().unwrap();
    let store = Store::open(&t.0).unwrap();
    let lost = store.lost();
    assert_eq!(lost.len(), MAX_LOST);
    assert!(lost[0].len() <= MAX_LOST_BYTES && lost[0].ends_with("..."));
    assert_eq!(lost[1], "loss 0");
    assert_eq!(lost[MAX_LOST - 1], "11 more losses like those above");
}

#[test]
fn only_the_tables_whose_rows_can_be_refused_are_read_whole() {
    use super::tables::{rows_may_fail, TableId, TABLE_IDS};
    let whole: Vec<TableId> = TABLE_IDS
        .iter()
        .copied()
        .filter(|&id| rows_may_fail(id))
        .collect();
    // Metric lists of different lengths, an unknown drop source; NVML readings are
    // read apart, whole.
    assert_eq!(
        whole,
        [
            TableId::KernelCounters,
            TableId::CounterSamples,
            TableId::Dropped,
            TableId::DeviceSamples
        ]
    );
}

#[test]
fn a_table_read_in_chunks_gives_every_row_in_order_and_the_chunks_are_reused() {
    let t = Tmp::new("chunks");
    let mut w = StoreWriter::create(&t.0, PartLimits::default()).unwrap();
    let rows = 3 * 4096 + 17;
    let sent: Vec<Record> = (0..rows as u64)
        .map(|i| Record::Kernel(kernel(1, i as u32 + 1, 1_000 * i, 1_000 * i + 500)))
        .collect();
    for r in &sent {
        w.push(42, r);
    }
    w.seal().unwrap();
    w.finish().unwrap();
    let store = Store::open(&t.0).unwrap();
    let mut buffer = Vec::new();
    let mut chunks = Vec::new();
    let mut got = Vec::new();
    let part = store
        .read_part_tables(0, &[], &mut buffer, |chunk| {
            chunks.push(chunk.len());
            got.extend(chunk.drain(..).map(|(pid, r)| {
                assert_eq!(pid, 42);
                r
            }));
        })
        .unwrap();
    assert!(part.damaged.is_empty(), "{:?}", part.damaged);
    assert_eq!(chunks, [4096, 4096, 4096, 17]);
    assert_eq!(got, sent);
}
