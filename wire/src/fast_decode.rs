//! The batch decoder's fast path: the records that make up almost every batch
//! (`Kernel`, `Launch`) read straight from their MessagePack bytes, the rest through
//! rmp-serde.
//!
//! rmp-serde's generic path costs about 80 ns a record (a visitor per value, an
//! any-number parse per field), a fifth of the collector's time per record. The
//! writer's positional form of these two records is fixed (`crate` documentation):
//! a one-entry map (`0x81`), the variant's index as a positive fixint, a fixarray of
//! the fields in declaration order, each integer in the smallest form `rmp` writes.
//!
//! What this path accepts it decodes to exactly what rmp-serde would: anything it does
//! not expect (another marker for a field, another length, a value out of range) makes
//! it hand that record to rmp-serde, and any error anywhere makes [`decode`] give up,
//! so that [`crate::decode_batch`] decodes the whole batch again through rmp-serde and
//! reports its error, word for word. The property test in `tests/it/fast_decode.rs`
//! holds the two paths to each other on generated and damaged batches.

use crate::record::{Kernel, Launch, Record};

/// The variant indices of the records read here ([`crate::Indexed`]).
const KERNEL: u8 = 4;
const LAUNCH: u8 = 8;

/// The records of batch `body` (without its checksum), or `None` when anything in it
/// is not what a writer of this version makes or does not decode.
pub(crate) fn decode(body: &[u8]) -> Option<Vec<Record>> {
    let mut at = Cursor { buf: body, pos: 0 };
    let n = at.array_len()?;
    // Every record takes at least three bytes: a count beyond that is damage, never
    // an allocation.
    if n > body.len() / 3 {
        return None;
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let start = at.pos;
        match hot_record(&mut at) {
            Some(r) => out.push(r),
            None => {
                at.pos = start;
                let mut rest = &body[start..];
                let r: Record =
                    serde::Deserialize::deserialize(&mut rmp_serde::Deserializer::new(&mut rest))
                        .ok()?;
                at.pos = body.len() - rest.len();
                out.push(r);
            }
        }
    }
    (at.pos == body.len()).then_some(out)
}

/// A `Kernel` or `Launch` in the writer's form at the cursor, which it then passes;
/// `None` for anything else (the cursor is then anywhere).
fn hot_record(at: &mut Cursor) -> Option<Record> {
    if at.byte()? != 0x81 {
        return None;
    }
    match at.byte()? {
        KERNEL => {
            at.fixarray(14)?;
            Some(Record::Kernel(Kernel {
                device_id: at.uint(u32::MAX.into())? as u32,
                context_id: at.uint(u32::MAX.into())? as u32,
                stream_id: at.uint(u32::MAX.into())? as u32,
                correlation_id: at.uint(u32::MAX.into())? as u32,
                start_ns: at.uint(u64::MAX)?,
                end_ns: at.uint(u64::MAX)?,
                name: at.uint(u32::MAX.into())? as u32,
                grid: at.i32s()?,
                block: at.i32s()?,
                registers_per_thread: at.uint(u16::MAX.into())? as u16,
                static_shared_memory: at.i32()?,
                dynamic_shared_memory: at.i32()?,
                graph_id: at.uint(u32::MAX.into())? as u32,
                graph_node_id: at.uint(u64::MAX)?,
            }))
        }
        LAUNCH => {
            at.fixarray(6)?;
            Some(Record::Launch(Launch {
                correlation_id: at.uint(u32::MAX.into())? as u32,
                cbid: at.uint(u32::MAX.into())? as u32,
                runtime: at.bool()?,
                thread_id: at.uint(u64::MAX)?,
                start_ns: at.uint(u64::MAX)?,
                end_ns: at.uint(u64::MAX)?,
            }))
        }
        _ => None,
    }
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn bytes<const N: usize>(&mut self) -> Option<[u8; N]> {
        let b = self.buf.get(self.pos..self.pos + N)?.try_into().ok()?;
        self.pos += N;
        Some(b)
    }

    /// An array header of any size.
    fn array_len(&mut self) -> Option<usize> {
        match self.byte()? {
            b @ 0x90..=0x9f => Some(usize::from(b & 0x0f)),
            0xdc => Some(usize::from(u16::from_be_bytes(self.bytes()?))),
            0xdd => usize::try_from(u32::from_be_bytes(self.bytes()?)).ok(),
            _ => None,
        }
    }

    /// A fixarray of exactly `n` elements.
    fn fixarray(&mut self, n: u8) -> Option<()> {
        (self.byte()? == 0x90 | n).then_some(())
    }

    /// An unsigned integer (positive fixint, uint 8/16/32/64) of at most `max`.
    fn uint(&mut self, max: u64) -> Option<u64> {
        let v = match self.byte()? {
            b @ 0x00..=0x7f => u64::from(b),
            0xcc => u64::from(self.byte()?),
            0xcd => u64::from(u16::from_be_bytes(self.bytes()?)),
            0xce => u64::from(u32::from_be_bytes(self.bytes()?)),
            0xcf => u64::from_be_bytes(self.bytes()?),
            _ => return None,
        };
        (v <= max).then_some(v)
    }

    /// An `i32`: what `rmp` writes for one (a non-negative value as unsigned, a
    /// negative one as negative fixint or int 8/16/32/64).
    fn i32(&mut self) -> Option<i32> {
        let v: i64 = match *self.buf.get(self.pos)? {
            0x00..=0x7f | 0xcc..=0xcf => {
                return i32::try_from(self.uint(i32::MAX as u64)?).ok();
            }
            b @ 0xe0..=0xff => {
                self.pos += 1;
                i64::from(b as i8)
            }
            0xd0 => {
                self.pos += 1;
                i64::from(self.byte()? as i8)
            }
            0xd1 => {
                self.pos += 1;
                i64::from(i16::from_be_bytes(self.bytes()?))
            }
            0xd2 => {
                self.pos += 1;
                i64::from(i32::from_be_bytes(self.bytes()?))
            }
            0xd3 => {
                self.pos += 1;
                i64::from_be_bytes(self.bytes()?)
            }
            _ => return None,
        };
        i32::try_from(v).ok()
    }

    /// A `[i32; 3]`: a fixarray of three.
    fn i32s(&mut self) -> Option<[i32; 3]> {
        self.fixarray(3)?;
        Some([self.i32()?, self.i32()?, self.i32()?])
    }

    fn bool(&mut self) -> Option<bool> {
        match self.byte()? {
            0xc2 => Some(false),
            0xc3 => Some(true),
            _ => None,
        }
    }
}
