//! What-if on the roofline: for each GEMM shape, the time the roofline allows at the
//! token counts the user asks for (`gpuprof report --what-if tokens=1,8,64`), beside
//! the shape as it ran. A model of the hardware's limits, not a measurement, and said
//! so:
//!
//! - tokens T are cuBLAS's N, as a row-major caller passes them (see
//!   [`super::super::gemm::GemmShape::label_as_read`]); M, K, the batch and the types
//!   stay the shape's;
//! - FLOPs = 2·M·T·K·batch (x4 complex), [`super::gemm_flops`];
//! - bytes = batch x (M·K x bits(A) + K·T x bits(B) + M·T x bits(D)) / 8: each
//!   matrix moved once between DRAM and the SMs, the least any kernel moves (C read
//!   for beta != 0 and re-reads of tiles that fall out of L2 come on top);
//! - roofline time = max(FLOPs / peak FLOP/s, bytes / DRAM bandwidth) with the peak of
//!   the shape's precision and pipe on its GPU; bound = compute when the first is
//!   the larger; MFU at the roof = FLOPs / roofline time / peak.
//!
//! With the model's config (`--model`) and degrees (`--what-if tp=1,2,4`), each shape
//! with one role also gets a row per tensor-parallel degree: the role's M, K and batch
//! at that degree from the model's dimensions
//! ([`crate::analysis::roles::matching::at_degree`]), the tokens as run, the same
//! formulas. Rows carry their shape's role when the report has roles.
//!
//! A shape whose peaks or element sizes are unknown gets no rows; the report says
//! which.

use serde::Serialize;

use super::efficiency::{Efficiency, ShapeRow};
use super::{gemm_flops, Bound};
use crate::analysis::precision::data_type_bits;
use crate::analysis::roles::matching::{at_degree, label, Role};
use crate::analysis::roles::ModelConfig;

/// One shape at one token count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    /// [`super::super::gemm::GemmShape::label_as_read`] of the shape as it ran.
    pub shape: String,
    pub gpu: String,
    /// The shape's role in the model, when the report has roles.
    pub role: Option<String>,
    /// The tensor-parallel degree of a degree row (`None`: a token-count row), and the
    /// degree the shape ran at.
    pub tp: Option<u64>,
    pub tp_as_run: Option<u64>,
    /// The shape at this row (cuBLAS's M, K, batch).
    pub m: u64,
    pub k: u64,
    pub batch: u64,
    /// The tokens (cuBLAS's N) it ran with, and those asked about.
    pub tokens_as_run: u64,
    pub tokens: u64,
    pub flops: f64,
    pub bytes: f64,
    pub intensity: f64,
    pub bound: Bound,
    /// The roofline's time for one call, ns.
    pub roofline_ns: f64,
    /// FLOPs / roofline time / peak, 0-1.
    pub mfu: f64,
    /// The measured GPU time of a call, ns, at the tokens it ran with (all its
    /// launches, split-K parts included); `None` at other token counts.
    pub measured_ns: Option<f64>,
}

/// The what-if rows, and the shapes without rows with why (shape, why).
pub type WhatIfs = (Vec<WhatIf>, Vec<(String, String)>);

/// The roles a what-if can use: each shape's, and the model's config and degree
/// when the roles come from one (the degree rows need them).
pub struct WhatIfRoles<'a> {
    pub shapes: &'a std::collections::BTreeMap<crate::analysis::gemm::GemmShape, Vec<Role>>,
    pub config: Option<(&'a ModelConfig, u64)>,
}

