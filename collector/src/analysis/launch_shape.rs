//! Why a kernel leaves the GPU idle, from its launch configuration alone: per kernel
//! configuration (kernel, grid, block, on one kind of GPU), how many of its blocks an
//! SM holds ([`occupancy`](super::occupancy): registers, shared memory, warps and
//! the block limit, as NVIDIA's occupancy calculator counts them), how many waves of
//! blocks the grid makes on the GPU's SMs, and a short finding where the shape
//! itself costs time.
//!
//! These are theoretical: they assume every SM is free for the kernel and every block
//! takes as long. Kernels running at once on other streams, MPS or green contexts
//! share the SMs; blocks of unequal work make waves uneven.
//!
//! The findings, each stated when its condition holds, in this order (the table shows
//! the first, JSON and CSV all):
//!
//! | finding | condition | formula |
//! | --- | --- | --- |
//! | "a block needs more than an SM holds" (alone) | no block fits the SM's limits | |
//! | "B blocks on S SMs: X% of SMs busy" | fewer blocks than SMs | X = 100 B / S |
//! | "W waves, the last X% full: Y% of block slots idle" | more than one wave and wave efficiency < 75% | W = B / (S x blocks per SM); Y = 100 - 100 B / (ceil(W) x S x blocks per SM) |
//! | "occupancy at most X%: held by R" | theoretical occupancy < 50%, held by registers or shared memory | X = 100 x blocks per SM x warps per block / warps per SM |
//! | "achieved occupancy A% of a possible X%" | measured (counter `sm__warps_active.avg.pct_of_peak_sustained_active`) below half the theoretical | A: the counter's mean over the measured launches |
//!
//! Without the GPU's compute capability in the table, or without registers in the
//! kernel records, the row says why it has no occupancy.

use std::collections::BTreeMap;

use super::aggregate::Aggregate;
use super::counter_pct::OCCUPANCY;
use super::occupancy::{
    block_threads, grid_blocks, limits, occupancy, waves, BlockNeeds, Occupancy, Waves,
};

/// Below this wave efficiency the tail of the last wave is a finding.
pub const WAVE_EFFICIENCY_FINDING: f64 = 0.75;
/// Below this theoretical occupancy a register or shared memory limit is a finding.
pub const OCCUPANCY_FINDING: f64 = 0.5;

/// One kernel configuration on one kind of GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchShape {
    pub mangled: String,
    pub grid: [i32; 3],
    pub block: [i32; 3],
    /// The GPU's compute capability and SM count (`None`: no device record).
    pub device: Option<((u32, u32), u32)>,
    pub calls: u64,
    pub total_ns: u64,
    pub registers_per_thread: u16,
    /// Static plus dynamic shared memory per block, bytes: least and most.
    pub shared_memory: (u32, u32),
    pub blocks: u64,
    pub threads_per_block: u32,
    /// The theoretical numbers, or why there are none.
    pub theoretical: Result<Theoretical, String>,
    /// Mean achieved occupancy over the measured launches, %; `None` unmeasured.
    pub achieved_occupancy_pct: Option<f64>,
    pub findings: Vec<String>,
}

/// The numbers the launch configuration alone gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theoretical {
    pub occupancy: Occupancy,
    /// `None` when no block fits an SM.
    pub waves: Option<Waves>,
}

type Key<'a> = (&'a str, [i32; 3], [i32; 3], Option<((u32, u32), u32)>);

#[derive(Default)]
struct Acc {
    calls: u64,
    total_ns: u64,
    registers: u16,
    shared: (u32, u32),
    /// Achieved occupancy: (records, sum).
    achieved: (u64, f64),
}

/// Every kernel configuration of `a`, most GPU time first.
pub fn launch_shapes(a: &Aggregate) -> Vec<LaunchShape> {
    let occupancy_metric = a.metrics.find(OCCUPANCY);
    let mut by_key: BTreeMap<Key, Acc> = BTreeMap::new();
    for c in &a.classes.list {
        let device = a
            .devices
            .get(&(c.key.pid, c.key.device_id))
            .map(|d| (d.compute_capability, d.sm_count));
        let acc = by_key
            .entry((c.mangled.as_str(), c.key.grid, c.key.block, device))
            .or_insert_with(|| Acc {
                shared: (u32::MAX, 0),
                ..Acc::default()
            });
        acc.calls += c.tally.calls;
        acc.total_ns = acc.total_ns.saturating_add(c.tally.ns);
        acc.registers = acc.registers.max(c.registers_per_thread);
        acc.shared = (
            acc.shared.0.min(c.shared_memory.0),
            acc.shared.1.max(c.shared_memory.1),
        );
        if let Some((n, sum)) = occupancy_metric.and_then(|id| c.metrics.get(&id)) {
            acc.achieved.0 += n;
            acc.achieved.1 += sum;
        }
    }
    let mut rows: Vec<LaunchShape> = by_key
        .into_iter()
        .map(|((mangled, grid, block, device), acc)| shape(mangled, grid, block, device, &acc))
        .collect();
    rows.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then_with(|| a.mangled.cmp(&b.mangled))
            .then_with(|| a.grid.cmp(&b.grid))
            .then_with(|| a.block.cmp(&b.block))
    });
    rows
}

