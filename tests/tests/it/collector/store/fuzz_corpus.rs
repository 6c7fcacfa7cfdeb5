//! The corpus of damaged files (`tests/fuzz-corpus/`): small sessions and rings, each
//! damaged in one way the fuzzers and the fault matrix exercise, replayed through what
//! the commands run. `EXPECTED` beside them says what each must give: for a session,
//! the exit status of `gpuprof report`, the parts read, every damaged file (with the
//! records its manifest gives), the parts never sealed, the impossible records and the
//! kernels reported; for a ring, what opening and draining it gives. The files are
//! fixed bytes on purpose: a file written once must go on reading the same way. `write_the_corpus` (ignored) is
//! how they were made: `cargo test -p gpuprof-tests --test it -- collector::store::fuzz_corpus --ignored`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gpuprof_collector::analysis::findings::findings;
use gpuprof_collector::analysis::roofline::efficiency::efficiency_of;
use gpuprof_collector::analysis::roofline::peaks::Overrides;
use gpuprof_collector::analysis::session::analyse;
use gpuprof_collector::output::report::{self, Format};
use gpuprof_collector::output::roofline::points::{charts, points, points_csv};
use gpuprof_collector::output::roofline::svg::render_svg;
use gpuprof_collector::store::{manifest, write_parts};
use gpuprof_tests::gpuprof_command;
use wire::ring::{RingError, RingReader, RingWriter, HEADER_SIZE, WRAP};
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

/// A session's files, by path in the session directory.
type Files = BTreeMap<String, Vec<u8>>;

