//! Single-bit flips of a session recorded on the simulated stack, read by the code
//! `gpuprof report --format json` runs (`gpuprof_collector::session::load` and
//! `render::report`, in process; the CLI's output is checked to be that very text).
//!
//! The guarantee (docs/ARCHITECTURE.md, "Session file"): no flip changes a report
//! silently. A flip in the file header is an error and no report; a flip anywhere in a
//! frame costs exactly that frame: the report is, byte for byte, the report of the
//! session without that frame, plus the statement of the damaged region (offset, bytes,
//! reason).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gpuprof_collector::analysis::peaks::Overrides;
use gpuprof_collector::analysis::{screen, DamagedRegion, Integrity};
use gpuprof_collector::render::{self, Format};
use gpuprof_collector::session::load;
use gpuprof_tests::{artifact, gpuprof_command, record_on_sim, Scratch};
use wire::session::{SessionReader, FRAME_HEADER_LEN, HEADER_LEN};
use wire::Record;

/// One frame of the recorded session.
struct FrameInfo {
    offset: u64,
    len: u64,
    records: Vec<(u32, Record)>,
}

/// The recorded session: its bytes and frames.
struct Recorded {
    _scratch: Scratch,
    bytes: Vec<u8>,
    frames: Vec<FrameInfo>,
}

/// `cudarc-llm` recorded once per test binary with a 16 KiB ring, so that the session
/// has many frames (a frame is at most a quarter of the ring). Without counters: the
/// reader treats their records as any other, and a smaller report keeps 1,000 reads
/// and renders (debug build) to about 20 s.
fn recorded() -> &'static Recorded {
    static SESSION: OnceLock<Recorded> = OnceLock::new();
    SESSION.get_or_init(|| {
        let scratch = Scratch::new("session-flips");
        let out = scratch.join("session");
        let o = record_on_sim("13.4")
            .args(["--ring-size", "16K", "-o"])
            .arg(&out)
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
        let path = out.join("session.gpuprof");
        let bytes = std::fs::read(&path).unwrap();
        let mut reader = SessionReader::open(&path).unwrap();
        let mut frames: Vec<FrameInfo> = Vec::new();
        while let Some(f) = reader.next_frame().expect("an intact session") {
            frames.push(FrameInfo {
                offset: f.offset,
                len: 0,
                records: f.records.into_iter().map(|r| (f.pid, r)).collect(),
            });
        }
        let ends: Vec<u64> = frames
            .iter()
            .skip(1)
            .map(|f| f.offset)
            .chain([bytes.len() as u64])
            .collect();
        for (f, end) in frames.iter_mut().zip(ends) {
            f.len = end - f.offset;
        }
        Recorded {
            _scratch: scratch,
            bytes,
            frames,
        }
    })
}

/// What `gpuprof report --format json` prints for the session file at `path`, or the
/// error it exits 2 with.
fn report_json(path: &Path) -> Result<(String, Integrity), String> {
    let loaded = load(path).map_err(|e| format!("{e:#}"))?;
    let text = render::report(
        &loaded.records,
        &loaded.integrity,
        Format::Json,
        None,
        &Overrides::default(),
    );
    Ok((text, loaded.integrity))
}

