//! The corpus of damaged files (`tests/fuzz-corpus/`): small session files and rings,
//! each damaged in one way the fuzzers and the fault matrix exercise, replayed through
//! what the commands run. `EXPECTED` beside them says what each must give: for a
//! session, the exit status of `gpuprof report`, the frames read, every damaged region
//! (offset+bytes), the cut tail, the impossible records and the kernels reported; for a
//! ring, what opening and draining it gives. The files are fixed bytes on purpose: a
//! file written once must go on reading the same way. `write_the_corpus` (ignored) is
//! how they were made: `cargo test -p gpuprof-tests --test fuzz_corpus -- --ignored`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gpuprof_collector::analysis::peaks::Overrides;
use gpuprof_collector::analysis::{chrome_trace, efficiency};
use gpuprof_collector::render::{self, Format};
use gpuprof_collector::roofline_points::{charts, points, points_csv};
use gpuprof_collector::roofline_svg::render_svg;
use gpuprof_collector::session::load;
use gpuprof_tests::gpuprof_command;
use wire::ring::{RingError, RingReader, RingWriter, HEADER_SIZE, WRAP};
use wire::session::{crc32c, SessionWriter, FRAME_HEADER_LEN, HEADER_LEN, MAGIC, SYNC};
use wire::testing::{counters, gemm, k, launch, marker, on, process, string};
use wire::{marker_flags, DeviceInfo, DropSource, Dropped, End, Record};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz-corpus")
}

// ---------------------------------------------------------------------------------
// How the corpus was made

const T0: u64 = 1_700_000_000_000_000_000;

/// The frames of the small session every session file of the corpus starts from.
fn frames() -> Vec<(u32, Vec<Record>)> {
    let device = Record::Device(DeviceInfo {
        id: 0,
        ..wire::testing::device("NVIDIA H100 80GB HBM3", (9, 0), 132, 1_980_000)
    });
    vec![
        (
            10,
            vec![
                process(10, "./llm --steps 1"),
                device,
                string(1, "_Z4gemmPfS_i"),
                string(2, "rmsnorm_kernel"),
                string(3, "decode"),
                string(4, "cublasGemmEx"),
                string(5, "dram__bytes_read.sum"),
            ],
        ),
        (
            10,
            vec![
                marker(marker_flags::START, 1, 5, T0, 3, 0),
                launch(1, 5, T0 + 10, T0 + 20),
                gemm(1, 1, 0, 1024, 1024, 1024),
                k(1, 1, T0 + 100, T0 + 2_100),
                counters(1, 0, &[(5, 4.0e6)]),
            ],
        ),
        (
            10,
            vec![
                launch(2, 5, T0 + 30, T0 + 40),
                k(2, 2, T0 + 2_200, T0 + 2_700),
                marker(marker_flags::END, 1, 5, T0 + 3_000, 0, 0),
            ],
        ),
        (
            10,
            vec![
                k(2, 3, T0 + 3_100, T0 + 3_400),
                Record::Dropped(Dropped {
                    source: DropSource::Cupti,
                    records: 1,
                }),
                Record::End(End { records: 15 }),
            ],
        ),
    ]
}

/// The session file of `frames` (format 2) and each frame's offset.
fn session_bytes(frames: &[(u32, Vec<Record>)]) -> (Vec<u8>, Vec<u64>) {
    let dir = std::env::temp_dir().join(format!("gpuprof-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.gpuprof");
    let _ = std::fs::remove_file(&path);
    let mut w = SessionWriter::create(&path).unwrap();
    let mut offsets = Vec::new();
    for (pid, records) in frames {
        offsets.push(w.len());
        w.append(*pid, &wire::encode_batch(records).unwrap())
            .unwrap();
    }
    w.sync().unwrap();
    drop(w);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    (bytes, offsets)
}

/// A format 1 file: 16-byte header, frames `length | pid | payload`.
fn v1_bytes(frames: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut b = Vec::from(MAGIC);
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&3u32.to_le_bytes());
    for (pid, payload) in frames {
        b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(payload);
    }
    b
}

fn flip(mut b: Vec<u8>, at: u64, bit: u8) -> Vec<u8> {
    b[at as usize] ^= 1 << bit;
    b
}

