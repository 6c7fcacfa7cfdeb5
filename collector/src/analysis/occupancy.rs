//! Theoretical occupancy and waves of a launch: how many blocks of a kernel an SM can
//! hold at once (its grid's block size, registers per thread and shared memory per
//! block against the SM's limits), and how many rounds ("waves") of blocks the grid
//! takes on the whole GPU.
//!
//! The per-SM limits of each compute capability are the CUDA C++ Programming Guide's
//! ("Technical Specifications per Compute Capability"); only a GPU's driver can
//! confirm them (`cuDeviceGetAttribute`), so docs/ARCHITECTURE.md lists them as
//! unchecked. How a block's resources are allocated (registers per warp in units of
//! 256 and split over the SM's four sub-partitions, shared memory in units of 128
//! bytes plus 1 KiB the driver reserves per block, warps whole) follows NVIDIA's
//! occupancy calculator, `cuda_occupancy.h`: a test compiles that header from
//! NVIDIA's CUDA runtime wheel and compares its answer with [`occupancy`] for every
//! capability here over a grid of launches
//! (`tests/tests/it/collector/analysis/occupancy.rs`).
//!
//! Two inputs of NVIDIA's calculator are not in a kernel record and are taken as its
//! defaults: the kernel's block barriers (1, which never limits below the block
//! limit) and its virtual resource count (0: no limit). The shared memory carveout is
//! the driver's default (as much shared memory as the SM has).

/// What one SM of a compute capability holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmLimits {
    pub compute_capability: (u32, u32),
    pub max_threads_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub registers_per_sm: u32,
    pub registers_per_block: u32,
    pub max_threads_per_block: u32,
    /// Shared memory per SM at the largest carveout, bytes.
    pub shared_memory_per_sm: u32,
    /// Shared memory a block may have without opting in, bytes.
    pub shared_memory_per_block: u32,
    /// Shared memory a block may have once the kernel opts in, bytes.
    pub shared_memory_per_block_optin: u32,
    /// Shared memory the driver reserves for each block, bytes.
    pub reserved_shared_memory_per_block: u32,
}

pub const WARP_SIZE: u32 = 32;
/// Registers are given to a warp in units of this many.
const REGISTER_UNIT: u32 = 256;
/// An SM's registers are split evenly over this many sub-partitions (SMSPs), each
/// holding whole warps.
const SUB_PARTITIONS: u32 = 4;
/// The most registers a thread can have.
const MAX_REGISTERS_PER_THREAD: u32 = 256;
/// Shared memory is given to a block in units of this many bytes (compute capability
/// 8.0 and later).
const SHARED_MEMORY_UNIT: u32 = 128;

const KIB: u32 = 1024;

const fn sm(
    cc: (u32, u32),
    max_threads_per_sm: u32,
    max_blocks_per_sm: u32,
    shared_kib: u32,
) -> SmLimits {
    SmLimits {
        compute_capability: cc,
        max_threads_per_sm,
        max_blocks_per_sm,
        registers_per_sm: 64 * KIB,
        registers_per_block: 64 * KIB,
        max_threads_per_block: 1024,
        shared_memory_per_sm: shared_kib * KIB,
        shared_memory_per_block: 48 * KIB,
        shared_memory_per_block_optin: (shared_kib - 1) * KIB,
        reserved_shared_memory_per_block: KIB,
    }
}

/// The SMs of the GPUs inference runs on: A100 (8.0), A10 / A40 / RTX 30 (8.6),
/// Jetson Orin (8.7), L4 / L40S / RTX 40 (8.9), H100 / H200 (9.0), B200 (10.0),
/// B300 (10.3), RTX PRO 6000 / RTX 50 (12.0).
pub const SM_LIMITS: [SmLimits; 8] = [
    sm((8, 0), 2048, 32, 164),
    sm((8, 6), 1536, 16, 100),
    sm((8, 7), 2048, 16, 164),
    sm((8, 9), 1536, 24, 100),
    sm((9, 0), 2048, 32, 228),
    sm((10, 0), 2048, 32, 228),
    sm((10, 3), 2048, 32, 228),
    sm((12, 0), 1536, 24, 100),
];

/// The limits of compute capability `cc`; `None` for one this table does not know.
pub fn limits(cc: (u32, u32)) -> Option<&'static SmLimits> {
    SM_LIMITS.iter().find(|l| l.compute_capability == cc)
}

/// What one launch needs of an SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockNeeds {
    pub threads: u32,
    /// Registers per thread (0: not recorded).
    pub registers_per_thread: u32,
    /// Static plus dynamic shared memory, bytes.
    pub shared_memory: u32,
}

/// The resource that holds an SM to fewer blocks (NVIDIA's calculator names every
/// one that gives the smallest count; this keeps them all).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limiters {
    pub warps: bool,
    pub registers: bool,
    pub shared_memory: bool,
    pub blocks: bool,
}

impl Limiters {
    /// The limiting resources by name ("registers", "shared memory", "warps",
    /// "blocks").
    pub fn names(&self) -> Vec<&'static str> {
        self.each().map(|(name, _)| name).collect()
    }

    /// The limiting resources, abbreviated and "+"-joined ("regs+warps").
    pub fn short(&self) -> String {
        self.each()
            .map(|(_, short)| short)
            .collect::<Vec<_>>()
            .join("+")
    }

    fn each(&self) -> impl Iterator<Item = (&'static str, &'static str)> {
        [
            (self.registers, "registers", "regs"),
            (self.shared_memory, "shared memory", "smem"),
            (self.warps, "warps", "warps"),
            (self.blocks, "blocks", "blocks"),
        ]
        .into_iter()
        .filter(|(on, _, _)| *on)
        .map(|(_, name, short)| (name, short))
    }
}

