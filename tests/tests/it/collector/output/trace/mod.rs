//! `gpuprof trace`'s formats (`collector/src/output/trace`).

mod kineto;
mod perfetto;
