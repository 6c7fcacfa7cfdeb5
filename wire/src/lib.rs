//! What crosses the process boundary between the injected library and the collector:
//! - [`record`]: the record schema (raw facts; every derived number is computed by the
//!   collector);
//! - [`ring`]: the shared-memory ring one profiled process writes and the collector
//!   drains (single producer, single consumer);
//! - [`session_dir`]: the ring directory both sides share (names, the collector's pid
//!   file, where it is made) and the size syntax of the ring-size settings;
//! - [`sigbus`]: surviving a ring file truncated under its mapping;
//! - [`env`]: the names of the environment variables one side sets for the other.
//!
//! Bump [`PROTOCOL_VERSION`] on every change to the ring layout or the record schema.
//! Records are MessagePack with field names, so a reader accepts files from older
//! writers (new fields are `#[serde(default)]`).

pub mod env;
pub mod record;
pub mod ring;
pub mod session_dir;
pub mod sigbus;
#[cfg(feature = "testing")]
pub mod testing;

pub use record::*;

/// Version of the record schema and ring layout.
pub const PROTOCOL_VERSION: u32 = 4;

/// Encodes a batch of records as one MessagePack frame payload.
pub fn encode_batch(records: &[Record]) -> Result<Vec<u8>, rmp_serde::encode::Error> {
    rmp_serde::to_vec_named(records)
}

/// Decodes one frame payload. Bytes after the batch are an error: a frame is exactly
/// one batch, and anything else means its length is wrong.
pub fn decode_batch(bytes: &[u8]) -> Result<Vec<Record>, rmp_serde::decode::Error> {
    // Reading from a `&[u8]` advances it: what is left is what the batch did not use.
    let mut de = rmp_serde::Deserializer::new(bytes);
    let records = <Vec<Record> as serde::Deserialize>::deserialize(&mut de)?;
    let rest = de.get_ref().len();
    if rest != 0 {
        return Err(rmp_serde::decode::Error::Syntax(format!(
            "{rest} bytes after the batch"
        )));
    }
    Ok(records)
}
