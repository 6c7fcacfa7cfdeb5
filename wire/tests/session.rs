//! The session file: what a run leaves on disk, and every way it can be damaged.

mod common;

use std::path::{Path, PathBuf};

use common::{all_records, patch, TempDir};
use gpuprof_wire::session::*;
use gpuprof_wire::*;

/// Frames of a small session: (pid, records), one of them empty.
fn batches() -> Vec<(u32, Vec<Record>)> {
    let all = all_records();
    vec![
        (100, all[0..4].to_vec()),
        (200, all[4..8].to_vec()),
        (100, Vec::new()),
        (u32::MAX, all[8..].to_vec()),
    ]
}

/// Writes `batches` to `path`; returns each frame's offset and the file's length.
fn write_session(path: &Path, batches: &[(u32, Vec<Record>)]) -> (Vec<u64>, u64) {
    let mut writer = SessionWriter::create(path).unwrap();
    assert!(writer.is_empty());
    assert_eq!(writer.len(), HEADER_LEN);
    let mut offsets = Vec::new();
    for (pid, records) in batches {
        offsets.push(writer.len());
        let payload = encode_batch(records).unwrap();
        writer.append(*pid, &payload).unwrap();
        assert_eq!(
            writer.len(),
            offsets.last().unwrap() + 8 + payload.len() as u64
        );
    }
    assert_eq!(writer.is_empty(), batches.is_empty());
    writer.sync().unwrap();
    (offsets, writer.len())
}

fn read_all(path: &Path) -> Result<Vec<Frame>, SessionError> {
    let mut reader = SessionReader::open(path)?;
    let mut frames = Vec::new();
    while let Some(frame) = reader.next_frame()? {
        frames.push(frame);
    }
    Ok(frames)
}

#[track_caller]
fn assert_truncated(err: SessionError, path: &Path, offset: u64, reason: &str) {
    match err {
        SessionError::Truncated {
            path: p,
            offset: o,
            reason: r,
        } => {
            assert_eq!((p.as_path(), o), (path, offset), "{r}");
            assert!(r.contains(reason), "reason {r:?} lacks {reason:?}");
        }
        e => panic!("expected Truncated at {offset}, got {e:?}"),
    }
}

#[track_caller]
fn assert_corrupt(err: SessionError, path: &Path, offset: u64, reason: &str) {
    match err {
        SessionError::Corrupt {
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
fn every_record_variant_round_trips_with_pid_and_offset() {
    let dir = TempDir::new("round-trip");
    let path = dir.join("session.gpuprof");
    let batches = batches();
    let (offsets, len) = write_session(&path, &batches);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), len);

    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..8], b"GPUPROFS");
    assert_eq!(&bytes[8..12], &FORMAT_VERSION.to_le_bytes());
    assert_eq!(&bytes[12..16], &PROTOCOL_VERSION.to_le_bytes());
    assert_eq!(offsets[0], 16);
    assert_eq!(
        &bytes[20..24],
        &100u32.to_le_bytes(),
        "pid after the length"
    );

    let frames = read_all(&path).unwrap();
    let expected: Vec<Frame> = batches
        .iter()
        .zip(&offsets)
        .map(|((pid, records), offset)| Frame {
            pid: *pid,
            offset: *offset,
            records: records.clone(),
        })
        .collect();
    assert_eq!(frames, expected);
    // Every variant made it.
    let mut kinds: Vec<_> = frames
        .iter()
        .flat_map(|f| &f.records)
        .map(std::mem::discriminant)
        .collect();
    kinds.dedup();
    assert_eq!(kinds.len(), 12);
}

#[test]
fn an_empty_session_has_no_frames() {
    let dir = TempDir::new("empty");
    let path = dir.join("session.gpuprof");
    let (offsets, len) = write_session(&path, &[]);
    assert_eq!((offsets.len(), len), (0, 16));
    let mut reader = SessionReader::open(&path).unwrap();
    assert_eq!(reader.next_frame().unwrap(), None);
    assert_eq!(reader.next_frame().unwrap(), None);
}

