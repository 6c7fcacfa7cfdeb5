//! Frame payloads: MessagePack batches with field names, so a reader accepts what an
//! older or newer writer sends as long as fields are only added.

mod common;

use std::fmt;

use common::all_records;
use gpuprof_wire::*;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

#[test]
fn every_variant_round_trips() {
    for record in all_records() {
        let bytes = encode_batch(std::slice::from_ref(&record)).unwrap();
        assert_eq!(decode_batch(&bytes).unwrap(), vec![record]);
    }
    let all = all_records();
    assert_eq!(decode_batch(&encode_batch(&all).unwrap()).unwrap(), all);
    assert_eq!(
        encode_batch(&[]).unwrap(),
        [0x90],
        "an empty batch is an empty array"
    );
    assert_eq!(decode_batch(&[0x90]).unwrap(), vec![]);
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

fn keys(v: &Value) -> Vec<String> {
    match v {
        Value::Map(m) => m
            .iter()
            .map(|(k, _)| match k {
                Value::Str(k) => k.clone(),
                k => panic!("key {k:?} is not a name"),
            })
            .collect(),
        v => panic!("{v:?} is not a map"),
    }
}

#[test]
fn the_encoding_is_messagepack_with_names() {
    let all = all_records();
    let bytes = encode_batch(&all).unwrap();
    let Value::Array(items) = rmp_serde::from_slice::<Value>(&bytes).unwrap() else {
        panic!("not an array")
    };
    let variants = [
        "Process", "Device", "Context", "String", "Kernel", "Memcpy", "Memset", "Marker", "Launch",
        "Overhead", "Dropped", "Dropped", "Dropped", "End",
    ];
    assert_eq!(items.len(), variants.len());
    for (item, variant) in items.iter().zip(variants) {
        // Externally tagged: { "Variant": { "field": value, ... } }.
        assert_eq!(keys(item), [variant]);
        let Value::Map(m) = item else { unreachable!() };
        assert!(!keys(&m[0].1).is_empty(), "{variant} has named fields");
    }
    let Value::Map(kernel) = &items[4] else {
        unreachable!()
    };
    assert_eq!(
        keys(&kernel[0].1),
        [
            "device_id",
            "context_id",
            "stream_id",
            "correlation_id",
            "start_ns",
            "end_ns",
            "name",
            "grid",
            "block",
            "registers_per_thread",
            "static_shared_memory",
            "dynamic_shared_memory",
            "graph_id",
            "graph_node_id",
        ]
    );
    let Value::Map(fields) = &kernel[0].1 else {
        unreachable!()
    };
    assert_eq!(
        fields[7],
        (
            s("grid"),
            Value::Array(vec![Value::Int(132), Value::Int(1), Value::Int(-1)])
        )
    );
    assert_eq!(fields[5], (s("end_ns"), Value::Int(u64::MAX.into())));
    // Unit enums by name too.
    let Value::Map(dropped) = &items[11] else {
        unreachable!()
    };
    assert_eq!(
        dropped[0].1,
        Value::Map(vec![
            (s("source"), s("Channel")),
            (s("records"), Value::Int(2))
        ])
    );
    // The bytes themselves carry the names.
    let has = |name: &[u8]| bytes.windows(name.len()).any(|w| w == name);
    assert!(has(b"\xaecorrelation_id"), "a fixstr of 14 bytes");
    assert!(has(b"\xa6Kernel"));
    assert!(!has(b"\xa8Nonsense"));
}

/// A newer writer's Kernel: every field of this one plus some it added.
#[derive(Serialize)]
struct KernelV2 {
    occupancy: f32,
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
    launch_attributes: Vec<(String, u64)>,
    cluster: Option<[u32; 3]>,
}

#[derive(Serialize)]
enum RecordV2 {
    Kernel(KernelV2),
    End(End),
}

#[test]
fn a_reader_ignores_fields_a_newer_writer_added() {
    let Record::Kernel(k) = all_records()[4].clone() else {
        unreachable!()
    };
    let newer = KernelV2 {
        occupancy: 0.75,
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
        launch_attributes: vec![("cluster".into(), 2)],
        cluster: Some([2, 1, 1]),
    };
    let bytes = rmp_serde::to_vec_named(&vec![
        RecordV2::Kernel(newer),
        RecordV2::End(End { records: 9 }),
    ])
    .unwrap();
    assert_eq!(
        decode_batch(&bytes).unwrap(),
        vec![Record::Kernel(k), Record::End(End { records: 9 })]
    );
}

/// A newer reader's End: a field this writer does not send, with a default.
#[derive(Debug, PartialEq, Deserialize)]
struct EndV2 {
    records: u64,
    #[serde(default)]
    clean_exit: bool,
}

#[derive(Debug, PartialEq, Deserialize)]
enum RecordNext {
    End(EndV2),
}

#[test]
fn a_newer_reader_defaults_fields_this_writer_lacks() {
    let bytes = encode_batch(&[Record::End(End { records: 5 })]).unwrap();
    let decoded: Vec<RecordNext> = rmp_serde::from_slice(&bytes).unwrap();
    assert_eq!(
        decoded,
        vec![RecordNext::End(EndV2 {
            records: 5,
            clean_exit: false
        })]
    );
}

#[test]
fn a_missing_field_or_an_unknown_variant_is_an_error() {
    #[derive(Serialize)]
    enum Old {
        End {},
        Gemm { m: u32 },
    }
    assert!(decode_batch(&rmp_serde::to_vec_named(&vec![Old::End {}]).unwrap()).is_err());
    assert!(decode_batch(&rmp_serde::to_vec_named(&vec![Old::Gemm { m: 1 }]).unwrap()).is_err());
}

/// Regression: bytes after the batch were ignored, so a frame whose length was too
/// long (e.g. two frames run together) lost the second one without an error.
#[test]
fn bytes_after_the_batch_are_an_error() {
    let one = encode_batch(&all_records()[..1]).unwrap();
    let two = encode_batch(&all_records()[1..2]).unwrap();
    let run_together = [one.clone(), two].concat();
    let err = decode_batch(&run_together).unwrap_err();
    assert!(err.to_string().contains("bytes after the batch"), "{err}");
    assert!(decode_batch(&[one.as_slice(), &[0]].concat()).is_err());
    assert_eq!(decode_batch(&one).unwrap(), all_records()[..1]);
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
