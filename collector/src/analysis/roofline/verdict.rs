//! Why a GEMM shape is where it is on the roofline: a short verdict per rule that
//! applies, each with its evidence, for the report's GEMM shape rows (the launch shape
//! table gives the grid and occupancy evidence per kernel configuration).
//!
//! | rule | when | says | source |
//! | --- | --- | --- | --- |
//! | `memory_bound` | AI < ridge and MBU ≥ 60% | "memory-bound at MBU% of DRAM peak (AI a < ridge r): more tokens per call raise its AI" | the roofline: below the ridge, time is bytes / bandwidth |
//! | `memory_bound_slow` | AI < ridge and MBU < 60% | "memory-bound but at MBU% of DRAM peak: not bandwidth-limited; see its launch shape" | the same |
//! | `compute_bound` | AI ≥ ridge and MFU ≥ 60% | "compute-bound at MFU% of the P peak" | above the ridge, time is FLOPs / peak |
//! | `compute_bound_slow` | AI ≥ ridge and MFU < 60% | "compute-bound but at MFU% of the P peak: see tile padding and its launch shape" | the same |
//! | `off_tensor_pipe` | the shape's precision runs on the tensor pipe, and the FLOP counters of the kernel that ran it put most of its FLOPs on the CUDA cores | "its kernel's FLOPs ran on the P' (counters), not the P: its ceiling is P''s X TFLOP/s" | the counters of [`super::efficiency`]'s hardware FLOPs, by the pipe of each counter |
//! | `tile_padding` | the kernel's name gives its tile and the GEMM fills under 90% of the tiles it needs | "tile TMxTN (kernel name): the GEMM fills E% of its tiles (M, out: M of M'; N, tokens: N of N')", E = M·N / (M'·N'), M' and N' rounded up to whole tiles | a CTA computes a whole TM x TN tile of C, padding included |
//!
//! The 60% and 90% thresholds are where a rule starts to be worth a line, not NVIDIA
//! figures. The tile comes from cuBLAS's kernel names, `tilesize128x128x64` (TM x TN x
//! TK of the M x N x K problem cuBLAS solves), or the older `..._128x64_ldg8...` and
//! CUTLASS `..._64x64_64x4_...` forms (TM x TN); a kernel name that gives none gets no
//! tile rule. That the first two numbers tile cuBLAS's M and N is NVIDIA's naming,
//! unchecked here (it needs a GPU and a profiler that shows the CTA's tile).

use serde::Serialize;

use super::{Bound, Point};
use crate::analysis::gemm::GemmShape;
use crate::analysis::precision::{Math, Pipe};

/// One rule that applies to a row, and what it says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The rule's name, as the module documentation's table has it.
    pub rule: &'static str,
    pub text: String,
}

/// Where a rule starts to be worth a line: a utilization that high is "at its
/// ceiling", a tile fill below [`TILE_FILL`] wastes enough to name.
const AT_CEILING: f64 = 0.6;
const TILE_FILL: f64 = 0.9;

/// The verdicts of GEMM shape `s` whose roofline point is `p` in precision `math`,
/// run by the kernels `kernels` (demangled names); `counted` is the precision and
/// pipe the FLOP counters of its longest-running kernel put most FLOPs on, with its
/// peak.
pub fn shape_verdicts(
    s: &GemmShape,
    p: &Point,
    math: Option<Math>,
    kernels: &[String],
    counted: Option<(Math, Option<f64>)>,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    let pct = |f: f64| format!("{:.1}%", f * 100.0);
    let peak = math.map_or_else(|| "FLOP/s".to_string(), |m| m.to_string());
    match (p.bound, p.intensity, p.ridge) {
        (Some(Bound::Memory), Some(ai), Some(ridge)) => match p.mbu {
            Some(m) if m >= AT_CEILING => out.push(Verdict {
                rule: "memory_bound",
                text: format!(
                    "memory-bound at {} of DRAM peak (AI {ai:.1} < ridge {ridge:.1}): more \
                     tokens per call raise its AI",
                    pct(m)
                ),
            }),
            Some(m) => out.push(Verdict {
                rule: "memory_bound_slow",
                text: format!(
                    "memory-bound but at {} of DRAM peak: not bandwidth-limited; see its \
                     launch shape",
                    pct(m)
                ),
            }),
            None => {}
        },
        (Some(Bound::Compute), _, _) => match p.mfu {
            Some(f) if f >= AT_CEILING => out.push(Verdict {
                rule: "compute_bound",
                text: format!("compute-bound at {} of the {peak} peak", pct(f)),
            }),
            Some(f) => out.push(Verdict {
                rule: "compute_bound_slow",
                text: format!(
                    "compute-bound but at {} of the {peak} peak: see tile padding and its \
                     launch shape",
                    pct(f)
                ),
            }),
            None => {}
        },
        _ => {}
    }
    if let (Some(m), Some((hw, hw_peak))) = (math, counted) {
        if m.pipe == Pipe::Tensor && hw.pipe == Pipe::Cuda {
            let ceiling = hw_peak.map_or_else(String::new, |p| {
                format!(": its ceiling is the {hw}' {:.1} TFLOP/s", p / 1e12)
            });
            out.push(Verdict {
                rule: "off_tensor_pipe",
                text: format!(
                    "its kernel's FLOPs ran on the {hw} (counters), not the {m}{ceiling}"
                ),
            });
        }
    }
    if let Some((tm, tn)) = kernels.iter().find_map(|k| tile_of(k)) {
        let padded = |d: u64, t: u64| d.div_ceil(t) * t;
        let (pm, pn) = (padded(s.m, tm), padded(s.n, tn));
        let fill = (s.m * s.n) as f64 / (pm * pn).max(1) as f64;
        if fill < TILE_FILL {
            out.push(Verdict {
                rule: "tile_padding",
                text: format!(
                    "tile {tm}x{tn} (kernel name): the GEMM fills {} of its tiles (M, out: {} of \
                     {pm}; N, tokens: {} of {pn})",
                    pct(fill),
                    s.m,
                    s.n
                ),
            });
        }
    }
    out
}

