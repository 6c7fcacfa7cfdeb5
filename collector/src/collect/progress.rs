//! What `gpuprof record` says while it runs and when it is done: the status line on a
//! terminal ([`Progress`], [`status`]) and the closing counts ([`describe`]).

use std::time::{Duration, Instant};

use crate::collect::drain::Counts;

/// The live status line of `gpuprof record` on stderr ([`status`]), redrawn in place
/// at most four times a second, only when stderr is a terminal, and erased at the end.
pub struct Progress {
    tty: bool,
    start: Instant,
    last: Option<Instant>,
    shown: bool,
}

impl Progress {
    /// Starts the clock the status line shows.
    pub fn start() -> Progress {
        use std::io::IsTerminal;
        Progress {
            tty: std::io::stderr().is_terminal(),
            start: Instant::now(),
            last: None,
            shown: false,
        }
    }

    pub fn update(&mut self, c: &Counts) {
        if !self.tty
            || self
                .last
                .is_some_and(|t| t.elapsed() < Duration::from_millis(250))
        {
            return;
        }
        self.last = Some(Instant::now());
        self.shown = true;
        eprint!("\r\x1b[Kgpuprof: {}", status(c, self.start.elapsed()));
    }

    /// Erases the line.
    pub fn clear(&mut self) {
        if self.shown {
            eprint!("\r\x1b[K");
            self.shown = false;
        }
    }
}

/// `12.3 s, 1 process, 12345 kernels (1003.7/s), 30000 records, 0 dropped, ring 3%
/// full` (the fullest ring, before it was last read).
pub fn status(c: &Counts, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        c.kernels as f64 / secs
    } else {
        0.0
    };
    format!(
        "{:.1} s, {}, {} record{}, {} dropped, ring {}% full",
        secs,
        kernels_of(c, rate),
        c.records,
        if c.records == 1 { "" } else { "s" },
        c.dropped,
        c.ring_fill_pct
    )
}

fn kernels_of(c: &Counts, rate: f64) -> String {
    format!(
        "{} process{}, {} kernel{} ({rate:.1}/s)",
        c.processes,
        if c.processes == 1 { "" } else { "es" },
        c.kernels,
        if c.kernels == 1 { "" } else { "s" },
    )
}

/// `3 processes, 12345 kernels, 0 dropped`.
pub fn describe(c: &Counts) -> String {
    format!(
        "{} process{}, {} kernel{}, {} dropped",
        c.processes,
        if c.processes == 1 { "" } else { "es" },
        c.kernels,
        if c.kernels == 1 { "" } else { "s" },
        c.dropped
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_says_time_rate_records_drops_and_ring_fill() {
        let c = Counts {
            processes: 2,
            kernels: 12_345,
            dropped: 7,
            records: 30_000,
            ring_fill_pct: 63,
        };
        // 12345 kernels in 12.3 s: 1003.66 a second.
        assert_eq!(
            status(&c, Duration::from_millis(12_300)),
            "12.3 s, 2 processes, 12345 kernels (1003.7/s), 30000 records, 7 dropped, \
             ring 63% full"
        );
        let one = Counts {
            processes: 1,
            kernels: 1,
            dropped: 0,
            records: 1,
            ring_fill_pct: 0,
        };
        assert_eq!(
            status(&one, Duration::ZERO),
            "0.0 s, 1 process, 1 kernel (0.0/s), 1 record, 0 dropped, ring 0% full"
        );
    }
}