/// The report of the recorded session without frame `skip`, stating `damage`.
fn expected_json(r: &Recorded, skip: Option<usize>, damage: Vec<DamagedRegion>) -> String {
    let records: Vec<(u32, Record)> = r
        .frames
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != skip)
        .flat_map(|(_, f)| f.records.iter().cloned())
        .collect();
    let (records, impossible) = screen(records);
    let integrity = Integrity {
        damaged: damage,
        truncated: None,
        impossible,
    };
    render::report(
        &records,
        &integrity,
        Format::Json,
        None,
        &Overrides::default(),
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

/// 1,000 bit positions: 40 in the file header, 160 in frame headers (frames in turn),
/// 800 spread over the whole file (one in each 800th of it).
fn flips(r: &Recorded) -> Vec<u64> {
    let mut rng = Rng(0x6770_7570_726f_6631);
    let bits = r.bytes.len() as u64 * 8;
    let mut out: Vec<u64> = (0..40).map(|_| rng.below(HEADER_LEN * 8)).collect();
    for i in 0..160 {
        let f = &r.frames[i % r.frames.len()];
        out.push(f.offset * 8 + rng.below(FRAME_HEADER_LEN * 8));
    }
    for i in 0..800 {
        let (lo, hi) = (bits * i / 800, bits * (i + 1) / 800);
        out.push(lo + rng.below(hi - lo));
    }
    out
}

/// The damaged region and reason a flip at byte `at` of frame `i` must give.
fn expected_damage(r: &Recorded, i: usize, at: u64) -> DamagedRegion {
    let f = &r.frames[i];
    let into = at - f.offset;
    let last = i + 1 == r.frames.len();
    let to = if last {
        "the end of the file (no intact frame follows)"
    } else {
        "the next intact frame"
    };
    let reason = if into >= FRAME_HEADER_LEN {
        "payload checksum mismatch".to_string()
    } else if into < 4 {
        format!("no frame marker; skipped to {to}")
    } else {
        format!("frame header checksum mismatch; skipped to {to}")
    };
    DamagedRegion {
        offset: f.offset,
        bytes: f.len,
        reason,
    }
}

fn scratch_file(name: &str) -> (Scratch, PathBuf) {
    let s = Scratch::new(name);
    let p = s.join("session.gpuprof");
    (s, p)
}

#[test]
fn a_thousand_single_bit_flips_change_no_report_silently() {
    let r = recorded();
    assert!(r.frames.len() >= 8, "{} frames", r.frames.len());
    let (_s, path) = scratch_file("flips-1000");
    let baseline = expected_json(r, None, Vec::new());
    std::fs::write(&path, &r.bytes).unwrap();
    assert_eq!(report_json(&path).unwrap().0, baseline);

    // The expected report per (frame, reason), made once.
    let mut expected: std::collections::HashMap<(usize, String), String> = Default::default();
    let (mut identical, mut damaged, mut header) = (0, 0, 0);
    for bit in flips(r) {
        let mut b = r.bytes.clone();
        let at = bit / 8;
        b[at as usize] ^= 1 << (bit % 8);
        std::fs::write(&path, &b).unwrap();
        match report_json(&path) {
            Err(e) => {
                assert!(at < HEADER_LEN, "bit {bit}: {e}");
                let p = path.display();
                assert!(
                    e == format!("{p}: not a gpuprof session file (bad magic at offset 0)")
                        || e.starts_with(&format!(
                            "{p}: corrupt at offset 0: header checksum mismatch"
                        )),
                    "bit {bit}: {e}"
                );
                header += 1;
            }
            Ok((text, integrity)) if text == baseline => {
                assert!(!integrity.any(), "bit {bit}: {integrity:?}");
                identical += 1;
            }
            Ok((text, integrity)) => {
                let i = r
                    .frames
                    .iter()
                    .rposition(|f| f.offset <= at)
                    .unwrap_or_else(|| panic!("bit {bit} in the header gave a report"));
                let damage = expected_damage(r, i, at);
                assert_eq!(
                    integrity.damaged,
                    std::slice::from_ref(&damage),
                    "bit {bit}"
                );
                let want = expected
                    .entry((i, damage.reason.clone()))
                    .or_insert_with(|| expected_json(r, Some(i), vec![damage]));
                assert!(text == *want, "bit {bit}: {text}\nexpected {want}");
                damaged += 1;
            }
        }
    }
    eprintln!(
        "1000 flips of a {}-byte, {}-frame session: {identical} identical, {damaged} damaged \
         frames reported, {header} header errors",
        r.bytes.len(),
        r.frames.len()
    );
    assert_eq!(identical + damaged + header, 1000);
    // Every flip in the header is an error (the 40 aimed there, and any of the spread
    // ones that lands there); every other one costs its frame.
    let in_header = flips(r).iter().filter(|b| *b / 8 < HEADER_LEN).count();
    assert!(in_header >= 40, "{in_header}");
    assert_eq!(
        (identical, damaged, header),
        (0, 1000 - in_header, in_header)
    );
}

#[test]
fn a_flip_in_frame_0_costs_frame_0_and_its_kernels_only() {
    let r = recorded();
    let kernels = |f: &FrameInfo| {
        f.records
            .iter()
            .filter(|(_, rec)| matches!(rec, Record::Kernel(_)))
            .count() as u64
    };
    let total: u64 = r.frames.iter().map(kernels).sum();
    let (_s, path) = scratch_file("flip-frame-0");
    let f0 = &r.frames[0];
    assert_eq!(f0.offset, 20);
    // A bit in the middle of frame 0's payload.
    let mut b = r.bytes.clone();
    b[(f0.offset + FRAME_HEADER_LEN + (f0.len - FRAME_HEADER_LEN) / 2) as usize] ^= 0x08;
    std::fs::write(&path, &b).unwrap();
    let (text, integrity) = report_json(&path).unwrap();
    assert_eq!(
        integrity.damaged,
        [DamagedRegion {
            offset: 20,
            bytes: f0.len,
            reason: "payload checksum mismatch".into()
        }]
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["kernel_count"].as_u64(), Some(total - kernels(f0)));
    assert_eq!(
        v["session_damage"],
        serde_json::json!({
            "damaged_frames": 1,
            "damaged_bytes": f0.len,
            "damaged": [{"offset": 20, "bytes": f0.len, "reason": "payload checksum mismatch"}],
            "truncated": null,
        })
    );

    // The length field of frame 0 instead: its header no longer verifies, and the
    // reader finds frame 1 by its marker.
    let mut b = r.bytes.clone();
    b[(f0.offset + 4) as usize] ^= 0x01;
    std::fs::write(&path, &b).unwrap();
    let (text, integrity) = report_json(&path).unwrap();
    assert_eq!(
        integrity.damaged,
        [DamagedRegion {
            offset: 20,
            bytes: f0.len,
            reason: "frame header checksum mismatch; skipped to the next intact frame".into()
        }]
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["kernel_count"].as_u64(), Some(total - kernels(f0)));

    // The CLI prints exactly this text and exits 3.
    let out = gpuprof_command()
        .args(["report", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
}

#[test]
fn the_cli_prints_what_the_library_renders() {
    let r = recorded();
    let (_s, path) = scratch_file("flip-cli");
    std::fs::write(&path, &r.bytes).unwrap();
    let out = gpuprof_command()
        .args(["report", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        report_json(&path).unwrap().0
    );
}
