//! The profiler's state in the host process: one atom, with a permanent "disabled"
//! state that every hook checks before doing anything. Start-up (`startup.rs`) moves
//! it from `Idle`; anything may turn it off.

use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    /// Nothing has happened yet.
    Idle = 0,
    /// Start-up is in progress on some thread.
    Starting = 1,
    /// CUPTI is loaded and the profiler is active.
    Running = 2,
    /// Turned off, for good: by configuration or after a failure (already reported).
    Disabled = 3,
}

impl State {
    fn from_u8(v: u8) -> State {
        match v {
            0 => State::Idle,
            1 => State::Starting,
            2 => State::Running,
            _ => State::Disabled,
        }
    }
}

static STATE: AtomicU8 = AtomicU8::new(State::Idle as u8);

/// The current state.
pub fn state() -> State {
    State::from_u8(STATE.load(Ordering::Acquire))
}

/// Turns the profiler off for good, whatever it was doing. Idempotent.
pub fn disable() {
    STATE.store(State::Disabled as u8, Ordering::Release);
}

/// Moves `Idle` to `Starting`: true for the one caller that gets to start.
pub(crate) fn claim_start() -> bool {
    STATE
        .compare_exchange(
            State::Idle as u8,
            State::Starting as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok()
}

/// Ends start-up in `next` (a `disable()` that raced with start-up wins) and returns
/// the state reached.
pub(crate) fn end_start(next: State) -> State {
    let _ = STATE.compare_exchange(
        State::Starting as u8,
        next as u8,
        Ordering::AcqRel,
        Ordering::Acquire,
    );
    state()
}
