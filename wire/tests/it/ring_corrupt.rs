//! The collector trusts nothing in a ring: every inconsistency is a `RingError` naming
//! the file and the offset, never a panic or a read outside the data area.
//!
//! The header offsets below are the layout (LAYOUT_VERSION 1) both processes share;
//! a change to them is a layout change.

use std::path::{Path, PathBuf};

use crate::common::{patch, TempDir};
use gpuprof_wire::ring::*;
use proptest::prelude::*;

const OFF_LAYOUT: u64 = 8;
const OFF_PROTOCOL: u64 = 12;
const OFF_CAPACITY: u64 = 16;
const OFF_WRITE_POS: u64 = 128;
const OFF_READ_POS: u64 = 256;
const DATA: u64 = HEADER_SIZE as u64;

/// A valid ring of 4096 data bytes holding frames of `sizes` (nothing read yet).
fn valid_ring(dir: &TempDir, sizes: &[usize]) -> (PathBuf, RingWriter) {
    let path = dir.join("ring-7.ring");
    let mut writer = RingWriter::create(&path, 4096, 7).unwrap();
    for (i, len) in sizes.iter().enumerate() {
        writer.try_write(&vec![i as u8; *len]).unwrap();
    }
    (path, writer)
}

fn open_err(path: &Path) -> RingError {
    match RingReader::open(path) {
        Err(e) => e,
        Ok(_) => panic!("{} opened", path.display()),
    }
}

#[track_caller]
fn assert_corrupt(err: RingError, path: &Path, offset: u64, reason: &str) {
    match err {
        RingError::Corrupt {
            path: p,
            offset: o,
            reason: r,
        } => {
            assert_eq!((p.as_path(), o), (path, offset), "{r}");
            assert!(r.contains(reason), "reason {r:?} lacks {reason:?}");
        }
        e => panic!("expected Corrupt at {offset}, got {e:?}"),
    }
}

#[test]
fn a_file_shorter_than_the_header() {
    let dir = TempDir::new("short");
    for len in [0usize, 1, 8, 100, HEADER_SIZE - 1] {
        let path = dir.join(&format!("short-{len}"));
        let mut bytes = b"GPUPROFR".repeat(HEADER_SIZE / 8);
        bytes.truncate(len);
        std::fs::write(&path, bytes).unwrap();
        assert_corrupt(
            open_err(&path),
            &path,
            len as u64,
            "shorter than the 4096-byte header",
        );
    }
}

