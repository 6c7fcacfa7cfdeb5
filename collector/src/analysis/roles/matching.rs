//! Which GEMM shape is which layer of the model: each role's (out features, in
//! features) from the model's config at a tensor-parallel degree, matched against the
//! shapes as a row-major caller reads them (cuBLAS's M is the output features, K the
//! input features, N the tokens: see `GemmShape::label_as_read`).
//!
//! | role | out | in | batch |
//! | --- | --- | --- | --- |
//! | qkv_proj (fused) | (H/t + 2·max(1, KV/t))·d | hidden | 1 |
//! | q_proj | H·d/t | hidden | 1 |
//! | k_proj/v_proj | max(1, KV/t)·d | hidden | 1 |
//! | o_proj | hidden | H·d/t | 1 |
//! | gate_up_proj (fused) | 2·I/t | hidden | 1 |
//! | gate_proj/up_proj | I/t | hidden | 1 |
//! | down_proj | hidden | I/t | 1 |
//! | lm_head | vocab/t, or vocab padded to 64 (vLLM's ParallelLMHead) /t | hidden | 1 |
//! | attn_scores (Q·Kᵀ) | any | d | a multiple of H/t or KV/t |
//! | attn_values (P·V) | d | any | a multiple of H/t or KV/t |
//! | router | experts | hidden | 1 |
//! | experts.gate_up, experts.gate/up, experts.down | as the MLP's, with the expert's I | | any (one entry per expert) |
//! | shared_expert.* | as the MLP's, with the shared expert's I | | 1 |
//!
//! H heads, KV key/value heads (replicated when fewer than t, as vLLM does), d the head
//! size, I the MLP's inner size, t the tensor-parallel degree. A shape whose (M, K)
//! fits no role is tried as (N, K) (a caller that puts the tokens in M). A shape that
//! fits several roles is named by all of them ("q_proj|o_proj"), except that an
//! unfused role is dropped where its fused one is another shape's only role (a model
//! that fuses QKV has no separate q_proj), and an experts' role is dropped from an
//! unbatched shape where batched shapes have it (experts run grouped there).
//!
//! The degree: `--tp`, else each of 1, 2, 4, ... 64 dividing the heads is tried and
//! the one whose roles cover the most GEMM time kept; where several cover the same,
//! the report says which fit.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::config::ModelConfig;
use crate::analysis::gemm::GemmShape;

/// A GEMM's role in the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Role {
    QkvProj,
    QProj,
    KvProj,
    OProj,
    GateUpProj,
    GateOrUpProj,
    DownProj,
    LmHead,
    AttnScores,
    AttnValues,
    Router,
    ExpertGateUp,
    ExpertGateOrUp,
    ExpertDown,
    SharedGateUp,
    SharedGateOrUp,
    SharedDown,
}

impl Role {
    /// The name vLLM and Hugging Face give the layer.
    pub fn name(self) -> &'static str {
        match self {
            Role::QkvProj => "qkv_proj",
            Role::QProj => "q_proj",
            Role::KvProj => "k_proj/v_proj",
            Role::OProj => "o_proj",
            Role::GateUpProj => "gate_up_proj",
            Role::GateOrUpProj => "gate_proj/up_proj",
            Role::DownProj => "down_proj",
            Role::LmHead => "lm_head",
            Role::AttnScores => "attn_scores",
            Role::AttnValues => "attn_values",
            Role::Router => "router",
            Role::ExpertGateUp => "experts.gate_up",
            Role::ExpertGateOrUp => "experts.gate/up",
            Role::ExpertDown => "experts.down",
            Role::SharedGateUp => "shared_expert.gate_up",
            Role::SharedGateOrUp => "shared_expert.gate/up",
            Role::SharedDown => "shared_expert.down",
        }
    }

    /// A role of the routed experts.
    fn expert(self) -> bool {
        matches!(
            self,
            Role::ExpertGateUp | Role::ExpertGateOrUp | Role::ExpertDown
        )
    }

    /// The fused role an unfused one is part of.
    fn fused(self) -> Option<Role> {
        match self {
            Role::QProj | Role::KvProj => Some(Role::QkvProj),
            Role::GateOrUpProj => Some(Role::GateUpProj),
            Role::ExpertGateOrUp => Some(Role::ExpertGateUp),
            Role::SharedGateOrUp => Some(Role::SharedGateUp),
            _ => None,
        }
    }
}

