//! The shared-memory ring, used as the two processes use it (through the file).

use std::collections::VecDeque;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use crate::common::{peek, TempDir};
use gpuprof_wire::ring::*;
use proptest::prelude::*;

/// A writer and a reader on a fresh ring of `capacity` bytes.
fn ring(dir: &TempDir, capacity: usize) -> (RingWriter, RingReader) {
    let path = dir.join("ring-1.ring");
    let writer = RingWriter::create(&path, capacity, 1).expect("create");
    let reader = RingReader::open(&path).expect("open");
    (writer, reader)
}

/// `len` bytes that differ from frame to frame.
fn payload(seq: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seq.wrapping_mul(31).wrapping_add(i as u64 * 7)) as u8)
        .collect()
}

fn read_one(reader: &mut RingReader) -> Vec<u8> {
    reader.try_read().expect("read").expect("a frame")
}

#[test]
fn create_open_round_trip() {
    let dir = TempDir::new("round-trip");
    let path = dir.join("ring-4242.ring");
    let writer = RingWriter::create(&path, 4096, 4242).unwrap();
    assert_eq!(writer.path(), path);
    assert_eq!(writer.capacity(), 4096);
    assert_eq!(writer.free_bytes(), 4096);

    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.len(), (HEADER_SIZE + 4096) as u64);
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);

    // The header bytes as the layout promises them (little-endian throughout).
    let header = peek(&path, 0, HEADER_SIZE);
    assert_eq!(&header[0..8], b"GPUPROFR");
    assert_eq!(&header[8..12], &LAYOUT_VERSION.to_le_bytes());
    assert_eq!(
        &header[12..16],
        &gpuprof_wire::PROTOCOL_VERSION.to_le_bytes()
    );
    assert_eq!(&header[16..24], &4096u64.to_le_bytes());
    assert_eq!(&header[24..28], &4242u32.to_le_bytes());
    assert_eq!(&header[28..32], &FLAG_ALIVE.to_le_bytes());
    assert!(
        header[32..].iter().all(|b| *b == 0),
        "counters and positions start at 0"
    );

    let reader = RingReader::open(&path).unwrap();
    assert_eq!(reader.path(), path);
    assert!(!reader.is_finished());
    assert_eq!(
        reader.header(),
        HeaderInfo {
            protocol_version: gpuprof_wire::PROTOCOL_VERSION,
            capacity: 4096,
            producer_pid: 4242,
            flags: FLAG_ALIVE,
            dropped_records: 0,
            dropped_frames: 0,
            launches: 0,
            kernels: 0,
            produced: 0,
            markers: 0,
            markers_done: 0,
            write_pos: 0,
            read_pos: 0,
        }
    );
    use std::sync::atomic::Ordering::Relaxed;
    writer.tally().launches.fetch_add(3, Relaxed);
    writer.tally().kernels.fetch_add(2, Relaxed);
    writer.tally().produced.fetch_add(7, Relaxed);
    let h = reader.header();
    assert_eq!((h.launches, h.kernels, h.produced), (3, 2, 7));
    assert_eq!(
        &peek(&path, 48, 24)[..],
        &[3u64.to_le_bytes(), 2u64.to_le_bytes(), 7u64.to_le_bytes()].concat()[..]
    );
}

#[test]
fn create_refuses_an_existing_path() {
    let dir = TempDir::new("excl");
    let path = dir.join("ring.ring");
    let _first = RingWriter::create(&path, 4096, 1).unwrap();
    match RingWriter::create(&path, 4096, 2) {
        Err(RingError::Io { path: p, source }) => {
            assert_eq!(p, path);
            assert_eq!(source.kind(), ErrorKind::AlreadyExists);
        }
        Err(e) => panic!("wrong error {e:?}"),
        Ok(_) => panic!("created over an existing ring"),
    }
    // The first ring is untouched: still pid 1.
    assert_eq!(RingReader::open(&path).unwrap().header().producer_pid, 1);

    // Nor over any other file.
    let other = dir.join("precious");
    std::fs::write(&other, b"keep me").unwrap();
    assert!(matches!(
        RingWriter::create(&other, 4096, 1),
        Err(RingError::Io { .. })
    ));
    assert_eq!(std::fs::read(&other).unwrap(), b"keep me");
}

