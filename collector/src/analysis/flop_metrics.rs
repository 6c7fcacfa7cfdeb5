//! Which counters count FLOPs (and how many per count, of which precision), and which
//! count DRAM bytes.

use super::precision::{Math, Precision};

/// Weight (FLOPs per count) and math of a counter that counts FLOPs; `None` for other
/// metrics. Tensor metrics of a precision not recognised have `Some((1, None))`.
pub fn flop_metric(name: &str) -> Option<(f64, Option<Math>)> {
    if let Some(rest) = name
        .strip_prefix("sm__ops_path_tensor_")
        .and_then(|r| r.strip_suffix(".sum"))
    {
        let p = if rest.contains("fp64") {
            Some(Precision::Fp64)
        } else if rest.contains("tf32") {
            Some(Precision::Tf32)
        } else if rest.contains("bf16") {
            Some(Precision::Bf16)
        } else if rest.contains("fp8") || rest.contains("fp6") {
            Some(Precision::Fp8)
        } else if rest.contains("fp4") {
            Some(Precision::Fp4)
        } else if rest.contains("int8") || rest.contains("imma") {
            Some(Precision::Int8)
        } else if rest.contains("fp16") {
            Some(Precision::Fp16)
        } else {
            None
        };
        return Some((1.0, p.map(Math::tensor)));
    }
    let op = name
        .strip_prefix("smsp__sass_thread_inst_executed_op_")?
        .strip_suffix("_pred_on.sum")?;
    let (w, p) = match op {
        "ffma" => (2.0, Precision::Fp32),
        "fadd" | "fmul" => (1.0, Precision::Fp32),
        "ffma2" => (4.0, Precision::Fp32),
        "fadd2" | "fmul2" => (2.0, Precision::Fp32),
        "dfma" => (2.0, Precision::Fp64),
        "dadd" | "dmul" => (1.0, Precision::Fp64),
        "hfma" => (2.0, Precision::Fp16),
        "hadd" | "hmul" => (1.0, Precision::Fp16),
        _ => return None,
    };
    Some((w, Some(Math::cuda(p))))
}

pub const DRAM_READ: &str = "dram__bytes_read.sum";
pub const DRAM_WRITE: &str = "dram__bytes_write.sum";
