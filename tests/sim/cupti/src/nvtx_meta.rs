//! What `CUPTI_CB_DOMAIN_NVTX` callbacks carry: the callback ids of
//! `CUpti_nvtx_api_trace_cbid` (`cupti_nvtx_cbid.h`) and the parameter structs of
//! `generated_nvtx_meta.h` that `CUpti_NvtxData::functionParams` points to. Both
//! headers hold the same definitions in every release from 12.4 to 13.5; `cupti-sys`
//! does not bind them, so they are written out here with the headers' names and
//! layouts (checked below, and against the headers by the C client of
//! `tests/it/nvtx_callbacks.rs`).
//!
//! The header has no struct for `nvtxDomainCreateW`, `nvtxDomainNameCategoryA` and
//! `nvtxDomainNameCategoryW`: their callbacks carry the function's arguments in order
//! (`nvtxDomainCreateW_params`, `nvtxDomainNameCategoryA_params`,
//! `nvtxDomainNameCategoryW_params` below). `nvtxDomainRegisterStringW_params` declares
//! its `string` as `const char*` although the function takes a `wchar_t` string; the
//! sim passes the caller's pointer there, as declared.

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_void};

use crate::nvtx::EventAttributes;

/// `wchar_t` on Linux.
pub type wchar_t = i32;
/// `nvtxDomainHandle_t`, `nvtxStringHandle_t`: opaque pointers.
pub type nvtxDomainHandle_t = *const c_void;
/// `nvtxRangeId_t`.
pub type nvtxRangeId_t = u64;

/// `CUpti_nvtx_api_trace_cbid`.
pub mod cbid {
    pub const MARK_A: u32 = 1;
    pub const MARK_W: u32 = 2;
    pub const MARK_EX: u32 = 3;
    pub const RANGE_START_A: u32 = 4;
    pub const RANGE_START_W: u32 = 5;
    pub const RANGE_START_EX: u32 = 6;
    pub const RANGE_END: u32 = 7;
    pub const RANGE_PUSH_A: u32 = 8;
    pub const RANGE_PUSH_W: u32 = 9;
    pub const RANGE_PUSH_EX: u32 = 10;
    pub const RANGE_POP: u32 = 11;
    pub const NAME_CATEGORY_A: u32 = 12;
    pub const NAME_CATEGORY_W: u32 = 13;
    pub const NAME_OS_THREAD_A: u32 = 14;
    pub const NAME_OS_THREAD_W: u32 = 15;
    pub const DOMAIN_MARK_EX: u32 = 30;
    pub const DOMAIN_RANGE_START_EX: u32 = 31;
    pub const DOMAIN_RANGE_END: u32 = 32;
    pub const DOMAIN_RANGE_PUSH_EX: u32 = 33;
    pub const DOMAIN_RANGE_POP: u32 = 34;
    pub const DOMAIN_NAME_CATEGORY_A: u32 = 37;
    pub const DOMAIN_NAME_CATEGORY_W: u32 = 38;
    pub const DOMAIN_REGISTER_STRING_A: u32 = 39;
    pub const DOMAIN_REGISTER_STRING_W: u32 = 40;
    pub const DOMAIN_CREATE_A: u32 = 41;
    pub const DOMAIN_CREATE_W: u32 = 42;
    pub const DOMAIN_DESTROY: u32 = 43;
    /// `CUPTI_CBID_NVTX_SIZE`.
    pub const SIZE: u32 = 50;
}

#[repr(C)]
pub struct nvtxMarkEx_params {
    pub eventAttrib: *const EventAttributes,
}

#[repr(C)]
pub struct nvtxMarkA_params {
    pub message: *const c_char,
}

#[repr(C)]
pub struct nvtxMarkW_params {
    pub message: *const wchar_t,
}

pub type nvtxRangeStartEx_params = nvtxMarkEx_params;
pub type nvtxRangeStartA_params = nvtxMarkA_params;
pub type nvtxRangeStartW_params = nvtxMarkW_params;

#[repr(C)]
pub struct nvtxRangeEnd_params {
    pub id: nvtxRangeId_t,
}

pub type nvtxRangePushEx_params = nvtxMarkEx_params;
pub type nvtxRangePushA_params = nvtxMarkA_params;
pub type nvtxRangePushW_params = nvtxMarkW_params;

