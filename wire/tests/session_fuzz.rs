//! Fuzzing the session reader: whatever the bytes, `SessionReader` never panics, never
//! loops, accounts for every byte of the file (each is in the header, a frame, a
//! damaged region or a cut tail, in order), and never returns a frame that was not
//! written. Bounded for CI: `GPUPROF_FUZZ_CASES` cases per property (default 256).

mod common;

use std::path::Path;

use common::{all_records, TempDir};
use gpuprof_wire::session::*;
use gpuprof_wire::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};

fn config() -> Config {
    let cases = std::env::var("GPUPROF_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    }
}

/// What one read of a whole file gave.
#[derive(Debug, Default)]
struct Read {
    frames: Vec<Frame>,
    damaged: u64,
    cut: bool,
}

/// Reads `path` to the end, checking after every call where the reader is; `None` when
/// the file does not open.
fn read_checked(path: &Path, len: u64) -> Result<Option<Read>, TestCaseError> {
    let Ok(mut reader) = SessionReader::open(path) else {
        return Ok(None);
    };
    let header = match reader.format_version() {
        1 => 16,
        _ => HEADER_LEN,
    };
    prop_assert_eq!(reader.offset(), header);
    prop_assert_eq!(reader.file_len(), len);
    let mut out = Read::default();
    // Every call but the last moves the reader forward by at least one byte.
    for _ in 0..=len {
        let at = reader.offset();
        match reader.next_frame() {
            Ok(None) => {
                prop_assert_eq!(at, len);
                return Ok(Some(out));
            }
            Ok(Some(f)) => {
                prop_assert_eq!(f.offset, at);
                prop_assert!(reader.offset() > at && reader.offset() <= len);
                out.frames.push(f);
            }
            Err(SessionError::Damaged { offset, bytes, .. }) => {
                prop_assert_eq!(offset, at);
                prop_assert!(bytes > 0);
                prop_assert_eq!(reader.offset(), at + bytes);
                prop_assert!(reader.offset() <= len);
                out.damaged += 1;
            }
            Err(SessionError::Truncated { offset, .. }) => {
                prop_assert_eq!(offset, at);
                prop_assert_eq!(reader.offset(), at);
                // The same answer again.
                let again = matches!(
                    reader.next_frame(),
                    Err(SessionError::Truncated { offset: o, .. }) if o == at
                );
                prop_assert!(again, "a second call at {} differs", at);
                out.cut = true;
                return Ok(Some(out));
            }
            Err(SessionError::Corrupt { offset, .. }) => {
                // Format 1 only: the rest of the file cannot be framed.
                prop_assert_eq!(reader.format_version(), 1);
                prop_assert_eq!(offset, at);
                prop_assert_eq!(reader.offset(), len);
                out.damaged += 1;
            }
            Err(e) => prop_assert!(false, "unexpected {e:?}"),
        }
    }
    prop_assert!(false, "more calls than bytes");
    Ok(None)
}

/// Batches of the record pool: (pid, first record, count).
fn batches() -> impl Strategy<Value = Vec<(u32, Vec<Record>)>> {
    let n = all_records().len();
    proptest::collection::vec(
        (
            prop_oneof![Just(1u32), Just(2), any::<u32>()],
            0..n,
            0..6usize,
        )
            .prop_map(move |(pid, first, count)| {
                let all = all_records();
                let end = (first + count).min(all.len());
                (pid, all[first..end].to_vec())
            }),
        0..10,
    )
}

#[derive(Debug, Clone)]
enum Damage {
    Flip(u64, u8),
    Bytes(u64, Vec<u8>),
    Insert(u64, Vec<u8>),
    Delete(u64, u64),
    Cut(u64),
    /// The frame marker at an offset, with bytes that are not a frame header after it.
    Marker(u64),
}

fn damage() -> impl Strategy<Value = Damage> {
    let bytes = proptest::collection::vec(any::<u8>(), 1..40);
    prop_oneof![
        4 => (any::<u64>(), 0u8..8).prop_map(|(at, bit)| Damage::Flip(at, bit)),
        2 => (any::<u64>(), bytes.clone()).prop_map(|(at, b)| Damage::Bytes(at, b)),
        1 => (any::<u64>(), bytes).prop_map(|(at, b)| Damage::Insert(at, b)),
        1 => (any::<u64>(), 1u64..64).prop_map(|(at, n)| Damage::Delete(at, n)),
        1 => any::<u64>().prop_map(Damage::Cut),
        1 => any::<u64>().prop_map(Damage::Marker),
    ]
}

/// Applies `d` to the file bytes past the header (the header's own damage is covered by
/// the exhaustive test in session.rs).
fn apply(b: &mut Vec<u8>, d: &Damage) {
    let h = HEADER_LEN as usize;
    if b.len() <= h {
        return;
    }
    let at = |x: u64, room: usize| h + (x % (b.len() - h).max(1) as u64) as usize % room.max(1);
    match d {
        Damage::Flip(x, bit) => {
            let i = at(*x, b.len() - h);
            b[i] ^= 1 << bit;
        }
        Damage::Bytes(x, bytes) => {
            let i = at(*x, b.len() - h);
            for (j, v) in bytes.iter().enumerate() {
                if let Some(c) = b.get_mut(i + j) {
                    *c = *v;
                }
            }
        }
        Damage::Insert(x, bytes) => {
            let i = at(*x, b.len() - h);
            b.splice(i..i, bytes.iter().copied());
        }
        Damage::Delete(x, n) => {
            let i = at(*x, b.len() - h);
            let end = (i + *n as usize).min(b.len());
            b.drain(i..end);
        }
        Damage::Cut(x) => {
            let i = at(*x, b.len() - h);
            b.truncate(i);
        }
        Damage::Marker(x) => {
            let i = at(*x, b.len() - h);
            let mut m = Vec::from(SYNC);
            m.extend_from_slice(&[0x11; 16]);
            b.splice(i..i, m);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// A valid session, damaged: every byte accounted for, and every frame read is one
    /// that was written, whole (a scan never makes one up).
    #[test]
    fn damaged_sessions_account_for_every_byte_and_yield_only_written_frames(
        batches in batches(),
        damages in proptest::collection::vec(damage(), 1..4),
    ) {
        let dir = TempDir::new("session-fuzz");
        let path = dir.join("session.gpuprof");
        let mut w = SessionWriter::create(&path).unwrap();
        for (pid, records) in &batches {
            w.append(*pid, &encode_batch(records).unwrap()).unwrap();
        }
        w.sync().unwrap();
        drop(w);
        let mut bytes = std::fs::read(&path).unwrap();
        for d in &damages {
            apply(&mut bytes, d);
        }
        std::fs::write(&path, &bytes).unwrap();
        let read = read_checked(&path, bytes.len() as u64)?.expect("the header is intact");
        for f in &read.frames {
            prop_assert!(
                batches.iter().any(|(pid, records)| *pid == f.pid && *records == f.records),
                "a frame that was never written: {f:?}"
            );
        }
    }

    /// Arbitrary bytes after a valid header (format 2 or 1), markers sprinkled in.
    #[test]
    fn arbitrary_bytes_after_a_header_never_panic(
        format in prop_oneof![Just(2u32), Just(1u32)],
        body in proptest::collection::vec(
            prop_oneof![
                8 => any::<u8>().prop_map(|b| vec![b]),
                1 => Just(SYNC.to_vec()),
                1 => (0u32..64).prop_map(|l| l.to_le_bytes().to_vec()),
            ],
            0..400,
        ),
    ) {
        let dir = TempDir::new("session-bytes");
        let path = dir.join("session.gpuprof");
        let mut b = Vec::from(MAGIC);
        b.extend_from_slice(&format.to_le_bytes());
        b.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
        if format == 2 {
            let crc = crc32c(&b);
            b.extend_from_slice(&crc.to_le_bytes());
        }
        b.extend(body.into_iter().flatten());
        std::fs::write(&path, &b).unwrap();
        read_checked(&path, b.len() as u64)?.expect("the header is valid");
    }

    /// Any file at all: open answers, reading (if it opens) ends.
    #[test]
    fn any_file_opens_or_is_refused(
        start in prop_oneof![Just(MAGIC.to_vec()), Just(b"GPUPR".to_vec()), Just(Vec::new())],
        rest in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let dir = TempDir::new("session-any");
        let path = dir.join("session.gpuprof");
        let mut b = start;
        b.extend(rest);
        std::fs::write(&path, &b).unwrap();
        read_checked(&path, b.len() as u64)?;
    }
}