#[test]
fn create_refuses_an_existing_file() {
    let dir = TempDir::new("exists");
    let path = dir.join("session.gpuprof");
    std::fs::write(&path, b"keep").unwrap();
    match SessionWriter::create(&path) {
        Err(SessionError::Io { path: p, source }) => {
            assert_eq!(p, path);
            assert_eq!(source.kind(), std::io::ErrorKind::AlreadyExists);
        }
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("created over a file"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), b"keep");
}

#[test]
fn a_file_cut_at_every_offset_reads_its_whole_frames_then_says_where() {
    let dir = TempDir::new("cut");
    let full = dir.join("full");
    let batches = batches();
    let (offsets, len) = write_session(&full, &batches);
    let bytes = std::fs::read(&full).unwrap();
    for cut in 0..len {
        let path: PathBuf = dir.join(&format!("cut-{cut}"));
        std::fs::write(&path, &bytes[..cut as usize]).unwrap();
        if cut < HEADER_LEN {
            let err = SessionReader::open(&path)
                .err()
                .expect("a cut header does not open");
            assert_truncated(
                err,
                &path,
                0,
                &format!("header is cut short at {cut} bytes"),
            );
            continue;
        }
        let mut reader = SessionReader::open(&path).unwrap();
        for (i, (pid, records)) in batches.iter().enumerate() {
            let start = offsets[i];
            let end = offsets.get(i + 1).copied().unwrap_or(len);
            if end <= cut {
                let frame = reader.next_frame().unwrap().expect("a whole frame");
                assert_eq!(
                    (frame.pid, frame.offset, &frame.records),
                    (*pid, start, records),
                    "cut {cut}"
                );
                continue;
            }
            if start == cut {
                assert_eq!(
                    reader.next_frame().unwrap(),
                    None,
                    "cut {cut} at a frame boundary"
                );
            } else {
                let reason = if cut - start < 8 {
                    format!("{} bytes left, a frame header is 8", cut - start)
                } else {
                    format!("only {} left in the file", cut - start - 8)
                };
                for _ in 0..2 {
                    // The same answer when asked again.
                    assert_truncated(reader.next_frame().unwrap_err(), &path, start, &reason);
                }
            }
            break;
        }
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn bad_magic() {
    let dir = TempDir::new("magic");
    let path = dir.join("session.gpuprof");
    write_session(&path, &batches());
    patch(&path, 0, b"X");
    assert!(
        matches!(SessionReader::open(&path), Err(SessionError::BadMagic { path: p }) if p == path)
    );
    // A short file that is not a session at all is not "truncated".
    for junk in [&b"hello"[..], b"{}\n", b"GPUPROFR\x01\0\0\0"] {
        std::fs::write(&path, junk).unwrap();
        assert!(
            matches!(
                SessionReader::open(&path),
                Err(SessionError::BadMagic { .. })
            ),
            "{junk:?}"
        );
    }
    // The start of a real header is.
    std::fs::write(&path, b"GPUPR").unwrap();
    assert_truncated(
        SessionReader::open(&path).err().unwrap(),
        &path,
        0,
        "cut short at 5 bytes",
    );
}

#[test]
fn a_newer_format_version_is_refused() {
    let dir = TempDir::new("newer");
    let path = dir.join("session.gpuprof");
    write_session(&path, &batches());
    patch(&path, 8, &(FORMAT_VERSION + 1).to_le_bytes());
    match SessionReader::open(&path) {
        Err(SessionError::Version {
            path: p,
            found,
            expected,
        }) => {
            assert_eq!(
                (p, found, expected),
                (path.clone(), FORMAT_VERSION + 1, FORMAT_VERSION)
            )
        }
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("opened"),
    }
    patch(&path, 8, &0u32.to_le_bytes());
    assert_corrupt(
        SessionReader::open(&path).err().unwrap(),
        &path,
        8,
        "session format version 0",
    );
    // The record protocol version in the header does not stop a reader: records decode
    // field by field.
    patch(&path, 8, &FORMAT_VERSION.to_le_bytes());
    patch(&path, 12, &(PROTOCOL_VERSION + 1).to_le_bytes());
    assert_eq!(read_all(&path).unwrap().len(), 4);
}

#[test]
fn a_frame_that_does_not_decode_is_corrupt_and_the_next_one_reads() {
    let dir = TempDir::new("decode");
    let path = dir.join("session.gpuprof");
    let good = encode_batch(&all_records()[..2]).unwrap();
    let mut trailing = good.clone();
    trailing.push(0xc0);
    let unknown_variant =
        rmp_serde::to_vec_named(&vec![std::collections::BTreeMap::from([("Gemm", 1)])]).unwrap();
    let bad: [&[u8]; 5] = [
        b"\xc1",
        b"\x91\x81\xa6Kernel\xc0",
        &good[..good.len() - 1],
        &trailing,
        &unknown_variant,
    ];
    let mut writer = SessionWriter::create(&path).unwrap();
    let mut offsets = Vec::new();
    for payload in bad {
        offsets.push(writer.len());
        writer.append(7, payload).unwrap();
        writer.append(8, &good).unwrap();
    }
    drop(writer);
    let mut reader = SessionReader::open(&path).unwrap();
    for offset in offsets {
        assert_corrupt(
            reader.next_frame().unwrap_err(),
            &path,
            offset,
            "frame does not decode",
        );
        let frame = reader.next_frame().unwrap().unwrap();
        assert_eq!((frame.pid, &frame.records[..]), (8, &all_records()[..2]));
    }
    assert_eq!(reader.next_frame().unwrap(), None);
}

#[test]
fn frames_over_max_frame_are_refused_on_both_sides() {
    let dir = TempDir::new("max-frame");
    let path = dir.join("session.gpuprof");
    let mut writer = SessionWriter::create(&path).unwrap();
    writer
        .append(1, &encode_batch(&all_records()[..1]).unwrap())
        .unwrap();
    let at = writer.len();
    // Zeroed memory is not touched unless written: this costs no real gigabyte.
    let huge = vec![0u8; MAX_FRAME as usize + 1];
    match writer.append(1, &huge) {
        Err(SessionError::Corrupt {
            path: p,
            offset,
            reason,
        }) => {
            assert_eq!((p.as_path(), offset), (path.as_path(), at));
            assert!(
                reason.contains("frame of 1073741825 bytes exceeds the 1073741824-byte limit"),
                "{reason}"
            );
        }
        r => panic!("{:?}", r.map(|_| ())),
    }
    drop(huge);
    assert_eq!(writer.len(), at, "nothing written");
    writer.sync().unwrap();
    drop(writer);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), at);

    // A reader does not believe a length over the limit, whatever follows it.
    let mut file = std::fs::read(&path).unwrap();
    file.extend_from_slice(&(MAX_FRAME + 1).to_le_bytes());
    file.extend_from_slice(&1u32.to_le_bytes());
    file.extend_from_slice(&[0; 64]);
    std::fs::write(&path, &file).unwrap();
    let mut reader = SessionReader::open(&path).unwrap();
    assert_eq!(reader.next_frame().unwrap().unwrap().records.len(), 1);
    for _ in 0..2 {
        assert_corrupt(
            reader.next_frame().unwrap_err(),
            &path,
            at,
            "frame length 1073741825 exceeds the 1073741824-byte limit",
        );
    }
    // At the limit, the length is believed and the file is too short for it.
    patch(&path, at, &MAX_FRAME.to_le_bytes());
    let mut reader = SessionReader::open(&path).unwrap();
    reader.next_frame().unwrap();
    assert_truncated(
        reader.next_frame().unwrap_err(),
        &path,
        at,
        "frame of 1073741824 bytes, only 64 left",
    );
}