#[test]
fn capacity_rounds_up_to_a_power_of_two_within_bounds() {
    let dir = TempDir::new("capacity");
    for (asked, got) in [
        (0, 4096),
        (1, 4096),
        (4095, 4096),
        (4096, 4096),
        (4097, 8192),
        (5000, 8192),
        (65_536, 65_536),
        (65_537, 131_072),
        ((1 << 30) + 1, 1 << 31),
        (MAX_CAPACITY, MAX_CAPACITY),
    ] {
        let path = dir.join(&format!("ring-{asked}"));
        let writer = RingWriter::create(&path, asked, 1).unwrap();
        assert_eq!(writer.capacity(), got, "asked {asked}");
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            (HEADER_SIZE + got) as u64
        );
        assert_eq!(
            RingReader::open(&path).unwrap().header().capacity,
            got as u64
        );
        drop(writer);
        std::fs::remove_file(&path).unwrap();
    }
    for (asked, reported) in [
        (MAX_CAPACITY + 1, 1usize << 32),
        (1 << 40, 1 << 40),
        (usize::MAX, usize::MAX),
    ] {
        let path = dir.join("too-big");
        match RingWriter::create(&path, asked, 1) {
            Err(RingError::Capacity(c)) => assert_eq!(c, reported, "asked {asked}"),
            Err(e) => panic!("asked {asked}: wrong error {e:?}"),
            Ok(_) => panic!("asked {asked}: created"),
        }
        assert!(!path.exists(), "no file is left for a refused capacity");
    }
}

#[test]
fn frames_of_many_sizes_come_back_in_order() {
    let dir = TempDir::new("sizes");
    let (mut writer, mut reader) = ring(&dir, 8192);
    let max = 8192 / 2 - 4;
    let sizes: Vec<usize> = (0..=64)
        .chain([100, 255, 256, 1000, 1023, 1024, 2047, 3000, max - 1, max])
        .collect();
    let mut seq = 0u64;
    for round in 0..5 {
        // Write as many as fit, then drain: every frame comes back byte-identical.
        let mut sent = VecDeque::new();
        for &len in sizes.iter().cycle().skip(round * 7).take(sizes.len()) {
            let p = payload(seq, len);
            match writer.try_write(&p) {
                Ok(()) => {
                    sent.push_back(p);
                    seq += 1;
                }
                Err(WriteError::Full { .. }) => break,
                Err(e) => panic!("{len}: {e}"),
            }
        }
        assert!(!sent.is_empty());
        while let Some(p) = sent.pop_front() {
            assert_eq!(read_one(&mut reader), p);
        }
        assert_eq!(reader.try_read().unwrap(), None);
        // Then one at a time.
        for &len in &sizes {
            let p = payload(seq, len);
            seq += 1;
            writer.try_write(&p).unwrap();
            assert_eq!(read_one(&mut reader), p);
            assert_eq!(reader.try_read().unwrap(), None);
        }
    }
    let h = reader.header();
    assert_eq!(h.write_pos, h.read_pos);
    assert!(h.write_pos > 10 * 8192, "wrapped many times");
}

/// Moves the (drained) ring's write position `n` bytes on with frames of at most half
/// the 4096-byte ring that fit before the end, reading each back.
fn advance(writer: &mut RingWriter, reader: &mut RingReader, n: usize) {
    let start = reader.header().write_pos;
    assert!(
        start % 4096 + n as u64 <= 4096 && (n == 0 || n >= 4),
        "cannot advance {n} from {start}"
    );
    let mut left = n;
    while left > 0 {
        let frame = if left > 2048 {
            (left - 4).min(2048)
        } else {
            left
        };
        writer.try_write(&vec![0xaa; frame - 4]).unwrap();
        read_one(reader);
        left -= frame;
    }
    assert_eq!(reader.header().write_pos, start + n as u64);
}

