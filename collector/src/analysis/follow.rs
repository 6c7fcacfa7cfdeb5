//! A session analysed while it is written: `gpuprof record` prints the session's
//! report when the program ends, which used to read every part then (for a long run,
//! as long as the drain itself took). A [`Follower`] folds each part into the
//! report's aggregate once it is sealed, on a thread that runs only when a CPU is
//! idle (`SCHED_IDLE`: it never takes time from the profiled program or the drain),
//! so at the end only the parts it has not reached are read.
//!
//! The result is the analysis [`super::session::analyse`] makes of the finished
//! session, exactly: the same parts folded in the same order into the same
//! aggregate. Parts are read only once sealed and listed by the session's index, and
//! a sealed part is never written again; at the end the finished session's parts
//! are checked to begin with those folded (else it is read again from its start),
//! and its own damage, losses and unsealed parts are taken from it, as `analyse`
//! takes them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use super::aggregate::Aggregator;
use super::session::{analyse, Analysed, Folded};
use crate::store::Store;

/// How often the session is looked at for newly sealed parts.
const LOOK_EVERY: Duration = Duration::from_millis(500);
/// How long the end waits for the thread to finish the part it is folding. The thread
/// runs only on idle CPUs: where other processes keep every CPU busy after the
/// program's end, the session is read again whole, at the normal priority, instead.
const FINISH_WAIT: Duration = Duration::from_secs(2);

/// What the following thread has folded: the aggregate and the parts' paths, in order.
struct Followed {
    folded: Folded,
    paths: Vec<PathBuf>,
}

/// A thread folding a session's sealed parts as they appear.
pub struct Follower {
    dir: PathBuf,
    /// Set to stop the thread after the part it is folding.
    stop: Arc<AtomicBool>,
    /// Dropped to wake the thread when it waits.
    wake: Option<Sender<()>>,
    /// The thread's answer, sent when it stops.
    answer: Receiver<Result<Followed>>,
    /// Parts folded by the thread so far (the tests wait on it).
    #[cfg_attr(not(test), allow(dead_code))]
    folded: Arc<AtomicUsize>,
}

impl Follower {
    /// Follows the session in `dir` (being written). A thread that cannot be started
    /// leaves the analysis to [`Follower::finish`].
    pub fn start(dir: PathBuf) -> Follower {
        Follower::looking_every(dir, LOOK_EVERY, true)
    }

    /// [`Follower::start`], looking at the session every `every`, the thread at the
    /// idle priority if `idle`.
    fn looking_every(dir: PathBuf, every: Duration, idle: bool) -> Follower {
        let (wake, woken) = mpsc::channel::<()>();
        let (answer_to, answer) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let folded = Arc::new(AtomicUsize::new(0));
        let (follow_dir, count, stopping) = (dir.clone(), folded.clone(), stop.clone());
        // Never joined: its answer comes through `answer` (a thread that could not be
        // started drops the sender, so the end reads the session whole).
        let _ = std::thread::Builder::new()
            .name("gpuprof-follow".into())
            .spawn(move || {
                if idle {
                    run_when_idle();
                }
                let _ = answer_to.send(follow(&follow_dir, every, &woken, &stopping, &count));
            });
        Follower {
            dir,
            stop,
            wake: Some(wake),
            answer,
            folded,
        }
    }

    /// The analysis of the finished session: what was folded while it was written,
    /// and the rest.
    pub fn finish(self) -> Result<Analysed> {
        self.finish_counting().map(|(analysed, _)| analysed)
    }

    /// [`Follower::finish`], and how many parts had been folded before it.
    fn finish_counting(mut self) -> Result<(Analysed, usize)> {
        self.stop.store(true, Ordering::Release);
        self.wake = None;
        let whole = |dir: &PathBuf| analyse(dir, |_, _| {}).map(|a| (a, 0));
        let followed = match self.answer.recv_timeout(FINISH_WAIT) {
            Ok(Ok(followed)) => followed,
            // No thread, one that stopped on an error, or one still folding after the
            // wait (left to end on its own: it stops after its part and only reads):
            // the session is read whole.
            _ => return whole(&self.dir),
        };
        let store = Store::open(&self.dir)?;
        if !followed.begins(&store) {
            return whole(&self.dir);
        }
        let Followed { mut folded, paths } = followed;
        let stores = [store];
        folded.fold(&stores, paths.len(), &mut |_| true)?;
        Ok((folded.conclude(&stores), paths.len()))
    }
}