/// The label of a shape's roles: "q_proj|o_proj".
pub fn label(roles: &[Role]) -> String {
    roles.iter().map(|r| r.name()).collect::<Vec<_>>().join("|")
}

/// A linear layer's (out, in) features and whether it may be batched (experts).
struct Linear {
    role: Role,
    out: Vec<u64>,
    inp: u64,
    batched: bool,
}

/// The linear layers of `c` at tensor-parallel degree `t`.
fn linears(c: &ModelConfig, t: u64) -> Vec<Linear> {
    let d = c.head_dim;
    let q = c.heads / t * d;
    let kv = (c.kv_heads / t).max(1) * d;
    let lin = |role, out: Vec<u64>, inp, batched| Linear {
        role,
        out,
        inp,
        batched,
    };
    let mut out = vec![
        lin(Role::QkvProj, vec![q + 2 * kv], c.hidden, false),
        lin(Role::QProj, vec![q], c.hidden, false),
        lin(Role::KvProj, vec![kv], c.hidden, false),
        lin(Role::OProj, vec![c.hidden], q, false),
    ];
    let padded = c.vocab.div_ceil(64) * 64;
    let vocab: Vec<u64> = [c.vocab, padded]
        .iter()
        .filter(|v| v.is_multiple_of(t))
        .map(|v| v / t)
        .collect();
    out.push(lin(Role::LmHead, vocab, c.hidden, false));
    let mlp = |out: &mut Vec<Linear>, i: u64, roles: [Role; 3], batched: bool| {
        if i.is_multiple_of(t) {
            let i = i / t;
            out.push(lin(roles[0], vec![2 * i], c.hidden, batched));
            out.push(lin(roles[1], vec![i], c.hidden, batched));
            out.push(lin(roles[2], vec![c.hidden], i, batched));
        }
    };
    if let Some(i) = c.intermediate {
        mlp(
            &mut out,
            i,
            [Role::GateUpProj, Role::GateOrUpProj, Role::DownProj],
            false,
        );
    }
    if let Some(m) = &c.moe {
        out.push(lin(Role::Router, vec![m.experts], c.hidden, false));
        let experts = [Role::ExpertGateUp, Role::ExpertGateOrUp, Role::ExpertDown];
        mlp(&mut out, m.intermediate, experts, true);
        if let Some(s) = m.shared_intermediate {
            let shared = [Role::SharedGateUp, Role::SharedGateOrUp, Role::SharedDown];
            mlp(&mut out, s, shared, false);
        }
    }
    out
}

/// A shape of role `role` (cuBLAS's M, K, batch as it ran at degree `ran`) at degree
/// `t` instead, from the model's dimensions: a linear layer's (out, in) features at
/// `t` ([`linears`]), attention's batch scaled with the heads per rank, the router's
/// unchanged; `None` where `t` does not divide the dimension the role splits.
pub fn at_degree(
    c: &ModelConfig,
    role: Role,
    (m, k, batch): (u64, u64, u64),
    ran: u64,
    t: u64,
) -> Option<(u64, u64, u64)> {
    if !c.heads.is_multiple_of(t) || !c.heads.is_multiple_of(ran) {
        return None;
    }
    match role {
        Role::AttnScores | Role::AttnValues => {
            let (before, after) = (c.heads / ran, c.heads / t);
            (batch % before == 0).then(|| (m, k, batch / before * after))
        }
        Role::Router => Some((m, k, batch)),
        _ => {
            let of = |d: u64| linears(c, d).into_iter().find(|l| l.role == role);
            // The same variant as ran (the LM head's vocabulary padded or not).
            let variant = of(ran)?.out.iter().position(|o| *o == m).unwrap_or(0);
            let layer = of(t)?;
            let out = layer.out.get(variant).or(layer.out.last())?;
            Some((*out, layer.inp, batch))
        }
    }
}