/// "WAR: Windows compiler doesn't allow empty structs. This field shouldn't be used".
#[repr(C)]
pub struct nvtxRangePop_params {
    pub dummy: *mut c_void,
}

#[repr(C)]
pub struct nvtxNameCategoryA_params {
    pub category: u32,
    pub name: *const c_char,
}

#[repr(C)]
pub struct nvtxNameCategoryW_params {
    pub category: u32,
    pub name: *const wchar_t,
}

#[repr(C)]
pub struct nvtxNameOsThreadA_params {
    pub threadId: u32,
    pub name: *const c_char,
}

#[repr(C)]
pub struct nvtxNameOsThreadW_params {
    pub threadId: u32,
    pub name: *const wchar_t,
}

#[repr(C)]
pub struct nvtxDomainCreateA_params {
    pub name: *const c_char,
}

/// Not in the header (see the module docs).
#[repr(C)]
pub struct nvtxDomainCreateW_params {
    pub name: *const wchar_t,
}

#[repr(C)]
pub struct nvtxDomainDestroy_params {
    pub domain: nvtxDomainHandle_t,
}

#[repr(C)]
pub struct nvtxDomainMarkEx_params {
    pub domain: nvtxDomainHandle_t,
    pub core: nvtxMarkEx_params,
}

#[repr(C)]
pub struct nvtxDomainRangeStartEx_params {
    pub domain: nvtxDomainHandle_t,
    pub core: nvtxRangeStartEx_params,
}

#[repr(C)]
pub struct nvtxDomainRangeEnd_params {
    pub domain: nvtxDomainHandle_t,
    pub core: nvtxRangeEnd_params,
}

#[repr(C)]
pub struct nvtxDomainRangePushEx_params {
    pub domain: nvtxDomainHandle_t,
    pub core: nvtxRangePushEx_params,
}

#[repr(C)]
pub struct nvtxDomainRangePop_params {
    pub domain: nvtxDomainHandle_t,
}

/// Not in the header (see the module docs).
#[repr(C)]
pub struct nvtxDomainNameCategoryA_params {
    pub domain: nvtxDomainHandle_t,
    pub category: u32,
    pub name: *const c_char,
}

/// Not in the header (see the module docs).
#[repr(C)]
pub struct nvtxDomainNameCategoryW_params {
    pub domain: nvtxDomainHandle_t,
    pub category: u32,
    pub name: *const wchar_t,
}

#[repr(C)]
pub struct nvtxDomainRegisterStringA_params {
    pub domain: nvtxDomainHandle_t,
    pub string: *const c_char,
}

/// `string` is `const char*` in the header (see the module docs).
#[repr(C)]
pub struct nvtxDomainRegisterStringW_params {
    pub domain: nvtxDomainHandle_t,
    pub string: *const c_char,
}

// The headers' layouts on x86_64 Linux (LP64).
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<nvtxMarkEx_params>() == 8);
    assert!(size_of::<nvtxMarkA_params>() == 8);
    assert!(size_of::<nvtxMarkW_params>() == 8);
    assert!(size_of::<nvtxRangeEnd_params>() == 8);
    assert!(size_of::<nvtxRangePop_params>() == 8);
    assert!(size_of::<nvtxNameCategoryA_params>() == 16);
    assert!(offset_of!(nvtxNameCategoryA_params, name) == 8);
    assert!(size_of::<nvtxNameOsThreadW_params>() == 16);
    assert!(offset_of!(nvtxNameOsThreadW_params, name) == 8);
    assert!(size_of::<nvtxDomainMarkEx_params>() == 16);
    assert!(offset_of!(nvtxDomainMarkEx_params, core) == 8);
    assert!(size_of::<nvtxDomainRangeEnd_params>() == 16);
    assert!(offset_of!(nvtxDomainRangeEnd_params, core) == 8);
    assert!(size_of::<nvtxDomainRangePop_params>() == 8);
    assert!(size_of::<nvtxDomainNameCategoryA_params>() == 24);
    assert!(offset_of!(nvtxDomainNameCategoryA_params, category) == 8);
    assert!(offset_of!(nvtxDomainNameCategoryA_params, name) == 16);
    assert!(size_of::<nvtxDomainRegisterStringW_params>() == 16);
};
