//! The trace in Perfetto's protobuf format: a `Trace` written one `TracePacket` at a
//! time (field 1, length-delimited), all on one packet sequence.
//!
//! - Each process is a track with a `ProcessDescriptor` (pid, command line, the
//!   command line as its name); each thread a track with a `ThreadDescriptor` (pid,
//!   tid); each GPU stream a track named "GPU <device> stream <stream>" and each
//!   start/end NVTX range a track named "NVTX ranges", both under their process
//!   (Perfetto shows same-named sibling tracks as one).
//! - A slice is a `TrackEvent` `TYPE_SLICE_BEGIN` at its start (category, name and
//!   arguments as debug annotations) and a `TYPE_SLICE_END` at its end. Timestamps
//!   are the session's, ns; the first packet with a slice is preceded by a
//!   `ClockSnapshot` saying that the trace's clock (`BOOTTIME`, the clock of packets
//!   that name none) reads the same as `REALTIME`, which they are: so the UI can show
//!   wall-clock time.
//! - Event names, categories and argument names are interned: each is written once in
//!   the `InternedData` of the packet that first uses it and referred to by id. The
//!   first packet that interns anything sets `SEQ_INCREMENTAL_STATE_CLEARED`, every
//!   track event `SEQ_NEEDS_INCREMENTAL_STATE`. When more than [`MAX_INTERNED`]
//!   names are interned the state is cleared and interning starts again, so memory
//!   stays bounded whatever the number of distinct names.
//! - Flows: a launch call's begin carries `flow_ids` [its flow id]; the end of a
//!   kernel from a plain launch carries `terminating_flow_ids` [the same id], and the
//!   end of a kernel from a CUDA graph launch carries `flow_ids` [the same id], so
//!   the flow steps from the launch through the graph's kernels in the order they
//!   end (one arrow into each kernel).

use std::io::{self, Write};

use ahash::AHashMap;
use prost::Message;

use super::event::{Category, Process, Sink, Slice, Track, TrackKind};
use super::proto::{
    Clock, ClockSnapshot, InternedData, InternedName, ProcessDescriptor, ThreadDescriptor,
    TracePacket, TrackDescriptor, CLOCK_BOOTTIME, CLOCK_REALTIME, SEQUENCE_ID,
    SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE,
};
use super::proto_writer::{begin_packet, end_packet, Begin, Scratch};

/// Interned event names at most, before the sequence's state is cleared.
pub const MAX_INTERNED: usize = 1 << 16;

/// Writes Perfetto's protobuf trace format to `W`.
pub struct PerfettoWriter<W: Write> {
    out: W,
    /// Interned event names at most before the state is cleared.
    limit: usize,
    buf: Vec<u8>,
    /// Whether a packet has cleared the sequence's incremental state since it was
    /// last reset.
    state_valid: bool,
    next_iid: u64,
    names: AHashMap<String, u64>,
    categories: [u64; Category::ALL.len()],
    arg_names: AHashMap<&'static str, u64>,
    clock_written: bool,
    /// The current slice's argument name ids, and scratch space for its packets.
    arg_iids: Vec<u64>,
    scratch: Scratch,
}

impl<W: Write> PerfettoWriter<W> {
    pub fn new(out: W) -> PerfettoWriter<W> {
        PerfettoWriter::with_interning_limit(out, MAX_INTERNED)
    }

    /// A writer that clears the sequence's state once `limit` event names are
    /// interned (tests use a small one).
    pub fn with_interning_limit(out: W, limit: usize) -> PerfettoWriter<W> {
        PerfettoWriter {
            limit,
            out,
            buf: Vec::with_capacity(1024),
            state_valid: false,
            next_iid: 1,
            names: AHashMap::new(),
            categories: [0; Category::ALL.len()],
            arg_names: AHashMap::new(),
            clock_written: false,
            arg_iids: Vec::new(),
            scratch: Scratch::default(),
        }
    }

    /// The output, once finished.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn write(&mut self, packet: &TracePacket) -> io::Result<()> {
        self.buf.clear();
        // Trace.packet: field 1, length-delimited.
        self.buf.push(0x0a);
        packet
            .encode_length_delimited(&mut self.buf)
            .map_err(io::Error::other)?;
        self.out.write_all(&self.buf)
    }

    fn packet(&self) -> TracePacket {
        TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE_ID),
            ..TracePacket::default()
        }
    }

    fn iid(&mut self) -> u64 {
        let iid = self.next_iid;
        self.next_iid += 1;
        iid
    }

    fn reset_state(&mut self) {
        self.state_valid = false;
        self.next_iid = 1;
        self.names.clear();
        self.categories = [0; Category::ALL.len()];
        self.arg_names.clear();
    }

    /// The interned id of argument name `name`, interned in `new` when new.
    fn arg_name_iid(&mut self, name: &'static str, new: &mut InternedData) -> u64 {
        match self.arg_names.get(name) {
            Some(&iid) => iid,
            None => {
                let iid = self.iid();
                self.arg_names.insert(name, iid);
                new.debug_annotation_names.push(InternedName {
                    iid: Some(iid),
                    name: Some(name.to_string()),
                });
                iid
            }
        }
    }
}