#[test]
fn a_missing_file() {
    let dir = TempDir::new("missing");
    let path = dir.join("nothing");
    match open_err(&path) {
        RingError::Io { path: p, source } => {
            assert_eq!(p, path);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        e => panic!("{e:?}"),
    }
}

#[test]
fn bad_magic() {
    let dir = TempDir::new("magic");
    let (path, _w) = valid_ring(&dir, &[]);
    patch(&path, 7, b"S");
    assert!(matches!(open_err(&path), RingError::BadMagic { path: p } if p == path));
    // A header-sized file of zeros (e.g. created but never written) is not a ring.
    let zeros = dir.join("zeros");
    std::fs::write(&zeros, vec![0u8; HEADER_SIZE + 4096]).unwrap();
    assert!(matches!(open_err(&zeros), RingError::BadMagic { path: p } if p == zeros));
}

#[test]
fn wrong_layout_version() {
    let dir = TempDir::new("layout");
    let (path, _w) = valid_ring(&dir, &[]);
    let older = LAYOUT_VERSION - 1;
    patch(&path, OFF_LAYOUT, &older.to_le_bytes());
    match open_err(&path) {
        RingError::Version {
            path: p,
            found,
            expected,
        } => assert_eq!((p, found, expected), (path, older, LAYOUT_VERSION)),
        e => panic!("{e:?}"),
    }
}

#[test]
fn wrong_protocol_version() {
    let dir = TempDir::new("protocol");
    let (path, _w) = valid_ring(&dir, &[]);
    let ours = gpuprof_wire::PROTOCOL_VERSION;
    for found in [0u32, ours - 1, ours + 1, u32::MAX] {
        patch(&path, OFF_PROTOCOL, &found.to_le_bytes());
        match open_err(&path) {
            RingError::Protocol {
                path: p,
                found: f,
                expected,
            } => {
                assert_eq!(
                    (p.as_path(), f, expected),
                    (path.as_path(), found, gpuprof_wire::PROTOCOL_VERSION)
                )
            }
            e => panic!("{e:?}"),
        }
    }
}

#[test]
fn capacity_not_a_power_of_two_or_out_of_range() {
    let dir = TempDir::new("capacity");
    let (path, _w) = valid_ring(&dir, &[]);
    for bad in [0u64, 1, 2048, 4095, 4097, 6144, 1 << 32, u64::MAX] {
        patch(&path, OFF_CAPACITY, &bad.to_le_bytes());
        assert_corrupt(
            open_err(&path),
            &path,
            OFF_CAPACITY,
            &format!("capacity {bad} is not a power of two in range"),
        );
    }
}

#[test]
fn capacity_not_matching_the_file_size() {
    let dir = TempDir::new("size");
    let (path, _w) = valid_ring(&dir, &[]);
    patch(&path, OFF_CAPACITY, &8192u64.to_le_bytes());
    assert_corrupt(
        open_err(&path),
        &path,
        OFF_CAPACITY,
        "capacity 8192 does not match the file size 8192",
    );
    // Or the file was cut: capacity right, data area short.
    patch(&path, OFF_CAPACITY, &4096u64.to_le_bytes());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(HEADER_SIZE as u64 + 100)
        .unwrap();
    assert_corrupt(
        open_err(&path),
        &path,
        OFF_CAPACITY,
        "capacity 4096 does not match the file size 4196",
    );
}

#[test]
fn write_position_behind_the_read_position() {
    let dir = TempDir::new("behind");
    let (path, _w) = valid_ring(&dir, &[10, 10]);
    // As the reader finds it at open ...
    patch(&path, OFF_READ_POS, &100u64.to_le_bytes());
    let mut reader = RingReader::open(&path).unwrap();
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        OFF_WRITE_POS,
        "write position 28",
    );
    // ... and as it changes under a running reader.
    patch(&path, OFF_READ_POS, &0u64.to_le_bytes());
    let mut reader = RingReader::open(&path).unwrap();
    assert_eq!(reader.try_read().unwrap(), Some(vec![0; 10]));
    patch(&path, OFF_WRITE_POS, &13u64.to_le_bytes());
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        OFF_WRITE_POS,
        "ahead of read position 14",
    );
    // The error repeats; it does not move the reader.
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        OFF_WRITE_POS,
        "ahead of read position 14",
    );
}

#[test]
fn write_position_more_than_a_capacity_ahead() {
    let dir = TempDir::new("ahead");
    let (path, _w) = valid_ring(&dir, &[10]);
    patch(&path, OFF_WRITE_POS, &4097u64.to_le_bytes());
    let mut reader = RingReader::open(&path).unwrap();
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        OFF_WRITE_POS,
        "write position 4097",
    );
    patch(&path, OFF_WRITE_POS, &u64::MAX.to_le_bytes());
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        OFF_WRITE_POS,
        "within one capacity (4096)",
    );
    // Exactly one capacity ahead is a full ring, not corrupt (the frame length is).
    patch(&path, OFF_WRITE_POS, &4096u64.to_le_bytes());
    assert_eq!(reader.try_read().unwrap(), Some(vec![0; 10]));
}

#[test]
fn a_frame_length_larger_than_what_was_written() {
    let dir = TempDir::new("length");
    let (path, _w) = valid_ring(&dir, &[10, 20]);
    let mut reader = RingReader::open(&path).unwrap();
    assert_eq!(reader.try_read().unwrap(), Some(vec![0; 10]));
    // The second frame (at data offset 14) claims 21 bytes; 24 are written after 14.
    patch(&path, DATA + 14, &21u32.to_le_bytes());
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        DATA + 14,
        "frame length 21 does not fit",
    );
    patch(&path, DATA + 14, &(u32::MAX - 1).to_le_bytes());
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        DATA + 14,
        "frame length 4294967294 does not fit",
    );
    patch(&path, DATA + 14, &20u32.to_le_bytes());
    assert_eq!(reader.try_read().unwrap(), Some(vec![1; 20]));
}