/// The thread's work: every `every`, the parts sealed since folded in, until `stop`.
fn follow(
    dir: &Path,
    every: Duration,
    woken: &Receiver<()>,
    stop: &AtomicBool,
    count: &AtomicUsize,
) -> Result<Followed> {
    let mut followed = Followed {
        folded: Folded::new(Aggregator::default()),
        paths: Vec::new(),
    };
    loop {
        match woken.recv_timeout(every) {
            Err(RecvTimeoutError::Timeout) if !stop.load(Ordering::Acquire) => {}
            _ => return Ok(followed),
        }
        // A session not readable now (its index being replaced) is looked at again
        // next time.
        let Ok(store) = Store::open(dir) else {
            continue;
        };
        followed.fold_new(store, stop)?;
        count.store(followed.paths.len(), Ordering::Release);
    }
}

impl Followed {
    /// Whether the parts folded are the first parts of `store`.
    fn begins(&self, store: &Store) -> bool {
        store.parts.len() >= self.paths.len()
            && store
                .parts
                .iter()
                .zip(&self.paths)
                .all(|((_, p), q)| p == q)
    }

    /// Folds the parts of `store` not folded yet, if those folded are still its first,
    /// stopping after the part being folded when `stop` is set.
    fn fold_new(&mut self, store: Store, stop: &AtomicBool) -> Result<()> {
        let from = self.paths.len();
        // Nothing new, or not the session it was (never for a session only appended
        // to): left to the end.
        if store.parts.len() <= from || !self.begins(&store) {
            return Ok(());
        }
        let before = self.folded.parts;
        let stores = [store];
        self.folded
            .fold(&stores, from, &mut |_| !stop.load(Ordering::Acquire))?;
        let [store] = stores;
        let now = self.folded.parts - before;
        self.paths
            .extend(store.parts.into_iter().skip(from).take(now).map(|(_, p)| p));
        Ok(())
    }
}

impl Drop for Follower {
    /// Unfinished (`record` ending on an error): the thread is told to stop and left
    /// to end on its own, never waited for (at the idle priority it may wait long for
    /// a CPU; it only reads, and ends with the process).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.wake = None;
    }
}

