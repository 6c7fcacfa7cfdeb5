//! The simulated cuBLAS and cuBLASLt (`tests/sim/cublas`, `tests/sim/cublaslt`) seen by
//! a C client (`tests/c/cublas_client.c`) that loads them by their real sonames: status
//! codes as `cublas_api.h` / `cublasLt.h` document them, descriptor attributes, and for
//! each GEMM the exact kernel (name, grid, block, shared memory, registers) launched
//! through the driver and the GEMM shape announced to it.
//!
//! Most tests run on `tests/c/blas_fake_libcuda.c`, a stand-in driver that reports each
//! launch with the shape the library set (`set_thread_gemm`) as its counters. The last
//! runs on the simulated driver itself.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use gpuprof_tests::{artifact, clean_env, compile_c, target_profile_dir};

/// A directory holding `libcublas.so.12` and `libcublasLt.so.12` (and the unversioned
/// names cudarc tries first), symlinks to the workspace's libraries.
fn blas_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = target_profile_dir().join("sim-cublas");
        std::fs::create_dir_all(&dir).expect("create sim-cublas dir");
        for (lib, links) in [
            ("libcublas.so", ["libcublas.so.12", "libcublas.so"]),
            ("libcublasLt.so", ["libcublasLt.so.12", "libcublasLt.so"]),
        ] {
            let target = artifact(lib);
            for link in links {
                let tmp = dir.join(format!(".{link}.{}", std::process::id()));
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(&target, &tmp).expect("symlink");
                std::fs::rename(&tmp, dir.join(link)).expect("rename symlink");
            }
        }
        dir
    })
    .clone()
}

fn fake_driver_dir() -> PathBuf {
    let f = compile_c(
        "blas_fake_libcuda.c",
        "blas-fake-driver/libcuda.so.1",
        &["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1"],
    );
    f.parent().expect("parent").to_path_buf()
}

