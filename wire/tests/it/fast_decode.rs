//! The batch decoder's fast path (`src/fast_decode.rs`) against rmp-serde alone: the
//! same records from every batch a writer makes, with kernels and launches of any
//! values among the other kinds, and the same error, word for word, from every
//! damaged one.

use gpuprof_wire::*;
use proptest::prelude::*;

use crate::common::all_records;

fn kernel() -> impl Strategy<Value = Record> {
    (
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), any::<u64>(), any::<u32>()),
        (any::<[i32; 3]>(), any::<[i32; 3]>(), any::<u16>()),
        (any::<i32>(), any::<i32>(), any::<u32>(), any::<u64>()),
    )
        .prop_map(|(a, b, c, d)| {
            Record::Kernel(Kernel {
                device_id: a.0,
                context_id: a.1,
                stream_id: a.2,
                correlation_id: a.3,
                start_ns: b.0,
                end_ns: b.1,
                name: b.2,
                grid: c.0,
                block: c.1,
                registers_per_thread: c.2,
                static_shared_memory: d.0,
                dynamic_shared_memory: d.1,
                graph_id: d.2,
                graph_node_id: d.3,
            })
        })
}

fn launch() -> impl Strategy<Value = Record> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<bool>(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(c, cbid, runtime, t, s, e)| {
            Record::Launch(Launch {
                correlation_id: c,
                cbid,
                runtime,
                thread_id: t,
                start_ns: s,
                end_ns: e,
            })
        })
}

/// Batches of kernels and launches of any values, with records of every other kind.
fn batch() -> impl Strategy<Value = Vec<Record>> {
    let others = all_records();
    let n = others.len();
    prop::collection::vec(
        prop_oneof![
            4 => kernel(),
            3 => launch(),
            1 => (0..n).prop_map(move |i| others[i].clone()),
        ],
        0..40,
    )
}

/// The two decoders' answers, errors as their messages.
fn both(bytes: &[u8]) -> (Result<Vec<Record>, String>, Result<Vec<Record>, String>) {
    (
        decode_batch(bytes).map_err(|e| e.to_string()),
        decode_batch_with_serde(bytes).map_err(|e| e.to_string()),
    )
}

/// `bytes` with its checksum made right again, so that damage reaches the decoders.
fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
    let body = bytes.len() - 4;
    let crc = crc32c::crc32c(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_fast_path_decodes_what_rmp_serde_decodes(records in batch()) {
        let bytes = encode_batch(&records).unwrap();
        let (fast, serde) = both(&bytes);
        prop_assert_eq!(fast.as_ref(), Ok(&records));
        prop_assert_eq!(fast, serde);
    }

    #[test]
    fn damaged_batches_give_rmp_serdes_answer(
        records in batch(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        cut in any::<bool>(),
    ) {
        let mut bytes = encode_batch(&records).unwrap();
        let body = bytes.len() - 4;
        let i = at.index(body);
        if cut {
            bytes.drain(i..body);
        } else {
            bytes[i] = byte;
        }
        let (fast, serde) = both(&resealed(bytes));
        prop_assert_eq!(fast, serde);
    }
}

#[test]
fn values_in_other_integer_forms_are_read_by_rmp_serde() {
    // A launch whose cbid is written as int 8 (a form rmp never writes for a u32):
    // rmp-serde reads it, so the fast path hands the record over rather than refuse.
    let launch = Record::Launch(Launch {
        correlation_id: 7,
        cbid: 5,
        runtime: false,
        thread_id: 1,
        start_ns: 2,
        end_ns: 3,
    });
    let mut bytes = encode_batch(std::slice::from_ref(&launch)).unwrap();
    bytes.truncate(bytes.len() - 4);
    // [0x91, 0x81, 0x08, 0x96, corr 0x07, cbid 0x05, ...]
    assert_eq!(&bytes[..6], &[0x91, 0x81, 0x08, 0x96, 0x07, 0x05]);
    bytes.splice(5..6, [0xd0, 0x05]);
    bytes.extend_from_slice(&[0; 4]);
    let bytes = resealed(bytes);
    assert_eq!(decode_batch(&bytes).unwrap(), vec![launch.clone()]);
    assert_eq!(decode_batch_with_serde(&bytes).unwrap(), vec![launch]);
}

#[test]
fn a_value_too_large_for_its_field_is_rmp_serdes_error() {
    // A launch whose correlation id (a u32) is written as uint 64 of 2^32: rmp-serde
    // refuses it, and so does the batch, never a truncated id.
    let launch = Record::Launch(Launch {
        correlation_id: 7,
        ..Launch::default()
    });
    let mut bytes = encode_batch(&[launch]).unwrap();
    bytes.truncate(bytes.len() - 4);
    assert_eq!(&bytes[..5], &[0x91, 0x81, 0x08, 0x96, 0x07]);
    bytes.splice(4..5, [0xcf, 0, 0, 0, 1, 0, 0, 0, 0]);
    bytes.extend_from_slice(&[0; 4]);
    let (fast, serde) = both(&resealed(bytes));
    assert!(serde.is_err(), "{serde:?}");
    assert_eq!(fast, serde);
}
