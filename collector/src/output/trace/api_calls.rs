//! The CUDA calls traced one by one (`Record::ApiCall`) in the trace: each on its
//! thread's track beside the launches, named by its function; a copy's or set's call
//! with a flow to the copy or set it enqueued (the same correlation id, matched as
//! launches are to kernels); and, for a sink that asks ([`Sink::wants_syncs`]), the
//! waits as Kineto writes CUPTI's synchronization records: "Stream Sync", "Context
//! Sync", "Event Sync" and "Stream Wait Event" on the GPU, with the stream waited
//! for and, for an event, the stream and correlation id of the event's last record
//! before the wait (the call that recorded it, `cuEventRecord`).
//!
//! What is held: per process, its contexts' devices, and the last record of each
//! event handle (at most [`MAX_EVENTS`] per process; past that the oldest are
//! forgotten and a wait on them names no record).

use std::io;

use wire::{ApiCall, NO_STREAM};

use super::event::{Arg, Category, FlowIn, Sink, Slice, Source, SyncFacts, TrackKind, Value};
use super::{arg, flow_id, mid, TraceBuilder};
use crate::analysis::api_calls::CallClass;

/// Event handles whose last record is kept per process.
pub const MAX_EVENTS: usize = 1 << 16;

/// The synchronization type of a call named `name`, as Kineto names it.
fn sync_kind(name: &str) -> Option<&'static str> {
    let f = name
        .strip_prefix("cuda")
        .or_else(|| name.strip_prefix("cu"))?;
    if f.starts_with("StreamSynchronize") {
        Some("Stream Sync")
    } else if f.starts_with("CtxSynchronize") || f.starts_with("DeviceSynchronize") {
        Some("Context Sync")
    } else if f.starts_with("EventSynchronize") {
        Some("Event Sync")
    } else if f.starts_with("StreamWaitEvent") {
        Some("Stream Wait Event")
    } else {
        None
    }
}

fn is_event_record(name: &str) -> bool {
    name.starts_with("cuEventRecord") || name.starts_with("cudaEventRecord")
}

impl<S: Sink> TraceBuilder<S> {
    /// A traced call (see the module documentation).
    pub(super) fn api_call(&mut self, pid: u32, c: &ApiCall) -> io::Result<()> {
        let name = match self.strings.get(&(pid, c.name)) {
            Some(n) if c.name != 0 => n.clone(),
            _ => format!("cbid {}", c.cbid),
        };
        let class = CallClass::of(&name);
        let key = (pid, c.correlation_id);
        let enqueues = matches!(class, CallClass::Copy | CallClass::Set) && c.bytes > 0;
        let first = enqueues && !self.pending_calls.contains_key(&key);
        let mut written = None;
        if self.keep(c.start_ns, c.end_ns) {
            let track = self.track(pid, TrackKind::Thread(c.thread_id))?;
            let mut args: Vec<Arg> = vec![
                arg("correlation_id", Value::U64(c.correlation_id.into())),
                arg("cbid", Value::U64(c.cbid.into())),
                arg("runtime", Value::Bool(c.runtime)),
            ];
            if c.bytes > 0 {
                args.push(arg("bytes", Value::U64(c.bytes)));
            }
            if c.stream_id != NO_STREAM {
                args.push(arg("stream", Value::U64(c.stream_id.into())));
            }
            if c.event != 0 {
                args.push(arg("event", Value::U64(c.event)));
            }
            if !c.ok {
                args.push(arg("failed", Value::Bool(true)));
            }
            self.sink.slice(&Slice {
                track,
                category: Category::CudaApi,
                name: &name,
                start_ns: c.start_ns,
                end_ns: c.end_ns,
                args: &args,
                flow_out: first.then(|| flow_id(pid, c.correlation_id)),
                flow_in: None,
                source: Source::ApiCall(c),
            })?;
            self.stats.api_calls += 1;
            written = Some((track, mid(c.start_ns, c.end_ns)));
        }
        if first {
            self.pending_calls.insert(key, (self.part, written));
        }
        if c.ok && is_event_record(&name) && c.event != 0 {
            let events = self.event_records.entry(pid).or_default();
            if events.len() >= MAX_EVENTS && !events.contains_key(&c.event) {
                events.clear();
            }
            events.insert(c.event, (c.stream_id, c.correlation_id));
        }
        if self.sink.wants_syncs() && c.ok {
            if let Some(kind) = sync_kind(&name) {
                self.sync(pid, c, kind)?;
            }
        }
        Ok(())
    }

    /// The wait of call `c` on the GPU's track (see the module documentation).
    fn sync(&mut self, pid: u32, c: &ApiCall, kind: &'static str) -> io::Result<()> {
        let Some(&device) = self.context_devices.get(&(pid, c.context_id)) else {
            return Ok(());
        };
        if !self.keep(c.start_ns, c.end_ns) {
            return Ok(());
        }
        let event = kind == "Event Sync" || kind == "Stream Wait Event";
        let waits_on = if event {
            self.event_records
                .get(&pid)
                .and_then(|e| e.get(&c.event))
                .copied()
        } else {
            None
        };
        let stream = (c.stream_id != NO_STREAM && kind != "Event Sync").then_some(c.stream_id);
        let facts = SyncFacts {
            pid,
            kind,
            device,
            stream,
            context: c.context_id,
            correlation: c.correlation_id,
            waits_on,
            event: if event { c.event } else { 0 },
        };
        // No track: the sink places it from its facts.
        self.sink.slice(&Slice {
            track: 0,
            category: Category::CudaSync,
            name: kind,
            start_ns: c.start_ns,
            end_ns: c.end_ns,
            args: &[],
            flow_out: None,
            flow_in: None,
            source: Source::Sync(&facts),
        })?;
        self.stats.syncs += 1;
        Ok(())
    }

    /// The flow into the copy or set with correlation id `correlation` of `pid`, from
    /// its call when the trace holds it.
    pub(super) fn transfer_flow(&mut self, pid: u32, correlation: u32) -> Option<FlowIn> {
        let (_, written) = self.pending_calls.remove(&(pid, correlation))?;
        let (from_track, from_mid_ns) = written?;
        Some(FlowIn {
            id: flow_id(pid, correlation),
            from_track,
            from_mid_ns,
            graph: false,
        })
    }

    /// Forgets the calls whose copy or set has not come in their part and the
    /// [`super::HOLD_PARTS`] after it.
    pub(super) fn expire_calls(&mut self) {
        let part = self.part;
        self.pending_calls
            .retain(|_, (p, _)| *p + super::HOLD_PARTS > part);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_named_as_kineto_names_cuptis_synchronization_types() {
        for (name, kind) in [
            ("cuStreamSynchronize", Some("Stream Sync")),
            ("cuStreamSynchronize_ptsz", Some("Stream Sync")),
            ("cudaStreamSynchronize", Some("Stream Sync")),
            ("cuCtxSynchronize", Some("Context Sync")),
            ("cuCtxSynchronize_v2", Some("Context Sync")),
            ("cudaDeviceSynchronize", Some("Context Sync")),
            ("cuEventSynchronize", Some("Event Sync")),
            ("cuStreamWaitEvent_ptsz", Some("Stream Wait Event")),
            ("cudaStreamWaitEvent", Some("Stream Wait Event")),
            ("cuEventRecord", None),
            ("cuMemcpyAsync", None),
        ] {
            assert_eq!(sync_kind(name), kind, "{name}");
        }
    }
}
