//! NVTX ranges followed as the session streams: which range names cover each kernel,
//! by the rules of [`super::nvtx`], without holding the session's kernels.
//!
//! Markers pair into range instances as they arrive. A kernel, when finalized
//! ([`super::join`]), asks which instances cover it: push/pop instances of the thread
//! that launched it around its launch time, start/end instances of its process around
//! its GPU start time. Per range name it counts once:
//! - when an instance of that name covering it is already closed, it is added to the
//!   name's totals at once;
//! - otherwise it waits in the innermost (latest started) open instance of that name
//!   covering it, and is added when that instance closes, or when an enclosing
//!   instance of the same name closes first; a kernel whose covering instances of a
//!   name never close counts for none (an open range covers no kernels).
//!
//! What a kernel adds is a [`Tally`] under its class, so a range's totals are per
//! class: the roofline rolls them up like any other launches. Closed instances are
//! kept only while kernels they cover may still be finalized (two join windows);
//! open ones until they close.

use std::collections::BTreeMap;

use ahash::AHashMap;

use wire::{marker_flags, Marker};

use super::classes::Tally;
use super::nvtx::RangeKind;

/// A range name: (domain, message); empty strings for none.
pub type RangeName = (String, String);

/// How a range name is shown: "domain: name", or the name alone without a domain.
pub fn range_label(domain: &str, name: &str) -> String {
    if domain.is_empty() {
        name.to_string()
    } else {
        format!("{domain}: {name}")
    }
}

/// The totals of one range name.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct NameTotals {
    /// Closed instances, and their summed duration.
    pub count: u64,
    pub wall_ns: u64,
    /// The kernels covered, per class.
    pub classes: BTreeMap<usize, Tally>,
    /// Instances given up while still open (see [`MAX_OPEN`]): open for good.
    pub given_up: u64,
}

/// The most instances one scope (a thread, or a process's start/end ranges) keeps
/// open. A program that starts ranges it never ends would otherwise grow them
/// without bound; beyond this the oldest open one is given up: counted as never
/// closed (it covers nothing), its end, if it ever comes, an unmatched end.
pub const MAX_OPEN: usize = 4096;

#[derive(Debug)]
struct Instance {
    name: usize,
    kind: RangeKind,
    /// (pid, thread) of a push/pop instance, (pid, 0) of a start/end one.
    scope: (u32, u64),
    start_ns: u64,
    end_ns: Option<u64>,
    /// For push/pop: the innermost instance of the thread open when this one started.
    parent: Option<u64>,
    /// The part its end came in.
    closed_in: usize,
    /// Kernels waiting for it to close (see the module documentation).
    pending: BTreeMap<usize, Tally>,
}

/// What covers one kernel under one range name: (name, whether a closed instance
/// does, the innermost open instance as (start, id)).
type NameCover = (usize, bool, Option<(u64, u64)>);

/// The tracker (see the module documentation).
#[derive(Debug, Default)]
pub struct RangeCover {
    pub names: Vec<RangeName>,
    name_index: AHashMap<RangeName, usize>,
    /// Per name, in `names` order.
    pub totals: Vec<NameTotals>,
    instances: AHashMap<u64, Instance>,
    next: u64,
    /// Open instances by (pid, marker id).
    open: AHashMap<(u32, u32), u64>,
    /// Instances per (pid, thread; 0 for start/end ranges), (start, id) in order of
    /// start.
    scopes: AHashMap<(u32, u64), Vec<(u64, u64)>>,
    /// Open instances per scope, in order of start (for a thread: innermost last).
    stacks: AHashMap<(u32, u64), Vec<u64>>,
    /// Ends whose start was never seen.
    pub unmatched_ends: u64,
    /// The names covering the kernel being summed ([`RangeCover::cover`]), kept from
    /// kernel to kernel rather than allocated for each.
    covered: Vec<NameCover>,
}

