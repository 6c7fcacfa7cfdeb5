#!/usr/bin/env python3
"""Reads a Perfetto trace with Perfetto's own classes and prints what it holds.

    read_trace.py TRACE > trace.json

The trace is parsed with the `perfetto` package's generated protobuf classes
(`perfetto.protos.perfetto.trace.perfetto_trace_pb2`, Google's protobuf runtime):
the file as a `Trace`, and each packet as a `TracePacket`. What a trace processor
does with the packets is then done here, following Perfetto's documented rules, and
every rule a trace must follow for that is checked; a trace that breaks one is an
error (exit status 1, the rule on stderr):

- framing: the file is `Trace.packet` fields only (tag 0x0a, a length, a packet);
  each packet re-serialises to the same bytes (canonical encoding: proto2 repeated
  scalars unpacked, fields in number order) and holds no field the protos do not
  know;
- sequences: every packet names its sequence (`trusted_packet_sequence_id`); a
  packet's `interned_data` and any packet flagged `SEQ_NEEDS_INCREMENTAL_STATE`
  come after a `SEQ_INCREMENTAL_STATE_CLEARED` on the sequence; an interned id
  resolves in the sequence's state since its last clear, and is not defined twice
  there; a track event referring to interned data is flagged
  `SEQ_NEEDS_INCREMENTAL_STATE`;
- tracks: a track's uuid is declared once, before any event on it, and its parent
  before it;
- slices: events are taken in timestamp order (ties in file order, as the trace
  processor sorts), a `TYPE_SLICE_END` closes the innermost open slice of its track,
  and no slice is left open;
- flows: an event's `flow_ids` start a flow at its slice or, when the flow is
  active, continue it (an arrow from the flow's last slice to this one);
  `terminating_flow_ids` end an active flow with an arrow (ending one that is not
  active is an error here: the trace processor would drop it silently). A begin
  event's flows bind to the slice it opens, an end event's to the slice it closes.

Output (JSON): packets, clock_snapshots ([{clock_id: timestamp}]), sequences
({seq: {clears, interned: {names, categories, annotation_names}}}), tracks
([{uuid, name, parent, pid, tid, process_name, cmdline}]), slices ([{track, name,
category, ts, dur, depth, args}] in timestamp order; args by annotation name,
arrays as lists), flows ([[from slice, to slice]] by index in slices, in the order
they were made).
"""

import json
import sys

from google.protobuf import unknown_fields
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TracePacket, TrackEvent

SEQ_INCREMENTAL_STATE_CLEARED = TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
SEQ_NEEDS_INCREMENTAL_STATE = TracePacket.SEQ_NEEDS_INCREMENTAL_STATE


class Broken(Exception):
    pass


def varint(data, i):
    shift = value = 0
    while True:
        if i >= len(data):
            raise Broken(f"a varint runs past the end of the file at byte {i}")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
        if shift > 63:
            raise Broken(f"a varint of more than 10 bytes at byte {i}")


def frames(data):
    """The packets' bytes, by the framing of `Trace` (field 1, length-delimited)."""
    i = 0
    while i < len(data):
        if data[i] != 0x0A:
            raise Broken(f"byte {i}: tag {data[i]:#x}, not Trace.packet (0x0a)")
        n, j = varint(data, i + 1)
        if j + n > len(data):
            raise Broken(f"byte {i}: a packet of {n} bytes runs past the end of the file")
        yield i, data[j : j + n]
        i = j + n


def no_unknown_fields(msg, where):
    if len(unknown_fields.UnknownFieldSet(msg)):
        raise Broken(f"{where}: {type(msg).__name__} has fields the protos do not know")
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        values = value if field.is_repeated else [value]
        for v in values:
            no_unknown_fields(v, where)


