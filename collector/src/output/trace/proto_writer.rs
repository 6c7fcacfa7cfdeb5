//! The two packets of every slice written by hand: the bytes `prost` writes for the
//! same `TracePacket`s ([`super::proto`]), without building the messages.
//!
//! A trace has two packets per kernel, launch and range, so these are almost all of its
//! bytes. Building each as `prost` messages cost an allocation per argument and per
//! list, and `prost` computes every nested message's length once per level above it.
//! Here a nested message is written into a scratch buffer and copied after its
//! length. The fields are written as `prost` writes them: in field-number order,
//! optional scalars whenever set (zero included), repeated scalars unpacked (the
//! protos are proto2), varints for integers (a negative `int32`/`int64` as the ten
//! bytes of its two's complement), little-endian fixed64 and double. The test in
//! `perfetto.rs` holds the bytes to `prost`'s for slices of every kind of argument.

use super::event::{Arg, Value};
use super::proto::SEQUENCE_ID;

/// Wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, u64::from(field << 3 | wire));
}

fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, VARINT);
    varint(out, v);
}

/// An `int32` or `int64` field: negative values sign-extended to 64 bits.
fn int(out: &mut Vec<u8>, field: u32, v: i64) {
    uint(out, field, v as u64);
}

fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
    key(out, field, FIXED64);
    out.extend_from_slice(&v.to_le_bytes());
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Scratch buffers, kept between slices so that writing one allocates nothing.
#[derive(Default)]
pub struct Scratch {
    event: Vec<u8>,
    annotation: Vec<u8>,
    element: Vec<u8>,
    packet: Vec<u8>,
}

/// What a slice's begin packet holds besides its arguments.
pub struct Begin<'a> {
    pub timestamp: u64,
    pub category_iid: u64,
    pub name_iid: u64,
    pub track: u64,
    pub flow_out: Option<u64>,
    /// `InternedData` already encoded, when the packet interns anything.
    pub interned: Option<&'a [u8]>,
    pub sequence_flags: u32,
}

/// Appends `Trace.packet` (field 1) holding the `TYPE_SLICE_BEGIN` packet of `b`,
/// with `args` as debug annotations whose names are interned as `arg_iids` (one per
/// argument, in order).
pub fn begin_packet(out: &mut Vec<u8>, s: &mut Scratch, b: &Begin, args: &[Arg], arg_iids: &[u64]) {
    s.event.clear();
    uint(&mut s.event, 3, b.category_iid);
    for (a, &iid) in args.iter().zip(arg_iids) {
        s.annotation.clear();
        annotation(&mut s.annotation, &mut s.element, iid, &a.value);
        bytes(&mut s.event, 4, &s.annotation);
    }
    int(&mut s.event, 9, i64::from(super::proto::TYPE_SLICE_BEGIN));
    uint(&mut s.event, 10, b.name_iid);
    uint(&mut s.event, 11, b.track);
    if let Some(f) = b.flow_out {
        fixed64(&mut s.event, 47, f);
    }
    s.packet.clear();
    uint(&mut s.packet, 8, b.timestamp);
    uint(&mut s.packet, 10, u64::from(SEQUENCE_ID));
    bytes(&mut s.packet, 11, &s.event);
    if let Some(i) = b.interned {
        bytes(&mut s.packet, 12, i);
    }
    uint(&mut s.packet, 13, u64::from(b.sequence_flags));
    bytes(out, 1, &s.packet);
}

/// Appends `Trace.packet` holding the `TYPE_SLICE_END` packet of a slice on `track`
/// ending at `timestamp`, with its flow ids.
pub fn end_packet(
    out: &mut Vec<u8>,
    s: &mut Scratch,
    timestamp: u64,
    track: u64,
    flow_ids: Option<u64>,
    terminating_flow_ids: Option<u64>,
) {
    s.event.clear();
    int(&mut s.event, 9, i64::from(super::proto::TYPE_SLICE_END));
    uint(&mut s.event, 11, track);
    if let Some(f) = flow_ids {
        fixed64(&mut s.event, 47, f);
    }
    if let Some(f) = terminating_flow_ids {
        fixed64(&mut s.event, 48, f);
    }
    s.packet.clear();
    uint(&mut s.packet, 8, timestamp);
    uint(&mut s.packet, 10, u64::from(SEQUENCE_ID));
    bytes(&mut s.packet, 11, &s.event);
    uint(
        &mut s.packet,
        13,
        u64::from(super::proto::SEQ_NEEDS_INCREMENTAL_STATE),
    );
    bytes(out, 1, &s.packet);
}

