//! The roofline formulas (docs/ARCHITECTURE.md, "collector"), on plain numbers.
//!
//! - model FLOPs of a GEMM = 2 · M · N · K · batch, × 4 when complex;
//! - arithmetic intensity (AI) = FLOPs / DRAM bytes, FLOP/byte;
//! - achieved = FLOPs / duration, FLOP/s;
//! - MFU = achieved / peak FLOP/s of the kernel's precision;
//! - MBU = (DRAM bytes / duration) / peak DRAM bandwidth;
//! - ridge point = peak / bandwidth, FLOP/byte;
//! - bound = memory if AI < ridge, else compute;
//! - attainable = min(peak, AI · bandwidth), FLOP/s;
//! - roofline efficiency = achieved / attainable.
//!
//! A value whose inputs are missing is `None`, and [`Point::missing`] says which input
//! was missing; nothing is ever estimated in its place. Fractions (MFU, MBU,
//! efficiency) are fractions, not percentages.

mod dram_bytes;
pub mod efficiency;
mod hw_flops;
mod peak_table;
pub mod peaks;
pub mod verdict;
pub mod what_if;

use serde::Serialize;

/// 2 · M · N · K · batch FLOPs of a GEMM (a multiply-add is 2 FLOPs); a complex
/// multiply-add is 4 real multiply-adds, so complex GEMMs count 4 times that.
pub fn gemm_flops(m: u64, n: u64, k: u64, batch: u64, complex: bool) -> f64 {
    let real = 2.0 * m as f64 * n as f64 * k as f64 * batch as f64;
    if complex {
        4.0 * real
    } else {
        real
    }
}

/// What limits a kernel on the roofline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// AI below the ridge point: DRAM bandwidth is the ceiling.
    Memory,
    /// AI at or above the ridge point: the FLOP/s peak is the ceiling.
    Compute,
}

impl Bound {
    pub fn name(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
        }
    }
}

/// An input the roofline needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Input {
    Flops,
    Bytes,
    Duration,
    PeakFlops,
    Bandwidth,
}

/// What a kernel (or a group of kernels) did, and the ceilings of its GPU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Inputs {
    /// FLOPs done (model or hardware, as the caller chose).
    pub flops: Option<f64>,
    /// DRAM bytes read + written.
    pub bytes: Option<f64>,
    /// GPU time, ns.
    pub duration_ns: u64,
    /// Peak FLOP/s for the precision the FLOPs are in.
    pub peak_flops: Option<f64>,
    /// Peak DRAM bandwidth, bytes/s.
    pub bandwidth: Option<f64>,
}

/// A kernel's place on the roofline. `None` where an input was missing. With zero
/// DRAM bytes and some FLOPs the AI is unbounded: `intensity` is `None`, the kernel is
/// compute bound and its attainable FLOP/s is the peak.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Point {
    /// FLOP/byte.
    pub intensity: Option<f64>,
    /// FLOP/s.
    pub achieved: Option<f64>,
    /// Achieved / peak, a fraction.
    pub mfu: Option<f64>,
    /// DRAM throughput / bandwidth, a fraction.
    pub mbu: Option<f64>,
    /// Peak / bandwidth, FLOP/byte.
    pub ridge: Option<f64>,
    pub bound: Option<Bound>,
    /// min(peak, AI · bandwidth), FLOP/s.
    pub attainable: Option<f64>,
    /// Achieved / attainable, a fraction.
    pub efficiency: Option<f64>,
    /// The inputs that were missing (a zero duration, peak or bandwidth counts as
    /// missing), in [`Input`] order.
    pub missing: Vec<Input>,
}

fn usable(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite() && *x >= 0.0)
}

fn nonzero(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite() && *x > 0.0)
}

