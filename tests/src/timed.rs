//! Spawned programs with a hard time limit, killed if the test lets go of them.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A running program; killed and reaped on drop.
pub struct TimedChild {
    child: Option<Child>,
    deadline: Instant,
    what: String,
}

/// What a finished program printed.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl TimedChild {
    /// Spawns `cmd` with piped stdout and stderr; `limit` counts from now.
    pub fn spawn(mut cmd: Command, limit: Duration) -> TimedChild {
        let what = format!("{cmd:?}");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {what}: {e}"));
        TimedChild {
            child: Some(child),
            deadline: Instant::now() + limit,
            what,
        }
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().expect("child").id()
    }

    /// Whether it has exited (non-blocking).
    pub fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_some())
    }

    /// Waits for the exit; panics (after killing it) when the limit passes, with what
    /// it printed until then.
    pub fn wait(self) -> Finished {
        self.finish(false)
    }

    /// Kills it now (if it still runs) and returns what it printed; `status` is the
    /// kill's (or its own exit's, if it had already exited).
    pub fn kill(self) -> Finished {
        self.finish(true)
    }

    fn finish(mut self, kill_now: bool) -> Finished {
        let mut child = self.child.take().expect("child");
        let out = child.stdout.take().expect("stdout");
        let err = child.stderr.take().expect("stderr");
        // Readers send what they read; a grandchild holding a pipe open must not keep
        // a timed-out test from reporting, so they are waited for at most a while then.
        let reader = |mut pipe: Box<dyn Read + Send>| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut s = Vec::new();
                let _ = pipe.read_to_end(&mut s);
                let _ = tx.send(s);
            });
            rx
        };
        let r_out = reader(Box::new(out));
        let r_err = reader(Box::new(err));
        let (mut timed_out, mut killed) = (false, false);
        let status = loop {
            if let Some(s) = child.try_wait().expect("try_wait") {
                break s;
            }
            if kill_now || Instant::now() >= self.deadline {
                timed_out = !kill_now;
                killed = true;
                let _ = child.kill();
                break child.wait().expect("wait for the killed child");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let text = |rx: std::sync::mpsc::Receiver<Vec<u8>>| {
            let b = if killed {
                rx.recv_timeout(Duration::from_secs(2)).unwrap_or_default()
            } else {
                rx.recv().expect("pipe reader")
            };
            String::from_utf8_lossy(&b).into_owned()
        };
        let stdout = text(r_out);
        let stderr = text(r_err);
        assert!(
            !timed_out,
            "{} did not finish in time; killed\nstdout:\n{stdout}\nstderr:\n{stderr}",
            self.what
        );
        Finished {
            status,
            stdout,
            stderr,
        }
    }
}

impl Drop for TimedChild {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
