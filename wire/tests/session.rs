//! The session file: what a run leaves on disk, and every way it can be damaged.

mod common;

use std::path::{Path, PathBuf};

use common::{all_records, patch, peek, TempDir};
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
            offsets.last().unwrap() + FRAME_HEADER_LEN + payload.len() as u64
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

/// What a whole read gives: the frames, and each damaged region as (offset, bytes,
/// reason); stops at the end, a truncation or any other error (the last element).
#[derive(Debug)]
struct ReadOut {
    frames: Vec<Frame>,
    damaged: Vec<(u64, u64, String)>,
    end: Option<SessionError>,
}

fn read_through(path: &Path) -> Result<ReadOut, SessionError> {
    let mut reader = SessionReader::open(path)?;
    let mut out = ReadOut {
        frames: Vec::new(),
        damaged: Vec::new(),
        end: None,
    };
    loop {
        match reader.next_frame() {
            Ok(Some(f)) => out.frames.push(f),
            Ok(None) => return Ok(out),
            Err(SessionError::Damaged {
                offset,
                bytes,
                reason,
                ..
            }) => out.damaged.push((offset, bytes, reason)),
            Err(e) => {
                out.end = Some(e);
                return Ok(out);
            }
        }
    }
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

#[track_caller]
fn assert_damaged(err: SessionError, path: &Path, offset: u64, bytes: u64, reason: &str) {
    match err {
        SessionError::Damaged {
            path: p,
            offset: o,
            bytes: b,
            reason: r,
        } => {
            assert_eq!((p.as_path(), o, b), (path, offset, bytes), "{r}");
            assert!(r.contains(reason), "reason {r:?} lacks {reason:?}");
        }
        e => panic!("expected Damaged at {offset}, got {e:?}"),
    }
}

/// Rewrites the header's versions with a checksum that matches them.
fn rewrite_header(path: &Path, format: u32, protocol: u32) {
    let mut h = Vec::from(MAGIC);
    h.extend_from_slice(&format.to_le_bytes());
    h.extend_from_slice(&protocol.to_le_bytes());
    let crc = crc32c(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    patch(path, 0, &h);
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
    assert_eq!(&bytes[8..12], &2u32.to_le_bytes());
    assert_eq!(&bytes[12..16], &PROTOCOL_VERSION.to_le_bytes());
    assert_eq!(&bytes[16..20], &crc32c(&bytes[..16]).to_le_bytes());
    assert_eq!(offsets[0], 20);
    // The first frame header: marker, length, pid, payload CRC, header CRC.
    let payload = encode_batch(&batches[0].1).unwrap();
    assert_eq!(&bytes[20..24], b"\xc1GPF");
    assert_eq!(&bytes[24..28], &(payload.len() as u32).to_le_bytes());
    assert_eq!(&bytes[28..32], &100u32.to_le_bytes());
    assert_eq!(&bytes[32..36], &crc32c(&payload).to_le_bytes());
    assert_eq!(&bytes[36..40], &crc32c(&bytes[20..36]).to_le_bytes());
    assert_eq!(&bytes[40..40 + payload.len()], &payload[..]);
    // CRC-32C itself (RFC 3720's check value).
    assert_eq!(crc32c(b"123456789"), 0xe306_9283);

    let reader = SessionReader::open(&path).unwrap();
    assert_eq!(
        (
            reader.format_version(),
            reader.protocol_version(),
            reader.file_len()
        ),
        (2, PROTOCOL_VERSION, len)
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
    assert_eq!((offsets.len(), len), (0, 20));
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
                let reason = if cut - start < 20 {
                    format!("{} bytes left, a frame header is 20", cut - start)
                } else {
                    format!("only {} left in the file", cut - start - 20)
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

/// The guarantee, exhaustively on a small file: every single-bit flip anywhere is
/// either a header error (nothing read) or exactly one damaged region covering exactly
/// the frame the bit is in, every other frame read intact.
#[test]
fn every_single_bit_flip_costs_exactly_its_frame() {
    // 11,608 files written and read: in memory where there is /dev/shm.
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        TempDir::new_in(shm, "flips")
    } else {
        TempDir::new("flips")
    };
    let full = dir.join("full");
    let batches = batches();
    let (offsets, len) = write_session(&full, &batches);
    let good = read_all(&full).unwrap();
    let bytes = std::fs::read(&full).unwrap();
    let path = dir.join("flipped");
    let (mut header_errors, mut damaged) = (0, 0);
    for bit in 0..len * 8 {
        let mut b = bytes.clone();
        b[(bit / 8) as usize] ^= 1 << (bit % 8);
        std::fs::write(&path, &b).unwrap();
        let at = bit / 8;
        if at < HEADER_LEN {
            let err = SessionReader::open(&path).err().expect("a flipped header");
            match (at, err) {
                (0..=7, SessionError::BadMagic { .. }) => {}
                (
                    8..,
                    SessionError::Corrupt {
                        offset: 0, reason, ..
                    },
                ) => {
                    assert!(reason.starts_with("header checksum mismatch"), "{reason}")
                }
                (_, e) => panic!("flip of bit {bit}: {e:?}"),
            }
            header_errors += 1;
            continue;
        }
        let i = offsets.iter().rposition(|o| *o <= at).unwrap();
        let end = offsets.get(i + 1).copied().unwrap_or(len);
        let out = read_through(&path).unwrap();
        assert!(out.end.is_none(), "bit {bit}: {:?}", out.end);
        assert_eq!(out.damaged.len(), 1, "bit {bit}: {:?}", out.damaged);
        let (offset, lost, reason) = &out.damaged[0];
        assert_eq!(
            (*offset, *lost),
            (offsets[i], end - offsets[i]),
            "bit {bit}"
        );
        let expected_reason = if at - offsets[i] >= FRAME_HEADER_LEN {
            "payload checksum mismatch"
        } else if at - offsets[i] < 4 {
            "no frame marker"
        } else {
            "frame header checksum mismatch"
        };
        assert!(reason.starts_with(expected_reason), "bit {bit}: {reason}");
        let mut rest = good.clone();
        rest.remove(i);
        assert_eq!(out.frames, rest, "bit {bit}");
        damaged += 1;
    }
    assert_eq!(header_errors, 160);
    assert_eq!(header_errors + damaged, len * 8);
}

#[test]
fn junk_between_frames_is_one_damaged_region_and_junk_at_the_end_another() {
    let dir = TempDir::new("junk");
    let full = dir.join("full");
    let batches = batches();
    let (offsets, len) = write_session(&full, &batches);
    let bytes = std::fs::read(&full).unwrap();
    // 100 bytes between frames 1 and 2 (with a marker but no frame after it), 30 at
    // the end.
    let mut junk = vec![0x5a; 100];
    junk[40..44].copy_from_slice(&SYNC);
    let mut b = bytes[..offsets[2] as usize].to_vec();
    b.extend_from_slice(&junk);
    b.extend_from_slice(&bytes[offsets[2] as usize..]);
    b.extend_from_slice(&[0x33; 30]);
    let path = dir.join("junk");
    std::fs::write(&path, &b).unwrap();
    let out = read_through(&path).unwrap();
    assert!(out.end.is_none(), "{:?}", out.end);
    assert_eq!(out.frames.len(), 4);
    assert_eq!(out.frames[2].offset, offsets[2] + 100);
    assert_eq!(out.damaged.len(), 2);
    assert_eq!(
        (out.damaged[0].0, out.damaged[0].1),
        (offsets[2], 100),
        "{:?}",
        out.damaged
    );
    assert_eq!(
        out.damaged[0].2,
        "no frame marker; skipped to the next intact frame"
    );
    assert_eq!((out.damaged[1].0, out.damaged[1].1), (len + 100, 30));
    assert_eq!(
        out.damaged[1].2,
        "no frame marker; skipped to the end of the file (no intact frame follows)"
    );
    // Fewer bytes than a frame header at the end: a cut, not damage.
    std::fs::write(&path, &b[..b.len() - 11]).unwrap();
    let out = read_through(&path).unwrap();
    assert_eq!(out.damaged.len(), 1);
    assert_truncated(
        out.end.unwrap(),
        &path,
        len + 100,
        "19 bytes left, a frame header is 20",
    );
}

#[test]
fn a_scan_passes_markers_inside_payloads() {
    // Payloads full of frame markers (an id whose big-endian bytes are the marker): a
    // damaged first frame header makes the reader scan through all of them.
    let dir = TempDir::new("markers");
    let path = dir.join("session.gpuprof");
    let records: Vec<Record> = (0..50)
        .map(|i| {
            Record::String(InternedString {
                id: u32::from_be_bytes(SYNC),
                text: format!("{i}"),
            })
        })
        .collect();
    let payload = encode_batch(&records).unwrap();
    let mut writer = SessionWriter::create(&path).unwrap();
    writer.append(1, &payload).unwrap();
    let second = writer.len();
    writer.append(2, &payload).unwrap();
    writer.sync().unwrap();
    drop(writer);
    assert_eq!(payload.windows(4).filter(|w| *w == SYNC).count(), 50);
    // The pid of the first frame flipped.
    let mut pid = peek(&path, HEADER_LEN + 8, 1);
    pid[0] ^= 4;
    patch(&path, HEADER_LEN + 8, &pid);
    let out = read_through(&path).unwrap();
    assert_eq!(
        out.damaged,
        [(
            HEADER_LEN,
            second - HEADER_LEN,
            "frame header checksum mismatch; skipped to the next intact frame".to_string()
        )]
    );
    assert_eq!(out.frames.len(), 1);
    assert_eq!((out.frames[0].pid, out.frames[0].offset), (2, second));
    assert_eq!(out.frames[0].records, records);
}

#[test]
fn a_whole_valid_frame_inside_a_payload_is_what_a_scan_can_find() {
    // The documented limit of resynchronisation: a payload that holds a complete frame
    // (header and payload with matching checksums) byte for byte. Reading in order never
    // looks inside a payload; only a scan after damage can land on it.
    let dir = TempDir::new("inner");
    let inner_path = dir.join("inner");
    let inner_records = vec![Record::End(End { records: 7 })];
    let mut w = SessionWriter::create(&inner_path).unwrap();
    w.append(9, &encode_batch(&inner_records).unwrap()).unwrap();
    w.sync().unwrap();
    drop(w);
    let inner = std::fs::read(&inner_path).unwrap()[HEADER_LEN as usize..].to_vec();
    let path = dir.join("outer");
    let mut w = SessionWriter::create(&path).unwrap();
    w.append(1, &inner).unwrap();
    let next = w.len();
    w.append(2, &encode_batch(&all_records()[..1]).unwrap())
        .unwrap();
    w.sync().unwrap();
    drop(w);
    // In order: the outer frame does not decode (its payload is a frame, not a batch).
    let out = read_through(&path).unwrap();
    assert_eq!(out.damaged.len(), 1);
    assert!(out.damaged[0].2.starts_with("frame does not decode"));
    assert_eq!(out.frames.len(), 1);
    // With the outer frame's header damaged, the scan finds the inner frame.
    patch(&path, HEADER_LEN + 8, b"\xff");
    let out = read_through(&path).unwrap();
    assert_eq!(
        out.damaged,
        [(
            HEADER_LEN,
            FRAME_HEADER_LEN,
            "frame header checksum mismatch; skipped to the next intact frame".to_string()
        )]
    );
    let found: Vec<(u32, u64)> = out.frames.iter().map(|f| (f.pid, f.offset)).collect();
    assert_eq!(found, [(9, HEADER_LEN + FRAME_HEADER_LEN), (2, next)]);
    assert_eq!(out.frames[0].records, inner_records);
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
        "the 20-byte header is cut short at 5 bytes",
    );
}

#[test]
fn header_versions_are_checked_after_the_header_checksum() {
    let dir = TempDir::new("newer");
    let path = dir.join("session.gpuprof");
    write_session(&path, &batches());
    // A version changed without its checksum: damage, whatever the value.
    for format in [0u32, 3, 6, 1 << 31] {
        patch(&path, 8, &format.to_le_bytes());
        assert_corrupt(
            SessionReader::open(&path).err().unwrap(),
            &path,
            0,
            "header checksum mismatch",
        );
    }
    patch(&path, 8, &FORMAT_VERSION.to_le_bytes());
    patch(&path, 12, &99u32.to_le_bytes());
    let e = SessionReader::open(&path).err().unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: corrupt at offset 0: header checksum mismatch (stored {:#010x}, computed {:#010x}): \
             the format and protocol versions cannot be trusted",
            path.display(),
            u32::from_le_bytes(peek(&path, 16, 4).try_into().unwrap()),
            crc32c(&peek(&path, 0, 16)),
        )
    );
    // A newer format, as a newer writer would write it.
    rewrite_header(&path, FORMAT_VERSION + 1, PROTOCOL_VERSION);
    match SessionReader::open(&path) {
        Err(SessionError::Version {
            path: p,
            found,
            expected,
        }) => assert_eq!((p, found, expected), (path.clone(), 3, 2)),
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("opened"),
    }
    rewrite_header(&path, 0, PROTOCOL_VERSION);
    assert_corrupt(
        SessionReader::open(&path).err().unwrap(),
        &path,
        8,
        "session format version 0",
    );
    // A newer record protocol: an error naming file, offset and value.
    rewrite_header(&path, FORMAT_VERSION, 99);
    let e = SessionReader::open(&path).err().unwrap();
    assert!(
        matches!(
            &e,
            SessionError::Protocol { path: p, offset: 12, found: 99, expected }
                if *p == path && *expected == PROTOCOL_VERSION
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "{}: record protocol 99 (header offset 12) is newer than this gpuprof reads ({PROTOCOL_VERSION}); upgrade gpuprof",
            path.display()
        )
    );
    rewrite_header(&path, FORMAT_VERSION, 0);
    assert_corrupt(
        SessionReader::open(&path).err().unwrap(),
        &path,
        12,
        "record protocol version 0",
    );
    // An older protocol reads: records decode field by field.
    rewrite_header(&path, FORMAT_VERSION, 1);
    assert_eq!(read_all(&path).unwrap().len(), 4);
}

#[test]
fn a_frame_that_does_not_decode_is_damaged_and_the_next_one_reads() {
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
        offsets.push((writer.len(), payload.len() as u64));
        writer.append(7, payload).unwrap();
        writer.append(8, &good).unwrap();
    }
    drop(writer);
    let mut reader = SessionReader::open(&path).unwrap();
    for (offset, len) in offsets {
        assert_damaged(
            reader.next_frame().unwrap_err(),
            &path,
            offset,
            FRAME_HEADER_LEN + len,
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

    // A reader does not believe a length over the limit, even in a header whose
    // checksum matches.
    let mut head = Vec::from(SYNC);
    head.extend_from_slice(&(MAX_FRAME + 1).to_le_bytes());
    head.extend_from_slice(&1u32.to_le_bytes());
    head.extend_from_slice(&0u32.to_le_bytes());
    let crc = crc32c(&head);
    head.extend_from_slice(&crc.to_le_bytes());
    let mut file = std::fs::read(&path).unwrap();
    file.extend_from_slice(&head);
    file.extend_from_slice(&[0; 64]);
    std::fs::write(&path, &file).unwrap();
    let mut reader = SessionReader::open(&path).unwrap();
    assert_eq!(reader.next_frame().unwrap().unwrap().records.len(), 1);
    assert_damaged(
        reader.next_frame().unwrap_err(),
        &path,
        at,
        84,
        "frame length 1073741825 exceeds the 1073741824-byte limit; skipped to the end of the file",
    );
    assert_eq!(reader.next_frame().unwrap(), None);
    // At the limit, the length is believed and the file is too short for it.
    let mut head = Vec::from(SYNC);
    head.extend_from_slice(&MAX_FRAME.to_le_bytes());
    head.extend_from_slice(&1u32.to_le_bytes());
    head.extend_from_slice(&0u32.to_le_bytes());
    let crc = crc32c(&head);
    head.extend_from_slice(&crc.to_le_bytes());
    patch(&path, at, &head);
    let mut reader = SessionReader::open(&path).unwrap();
    reader.next_frame().unwrap();
    assert_truncated(
        reader.next_frame().unwrap_err(),
        &path,
        at,
        "frame of 1073741824 bytes, only 64 left",
    );
}

/// A format 1 file (16-byte header; frames `length | pid | payload`), as gpuprof wrote
/// before frame checksums.
fn write_v1(path: &Path, frames: &[(u32, &[u8])]) -> Vec<u64> {
    let mut b = Vec::from(MAGIC);
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&3u32.to_le_bytes());
    let mut offsets = Vec::new();
    for (pid, payload) in frames {
        offsets.push(b.len() as u64);
        b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(payload);
    }
    std::fs::write(path, b).unwrap();
    offsets
}

#[test]
fn format_1_files_still_read() {
    let dir = TempDir::new("v1");
    let path = dir.join("session.gpuprof");
    let batches = batches();
    let payloads: Vec<Vec<u8>> = batches
        .iter()
        .map(|(_, r)| encode_batch(r).unwrap())
        .collect();
    let frames: Vec<(u32, &[u8])> = batches
        .iter()
        .zip(&payloads)
        .map(|((pid, _), p)| (*pid, &p[..]))
        .collect();
    let offsets = write_v1(&path, &frames);
    assert_eq!(offsets[0], 16);
    let reader = SessionReader::open(&path).unwrap();
    assert_eq!((reader.format_version(), reader.protocol_version()), (1, 3));
    let read = read_all(&path).unwrap();
    assert_eq!(read.len(), 4);
    for ((f, (pid, records)), o) in read.iter().zip(&batches).zip(&offsets) {
        assert_eq!((f.pid, &f.records, f.offset), (*pid, records, *o));
    }

    // A frame that does not decode is skipped; the next one reads.
    let mut with_bad = frames.clone();
    with_bad.insert(1, (5, b"\xc1\xc1"));
    let offsets = write_v1(&path, &with_bad);
    let out = read_through(&path).unwrap();
    assert_eq!(out.frames.len(), 4);
    assert_eq!(out.damaged.len(), 1);
    assert_eq!((out.damaged[0].0, out.damaged[0].1), (offsets[1], 10));

    // A length over the limit ends reading: nothing marks where the next frame is.
    patch(&path, offsets[2], &u32::MAX.to_le_bytes());
    let mut reader = SessionReader::open(&path).unwrap();
    reader.next_frame().unwrap().unwrap();
    reader.next_frame().unwrap_err();
    assert_corrupt(
        reader.next_frame().unwrap_err(),
        &path,
        offsets[2],
        "frame length 4294967295 exceeds the 1073741824-byte limit (format 1 has no frame markers",
    );
    assert_eq!(reader.next_frame().unwrap(), None);

    // Cut short: the same answers as format 2, with format 1's sizes.
    let len = std::fs::metadata(&path).unwrap().len();
    write_v1(&path, &frames);
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(offsets[1] + 5).unwrap();
    let mut reader = SessionReader::open(&path).unwrap();
    reader.next_frame().unwrap().unwrap();
    assert_truncated(
        reader.next_frame().unwrap_err(),
        &path,
        offsets[1],
        "5 bytes left, a frame header is 8",
    );
    assert!(len > offsets[1]);
    f.set_len(14).unwrap();
    assert_truncated(
        SessionReader::open(&path).err().unwrap(),
        &path,
        0,
        "the 16-byte header is cut short at 14 bytes",
    );
    // A newer record protocol in a format 1 header is refused as well.
    write_v1(&path, &frames);
    patch(&path, 12, &99u32.to_le_bytes());
    assert!(matches!(
        SessionReader::open(&path),
        Err(SessionError::Protocol { found: 99, .. })
    ));
}