/// On a fresh ring, brings the write position to `offset` within the data area.
fn advance_to(writer: &mut RingWriter, reader: &mut RingReader, offset: usize) {
    assert_eq!(reader.header().write_pos, 0);
    advance(writer, reader, offset);
}

#[test]
fn a_frame_that_ends_exactly_at_the_end_needs_no_wrap() {
    let dir = TempDir::new("exact-end");
    let (mut writer, mut reader) = ring(&dir, 4096);
    writer.try_write(&payload(1, 2044)).unwrap();
    writer.try_write(&payload(2, 2044)).unwrap();
    assert_eq!(reader.header().write_pos, 4096);
    assert_eq!(writer.free_bytes(), 0);
    assert_eq!(read_one(&mut reader), payload(1, 2044));
    // The next frame starts at offset 0 with nothing skipped.
    writer.try_write(&payload(3, 10)).unwrap();
    assert_eq!(reader.header().write_pos, 4096 + 14);
    assert_eq!(
        &peek(writer.path(), HEADER_SIZE as u64, 4),
        &10u32.to_le_bytes()
    );
    assert_eq!(read_one(&mut reader), payload(2, 2044));
    assert_eq!(read_one(&mut reader), payload(3, 10));
    assert_eq!(reader.header().read_pos, 4096 + 14);
    assert_eq!(reader.try_read().unwrap(), None);
}

#[test]
fn an_empty_frame_fits_a_four_byte_tail() {
    let dir = TempDir::new("tail-4");
    let (mut writer, mut reader) = ring(&dir, 4096);
    advance_to(&mut writer, &mut reader, 4092);
    writer.try_write(&[]).unwrap();
    assert_eq!(reader.header().write_pos, 4096);
    assert_eq!(read_one(&mut reader), Vec::<u8>::new());
}

#[test]
fn wrap_with_a_tail_shorter_than_a_length_skips_it_without_a_marker() {
    for tail in 1..4usize {
        let dir = TempDir::new("tail-short");
        let (mut writer, mut reader) = ring(&dir, 4096);
        advance_to(&mut writer, &mut reader, 4096 - tail);
        let before = peek(writer.path(), (HEADER_SIZE + 4096 - tail) as u64, tail);
        writer.try_write(&payload(9, 10)).unwrap();
        // Skipped `tail` bytes, then the 14-byte frame at offset 0.
        assert_eq!(reader.header().write_pos, 4096 + 14, "tail {tail}");
        assert_eq!(
            peek(writer.path(), (HEADER_SIZE + 4096 - tail) as u64, tail),
            before,
            "tail {tail} untouched"
        );
        assert_eq!(
            &peek(writer.path(), HEADER_SIZE as u64, 4),
            &10u32.to_le_bytes()
        );
        assert_eq!(read_one(&mut reader), payload(9, 10));
        assert_eq!(reader.header().read_pos, 4096 + 14);
        assert_eq!(reader.try_read().unwrap(), None);
    }
}

#[test]
fn wrap_with_room_for_a_length_writes_the_wrap_marker() {
    for (offset, len) in [(4092, 1), (4000, 93), (4000, 100), (2052, 2044)] {
        let dir = TempDir::new("tail-marker");
        let (mut writer, mut reader) = ring(&dir, 4096);
        advance_to(&mut writer, &mut reader, offset);
        writer.try_write(&payload(5, len)).unwrap();
        let skipped = 4096 - offset;
        assert_eq!(
            reader.header().write_pos,
            (offset + skipped + 4 + len) as u64,
            "at {offset}"
        );
        assert_eq!(
            peek(writer.path(), (HEADER_SIZE + offset) as u64, 4),
            WRAP.to_le_bytes(),
            "at {offset}"
        );
        assert_eq!(
            &peek(writer.path(), HEADER_SIZE as u64, 4),
            &(len as u32).to_le_bytes()
        );
        assert_eq!(read_one(&mut reader), payload(5, len));
        assert_eq!(reader.header().read_pos, (4096 + 4 + len) as u64);
        assert_eq!(reader.try_read().unwrap(), None);
    }
}