fn sessions() -> Vec<(&'static str, Vec<u8>)> {
    let (intact, o) = session_bytes(&frames());
    let len = intact.len() as u64;
    let insert = |at: u64, junk: &[u8]| {
        let mut b = intact.clone();
        b.splice(at as usize..at as usize, junk.iter().copied());
        b
    };
    let mut protocol_99 = intact.clone();
    protocol_99[12..16].copy_from_slice(&99u32.to_le_bytes());
    let crc = crc32c(&protocol_99[..16]);
    protocol_99[16..20].copy_from_slice(&crc.to_le_bytes());
    let payloads: Vec<(u32, Vec<u8>)> = frames()
        .into_iter()
        .map(|(pid, r)| (pid, wire::encode_batch(&r).unwrap()))
        .collect();
    let mut v1_bad = payloads.clone();
    v1_bad.insert(2, (10, b"\xc1\xc1\xc1".to_vec()));
    let v1_first = 16 + 8 + payloads[0].1.len();
    let mut v1_length = v1_bytes(&payloads);
    v1_length[v1_first..v1_first + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let impossible = on(
        10,
        vec![
            string(1, "_Z4gemmPfS_i"),
            k(1, 1, T0 + 100, T0),
            k(1, 2, T0, u64::MAX),
            k(1, 3, T0, T0 + 1_000),
            counters(3, 0, &[(1, f64::NAN)]),
            counters(3, 0, &[(1, f64::MAX)]),
            gemm(3, 1, 0, u64::MAX, 1, 1),
            Record::Dropped(Dropped {
                source: DropSource::Ring,
                records: u64::MAX,
            }),
            Record::Dropped(Dropped {
                source: DropSource::Ring,
                records: u64::MAX,
            }),
        ],
    );
    let (impossible, _) = session_bytes(&[(10, impossible.into_iter().map(|(_, r)| r).collect())]);
    // A frame stored whole inside the payload of another whose header is damaged.
    let inner = {
        let (b, _) = session_bytes(&[(77, vec![Record::End(End { records: 1 })])]);
        b[HEADER_LEN as usize..].to_vec()
    };
    let nested = {
        let dir = std::env::temp_dir().join(format!("gpuprof-corpus-n-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("n.gpuprof");
        let _ = std::fs::remove_file(&path);
        let mut w = SessionWriter::create(&path).unwrap();
        w.append(10, &inner).unwrap();
        w.append(10, &wire::encode_batch(&frames()[0].1).unwrap())
            .unwrap();
        w.sync().unwrap();
        drop(w);
        let b = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        flip(b, HEADER_LEN + 9, 0)
    };
    let mut marker_junk = vec![0x5a; 40];
    marker_junk[10..14].copy_from_slice(&SYNC);
    vec![
        ("intact.gpuprof", intact.clone()),
        ("empty.gpuprof", intact[..HEADER_LEN as usize].to_vec()),
        ("magic-flip.gpuprof", flip(intact.clone(), 3, 2)),
        ("format-flip.gpuprof", flip(intact.clone(), 8, 3)),
        ("protocol-flip.gpuprof", flip(intact.clone(), 12, 6)),
        ("header-crc-flip.gpuprof", flip(intact.clone(), 17, 0)),
        ("protocol-99.gpuprof", protocol_99),
        ("header-cut.gpuprof", intact[..13].to_vec()),
        (
            "frame0-payload-flip.gpuprof",
            flip(intact.clone(), o[0] + FRAME_HEADER_LEN + 30, 5),
        ),
        (
            "frame1-length-flip.gpuprof",
            flip(intact.clone(), o[1] + 5, 1),
        ),
        ("frame2-marker-flip.gpuprof", flip(intact.clone(), o[2], 0)),
        ("frame2-pid-flip.gpuprof", flip(intact.clone(), o[2] + 8, 7)),
        (
            "frame3-payload-crc-flip.gpuprof",
            flip(intact.clone(), o[3] + 13, 4),
        ),
        (
            "frame3-header-crc-flip.gpuprof",
            flip(intact.clone(), o[3] + 19, 7),
        ),
        (
            "cut-in-payload.gpuprof",
            intact[..len as usize - 7].to_vec(),
        ),
        (
            "cut-in-frame-header.gpuprof",
            intact[..o[3] as usize + 11].to_vec(),
        ),
        ("junk-between-frames.gpuprof", insert(o[2], &marker_junk)),
        ("junk-tail.gpuprof", insert(len, &[0x33; 25])),
        ("short-junk-tail.gpuprof", insert(len, &[0x33; 5])),
        ("nested-frame.gpuprof", nested),
        ("impossible-records.gpuprof", impossible),
        ("v1-intact.gpuprof", v1_bytes(&payloads)),
        ("v1-undecodable-frame.gpuprof", v1_bytes(&v1_bad)),
        ("v1-bad-length.gpuprof", v1_length),
    ]
}

fn rings() -> Vec<(&'static str, Vec<u8>)> {
    let dir = std::env::temp_dir().join(format!("gpuprof-corpus-r-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ring-7.ring");
    let _ = std::fs::remove_file(&path);
    let mut w = RingWriter::create(&path, 4096, 7).unwrap();
    w.try_write(&wire::encode_batch(&frames()[2].1).unwrap())
        .unwrap();
    w.try_write(&wire::encode_batch(&frames()[3].1).unwrap())
        .unwrap();
    w.finish();
    drop(w);
    let valid = std::fs::read(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let set = |at: usize, v: &[u8]| {
        let mut b = valid.clone();
        b[at..at + v.len()].copy_from_slice(v);
        b
    };
    let first_len = u32::from_le_bytes(valid[HEADER_SIZE..HEADER_SIZE + 4].try_into().unwrap());
    vec![
        ("valid.ring", valid.clone()),
        ("bad-magic.ring", set(2, b"X")),
        ("layout-1.ring", set(8, &1u32.to_le_bytes())),
        ("protocol-99.ring", set(12, &99u32.to_le_bytes())),
        (
            "capacity-not-power-of-two.ring",
            set(16, &4097u64.to_le_bytes()),
        ),
        (
            "capacity-not-file-size.ring",
            set(16, &8192u64.to_le_bytes()),
        ),
        ("short-file.ring", valid[..HEADER_SIZE - 1].to_vec()),
        ("write-behind-read.ring", set(256, &u64::MAX.to_le_bytes())),
        (
            "write-far-ahead.ring",
            set(128, &(1u64 << 40).to_le_bytes()),
        ),
        (
            "length-past-written.ring",
            set(HEADER_SIZE, &4000u32.to_le_bytes()),
        ),
        (
            "wrap-marker-at-start.ring",
            set(HEADER_SIZE, &WRAP.to_le_bytes()),
        ),
        (
            "second-length-huge.ring",
            set(
                HEADER_SIZE + 4 + first_len as usize,
                &u32::MAX.to_le_bytes(),
            ),
        ),
    ]
}

#[test]
#[ignore = "writes tests/fuzz-corpus; run by hand to add to it"]
fn write_the_corpus() {
    // Only files not there yet: a file written once stays as it is. (Ring files
    // are remade, after deleting them, when the ring layout changes: a ring never
    // outlives the gpuprof that made it.)
    for (sub, files) in [("sessions", sessions()), ("rings", rings())] {
        let dir = corpus_dir().join(sub);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in files {
            let path = dir.join(name);
            if !path.exists() {
                std::fs::write(path, bytes).unwrap();
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Replaying it

/// `EXPECTED`: file name -> `key=value` facts.
fn expected() -> BTreeMap<String, BTreeMap<String, String>> {
    let text = std::fs::read_to_string(corpus_dir().join("EXPECTED")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, facts) = l.split_once(':').expect("name: facts");
            let facts = facts
                .split_whitespace()
                .map(|f| {
                    let (k, v) = f.split_once('=').expect("key=value");
                    (k.to_string(), v.to_string())
                })
                .collect();
            (name.trim().to_string(), facts)
        })
        .collect()
}

/// What reading a session file of the corpus gives, as `EXPECTED` writes it.
fn session_facts(path: &Path) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    let out = gpuprof_command()
        .args(["report", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    let code = out.status.code().expect("an exit status");
    facts.insert("report".to_string(), code.to_string());
    let loaded = match load(path) {
        Ok(l) => l,
        Err(e) => {
            let e = format!("{e:#}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                stderr,
                format!("gpuprof: error: {e}\n"),
                "{}",
                path.display()
            );
            // The message without the path, up to its details, as one word.
            let what = e
                .strip_prefix(&format!("{}: ", path.display()))
                .unwrap_or(&e)
                .split(['(', ';'])
                .next()
                .unwrap()
                .trim()
                .replace(' ', "_");
            facts.insert("error".to_string(), what);
            return facts;
        }
    };
    let i = &loaded.integrity;
    let peaks = Overrides::default();
    // Everything the commands compute and write, from what was read.
    let json = render::report(&loaded.records, i, Format::Json, None, &peaks);
    assert_eq!(String::from_utf8_lossy(&out.stdout), json);
    for format in [Format::Table, Format::Csv] {
        render::report(&loaded.records, i, format, None, &peaks);
    }
    serde_json::to_string(&chrome_trace(&loaded.records)).unwrap();
    let e = efficiency(&loaded.records, &peaks);
    points_csv(&points(&e));
    for (_, chart) in charts(&e) {
        render_svg(&chart);
    }
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    facts.insert("frames".to_string(), loaded.frames.to_string());
    facts.insert("kernels".to_string(), v["kernel_count"].to_string());
    let dropped = v["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["records"].as_u64().unwrap())
        .fold(0u64, u64::saturating_add);
    facts.insert("dropped".to_string(), dropped.to_string());
    let damaged: Vec<String> = i
        .damaged
        .iter()
        .map(|d| format!("{}+{}", d.offset, d.bytes))
        .collect();
    facts.insert(
        "damaged".to_string(),
        if damaged.is_empty() {
            "-".to_string()
        } else {
            damaged.join(",")
        },
    );
    facts.insert(
        "truncated".to_string(),
        i.truncated
            .as_ref()
            .map_or("-".to_string(), |t| format!("{}+{}", t.offset, t.bytes)),
    );
    let impossible: u64 = i.impossible.iter().map(|r| r.records).sum();
    facts.insert("impossible".to_string(), impossible.to_string());
    facts
}

/// What opening and draining a ring of the corpus gives.
fn ring_facts(path: &Path) -> BTreeMap<String, String> {
    let mut facts = BTreeMap::new();
    // The reader writes its read position: it gets a copy.
    let copy = std::env::temp_dir().join(format!(
        "gpuprof-corpus-{}-{}",
        std::process::id(),
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::copy(path, &copy).unwrap();
    let kind = |e: &RingError| match e {
        RingError::Io { .. } => "io".to_string(),
        RingError::BadMagic { .. } => "bad_magic".to_string(),
        RingError::Version { found, .. } => format!("layout_{found}"),
        RingError::Protocol { found, .. } => format!("protocol_{found}"),
        RingError::Corrupt { offset, .. } => format!("corrupt@{offset}"),
        other => format!("{other}"),
    };
    match RingReader::open(&copy) {
        Err(e) => {
            facts.insert("open".to_string(), kind(&e));
        }
        Ok(mut r) => {
            facts.insert("open".to_string(), "ok".to_string());
            let mut n = 0;
            let end = loop {
                match r.try_read() {
                    Ok(Some(frame)) => {
                        wire::decode_batch(&frame).unwrap();
                        n += 1;
                    }
                    Ok(None) => break "empty".to_string(),
                    Err(e) => break kind(&e),
                }
            };
            facts.insert("frames".to_string(), n.to_string());
            facts.insert("then".to_string(), end);
        }
    }
    std::fs::remove_file(&copy).unwrap();
    facts
}

#[test]
fn every_corpus_file_reads_as_expected() {
    let expected = expected();
    let mut seen = Vec::new();
    for (sub, facts_of) in [
        (
            "sessions",
            session_facts as fn(&Path) -> BTreeMap<String, String>,
        ),
        ("rings", ring_facts),
    ] {
        let mut names: Vec<PathBuf> = std::fs::read_dir(corpus_dir().join(sub))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for path in names {
            let name = format!("{sub}/{}", path.file_name().unwrap().to_string_lossy());
            let want = expected
                .get(&name)
                .unwrap_or_else(|| panic!("{name} is not in EXPECTED"));
            assert_eq!(&facts_of(&path), want, "{name}");
            seen.push(name);
        }
    }
    let listed: Vec<&String> = expected.keys().collect();
    seen.sort();
    assert_eq!(
        listed,
        seen.iter().collect::<Vec<_>>(),
        "EXPECTED lists files not in the corpus"
    );
}
