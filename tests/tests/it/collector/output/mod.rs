//! What the commands write (`collector/src/output`): the report in every format, the
//! roofline chart, traces and profiles, read back by their real readers.

mod pprof_go;
mod report;
mod report_readable;
mod roofline_chart;
mod trace;
