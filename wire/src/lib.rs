//! What crosses the process boundary between the injected library and the collector:
//! the record schema and the shared-memory ring (see docs/ARCHITECTURE.md).
//!
//! Bump [`PROTOCOL_VERSION`] on every change to either; both sides refuse a peer
//! speaking another version.

/// Version of the record schema and ring layout.
pub const PROTOCOL_VERSION: u32 = 1;
