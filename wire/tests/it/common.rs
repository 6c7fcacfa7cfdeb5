//! Helpers shared by the wire tests.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use gpuprof_wire::*;

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        TempDir::new_in(&std::env::temp_dir(), name)
    }

    /// In `base` (e.g. `/dev/shm`, where rings live).
    pub fn new_in(base: &Path, name: &str) -> TempDir {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("gpuprof-wire-{}-{n}-{name}", std::process::id()));
        std::fs::create_dir(&dir).expect("create temp dir");
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Overwrites `bytes` at `offset` of the file at `path` (the mapping of a ring sees it).
pub fn patch(path: &Path, offset: u64, bytes: &[u8]) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open for patch");
    file.write_all_at(bytes, offset).expect("patch");
}

/// Reads `len` bytes at `offset` of the file at `path`.
pub fn peek(path: &Path, offset: u64, len: usize) -> Vec<u8> {
    let file = std::fs::File::open(path).expect("open for peek");
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset).expect("peek");
    buf
}

/// One record of every variant, each field with a distinct non-default value.
pub fn all_records() -> Vec<Record> {
    vec![
        Record::Process(Box::new(ProcessInfo {
            pid: 4242,
            ppid: 1,
            command: vec!["python".into(), "infer.py".into(), "--batch=8".into()],
            host: "gpu-node-7".into(),
            start_ns: 1_700_000_000_123_456_789,
            profiler_version: "0.1.0".into(),
            cupti_api_version: 26,
            cupti_layouts: "13.4".into(),
            cupti_path: "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13".into(),
            environment: vec![
                "RANK=1".into(),
                "LOCAL_RANK=1".into(),
                "WORLD_SIZE=2".into(),
            ],
        })),
        Record::Device(DeviceInfo {
            id: 3,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            core_clock_khz: 1_980_000,
            memory_clock_khz: 2_619_000,
            memory_bus_width_bits: 5120,
            global_memory_bytes: 85_520_809_984,
            l2_cache_bytes: 52_428_800,
            uuid: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 255],
        }),
        Record::Context(ContextInfo {
            context_id: 17,
            device_id: 3,
        }),
        Record::String(InternedString {
            id: 5,
            text: "_Z10gemm_kernelIfEvPKT_S2_PS0_iii \u{3bc}".into(),
        }),
        Record::Kernel(Kernel {
            device_id: 3,
            context_id: 17,
            stream_id: 7,
            correlation_id: 99_999,
            start_ns: u64::MAX - 1,
            end_ns: u64::MAX,
            name: 5,
            grid: [132, 1, -1],
            block: [256, 2, 1],
            registers_per_thread: 255,
            static_shared_memory: 49_152,
            dynamic_shared_memory: -1,
            graph_id: 12,
            graph_node_id: 0xdead_beef_0000_0001,
        }),
        Record::Memcpy(Memcpy {
            device_id: 3,
            context_id: 17,
            stream_id: 8,
            correlation_id: 100_000,
            start_ns: 10,
            end_ns: 20,
            bytes: 1 << 40,
            copy_kind: 1,
            src_kind: 2,
            dst_kind: 3,
            graph_node_id: 44,
        }),
        Record::Memset(Memset {
            device_id: 3,
            context_id: 17,
            stream_id: 9,
            correlation_id: 100_001,
            start_ns: 30,
            end_ns: 40,
            bytes: 4096,
            value: 0xffff_ffff,
            memory_kind: 3,
            graph_node_id: 0,
        }),
        Record::Marker(Marker {
            flags: marker_flags::START,
            timestamp_ns: 50,
            id: 77,
            thread_id: 140_000_000_000_001,
            process_id: 4242,
            name: 6,
            domain: 0,
        }),
        Record::Launch(Launch {
            correlation_id: 99_999,
            cbid: 307,
            runtime: true,
            thread_id: 140_000_000_000_001,
            start_ns: 5,
            end_ns: 9,
        }),
        Record::Overhead(Overhead {
            kind: 2,
            start_ns: 60,
            end_ns: 70,
            thread_id: 3,
        }),
        Record::Dropped(Dropped {
            source: DropSource::Cupti,
            records: 1,
        }),
        Record::Dropped(Dropped {
            source: DropSource::Channel,
            records: 2,
        }),
        Record::Dropped(Dropped {
            source: DropSource::Ring,
            records: u64::MAX,
        }),
        Record::End(End { records: 123 }),
    ]
}
