//! Per GEMM role, in each NVTX range (by the ranges' GPU time) and over the run: its
//! launches rolled up as every rollup is ([`crate::analysis::rollup`]: model FLOPs,
//! MFU, DRAM bytes, MBU, AI), its calls, its calls per forward pass (its calls over the
//! LM head's in the same scope: a role in every layer has as many as the layers that
//! ran) and its share of the scope's GPU time, and its bound (the model FLOPs' AI
//! against the ridge point of its precision on its GPU). Launches of shapes that fit
//! no role are one row, named "(no role)", with their shapes listed.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::config::ModelConfig;
use super::infer::infer;
use super::matching::{assign, label, Assignment, Role, TpSource};
use crate::analysis::aggregate::Aggregate;
use crate::analysis::classes::{GemmPart, Tally};
use crate::analysis::gemm::GemmShape;
use crate::analysis::rollup::{range_classes, rollup, ClassValues, Rollup};
use crate::analysis::roofline::Bound;

/// What a role's row says of launches whose shapes fit no role.
pub const NO_ROLE: &str = "(no role)";

/// A shape's roles as a row names them: their label, or [`NO_ROLE`].
fn role_name(roles: &[Role]) -> String {
    if roles.is_empty() {
        NO_ROLE.to_string()
    } else {
        label(roles)
    }
}

/// One role in one scope.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleRow {
    /// The NVTX range ("domain: name", or the name), or "run".
    pub scope: String,
    /// The role ([`super::matching::label`]), or [`NO_ROLE`].
    pub role: String,
    /// Its shapes as a row-major caller reads them (`GemmShape::label_as_read`), by
    /// GPU time.
    pub shapes: Vec<String>,
    /// The same, dimensions only (`GemmShape::dims_as_read`).
    pub dims: Vec<String>,
    /// GEMM calls (a call's first launches).
    pub calls: u64,
    /// Calls over the LM head's in the scope; `None` without an LM head there.
    pub per_forward: Option<f64>,
    /// Of the scope's kernel GPU time (0 to 1).
    pub share: f64,
    pub rollup: Rollup,
    /// Peak FLOP/s over DRAM bytes/s of its first shape's precision, and where the
    /// model FLOPs' AI puts it.
    pub ridge: Option<f64>,
    pub bound: Option<Bound>,
}

/// The roles of a run's GEMMs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRoles {
    /// `None`: the roles are inferred from the shapes alone ([`super::infer`]).
    pub config: Option<ModelConfig>,
    pub assignment: Assignment,
    /// Per scope (each NVTX range by GPU time, then the run), by GPU time.
    pub rows: Vec<RoleRow>,
}

/// The roles of `a`'s GEMMs under `config` (at `tp`, or the degree that fits best;
/// without a config, inferred from the shapes), `values` per class as the roofline has
/// them and `ranges` the NVTX ranges in the report's order. `None` without GEMMs.
pub fn model_roles(
    a: &Aggregate,
    values: &[ClassValues],
    ranges: &[String],
    config: Option<&ModelConfig>,
    tp: Option<u64>,
) -> Option<ModelRoles> {
    let classes = &a.classes.list;
    let shape_ns = gemm_time_by_shape(a);
    if shape_ns.is_empty() {
        return None;
    }
    let assignment = match config {
        Some(c) => assign(c, &shape_ns, tp),
        None => Assignment {
            tp: None,
            tp_source: TpSource::NoConfig,
            shapes: infer(&gemm_calls_by_shape(a)),
        },
    };
    let mut in_ranges = range_classes(a);
    let mut scopes: Vec<(String, BTreeMap<usize, Tally>)> = ranges
        .iter()
        .filter_map(|r| in_ranges.remove(r).map(|(cs, _)| (r.clone(), cs)))
        .collect();
    let run: BTreeMap<usize, Tally> = classes
        .iter()
        .enumerate()
        .map(|(i, c)| (i, c.tally))
        .collect();
    scopes.push(("run".to_string(), run));
    let rows = scopes
        .iter()
        .flat_map(|(scope, tallies)| scope_rows(a, values, &assignment, scope, tallies, &shape_ns))
        .collect();
    Some(ModelRoles {
        config: config.cloned(),
        assignment,
        rows,
    })
}