/// The CTA tile (TM, TN) a cuBLAS or CUTLASS kernel name gives, if any (see the
/// module documentation).
pub fn tile_of(name: &str) -> Option<(u64, u64)> {
    if let Some(i) = name.find("tilesize") {
        return dims_at(&name[i + "tilesize".len()..]);
    }
    // "..._s16816gemm_bf16_128x64_ldg8_..." and CUTLASS "..._gemm_..._64x64_64x4_...":
    // the first AxB field after "gemm".
    let after = &name[name.find("gemm")?..];
    after.split('_').skip(1).find_map(|field| {
        let (a, b) = field.split_once('x')?;
        let tile = (a.parse().ok()?, b.parse().ok()?);
        (tile.0 >= 16 && tile.1 >= 8).then_some(tile)
    })
}

/// The leading "AxB" of `s` ("128x128x64..." -> (128, 128)).
fn dims_at(s: &str) -> Option<(u64, u64)> {
    let mut parts = s.split('x');
    let a = parts.next()?.parse().ok()?;
    let b: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((a, b.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::precision::Precision;

    fn point(bound: Bound, ai: f64, mfu: f64, mbu: f64) -> Point {
        Point {
            intensity: Some(ai),
            achieved: None,
            mfu: Some(mfu),
            mbu: Some(mbu),
            ridge: Some(295.3),
            bound: Some(bound),
            attainable: None,
            efficiency: None,
            missing: Vec::new(),
        }
    }

    /// A decode GEMM of 8 tokens on a 128x128 tile: memory-bound at its ceiling, and
    /// 8 of 128 columns of each tile used; a large GEMM compute-bound below it.
    #[test]
    fn verdicts_say_the_bound_and_the_tile_fill() {
        let shape = crate::analysis::gemm::bf16_shape(3072, 8, 4096, 1);
        let kernels =
            ["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel".to_string()];
        let v = shape_verdicts(
            &shape,
            &point(Bound::Memory, 7.9, 0.02, 0.896),
            None,
            &kernels,
            None,
        );
        let texts: Vec<(&str, &str)> = v.iter().map(|v| (v.rule, v.text.as_str())).collect();
        assert_eq!(
            texts,
            [
                (
                    "memory_bound",
                    "memory-bound at 89.6% of DRAM peak (AI 7.9 < ridge 295.3): more tokens per \
                     call raise its AI"
                ),
                (
                    "tile_padding",
                    "tile 128x128 (kernel name): the GEMM fills 6.2% of its tiles (M, out: 3072 \
                     of 3072; N, tokens: 8 of 128)"
                )
            ]
        );
        let bf16 = Math {
            precision: Precision::Bf16,
            pipe: Pipe::Tensor,
        };
        let big = GemmShape { n: 4096, ..shape };
        let v = shape_verdicts(
            &big,
            &point(Bound::Compute, 1365.0, 0.42, 0.2),
            Some(bf16),
            &kernels,
            None,
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(
            v[0].text,
            "compute-bound but at 42.0% of the BF16 tensor peak: see tile padding and its launch shape"
        );
        // Its kernel's counters on FP32 FMAs: the BF16 tensor peak is out of reach.
        let fp32 = Math {
            precision: Precision::Fp32,
            pipe: Pipe::Cuda,
        };
        let v = shape_verdicts(
            &big,
            &point(Bound::Compute, 1365.0, 0.42, 0.2),
            Some(bf16),
            &kernels,
            Some((fp32, Some(67e12))),
        );
        assert_eq!(
            v[1],
            Verdict {
                rule: "off_tensor_pipe",
                text: "its kernel's FLOPs ran on the FP32 CUDA cores (counters), not the BF16 \
                       tensor: its ceiling is the FP32 CUDA cores' 67.0 TFLOP/s"
                    .to_string()
            }
        );
    }

    /// Tiles from cuBLAS's names old and new and CUTLASS's; none from a GEMV's
    /// template arguments.
    #[test]
    fn tiles_come_from_kernel_names() {
        let xmma = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_cgasize1x1x1_kernel__5x_cublas";
        assert_eq!(tile_of(xmma), Some((128, 256)));
        assert_eq!(
            tile_of("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x3_nn"),
            Some((128, 64))
        );
        assert_eq!(
            tile_of("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_nn_align8"),
            Some((64, 64))
        );
        assert_eq!(
            tile_of("void gemv2N_kernel<int, int, __nv_bfloat16, float, 128, 1, 2, 2, 11, false>"),
            None
        );
    }
}
