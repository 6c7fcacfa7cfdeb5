//! Frame payloads: MessagePack batches in positional form (variant index, field
//! values in order, no names); what a reader does with records of another schema.

use std::fmt;

use crate::common::all_records;

/// `body` (a batch's bytes) with the CRC-32C a batch ends with.
fn framed(body: &[u8]) -> Vec<u8> {
    [body, &crc32c::crc32c(body).to_le_bytes()].concat()
}

/// A batch's bytes without its checksum.
fn body(batch: &[u8]) -> &[u8] {
    &batch[..batch.len() - 4]
}
use gpuprof_wire::*;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

/// Every variant: `all_records` and one of each kind it leaves out.
fn every_variant() -> Vec<Record> {
    let mut all = all_records();
    all.extend([
        Record::KernelCounters(KernelCounters {
            correlation_id: 99_999,
            group: 2,
            metrics: vec![
                MetricValue {
                    name: 8,
                    value: 4.5e9,
                },
                MetricValue {
                    name: 9,
                    value: -0.25,
                },
            ],
            range: 7,
        }),
        Record::CounterSample(CounterSample {
            device_id: 3,
            start_ns: 80,
            end_ns: 90,
            metrics: vec![MetricValue {
                name: 10,
                value: f64::MAX,
            }],
        }),
        Record::CounterPlan(Box::new(CounterPlan {
            device_id: 3,
            chip: "GH100".into(),
            mode: "kernel".into(),
            groups: vec![vec![8, 9], vec![10]],
            policy: "the first 64 launches of each kernel".into(),
        })),
        Record::CounterStatus(CounterStatus {
            message: "counters off".into(),
        }),
        Record::Gemm(Gemm {
            correlation_id: 99_999,
            call: 3,
            launch_index: 1,
            api: 11,
            m: 4096,
            n: 1 << 33,
            k: 7,
            batch: 8,
            trans_a: 1,
            trans_b: 2,
            a_type: 14,
            b_type: 15,
            c_type: 0,
            d_type: 2,
            compute_type: 68,
        }),
        Record::GraphNode(GraphNode {
            node_id: 1 << 40,
            correlation_id: 5,
        }),
        Record::GraphNodeCloned(GraphNodeCloned {
            node_id: 1 << 41,
            original_node_id: 1 << 40,
        }),
        Record::GemmStatus(GemmStatus {
            message: "gemm off".into(),
        }),
        Record::Capture(Capture {
            range: "nvtx:decode".into(),
            delay_ns: 1_500_000_000,
            duration_ns: 2_000_000_000,
            windows: 3,
            launches: 40,
            captured_launches: 12,
        }),
        Record::ApiCall(ApiCall {
            correlation_id: 77,
            cbid: 131,
            runtime: false,
            name: 9,
            context_id: 3,
            thread_id: 1 << 35,
            start_ns: 1_700_000_000_000_000_000,
            end_ns: 1_700_000_000_000_004_000,
            bytes: 1 << 33,
            stream_id: NO_STREAM,
            event: 0x7f00_dead_beef,
            ok: true,
        }),
        Record::ApiTally(ApiTally {
            thread_id: 1 << 36,
            cbid: 9,
            runtime: false,
            name: 11,
            calls: 1 << 40,
            total_ns: u64::MAX,
        }),
        Record::GemmCall(GemmCall {
            call: 1 << 50,
            thread_id: 1 << 33,
            start_ns: 1_700_000_000_000_000_000,
            end_ns: u64::MAX,
        }),
    ]);
    all
}

/// The variant's position in `Record`: what the wire carries as its tag.
fn index_of(r: &Record) -> u8 {
    match r {
        Record::Process(_) => 0,
        Record::Device(_) => 1,
        Record::Context(_) => 2,
        Record::String(_) => 3,
        Record::Kernel(_) => 4,
        Record::Memcpy(_) => 5,
        Record::Memset(_) => 6,
        Record::Marker(_) => 7,
        Record::Launch(_) => 8,
        Record::Overhead(_) => 9,
        Record::KernelCounters(_) => 10,
        Record::CounterSample(_) => 11,
        Record::CounterPlan(_) => 12,
        Record::CounterStatus(_) => 13,
        Record::Gemm(_) => 14,
        Record::GraphNode(_) => 15,
        Record::GraphNodeCloned(_) => 16,
        Record::GemmStatus(_) => 17,
        Record::Dropped(_) => 18,
        Record::End(_) => 19,
        Record::Capture(_) => 20,
        Record::ApiCall(_) => 21,
        Record::ApiTally(_) => 22,
        Record::GemmCall(_) => 23,
    }
}

