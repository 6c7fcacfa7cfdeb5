//! Activity records, from the bytes CUPTI wrote to [`wire::Record`]s.
//!
//! One decoder per CUPTI release (py-spy style): the `release!` macro instantiates the
//! same conversion over `cupti_sys::records::vXX_Y::layout`, the structs that release
//! writes, so a layout change between releases is a compile-time fact, never a guess.
//! Records are copied out of the buffer with `ptr::read_unaligned` (they are 8-byte
//! aligned `packed(8)` structs; no reference to buffer bytes is ever made).

use core::ffi::c_char;

use cupti_sys::CUpti_ActivityKind as K;
use cupti_sys::CUpti_ActivityObjectKind as O;
use wire::{ContextInfo, DeviceInfo, Kernel, Marker, Memcpy, Memset, Overhead, Record};

/// What became of one activity record.
#[derive(Debug)]
pub enum Decoded {
    Record(Record),
    /// A string it refers to could not be handed off: the record is lost (the caller
    /// counts it).
    Lost,
    /// A kind this decoder does not convert: skipped and counted.
    Unknown(u32),
}

/// Interns a CUPTI string (null is id 0); `None` when it could not be handed off.
pub type Intern<'a> = dyn FnMut(*const c_char) -> Option<u32> + 'a;

/// The record layouts of one CUPTI release.
pub trait Layouts: Sync {
    /// The release ("13.4").
    fn release(&self) -> &'static str;

    /// The size of the struct this release writes for `kind`, for the kinds decoded.
    fn size_of(&self, kind: u32) -> Option<usize>;

    /// Converts the record at `rec`.
    ///
    /// # Safety
    /// `rec` points to a complete record of the kind in its first four bytes, as
    /// `cuptiActivityGetNextRecord` returned it from a buffer of this release; its
    /// strings are valid for the call.
    unsafe fn decode(&self, rec: *const u8, intern: &mut Intern<'_>) -> Decoded;
}

/// The decoder for a release name, `None` for one this build has no layouts for.
pub fn for_release(name: &str) -> Option<&'static dyn Layouts> {
    RELEASES.iter().copied().find(|l| l.release() == name)
}

/// Copies a `T` out of a CUPTI buffer.
///
/// # Safety
/// `p` points to `size_of::<T>()` readable bytes holding a valid `T` (CUPTI's
/// records are plain data: integers, pointers and unions of them).
unsafe fn read<T>(p: *const u8) -> T {
    // SAFETY: the caller's contract; read_unaligned needs no alignment.
    unsafe { core::ptr::read_unaligned(p as *const T) }
}

fn uuid(bytes: [c_char; 16]) -> [u8; 16] {
    bytes.map(|b| b as u8)
}

