//! A gzip file compressed on a thread of its own, so that writing a large text export
//! (the Kineto trace: about 880 bytes a kernel) and compressing it use two cores
//! instead of one, and the page cache sees a tenth of the bytes.
//!
//! The caller's writes fill a 256 KiB buffer; a full buffer is handed to the thread,
//! which compresses it into the file and hands the buffer back to be filled again.
//! At most [`IN_FLIGHT`] buffers wait for the thread, so memory stays at a few MiB
//! whatever the file's size, and a caller faster than the compressor waits for it.
//! The bytes are one ordinary gzip stream, the same as `flate2::write::GzEncoder`
//! writes at the same level (`tests` below).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

/// How many bytes the caller fills before handing them to the thread.
const CHUNK_BYTES: usize = 1 << 18;
/// Full buffers waiting for the thread at most.
const IN_FLIGHT: usize = 2;

/// A gzip file being written: [`Write`] into it, then [`GzipThread::finish`].
pub struct GzipThread {
    filling: Vec<u8>,
    /// Full buffers to the thread; `None` once finished.
    to_thread: Option<SyncSender<Vec<u8>>>,
    /// Buffers the thread has compressed, to be filled again.
    emptied: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl GzipThread {
    /// Compresses what is written into `file` at `level`, on a new thread.
    pub fn new(file: File, level: flate2::Compression) -> io::Result<GzipThread> {
        let (to_thread, full) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
        let (give_back, emptied) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT + 1);
        let thread = std::thread::Builder::new()
            .name("gzip".into())
            .spawn(move || compress(file, level, full, give_back))?;
        Ok(GzipThread {
            filling: Vec::with_capacity(CHUNK_BYTES),
            to_thread: Some(to_thread),
            emptied,
            thread: Some(thread),
        })
    }

    /// Hands the buffer being filled to the thread (if it holds anything).
    fn hand_over(&mut self) -> io::Result<()> {
        if self.filling.is_empty() {
            return Ok(());
        }
        let Some(to_thread) = &self.to_thread else {
            return Err(io::Error::other(
                "the gzip file was finished, or its thread failed",
            ));
        };
        let next = self
            .emptied
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK_BYTES));
        let full = std::mem::replace(&mut self.filling, next);
        if to_thread.send(full).is_err() {
            // The thread stopped on an error: that error is the answer.
            return Err(self.join().err().unwrap_or_else(|| {
                io::Error::other("the gzip thread stopped before the file was whole")
            }));
        }
        Ok(())
    }

    /// Compresses what is left, writes the gzip trailer and flushes the file: the
    /// first error of any write is returned here if no write returned it before.
    pub fn finish(&mut self) -> io::Result<()> {
        self.hand_over()?;
        self.join()
    }

    /// Ends the thread's input and waits for it.
    fn join(&mut self) -> io::Result<()> {
        self.to_thread = None;
        match self.thread.take() {
            None => Ok(()),
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the gzip thread panicked"))),
        }
    }
}

/// The thread: each full buffer into the encoder, then the trailer and a flush.
fn compress(
    file: File,
    level: flate2::Compression,
    full: Receiver<Vec<u8>>,
    give_back: SyncSender<Vec<u8>>,
) -> io::Result<()> {
    let mut gz = flate2::write::GzEncoder::new(BufWriter::with_capacity(1 << 16, file), level);
    for mut buf in full {
        gz.write_all(&buf)?;
        buf.clear();
        // The caller takes buffers back only when it needs one: a full channel just
        // drops this one.
        let _ = give_back.try_send(buf);
    }
    gz.finish()?.flush()
}

impl Write for GzipThread {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let room = CHUNK_BYTES - self.filling.len();
            let (now, rest) = bytes.split_at(room.min(bytes.len()));
            self.filling.extend_from_slice(now);
            bytes = rest;
            if self.filling.len() == CHUNK_BYTES {
                self.hand_over()?;
            }
        }
        Ok(())
    }

    /// Hands what is buffered to the thread; it reaches the file as the thread
    /// compresses it (all of it by [`GzipThread::finish`]).
    fn flush(&mut self) -> io::Result<()> {
        self.hand_over()
    }
}

impl Drop for GzipThread {
    /// Unfinished (an error elsewhere): stops the thread; the caller removes the file.
    fn drop(&mut self) {
        let _ = self.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Text like a trace's: lines that repeat with changing numbers.
    fn text(lines: usize) -> Vec<u8> {
        let mut t = Vec::new();
        for i in 0..lines {
            writeln!(
                t,
                r#"{{"ph":"X","name":"kernel_{}","ts":{},"dur":{}}},"#,
                i % 7,
                i * 13,
                i % 101
            )
            .unwrap();
        }
        t
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("gpuprof-gzip-{name}-{}", std::process::id()))
    }

    fn written(path: &std::path::Path, pieces: &[&[u8]]) -> Vec<u8> {
        let mut gz =
            GzipThread::new(File::create(path).unwrap(), flate2::Compression::fast()).unwrap();
        for p in pieces {
            gz.write_all(p).unwrap();
        }
        gz.finish().unwrap();
        let bytes = std::fs::read(path).unwrap();
        std::fs::remove_file(path).unwrap();
        bytes
    }

    #[test]
    fn the_file_is_the_gzip_stream_of_what_was_written_in_any_pieces() {
        let t = text(200_000); // several chunks
        assert!(t.len() > 5 * CHUNK_BYTES, "{}", t.len());
        let mut one = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        one.write_all(&t).unwrap();
        let expected = one.finish().unwrap();
        let (a, b) = t.split_at(CHUNK_BYTES - 3);
        let (b, c) = b.split_at(2 * CHUNK_BYTES + 5);
        for pieces in [vec![&t[..]], vec![a, b, c], t.chunks(977).collect()] {
            let bytes = written(&scratch("pieces"), &pieces);
            assert_eq!(bytes, expected);
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&bytes[..])
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, t);
        }
    }

    #[test]
    fn nothing_written_is_an_empty_gzip_stream() {
        let bytes = written(&scratch("empty"), &[]);
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut back)
            .unwrap();
        assert!(back.is_empty());
    }

    #[test]
    fn a_write_error_on_the_thread_is_returned_not_lost() {
        // /dev/full takes every write with ENOSPC.
        let full = File::options().write(true).open("/dev/full").unwrap();
        let mut gz = GzipThread::new(full, flate2::Compression::fast()).unwrap();
        let t = text(400_000);
        let outcome = gz.write_all(&t).and_then(|()| gz.finish());
        let e = outcome.expect_err("a full device is an error");
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
    }
}
