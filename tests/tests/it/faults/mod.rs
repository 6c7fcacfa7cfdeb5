//! The fault matrix (docs/ARCHITECTURE.md, "What gpuprof promises"): each test breaks
//! one thing a real machine breaks, across libgpuprof.so, the ring and the collector.

mod files;
mod ring;
