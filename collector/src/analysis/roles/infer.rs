//! GEMM roles without the model's config: inferred from the shapes alone, and said to
//! be. The rules, on the unbatched shapes as a row-major caller reads them (out =
//! cuBLAS's M, in = K):
//!
//! 1. The hidden size is the feature count most shapes have as their in or out.
//! 2. `lm_head`: the shapes with in = hidden and the largest out, when they have
//!    fewer calls (over all token counts) than every other out with in = hidden: once
//!    per forward pass, where the others run once per layer.
//! 3. `down_proj`: out = hidden and in = X ≠ hidden, where a shape with in = hidden has
//!    out = 2·X (that one is `gate_up_proj`) or out = X (`gate_proj/up_proj`); of
//!    several such X the largest (an MLP is wider than attention's output, whose
//!    projection can pair the same way: Qwen3's QKV has twice its o_proj's inputs).
//! 4. `o_proj`: any other shape with out = hidden.
//! 5. `router`: where batched shapes read the hidden size (grouped experts), the
//!    shape with in = hidden and the fewest outputs, at most 1024 and under hidden;
//!    `qkv_proj`: any other shape with in = hidden.
//! 6. Batched shapes: `experts.gate_up` with in = hidden, `experts.down` with out =
//!    hidden, else `attn_scores|attn_values` (batched over heads).
//!
//! Everything else has no role. A config (`--model`) replaces all of this.

use std::collections::BTreeMap;

use super::matching::Role;
use crate::analysis::gemm::GemmShape;

/// Each of `shapes` (with its GEMM calls) and the role the rules give it (none: no
/// rule fits).
pub fn infer(shapes: &BTreeMap<GemmShape, u64>) -> BTreeMap<GemmShape, Vec<Role>> {
    let linear: Vec<&GemmShape> = shapes.keys().filter(|s| s.batch == 1).collect();
    let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
    for s in &linear {
        *counts.entry(s.m).or_default() += 1;
        *counts.entry(s.k).or_default() += 1;
    }
    // Rule 1; ties: the smaller feature count.
    let hidden = counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(d, _)| *d);
    let mut out: BTreeMap<GemmShape, Vec<Role>> =
        shapes.keys().map(|s| (s.clone(), Vec::new())).collect();
    let Some(h) = hidden else {
        return out;
    };
    let reads_hidden: Vec<&GemmShape> = linear.iter().copied().filter(|s| s.k == h).collect();
    // Rule 2, on the calls of each out feature count over all token counts.
    let mut calls_by_out: BTreeMap<u64, u64> = BTreeMap::new();
    for s in &reads_hidden {
        *calls_by_out.entry(s.m).or_default() += shapes[*s];
    }
    let lm_out = calls_by_out
        .iter()
        .next_back()
        .filter(|(out, calls)| {
            **out > h
                && calls_by_out.len() > 1
                && calls_by_out.iter().all(|(o, c)| o == *out || c > calls)
        })
        .map(|(out, _)| *out);
    let mut set = |s: &GemmShape, role: Role| {
        if let Some(r) = out.get_mut(s) {
            if r.is_empty() {
                r.push(role);
            }
        }
    };
    for s in reads_hidden.iter().filter(|s| Some(s.m) == lm_out) {
        set(s, Role::LmHead);
    }
    // Rule 3 (the widest inner size that pairs: an MLP is wider than attention's
    // output), then 4.
    let pairs = |inner: u64| {
        reads_hidden
            .iter()
            .filter(move |u| u.m == 2 * inner || u.m == inner)
    };
    let mlp_inner = linear
        .iter()
        .filter(|s| s.m == h && s.k != h && pairs(s.k).next().is_some())
        .map(|s| s.k)
        .max();
    for s in linear.iter().filter(|s| s.m == h) {
        if Some(s.k) != mlp_inner {
            set(s, Role::OProj);
            continue;
        }
        set(s, Role::DownProj);
        for u in pairs(s.k) {
            let fused = u.m == 2 * s.k;
            set(
                u,
                if fused {
                    Role::GateUpProj
                } else {
                    Role::GateOrUpProj
                },
            );
        }
    }
    // Rule 5: with grouped experts, the fewest outputs of at most 1024 are the router's.
    let experts = shapes.keys().any(|s| s.batch > 1 && s.k == h);
    let router = reads_hidden
        .iter()
        .map(|s| s.m)
        .filter(|m| *m <= 1024 && *m < h)
        .min()
        .filter(|_| experts);
    for s in &reads_hidden {
        set(
            s,
            if Some(s.m) == router {
                Role::Router
            } else {
                Role::QkvProj
            },
        );
    }
    // Rule 6.
    for s in shapes.keys().filter(|s| s.batch > 1) {
        if s.k == h {
            set(s, Role::ExpertGateUp);
        } else if s.m == h {
            set(s, Role::ExpertDown);
        } else {
            set(s, Role::AttnScores);
        }
    }
    // Scores or values: the shape alone does not say which.
    for r in out.values_mut() {
        if r.as_slice() == [Role::AttnScores] {
            r.push(Role::AttnValues);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::gemm::bf16_shape as bf16;
    use crate::analysis::roles::matching::label;

    /// The demo's decode and prefill GEMMs (hidden 1024, MLP 2816, vocab 32000), each
    /// per layer twice but the LM head once per pass, and the prompt's attention
    /// scores: every one gets the role the workload gave it.
    #[test]
    fn the_demo_shapes_get_their_roles_without_a_config() {
        let shapes: BTreeMap<GemmShape, u64> = [
            (bf16(3072, 1, 1024, 1), 8),
            (bf16(1024, 1, 1024, 1), 8),
            (bf16(5632, 1, 1024, 1), 8),
            (bf16(1024, 1, 2816, 1), 8),
            (bf16(32000, 1, 1024, 1), 5),
            (bf16(3072, 128, 1024, 1), 2),
            (bf16(1024, 128, 1024, 1), 2),
            (bf16(5632, 128, 1024, 1), 2),
            (bf16(1024, 128, 2816, 1), 2),
            (bf16(128, 128, 128, 8), 2),
        ]
        .into_iter()
        .collect();
        let got: Vec<(u64, u64, String)> = infer(&shapes)
            .iter()
            .map(|(s, r)| (s.m, s.n, label(r)))
            .collect();
        let want = [
            (128, 128, "attn_scores|attn_values"),
            (1024, 1, "o_proj"),
            (1024, 1, "down_proj"),
            (1024, 128, "o_proj"),
            (1024, 128, "down_proj"),
            (3072, 1, "qkv_proj"),
            (3072, 128, "qkv_proj"),
            (5632, 1, "gate_up_proj"),
            (5632, 128, "gate_up_proj"),
            (32000, 1, "lm_head"),
        ];
        let want: Vec<(u64, u64, String)> = want
            .iter()
            .map(|(m, n, r)| (*m, *n, r.to_string()))
            .collect();
        assert_eq!(got, want);
    }
}