#[test]
fn a_full_ring_refuses_at_once_and_accepts_after_the_reader_drains() {
    let dir = TempDir::new("full");
    let (mut writer, mut reader) = ring(&dir, 4096);
    for i in 0..4 {
        writer.try_write(&payload(i, 1020)).unwrap();
    }
    assert_eq!(writer.free_bytes(), 0);
    let started = Instant::now();
    for _ in 0..3 {
        assert_eq!(
            writer.try_write(&payload(9, 1020)),
            Err(WriteError::Full {
                needed: 1024,
                free: 0
            })
        );
        assert_eq!(
            writer.try_write(&[]),
            Err(WriteError::Full { needed: 4, free: 0 })
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refusing does not wait"
    );
    assert_eq!(
        reader.header().write_pos,
        4096,
        "a refused frame writes nothing"
    );

    assert_eq!(read_one(&mut reader), payload(0, 1020));
    assert_eq!(writer.free_bytes(), 1024);
    assert_eq!(
        writer.try_write(&payload(4, 1021)),
        Err(WriteError::Full {
            needed: 1025,
            free: 1024
        })
    );
    writer.try_write(&payload(4, 1020)).unwrap();
    for i in 1..5 {
        assert_eq!(read_one(&mut reader), payload(i, 1020));
    }
    assert_eq!(reader.try_read().unwrap(), None);
}

#[test]
fn a_frame_that_must_wrap_needs_the_skipped_tail_free_too() {
    let dir = TempDir::new("full-wrap");
    let (mut writer, mut reader) = ring(&dir, 4096);
    writer.try_write(&payload(0, 1996)).unwrap();
    writer.try_write(&payload(1, 1996)).unwrap();
    assert_eq!(read_one(&mut reader), payload(0, 1996));
    // At offset 4000: 96 bytes of tail plus the 2044-byte frame, 2096 free.
    assert_eq!(writer.free_bytes(), 2096);
    assert_eq!(
        writer.try_write(&payload(2, 2040)),
        Err(WriteError::Full {
            needed: 2140,
            free: 2096
        })
    );
    assert_eq!(read_one(&mut reader), payload(1, 1996));
    writer.try_write(&payload(2, 2040)).unwrap();
    assert_eq!(reader.header().write_pos, 4000 + 96 + 2044);
    assert_eq!(read_one(&mut reader), payload(2, 2040));
}

#[test]
fn too_large_is_more_than_half_the_ring() {
    let dir = TempDir::new("too-large");
    let (mut writer, mut reader) = ring(&dir, 4096);
    assert_eq!(
        writer.try_write(&vec![1; 2045]),
        Err(WriteError::TooLarge(2045))
    );
    assert_eq!(
        writer.try_write(&vec![1; 4092]),
        Err(WriteError::TooLarge(4092))
    );
    assert_eq!(
        writer.try_write(&vec![1; 1 << 20]),
        Err(WriteError::TooLarge(1 << 20))
    );
    assert_eq!(reader.try_read().unwrap(), None);
    writer.try_write(&vec![1; 2044]).unwrap();
    assert_eq!(read_one(&mut reader), vec![1; 2044]);
}

/// Regression: a frame of more than half the ring was refused as `Full` forever when
/// the write offset made it wrap (e.g. a 4000-byte payload at offset 104 of an empty
/// 4096-byte ring: "7996 bytes needed, 4096 free"). Every frame not `TooLarge` must be
/// accepted once the reader has drained, whatever the offset.
#[test]
fn every_frame_not_too_large_fits_an_empty_ring_at_every_offset() {
    let dir = TempDir::new("fits-empty");
    let (mut writer, mut reader) = ring(&dir, 4096);
    advance(&mut writer, &mut reader, 104);
    assert_eq!(writer.free_bytes(), 4096);
    assert_eq!(
        writer.try_write(&payload(0, 4000)),
        Err(WriteError::TooLarge(4000))
    );
    advance(&mut writer, &mut reader, 4096 - 104);
    for (seq, offset) in (0..4096).step_by(4).enumerate() {
        advance(&mut writer, &mut reader, offset);
        let p = payload(seq as u64, 2044);
        writer
            .try_write(&p)
            .unwrap_or_else(|e| panic!("offset {offset}: {e}"));
        assert_eq!(read_one(&mut reader), p);
        // Back to offset 0 for the next offset.
        let at = (reader.header().write_pos % 4096) as usize;
        advance(&mut writer, &mut reader, (4096 - at) % 4096);
        assert_eq!(reader.header().write_pos % 4096, 0);
    }
}

#[test]
fn dropped_counters_and_finished_reach_the_reader() {
    let dir = TempDir::new("dropped");
    let (mut writer, mut reader) = ring(&dir, 4096);
    writer.add_dropped(5, 1);
    writer.add_dropped(2, 1);
    writer.add_dropped(0, 0);
    writer.try_write(b"last").unwrap();
    assert!(!reader.is_finished());
    writer.finish();
    assert!(reader.is_finished());
    let h = reader.header();
    assert_eq!((h.dropped_records, h.dropped_frames), (7, 2));
    assert_eq!(h.flags, FLAG_FINISHED);
    assert_eq!(h.flags & FLAG_ALIVE, 0);
    // A frame written before `finish` is still there to read.
    assert_eq!(read_one(&mut reader), b"last");
    assert_eq!(reader.try_read().unwrap(), None);
    // And a reader that opens later sees the same.
    let late = RingReader::open(writer.path()).unwrap();
    assert!(late.is_finished());
    assert_eq!(late.header().dropped_records, 7);
    assert_eq!(
        late.header().read_pos,
        8,
        "the read position is in the header"
    );
}

#[test]
fn a_reopened_reader_resumes_where_the_last_one_stopped() {
    let dir = TempDir::new("reopen");
    let (mut writer, mut reader) = ring(&dir, 4096);
    for i in 0..3 {
        writer.try_write(&payload(i, 100)).unwrap();
    }
    assert_eq!(read_one(&mut reader), payload(0, 100));
    drop(reader);
    let mut reader = RingReader::open(writer.path()).unwrap();
    assert_eq!(read_one(&mut reader), payload(1, 100));
    assert_eq!(read_one(&mut reader), payload(2, 100));
    assert_eq!(reader.try_read().unwrap(), None);
}

#[derive(Debug, Clone)]
enum Op {
    Write(usize),
    Read,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        // Mostly fitting frames, some more than half the ring, some far too large.
        6 => (0usize..1200).prop_map(Op::Write),
        2 => (1200usize..2100).prop_map(Op::Write),
        1 => (2100usize..5000).prop_map(Op::Write),
        5 => Just(Op::Read),
    ]
}