#[test]
fn a_frame_length_past_the_end_of_the_data_area() {
    let dir = TempDir::new("past-end");
    let (path, _w) = valid_ring(&dir, &[]);
    // A "full" ring whose first frame claims the whole data area.
    patch(&path, OFF_WRITE_POS, &4096u64.to_le_bytes());
    patch(&path, DATA, &4093u32.to_le_bytes());
    let mut reader = RingReader::open(&path).unwrap();
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        DATA,
        "frame length 4093 does not fit: 4096 bytes to the end",
    );
    // And one at offset 4000 that would run past the end.
    patch(&path, OFF_READ_POS, &4000u64.to_le_bytes());
    patch(&path, OFF_WRITE_POS, &8000u64.to_le_bytes());
    patch(&path, DATA + 4000, &93u32.to_le_bytes());
    let mut reader = RingReader::open(&path).unwrap();
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        DATA + 4000,
        "frame length 93 does not fit: 96 bytes",
    );
    patch(&path, DATA + 4000, &92u32.to_le_bytes());
    assert_eq!(reader.try_read().unwrap().unwrap().len(), 92);
}

#[test]
fn a_wrap_marker_where_none_can_be() {
    let dir = TempDir::new("wrap");
    // At offset 0, nothing after the marker is written: a wrap would reach
    // past the write position.
    let (path, _w) = valid_ring(&dir, &[10]);
    patch(&path, DATA, &WRAP.to_le_bytes());
    let mut reader = RingReader::open(&path).unwrap();
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        DATA,
        "wrap to offset 0 with only 14 bytes written, the tail is 4096",
    );

    // Mid-ring, with the write position before the end of the data area.
    let dir = TempDir::new("wrap-mid");
    let (path, _w) = valid_ring(&dir, &[10, 10]);
    let mut reader = RingReader::open(&path).unwrap();
    assert_eq!(reader.try_read().unwrap(), Some(vec![0; 10]));
    patch(&path, DATA + 14, &WRAP.to_le_bytes());
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        DATA + 14,
        "wrap to offset 0 with only 14 bytes written, the tail is 4082",
    );

    // A tail of fewer than 4 bytes is skipped: the write position cannot be in it.
    let dir = TempDir::new("wrap-tail");
    let (path, _w) = valid_ring(&dir, &[]);
    patch(&path, OFF_READ_POS, &4094u64.to_le_bytes());
    patch(&path, OFF_WRITE_POS, &4096u64.to_le_bytes());
    let mut reader = RingReader::open(&path).unwrap();
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        DATA + 4094,
        "wrap to offset 0 with only 2 bytes written, the tail is 2",
    );

    // A second marker right after a wrap.
    let dir = TempDir::new("wrap-twice");
    let (path, _w) = valid_ring(&dir, &[]);
    patch(&path, OFF_READ_POS, &4000u64.to_le_bytes());
    patch(&path, OFF_WRITE_POS, &4200u64.to_le_bytes());
    patch(&path, DATA + 4000, &WRAP.to_le_bytes());
    patch(&path, DATA, &WRAP.to_le_bytes());
    let mut reader = RingReader::open(&path).unwrap();
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        DATA,
        "frame length 4294967295 does not fit",
    );
    // With a real frame there, the wrap is read through.
    patch(&path, DATA, &100u32.to_le_bytes());
    assert_eq!(reader.try_read().unwrap().unwrap().len(), 100);
    assert_eq!(reader.header().read_pos, 4200);
}

/// Regression: positions near `u64::MAX` made the wrap arithmetic overflow (a panic in
/// debug builds, a wrapped-around read position in release).
#[test]
fn positions_near_the_end_of_u64_do_not_overflow() {
    let dir = TempDir::new("overflow");
    let (path, _w) = valid_ring(&dir, &[]);
    let read = u64::MAX - 10;
    let off = read % 4096; // 4085: an 11-byte tail
    patch(&path, OFF_READ_POS, &read.to_le_bytes());
    patch(&path, OFF_WRITE_POS, &u64::MAX.to_le_bytes());
    patch(&path, DATA + off, &WRAP.to_le_bytes());
    let mut reader = RingReader::open(&path).unwrap();
    assert_corrupt(
        reader.try_read().unwrap_err(),
        &path,
        DATA + off,
        "wrap to offset 0 with only 10 bytes written, the tail is 11",
    );
    // A frame that ends exactly at u64::MAX is fine.
    patch(&path, DATA + off, &6u32.to_le_bytes());
    assert_eq!(reader.try_read().unwrap().unwrap().len(), 6);
    assert_eq!(reader.header().read_pos, u64::MAX);
    assert_eq!(reader.try_read().unwrap(), None);
}

