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

    /// Whether it has exited (non-blocking).
    pub fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_some())
    }

    /// Waits for the exit; panics (after killing it) when the limit passes.
    pub fn wait(mut self) -> Finished {
        let mut child = self.child.take().expect("child");
        let mut out = child.stdout.take().expect("stdout");
        let mut err = child.stderr.take().expect("stderr");
        let t_out = std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = out.read_to_end(&mut s);
            s
        });
        let t_err = std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = err.read_to_end(&mut s);
            s
        });
        let status = loop {
            if let Some(s) = child.try_wait().expect("try_wait") {
                break s;
            }
            if Instant::now() >= self.deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{} did not finish in time; killed", self.what);
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        Finished {
            status,
            stdout: text(t_out.join().expect("stdout reader")),
            stderr: text(t_err.join().expect("stderr reader")),
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