/// The ring as a queue of frames: what it holds, where each frame ends, positions.
struct Model {
    cap: u64,
    write: u64,
    read: u64,
    frames: VecDeque<(Vec<u8>, u64)>,
}

impl Model {
    fn write(&mut self, p: Vec<u8>) -> Result<(), WriteError> {
        let frame = 4 + p.len() as u64;
        if frame > self.cap / 2 {
            return Err(WriteError::TooLarge(p.len()));
        }
        let tail = self.cap - self.write % self.cap;
        // A frame never straddles the end: when it would, the tail is skipped.
        let needed = if frame > tail { tail + frame } else { frame };
        let free = self.cap - (self.write - self.read);
        if needed > free {
            return Err(WriteError::Full {
                needed: needed as usize,
                free: free as usize,
            });
        }
        self.write += needed;
        self.frames.push_back((p, self.write));
        Ok(())
    }

    fn read(&mut self) -> Option<Vec<u8>> {
        let (p, end) = self.frames.pop_front()?;
        self.read = end;
        Some(p)
    }
}

proptest! {
    #[test]
    fn ring_matches_a_queue_model(ops in proptest::collection::vec(op(), 1..300)) {
        let dir = TempDir::new("model");
        let (mut writer, mut reader) = ring(&dir, 4096);
        let mut model = Model { cap: 4096, write: 0, read: 0, frames: VecDeque::new() };
        for (seq, op) in ops.into_iter().enumerate() {
            match op {
                Op::Write(len) => {
                    let p = payload(seq as u64, len);
                    let at = model.write;
                    let got = writer.try_write(&p);
                    if let Err(WriteError::Full { needed, .. }) = got {
                        prop_assert!(needed <= 4096, "Full for a frame that cannot fit a drained ring");
                    }
                    prop_assert_eq!(got, model.write(p), "write {} at {}", len, at);
                }
                Op::Read => prop_assert_eq!(reader.try_read().unwrap(), model.read()),
            }
            let h = reader.header();
            prop_assert_eq!((h.write_pos, h.read_pos), (model.write, model.read));
            prop_assert_eq!(writer.free_bytes() as u64, model.cap - (model.write - model.read));
        }
        while let Some(p) = model.read() {
            prop_assert_eq!(reader.try_read().unwrap(), Some(p));
        }
        prop_assert_eq!(reader.try_read().unwrap(), None);
    }
}