/// Rows for each shape of `e` and each of `tokens` (the shape's own token count
/// first, then the others in the order given), then, with `roles` from a config, each
/// of `degrees` other than the one it ran at; and the shapes without rows with why.
pub fn what_if(
    e: &Efficiency,
    tokens: &[u64],
    degrees: &[u64],
    roles: Option<&WhatIfRoles>,
) -> WhatIfs {
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for s in &e.shapes {
        let shape_roles = roles.and_then(|r| r.shapes.get(&s.shape));
        let role = shape_roles.filter(|r| !r.is_empty()).map(|r| label(r));
        match shape_rows(s, tokens, role.clone()) {
            Ok(mut r) => {
                if let (
                    Some(WhatIfRoles {
                        config: Some((c, ran)),
                        ..
                    }),
                    Some([one]),
                ) = (roles, shape_roles.map(Vec::as_slice))
                {
                    r.extend(degree_rows(s, c, *one, *ran, degrees, role));
                }
                rows.extend(r);
            }
            Err(why) => skipped.push((s.shape.label_as_read(), why)),
        }
    }
    (rows, skipped)
}

/// The rows of shape `s` (role `role`, run at degree `ran`) at each of `degrees`.
fn degree_rows(
    s: &ShapeRow,
    c: &ModelConfig,
    role: Role,
    ran: u64,
    degrees: &[u64],
    label: Option<String>,
) -> Vec<WhatIf> {
    let g = &s.shape;
    degrees
        .iter()
        .filter(|&&t| t != ran)
        .filter_map(|&t| {
            let (m, k, batch) = at_degree(c, role, (g.m, g.k, g.batch), ran, t)?;
            let mut row = roofline_row(s, (m, g.n, k, batch)).ok()?;
            row.tp = Some(t);
            row.tp_as_run = Some(ran);
            row.role = label.clone();
            row.measured_ns = None;
            Some(row)
        })
        .collect()
}

fn shape_rows(s: &ShapeRow, tokens: &[u64], role: Option<String>) -> Result<Vec<WhatIf>, String> {
    let g = &s.shape;
    let measured = (s.calls > 0).then(|| s.gpu_ns as f64 / s.calls as f64);
    let mut all = vec![g.n];
    all.extend(tokens.iter().filter(|&&t| t != g.n));
    all.into_iter()
        .map(|t| {
            let mut row = roofline_row(s, (g.m, t, g.k, g.batch))?;
            row.role = role.clone();
            row.measured_ns = (t == g.n).then_some(measured).flatten();
            Ok(row)
        })
        .collect()
}

/// The roofline of shape `s`'s types and GPU at (M, tokens, K, batch).
fn roofline_row(s: &ShapeRow, (m, t, k, batch): (u64, u64, u64, u64)) -> Result<WhatIf, String> {
    let g = &s.shape;
    let (Some(peak), Some(bandwidth)) = (s.peak_flops, s.bandwidth) else {
        return Err(format!("no peak FLOP/s or DRAM bandwidth for {}", s.gpu));
    };
    let bits = |t: u32| data_type_bits(t).ok_or("an element type of unknown size");
    let (a, b, d) = (bits(g.a_type)?, bits(g.b_type)?, bits(g.d_type)?);
    let flops = gemm_flops(m, t, k, batch, g.complex());
    let elements =
        |rows: u64, cols: u64, bits: u32| rows as f64 * cols as f64 * f64::from(bits) / 8.0;
    let bytes = batch as f64 * (elements(m, k, a) + elements(k, t, b) + elements(m, t, d));
    let compute_ns = flops / peak * 1e9;
    let memory_ns = bytes / bandwidth * 1e9;
    let roofline_ns = compute_ns.max(memory_ns);
    Ok(WhatIf {
        shape: g.label_as_read(),
        gpu: s.gpu.clone(),
        role: None,
        tp: None,
        tp_as_run: None,
        m,
        k,
        batch,
        tokens_as_run: g.n,
        tokens: t,
        flops,
        bytes,
        intensity: flops / bytes,
        bound: if compute_ns >= memory_ns {
            Bound::Compute
        } else {
            Bound::Memory
        },
        roofline_ns,
        mfu: if roofline_ns > 0.0 {
            flops / (roofline_ns * 1e-9) / peak
        } else {
            0.0
        },
        measured_ns: None,
    })
}
