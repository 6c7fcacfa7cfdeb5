//! The objects the profiling APIs hand out by handle (PM samplers, range profilers):
//! one list per kind, behind a lock, each object found by its non-zero handle.

use std::sync::{Mutex, MutexGuard};

use cupti_sys::CUptiResult::{self, *};

type R = CUptiResult::Type;

/// An object of a [`Registry`]: its handle, from [`crate::profiling::new_handle`].
pub trait Handled {
    fn handle(&self) -> usize;
}

pub struct Registry<T>(Mutex<Vec<T>>);

impl<T: Handled> Default for Registry<T> {
    fn default() -> Registry<T> {
        Registry::new()
    }
}

impl<T: Handled> Registry<T> {
    pub const fn new() -> Registry<T> {
        Registry(Mutex::new(Vec::new()))
    }

    /// Every object, locked (a panic elsewhere does not poison the list).
    pub fn lock(&self) -> MutexGuard<'_, Vec<T>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the object `handle`, or answers `missing`.
    pub fn with<X>(
        &self,
        handle: usize,
        missing: R,
        f: impl FnOnce(&mut T) -> Result<X, R>,
    ) -> Result<X, R> {
        let mut all = self.lock();
        match all.iter_mut().find(|p| p.handle() == handle && handle != 0) {
            Some(p) => f(p),
            None => Err(missing),
        }
    }

    /// A new object, `make(handle)`; `CUPTI_ERROR_INVALID_OPERATION` if an object
    /// `taken` says holds the same device or context already exists.
    pub fn add(
        &self,
        taken: impl Fn(&T) -> bool,
        make: impl FnOnce(usize) -> T,
    ) -> Result<usize, R> {
        let mut all = self.lock();
        if all.iter().any(taken) {
            return Err(CUPTI_ERROR_INVALID_OPERATION);
        }
        let handle = crate::profiling::new_handle();
        all.push(make(handle));
        Ok(handle)
    }

    /// Takes the object `handle` out, with the list still locked;
    /// `CUPTI_ERROR_INVALID_PARAMETER` if there is none.
    pub fn remove(&self, handle: usize) -> Result<(T, MutexGuard<'_, Vec<T>>), R> {
        let mut all = self.lock();
        let i = all
            .iter()
            .position(|p| p.handle() == handle && handle != 0)
            .ok_or(CUPTI_ERROR_INVALID_PARAMETER)?;
        let p = all.remove(i);
        Ok((p, all))
    }
}
