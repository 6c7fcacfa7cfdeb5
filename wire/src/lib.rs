//! What crosses the process boundary between the injected library and the collector:
//! - [`record`]: the record schema (raw facts; every derived number is computed by the
//!   collector);
//! - [`ring`]: the shared-memory ring one profiled process writes and the collector
//!   drains (single producer, single consumer);
//! - [`session_dir`]: the ring directory both sides share (names, the collector's pid
//!   file, where it is made) and the size syntax of the ring-size settings;
//! - [`sigbus`]: surviving a ring file truncated under its mapping;
//! - [`capture`]: the capture window's settings, one parser for both sides;
//! - [`env`]: the names of the environment variables one side sets for the other.
//!
//! Bump [`PROTOCOL_VERSION`] on every change to the ring layout or the record schema.
//!
//! **Encoding.** A frame payload is one MessagePack array of records in rmp-serde's
//! positional form: each record is a one-entry map from its variant's index in
//! [`Record`] (a fixint, one byte) to its struct as an array of field values
//! in declaration order, with no field names (unit enums inside records, such as
//! [`DropSource`], keep their names: they are rare). A `Kernel` record is 1 + 1 + 1
//! bytes of framing plus its values.
//!
//! Positional records carry no names, so a reader can no longer tell an older or newer
//! writer's fields apart: a field added, removed or reordered changes what every later
//! position means. What guards that is the version check, not the encoding: the ring
//! header holds [`PROTOCOL_VERSION`] and a reader opens only a ring of its own version
//! (`ring::RingError::Protocol`); the collector decodes every frame into the
//! session's own tables, so no positional record outlives the ring. Within that, the rules still give errors rather than wrong values: a
//! struct with more values than the reader has fields, or fewer without a
//! `#[serde(default)]` for the missing ones, is an error; an unknown variant index is
//! an error. Variants and fields are therefore only ever appended, never reordered.
//! Records written with field names (protocol 4 and older) still decode: rmp-serde
//! reads a struct from a map as well as from an array, and a variant from its name as
//! well as its index.

pub mod capture;
pub mod env;
mod fast_decode;
pub mod record;
pub mod ring;
pub mod session_dir;
pub mod sigbus;
#[cfg(feature = "testing")]
pub mod testing;
pub mod user;

pub use record::*;

/// Version of the record schema and ring layout. 8: a batch ends with its CRC-32C;
/// 9: [`Record::ApiCall`], [`Record::ApiTally`]; 10: [`Record::GemmCall`].
pub const PROTOCOL_VERSION: u32 = 10;

/// Encodes a batch of records as one frame payload (see the module documentation).
pub fn encode_batch(records: &[Record]) -> Result<Vec<u8>, rmp_serde::encode::Error> {
    let mut out = Vec::new();
    encode_batch_into(&mut out, records)?;
    Ok(out)
}