#[derive(Debug, Clone)]
enum Damage {
    /// Random bytes anywhere in the fields of the header.
    Header(u64, Vec<u8>),
    /// Random bytes in the data area.
    Data(u64, Vec<u8>),
    /// A write position a little ahead of (or behind) an arbitrary read position,
    /// perhaps with a WRAP marker where the reader starts.
    Positions { read: u64, delta: i64, wrap: bool },
    /// A WRAP marker at an offset.
    Wrap(u64),
}

fn damage() -> impl Strategy<Value = Damage> {
    let bytes = proptest::collection::vec(any::<u8>(), 1..9);
    let read = prop_oneof![
        any::<u64>(),
        (0u64..64).prop_map(|k| u64::MAX - k),
        0u64..20_000
    ];
    prop_oneof![
        (
            prop_oneof![0u64..48, 124u64..136, 252u64..264],
            bytes.clone()
        )
            .prop_map(|(o, b)| Damage::Header(o, b)),
        (0u64..4096, bytes).prop_map(|(o, b)| Damage::Data(o, b)),
        (read, prop_oneof![-8i64..64, -8i64..5000], any::<bool>())
            .prop_map(|(read, delta, wrap)| Damage::Positions { read, delta, wrap }),
        (0u64..4096).prop_map(Damage::Wrap),
    ]
}

fn apply(path: &Path, d: &Damage) {
    match d {
        Damage::Header(off, b) => patch(path, *off, b),
        Damage::Data(off, b) => patch(path, DATA + (*off).min(4096 - b.len() as u64), b),
        Damage::Positions { read, delta, wrap } => {
            if *wrap && read % 4096 <= 4092 {
                patch(path, DATA + read % 4096, &WRAP.to_le_bytes());
            }
            patch(path, OFF_READ_POS, &read.to_le_bytes());
            patch(
                path,
                OFF_WRITE_POS,
                &read.wrapping_add_signed(*delta).to_le_bytes(),
            );
        }
        Damage::Wrap(off) => patch(path, DATA + (*off).min(4092), &WRAP.to_le_bytes()),
    }
}

/// Reads until empty or an error; every frame it returns fits the data area.
fn drain(reader: &mut RingReader) -> Result<(), TestCaseError> {
    for _ in 0..2048 {
        match reader.try_read() {
            Ok(Some(frame)) => {
                prop_assert!(frame.len() <= 4096 - 4, "frame of {} bytes", frame.len())
            }
            Ok(None) => return Ok(()),
            Err(RingError::Corrupt { offset, .. }) => {
                prop_assert!(offset < HEADER_SIZE as u64 + 4096);
                // Asking again is as safe.
                prop_assert!(reader.try_read().is_err());
                return Ok(());
            }
            Err(e) => prop_assert!(false, "unexpected error {e:?}"),
        }
    }
    // Each frame takes at least 4 bytes of at most one capacity.
    prop_assert!(false, "more frames than a ring can hold");
    Ok(())
}

proptest! {
    #[test]
    fn damaged_rings_give_errors_never_panics(
        sizes in proptest::collection::vec(0usize..1500, 0..12),
        consumed in 0usize..12,
        before in proptest::collection::vec(damage(), 0..4),
        after in proptest::collection::vec(damage(), 0..4),
    ) {
        let dir = TempDir::new("fuzz");
        let path = dir.join("ring.ring");
        let mut writer = RingWriter::create(&path, 4096, 7).unwrap();
        let mut reader = RingReader::open(&path).unwrap();
        // A ring that has wrapped: consume some frames and write more.
        for (i, len) in sizes.iter().enumerate() {
            if writer.try_write(&vec![i as u8; *len]).is_err() || i < consumed {
                let _ = reader.try_read().unwrap();
            }
        }
        drop(reader);
        for d in &before {
            apply(&path, d);
        }
        let Ok(mut reader) = RingReader::open(&path) else { return Ok(()) };
        let _ = reader.header();
        drain(&mut reader)?;
        for d in &after {
            apply(&path, d);
        }
        drain(&mut reader)?;
    }
}

