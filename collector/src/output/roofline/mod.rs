//! What `gpuprof roofline` writes: the chart per GPU model as SVG ([`svg`]) and the
//! points behind it as CSV and JSON ([`points`]).

pub mod points;
pub mod svg;