impl RangeCover {
    /// A marker of `pid`, in session order; `name` and `domain` resolved.
    pub fn marker(&mut self, pid: u32, m: &Marker, name: &str, domain: &str, part: usize) {
        if m.flags & marker_flags::START != 0 {
            let key = (domain.to_string(), name.to_string());
            let n = match self.name_index.get(&key) {
                Some(&n) => n,
                None => {
                    self.names.push(key.clone());
                    self.totals.push(NameTotals::default());
                    self.name_index.insert(key, self.names.len() - 1);
                    self.names.len() - 1
                }
            };
            let (kind, scope) = if m.thread_id != 0 {
                (RangeKind::PushPop, (pid, m.thread_id))
            } else {
                (RangeKind::StartEnd, (pid, 0))
            };
            let id = self.next;
            self.next += 1;
            let stack = self.stacks.entry(scope).or_default();
            let parent = match kind {
                RangeKind::PushPop => stack.last().copied(),
                RangeKind::StartEnd => None,
            };
            stack.push(id);
            self.instances.insert(
                id,
                Instance {
                    name: n,
                    kind,
                    scope,
                    start_ns: m.timestamp_ns,
                    end_ns: None,
                    parent,
                    closed_in: 0,
                    pending: BTreeMap::new(),
                },
            );
            let list = self.scopes.entry(scope).or_default();
            // In order of start: markers of one scope come (nearly) in time order.
            let at = list.partition_point(|(start, _)| *start <= m.timestamp_ns);
            list.insert(at, (m.timestamp_ns, id));
            // A second start under an open id leaves the first open for good.
            self.open.insert((pid, m.id), id);
            if self
                .stacks
                .get(&scope)
                .is_some_and(|st| st.len() > MAX_OPEN)
            {
                self.give_up(scope);
            }
        } else if m.flags & marker_flags::END != 0 {
            match self.open.remove(&(pid, m.id)) {
                Some(id) => self.close(id, m.timestamp_ns, part),
                None => self.unmatched_ends += 1,
            }
        }
    }

    /// Gives up the oldest open instance of `scope` (see [`MAX_OPEN`]).
    fn give_up(&mut self, scope: (u32, u64)) {
        let Some(stack) = self.stacks.get_mut(&scope) else {
            return;
        };
        let id = stack.remove(0);
        if let Some(inst) = self.instances.remove(&id) {
            self.totals[inst.name].given_up += 1;
        }
        self.open.retain(|_, open| *open != id);
        if let Some(list) = self.scopes.get_mut(&scope) {
            list.retain(|(_, i)| *i != id);
        }
    }

    fn close(&mut self, id: u64, end_ns: u64, part: usize) {
        let Some(inst) = self.instances.get_mut(&id) else {
            return;
        };
        inst.end_ns = Some(end_ns);
        inst.closed_in = part;
        let (name, start, scope) = (inst.name, inst.start_ns, inst.scope);
        let mut pending = std::mem::take(&mut inst.pending);
        let t = &mut self.totals[name];
        t.count += 1;
        t.wall_ns = t.wall_ns.saturating_add(end_ns.saturating_sub(start));
        if let Some(stack) = self.stacks.get_mut(&scope) {
            stack.retain(|i| *i != id);
            // Kernels waiting in open instances of the same name that started inside
            // this one are covered by it: count them now.
            for other in stack.iter() {
                if let Some(o) = self.instances.get_mut(other) {
                    if o.name == name && o.start_ns >= start {
                        for (c, tally) in std::mem::take(&mut o.pending) {
                            pending.entry(c).or_default().merge(&tally);
                        }
                    }
                }
            }
        }
        let t = &mut self.totals[name];
        for (c, tally) in pending {
            t.classes.entry(c).or_default().merge(&tally);
        }
    }

    /// Adds one finalized kernel of class `class` (its duration `ns`, DRAM bytes
    /// `bytes`) to the names covering it: push/pop ranges of its launching thread at
    /// its launch time `launch`, start/end ranges of its process at its GPU start.
    pub fn cover(
        &mut self,
        pid: u32,
        launch: Option<(u64, u64)>,
        gpu_start_ns: u64,
        class: usize,
        ns: u64,
        bytes: Option<f64>,
    ) {
        if self.scopes.is_empty() {
            return;
        }
        // A kernel is inside a few ranges at most.
        let mut by_name = std::mem::take(&mut self.covered);
        by_name.clear();
        self.covering(pid, launch, gpu_start_ns, |inst, id| {
            let e = match by_name.iter().position(|e| e.0 == inst.name) {
                Some(i) => &mut by_name[i],
                None => {
                    by_name.push((inst.name, false, None));
                    by_name.last_mut().expect("just pushed")
                }
            };
            let e = (&mut e.1, &mut e.2);
            if inst.end_ns.is_some() {
                *e.0 = true;
            } else if e.1.is_none_or(|(start, _)| inst.start_ns >= start) {
                *e.1 = Some((inst.start_ns, id));
            }
        });
        for &(name, closed, open) in &by_name {
            if closed {
                self.totals[name]
                    .classes
                    .entry(class)
                    .or_default()
                    .add(ns, bytes);
            } else if let Some((_, id)) = open {
                if let Some(inst) = self.instances.get_mut(&id) {
                    inst.pending.entry(class).or_default().add(ns, bytes);
                }
            }
        }
        self.covered = by_name;
    }

