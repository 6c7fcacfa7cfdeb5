//! The calling thread's context stack, as `cuda.h` documents it: the current context
//! is the top of the stack; `cuCtxSetCurrent` replaces the top (or pops it for NULL),
//! `cuCtxPushCurrent` / `cuCtxPopCurrent` push and pop.

use std::cell::RefCell;

thread_local! {
    static STACK: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The current context's handle, if any (it may have been destroyed since).
pub(crate) fn current() -> Option<usize> {
    STACK.with(|s| s.borrow().last().copied())
}

pub(crate) fn push(ctx: usize) {
    STACK.with(|s| s.borrow_mut().push(ctx));
}

pub(crate) fn pop() -> Option<usize> {
    STACK.with(|s| s.borrow_mut().pop())
}

/// `cuCtxSetCurrent`: replace the top (push onto an empty stack); `None` pops.
pub(crate) fn set(ctx: Option<usize>) {
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        match ctx {
            Some(c) => match s.last_mut() {
                Some(top) => *top = c,
                None => s.push(c),
            },
            None => {
                s.pop();
            }
        }
    });
}

/// Removes `ctx` from the top of this thread's stack if it is current there
/// (`cuCtxDestroy` of the current context pops it).
pub(crate) fn pop_if_current(ctx: usize) {
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        if s.last() == Some(&ctx) {
            s.pop();
        }
    });
}