fn run_client(driver_dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(compile_c("cublas_client.c", "cublas_client", &[]));
    clean_env(&mut cmd);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("FAKE_")) {
        cmd.env_remove(k);
    }
    let path = format!("{}:{}", blas_dir().display(), driver_dir.display());
    cmd.env("LD_LIBRARY_PATH", path).envs(env.iter().copied());
    let out = cmd.output().expect("run cublas_client");
    assert!(
        out.status.success(),
        "cublas_client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const SM90_BF16: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_{}_n_tilesize128x128x64_cgasize1x1x1_warpgroupsize1x1x1_aligna4_alignc4_execute_segment_k_off_kernel__5x_cublas";
const GEMV_BF16_T: &str = "_Z17gemv2T_kernel_valIii13__nv_bfloat16S0_S0_fLi128ELi16ELi4ELi4ELb0ELb0E18cublasGemvParamsExIi30cublasGemvTensorStridedBatchedIKS0_ES4_S2_IS0_EfEEvT11_T4_S8_";

fn sm90_bf16(ab: &str) -> String {
    SM90_BF16.replace("{}", ab)
}

/// A launch line and the shape lines the fake driver reports after it.
fn launch(name: &str, grid: &str, block: &str, smem: u32, regs: u32, shape: [u64; 5]) -> String {
    let [m, n, k, batch, eb] = shape;
    format!(
        "launch {name} grid={grid} block={block} smem={smem} regs={regs}\n  m={m}\n  n={n}\n  k={k}\n  batch={batch}\n  elem_bytes={eb}\n"
    )
}

#[test]
fn hopper_kernels_shapes_and_status_codes() {
    let out = run_client(&fake_driver_dir(), &[]);
    let expected = String::new()
        + "set_tracer=0\n\
           cublasCreate_v2=0\n\
           cublasGetVersion_v2=0 120901\n\
           cublasSetStream_v2=0\n\
           cublasGetStream_v2=0 same=1\n\
           -- GemmEx bf16 T,N 4096x4096x4096\n"
        + &launch(&sm90_bf16("tn"), "32,32,1", "384,1,1", 196608, 168, [4096, 4096, 4096, 1, 2])
        + "cublasGemmEx=0\n\
           -- GemmStridedBatchedEx bf16 N,N 128x256x64 batch 32\n"
        + &launch(&sm90_bf16("nn"), "1,2,32", "384,1,1", 196608, 168, [128, 256, 64, 32, 2])
        + "cublasGemmStridedBatchedEx=0\n\
           -- Sgemm N,T 1000x500x300\n"
        + &launch(
            "sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
            "8,4,1",
            "128,1,1",
            24576,
            128,
            [1000, 500, 300, 1, 4],
        )
        + "cublasSgemm_v2=0\n\
           -- Sgemm with TF32 math 256x256x256\n\
           cublasSetMathMode=0\n"
        + &launch(
            "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
            "2,2,1",
            "384,1,1",
            196608,
            168,
            [256, 256, 256, 1, 4],
        )
        + "cublasSgemm_v2=0\n\
           cublasSetMathMode=0\n\
           -- GemmEx bf16 T,N 4096x1x4096 (GEMV)\n"
        + &launch(GEMV_BF16_T, "256,1,1", "128,1,1", 0, 32, [4096, 1, 4096, 1, 2])
        + "cublasGemmEx=0\n\
           -- errors\n\
           m<0=7\n\
           lda<k (op T)=7\n\
           ldc<m=7\n\
           bf16 x fp16=15\n\
           alpha NULL=7\n\
           m=0=0\n\
           batch=0=0\n\
           cublasGetStatusName(15)=CUBLAS_STATUS_NOT_SUPPORTED\n\
           -- cublasLt bf16 T,N m=2048 n=512 k=1024 batch 4\n\
           cublasLtCreate=0\n\
           cublasLtMatmulDescCreate=0\n\
           set TRANSA=0\n\
           set TRANSA size 8=7\n\
           get TRANSA=0 1 written=4\n\
           get EPILOGUE=0 1\n\
           layout A=0\n\
           layout B=0\n\
           layout C=0\n\
           batch 0=0\n\
           stride 0=0\n\
           batch 1=0\n\
           stride 1=0\n\
           batch 2=0\n\
           stride 2=0\n\
           get ROWS=0 1024 written=8\n\
           cublasLtMatmulPreferenceCreate=0\n\
           set MAX_WORKSPACE_BYTES=0\n\
           cublasLtMatmulAlgoGetHeuristic=0 count=1 state=0 workspace=0 waves=1.939\n"
        + &launch(&sm90_bf16("tn"), "16,4,4", "384,1,1", 196608, 168, [2048, 512, 1024, 4, 2])
        + "cublasLtMatmul=0\n\
           batch mismatch=7\n\
           bad Lt handle=1\n\
           cublasLtDestroy=0\n\
           cublasDestroy_v2=0\n\
           destroyed handle=1\n\
           cublasDestroy_v2 again=1\n";
    assert_eq!(stdout(&out), expected);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn ampere_gets_ampere_kernels() {
    let out = run_client(
        &fake_driver_dir(),
        &[("FAKE_CC", "8.0"), ("FAKE_SMS", "108")],
    );
    let launches: Vec<String> = stdout(&out)
        .lines()
        .filter(|l| l.starts_with("launch ") || l.starts_with("cublasLtMatmulAlgoGetHeuristic"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        launches,
        [
            "launch ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn grid=32,32,1 block=128,1,1 smem=98304 regs=230",
            "launch ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn grid=1,2,32 block=128,1,1 smem=98304 regs=230",
            "launch ampere_sgemm_128x128_nt grid=8,4,1 block=256,1,1 smem=0 regs=122",
            "launch sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_aligna4_alignc4_execute_kernel__5x_cublas grid=2,2,1 block=128,1,1 smem=65536 regs=230",
            &format!("launch {GEMV_BF16_T} grid=256,1,1 block=128,1,1 smem=0 regs=32"),
            "cublasLtMatmulAlgoGetHeuristic=0 count=1 state=0 workspace=0 waves=2.370",
            "launch ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn grid=16,4,4 block=128,1,1 smem=98304 regs=230",
        ]
    );
}

#[test]
fn volta_is_an_arch_mismatch() {
    let out = run_client(&fake_driver_dir(), &[("FAKE_CC", "7.0")]);
    let s = stdout(&out);
    assert!(!s.contains("launch "), "{s}");
    assert!(s.contains("cublasGemmEx=8\n"), "{s}");
    assert!(s.contains("cublasLtMatmul=8\n"), "{s}");
    // Argument errors come before the architecture check.
    assert!(
        s.contains("m<0=7\n") && s.contains("bf16 x fp16=15\n"),
        "{s}"
    );
}

/// Whether the workspace's simulated driver can launch kernels yet.
/// On the simulated driver with its built-in cost model: the same kernels and grids, and
/// counters that follow from the announced shapes (DRAM bytes written = m*n*elem_bytes*batch).
#[test]
fn on_the_simulated_driver() {
    let out = run_client(&gpuprof_tests::sim_lib_dir(), &[]);
    let s = stdout(&out);
    let mut launches = Vec::new();
    let mut current: Option<(String, Vec<(String, f64)>)> = None;
    for line in s.lines() {
        if let Some(rest) = line.strip_prefix("launch ") {
            launches.extend(current.take());
            current = Some((rest.to_string(), Vec::new()));
        } else if let Some(c) = line.strip_prefix("  ") {
            let (k, v) = c.split_once('=').expect("counter line");
            if let Some((_, counters)) = current.as_mut() {
                counters.push((k.to_string(), v.parse().expect("counter value")));
            }
        } else {
            launches.extend(current.take());
        }
    }
    let expect = [
        (sm90_bf16("tn"), "32,32,1", [4096u64, 4096, 4096, 1, 2]),
        (sm90_bf16("nn"), "1,2,32", [128, 256, 64, 32, 2]),
        ("sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas".to_string(), "8,4,1", [1000, 500, 300, 1, 4]),
        ("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas".to_string(), "2,2,1", [256, 256, 256, 1, 4]),
        (GEMV_BF16_T.to_string(), "256,1,1", [4096, 1, 4096, 1, 2]),
        (sm90_bf16("tn"), "16,4,4", [2048, 512, 1024, 4, 2]),
    ];
    assert_eq!(launches.len(), expect.len(), "{s}");
    for ((line, counters), (name, grid, [m, n, _k, batch, eb])) in launches.iter().zip(expect) {
        assert!(line.starts_with(&format!("{name} grid={grid} ")), "{line}");
        let written = counters
            .iter()
            .find(|(k, _)| k == "dram__bytes_write.sum")
            .map(|(_, v)| *v);
        assert_eq!(written, Some((m * n * eb * batch) as f64), "{line}");
    }
}