/// The roles shape `s` fits at degree `t`, before the fused-role rule.
fn fits(c: &ModelConfig, t: u64, layers: &[Linear], s: &GemmShape) -> Vec<Role> {
    if s.batch > 1 {
        let per_rank = [c.heads / t, (c.kv_heads / t).max(1)];
        let heads = per_rank.iter().any(|h| s.batch.is_multiple_of(*h));
        let mut roles = Vec::new();
        if heads && s.k == c.head_dim {
            roles.push(Role::AttnScores);
        }
        if heads && (s.m == c.head_dim || s.n == c.head_dim) && s.k != c.head_dim {
            roles.push(Role::AttnValues);
        }
        if !roles.is_empty() {
            return roles;
        }
    }
    for out in [s.m, s.n] {
        let roles: Vec<Role> = layers
            .iter()
            .filter(|l| (s.batch == 1 || l.batched) && l.inp == s.k && l.out.contains(&out))
            .map(|l| l.role)
            .collect();
        if !roles.is_empty() {
            return roles;
        }
    }
    Vec::new()
}

/// Where the degree came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TpSource {
    /// `--tp`.
    Given,
    /// The degree whose roles cover the most GEMM time; `fits` lists every degree that
    /// covers as much (more than one: the shapes do not decide; none: no degree gives
    /// any shape a role, and `tp` is 1).
    Inferred { fits: Vec<u64> },
    /// No config: the roles inferred from the shapes alone ([`super::infer`]), no
    /// degree.
    NoConfig,
}

/// The roles of a run's GEMM shapes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Assignment {
    /// The tensor-parallel degree; `None` without a config.
    pub tp: Option<u64>,
    pub tp_source: TpSource,
    /// Every shape of the run with the roles it fits (none: it fits no role).
    pub shapes: BTreeMap<GemmShape, Vec<Role>>,
}

/// The degrees tried when `--tp` is not given.
const DEGREES: [u64; 7] = [1, 2, 4, 8, 16, 32, 64];

/// The roles of `shapes` (each with its GEMM GPU time), at `tp` or at the degree
/// that fits best.
pub fn assign(c: &ModelConfig, shapes: &BTreeMap<GemmShape, u64>, tp: Option<u64>) -> Assignment {
    let at = |t: u64| -> BTreeMap<GemmShape, Vec<Role>> {
        let layers = linears(c, t);
        let mut out: BTreeMap<GemmShape, Vec<Role>> = shapes
            .keys()
            .map(|s| (s.clone(), fits(c, t, &layers, s)))
            .collect();
        drop_unfused(&mut out);
        out
    };
    if let Some(t) = tp {
        return Assignment {
            tp: Some(t),
            tp_source: TpSource::Given,
            shapes: at(t),
        };
    }
    let covered = |roles: &BTreeMap<GemmShape, Vec<Role>>| -> u64 {
        roles
            .iter()
            .filter(|(_, r)| !r.is_empty())
            .map(|(s, _)| shapes[s])
            .sum()
    };
    let tried: Vec<(u64, BTreeMap<GemmShape, Vec<Role>>, u64)> = DEGREES
        .iter()
        .filter(|t| c.heads.is_multiple_of(**t))
        .map(|&t| {
            let roles = at(t);
            let ns = covered(&roles);
            (t, roles, ns)
        })
        .collect();
    let best = tried.iter().map(|(_, _, ns)| *ns).max().unwrap_or(0);
    // None fits where no degree gives a shape a role.
    let fits: Vec<u64> = tried
        .iter()
        .filter(|(_, _, ns)| best > 0 && *ns == best)
        .map(|(t, _, _)| *t)
        .collect();
    let (tp, roles, _) = tried
        .into_iter()
        .find(|(t, _, _)| *t == fits.first().copied().unwrap_or(1))
        .expect("degree 1 divides every head count");
    Assignment {
        tp: Some(tp),
        tp_source: TpSource::Inferred { fits },
        shapes: roles,
    }
}

