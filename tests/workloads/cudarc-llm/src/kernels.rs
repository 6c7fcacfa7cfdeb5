//! The workload's own kernels, as PTX text loaded with `cudaLibraryLoadData` (no compiler
//! needed). The bodies return immediately: what matters to a profiler is that they are
//! real kernels of a real module, launched with the shapes an LLM layer uses.

/// Kernel names, as an inference engine would name them.
pub const RMS_NORM: &str = "rms_norm_kernel";
pub const FLASH_PREFILL: &str = "flash_fwd_kernel";
pub const PAGED_ATTENTION: &str = "paged_attention_v1_kernel";
pub const SILU_AND_MUL: &str = "silu_and_mul_kernel";
pub const ADD_RESIDUAL: &str = "add_residual_kernel";

pub const ALL: [&str; 5] = [
    RMS_NORM,
    FLASH_PREFILL,
    PAGED_ATTENTION,
    SILU_AND_MUL,
    ADD_RESIDUAL,
];

/// A PTX module with one entry per kernel; each takes (pointer, pointer, u32).
pub fn ptx() -> String {
    let mut s = String::from(".version 8.0\n.target sm_80\n.address_size 64\n\n");
    for name in ALL {
        s.push_str(&format!(
            ".visible .entry {name}(\n\t.param .u64 {name}_param_0,\n\t.param .u64 {name}_param_1,\n\t.param .u32 {name}_param_2\n)\n.maxnreg 64\n{{\n\tret;\n}}\n\n"
        ));
    }
    s
}