/// A frame of a sequence number, filler and a checksum of both.
fn checked_frame(seq: u64) -> Vec<u8> {
    let len = 8 + (seq as usize * 7919) % 1500;
    let mut p = payload(seq, len + 8);
    p[..8].copy_from_slice(&seq.to_le_bytes());
    let sum = fnv(&p[..len]);
    p[len..].copy_from_slice(&sum.to_le_bytes());
    p
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn two_threads_pass_100k_frames_in_order() {
    const FRAMES: u64 = 100_000;
    let deadline = Instant::now() + Duration::from_secs(120);
    let dir = TempDir::new("threads");
    let path = dir.join("ring.ring");
    let mut writer = RingWriter::create(&path, 16 * 1024, 1).unwrap();
    // The reader maps the file on its own, as the collector does.
    let mut reader = RingReader::open(&path).unwrap();

    let producer = std::thread::spawn(move || {
        let mut refused = 0u64;
        for seq in 0..FRAMES {
            let p = checked_frame(seq);
            loop {
                match writer.try_write(&p) {
                    Ok(()) => break,
                    Err(WriteError::Full { .. }) => {
                        refused += 1;
                        assert!(Instant::now() < deadline, "writer stuck at frame {seq}");
                        std::thread::yield_now();
                    }
                    Err(e) => panic!("frame {seq}: {e}"),
                }
            }
        }
        writer.finish();
        refused
    });
    let consumer = std::thread::spawn(move || {
        let mut seq = 0u64;
        let mut bytes = 0usize;
        loop {
            // Finished is read before looking: after it, an empty ring stays empty.
            let finished = reader.is_finished();
            match reader.try_read().expect("a consistent ring") {
                Some(p) => {
                    assert_eq!(p, checked_frame(seq), "frame {seq}");
                    let len = p.len() - 8;
                    assert_eq!(
                        fnv(&p[..len]).to_le_bytes(),
                        p[len..],
                        "checksum of frame {seq}"
                    );
                    bytes += p.len();
                    seq += 1;
                }
                None if finished => break,
                None => {
                    assert!(Instant::now() < deadline, "reader stuck at frame {seq}");
                    std::thread::yield_now();
                }
            }
        }
        (seq, bytes)
    });
    let refused = producer.join().expect("writer thread");
    let (frames, bytes) = consumer.join().expect("reader thread");
    assert_eq!(frames, FRAMES);
    let expected: usize = (0..FRAMES).map(|s| checked_frame(s).len()).sum();
    assert_eq!(bytes, expected);
    eprintln!(
        "{frames} frames, {bytes} bytes; writer refused {refused} times while the reader caught up"
    );
}

#[test]
fn process_alive_checks_the_pid() {
    assert!(process_alive(std::process::id()));
    assert!(process_alive(1), "init exists (EPERM counts as alive)");
    assert!(!process_alive(0), "0 would mean the process group");
    assert!(!process_alive(u32::MAX), "-1 would mean every process");
    assert!(!process_alive(i32::MAX as u32 + 1));
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    assert!(!process_alive(pid), "a reaped child is gone");
}

#[test]
fn a_zombie_is_not_alive() {
    // An exited child not yet reaped stays in the process table as a zombie; it will
    // never write again, so it must not hold a collector waiting for it.
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("spawn true");
    let pid = child.id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let stat =
            std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("child's /proc entry");
        if stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            == Some("Z")
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "child {pid} did not exit"
        );
        std::thread::yield_now();
    }
    assert!(!process_alive(pid));
    child.wait().expect("reap");
    assert!(!process_alive(pid));
}