/// `of(tally, part)` summed over each GEMM shape's classes.
fn by_shape(a: &Aggregate, of: impl Fn(&Tally, &GemmPart) -> u64) -> BTreeMap<GemmShape, u64> {
    let mut out: BTreeMap<GemmShape, u64> = BTreeMap::new();
    for c in &a.classes.list {
        if let Some(g) = &c.key.gemm {
            *out.entry(g.shape.clone()).or_default() += of(&c.tally, g);
        }
    }
    out
}

/// The GPU time of each GEMM shape's launches.
fn gemm_time_by_shape(a: &Aggregate) -> BTreeMap<GemmShape, u64> {
    by_shape(a, |t, _| t.ns)
}

/// The GEMM calls (first launches) of each shape.
fn gemm_calls_by_shape(a: &Aggregate) -> BTreeMap<GemmShape, u64> {
    by_shape(a, |t, g| if g.first { t.calls } else { 0 })
}

/// The roles of `a`'s GEMM shapes under `config` (at `tp`, or the degree that fits
/// best): each shape's label ([`super::matching::label`]), or [`NO_ROLE`].
pub fn shape_roles(
    a: &Aggregate,
    config: &ModelConfig,
    tp: Option<u64>,
) -> std::collections::HashMap<GemmShape, String> {
    assign(config, &gemm_time_by_shape(a), tp)
        .shapes
        .into_iter()
        .map(|(s, roles)| {
            let name = role_name(&roles);
            (s, name)
        })
        .collect()
}

/// The role rows of one scope, whose launches per class are `tallies`.
fn scope_rows(
    a: &Aggregate,
    values: &[ClassValues],
    assignment: &Assignment,
    scope: &str,
    tallies: &BTreeMap<usize, Tally>,
    shape_ns: &BTreeMap<GemmShape, u64>,
) -> Vec<RoleRow> {
    let classes = &a.classes.list;
    let scope_ns: u64 = tallies.values().map(|t| t.ns).sum();
    let mut by_role: BTreeMap<Vec<Role>, Vec<usize>> = BTreeMap::new();
    for &c in tallies.keys() {
        if let Some(g) = &classes[c].key.gemm {
            by_role
                .entry(assignment.shapes[&g.shape].clone())
                .or_default()
                .push(c);
        }
    }
    let first_calls = |cs: &[usize]| -> u64 {
        cs.iter()
            .filter(|&&c| classes[c].key.gemm.as_ref().is_some_and(|g| g.first))
            .map(|&c| tallies[&c].calls)
            .sum()
    };
    let lm_calls: u64 = by_role
        .iter()
        .filter(|(roles, _)| roles.contains(&Role::LmHead))
        .map(|(_, cs)| first_calls(cs))
        .sum();
    let mut rows: Vec<RoleRow> = by_role
        .iter()
        .map(|(roles, cs)| {
            let name = role_name(roles);
            let r = rollup(&name, cs.iter().map(|&c| (&values[c], &tallies[&c])));
            let shapes: BTreeSet<&GemmShape> = cs
                .iter()
                .filter_map(|&c| classes[c].key.gemm.as_ref().map(|g| &g.shape))
                .collect();
            let mut shapes: Vec<&GemmShape> = shapes.into_iter().collect();
            shapes.sort_by(|x, y| shape_ns[*y].cmp(&shape_ns[*x]).then_with(|| x.cmp(y)));
            let ridge = cs.iter().find_map(|&c| {
                let v = &values[c];
                let peak = v.model.and_then(|m| m.peak)?;
                v.bandwidth.filter(|w| *w > 0.0).map(|w| peak / w)
            });
            let bound = r.model.intensity.zip(ridge).map(|(ai, ridge)| {
                if ai < ridge {
                    Bound::Memory
                } else {
                    Bound::Compute
                }
            });
            let calls = first_calls(cs);
            RoleRow {
                scope: scope.to_string(),
                role: name,
                shapes: shapes.iter().map(|s| s.label_as_read()).collect(),
                dims: shapes.iter().map(|s| s.dims_as_read()).collect(),
                calls,
                per_forward: (lm_calls > 0).then(|| calls as f64 / lm_calls as f64),
                share: if scope_ns > 0 {
                    r.gpu_ns as f64 / scope_ns as f64
                } else {
                    0.0
                },
                rollup: r,
                ridge,
                bound,
            }
        })
        .collect();
    rows.sort_by(|x, y| {
        y.rollup
            .gpu_ns
            .cmp(&x.rollup.gpu_ns)
            .then_with(|| x.role.cmp(&y.role))
    });
    rows
}