fn pid_i32(pid: u32) -> Option<i32> {
    i32::try_from(pid).ok()
}

impl<W: Write> Sink for PerfettoWriter<W> {
    fn process(&mut self, p: &Process) -> io::Result<()> {
        let descriptor = TrackDescriptor {
            uuid: Some(p.id),
            process: Some(ProcessDescriptor {
                pid: pid_i32(p.pid),
                cmdline: p.command.to_vec(),
                process_name: (!p.command.is_empty()).then(|| p.command.join(" ")),
            }),
            ..TrackDescriptor::default()
        };
        let packet = TracePacket {
            track_descriptor: Some(descriptor),
            ..self.packet()
        };
        self.write(&packet)
    }

    fn track(&mut self, t: &Track) -> io::Result<()> {
        let mut d = TrackDescriptor {
            uuid: Some(t.id),
            ..TrackDescriptor::default()
        };
        match (t.kind, pid_i32(t.pid)) {
            (TrackKind::Thread(tid), Some(pid)) if i64::try_from(tid).is_ok() => {
                d.thread = Some(ThreadDescriptor {
                    pid: Some(pid),
                    tid: i64::try_from(tid).ok(),
                });
            }
            _ => {
                d.name = Some(t.name());
                d.parent_uuid = Some(t.process);
            }
        }
        let packet = TracePacket {
            track_descriptor: Some(d),
            ..self.packet()
        };
        self.write(&packet)
    }

    fn slice(&mut self, s: &Slice) -> io::Result<()> {
        if !self.clock_written {
            self.clock_written = true;
            let clock = |clock_id| Clock {
                clock_id: Some(clock_id),
                timestamp: Some(s.start_ns),
            };
            let packet = TracePacket {
                clock_snapshot: Some(ClockSnapshot {
                    clocks: vec![clock(CLOCK_BOOTTIME), clock(CLOCK_REALTIME)],
                    primary_trace_clock: Some(CLOCK_BOOTTIME as i32),
                }),
                ..self.packet()
            };
            self.write(&packet)?;
        }
        if self.names.len() >= self.limit {
            self.reset_state();
        }
        let mut new = InternedData::default();
        let category = match self.categories[s.category.index()] {
            0 => {
                let iid = self.iid();
                self.categories[s.category.index()] = iid;
                new.event_categories.push(InternedName {
                    iid: Some(iid),
                    name: Some(s.category.name().to_string()),
                });
                iid
            }
            iid => iid,
        };
        let name = match self.names.get(s.name) {
            Some(&iid) => iid,
            None => {
                let iid = self.iid();
                self.names.insert(s.name.to_string(), iid);
                new.event_names.push(InternedName {
                    iid: Some(iid),
                    name: Some(s.name.to_string()),
                });
                iid
            }
        };
        let mut arg_iids = std::mem::take(&mut self.arg_iids);
        arg_iids.clear();
        for a in s.args {
            arg_iids.push(self.arg_name_iid(a.name, &mut new));
        }
        let mut flags = SEQ_NEEDS_INCREMENTAL_STATE;
        if !self.state_valid {
            flags |= SEQ_INCREMENTAL_STATE_CLEARED;
            self.state_valid = true;
        }
        let interned = (new != InternedData::default()).then(|| new.encode_to_vec());
        let begin = Begin {
            timestamp: s.start_ns,
            category_iid: category,
            name_iid: name,
            track: s.track,
            flow_out: s.flow_out,
            interned: interned.as_deref(),
            sequence_flags: flags,
        };
        self.buf.clear();
        begin_packet(&mut self.buf, &mut self.scratch, &begin, s.args, &arg_iids);
        self.arg_iids = arg_iids;
        let (flow_ids, terminating_flow_ids) = match s.flow_in {
            Some(f) if f.graph => (Some(f.id), None),
            Some(f) => (None, Some(f.id)),
            None => (None, None),
        };
        end_packet(
            &mut self.buf,
            &mut self.scratch,
            s.end_ns,
            s.track,
            flow_ids,
            terminating_flow_ids,
        );
        self.out.write_all(&self.buf)
    }

    /// Kernels carry their GEMM call and roofline numbers as arguments.
    fn joined(&self) -> bool {
        true
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}
