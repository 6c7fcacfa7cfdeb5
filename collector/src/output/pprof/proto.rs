//! The part of pprof's profile format gpuprof writes: hand-declared messages with the
//! field numbers of pprof's `profile.proto` (package
//! `perftools.profiles`, proto3), encoded by `prost`. A profile file is one `Profile`
//! message, gzipped.
//!
//! Strings are indices into `Profile.string_table`, whose entry 0 must be "". Ids of
//! functions and locations start at 1 (0 means none). A sample's `location_id`s are
//! leaf first. Repeated scalars are packed, proto3's default, which pprof's decoder
//! (and every other proto3 decoder) reads.

/// `perftools.profiles.Profile`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Wall-clock start of the profile, ns since the Unix epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// Its length, ns.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// String indices.
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The `type` (string index) of the sample type shown by default.
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// `perftools.profiles.ValueType`: what a sample value counts, in what unit.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `perftools.profiles.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// Leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One per `Profile.sample_type`, in that order.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// `perftools.profiles.Label`: `str` or `num` (with `num_unit`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// `perftools.profiles.Location`: here one frame, no mapping, no address.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// `perftools.profiles.Line`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
}

/// `perftools.profiles.Function`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The name shown (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// The name as the system knows it: here the full demangled name.
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
}
