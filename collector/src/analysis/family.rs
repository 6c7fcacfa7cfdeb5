//! Kernel families: what kind of work a kernel does, from its name.
//!
//! A kernel with a GEMM shape attached (a cuBLAS / cuBLASLt call launched it) is a
//! GEMM whatever its name (split-K reductions included). Otherwise the demangled name
//! decides. The function's own name (before template arguments and parameters) is
//! tried first, so `at::native::vectorized_elementwise_kernel<4, ...CopyFunctor...>`
//! is elementwise, not a copy; when it matches no rule, the whole name is tried (so
//! `cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_...>` is a GEMM). Rules, in
//! order, on the lower-cased name (first match wins):
//!
//! | family        | substrings                                                         |
//! |---------------|--------------------------------------------------------------------|
//! | communication | `nccl`                                                             |
//! | attention     | `flash`, `fmha`, `attention`, `attn`, `xformers`                   |
//! | GEMM          | `gemm`, `gemv`, `nvjet`, `xmma`, `matmul`                           |
//! | copy          | `copy`, `memcpy`, `transpose`, `cat_`, `catarraybatched`            |
//! | reduction     | `reduce`, `norm`, `softmax`, `argmax`, `argmin`, `topk`, `sum`, `mean`, `rms` |
//! | elementwise   | `elementwise`, `act_and_mul`, `silu`, `gelu`, `relu`, `rotary`, `rope`, `add`, `mul`, `fill` |
//!
//! Everything else is "other".

use std::fmt;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Gemm,
    Attention,
    Elementwise,
    Reduction,
    Copy,
    Communication,
    Other,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 7] = [
        Family::Gemm,
        Family::Attention,
        Family::Elementwise,
        Family::Reduction,
        Family::Copy,
        Family::Communication,
        Family::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::Gemm => "GEMM",
            Family::Attention => "attention",
            Family::Elementwise => "elementwise",
            Family::Reduction => "reduction",
            Family::Copy => "copy",
            Family::Communication => "communication",
            Family::Other => "other",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

const RULES: [(Family, &[&str]); 6] = [
    (Family::Communication, &["nccl"]),
    (
        Family::Attention,
        &["flash", "fmha", "attention", "attn", "xformers"],
    ),
    (Family::Gemm, &["gemm", "gemv", "nvjet", "xmma", "matmul"]),
    (
        Family::Copy,
        &["copy", "memcpy", "transpose", "cat_", "catarraybatched"],
    ),
    (
        Family::Reduction,
        &[
            "reduce", "norm", "softmax", "argmax", "argmin", "topk", "sum", "mean", "rms",
        ],
    ),
    (
        Family::Elementwise,
        &[
            "elementwise",
            "act_and_mul",
            "silu",
            "gelu",
            "relu",
            "rotary",
            "rope",
            "add",
            "mul",
            "fill",
        ],
    ),
];

fn by_rules(name: &str) -> Option<Family> {
    RULES
        .iter()
        .find(|(_, words)| words.iter().any(|w| name.contains(w)))
        .map(|(f, _)| *f)
}

/// The function's own name in a demangled name: without the return type, template
/// arguments and parameters (`void ns::f<int>(float*)` -> `ns::f`).
pub fn base_name(name: &str) -> &str {
    let end = name.find(['<', '(']).unwrap_or(name.len());
    let head = &name[..end];
    // A return type is separated by a space ("void ns::f").
    head.rsplit(' ').next().unwrap_or(head)
}

/// The family of a kernel with demangled name `name`; `has_gemm_shape` when a GEMM
/// record is attached to it.
pub fn classify(name: &str, has_gemm_shape: bool) -> Family {
    if has_gemm_shape {
        return Family::Gemm;
    }
    let lower = name
        .to_ascii_lowercase()
        .replace("(anonymous namespace)", "anonymous");
    by_rules(base_name(&lower))
        .or_else(|| by_rules(&lower))
        .unwrap_or(Family::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_kernel_names() {
        let cases: &[(&str, Family)] = &[
            // cuBLAS / cuBLASLt / CUTLASS (names from libcublasLt.so.12).
            (
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cgasize1x1x1_\
                 warpgroupsize1x1x1_aligna4_alignc4_execute_segment_k_off_kernel__5x_cublas",
                Family::Gemm,
            ),
            (
                "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
                Family::Gemm,
            ),
            ("ampere_sgemm_128x128_nn", Family::Gemm),
            (
                "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, \
                 __nv_bfloat16, float, 128, 16, 4, 4, false, false>(float)",
                Family::Gemm,
            ),
            ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT", Family::Gemm),
            (
                "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_\
                 64x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_\
                 align8::Params)",
                Family::Gemm,
            ),
            // Attention.
            ("flash_fwd_kernel", Family::Attention),
            (
                "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, \
                 false, false, cutlass::bfloat16_t>, true>(flash::Flash_fwd_params)",
                Family::Attention,
            ),
            ("paged_attention_v1_kernel", Family::Attention),
            (
                "void vllm::paged_attention_v2_kernel<__nv_bfloat16, 128, 16>(float*)",
                Family::Attention,
            ),
            (
                "fmha_cutlassF_bf16_aligned_64x64_rf_sm80",
                Family::Attention,
            ),
            // Communication.
            (
                "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
                Family::Communication,
            ),
            // Copies.
            (
                "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned \
                 int, 3, 128, 1>(float*)",
                Family::Copy,
            ),
            ("transpose_kernel", Family::Copy),
            // Reductions.
            ("rms_norm_kernel", Family::Reduction),
            ("reduce_kernel", Family::Reduction),
            (
                "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, \
                 at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>>()",
                Family::Reduction,
            ),
            (
                "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*)",
                Family::Reduction,
            ),
            ("softmax_warp_forward", Family::Reduction),
            (
                "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>()",
                Family::Reduction,
            ),
            ("topk_kernel", Family::Reduction),
            // Elementwise.
            ("silu_and_mul_kernel", Family::Elementwise),
            ("add_residual_kernel", Family::Elementwise),
            (
                "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel>()",
                Family::Elementwise,
            ),
            (
                "void at::native::vectorized_elementwise_kernel<4, \
                 at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}, \
                 at::detail::Array<char*, 2>>(int)",
                Family::Elementwise,
            ),
            (
                "void vllm::rotary_embedding_kernel<c10::BFloat16, true>()",
                Family::Elementwise,
            ),
            // Other.
            ("worker_kernel", Family::Other),
            ("parent_kernel", Family::Other),
            ("", Family::Other),
        ];
        for (name, family) in cases {
            assert_eq!(classify(name, false), *family, "{name}");
        }
    }

    #[test]
    fn a_gemm_shape_makes_a_gemm() {
        assert_eq!(classify("reduce_kernel", true), Family::Gemm);
        assert_eq!(classify("splitKreduce_kernel", true), Family::Gemm);
        assert_eq!(classify("splitKreduce_kernel", false), Family::Reduction);
    }

    #[test]
    fn base_names() {
        assert_eq!(base_name("void ns::f<int>(float*)"), "ns::f");
        assert_eq!(base_name("plain_kernel"), "plain_kernel");
        assert_eq!(base_name("ns::g(int)"), "ns::g");
    }
}
