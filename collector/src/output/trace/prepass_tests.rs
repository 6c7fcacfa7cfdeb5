use wire::testing::*;
use wire::{GemmCall, Overhead, Record};

use super::*;
use crate::output::trace::first_timestamp;
use crate::store::write_parts;

struct Tmp(std::path::PathBuf);
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn session(name: &str, parts: &[(u32, Vec<Record>)]) -> Tmp {
    let dir = std::env::temp_dir().join(format!("gpuprof-prepass-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    write_parts(&dir, parts).unwrap();
    Tmp(dir)
}

fn read_back(store: &Store) -> Vec<Vec<(u32, Record)>> {
    (0..store.parts.len())
        .map(|i| store.read_part(i).unwrap().records)
        .collect()
}

fn pids(p: &Prepass) -> Vec<u32> {
    p.headers.iter().map(|h| h.pid).collect()
}

/// CUPTI's overhead from `start_ns` to `end_ns`.
fn overhead(start_ns: u64, end_ns: u64) -> Record {
    Record::Overhead(Overhead {
        kind: 1,
        thread_id: 7,
        start_ns,
        end_ns,
    })
}

/// What the pass gives by definition: the same pass over every record of the parts
/// read whole (screened here).
fn prepass_of_records(parts: &[Vec<(u32, Record)>]) -> Prepass {
    let mut gathered = Gathered::default();
    for records in parts {
        let kept: Vec<(u32, Record)> = records
            .iter()
            .filter(|(_, r)| impossible(r).is_none())
            .cloned()
            .collect();
        gathered.earliest(first_timestamp(&kept));
        for (pid, r) in &kept {
            gathered.record(*pid, r);
        }
    }
    gathered.finish()
}

/// Records whose kept pids and first time each rule decides: impossible ones (their
/// pids have no other record) and possible ones, of every table read by columns.
fn parts() -> Vec<(u32, Vec<Record>)> {
    let mut with_env = process(10, "python serve.py");
    if let Record::Process(p) = &mut with_env {
        p.environment = vec!["RANK=1".into()];
        p.start_ns = 5;
    }
    let impossible_gemm = gemm(1, 1, 0, 1 << 30, 1 << 30, 1);
    vec![
        (
            10,
            vec![
                with_env,
                Record::Device(device("H100", (9, 0), 132, 1_980_000)),
                k(1, 1, 5_000, 6_000),
                launch(1, 7, 4_000, 4_500),
            ],
        ),
        // Impossible alone: no header, no first time (their starts are earliest).
        (20, vec![k(1, 2, 100, 50), launch(2, 7, 200, 100)]),
        (21, vec![memcpy(1, 8, 300, 200), memset(8, 400, 300)]),
        (22, vec![impossible_gemm]),
        (23, vec![overhead(9, 1)]),
        (24, vec![sample(10, 5, &[(1, 1.0)])]),
        (25, vec![gemm_call(60, 50)]),
        // Kept: a header each; the marker's time is the session's first.
        (30, vec![k(1, 3, 0, u64::MAX)]),
        (31, vec![marker(2, 1, 7, 3_000, 0, 0)]),
        (32, vec![gemm(4, 1, 0, 1, 4096, 4096), string(1, "x")]),
        (33, vec![overhead(1, 9)]),
        (34, vec![sample(3_500, 3_600, &[(1, 1.0)])]),
        (35, vec![memcpy(1, 8, 3_200, 3_300)]),
        // A GEMM call begins before its first launch: it can be the first time.
        (36, vec![gemm_call(2_900, 3_400)]),
    ]
}

/// A cuBLAS call's span.
fn gemm_call(start_ns: u64, end_ns: u64) -> Record {
    Record::GemmCall(GemmCall {
        call: 1,
        thread_id: 7,
        start_ns,
        end_ns,
    })
}

#[test]
fn the_column_pass_gives_what_the_pass_over_every_record_gives() {
    let t = session("same", &parts());
    let store = Store::open(&t.0).unwrap();
    let got = prepass(&store).unwrap();
    assert_eq!(got, prepass_of_records(&read_back(&store)));
    // The kernel of pid 30 lasts longer than a year: screened out, with its start 0;
    // the GEMM call of pid 25 ends before it starts, screened out; that of pid 36
    // starts first.
    assert_eq!(got.first, Some(2_900));
    assert_eq!(pids(&got), [31, 32, 33, 34, 35, 36, 10]);
    let p10 = got.headers.iter().find(|h| h.pid == 10).unwrap();
    assert_eq!((p10.rank, p10.rank_from_env), (1, true));
    assert_eq!(p10.devices.len(), 1);
    assert_eq!(p10.command, ["python", "serve.py"]);
}

#[test]
fn a_damaged_file_counts_towards_neither_the_first_time_nor_the_processes() {
    let early = vec![
        (40, vec![k(1, 1, 1_000, 2_000)]),
        (41, vec![marker(2, 1, 7, 1_500, 0, 0)]),
    ];
    let all = [parts(), early].concat();
    let t = session("damaged", &all);
    // Parts are numbered from 1, a frame each: pid 40's is the one before the last.
    let kernels =
        t.0.join(format!("parts/{:08}/kernels.parquet", all.len() - 1));
    let mut bytes = std::fs::read(&kernels).unwrap();
    bytes[40] ^= 0x10;
    std::fs::write(&kernels, bytes).unwrap();
    let store = Store::open(&t.0).unwrap();
    let got = prepass(&store).unwrap();
    assert_eq!(got, prepass_of_records(&read_back(&store)));
    assert_eq!(got.first, Some(1_500));
    assert!(!pids(&got).contains(&40));
    assert!(pids(&got).contains(&41));
}
