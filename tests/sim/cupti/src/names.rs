//! CUPTI-owned strings: kernel names interned for the life of the process ("This name
//! is shared across all activity records representing the same kernel").

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::sync::Mutex;

static NAMES: Mutex<Option<HashMap<CString, &'static CStr>>> = Mutex::new(None);

/// The interned copy of the NUL-terminated `name` (null stays null). The returned
/// pointer stays valid until the process exits.
///
/// # Safety
/// `name` is null or a valid NUL-terminated string.
pub unsafe fn intern(name: *const c_char) -> *const c_char {
    if name.is_null() {
        return std::ptr::null();
    }
    // SAFETY: the caller promises a valid C string.
    let s = unsafe { CStr::from_ptr(name) };
    intern_cstr(s).as_ptr()
}

/// The interned copy of `s`.
pub fn intern_cstr(s: &CStr) -> &'static CStr {
    let mut map = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let map = map.get_or_insert_with(HashMap::new);
    if let Some(v) = map.get(s) {
        return v;
    }
    let leaked: &'static CStr = Box::leak(s.to_owned().into_boxed_c_str());
    map.insert(s.to_owned(), leaked);
    leaked
}
