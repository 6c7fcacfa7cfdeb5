//! The simulated CUDA stack (`tests/sim`): driver, CUPTI, cuBLAS, seen by C clients and
//! real third-party programs.

mod clients;
mod cublas;
mod cupti;
mod cupti_nvtx;
mod cupti_profiler;
mod driver;
mod driver_api;