/// Every formula of the module documentation on `i`.
pub fn evaluate(i: &Inputs) -> Point {
    let flops = usable(i.flops);
    let bytes = usable(i.bytes);
    let ns = (i.duration_ns > 0).then_some(i.duration_ns as f64);
    let peak = nonzero(i.peak_flops);
    let bandwidth = nonzero(i.bandwidth);

    let mut missing = Vec::new();
    if flops.is_none() {
        missing.push(Input::Flops);
    }
    if bytes.is_none() {
        missing.push(Input::Bytes);
    }
    if ns.is_none() {
        missing.push(Input::Duration);
    }
    if peak.is_none() {
        missing.push(Input::PeakFlops);
    }
    if bandwidth.is_none() {
        missing.push(Input::Bandwidth);
    }

    // No DRAM traffic (everything hit in L2): MBU 0, AI unbounded (`None`), so FLOPs
    // done are compute bound and the attainable ceiling is the peak.
    let unbounded = matches!((flops, bytes), (Some(f), Some(b)) if b == 0.0 && f > 0.0);
    let intensity = flops
        .zip(bytes)
        .filter(|(_, b)| *b > 0.0)
        .map(|(f, b)| f / b);
    // Per second from per ns: × 1e9 first, so round figures stay exact.
    let achieved = flops.zip(ns).map(|(f, t)| f * 1e9 / t);
    let mfu = achieved.zip(peak).map(|(a, p)| a / p);
    let mbu = bytes
        .zip(ns)
        .zip(bandwidth)
        .map(|((b, t), bw)| b * 1e9 / t / bw);
    let ridge = peak.zip(bandwidth).map(|(p, bw)| p / bw);
    let bound = match intensity.zip(ridge) {
        Some((ai, r)) if ai < r => Some(Bound::Memory),
        Some(_) => Some(Bound::Compute),
        None if unbounded => Some(Bound::Compute),
        None => None,
    };
    let attainable = match intensity.zip(peak).zip(bandwidth) {
        Some(((ai, p), bw)) => Some(p.min(ai * bw)),
        None if unbounded => peak,
        None => None,
    };
    let efficiency = achieved
        .zip(attainable)
        .and_then(|(a, t)| (t > 0.0).then(|| a / t));
    Point {
        intensity,
        achieved,
        mfu,
        mbu,
        ridge,
        bound,
        attainable,
        efficiency,
        missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100_BF16: f64 = 989.4e12;
    const H100_BW: f64 = 3.35e12;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        ((a - b) / b).abs() <= rel
    }

    #[test]
    fn gemm_flops_count_two_per_multiply_add() {
        assert_eq!(gemm_flops(4096, 4096, 4096, 1, false), 137_438_953_472.0);
        assert_eq!(gemm_flops(2, 3, 4, 5, false), 240.0);
        assert_eq!(gemm_flops(2, 3, 4, 5, true), 960.0);
        assert_eq!(gemm_flops(0, 3, 4, 5, false), 0.0);
    }

    #[test]
    fn square_bf16_gemm_on_an_h100_sxm() {
        // 4096^3 BF16 in 0.16 ms: A and B read, C written once, 2 bytes each.
        let bytes = 3.0 * 4096.0 * 4096.0 * 2.0;
        let p = evaluate(&Inputs {
            flops: Some(gemm_flops(4096, 4096, 4096, 1, false)),
            bytes: Some(bytes),
            duration_ns: 160_000,
            peak_flops: Some(H100_BF16),
            bandwidth: Some(H100_BW),
        });
        let achieved = p.achieved.unwrap();
        assert!(close(achieved, 859.0e12, 0.001), "{achieved}");
        assert_eq!(achieved, 858_993_459_200_000.0);
        assert_eq!((p.mfu.unwrap() * 1000.0).round() / 10.0, 86.8);
        // AI = 2·4096 / (3·2) = 1365.33 FLOP/byte; ridge = 989.4 / 3.35 = 295.3.
        assert_eq!(p.intensity, Some(8192.0 / 6.0));
        assert_eq!(p.ridge, Some(H100_BF16 / H100_BW));
        assert_eq!(p.bound, Some(Bound::Compute));
        assert_eq!(p.attainable, Some(H100_BF16));
        assert_eq!(p.efficiency, p.mfu);
        // 100,663,296 bytes in 0.16 ms = 629 GB/s = 18.8% of 3.35 TB/s.
        assert_eq!((p.mbu.unwrap() * 1000.0).round() / 10.0, 18.8);
        assert!(p.missing.is_empty());
    }

    #[test]
    fn decode_gemv_on_an_h100_is_memory_bound() {
        // y = W x with W 8192 x 8192 BF16 (134,217,728 bytes) read once, x and y tiny:
        // 2·8192·8192 = 134,217,728 FLOPs, AI = 1 FLOP/byte (ignoring x and y).
        // At 3.0 TB/s it takes 44,739 ns.
        let flops = gemm_flops(8192, 1, 8192, 1, false);
        let bytes = 8192.0 * 8192.0 * 2.0;
        let p = evaluate(&Inputs {
            flops: Some(flops),
            bytes: Some(bytes),
            duration_ns: 44_739,
            peak_flops: Some(H100_BF16),
            bandwidth: Some(H100_BW),
        });
        assert_eq!(p.intensity, Some(1.0));
        assert_eq!(p.bound, Some(Bound::Memory));
        // Attainable = 1 FLOP/byte x 3.35 TB/s = 3.35 TFLOP/s.
        assert_eq!(p.attainable, Some(H100_BW));
        // Achieved = 134,217,728 / 44,739 ns = 3.0000 TFLOP/s: 0.30% MFU, 89.6% MBU and
        // roofline efficiency.
        let achieved = p.achieved.unwrap();
        assert!(close(achieved, 3.0e12, 0.0001), "{achieved}");
        assert_eq!((p.mfu.unwrap() * 10000.0).round() / 100.0, 0.3);
        assert_eq!((p.mbu.unwrap() * 1000.0).round() / 10.0, 89.6);
        assert_eq!(p.efficiency, p.mbu);
    }

    #[test]
    fn llama_prefill_gemm_on_an_a100() {
        // M=N=8192 (tokens x out features), K=4096 BF16 on an A100 SXM 80GB in 1.8 ms:
        // 2·8192·8192·4096 = 549,755,813,888 FLOPs -> 305.4 TFLOP/s, 97.9% of 312.
        let p = evaluate(&Inputs {
            flops: Some(gemm_flops(8192, 8192, 4096, 1, false)),
            bytes: Some((8192.0 * 4096.0 * 2.0 + 8192.0 * 8192.0) * 2.0),
            duration_ns: 1_800_000,
            peak_flops: Some(312e12),
            bandwidth: Some(2.039e12),
        });
        assert!(close(p.achieved.unwrap(), 305.42e12, 0.0001));
        assert_eq!((p.mfu.unwrap() * 1000.0).round() / 10.0, 97.9);
        // Bytes = 268,435,456: AI = 2048 FLOP/byte; ridge = 312 / 2.039 = 153.0.
        assert_eq!(p.intensity, Some(2048.0));
        assert_eq!((p.ridge.unwrap() * 10.0).round() / 10.0, 153.0);
        assert_eq!(p.bound, Some(Bound::Compute));
    }

    #[test]
    fn no_dram_traffic_is_compute_bound() {
        let p = evaluate(&Inputs {
            flops: Some(1e9),
            bytes: Some(0.0),
            duration_ns: 1000,
            peak_flops: Some(2e15),
            bandwidth: Some(1e12),
        });
        assert_eq!((p.intensity, p.mbu), (None, Some(0.0)));
        assert_eq!(p.bound, Some(Bound::Compute));
        assert_eq!(p.attainable, Some(2e15));
        assert_eq!(p.efficiency, Some(0.5));
        assert!(p.missing.is_empty());
        // No FLOPs and no bytes: nothing to place.
        let p = evaluate(&Inputs {
            flops: Some(0.0),
            bytes: Some(0.0),
            duration_ns: 1000,
            peak_flops: Some(2e15),
            bandwidth: Some(1e12),
        });
        assert_eq!((p.intensity, p.bound, p.attainable), (None, None, None));
        assert_eq!((p.mfu, p.mbu), (Some(0.0), Some(0.0)));
    }

    #[test]
    fn missing_inputs_leave_what_depends_on_them_empty() {
        let p = evaluate(&Inputs {
            flops: Some(1e9),
            bytes: None,
            duration_ns: 1000,
            peak_flops: None,
            bandwidth: Some(1e12),
        });
        assert_eq!(p.achieved, Some(1e15));
        assert_eq!(
            (p.intensity, p.mfu, p.mbu, p.ridge, p.bound, p.attainable),
            (None, None, None, None, None, None)
        );
        assert_eq!(p.efficiency, None);
        assert_eq!(p.missing, vec![Input::Bytes, Input::PeakFlops]);

        let p = evaluate(&Inputs {
            flops: None,
            bytes: Some(1e6),
            duration_ns: 0,
            peak_flops: Some(1e12),
            bandwidth: Some(1e12),
        });
        assert_eq!((p.achieved, p.mbu, p.intensity), (None, None, None));
        assert_eq!(p.ridge, Some(1.0));
        assert_eq!(p.missing, vec![Input::Flops, Input::Duration]);
    }
}