/// A `DebugAnnotation` (without its key and length) named `name_iid`.
fn annotation(out: &mut Vec<u8>, element: &mut Vec<u8>, name_iid: u64, value: &Value) {
    uint(out, 1, name_iid);
    match *value {
        Value::Bool(v) => uint(out, 2, u64::from(v)),
        Value::U64(v) => uint(out, 3, v),
        Value::I64(v) => int(out, 4, v),
        Value::F64(v) => {
            key(out, 5, FIXED64);
            out.extend_from_slice(&v.to_le_bytes());
        }
        Value::Str(v) => bytes(out, 6, v.as_bytes()),
        Value::Dim(d) => {
            for v in d {
                element.clear();
                int(element, 4, i64::from(v));
                bytes(out, 12, element);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::output::trace::proto::{
        DebugAnnotation, InternedData, InternedName, TracePacket, TrackEvent,
        SEQ_NEEDS_INCREMENTAL_STATE, TYPE_SLICE_BEGIN, TYPE_SLICE_END,
    };

    /// `packet` as `Trace.packet`, encoded by prost.
    fn by_prost(packet: &TracePacket) -> Vec<u8> {
        let mut out = vec![0x0a];
        packet.encode_length_delimited(&mut out).unwrap();
        out
    }

    fn packet(timestamp: u64, event: TrackEvent) -> TracePacket {
        TracePacket {
            timestamp: Some(timestamp),
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            track_event: Some(event),
            sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
            ..TracePacket::default()
        }
    }

    /// What prost writes for an argument named `iid` of value `v`.
    fn prost_annotation(iid: u64, v: &Value) -> DebugAnnotation {
        let mut a = DebugAnnotation {
            name_iid: Some(iid),
            ..DebugAnnotation::default()
        };
        match *v {
            Value::U64(v) => a.uint_value = Some(v),
            Value::I64(v) => a.int_value = Some(v),
            Value::F64(v) => a.double_value = Some(v),
            Value::Bool(v) => a.bool_value = Some(v),
            Value::Str(v) => a.string_value = Some(v.to_string()),
            Value::Dim(d) => {
                a.array_values = d
                    .iter()
                    .map(|&v| DebugAnnotation {
                        int_value: Some(v.into()),
                        ..DebugAnnotation::default()
                    })
                    .collect()
            }
        }
        a
    }

    #[test]
    fn slices_are_written_as_prost_writes_them() {
        let args = [
            Arg {
                name: "a",
                value: Value::U64(0),
            },
            Arg {
                name: "b",
                value: Value::U64(u64::MAX),
            },
            Arg {
                name: "c",
                value: Value::I64(-1),
            },
            Arg {
                name: "d",
                value: Value::I64(i64::MIN),
            },
            Arg {
                name: "e",
                value: Value::F64(-0.5),
            },
            Arg {
                name: "f",
                value: Value::Bool(false),
            },
            Arg {
                name: "g",
                value: Value::Bool(true),
            },
            Arg {
                name: "h",
                value: Value::Str("ampere_bf16 ü"),
            },
            Arg {
                name: "i",
                value: Value::Str(""),
            },
            Arg {
                name: "j",
                value: Value::Dim([132, -1, 0]),
            },
        ];
        let iids: Vec<u64> = (0..args.len() as u64).map(|i| 1 + i * 300).collect();
        let interned_data = InternedData {
            event_names: vec![InternedName {
                iid: Some(5),
                name: Some("gemm".into()),
            }],
            ..InternedData::default()
        };
        let interned_bytes = interned_data.encode_to_vec();
        let mut s = Scratch::default();
        for (flow_out, interned, flags, n) in [
            (None, None, 2, 0),
            (Some(0), Some(&interned_bytes[..]), 3, 1),
            (Some(u64::MAX), None, 2, args.len()),
        ] {
            let b = Begin {
                timestamp: 1_763_700_000_123_456_789,
                category_iid: 1,
                name_iid: 200,
                track: u64::MAX - 7,
                flow_out,
                interned,
                sequence_flags: flags,
            };
            let mut got = Vec::new();
            begin_packet(&mut got, &mut s, &b, &args[..n], &iids[..n]);
            let want = TracePacket {
                interned_data: interned.map(|_| interned_data.clone()),
                sequence_flags: Some(flags),
                ..packet(
                    b.timestamp,
                    TrackEvent {
                        category_iids: vec![1],
                        debug_annotations: args[..n]
                            .iter()
                            .zip(&iids)
                            .map(|(a, &i)| prost_annotation(i, &a.value))
                            .collect(),
                        r#type: Some(TYPE_SLICE_BEGIN),
                        name_iid: Some(200),
                        track_uuid: Some(b.track),
                        flow_ids: flow_out.into_iter().collect(),
                        terminating_flow_ids: Vec::new(),
                    },
                )
            };
            assert_eq!(got, by_prost(&want), "begin with {n} arguments");
        }
        for (flow, terminating) in [(None, None), (Some(9), None), (None, Some(u64::MAX))] {
            let mut got = Vec::new();
            end_packet(&mut got, &mut s, 42, 0, flow, terminating);
            let want = packet(
                42,
                TrackEvent {
                    r#type: Some(TYPE_SLICE_END),
                    track_uuid: Some(0),
                    flow_ids: flow.into_iter().collect(),
                    terminating_flow_ids: terminating.into_iter().collect(),
                    ..TrackEvent::default()
                },
            );
            assert_eq!(got, by_prost(&want), "end {flow:?} {terminating:?}");
        }
    }
}