macro_rules! release {
    ($ty:ident, $module:ident, $name:literal) => {
        struct $ty;

        impl Layouts for $ty {
            fn release(&self) -> &'static str {
                $name
            }

            fn size_of(&self, kind: u32) -> Option<usize> {
                use cupti_sys::records::$module::layout as l;
                Some(match kind {
                    K::CUPTI_ACTIVITY_KIND_KERNEL | K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => {
                        core::mem::size_of::<l::Kernel>()
                    }
                    K::CUPTI_ACTIVITY_KIND_MEMCPY => core::mem::size_of::<l::Memcpy>(),
                    K::CUPTI_ACTIVITY_KIND_MEMSET => core::mem::size_of::<l::Memset>(),
                    K::CUPTI_ACTIVITY_KIND_MARKER => core::mem::size_of::<l::Marker>(),
                    K::CUPTI_ACTIVITY_KIND_OVERHEAD => core::mem::size_of::<l::Overhead>(),
                    K::CUPTI_ACTIVITY_KIND_DEVICE => core::mem::size_of::<l::Device>(),
                    K::CUPTI_ACTIVITY_KIND_CONTEXT => core::mem::size_of::<l::Context>(),
                    _ => return None,
                })
            }

            unsafe fn decode(&self, rec: *const u8, intern: &mut Intern<'_>) -> Decoded {
                use cupti_sys::records::$module::layout as l;
                // SAFETY: every record starts with its 4-byte kind.
                let kind: u32 = unsafe { read(rec) };
                let record = match kind {
                    K::CUPTI_ACTIVITY_KIND_KERNEL | K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => {
                        // SAFETY: a kernel record of this release (caller's contract).
                        let k: l::Kernel = unsafe { read(rec) };
                        let Some(name) = intern(k.name) else {
                            return Decoded::Lost;
                        };
                        Record::Kernel(Kernel {
                            device_id: k.deviceId,
                            context_id: k.contextId,
                            stream_id: k.streamId,
                            correlation_id: k.correlationId,
                            start_ns: k.start,
                            end_ns: k.end,
                            name,
                            grid: [k.gridX, k.gridY, k.gridZ],
                            block: [k.blockX, k.blockY, k.blockZ],
                            registers_per_thread: k.registersPerThread,
                            static_shared_memory: k.staticSharedMemory,
                            dynamic_shared_memory: k.dynamicSharedMemory,
                            graph_id: k.graphId,
                            graph_node_id: k.graphNodeId,
                        })
                    }
                    K::CUPTI_ACTIVITY_KIND_MEMCPY => {
                        // SAFETY: as above, a memcpy record.
                        let m: l::Memcpy = unsafe { read(rec) };
                        Record::Memcpy(Memcpy {
                            device_id: m.deviceId,
                            context_id: m.contextId,
                            stream_id: m.streamId,
                            correlation_id: m.correlationId,
                            start_ns: m.start,
                            end_ns: m.end,
                            bytes: m.bytes,
                            copy_kind: m.copyKind,
                            src_kind: m.srcKind,
                            dst_kind: m.dstKind,
                            graph_node_id: m.graphNodeId,
                        })
                    }
                    K::CUPTI_ACTIVITY_KIND_MEMSET => {
                        // SAFETY: as above, a memset record.
                        let m: l::Memset = unsafe { read(rec) };
                        Record::Memset(Memset {
                            device_id: m.deviceId,
                            context_id: m.contextId,
                            stream_id: m.streamId,
                            correlation_id: m.correlationId,
                            start_ns: m.start,
                            end_ns: m.end,
                            bytes: m.bytes,
                            value: m.value,
                            memory_kind: m.memoryKind as u8,
                            graph_node_id: m.graphNodeId,
                        })
                    }
                    K::CUPTI_ACTIVITY_KIND_MARKER => {
                        // SAFETY: as above, a marker record.
                        let m: l::Marker = unsafe { read(rec) };
                        let object = m.objectId;
                        // SAFETY: both union members are plain integers; which one
                        // applies is `objectKind`.
                        let pt = unsafe { object.pt };
                        let (process_id, thread_id) = match m.objectKind {
                            O::CUPTI_ACTIVITY_OBJECT_THREAD => (pt.processId, pt.threadId as u64),
                            O::CUPTI_ACTIVITY_OBJECT_PROCESS => (pt.processId, 0),
                            _ => (0, 0),
                        };
                        let Some(name) = intern(m.name) else {
                            return Decoded::Lost;
                        };
                        let Some(domain) = intern(m.domain) else {
                            return Decoded::Lost;
                        };
                        Record::Marker(Marker {
                            flags: m.flags,
                            timestamp_ns: m.timestamp,
                            id: m.id,
                            thread_id,
                            process_id,
                            name,
                            domain,
                        })
                    }
                    K::CUPTI_ACTIVITY_KIND_OVERHEAD => {
                        // SAFETY: as above, an overhead record.
                        let o: l::Overhead = unsafe { read(rec) };
                        let object = o.objectId;
                        // SAFETY: as for markers.
                        let pt = unsafe { object.pt };
                        Record::Overhead(Overhead {
                            kind: o.overheadKind,
                            start_ns: o.start,
                            end_ns: o.end,
                            thread_id: if o.objectKind == O::CUPTI_ACTIVITY_OBJECT_THREAD {
                                pt.threadId as u64
                            } else {
                                0
                            },
                        })
                    }
                    K::CUPTI_ACTIVITY_KIND_DEVICE => {
                        // SAFETY: as above, a device record.
                        let d: l::Device = unsafe { read(rec) };
                        // SAFETY: CUPTI's device name is a NUL-terminated string it owns.
                        let name = unsafe { cupti::callback::c_string(d.name) };
                        let name = name.unwrap_or_default();
                        Record::Device(DeviceInfo {
                            id: d.id,
                            name,
                            compute_capability: (
                                d.computeCapabilityMajor,
                                d.computeCapabilityMinor,
                            ),
                            sm_count: d.numMultiprocessors,
                            core_clock_khz: d.coreClockRate,
                            // Not in CUPTI's device record.
                            memory_clock_khz: 0,
                            memory_bus_width_bits: 0,
                            global_memory_bytes: d.globalMemorySize,
                            l2_cache_bytes: d.l2CacheSize,
                            uuid: uuid(d.uuid.bytes),
                        })
                    }
                    K::CUPTI_ACTIVITY_KIND_CONTEXT => {
                        // SAFETY: as above, a context record.
                        let c: l::Context = unsafe { read(rec) };
                        Record::Context(ContextInfo {
                            context_id: c.contextId,
                            device_id: c.deviceId,
                        })
                    }
                    other => return Decoded::Unknown(other),
                };
                Decoded::Record(record)
            }
        }
    };
}