/// Encodes a batch of records as one frame payload into `out`, which is cleared
/// first. Its capacity is kept: a writer that reuses one buffer allocates only when a
/// frame is larger than any before it.
pub fn encode_batch_into(
    out: &mut Vec<u8>,
    records: &[Record],
) -> Result<(), rmp_serde::encode::Error> {
    out.clear();
    serde::Serialize::serialize(&Batch(records), &mut rmp_serde::Serializer::new(&mut *out))?;
    let crc = crc32c::crc32c(out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// Decodes one frame payload: the batch, then the CRC-32C of its bytes (little
/// endian), so that a bit flipped in shared memory is a frame that does not decode,
/// never a record with another value. Bytes after the batch are an error: a frame is
/// exactly one batch, and anything else means its length is wrong.
pub fn decode_batch(bytes: &[u8]) -> Result<Vec<Record>, rmp_serde::decode::Error> {
    decode_checked(bytes, true)
}

/// [`decode_batch`] through rmp-serde alone, without the fast path for the common
/// records (`fast_decode.rs`): what the fast path is tested against.
#[doc(hidden)]
pub fn decode_batch_with_serde(bytes: &[u8]) -> Result<Vec<Record>, rmp_serde::decode::Error> {
    decode_checked(bytes, false)
}

fn decode_checked(bytes: &[u8], fast: bool) -> Result<Vec<Record>, rmp_serde::decode::Error> {
    let syntax = |what: String| rmp_serde::decode::Error::Syntax(what);
    let Some((body, sum)) = bytes.split_last_chunk::<4>() else {
        return Err(syntax(format!(
            "{} bytes: a batch ends with its 4-byte checksum",
            bytes.len()
        )));
    };
    let (stored, computed) = (u32::from_le_bytes(*sum), crc32c::crc32c(body));
    if stored != computed {
        return Err(syntax(format!(
            "checksum mismatch (stored {stored:08x}, computed {computed:08x}): the frame was damaged"
        )));
    }
    if let Some(records) = fast.then(|| fast_decode::decode(body)).flatten() {
        return Ok(records);
    }
    // Reading from a `&[u8]` advances it: what is left is what the batch did not use.
    let mut de = rmp_serde::Deserializer::new(body);
    let records = <Vec<Record> as serde::Deserialize>::deserialize(&mut de)?;
    let rest = de.get_ref().len();
    if rest != 0 {
        return Err(rmp_serde::decode::Error::Syntax(format!(
            "{rest} bytes after the batch"
        )));
    }
    Ok(records)
}

/// A batch as it goes on the wire: an array of [`Indexed`] records.
struct Batch<'a>(&'a [Record]);

impl serde::Serialize for Batch<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for r in self.0 {
            seq.serialize_element(&Indexed(r))?;
        }
        seq.end()
    }
}

/// A record tagged by its variant's index instead of its name: `{index: fields}`.
/// rmp-serde always writes a variant's name; its reader, like serde's derived
/// `Deserialize`, takes the index as well (`decode_batch` needs nothing else).
struct Indexed<'a>(&'a Record);

impl serde::Serialize for Indexed<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        // The index serde's derive gives each variant: its position in `Record`. The
        // round-trip test of every variant holds this list to the enum.
        match self.0 {
            Record::Process(r) => map.serialize_entry(&0u8, r)?,
            Record::Device(r) => map.serialize_entry(&1u8, r)?,
            Record::Context(r) => map.serialize_entry(&2u8, r)?,
            Record::String(r) => map.serialize_entry(&3u8, r)?,
            Record::Kernel(r) => map.serialize_entry(&4u8, r)?,
            Record::Memcpy(r) => map.serialize_entry(&5u8, r)?,
            Record::Memset(r) => map.serialize_entry(&6u8, r)?,
            Record::Marker(r) => map.serialize_entry(&7u8, r)?,
            Record::Launch(r) => map.serialize_entry(&8u8, r)?,
            Record::Overhead(r) => map.serialize_entry(&9u8, r)?,
            Record::KernelCounters(r) => map.serialize_entry(&10u8, r)?,
            Record::CounterSample(r) => map.serialize_entry(&11u8, r)?,
            Record::CounterPlan(r) => map.serialize_entry(&12u8, r)?,
            Record::CounterStatus(r) => map.serialize_entry(&13u8, r)?,
            Record::Gemm(r) => map.serialize_entry(&14u8, r)?,
            Record::GraphNode(r) => map.serialize_entry(&15u8, r)?,
            Record::GraphNodeCloned(r) => map.serialize_entry(&16u8, r)?,
            Record::GemmStatus(r) => map.serialize_entry(&17u8, r)?,
            Record::Dropped(r) => map.serialize_entry(&18u8, r)?,
            Record::End(r) => map.serialize_entry(&19u8, r)?,
            Record::Capture(r) => map.serialize_entry(&20u8, r)?,
            Record::ApiCall(r) => map.serialize_entry(&21u8, r)?,
            Record::ApiTally(r) => map.serialize_entry(&22u8, r)?,
            Record::GemmCall(r) => map.serialize_entry(&23u8, r)?,
        }
        map.end()
    }
}