fn shape(
    mangled: &str,
    grid: [i32; 3],
    block: [i32; 3],
    device: Option<((u32, u32), u32)>,
    acc: &Acc,
) -> LaunchShape {
    let shared_memory = if acc.shared.0 > acc.shared.1 {
        (0, 0)
    } else {
        acc.shared
    };
    let blocks = grid_blocks(grid);
    let threads_per_block = block_threads(block);
    let theoretical = theoretical(
        device,
        threads_per_block,
        acc.registers,
        shared_memory.1,
        blocks,
    );
    let achieved_occupancy_pct =
        (acc.achieved.0 > 0).then(|| acc.achieved.1 / acc.achieved.0 as f64);
    let findings = match (&theoretical, device) {
        (Ok(t), Some((_, sm_count))) => findings(t, blocks, sm_count, achieved_occupancy_pct),
        _ => Vec::new(),
    };
    LaunchShape {
        mangled: mangled.to_string(),
        grid,
        block,
        device,
        calls: acc.calls,
        total_ns: acc.total_ns,
        registers_per_thread: acc.registers,
        shared_memory,
        blocks,
        threads_per_block,
        theoretical,
        achieved_occupancy_pct,
        findings,
    }
}

fn theoretical(
    device: Option<((u32, u32), u32)>,
    threads: u32,
    registers: u16,
    shared_memory: u32,
    blocks: u64,
) -> Result<Theoretical, String> {
    let Some((cc, sm_count)) = device else {
        return Err("no device record for its GPU".to_string());
    };
    let Some(l) = limits(cc) else {
        return Err(format!(
            "the SM limits of compute capability {}.{} are not in gpuprof's table",
            cc.0, cc.1
        ));
    };
    if registers == 0 {
        return Err("its kernel records carry no register count".to_string());
    }
    if threads == 0 || blocks == 0 {
        return Err("its grid or block is empty".to_string());
    }
    let occupancy = occupancy(
        l,
        BlockNeeds {
            threads,
            registers_per_thread: registers.into(),
            shared_memory,
        },
    );
    Ok(Theoretical {
        occupancy,
        waves: waves(blocks, sm_count, occupancy.blocks_per_sm),
    })
}

fn findings(t: &Theoretical, blocks: u64, sm_count: u32, achieved: Option<f64>) -> Vec<String> {
    let mut out = Vec::new();
    let Some(w) = t.waves else {
        out.push("a block needs more than an SM holds".to_string());
        return out;
    };
    if blocks < u64::from(sm_count) {
        out.push(format!(
            "{blocks} block{} on {sm_count} SMs: {:.1}% of SMs busy",
            if blocks == 1 { "" } else { "s" },
            100.0 * w.sms_busy
        ));
    } else if w.waves > 1.0 && w.efficiency < WAVE_EFFICIENCY_FINDING {
        let last = w.blocks - (w.blocks.div_ceil(w.per_wave) - 1).saturating_mul(w.per_wave);
        out.push(format!(
            "{:.2} waves, the last {:.1}% full: {:.1}% of block slots idle",
            w.waves,
            100.0 * last as f64 / w.per_wave as f64,
            100.0 - 100.0 * w.efficiency
        ));
    }
    let o = &t.occupancy;
    let theoretical = o.fraction();
    if theoretical < OCCUPANCY_FINDING && (o.limiters.registers || o.limiters.shared_memory) {
        out.push(format!(
            "occupancy at most {:.1}%: held by {}",
            100.0 * theoretical,
            o.limiters.names().join(" and ")
        ));
    }
    if let Some(a) = achieved {
        if a < 50.0 * theoretical {
            out.push(format!(
                "achieved occupancy {a:.1}% of a possible {:.1}%",
                100.0 * theoretical
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::occupancy::{limits, occupancy, waves, BlockNeeds};

    /// The findings of `blocks` blocks needing `n` of an H100 SM (132 SMs).
    fn on_h100(blocks: u64, n: BlockNeeds, achieved: Option<f64>) -> Vec<String> {
        let o = occupancy(limits((9, 0)).unwrap(), n);
        let t = Theoretical {
            occupancy: o,
            waves: waves(blocks, 132, o.blocks_per_sm),
        };
        findings(&t, blocks, 132, achieved)
    }

    const ONE_BLOCK_AN_SM: BlockNeeds = BlockNeeds {
        threads: 1024,
        registers_per_thread: 64,
        shared_memory: 0,
    };

    #[test]
    fn a_short_last_wave_is_a_finding_and_a_full_one_is_not() {
        // 140 blocks, one an SM: 2 waves started, 140 of 264 slots used.
        assert_eq!(
            on_h100(140, ONE_BLOCK_AN_SM, None),
            ["1.06 waves, the last 6.1% full: 47.0% of block slots idle"]
        );
        // 200 of 264: 75.8%, over the 75% line.
        assert!(on_h100(200, ONE_BLOCK_AN_SM, None).is_empty());
        // Exactly two waves.
        assert!(on_h100(264, ONE_BLOCK_AN_SM, None).is_empty());
    }

    #[test]
    fn registers_and_shared_memory_holding_occupancy_low_are_named() {
        // cuBLAS's sm90 GEMM: 384 threads, 168 registers, 192 KiB of shared memory:
        // one block an SM by both, 12 of 64 warps.
        let n = BlockNeeds {
            threads: 384,
            registers_per_thread: 168,
            shared_memory: 196_608,
        };
        assert_eq!(
            on_h100(264, n, Some(17.0)),
            ["occupancy at most 18.8%: held by registers and shared memory"]
        );
        // Achieved under half of it as well.
        assert_eq!(
            on_h100(264, n, Some(9.0))[1],
            "achieved occupancy 9.0% of a possible 18.8%"
        );
        // Two blocks of 32 warps fill an SM: no finding.
        let big = BlockNeeds {
            threads: 1024,
            registers_per_thread: 32,
            shared_memory: 0,
        };
        assert!(on_h100(264, big, None).is_empty());
    }

    #[test]
    fn a_block_that_fits_no_sm_is_the_only_finding() {
        let n = BlockNeeds {
            threads: 128,
            registers_per_thread: 32,
            shared_memory: 240 * 1024,
        };
        assert_eq!(on_h100(4, n, None), ["a block needs more than an SM holds"]);
    }
}
