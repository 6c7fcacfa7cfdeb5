//! Records per second from a producer's batch to sealed session parts on one core:
//! encode (MessagePack), ring write, ring read, decode, Parquet parts (zstd), with
//! nothing else running;
//! and, as the physical limit, a plain copy of the same encoded bytes through the same
//! number of buffers.

use std::time::Instant;

use anyhow::{Context, Result};
use gpuprof_collector::store::{PartLimits, StoreWriter};
use wire::ring::{RingReader, RingWriter};
use wire::{Kernel, Record};

const BATCH: usize = 4096;

/// A kernel record as CUPTI reports one, with realistic magnitudes.
fn kernel(i: u64) -> Record {
    Record::Kernel(Kernel {
        device_id: 0,
        context_id: 1,
        stream_id: 7,
        correlation_id: i as u32,
        start_ns: 1_763_700_000_000_000_000 + i * 5_000,
        end_ns: 1_763_700_000_000_000_000 + i * 5_000 + 3_000,
        name: (i % 40) as u32 + 1,
        grid: [132, 1, 1],
        block: [384, 1, 1],
        registers_per_thread: 168,
        static_shared_memory: 0,
        dynamic_shared_memory: 196_608,
        graph_id: 0,
        graph_node_id: 0,
    })
}

pub fn run(args: &[String]) -> Result<()> {
    let records: usize = crate::flag(args, "--records")?.unwrap_or(2_000_000);
    // Rings live in /dev/shm (tmpfs), as in production; elsewhere only without one.
    let base = Some(std::path::PathBuf::from("/dev/shm"))
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("gpuprof-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = measure(&dir, records);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The ring's size: the injected library's default (`GPUPROF_RING_SIZE`).
const RING: usize = 64 << 20;

fn measure(dir: &std::path::Path, records: usize) -> Result<()> {
    let batches: Vec<Vec<Record>> = (0..records as u64)
        .collect::<Vec<_>>()
        .chunks(BATCH)
        .map(|c| c.iter().map(|&i| kernel(i)).collect())
        .collect();

    // Stage 1, the producer's writer thread: encode and write into the ring.
    // Stage 2, the collector: read from the ring and append to the session file.
    // Interleaved on one thread (the ring never fills), timed per stage.
    let mut writer = RingWriter::create(&dir.join("ring"), RING, std::process::id())?;
    let mut reader = RingReader::open(&dir.join("ring"))?;
    let mut frame = Vec::new();
    let session_dir =
        std::env::temp_dir().join(format!("gpuprof-bench-session-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&session_dir);
    std::fs::create_dir(&session_dir)?;
    let mut session = StoreWriter::create(&session_dir, PartLimits::default())?;
    let (mut encode_s, mut ring_s, mut file_s) = (0f64, 0f64, 0f64);
    // The collector knows a ring's pid from its header, once.
    let pid = std::process::id();
    let mut bytes = 0u64;
    for batch in &batches {
        let t = Instant::now();
        let payload = wire::encode_batch(batch)?;
        encode_s += t.elapsed().as_secs_f64();
        bytes += payload.len() as u64;
        let t = Instant::now();
        writer.try_write(&payload).context("ring refused a frame")?;
        if !reader.try_read_into(&mut frame)? {
            anyhow::bail!("ring returned no frame");
        }
        ring_s += t.elapsed().as_secs_f64();
        let t = Instant::now();
        session.push_all(pid, &wire::decode_batch(&frame)?);
        if session.due() {
            session.seal().map_err(|f| f.error)?;
        }
        file_s += t.elapsed().as_secs_f64();
    }
    let t = Instant::now();
    session.seal().map_err(|f| f.error)?;
    session.finish()?;
    file_s += t.elapsed().as_secs_f64();

    let file_bytes = session.bytes_written();
    let parts = session.parts();
    drop(session);
    let _ = std::fs::remove_dir_all(&session_dir);

    // The physical limit of the in-memory part: the same bytes copied into a buffer
    // of the ring's size, at the offset the ring would use (walking all of it, as the
    // ring does), and out of it again into one reused buffer; no encoding, no header.
    let frames: Vec<Vec<u8>> = batches
        .iter()
        .map(|b| wire::encode_batch(b))
        .collect::<Result<_, _>>()?;
    let mut ring = vec![0u8; RING];
    let mut out = Vec::new();
    let mut at = 0;
    let t = Instant::now();
    for f in &frames {
        if at + f.len() > RING {
            at = 0;
        }
        ring[at..at + f.len()].copy_from_slice(f);
        out.clear();
        out.extend_from_slice(&ring[at..at + f.len()]);
        std::hint::black_box(&out);
        at += f.len();
    }
    let copy_s = t.elapsed().as_secs_f64();

    // Decoding alone, the collector's way (the fast path for kernels and launches)
    // and through rmp-serde alone.
    let mut decode_s = [0f64; 2];
    for (i, decode) in [wire::decode_batch, wire::decode_batch_with_serde]
        .into_iter()
        .enumerate()
    {
        let t = Instant::now();
        for f in &frames {
            std::hint::black_box(decode(f)?);
        }
        decode_s[i] = t.elapsed().as_secs_f64();
    }

    let mb = |s: f64| bytes as f64 / s / 1e6;
    let total = encode_s + ring_s + file_s;
    println!(
        "pipeline: {records} kernel records in {} frames of {BATCH}, one thread",
        batches.len()
    );
    println!(
        "  session: {file_bytes} bytes in {} parts = {:.1} bytes per kernel record (records \
         alike but for ids and times; a realistic session's bytes: gpuprof-bench scale)",
        parts,
        file_bytes as f64 / records as f64
    );
    println!(
        "  encode (MessagePack):        {encode_s:.3} s  {:.2} M records/s",
        records as f64 / encode_s / 1e6
    );
    println!(
        "  ring write + read:           {ring_s:.3} s  {:.0} MB/s",
        mb(ring_s)
    );
    println!(
        "  decode + session parts:      {file_s:.3} s  {:.2} M records/s",
        records as f64 / file_s / 1e6
    );
    println!(
        "    of which decode alone:     {:.3} s  {:.2} M records/s (rmp-serde alone: {:.3} s, {:.2} M records/s)",
        decode_s[0],
        records as f64 / decode_s[0] / 1e6,
        decode_s[1],
        records as f64 / decode_s[1] / 1e6
    );
    println!(
        "  whole pipeline:              {total:.3} s  {:.2} M records/s",
        records as f64 / total / 1e6
    );
    println!(
        "  memcpy of the same bytes in and out: {copy_s:.3} s  {:.0} MB/s",
        mb(copy_s)
    );
    println!(
        "  ratio ring / memcpy: {:.2}x; whole pipeline / memcpy: {:.1}x",
        ring_s / copy_s,
        total / copy_s
    );
    Ok(())
}
