//! The theoretical occupancy the report states (collector/src/analysis/occupancy.rs)
//! against NVIDIA's own occupancy calculator: `cuda_occupancy.h` from every CUDA
//! runtime wheel of the manifest, compiled into tests/c/occupancy_check.c and given
//! the same SM limits and launches. Every compute capability of `SM_LIMITS`, block
//! sizes from one warp to 1,024 threads (whole and partial warps), registers per
//! thread from none to 255, and shared memory from none past what an SM holds.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use gpuprof_collector::analysis::occupancy::{occupancy, BlockNeeds, SmLimits, SM_LIMITS};
use gpuprof_tests::{compile_c, manifest};

const THREADS: [u32; 12] = [1, 32, 64, 96, 100, 128, 192, 256, 384, 512, 768, 1024];
const REGISTERS: [u32; 16] = [
    0, 1, 8, 16, 32, 33, 40, 64, 72, 96, 100, 128, 168, 200, 255, 256,
];
/// (static, dynamic) shared memory, bytes.
const SHARED: [(u32, u32); 10] = [
    (0, 0),
    (1000, 0),
    (0, 16_384),
    (16_384, 32_768),
    (0, 49_152),
    (0, 65_536),
    (0, 99_000),
    (0, 166_912),
    (0, 196_608),
    (0, 232_448),
];

struct Case {
    sm: SmLimits,
    threads: u32,
    registers: u32,
    shared: (u32, u32),
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for sm in SM_LIMITS {
        for threads in THREADS {
            for registers in REGISTERS {
                for shared in SHARED {
                    v.push(Case {
                        sm,
                        threads,
                        registers,
                        shared,
                    });
                }
            }
        }
    }
    v
}

fn input_line(c: &Case) -> String {
    let l = &c.sm;
    format!(
        "{} {} {} {} {} {} {} {} {} {} {} {} {} {}\n",
        l.compute_capability.0,
        l.compute_capability.1,
        l.max_threads_per_sm,
        l.registers_per_sm,
        l.registers_per_block,
        l.max_threads_per_block,
        l.shared_memory_per_sm,
        l.shared_memory_per_block,
        l.shared_memory_per_block_optin,
        l.reserved_shared_memory_per_block,
        c.threads,
        c.registers,
        c.shared.0,
        c.shared.1
    )
}

/// NVIDIA's answers, a line per case.
fn nvidia(include: &Path, cases: &[Case]) -> Vec<String> {
    let stem = include
        .to_string_lossy()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    let out = format!("occupancy/{}", &stem[stem.len().saturating_sub(60)..]);
    let include = include.to_str().expect("a UTF-8 include path");
    let exe = compile_c(
        "occupancy_check.c",
        &out,
        &["-std=c99", "-O1", "-I", include],
    );
    let mut child = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the occupancy check");
    let input: String = cases.iter().map(input_line).collect();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write the cases");
    let out = child
        .wait_with_output()
        .expect("the occupancy check's output");
    assert!(out.status.success(), "{} failed", exe.display());
    String::from_utf8(out.stdout)
        .expect("ASCII output")
        .lines()
        .map(str::to_string)
        .collect()
}

fn ours(c: &Case) -> String {
    let o = occupancy(
        &c.sm,
        BlockNeeds {
            threads: c.threads,
            registers_per_thread: c.registers,
            shared_memory: c.shared.0 + c.shared.1,
        },
    );
    let l = o.limiters;
    let bits = u32::from(l.warps)
        | u32::from(l.registers) << 1
        | u32::from(l.shared_memory) << 2
        | u32::from(l.blocks) << 3;
    format!("{} {bits}", o.blocks_per_sm)
}

/// NVIDIA's limiting-factor bits without the barrier bit (see [`ours`]): on the
/// capabilities whose barrier limit equals the block limit both bits are set together.
fn without_barriers(line: &str, cc: (u32, u32)) -> String {
    let mut w = line.split(' ');
    let (Some(blocks), Some(bits)) = (w.next(), w.next()) else {
        return line.to_string();
    };
    let Ok(bits) = bits.parse::<u32>() else {
        return line.to_string();
    };
    let barriers = bits & 0x10 != 0;
    let blocks_bit = bits & 0x08 != 0;
    let one_barrier_per_block_slot = matches!(cc, (8, 6) | (8, 7) | (8, 9) | (10, 3) | (12, _));
    assert!(
        !barriers || (blocks_bit && one_barrier_per_block_slot),
        "the barrier limit set alone for {cc:?}: {line}"
    );
    format!("{blocks} {}", bits & !0x10)
}

#[test]
fn theoretical_occupancy_is_nvidias_for_every_capability_and_launch() {
    let cases = cases();
    let includes: BTreeSet<&Path> = manifest()
        .iter()
        .map(|r| r.cuda_include.as_path())
        .collect();
    assert!(
        !includes.is_empty(),
        "no CUDA runtime headers in the manifest"
    );
    let mut newest_known = 0;
    for include in &includes {
        let answers = nvidia(include, &cases);
        assert_eq!(answers.len(), cases.len(), "{}", include.display());
        let mut known = 0;
        for (c, theirs) in cases.iter().zip(&answers) {
            if theirs.starts_with("error") {
                // An older header that does not know a newer capability.
                continue;
            }
            known += 1;
            assert_eq!(
                ours(c),
                without_barriers(theirs, c.sm.compute_capability),
                "cc {:?}, {} threads, {} registers, shared {:?} ({})",
                c.sm.compute_capability,
                c.threads,
                c.registers,
                c.shared,
                include.display()
            );
        }
        newest_known = newest_known.max(known);
    }
    assert_eq!(
        newest_known,
        cases.len(),
        "no CUDA runtime header of the manifest knows every capability of SM_LIMITS"
    );
}
