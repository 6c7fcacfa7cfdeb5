//! Ring throughput on one thread against plain memcpy. A measurement, not a test:
//!
//!     cargo test -p gpuprof-wire --release --test it -- throughput --ignored --nocapture
//!
//! Rings are made in /dev/shm (tmpfs, as in a real session) when it exists: a ring on a
//! disk file system also pays for writeback of its dirty pages.

use std::hint::black_box;
use std::time::Instant;

use crate::common::TempDir;
use gpuprof_wire::ring::{RingReader, RingWriter, WriteError};

const TOTAL: usize = 2 << 30;

fn ring_dir() -> TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        TempDir::new_in(shm, "bench")
    } else {
        TempDir::new("bench")
    }
}

fn report(what: &str, payload: usize, frames: usize, secs: f64) {
    let bytes = (frames * payload) as f64;
    eprintln!(
        "{what:<46} {payload:>6} B: {:>10.0} frames/s {:>7.2} GB/s",
        frames as f64 / secs,
        bytes / secs / 1e9
    );
}

/// Writes until the ring is full, then drains it, over and over (a reader that wakes
/// up now and then; the ring is bigger than the caches).
fn ring_fill_drain(cap: usize, payload: usize) -> (usize, f64) {
    let dir = ring_dir();
    let path = dir.join("ring");
    let mut writer = RingWriter::create(&path, cap, 1).unwrap();
    let mut reader = RingReader::open(&path).unwrap();
    let data = vec![0x5au8; payload];
    let frames = TOTAL / payload;
    let (mut written, mut read, mut sum) = (0, 0, 0usize);
    let t = Instant::now();
    while read < frames {
        while written < frames {
            match writer.try_write(black_box(&data)) {
                Ok(()) => written += 1,
                Err(WriteError::Full { .. }) => break,
                Err(e) => panic!("{e}"),
            }
        }
        while let Some(frame) = reader.try_read().unwrap() {
            sum += frame[payload / 2] as usize;
            read += 1;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(sum, frames * 0x5a);
    (frames, secs)
}

/// One frame in, one frame out (a reader that keeps up; the ring stays in cache).
fn ring_lockstep(cap: usize, payload: usize) -> (usize, f64) {
    let dir = ring_dir();
    let path = dir.join("ring");
    let mut writer = RingWriter::create(&path, cap, 1).unwrap();
    let mut reader = RingReader::open(&path).unwrap();
    let data = vec![0x5au8; payload];
    let frames = TOTAL / payload;
    let mut sum = 0usize;
    let t = Instant::now();
    for _ in 0..frames {
        writer.try_write(black_box(&data)).unwrap();
        let frame = reader.try_read().unwrap().unwrap();
        sum += frame[payload / 2] as usize;
    }
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(sum, frames * 0x5a);
    (frames, secs)
}

/// The same bytes copied into a buffer of `cap` bytes at a rolling offset, and, when
/// `out` is set, copied out again into a fresh Vec (what the ring does per frame).
fn memcpy(cap: usize, payload: usize, out: bool) -> (usize, f64) {
    let data = vec![0x5au8; payload];
    let mut buf = vec![0u8; cap];
    let frames = TOTAL / payload;
    let mut off = 0;
    let mut sum = 0usize;
    let t = Instant::now();
    for _ in 0..frames {
        if off + payload > cap {
            off = 0;
        }
        buf[off..off + payload].copy_from_slice(black_box(&data));
        if out {
            let v = black_box(&buf[off..off + payload]).to_vec();
            sum += v[payload / 2] as usize;
        } else {
            sum += black_box(&buf)[off + payload / 2] as usize;
        }
        off += payload;
    }
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(sum, frames * 0x5a);
    (frames, secs)
}

#[test]
#[ignore = "a measurement: run with --release -- --ignored --nocapture"]
fn ring_throughput_vs_memcpy() {
    for payload in [4096, 65536] {
        for (label, cap) in [("64 MiB", 64 << 20), ("1 MiB", 1 << 20)] {
            let (n, s) = ring_fill_drain(cap, payload);
            report(&format!("ring {label}, fill then drain"), payload, n, s);
            let (n, s) = ring_lockstep(cap, payload);
            report(&format!("ring {label}, write one read one"), payload, n, s);
            let (n, s) = memcpy(cap, payload, false);
            report(&format!("memcpy into {label}"), payload, n, s);
            let (n, s) = memcpy(cap, payload, true);
            report(
                &format!("memcpy into {label} and out to a Vec"),
                payload,
                n,
                s,
            );
        }
    }
}