/// From a shape that fits several roles, drops an unfused role whose fused role is
/// some shape's only role, and from an unbatched shape an experts' role that batched
/// shapes have (the experts run grouped, not one by one).
fn drop_unfused(roles: &mut BTreeMap<GemmShape, Vec<Role>>) {
    let alone: BTreeSet<Role> = roles
        .values()
        .filter(|r| r.len() == 1)
        .map(|r| r[0])
        .collect();
    let grouped: BTreeSet<Role> = roles
        .iter()
        .filter(|(s, _)| s.batch > 1)
        .flat_map(|(_, r)| r.iter().copied())
        .filter(|r| r.expert())
        .collect();
    for (s, r) in roles.iter_mut() {
        if r.len() > 1 {
            r.retain(|role| !role.fused().is_some_and(|f| alone.contains(&f)));
        }
        if r.len() > 1 && s.batch == 1 {
            r.retain(|role| !grouped.contains(role));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::analysis::gemm::bf16_shape as bf16;

    fn llama() -> ModelConfig {
        ModelConfig::of(&json!({
            "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
            "num_key_value_heads": 8, "num_hidden_layers": 32, "vocab_size": 128256
        }))
        .unwrap()
    }

    fn roles_of(a: &Assignment) -> Vec<(String, String)> {
        a.shapes
            .iter()
            .map(|(s, r)| (format!("{}x{}x{}x{}", s.m, s.n, s.k, s.batch), label(r)))
            .collect()
    }

    /// Llama-3-8B's decode GEMMs at TP 2, as vLLM runs them (fused QKV and gate/up,
    /// vocab split): each gets its role, and TP 2 is the only degree that fits all.
    #[test]
    fn llama_shapes_at_tp2_get_their_roles_and_the_degree() {
        let shapes: BTreeMap<GemmShape, u64> = [
            (bf16(3072, 8, 4096, 1), 10),
            (bf16(4096, 8, 2048, 1), 10),
            (bf16(14336, 8, 4096, 1), 10),
            (bf16(4096, 8, 7168, 1), 10),
            (bf16(64128, 8, 4096, 1), 10),
            (bf16(100, 8, 4096, 1), 1),
        ]
        .into_iter()
        .collect();
        let a = assign(&llama(), &shapes, None);
        assert_eq!(a.tp, Some(2));
        assert_eq!(a.tp_source, TpSource::Inferred { fits: vec![2] });
        let want = [
            ("100x8x4096x1", ""),
            ("3072x8x4096x1", "qkv_proj"),
            ("4096x8x2048x1", "o_proj"),
            ("4096x8x7168x1", "down_proj"),
            ("14336x8x4096x1", "gate_up_proj"),
            ("64128x8x4096x1", "lm_head"),
        ];
        assert_eq!(
            roles_of(&a),
            want.map(|(s, r)| (s.to_string(), r.to_string())).to_vec()
        );
    }

    /// At TP 1 without grouped KV heads, q_proj, k_proj, v_proj and o_proj are all
    /// hidden x hidden: named by all, unless the model fuses QKV (then the square
    /// shape is o_proj).
    #[test]
    fn a_shape_that_fits_two_roles_is_named_by_both_unless_fused() {
        let c = ModelConfig::of(&json!({
            "hidden_size": 1024, "intermediate_size": 2816, "num_attention_heads": 8,
            "num_hidden_layers": 2, "vocab_size": 32000
        }))
        .unwrap();
        let square = bf16(1024, 1, 1024, 1);
        let alone: BTreeMap<GemmShape, u64> = [(square.clone(), 1)].into_iter().collect();
        let a = assign(&c, &alone, Some(1));
        assert_eq!(label(&a.shapes[&square]), "q_proj|k_proj/v_proj|o_proj");
        let mut fused = alone.clone();
        fused.insert(bf16(3072, 1, 1024, 1), 1);
        let a = assign(&c, &fused, Some(1));
        assert_eq!(label(&a.shapes[&square]), "o_proj");
        // Attention: scores over the head size, 8 heads a batch.
        let scores = bf16(128, 128, 128, 8);
        fused.insert(scores.clone(), 1);
        assert_eq!(
            assign(&c, &fused, Some(1)).shapes[&scores],
            vec![Role::AttnScores]
        );
    }
}