release!(V12_4, v12_4, "12.4");
release!(V12_6, v12_6, "12.6");
release!(V12_8, v12_8, "12.8");
release!(V12_9, v12_9, "12.9");
release!(V13_0, v13_0, "13.0");
release!(V13_1, v13_1, "13.1");
release!(V13_2, v13_2, "13.2");
release!(V13_3, v13_3, "13.3");
release!(V13_4, v13_4, "13.4");
release!(V13_5, v13_5, "13.5");

static RELEASES: &[&dyn Layouts] = &[
    &V12_4, &V12_6, &V12_8, &V12_9, &V13_0, &V13_1, &V13_2, &V13_3, &V13_4, &V13_5,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_with_layouts_has_a_decoder() {
        for r in cupti_sys::records::RELEASES {
            let d = for_release(r.name).unwrap_or_else(|| panic!("no decoder for {}", r.name));
            let kernel = r.records.iter().find(|x| x.0 == "Kernel").unwrap().2;
            assert_eq!(
                d.size_of(K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                Some(kernel),
                "{}",
                r.name
            );
        }
        assert_eq!(RELEASES.len(), cupti_sys::records::RELEASES.len());
    }

    #[test]
    fn a_kernel_record_decodes_from_unaligned_bytes() {
        use cupti_sys::records::v13_4::layout::Kernel as K13;
        let name = c"gemm_kernel";
        // SAFETY: an all-zero record is a valid plain-data value.
        let mut k: K13 = unsafe { core::mem::zeroed() };
        k.kind = K::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.start = 100;
        k.end = 350;
        k.gridX = 4;
        k.gridY = 2;
        k.gridZ = 1;
        k.blockX = 128;
        k.blockY = 1;
        k.blockZ = 1;
        k.correlationId = 7;
        k.name = name.as_ptr();
        // One byte in, so the record is misaligned.
        let mut bytes = vec![0u8; core::mem::size_of::<K13>() + 1];
        // SAFETY: the destination has room for the struct.
        unsafe { core::ptr::write_unaligned(bytes.as_mut_ptr().add(1) as *mut K13, k) };
        let mut seen = Vec::new();
        let mut intern = |p: *const c_char| {
            // SAFETY: the test passes a valid C string.
            seen.push(unsafe { cupti::callback::c_string(p) });
            Some(5)
        };
        // SAFETY: the bytes hold a 13.4 kernel record whose name is valid.
        let d = unsafe {
            for_release("13.4")
                .unwrap()
                .decode(bytes.as_ptr().add(1), &mut intern)
        };
        match d {
            Decoded::Record(Record::Kernel(k)) => {
                assert_eq!(
                    (k.start_ns, k.end_ns, k.name, k.correlation_id),
                    (100, 350, 5, 7)
                );
                assert_eq!((k.grid, k.block), ([4, 2, 1], [128, 1, 1]));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(seen, vec![Some("gemm_kernel".to_string())]);
    }
}
