//! What `gpuprof --version` and `gpuprof doctor` print.

/// The protocol version as a literal, checked against the wire crate at compile time.
macro_rules! protocol_version {
    () => {
        "10"
    };
}
const _: () = assert!(
    wire::PROTOCOL_VERSION == 10,
    "update protocol_version!() in collector/src/cli/version.rs"
);

/// `<version> (record protocol <n>)`.
pub const LINE: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (record protocol ",
    protocol_version!(),
    ")"
);