#[test]
fn every_variant_round_trips() {
    let all = every_variant();
    let mut indices: Vec<u8> = all.iter().map(index_of).collect();
    indices.sort();
    indices.dedup();
    assert_eq!(indices, (0..24).collect::<Vec<u8>>(), "one of each variant");
    for record in &all {
        let bytes = encode_batch(std::slice::from_ref(record)).unwrap();
        assert_eq!(decode_batch(&bytes).unwrap(), vec![record.clone()]);
    }
    assert_eq!(decode_batch(&encode_batch(&all).unwrap()).unwrap(), all);
    assert_eq!(
        encode_batch(&[]).unwrap(),
        framed(&[0x90]),
        "an empty batch is an empty array, and its checksum"
    );
    assert_eq!(decode_batch(&framed(&[0x90])).unwrap(), vec![]);
}

#[test]
fn encoding_into_a_buffer_clears_it_and_keeps_its_capacity() {
    let all = every_variant();
    let mut buf = vec![0xaa; 10];
    encode_batch_into(&mut buf, &all).unwrap();
    assert_eq!(buf, encode_batch(&all).unwrap());
    let capacity = buf.capacity();
    let ptr = buf.as_ptr();
    encode_batch_into(&mut buf, &all[..1]).unwrap();
    assert_eq!(buf, encode_batch(&all[..1]).unwrap());
    encode_batch_into(&mut buf, &all).unwrap();
    assert_eq!(buf, encode_batch(&all).unwrap());
    assert_eq!(
        (buf.capacity(), buf.as_ptr()),
        (capacity, ptr),
        "no new allocation for frames no larger than before"
    );
}

