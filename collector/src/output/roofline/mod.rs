//! What `gpuprof roofline` writes: the chart per GPU model, laid out ([`layout`])
//! and written as SVG ([`svg`]), and the points behind it as CSV and JSON
//! ([`points`]).

pub mod layout;
pub mod points;
pub mod svg;