/// Makes the calling thread run only when a CPU would otherwise be idle.
fn run_when_idle() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread. A refusal
    // leaves the thread at its normal priority, which is only slower for the program.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use wire::testing::{k, launch, process, string};
    use wire::Record;

    use super::*;
    use crate::store::writer::StoreWriter;
    use crate::store::PartLimits;

    /// Part `p`'s records: launches of 50 kernels, each kernel in the next part (so
    /// the join spans parts), the first part also the process and the kernel names.
    fn part(p: u32) -> Vec<Record> {
        let mut records = if p == 0 {
            vec![process(1, "serve"), string(1, "gemm"), string(2, "norm")]
        } else {
            Vec::new()
        };
        for i in 0..50 {
            let corr = p * 50 + i + 1;
            let t = u64::from(corr) * 1_000;
            records.push(launch(corr, 7, t, t + 100));
            if p > 0 {
                let earlier = corr - 50;
                let t = u64::from(earlier) * 1_000;
                let ns = 300 + u64::from(earlier % 7) * 40;
                records.push(k(1 + earlier % 2, earlier, t + 200, t + 200 + ns));
            }
        }
        records
    }

    /// A session being written in a new directory named after `name`, sealed only
    /// when told.
    fn session(name: &str) -> (PathBuf, StoreWriter) {
        let dir = std::env::temp_dir().join(format!("gpuprof-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let limits = PartLimits {
            rows: 1 << 20,
            age: Duration::from_secs(3600),
        };
        let writer = StoreWriter::create(&dir, limits).unwrap();
        (dir, writer)
    }

    fn wait_for(follower: &Follower, parts: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while follower.folded.load(Ordering::Acquire) < parts {
            assert!(
                Instant::now() < deadline,
                "the follower never folded {parts} parts"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_session_followed_as_written_is_analysed_as_when_read_after() {
        let (dir, mut writer) = session("follow");
        let follower = Follower::looking_every(dir.clone(), Duration::from_millis(2), false);
        for p in 0..4 {
            writer.push_all(1, &part(p));
            writer.seal().unwrap();
            wait_for(&follower, p as usize + 1);
        }
        // The last part is read at the end.
        writer.push_all(1, &part(4));
        writer.seal().unwrap();
        writer.finish().unwrap();
        let (followed, before_end) = follower.finish_counting().unwrap();
        let after = analyse(&dir, |_, _| {}).unwrap();
        // The four waited for, and the last if the thread saw it before the end.
        assert!(matches!(before_end, 4 | 5), "{before_end}");
        assert_eq!((followed.parts, after.parts), (5, 5));
        let (f, a) = (&followed.aggregate, &after.aggregate);
        assert_eq!((f.kernel_count, f.kernel_ns), (200, a.kernel_ns));
        assert_eq!(a.kernel_count, 200);
        assert_eq!(f.classes.list, a.classes.list);
        assert_eq!(f.classes.list.len(), 2);
        assert_eq!(
            format!("{:?}", followed.integrity),
            format!("{:?}", after.integrity)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_stop_ends_the_folding_after_the_part_being_folded() {
        let (dir, mut writer) = session("stopfollow");
        for p in 0..4 {
            writer.push_all(1, &part(p));
            writer.seal().unwrap();
        }
        writer.finish().unwrap();
        let mut followed = Followed {
            folded: Folded::new(Aggregator::default()),
            paths: Vec::new(),
        };
        followed
            .fold_new(Store::open(&dir).unwrap(), &AtomicBool::new(true))
            .unwrap();
        assert_eq!((followed.paths.len(), followed.folded.parts), (1, 1));
        followed
            .fold_new(Store::open(&dir).unwrap(), &AtomicBool::new(false))
            .unwrap();
        assert_eq!((followed.paths.len(), followed.folded.parts), (4, 4));
        let store = Store::open(&dir).unwrap();
        let listed: Vec<PathBuf> = store.parts.iter().map(|(_, p)| p.clone()).collect();
        assert_eq!(followed.paths, listed);
        let stores = [store];
        let folded = followed.folded.conclude(&stores);
        let after = analyse(&dir, |_, _| {}).unwrap();
        assert_eq!(folded.aggregate.kernel_count, 150);
        assert_eq!(folded.aggregate.classes.list, after.aggregate.classes.list);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parts_not_those_folded_are_read_again_from_the_start() {
        let (dir, mut writer) = session("refollow");
        let follower = Follower::looking_every(dir.clone(), Duration::from_millis(2), false);
        for p in 0..2 {
            writer.push_all(1, &part(p));
            writer.seal().unwrap();
        }
        wait_for(&follower, 2);
        writer.push_all(1, &part(2));
        writer.seal().unwrap();
        writer.finish().unwrap();
        // Another part where the first was: not what was folded.
        let parts = dir.join("parts");
        let mut names: Vec<_> = std::fs::read_dir(&parts)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        std::fs::rename(&names[0], parts.join("moved-away")).unwrap();
        let (followed, before_end) = follower.finish_counting().unwrap();
        let after = analyse(&dir, |_, _| {}).unwrap();
        assert_eq!(before_end, 0, "read again from the start");
        assert_eq!(
            followed.aggregate.kernel_count,
            after.aggregate.kernel_count
        );
        assert_eq!(
            followed.aggregate.classes.list,
            after.aggregate.classes.list
        );
        assert_eq!(
            format!("{:?}", followed.integrity),
            format!("{:?}", after.integrity)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