/// MessagePack, decoded without a schema.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Nil,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Bin(Vec<u8>),
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any MessagePack value")
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Nil)
            }
            fn visit_none<E>(self) -> Result<Value, E> {
                Ok(Value::Nil)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
                Ok(Value::Int(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
                Ok(Value::Int(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
                Ok(Value::Float(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
                Ok(Value::Str(v.into()))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
                Ok(Value::Bin(v.into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(Value::Array(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
                let mut out = Vec::new();
                while let Some(kv) = map.next_entry()? {
                    out.push(kv);
                }
                Ok(Value::Map(out))
            }
        }
        d.deserialize_any(V)
    }
}

fn s(v: &str) -> Value {
    Value::Str(v.into())
}

fn int(v: i128) -> Value {
    Value::Int(v)
}

#[test]
fn the_encoding_is_positional_messagepack() {
    let all = every_variant();
    let batch = encode_batch(&all).unwrap();
    let bytes = body(&batch);
    let Value::Array(items) = rmp_serde::from_slice::<Value>(bytes).unwrap() else {
        panic!("not an array")
    };
    assert_eq!(items.len(), all.len());
    for (item, record) in items.iter().zip(&all) {
        // { index: [value, ...] }: the variant's index, its fields in order.
        let Value::Map(m) = item else {
            panic!("{item:?} is not a map")
        };
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0, int(index_of(record).into()));
        assert!(matches!(m[0].1, Value::Array(_)), "{record:?}");
    }
    let Value::Map(kernel) = &items[4] else {
        unreachable!()
    };
    assert_eq!(
        kernel[0].1,
        Value::Array(vec![
            int(3),
            int(17),
            int(7),
            int(99_999),
            int((u64::MAX - 1).into()),
            int(u64::MAX.into()),
            int(5),
            Value::Array(vec![int(132), int(1), int(-1)]),
            Value::Array(vec![int(256), int(2), int(1)]),
            int(255),
            int(49_152),
            int(-1),
            int(12),
            int(0xdead_beef_0000_0001),
        ])
    );
    // Unit enums inside a record keep their names.
    let Value::Map(dropped) = &items[11] else {
        unreachable!()
    };
    assert_eq!(dropped[0].1, Value::Array(vec![s("Channel"), int(2)]));
    // No names in the bytes, but for the strings the records hold.
    let has = |name: &[u8]| bytes.windows(name.len()).any(|w| w == name);
    assert!(!has(b"correlation_id"));
    assert!(!has(b"Kernel"));
    assert!(has(b"\xa5GH100"));
}

#[test]
fn the_bytes_of_small_records_are_exact() {
    // [ {19: [5]} ]
    assert_eq!(
        encode_batch(&[Record::End(End { records: 5 })]).unwrap(),
        framed(&[0x91, 0x81, 0x13, 0x91, 0x05])
    );
    // [ {15: [2^40 as uint64, 300 as uint16]}, {2: [1, 0]} ]
    assert_eq!(
        encode_batch(&[
            Record::GraphNode(GraphNode {
                node_id: 1 << 40,
                correlation_id: 300,
            }),
            Record::Context(ContextInfo {
                context_id: 1,
                device_id: 0,
            }),
        ])
        .unwrap(),
        framed(&[
            0x92, 0x81, 0x0f, 0x92, 0xcf, 0, 0, 1, 0, 0, 0, 0, 0, 0xcd, 0x01, 0x2c, 0x81, 0x02,
            0x92, 0x01, 0x00
        ])
    );
}

#[test]
fn a_kernel_record_takes_a_quarter_of_its_named_size() {
    let kernel = &all_records()[4..5];
    let positional = encode_batch(kernel).unwrap().len();
    let named = rmp_serde::to_vec_named(kernel).unwrap().len();
    // Batches of one record: 1 byte of array header each, and the positional one
    // its 4-byte checksum.
    assert_eq!((positional, named), (62, 229));
}

/// A record as protocol 4 wrote it: field names, the variant by name.
#[test]
fn records_written_with_names_still_decode() {
    let all = every_variant();
    let named = rmp_serde::to_vec_named(&all).unwrap();
    assert_eq!(decode_batch(&framed(&named)).unwrap(), all);
}

/// A newer writer's Kernel: every field of this one plus one it added at the end.
#[derive(Serialize)]
struct KernelV2 {
    device_id: u32,
    context_id: u32,
    stream_id: u32,
    correlation_id: u32,
    start_ns: u64,
    end_ns: u64,
    name: u32,
    grid: [i32; 3],
    block: [i32; 3],
    registers_per_thread: u16,
    static_shared_memory: i32,
    dynamic_shared_memory: i32,
    graph_id: u32,
    graph_node_id: u64,
    cluster: [u32; 3],
}

#[test]
fn a_field_this_reader_does_not_know_is_an_error_not_a_misread() {
    let Record::Kernel(k) = all_records()[4].clone() else {
        unreachable!()
    };
    let newer = KernelV2 {
        device_id: k.device_id,
        context_id: k.context_id,
        stream_id: k.stream_id,
        correlation_id: k.correlation_id,
        start_ns: k.start_ns,
        end_ns: k.end_ns,
        name: k.name,
        grid: k.grid,
        block: k.block,
        registers_per_thread: k.registers_per_thread,
        static_shared_memory: k.static_shared_memory,
        dynamic_shared_memory: k.dynamic_shared_memory,
        graph_id: k.graph_id,
        graph_node_id: k.graph_node_id,
        cluster: [2, 1, 1],
    };
    let bytes = rmp_serde::to_vec(&vec![std::collections::BTreeMap::from([(4u8, newer)])]).unwrap();
    let err = decode_batch(&framed(&bytes)).unwrap_err();
    assert!(
        matches!(err, rmp_serde::decode::Error::LengthMismatch(14)),
        "{err:?}"
    );
}

/// A newer reader's End: a field this writer does not send, with a default.
#[derive(Debug, PartialEq, Deserialize)]
struct EndV2 {
    records: u64,
    #[serde(default)]
    clean_exit: bool,
}

#[test]
fn a_newer_reader_defaults_fields_this_writer_lacks() {
    let bytes = rmp_serde::to_vec(&End { records: 5 }).unwrap();
    assert_eq!(bytes, [0x91, 0x05]);
    assert_eq!(
        rmp_serde::from_slice::<EndV2>(&bytes).unwrap(),
        EndV2 {
            records: 5,
            clean_exit: false
        }
    );
}

#[test]
fn a_missing_field_or_an_unknown_variant_is_an_error() {
    // End without its one value.
    assert!(decode_batch(&framed(&[0x91, 0x81, 0x13, 0x90])).is_err());
    // Variant index 24: past the last variant.
    let err = decode_batch(&framed(&[0x91, 0x81, 0x18, 0x91, 0x05])).unwrap_err();
    assert!(
        err.to_string().contains("variant index 0 <= i < 24"),
        "{err}"
    );
    // A negative index, a name no variant has, a map of two variants.
    assert!(decode_batch(&framed(&[0x91, 0x81, 0xff, 0x91, 0x05])).is_err());
    assert!(decode_batch(&framed(b"\x91\x81\xa3Endx\x91\x05")).is_err());
    assert!(decode_batch(&framed(&[0x91, 0x82, 0x13, 0x91, 0x05, 0x13, 0x91, 0x05])).is_err());
    #[derive(Serialize)]
    enum Old {
        End {},
        Gemm { m: u32 },
    }
    assert!(decode_batch(&framed(
        &rmp_serde::to_vec_named(&vec![Old::End {}]).unwrap()
    ))
    .is_err());
    assert!(decode_batch(&framed(
        &rmp_serde::to_vec_named(&vec![Old::Gemm { m: 1 }]).unwrap()
    ))
    .is_err());
}

/// Regression: bytes after the batch were ignored, so a frame whose length was too
/// long (e.g. two frames run together) lost the second one without an error.
#[test]
fn bytes_after_the_batch_are_an_error() {
    let one = encode_batch(&all_records()[..1]).unwrap();
    let two = encode_batch(&all_records()[1..2]).unwrap();
    // Two batches run together fail their checksum; with one checksum over both, the
    // bytes after the first batch are the error.
    let run_together = [one.clone(), two.clone()].concat();
    let err = decode_batch(&run_together).unwrap_err();
    assert!(err.to_string().contains("checksum mismatch"), "{err}");
    let err = decode_batch(&framed(&[body(&one), body(&two)].concat())).unwrap_err();
    assert!(err.to_string().contains("bytes after the batch"), "{err}");
    assert!(decode_batch(&framed(&[body(&one), &[0]].concat())).is_err());
    assert_eq!(decode_batch(&one).unwrap(), all_records()[..1]);
}

/// A bit flipped anywhere in a batch (its records or its checksum) is an error
/// naming the checksum, never a record with another value.
#[test]
fn a_flipped_bit_is_a_checksum_error_not_another_value() {
    let batch = encode_batch(&all_records()).unwrap();
    for bit in 0..batch.len() * 8 {
        let mut b = batch.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        let err = decode_batch(&b).unwrap_err();
        assert!(
            err.to_string().starts_with("checksum mismatch (stored "),
            "bit {bit}: {err}"
        );
    }
    assert!(decode_batch(&batch[..3])
        .unwrap_err()
        .to_string()
        .ends_with("a batch ends with its 4-byte checksum"));
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    for bytes in [
        &b""[..],
        b"\xc1",
        b"\x91",
        b"\xdd\xff\xff\xff\xff",             // an array claiming 4 G elements
        b"\x91\x81\xa6String\x82\xa2id\x01", // a map cut short
        b"\x91\x81\xa6String\x82\xa2id\x01\xa4text\xdb\xff\xff\xff\xff", // a string claiming 4 GiB
        &[0x91; 5000],                       // nested beyond the depth limit
    ] {
        assert!(decode_batch(bytes).is_err(), "{bytes:?}");
    }
}

#[test]
fn a_record_is_the_size_of_a_kernel_not_of_the_rare_large_records() {
    // Records are moved in bulk (decoded batches, the analysis's chunks): the two
    // large rare ones are boxed so that the common ones set the size.
    assert_eq!(std::mem::size_of::<gpuprof_wire::Record>(), 96);
    assert!(std::mem::size_of::<gpuprof_wire::Kernel>() < 96);
}