    /// Calls `f` with every instance known now that covers a kernel: the push/pop
    /// instances of its launching thread around its launch `launch` (thread, time),
    /// innermost first, then the start/end instances of its process around its GPU
    /// start, in order of start. An instance still open covers whatever came after
    /// its start.
    fn covering(
        &self,
        pid: u32,
        launch: Option<(u64, u64)>,
        gpu_start_ns: u64,
        mut f: impl FnMut(&Instance, u64),
    ) {
        let covers =
            |inst: &Instance, t: u64| inst.start_ns <= t && inst.end_ns.is_none_or(|e| t < e);
        if let Some((thread, t)) = launch {
            if let Some(list) = self.scopes.get(&(pid, thread)) {
                // The last instance started by `t`, then its enclosing ones.
                let at = list.partition_point(|(start, _)| *start <= t);
                let mut next = at.checked_sub(1).map(|i| list[i].1);
                while let Some(id) = next {
                    let Some(inst) = self.instances.get(&id) else {
                        break;
                    };
                    if covers(inst, t) {
                        f(inst, id);
                    }
                    next = inst.parent;
                }
            }
        }
        if let Some(list) = self.scopes.get(&(pid, 0)) {
            let at = list.partition_point(|(start, _)| *start <= gpu_start_ns);
            for (_, id) in &list[..at] {
                if let Some(inst) = self.instances.get(id) {
                    if inst.kind == RangeKind::StartEnd && covers(inst, gpu_start_ns) {
                        f(inst, *id);
                    }
                }
            }
        }
    }

    /// The names of the range instances enclosing a kernel (arguments as for
    /// [`RangeCover::cover`]), outermost first: the instances covering it, push/pop
    /// and start/end together, in order of start (an instance started earlier, or at
    /// the same time but before, encloses a later one). Unlike [`RangeCover::cover`],
    /// an instance still open when the kernel is finalized encloses it: this is where
    /// the kernel was launched, whether or not its range ever ends. Into `path`
    /// (cleared first), with `found` for the instances on the way: the caller keeps
    /// both from kernel to kernel rather than allocate two vectors for each.
    pub fn enclosing(
        &self,
        pid: u32,
        launch: Option<(u64, u64)>,
        gpu_start_ns: u64,
        found: &mut Vec<(u64, u64, usize)>,
        path: &mut Vec<usize>,
    ) {
        found.clear();
        self.covering(pid, launch, gpu_start_ns, |inst, id| {
            found.push((inst.start_ns, id, inst.name))
        });
        found.sort_unstable();
        path.clear();
        path.extend(found.iter().map(|&(_, _, name)| name));
    }

    /// The names of the instances [`RangeCover::enclosing`] gives, in no order and
    /// possibly repeated, into `out` (cleared first): for a caller that sums once per
    /// name and keeps `out` from call to call.
    pub fn enclosing_names(
        &self,
        pid: u32,
        launch: Option<(u64, u64)>,
        gpu_start_ns: u64,
        out: &mut Vec<usize>,
    ) {
        out.clear();
        self.covering(pid, launch, gpu_start_ns, |inst, _| out.push(inst.name));
    }

    /// Forgets closed instances whose kernels have all been finalized: those closed
    /// in a part for which `done(part)` holds.
    pub fn forget(&mut self, done: impl Fn(usize) -> bool) {
        let gone: Vec<u64> = self
            .instances
            .iter()
            .filter(|(_, i)| i.end_ns.is_some() && done(i.closed_in))
            .map(|(id, _)| *id)
            .collect();
        if gone.is_empty() {
            return;
        }
        // An instance forgotten passes its children to its own parent, so that a
        // kernel's walk up the enclosing instances goes on past it.
        let mut parent_of: AHashMap<u64, Option<u64>> = AHashMap::new();
        for id in &gone {
            if let Some(i) = self.instances.remove(id) {
                parent_of.insert(*id, i.parent);
            }
        }
        for inst in self.instances.values_mut() {
            while let Some(p) = inst.parent.and_then(|p| parent_of.get(&p)) {
                inst.parent = *p;
            }
        }
        for list in self.scopes.values_mut() {
            list.retain(|(_, i)| self.instances.contains_key(i));
        }
        self.scopes.retain(|_, l| !l.is_empty());
    }

    /// Instances never closed, per name.
    pub fn open_counts(&self) -> Vec<u64> {
        let mut out: Vec<u64> = self.totals.iter().map(|t| t.given_up).collect();
        for i in self.instances.values() {
            if i.end_ns.is_none() {
                out[i.name] += 1;
            }
        }
        out
    }
}