/// Cases of the property below: `GPUPROF_FUZZ_CASES`, default 256.
fn fuzz_config() -> ProptestConfig {
    let cases = std::env::var("GPUPROF_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::Off)),
        ..ProptestConfig::default()
    }
}

/// A ring file made of arbitrary bytes: header fields mostly plausible, sometimes not,
/// positions near each other or anywhere, a data area of random bytes with frame
/// lengths and wrap markers sprinkled in, the file sometimes of the wrong size.
fn arbitrary_ring() -> impl Strategy<Value = Vec<u8>> {
    let u64s = prop_oneof![
        0u64..9000,
        any::<u64>(),
        (0u64..8).prop_map(|k| u64::MAX - k)
    ];
    let data = proptest::collection::vec(
        prop_oneof![
            6 => any::<u8>().prop_map(|b| vec![b]),
            1 => (0u32..5000).prop_map(|l| l.to_le_bytes().to_vec()),
            1 => Just(WRAP.to_le_bytes().to_vec()),
        ],
        0..1200,
    );
    (
        prop_oneof![9 => Just(MAGIC), 1 => any::<[u8; 8]>()],
        prop_oneof![9 => Just(LAYOUT_VERSION), 1 => any::<u32>()],
        prop_oneof![9 => Just(gpuprof_wire::PROTOCOL_VERSION), 1 => any::<u32>()],
        prop_oneof![8 => Just(4096u64), 1 => Just(8192u64), 1 => u64s.clone()],
        (u64s.clone(), -64i64..5000),
        any::<u32>(),
        data,
        prop_oneof![8 => Just(0i64), 1 => -5000i64..5000],
    )
        .prop_map(
            |(magic, layout, protocol, capacity, (read, delta), flags, data, size_delta)| {
                let mut b = vec![0u8; HEADER_SIZE + 4096];
                b[..8].copy_from_slice(&magic);
                b[8..12].copy_from_slice(&layout.to_le_bytes());
                b[12..16].copy_from_slice(&protocol.to_le_bytes());
                b[16..24].copy_from_slice(&capacity.to_le_bytes());
                b[24..28].copy_from_slice(&7u32.to_le_bytes());
                b[28..32].copy_from_slice(&flags.to_le_bytes());
                let write = read.wrapping_add_signed(delta);
                b[128..136].copy_from_slice(&write.to_le_bytes());
                b[256..264].copy_from_slice(&read.to_le_bytes());
                let data: Vec<u8> = data.into_iter().flatten().take(4096).collect();
                b[HEADER_SIZE..HEADER_SIZE + data.len()].copy_from_slice(&data);
                let len = (b.len() as i64 + size_delta).max(0) as usize;
                b.resize(len, 0);
                b
            },
        )
}

proptest! {
    #![proptest_config(fuzz_config())]

    #[test]
    fn arbitrary_ring_files_give_errors_never_panics(bytes in arbitrary_ring()) {
        let dir = TempDir::new("ring-bytes");
        let path = dir.join("ring-7.ring");
        std::fs::write(&path, &bytes).unwrap();
        let Ok(mut reader) = RingReader::open(&path) else { return Ok(()) };
        let h = reader.header();
        prop_assert_eq!(HEADER_SIZE as u64 + h.capacity, bytes.len() as u64);
        let _ = reader.is_finished();
        // Each frame takes at least 4 bytes of at most one capacity.
        for _ in 0..=h.capacity / 4 {
            match reader.try_read() {
                Ok(Some(frame)) => {
                    prop_assert!(frame.len() as u64 + 4 <= h.capacity, "frame of {}", frame.len())
                }
                Ok(None) => return Ok(()),
                Err(RingError::Corrupt { offset, .. }) => {
                    prop_assert!(offset < bytes.len() as u64);
                    prop_assert!(reader.try_read().is_err());
                    return Ok(());
                }
                Err(e) => prop_assert!(false, "unexpected error {e:?}"),
            }
        }
        prop_assert!(false, "more frames than a ring can hold");
    }
}