/// The files of the session of `frames` (one part per frame), by path in the
/// session directory.
fn session_files(frames: &[(u32, Vec<Record>)]) -> Files {
    let dir = std::env::temp_dir().join(format!("gpuprof-corpus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    write_parts(&dir, frames).unwrap();
    let mut files = BTreeMap::new();
    for part in std::fs::read_dir(dir.join("parts")).unwrap() {
        let part = part.unwrap();
        for f in std::fs::read_dir(part.path()).unwrap() {
            let f = f.unwrap();
            files.insert(
                format!(
                    "parts/{}/{}",
                    part.file_name().to_string_lossy(),
                    f.file_name().to_string_lossy()
                ),
                std::fs::read(f.path()).unwrap(),
            );
        }
    }
    files.insert(
        "index.json".to_string(),
        std::fs::read(dir.join("index.json")).unwrap(),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    files
}

fn flip(mut b: Vec<u8>, at: usize, bit: u8) -> Vec<u8> {
    b[at] ^= 1 << bit;
    b
}

/// A manifest's text with `edit` applied to its JSON and the checksum recomputed.
fn forge_manifest(m: &[u8], edit: impl Fn(String) -> String) -> Vec<u8> {
    let text = String::from_utf8(m.to_vec()).unwrap();
    let json = edit(text.lines().next().unwrap().to_string());
    format!("{json}\ncrc32c {:08x}\n", crc32c::crc32c(json.as_bytes())).into_bytes()
}

/// The corpus sessions: directories, by name, each as its files.
fn sessions() -> Vec<(&'static str, Files)> {
    let intact = session_files(&frames());
    let with = |edit: &dyn Fn(&mut Files)| {
        let mut f = intact.clone();
        edit(&mut f);
        f
    };
    let kernels2 = "parts/00000002/kernels.parquet".to_string();
    let manifest = |n: u32| format!("parts/{n:08}/manifest.json");
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
    let impossible = session_files(&[(10, impossible.into_iter().map(|(_, r)| r).collect())]);
    vec![
        ("intact", intact.clone()),
        (
            "kernels-flip",
            with(&|f| {
                let b = f.remove(&kernels2).unwrap();
                let at = b.len() / 2;
                f.insert(kernels2.clone(), flip(b, at, 3));
            }),
        ),
        (
            "kernels-cut",
            with(&|f| {
                let mut b = f.remove(&kernels2).unwrap();
                b.truncate(b.len() - 5);
                f.insert(kernels2.clone(), b);
            }),
        ),
        (
            "kernels-missing",
            with(&|f| {
                f.remove(&kernels2);
            }),
        ),
        // The launches table under the kernels' name, the manifest's checksum and
        // size made to match: it verifies, and does not decode as kernels.
        (
            "kernels-forged",
            with(&|f| {
                let launches = f["parts/00000002/launches.parquet"].clone();
                let m = f[&manifest(2)].clone();
                let old = &f[&kernels2];
                let (old_len, old_crc) = (old.len(), crc32c::crc32c(old));
                let (len, crc) = (launches.len(), crc32c::crc32c(&launches));
                f.insert(kernels2.clone(), launches);
                f.insert(manifest(2), forge_manifest(&m, |j| {
                j.replace(
                    &format!("\"file\":\"kernels.parquet\",\"rows\":1,\"bytes\":{old_len},\"crc32c\":{old_crc}"),
                    &format!("\"file\":\"kernels.parquet\",\"rows\":1,\"bytes\":{len},\"crc32c\":{crc}"),
                )
            }));
            }),
        ),
        (
            "manifest-flip",
            with(&|f| {
                let b = f.remove(&manifest(1)).unwrap();
                f.insert(manifest(1), flip(b, 12, 0));
            }),
        ),
        (
            "manifest-missing",
            with(&|f| {
                f.remove(&manifest(3));
            }),
        ),
        (
            "manifest-names-another-file",
            with(&|f| {
                let m = f[&manifest(3)].clone();
                f.insert(
                    manifest(3),
                    forge_manifest(&m, |j| {
                        j.replace("\"file\":\"kernels.parquet\"", "\"file\":\"../../../x\"")
                    }),
                );
            }),
        ),
        (
            "newer-version",
            with(&|f| {
                let m = f[&manifest(4)].clone();
                f.insert(
                    manifest(4),
                    forge_manifest(&m, |j| {
                        let newer = manifest::VERSION + 1;
                        let at = format!("\"version\":{}", manifest::VERSION);
                        j.replace(&at, &format!("\"version\":{newer}"))
                    }),
                );
            }),
        ),
        // The collector was killed while sealing part 4.
        (
            "unsealed-part",
            with(&|f| {
                let part4: Vec<String> = f
                    .keys()
                    .filter(|k| k.starts_with("parts/00000004/"))
                    .cloned()
                    .collect();
                for k in part4 {
                    let b = f.remove(&k).unwrap();
                    if !k.ends_with("manifest.json") {
                        f.insert(k.replace("parts/00000004/", ".unsealed-00000004/"), b);
                    }
                }
            }),
        ),
        ("impossible-records", impossible),
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
    // Only what is not there yet: a session written once stays as it is. (Ring files
    // are remade, after deleting them, when the ring layout changes: a ring never
    // outlives the gpuprof that made it.)
    let dir = corpus_dir().join("sessions");
    for (name, files) in sessions() {
        let session = dir.join(name);
        if session.exists() {
            continue;
        }
        std::fs::create_dir_all(session.join("parts")).unwrap();
        for (path, bytes) in files {
            let path = session.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
    }
    let dir = corpus_dir().join("rings");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in rings() {
        let path = dir.join(name);
        if !path.exists() {
            std::fs::write(path, bytes).unwrap();
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
    // `trace` reads the session part by part: the same exit status, the same damage
    // named, and no file left when the session cannot be read.
    let trace = std::env::temp_dir().join(format!(
        "gpuprof-corpus-{}-{}.perfetto-trace",
        std::process::id(),
        path.file_name().unwrap().to_string_lossy()
    ));
    let traced = gpuprof_command()
        .arg("trace")
        .arg(path)
        .arg("-o")
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(traced.status.code(), Some(code), "{}", path.display());
    let warnings = |stderr: &[u8], what: &str| -> Vec<String> {
        String::from_utf8_lossy(stderr)
            .lines()
            .filter(|l| l.starts_with("gpuprof: warning:") || l.starts_with("gpuprof: error:"))
            .map(|l| {
                ["out of the ", "not in the ", "the "]
                    .iter()
                    .fold(l.to_string(), |l, p| {
                        l.replace(&format!("{p}{what}"), &format!("{p}OUTPUT"))
                    })
            })
            .collect()
    };
    // The trace also says how many impossible records it left out, which the report
    // lists in its output (`impossible_records`) instead.
    let (impossible, traced_warnings): (Vec<String>, Vec<String>) =
        warnings(&traced.stderr, "trace")
            .into_iter()
            .partition(|l| l.contains("whose values cannot be true"));
    assert_eq!(
        traced_warnings,
        warnings(&out.stderr, "report"),
        "{}",
        path.display()
    );
    let listed: u64 = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v.get("impossible_records").cloned())
        .and_then(|v| v.as_array().cloned())
        .map_or(0, |a| a.iter().filter_map(|i| i["records"].as_u64()).sum());
    match &impossible[..] {
        [] => assert_eq!(listed, 0, "{}", path.display()),
        [one] => assert!(
            one.contains(&format!(": {listed} record")),
            "{}: {one}, the report lists {listed}",
            path.display()
        ),
        more => panic!("{}: {more:?}", path.display()),
    }
    assert_eq!(trace.exists(), code != 2, "{}", path.display());
    let _ = std::fs::remove_file(&trace);
    // The Kineto export reads the session twice, its first pass decoding only some
    // columns (`output/trace/prepass.rs`): the same exit status and warnings as the
    // Perfetto trace, but for a session it has nothing to write from, which it
    // refuses (exit 2) rather than writing an empty trace.
    let kineto = trace.with_extension("kineto");
    let k = gpuprof_command()
        .args(["trace", "--format", "kineto"])
        .arg(path)
        .arg("-o")
        .arg(&kineto)
        .output()
        .unwrap();
    let nothing = String::from_utf8_lossy(&k.stderr).contains("no Kineto trace written");
    let expected = if nothing { 2 } else { code };
    assert_eq!(
        k.status.code(),
        Some(expected),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&k.stderr)
    );
    if !nothing {
        assert_eq!(
            warnings(&k.stderr, "trace"),
            warnings(&traced.stderr, "trace"),
            "{}",
            path.display()
        );
    }
    assert_eq!(kineto.exists(), expected != 2, "{}", path.display());
    let _ = std::fs::remove_dir_all(&kineto);
    let loaded = match analyse(path, |_, _| {}) {
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
                .or_else(|| e.strip_prefix(&format!("{} ", path.display())))
                .or_else(|| e.strip_prefix(&format!("{}/", path.display())))
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
    let found = findings(&loaded.aggregate, i, &peaks);
    let json = report::report(&found, Format::Json, None);
    assert_eq!(String::from_utf8_lossy(&out.stdout), json);
    for format in [Format::Table, Format::Csv] {
        report::report(&found, format, None);
    }
    // The Chrome JSON trace too, through the command: the same exit status, JSON
    // that parses.
    let chrome = trace.with_extension("json");
    let traced = gpuprof_command()
        .args(["trace", "--format", "chrome"])
        .arg(path)
        .arg("-o")
        .arg(&chrome)
        .output()
        .unwrap();
    assert_eq!(traced.status.code(), Some(code), "{}", path.display());
    let text = std::fs::read(&chrome).unwrap();
    serde_json::from_slice::<serde_json::Value>(&text)
        .unwrap_or_else(|e| panic!("{}: the Chrome trace is not JSON: {e}", path.display()));
    let _ = std::fs::remove_file(&chrome);
    let e = efficiency_of(&loaded.aggregate, &peaks);
    points_csv(&points(&e));
    for (_, chart) in charts(&e) {
        render_svg(&chart);
    }
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    facts.insert("parts".to_string(), loaded.parts.to_string());
    facts.insert("kernels".to_string(), v["kernel_count"].to_string());
    let dropped = v["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["records"].as_u64().unwrap())
        .fold(0u64, u64::saturating_add);
    facts.insert("dropped".to_string(), dropped.to_string());
    let list = |v: Vec<String>| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(",")
        }
    };
    facts.insert(
        "damaged".to_string(),
        list(
            i.damaged
                .iter()
                .map(|d| {
                    let records = d.records.map_or("-".to_string(), |r| r.to_string());
                    format!("{}+{records}", d.file)
                })
                .collect(),
        ),
    );
    facts.insert(
        "unsealed".to_string(),
        list(i.unsealed.iter().map(|u| u.dir.clone()).collect()),
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
            let got = facts_of(&path);
            let want = expected.get(&name).unwrap_or_else(|| {
                let line: Vec<String> = got.iter().map(|(k, v)| format!("{k}={v}")).collect();
                panic!(
                    "{name} is not in EXPECTED; it reads as\n{name}: {}",
                    line.join(" ")
                )
            });
            assert_eq!(&got, want, "{name}");
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
