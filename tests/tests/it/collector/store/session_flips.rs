//! Single-bit flips of a session recorded on the simulated stack, read by the code
//! `gpuprof report --format json` runs (`gpuprof_collector::analysis::session::analyse` and
//! `report::report`, in process; the CLI's output is checked to be that very text).
//!
//! The guarantee (docs/ARCHITECTURE.md, "Session integrity"): no flip changes a report
//! silently. A flip anywhere in a part's file costs exactly that file (a table file:
//! its records; the manifest: its whole part): the report is, byte for byte, the
//! report of the session without those records, plus the statement of the damaged
//! file (its name, the records its manifest gives, bytes, reason).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gpuprof_collector::analysis::aggregate::{aggregate, Aggregate};
use gpuprof_collector::analysis::findings::findings;
use gpuprof_collector::analysis::roofline::peaks::Overrides;
use gpuprof_collector::analysis::session::analyse;
use gpuprof_collector::analysis::{DamagedFile, Integrity};
use gpuprof_collector::output::report::{self, Format};
use gpuprof_collector::store::tables::table_of;
use gpuprof_collector::store::Store;
use gpuprof_tests::{artifact, gpuprof_command, record_on_sim, Scratch};
use wire::Record;

/// One file of the recorded session.
struct FileInfo {
    /// Relative to the session directory.
    rel: String,
    bytes: Vec<u8>,
    /// Indexes (into `Recorded::records`) of the records a flip in it loses: its
    /// table's records in its part, the whole part for the manifest, none for the
    /// session's index (a damaged index is stated; the parts are read as found).
    loses: Vec<usize>,
}

/// The recorded session: its records (in reading order) and files.
struct Recorded {
    _scratch: Scratch,
    dir: PathBuf,
    records: Vec<(u32, Record)>,
    files: Vec<FileInfo>,
}

/// `cudarc-llm` recorded once per test binary with a 16 KiB ring (frames of at most
/// 4 KiB) and a part sealed after the frame that takes it to 60 records, so that
/// the session has several parts. Without counters: the reader treats their
/// records as any other, and a smaller report keeps 1,000 reads and renders (debug
/// build) to about 20 s. Without NVML readings: the expected report is computed from
/// the records alone.
fn recorded() -> &'static Recorded {
    static SESSION: OnceLock<Recorded> = OnceLock::new();
    SESSION.get_or_init(|| {
        let scratch = Scratch::new("session-flips");
        let dir = scratch.join("session");
        let o = record_on_sim("13.4")
            .args(["--part-rows", "60", "--ring-size", "16K", "--no-nvml", "-o"])
            .arg(&dir)
            .arg("--")
            .arg(artifact("cudarc-llm"))
            .env("GPUPROF_COUNTERS", "off")
            .output()
            .expect("run gpuprof record");
        assert!(
            o.status.success(),
            "gpuprof record: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let store = Store::open(&dir).unwrap();
        let mut records = Vec::new();
        let mut files = Vec::new();
        for i in 0..store.parts.len() {
            let part = store.read_part(i).unwrap();
            assert!(part.damaged.is_empty(), "{:?}", part.damaged);
            let first = records.len();
            let base = format!("parts/{:08}", part.number);
            for entry in std::fs::read_dir(dir.join(&base)).unwrap() {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                let loses: Vec<usize> = if name == "manifest.json" {
                    (first..first + part.records.len()).collect()
                } else {
                    let table = name.strip_suffix(".parquet").unwrap();
                    part.records
                        .iter()
                        .enumerate()
                        .filter(|(_, (_, r))| table_of(r).table().name == table)
                        .map(|(j, _)| first + j)
                        .collect()
                };
                let rel = format!("{base}/{name}");
                files.push(FileInfo {
                    bytes: std::fs::read(dir.join(&rel)).unwrap(),
                    rel,
                    loses,
                });
            }
            records.extend(part.records);
        }
        files.push(FileInfo {
            rel: "index.json".into(),
            bytes: std::fs::read(dir.join("index.json")).unwrap(),
            loses: Vec::new(),
        });
        files.sort_by(|a, b| a.rel.cmp(&b.rel));
        Recorded {
            _scratch: scratch,
            dir,
            records,
            files,
        }
    })
}

/// What `gpuprof report --format json` prints for the session at `dir`, or the error
/// it exits 2 with.
fn report_json(dir: &Path) -> Result<(String, Integrity), String> {
    let loaded = analyse(dir, |_, _| {}).map_err(|e| format!("{e:#}"))?;
    let found = findings(&loaded.aggregate, &loaded.integrity, &Overrides::default());
    let text = report::report(&found, Format::Json, None);
    Ok((text, loaded.integrity))
}

/// The aggregate of the recorded session without the records `lost`.
fn aggregate_without(r: &Recorded, lost: &[usize]) -> Aggregate {
    let records: Vec<(u32, Record)> = r
        .records
        .iter()
        .enumerate()
        .filter(|(i, _)| lost.binary_search(i).is_err())
        .map(|(_, x)| x.clone())
        .collect();
    aggregate(&records)
}