/// How many blocks of a launch one SM holds at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occupancy {
    /// Blocks resident per SM (0: the block does not fit an SM).
    pub blocks_per_sm: u32,
    pub limiters: Limiters,
    pub warps_per_block: u32,
    pub max_warps_per_sm: u32,
}

impl Occupancy {
    /// Resident warps over the SM's most, 0-1.
    pub fn fraction(&self) -> f64 {
        if self.max_warps_per_sm == 0 {
            return 0.0;
        }
        f64::from(self.blocks_per_sm * self.warps_per_block) / f64::from(self.max_warps_per_sm)
    }
}

fn round_up(x: u64, unit: u64) -> u64 {
    x.div_ceil(unit) * unit
}

/// Blocks per SM allowed by registers (`u32::MAX`: no limit).
fn by_registers(l: &SmLimits, registers: u32, warps: u32) -> u32 {
    let per_warp = round_up(
        u64::from(registers) * u64::from(WARP_SIZE),
        REGISTER_UNIT.into(),
    );
    if per_warp == 0 {
        return u32::MAX;
    }
    // The block's warps are spread over the sub-partitions: the block needs the
    // registers of its warps rounded up to a whole number per sub-partition.
    let assumed = per_warp * round_up(warps.into(), SUB_PARTITIONS.into());
    let allocated = per_warp * u64::from(warps);
    if registers > MAX_REGISTERS_PER_THREAD
        || assumed > l.registers_per_block.into()
        || allocated > l.registers_per_block.into()
    {
        return 0;
    }
    let warps_per_sub_partition = u64::from(l.registers_per_sm / SUB_PARTITIONS) / per_warp;
    (warps_per_sub_partition * u64::from(SUB_PARTITIONS) / u64::from(warps)) as u32
}

/// Blocks per SM allowed by shared memory (`u32::MAX`: no limit).
fn by_shared_memory(l: &SmLimits, shared_memory: u32) -> u32 {
    let needed = u64::from(shared_memory) + u64::from(l.reserved_shared_memory_per_block);
    let allocated = round_up(needed, SHARED_MEMORY_UNIT.into());
    // The launch ran, so a block over the default limit had opted in.
    let per_block = if needed > l.shared_memory_per_block.into() {
        l.shared_memory_per_block_optin
    } else {
        l.shared_memory_per_block
    };
    if allocated > u64::from(per_block) + u64::from(l.reserved_shared_memory_per_block) {
        return 0;
    }
    if allocated == 0 {
        return u32::MAX;
    }
    (u64::from(l.shared_memory_per_sm) / allocated) as u32
}

/// The blocks of a launch needing `n` one SM of limits `l` holds at once.
pub fn occupancy(l: &SmLimits, n: BlockNeeds) -> Occupancy {
    let warps = n.threads.div_ceil(WARP_SIZE).max(1);
    let max_warps_per_sm = l.max_threads_per_sm / WARP_SIZE;
    let by_warps = if n.threads > l.max_threads_per_block {
        0
    } else {
        max_warps_per_sm / warps
    };
    let by_regs = by_registers(l, n.registers_per_thread, warps);
    let by_shared = by_shared_memory(l, n.shared_memory);
    let by_blocks = l.max_blocks_per_sm;
    let blocks = by_warps.min(by_regs).min(by_shared).min(by_blocks);
    Occupancy {
        blocks_per_sm: blocks,
        limiters: Limiters {
            warps: by_warps == blocks,
            registers: by_regs == blocks,
            shared_memory: by_shared == blocks,
            blocks: by_blocks == blocks,
        },
        warps_per_block: warps,
        max_warps_per_sm,
    }
}

/// How a grid's blocks fill the GPU, assuming every SM holds as many as
/// [`occupancy`] allows and the blocks take equally long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Waves {
    pub blocks: u64,
    /// Blocks the whole GPU holds at once.
    pub per_wave: u64,
    /// Blocks over `per_wave`.
    pub waves: f64,
    /// SMs with a block in the first wave over all SMs, 0-1.
    pub sms_busy: f64,
    /// Blocks over the slots of every wave started (the last one counted whole), 0-1:
    /// what the tail of the last wave leaves idle.
    pub efficiency: f64,
}

/// The waves of a grid of `blocks` on `sm_count` SMs holding `blocks_per_sm` each;
/// `None` when nothing fits.
pub fn waves(blocks: u64, sm_count: u32, blocks_per_sm: u32) -> Option<Waves> {
    let per_wave = u64::from(sm_count) * u64::from(blocks_per_sm);
    if per_wave == 0 || blocks == 0 {
        return None;
    }
    let started = blocks.div_ceil(per_wave);
    Some(Waves {
        blocks,
        per_wave,
        waves: blocks as f64 / per_wave as f64,
        sms_busy: blocks.min(u64::from(sm_count)) as f64 / f64::from(sm_count),
        efficiency: blocks as f64 / (started as f64 * per_wave as f64),
    })
}

/// The blocks of a grid (`i32` as CUPTI records them; a negative dimension counts as
/// none).
pub fn grid_blocks(grid: [i32; 3]) -> u64 {
    grid.iter()
        .map(|&d| u64::try_from(d).unwrap_or(0))
        .fold(1, u64::saturating_mul)
}

/// The threads of a block (as [`grid_blocks`]).
pub fn block_threads(block: [i32; 3]) -> u32 {
    u32::try_from(grid_blocks(block)).unwrap_or(u32::MAX)
}