/// Every byte of a ring is reserved when it is made: the file's blocks cover it.
#[test]
fn a_ring_reserves_its_space_on_the_file_system() {
    use std::os::unix::fs::MetadataExt;
    let dir = TempDir::new("reserve");
    let path = dir.path().join("ring");
    let _w = RingWriter::create(&path, 1 << 20, 1).unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert!(
        meta.blocks() * 512 >= (HEADER_SIZE + (1 << 20)) as u64,
        "{} blocks of 512 bytes",
        meta.blocks()
    );
}

/// A ring truncated under both mappings: the producer's next write and the reader's
/// next read report it, and neither process faults.
#[test]
fn a_ring_truncated_while_mapped_is_reported_on_both_sides() {
    let dir = TempDir::new("truncated");
    let (mut writer, mut reader) = ring(&dir, 1 << 16);
    writer.try_write(&payload(1, 100)).unwrap();
    assert_eq!(read_one(&mut reader), payload(1, 100));
    std::fs::OpenOptions::new()
        .write(true)
        .open(writer.path())
        .unwrap()
        .set_len(0)
        .unwrap();
    assert_eq!(writer.try_write(&payload(2, 100)), Err(WriteError::Lost));
    assert!(writer.is_lost());
    assert_eq!(writer.try_write(&payload(3, 100)), Err(WriteError::Lost));
    let err = reader.try_read().unwrap_err().to_string();
    assert!(err.contains("truncated while it was read"), "{err}");
    assert!(reader.is_lost());
}

/// A reader that gives up says so to the producer through the header.
#[test]
fn a_reader_that_gives_up_tells_the_producer() {
    let dir = TempDir::new("give-up");
    let (writer, reader) = ring(&dir, 4096);
    assert!(!writer.reader_gone());
    reader.give_up();
    assert!(writer.reader_gone());
    assert_eq!(reader.header().flags, FLAG_ALIVE | FLAG_READER_GONE);
}

/// One buffer for every frame: each read replaces its contents exactly (shorter
/// frames after longer ones, frames across the wrap), keeps its allocation, and an
/// empty ring leaves it empty.
#[test]
fn reading_into_one_buffer_replaces_its_contents_and_keeps_its_allocation() {
    let dir = TempDir::new("read-into");
    let (mut w, mut r) = ring(&dir, 4096);
    let mut buf = Vec::new();
    let mut grown = 0;
    for (seq, len) in [
        (1u64, 1000usize),
        (2, 10),
        (3, 1500),
        (4, 1),
        (5, 2000),
        (6, 700),
    ] {
        w.try_write(&payload(seq, len)).expect("write");
        assert!(r.try_read_into(&mut buf).expect("read"));
        assert_eq!(buf, payload(seq, len), "frame {seq}");
        grown = grown.max(buf.capacity());
        assert_eq!(buf.capacity(), grown, "frame {seq}: the allocation is kept");
    }
    assert!(!r.try_read_into(&mut buf).expect("read"));
    assert!(buf.is_empty());
}

#[test]
fn fill_is_the_unread_share_of_the_capacity() {
    let dir = TempDir::new("ring-fill");
    let (mut writer, mut reader) = ring(&dir, 4096);
    assert_eq!(reader.fill_pct(), 0);
    // A frame is a 4-byte length and its payload: 1024 bytes of 4096.
    writer.try_write(&payload(1, 1020)).unwrap();
    assert_eq!(reader.fill_pct(), 25);
    writer.try_write(&payload(2, 1020)).unwrap();
    writer.try_write(&payload(3, 16)).unwrap();
    // 2068 of 4096: 50.48%, rounded down.
    assert_eq!(reader.fill_pct(), 50);
    read_one(&mut reader);
    assert_eq!(reader.fill_pct(), 25);
    read_one(&mut reader);
    read_one(&mut reader);
    assert_eq!(reader.fill_pct(), 0);
}