/// The report of `a` ([`aggregate_without`]), stating `damage`.
fn expected_json(a: &Aggregate, damage: Vec<DamagedFile>) -> String {
    let integrity = Integrity {
        damaged: damage,
        unsealed: Vec::new(),
        lost: Vec::new(),
        impossible: a.impossible_records(),
    };
    report::report(
        &findings(a, &integrity, &Overrides::default()),
        Format::Json,
        None,
    )
}

/// A deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// 1,000 (file, bit) positions: 200 in manifests (in turn), 800 spread over all the
/// session's bytes (one in each 800th of them, files in name order).
fn flips(r: &Recorded) -> Vec<(usize, u64)> {
    let mut rng = Rng(0x6770_7570_726f_6632);
    let manifests: Vec<usize> = (0..r.files.len())
        .filter(|i| r.files[*i].rel.ends_with("manifest.json"))
        .collect();
    let mut out: Vec<(usize, u64)> = (0..200)
        .map(|i| {
            let f = manifests[i % manifests.len()];
            (f, rng.below(r.files[f].bytes.len() as u64 * 8))
        })
        .collect();
    let bits: u64 = r.files.iter().map(|f| f.bytes.len() as u64 * 8).sum();
    for i in 0..800 {
        let (lo, hi) = (bits * i / 800, bits * (i + 1) / 800);
        let mut at = lo + rng.below(hi - lo);
        let mut f = 0;
        while at >= r.files[f].bytes.len() as u64 * 8 {
            at -= r.files[f].bytes.len() as u64 * 8;
            f += 1;
        }
        out.push((f, at));
    }
    out
}

#[test]
fn a_thousand_single_bit_flips_change_no_report_silently() {
    let r = recorded();
    let parts = r
        .files
        .iter()
        .filter(|f| f.rel.ends_with("manifest.json"))
        .count();
    assert!(parts >= 4, "{parts} parts");
    let baseline = expected_json(&aggregate_without(r, &[]), Vec::new());
    // The session without each file's records, made once per file flipped.
    let mut without: HashMap<usize, Aggregate> = HashMap::new();
    assert_eq!(report_json(&r.dir).unwrap().0, baseline);

    let (mut identical, mut damaged) = (0, 0);
    for (f, bit) in flips(r) {
        let file = &r.files[f];
        let path = r.dir.join(&file.rel);
        let mut b = file.bytes.clone();
        b[(bit / 8) as usize] ^= 1 << (bit % 8);
        std::fs::write(&path, &b).unwrap();
        let got = report_json(&r.dir);
        std::fs::write(&path, &file.bytes).unwrap();
        match got {
            Err(e) => panic!("{} bit {bit}: {e}", file.rel),
            Ok((text, integrity)) if text == baseline => {
                assert!(!integrity.any(), "{} bit {bit}: {integrity:?}", file.rel);
                identical += 1;
            }
            Ok((text, integrity)) => {
                assert_eq!(integrity.damaged.len(), 1, "{} bit {bit}", file.rel);
                let d = &integrity.damaged[0];
                assert_eq!(d.file, file.rel, "bit {bit}");
                // A damaged manifest's records are the count the session's index gives;
                // the index itself holds none (the whole session's count is unknown).
                let want = (file.rel != "index.json").then_some(file.loses.len() as u64);
                assert_eq!(d.records, want, "{} bit {bit}", file.rel);
                let a = without
                    .entry(f)
                    .or_insert_with(|| aggregate_without(r, &file.loses));
                let want = expected_json(a, integrity.damaged.clone());
                assert!(
                    text == want,
                    "{} bit {bit}: {text}\nexpected {want}",
                    file.rel
                );
                damaged += 1;
            }
        }
    }
    eprintln!(
        "1000 flips of a session of {} files in {parts} parts: {identical} identical, \
         {damaged} damaged files reported",
        r.files.len()
    );
    assert_eq!(identical + damaged, 1000);
    // Every file is covered by a checksum: no flip goes unnoticed.
    assert_eq!((identical, damaged), (0, 1000));
}

#[test]
fn the_cli_prints_what_the_library_renders() {
    let r = recorded();
    // In a copy: the other test flips the recorded session's files in place.
    let copy = r._scratch.join("cli-copy");
    for f in &r.files {
        let p = copy.join(&f.rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, &f.bytes).unwrap();
    }
    let report = || {
        gpuprof_command()
            .args(["report", "--format", "json"])
            .arg(&copy)
            .output()
            .unwrap()
    };
    let out = report();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        report_json(&copy).unwrap().0
    );
    // And the exit status 3 with the same text for a damaged one.
    let f = &r.files[r.files.len() / 2];
    let mut b = f.bytes.clone();
    b[0] ^= 1;
    std::fs::write(copy.join(&f.rel), &b).unwrap();
    let out = report();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        report_json(&copy).unwrap().0
    );
}