class Sequence:
    def __init__(self):
        self.valid = False
        self.clears = 0
        self.interned = {}
        self.counts = {"names": 0, "categories": 0, "annotation_names": 0}

    def clear(self):
        self.valid = True
        self.clears += 1
        self.interned = {"names": {}, "categories": {}, "annotation_names": {}}

    def intern(self, kind, entries, where):
        table = self.interned[kind]
        for e in entries:
            if e.iid in table:
                raise Broken(f"{where}: interned {kind} id {e.iid} defined twice since the last clear")
            if not e.iid:
                raise Broken(f"{where}: interned {kind} with id 0")
            table[e.iid] = e.name
            self.counts[kind] += 1

    def lookup(self, kind, iid, where):
        if iid not in self.interned[kind]:
            raise Broken(f"{where}: interned {kind} id {iid} is not in the sequence's state")
        return self.interned[kind][iid]


def annotation_value(a, seq, where):
    kind = a.WhichOneof("value")
    if a.array_values:
        if kind is not None:
            raise Broken(f"{where}: an annotation with both a value and array values")
        return [annotation_value(v, seq, where) for v in a.array_values]
    if kind is None:
        raise Broken(f"{where}: an annotation without a value")
    if kind == "string_value_iid":
        raise Broken(f"{where}: interned string values are not expected")
    return getattr(a, kind)


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    trace = Trace.FromString(data)
    raw = list(frames(data))
    if len(raw) != len(trace.packet):
        raise Broken(f"{len(raw)} frames, but the Trace parses as {len(trace.packet)} packets")

    sequences = {}
    tracks = {}
    track_order = []
    clocks = []
    events = []  # (ts, index, track, begin?, name, category, args, flow_ids, terminating)
    for index, (offset, blob) in enumerate(raw):
        where = f"packet {index} (byte {offset})"
        p = TracePacket.FromString(blob)
        if p.SerializeToString() != blob:
            raise Broken(f"{where}: does not re-serialise to its bytes (not canonical protobuf)")
        if p != trace.packet[index]:
            raise Broken(f"{where}: differs from the Trace's packet {index}")
        no_unknown_fields(p, where)
        if not p.HasField("trusted_packet_sequence_id") or p.trusted_packet_sequence_id == 0:
            raise Broken(f"{where}: no trusted_packet_sequence_id")
        seq = sequences.setdefault(p.trusted_packet_sequence_id, Sequence())
        flags = p.sequence_flags
        if flags & SEQ_INCREMENTAL_STATE_CLEARED or p.incremental_state_cleared:
            seq.clear()
        if flags & SEQ_NEEDS_INCREMENTAL_STATE and not seq.valid:
            raise Broken(f"{where}: SEQ_NEEDS_INCREMENTAL_STATE before the sequence's state was cleared (skipped by the trace processor)")
        if p.HasField("interned_data"):
            if not seq.valid:
                raise Broken(f"{where}: interned data before the sequence's state was cleared (ignored by the trace processor)")
            d = p.interned_data
            seq.intern("categories", d.event_categories, where)
            seq.intern("names", d.event_names, where)
            seq.intern("annotation_names", d.debug_annotation_names, where)
        data = p.WhichOneof("data")
        if data == "clock_snapshot":
            clocks.append({str(c.clock_id): c.timestamp for c in p.clock_snapshot.clocks})
        elif data == "track_descriptor":
            t = p.track_descriptor
            if not t.uuid:
                raise Broken(f"{where}: a track descriptor without a uuid")
            if t.uuid in tracks:
                raise Broken(f"{where}: track {t.uuid} declared twice")
            if t.HasField("parent_uuid") and t.parent_uuid not in tracks:
                raise Broken(f"{where}: track {t.uuid}'s parent {t.parent_uuid} is not declared before it")
            track = {"uuid": t.uuid, "name": t.name if t.HasField("name") else None,
                     "parent": t.parent_uuid if t.HasField("parent_uuid") else None,
                     "pid": None, "tid": None, "process_name": None, "cmdline": None}
            if t.HasField("process"):
                track["pid"] = t.process.pid
                track["cmdline"] = list(t.process.cmdline)
                track["process_name"] = t.process.process_name if t.process.HasField("process_name") else None
            if t.HasField("thread"):
                track["pid"] = t.thread.pid
                track["tid"] = t.thread.tid
            tracks[t.uuid] = track
            track_order.append(t.uuid)
        elif data == "track_event":
            e = p.track_event
            if not p.HasField("timestamp"):
                raise Broken(f"{where}: a track event without a timestamp")
            if e.track_uuid not in tracks:
                raise Broken(f"{where}: an event on track {e.track_uuid}, not declared before it")
            interned = e.HasField("name_iid") or len(e.category_iids) or any(a.HasField("name_iid") for a in e.debug_annotations)
            if interned and not flags & SEQ_NEEDS_INCREMENTAL_STATE:
                raise Broken(f"{where}: refers to interned data without SEQ_NEEDS_INCREMENTAL_STATE")
            if e.type == TrackEvent.TYPE_SLICE_BEGIN:
                name = seq.lookup("names", e.name_iid, where) if e.HasField("name_iid") else e.name
                cats = [seq.lookup("categories", c, where) for c in e.category_iids] + list(e.categories)
                if len(cats) != 1:
                    raise Broken(f"{where}: {len(cats)} categories, one expected")
                args = {}
                for a in e.debug_annotations:
                    key = seq.lookup("annotation_names", a.name_iid, where) if a.HasField("name_iid") else a.name
                    if key in args:
                        raise Broken(f"{where}: argument {key} twice")
                    args[key] = annotation_value(a, seq, where)
                events.append((p.timestamp, index, e.track_uuid, True, name, cats[0], args,
                               list(e.flow_ids), list(e.terminating_flow_ids)))
            elif e.type == TrackEvent.TYPE_SLICE_END:
                if e.HasField("name_iid") or e.HasField("name") or e.debug_annotations:
                    raise Broken(f"{where}: an end event with a name or arguments")
                events.append((p.timestamp, index, e.track_uuid, False, None, None, None,
                               list(e.flow_ids), list(e.terminating_flow_ids)))
            else:
                raise Broken(f"{where}: a track event of type {e.type}, not a slice begin or end")
        else:
            raise Broken(f"{where}: a packet holding {data}")

    # The trace processor's view: events sorted by timestamp, ties in file order.
    events.sort(key=lambda e: (e[0], e[1]))
    slices = []
    open_slices = {}
    flows = []
    active = {}
    for ts, index, track, begin, name, cat, args, flow_ids, terminating in events:
        stack = open_slices.setdefault(track, [])
        if begin:
            slice_index = len(slices)
            slices.append({"track": track, "name": name, "category": cat, "ts": ts,
                           "dur": None, "depth": len(stack), "args": args})
            stack.append(slice_index)
        else:
            if not stack:
                raise Broken(f"packet {index}: an end event on track {track} with no slice open")
            slice_index = stack.pop()
            slices[slice_index]["dur"] = ts - slices[slice_index]["ts"]
        for f in flow_ids:
            if f in active:
                flows.append([active[f], slice_index])
            active[f] = slice_index
        for f in terminating:
            if f not in active:
                raise Broken(f"packet {index}: terminating flow {f:#x} is not active")
            flows.append([active.pop(f), slice_index])
    for track, stack in open_slices.items():
        if stack:
            raise Broken(f"track {track}: {len(stack)} slices never end")

    return {
        "packets": len(raw),
        "clock_snapshots": clocks,
        "sequences": {str(k): {"clears": s.clears, "interned": s.counts} for k, s in sequences.items()},
        "tracks": [tracks[u] for u in track_order],
        "slices": slices,
        "flows": flows,
    }


def main(argv):
    if len(argv) != 2:
        print("usage: read_trace.py TRACE", file=sys.stderr)
        return 2
    try:
        out = read(argv[1])
    except Broken as e:
        print(f"read_trace.py: {argv[1]}: {e}", file=sys.stderr)
        return 1
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
