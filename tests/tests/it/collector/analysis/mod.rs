//! The numbers of a report (`collector/src/analysis`): counters, percentages of peak,
//! the roofline, PM sampling deconvolved.

mod api_calls;
mod counter_pct;
mod counters;
mod deconvolve;
mod h200_sessions;
mod model_roles;
mod occupancy;
mod roofline;
