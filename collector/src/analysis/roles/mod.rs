//! GEMMs named by their role in the model (`report --model config.json [--tp N]`):
//! the model's dimensions ([`config`]), each GEMM shape's role at a tensor-parallel
//! degree ([`matching`]), and per role, in each NVTX range and over the run, the
//! rollup of its launches ([`rows`]).

pub mod config;
pub mod infer;
pub mod matching;
pub mod rows;

pub use config::ModelConfig;
pub use matching::{Assignment, Role, TpSource};
pub use rows::{model_roles, shape_roles, ModelRoles, RoleRow, NO_ROLE};
