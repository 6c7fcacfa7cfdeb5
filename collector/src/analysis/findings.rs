//! What every form of the report shows, computed once and the same way for all of
//! them (the table, CSV to stdout or to a directory, JSON, the report `record`
//! prints): the summary, its counters as percentages of the peaks and the fitted
//! per-class rates' percentages, and the roofline against the same peaks. The output
//! layer renders a [`Findings`]; it computes nothing.

use super::aggregate::Aggregate;
use super::counters::pct_of;
use super::fitted::fitted_pct;
use super::integrity::Integrity;
use super::roles::{model_roles, ModelConfig, ModelRoles};
use super::roofline::efficiency::{efficiency_of, Efficiency};
use super::roofline::peaks::Overrides;
use super::roofline::what_if::{what_if, WhatIfRoles, WhatIfs};
use super::summary::{summarize_aggregate, Summary};

/// A session's numbers, as every report form shows them.
pub struct Findings {
    /// Processes, kernels, copies, ranges, drops, counters (with their percentages of
    /// peak), telemetry, GPU activity, and the damage `integrity` stated.
    pub summary: Summary,
    /// Per kernel, GEMM shape, family, range and run: FLOPs, bytes, AI, MFU, MBU.
    pub roofline: Efficiency,
    /// The roofline at other token counts, when asked for ([`with_what_if`]): the
    /// rows, and the shapes without rows with why.
    pub what_if: Option<WhatIfs>,
    /// The GEMMs by their role in the model: from its config when given
    /// ([`with_roles`]), else inferred from the shapes; `None` without GEMMs.
    pub roles: Option<ModelRoles>,
}

/// The findings of `aggregate` (read as `integrity` says) against `peaks`.
pub fn findings(aggregate: &Aggregate, integrity: &Integrity, peaks: &Overrides) -> Findings {
    let mut summary = summarize_aggregate(aggregate);
    summary.integrity = integrity.clone();
    summary.counters.pct = pct_of(aggregate, &summary.counters.kernels, peaks);
    summary.counters.fitted_pct = fitted_pct(aggregate, peaks);
    let roofline = efficiency_of(aggregate, peaks);
    // Without a config the roles are inferred from the shapes ([`with_roles`] gives
    // them from one).
    let roles = model_roles(
        aggregate,
        &roofline.classes,
        &range_names(&roofline),
        None,
        None,
    );
    Findings {
        summary,
        roofline,
        what_if: None,
        roles,
    }
}

/// `f` with the roofline of every GEMM shape at `tokens`, and with the roles of a
/// config ([`with_roles`] first) of each single-role shape at `degrees`
/// ([`super::roofline::what_if`]).
pub fn with_what_if(mut f: Findings, tokens: &[u64], degrees: &[u64]) -> Findings {
    let roles = f.roles.as_ref().map(|r| WhatIfRoles {
        shapes: &r.assignment.shapes,
        config: r.config.as_ref().zip(r.assignment.tp),
    });
    let w = what_if(&f.roofline, tokens, degrees, roles.as_ref());
    f.what_if = Some(w);
    f
}

/// `f` with its GEMMs named by their role in the model `config` describes, at
/// tensor-parallel degree `tp` or the one that fits best ([`super::roles`]); `aggregate`
/// is the one `f` was found in.
pub fn with_roles(
    mut f: Findings,
    aggregate: &Aggregate,
    config: &ModelConfig,
    tp: Option<u64>,
) -> Findings {
    let ranges = range_names(&f.roofline);
    f.roles = model_roles(aggregate, &f.roofline.classes, &ranges, Some(config), tp);
    f
}

/// The NVTX ranges of the roofline, in its order.
fn range_names(e: &Efficiency) -> Vec<String> {
    e.ranges.iter().map(|r| r.name.clone()).collect()
}
