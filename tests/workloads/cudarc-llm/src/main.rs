//! An LLM-inference-shaped workload on cudarc, used to exercise gpuprof end to end:
//! a prefill pass over the prompt and a few decode steps, each layer made of an RMS
//! norm, a QKV projection (cuBLAS GEMM), attention (flash-style for prefill with a
//! strided-batched GEMM for the scores, paged for decode), an output projection, a
//! gated MLP (GEMMs around a SiLU-and-multiply) and residual adds; the LM head runs
//! through cuBLASLt. Prefill and decode are NVTX ranges named "prefill" and "decode";
//! each decode step ends by reading its token back (a one-element copy to pageable
//! host memory, then a stream synchronize, as PyTorch's `.item()`), as a server does
//! before the next step. As in a PyTorch program, the workload's own kernels and the
//! token's read-back go through the CUDA runtime API (`runtime.rs`), the GEMMs through
//! cuBLAS / cuBLASLt.
//! Attention may group its KV heads (`--kv-heads`) and have a head size of its own
//! (`--head-dim`); with `--experts` the MLP is a mixture of experts: a router GEMM,
//! then the experts' GEMMs grouped into one strided-batched GEMM per projection, a
//! batch entry per expert given tokens. `--config` takes these dimensions from a
//! Hugging Face `config.json`.
//!
//! It checks what a CUDA program can check: every call succeeds and a host -> device
//! -> host round trip returns the same bytes. Prints one summary line.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use cudarc::cublas::{sys::cublasOperation_t, CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::cublaslt::{CudaBlasLT, Matmul, MatmulConfig};
use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream};
use half::bf16;

mod kernels;
mod runtime;

/// Model and run shape; small defaults keep a simulated run fast.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "cudarc-llm",
    about = "An LLM-inference-shaped CUDA workload on cudarc: a prefill pass and decode \
             steps (cuBLAS / cuBLASLt GEMMs, attention-like and elementwise kernels, NVTX \
             ranges \"prefill\" and \"decode\"). Prints one summary line."
)]
struct Shape {
    /// Transformer layers.
    #[arg(long, default_value_t = 2, value_parser = positive)]
    layers: usize,
    /// Hidden size (a multiple of --heads).
    #[arg(long, default_value_t = 1024, value_parser = positive)]
    hidden: usize,
    /// MLP inner size.
    #[arg(long, default_value_t = 2816, value_parser = positive)]
    ffn: usize,
    /// Attention heads.
    #[arg(long, default_value_t = 8, value_parser = positive)]
    heads: usize,
    /// Key/value heads (grouped-query attention; a divisor of --heads) [default: --heads].
    #[arg(long, value_parser = positive)]
    kv_heads: Option<usize>,
    /// The size of one attention head [default: --hidden / --heads].
    #[arg(long, value_parser = positive)]
    head_dim: Option<usize>,
    /// Experts of a mixture-of-experts MLP (0: a dense MLP); --ffn is one expert's
    /// inner size.
    #[arg(long, default_value_t = 0)]
    experts: usize,
    /// Experts each token is routed to.
    #[arg(long, default_value_t = 2, value_parser = positive)]
    experts_per_token: usize,
    /// Vocabulary size (the LM head's N).
    #[arg(long, default_value_t = 32000, value_parser = positive)]
    vocab: usize,
    /// A Hugging Face config.json whose dimensions replace --hidden, --ffn, --heads,
    /// --kv-heads, --head-dim, --experts, --experts-per-token and --vocab (its layer
    /// count does not: --layers).
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Prompt tokens in the prefill pass.
    #[arg(long, default_value_t = 128, value_parser = positive)]
    prompt: usize,
    /// Decode steps after the prefill.
    #[arg(long, default_value_t = 4, value_parser = positive)]
    decode_steps: usize,
    /// Decode as serving engines run it: one step captured into a CUDA graph, the
    /// graph replayed for every step.
    #[arg(long)]
    graph_decode: bool,
    /// How the program ends after printing its summary line: returning from main
    /// (the CUDA context released first), exit(0) with the context alive (as PyTorch
    /// ends), or the ways a profiler cannot see coming (abort(), _exit(0) without exit
    /// handlers, SIGKILL to itself).
    #[arg(long, value_enum, default_value_t = EndBy::Return)]
    end_by: EndBy,
    /// Idle time after each decode step (the stream synchronized, then a sleep), as a
    /// server waiting for requests has.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    step_gap_ms: u64,
    /// Sleep this long after the work, before ending.
    #[arg(long, default_value_t = 0, value_name = "MS")]
    linger_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum EndBy {
    Return,
    ExitWithContext,
    Abort,
    Exit,
    Kill,
}

fn positive(v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(0) => Err("needs a positive integer, not 0".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("needs a positive integer, not {v:?}")),
    }
}

impl Shape {
    fn from_args() -> Result<Shape> {
        let mut s = <Shape as clap::Parser>::parse();
        if let Some(path) = s.config.clone() {
            s.read_config(&path)
                .with_context(|| format!("--config {}", path.display()))?;
        }
        if s.head_dim.is_none() && !s.hidden.is_multiple_of(s.heads) {
            bail!(
                "--hidden {} is not a multiple of --heads {} (give --head-dim)",
                s.hidden,
                s.heads
            );
        }
        if !s.heads.is_multiple_of(s.kv_heads()) {
            bail!(
                "--heads {} is not a multiple of --kv-heads {}",
                s.heads,
                s.kv_heads()
            );
        }
        Ok(s)
    }

    /// The dimensions of a Hugging Face config.json (a multimodal one's
    /// `text_config`): an expert's inner size is `moe_intermediate_size`, else
    /// `intermediate_size`.
    fn read_config(&mut self, path: &std::path::Path) -> Result<()> {
        let text = std::fs::read_to_string(path)?;
        let mut v: serde_json::Value = serde_json::from_str(&text)?;
        if v.get("text_config").is_some() {
            v = v["text_config"].take();
        }
        let get = |key: &str| {
            v.get(key)
                .and_then(serde_json::Value::as_u64)
                .map(|n| n as usize)
        };
        let need = |key: &str| get(key).with_context(|| format!("no {key:?}"));
        self.hidden = need("hidden_size")?;
        self.heads = need("num_attention_heads")?;
        self.vocab = need("vocab_size")?;
        self.kv_heads = get("num_key_value_heads");
        self.head_dim = get("head_dim");
        self.experts = ["num_local_experts", "num_experts", "n_routed_experts"]
            .iter()
            .find_map(|k| get(k))
            .unwrap_or(0);
        if let Some(k) = get("num_experts_per_tok") {
            self.experts_per_token = k;
        }
        self.ffn = match get("moe_intermediate_size") {
            Some(f) if self.experts > 0 => f,
            _ => need("intermediate_size")?,
        };
        Ok(())
    }

    fn kv_heads(&self) -> usize {
        self.kv_heads.unwrap_or(self.heads)
    }

    fn head_dim(&self) -> usize {
        self.head_dim.unwrap_or(self.hidden / self.heads)
    }

    /// The fused QKV projection's output features.
    fn qkv_out(&self) -> usize {
        (self.heads + 2 * self.kv_heads()) * self.head_dim()
    }

    /// The attention's output features (the output projection's input).
    fn attn_out(&self) -> usize {
        self.heads * self.head_dim()
    }

    /// Experts given tokens, and tokens per expert, for `tokens` tokens: every token
    /// to `experts_per_token` experts, spread evenly.
    fn routed(&self, tokens: usize) -> (usize, usize) {
        let slots = tokens * self.experts_per_token;
        let active = self.experts.min(slots).max(1);
        (active, slots.div_ceil(active))
    }
}

/// Waits for the stream, then sleeps `ms` (nothing when 0).
fn idle(stream: &CudaStream, ms: u64) -> Result<()> {
    if ms > 0 {
        stream.synchronize()?;
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    Ok(())
}

struct Model {
    stream: Arc<CudaStream>,
    blas: CudaBlas,
    blas_lt: CudaBlasLT,
    kernels: runtime::Kernels,
    w_qkv: CudaSlice<bf16>,
    w_o: CudaSlice<bf16>,
    w_gate_up: CudaSlice<bf16>,
    w_down: CudaSlice<bf16>,
    w_lm: CudaSlice<bf16>,
    /// The router of a mixture of experts (none for a dense MLP).
    w_router: Option<CudaSlice<bf16>>,
    launches: usize,
    gemms: usize,
}

impl Model {
    fn launch(
        &mut self,
        name: &str,
        grid: u32,
        block: u32,
        x: &CudaSlice<bf16>,
        n: usize,
    ) -> Result<()> {
        self.kernels
            .launch(&self.stream, name, grid, block, x, n as u32)
            .with_context(|| format!("launching {name}"))?;
        self.launches += 1;
        Ok(())
    }

    /// The residual add over `n` elements of `x`.
    fn add_residual(&mut self, x: &CudaSlice<bf16>, n: usize) -> Result<()> {
        self.launch(kernels::ADD_RESIDUAL, n.div_ceil(1024) as u32, 1024, x, n)
    }

    fn layer(&mut self, shape: &Shape, tokens: usize, prefill: bool) -> Result<()> {
        let mut b = Buffers::new(&self.stream, shape, tokens)?;
        self.layer_in(&mut b, shape, tokens, prefill)
    }

    /// One layer on preallocated activations (nothing is allocated unless `prefill`).
    fn layer_in(
        &mut self,
        b: &mut Buffers,
        shape: &Shape,
        tokens: usize,
        prefill: bool,
    ) -> Result<()> {
        let h = shape.hidden;
        let s = self.stream.clone();
        let Buffers {
            x,
            qkv,
            attn,
            gate_up,
            out,
            moe,
        } = b;

        self.launch(kernels::RMS_NORM, tokens as u32, 256, x, h * tokens)?;
        gemm(
            &self.blas,
            &self.w_qkv,
            x,
            qkv,
            (shape.qkv_out(), tokens, h),
        )?;
        self.gemms += 1;
        let head_dim = shape.head_dim();
        if prefill {
            // Attention scores per head: S[t x t] = K^T Q, a strided-batched GEMM.
            let mut scores = s.alloc_zeros::<bf16>(tokens * tokens * shape.heads)?;
            let cfg = StridedBatchedConfig {
                gemm: GemmConfig {
                    transa: cublasOperation_t::CUBLAS_OP_T,
                    transb: cublasOperation_t::CUBLAS_OP_N,
                    m: tokens as i32,
                    n: tokens as i32,
                    k: head_dim as i32,
                    alpha: bf16::ONE,
                    lda: head_dim as i32,
                    ldb: head_dim as i32,
                    beta: bf16::ZERO,
                    ldc: tokens as i32,
                },
                batch_size: shape.heads as i32,
                stride_a: (head_dim * tokens) as i64,
                stride_b: (head_dim * tokens) as i64,
                stride_c: (tokens * tokens) as i64,
            };
            // SAFETY: qkv holds qkv_out*tokens >= heads*head_dim*tokens elements for A and
            // B; scores holds heads*tokens*tokens.
            unsafe {
                self.blas
                    .gemm_strided_batched(cfg, &*qkv, &*qkv, &mut scores)
            }
            .context("attention scores")?;
            self.gemms += 1;
            self.launch(
                kernels::FLASH_PREFILL,
                (tokens.div_ceil(128) * shape.heads) as u32,
                128,
                attn,
                shape.attn_out() * tokens,
            )?;
        } else {
            self.launch(
                kernels::PAGED_ATTENTION,
                (shape.heads * tokens) as u32,
                128,
                attn,
                shape.attn_out() * tokens,
            )?;
        }
        gemm(
            &self.blas,
            &self.w_o,
            attn,
            out,
            (h, tokens, shape.attn_out()),
        )?;
        self.gemms += 1;
        self.add_residual(out, h * tokens)?;
        self.launch(kernels::RMS_NORM, tokens as u32, 256, out, h * tokens)?;
        if let Some(moe) = moe {
            return self.experts(moe, out, shape, tokens);
        }
        gemm(
            &self.blas,
            &self.w_gate_up,
            out,
            gate_up,
            (2 * shape.ffn, tokens, h),
        )?;
        self.gemms += 1;
        self.launch(
            kernels::SILU_AND_MUL,
            (shape.ffn * tokens).div_ceil(1024) as u32,
            1024,
            gate_up,
            shape.ffn * tokens,
        )?;
        gemm(
            &self.blas,
            &self.w_down,
            gate_up,
            attn,
            (h, tokens, shape.ffn),
        )?;
        self.gemms += 1;
        self.add_residual(attn, h * tokens)?;
        Ok(())
    }

    /// A mixture-of-experts MLP on `x`: the router's GEMM, then each projection of
    /// the experts given tokens as one strided-batched GEMM (a batch entry per
    /// expert; the experts share one weight buffer, stride 0: only shapes matter
    /// here), a SiLU-and-multiply between them and the residual add.
    fn experts(
        &mut self,
        m: &mut MoeBuffers,
        x: &CudaSlice<bf16>,
        shape: &Shape,
        tokens: usize,
    ) -> Result<()> {
        let (h, ffn) = (shape.hidden, shape.ffn);
        let (active, per) = shape.routed(tokens);
        let router = self.w_router.as_ref().context("a router")?;
        gemm(
            &self.blas,
            router,
            x,
            &mut m.router,
            (shape.experts, tokens, h),
        )?;
        self.gemms += 1;
        let batch = (active, [0, h * per, 2 * ffn * per]);
        strided_gemm(
            &self.blas,
            &self.w_gate_up,
            &m.input,
            &mut m.gate_up,
            (2 * ffn, per, h),
            batch,
        )?;
        self.gemms += 1;
        self.launch(
            kernels::SILU_AND_MUL,
            (ffn * per * active).div_ceil(1024) as u32,
            1024,
            &m.gate_up,
            ffn * per * active,
        )?;
        let batch = (active, [0, 2 * ffn * per, h * per]);
        strided_gemm(
            &self.blas,
            &self.w_down,
            &m.gate_up,
            &mut m.output,
            (h, per, ffn),
            batch,
        )?;
        self.gemms += 1;
        self.add_residual(&m.output, h * tokens)?;
        Ok(())
    }

    /// Logits[vocab x tokens] = W_lm[vocab x hidden] * X, through cuBLASLt.
    fn lm_head(&mut self, shape: &Shape, tokens: usize) -> Result<LmBuffers> {
        let mut b = LmBuffers::new(&self.stream, shape, tokens)?;
        self.lm_head_in(&mut b, shape, tokens)?;
        Ok(b)
    }

    /// Reads the step's first logit back to the host, as a server reads each decode
    /// step's token before the next step, and as PyTorch's `.item()` does: a copy to
    /// (pageable) host memory, then the stream synchronised.
    fn read_token(&self, b: &LmBuffers) -> Result<()> {
        runtime::read_first(&self.stream, &b.logits).context("reading the step's token back")?;
        Ok(())
    }

    /// The LM head on preallocated activations.
    fn lm_head_in(&mut self, b: &mut LmBuffers, shape: &Shape, tokens: usize) -> Result<()> {
        let (x, logits) = (&b.x, &mut b.logits);
        let cfg = MatmulConfig {
            transa: false,
            transb: false,
            transc: false,
            m: shape.vocab as u64,
            n: tokens as u64,
            k: shape.hidden as u64,
            alpha: 1.0,
            lda: shape.vocab as i64,
            ldb: shape.hidden as i64,
            beta: 0.0,
            ldc: shape.vocab as i64,
            stride_a: None,
            stride_b: None,
            stride_c: None,
            stride_bias: None,
            batch_size: None,
        };
        // SAFETY: w_lm has vocab*hidden, x hidden*tokens, logits vocab*tokens elements.
        unsafe { self.blas_lt.matmul(cfg, &self.w_lm, x, logits, None, None) }
            .context("LM head matmul")?;
        self.gemms += 1;
        Ok(())
    }
}

/// A layer's activations.
struct Buffers {
    x: CudaSlice<bf16>,
    qkv: CudaSlice<bf16>,
    attn: CudaSlice<bf16>,
    gate_up: CudaSlice<bf16>,
    out: CudaSlice<bf16>,
    /// A mixture of experts' (none for a dense MLP).
    moe: Option<MoeBuffers>,
}

impl Buffers {
    fn new(s: &Arc<CudaStream>, shape: &Shape, tokens: usize) -> Result<Buffers> {
        let h = shape.hidden;
        let moe = (shape.experts > 0)
            .then(|| MoeBuffers::new(s, shape, tokens))
            .transpose()?;
        Ok(Buffers {
            x: s.alloc_zeros::<bf16>(h * tokens)?,
            qkv: s.alloc_zeros::<bf16>(shape.qkv_out() * tokens)?,
            attn: s.alloc_zeros::<bf16>(shape.attn_out().max(h) * tokens)?,
            gate_up: s.alloc_zeros::<bf16>(2 * shape.ffn * tokens)?,
            out: s.alloc_zeros::<bf16>(h * tokens)?,
            moe,
        })
    }
}

/// A mixture of experts' activations: router logits, then per expert given tokens
/// its tokens in, its gate and up projections and its output.
struct MoeBuffers {
    router: CudaSlice<bf16>,
    input: CudaSlice<bf16>,
    gate_up: CudaSlice<bf16>,
    output: CudaSlice<bf16>,
}

impl MoeBuffers {
    fn new(s: &Arc<CudaStream>, shape: &Shape, tokens: usize) -> Result<MoeBuffers> {
        let (active, per) = shape.routed(tokens);
        let (h, slots) = (shape.hidden, active * per);
        Ok(MoeBuffers {
            router: s.alloc_zeros::<bf16>(shape.experts * tokens)?,
            input: s.alloc_zeros::<bf16>(h * slots)?,
            gate_up: s.alloc_zeros::<bf16>(2 * shape.ffn * slots)?,
            output: s.alloc_zeros::<bf16>(h * slots)?,
        })
    }
}

/// The LM head's input and output.
struct LmBuffers {
    x: CudaSlice<bf16>,
    logits: CudaSlice<bf16>,
}

impl LmBuffers {
    fn new(s: &Arc<CudaStream>, shape: &Shape, tokens: usize) -> Result<LmBuffers> {
        Ok(LmBuffers {
            x: s.alloc_zeros::<bf16>(shape.hidden * tokens)?,
            logits: s.alloc_zeros::<bf16>(shape.vocab * tokens)?,
        })
    }
}

/// C[m x n] = W[m x k] * X[k x n], neither transposed, column-major and packed.
fn nn_config(m: usize, n: usize, k: usize) -> GemmConfig<bf16> {
    GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: m as i32,
        n: n as i32,
        k: k as i32,
        alpha: bf16::ONE,
        lda: m as i32,
        ldb: k as i32,
        beta: bf16::ZERO,
        ldc: m as i32,
    }
}

/// C[m x n] = W[m x k] * X[k x n], column-major, BF16 in and out, FP32 accumulate.
fn gemm(
    blas: &CudaBlas,
    w: &CudaSlice<bf16>,
    x: &CudaSlice<bf16>,
    y: &mut CudaSlice<bf16>,
    (m, n, k): (usize, usize, usize),
) -> Result<()> {
    let cfg = nn_config(m, n, k);
    // SAFETY: w has m*k, x has k*n and y has m*n elements (allocated by the caller).
    unsafe { blas.gemm(cfg, w, x, y) }.with_context(|| format!("GEMM {m}x{n}x{k}"))
}

/// `batch.0` GEMMs C_i[m x n] = W_i[m x k] * X_i[k x n] in one strided-batched call,
/// the strides of W, X and C in `batch.1` (elements), BF16, FP32 accumulate.
fn strided_gemm(
    blas: &CudaBlas,
    w: &CudaSlice<bf16>,
    x: &CudaSlice<bf16>,
    y: &mut CudaSlice<bf16>,
    (m, n, k): (usize, usize, usize),
    (batch, [stride_w, stride_x, stride_y]): (usize, [usize; 3]),
) -> Result<()> {
    let cfg = StridedBatchedConfig {
        gemm: nn_config(m, n, k),
        batch_size: batch as i32,
        stride_a: stride_w as i64,
        stride_b: stride_x as i64,
        stride_c: stride_y as i64,
    };
    // SAFETY: the caller's buffers hold the last batch entry's matrices at the
    // strides given (W: m*k at stride_w, X: k*n at stride_x, C: m*n at stride_y).
    unsafe { blas.gemm_strided_batched(cfg, w, x, y) }
        .with_context(|| format!("grouped GEMM {m}x{n}x{k} x{batch}"))
}

fn main() -> Result<()> {
    let shape = Shape::from_args()?;
    // SAFETY: only asks whether the NVTX library can be loaded.
    if !unsafe { cudarc::nvtx::sys::is_culib_present() } {
        bail!("libnvToolsExt.so not found on the loader path (NVTX ranges need it)");
    }
    let ctx = CudaContext::new(0).context("creating a context on device 0")?;
    if shape.graph_decode {
        // SAFETY: one stream does all the work, so cudarc's cross-stream event tracking
        // (event records and waits around every use of a buffer) has nothing to order;
        // without it a capture holds only the kernels and copies.
        unsafe { ctx.disable_event_tracking() };
    }
    // The legacy default stream cannot be captured into a graph.
    let stream = if shape.graph_decode {
        ctx.new_stream().context("creating a stream")?
    } else {
        ctx.default_stream()
    };

    // The round trip a real program relies on.
    let pattern: Vec<u32> = (0..4096u32).map(|i| i.wrapping_mul(2654435761)).collect();
    let dev = stream.clone_htod(&pattern)?;
    let back = stream.clone_dtoh(&dev)?;
    if back != pattern {
        bail!("host -> device -> host round trip changed the data");
    }

    let kernels =
        runtime::Kernels::load(&kernels::ptx(), &kernels::ALL).context("loading the kernels")?;
    let h = shape.hidden;
    let mut model = Model {
        blas: CudaBlas::new(stream.clone()).context("cublasCreate")?,
        blas_lt: CudaBlasLT::new(stream.clone()).context("cublasLtCreate")?,
        w_qkv: stream.alloc_zeros::<bf16>(shape.qkv_out() * h)?,
        w_o: stream.alloc_zeros::<bf16>(h * shape.attn_out())?,
        w_gate_up: stream.alloc_zeros::<bf16>(2 * shape.ffn * h)?,
        w_down: stream.alloc_zeros::<bf16>(shape.ffn * h)?,
        w_lm: stream.alloc_zeros::<bf16>(shape.vocab * h)?,
        w_router: (shape.experts > 0)
            .then(|| stream.alloc_zeros::<bf16>(shape.experts * h))
            .transpose()?,
        stream: stream.clone(),
        kernels,
        launches: 0,
        gemms: 0,
    };

    {
        let _prefill = cudarc::nvtx::scoped_range("prefill");
        for _ in 0..shape.layers {
            model.layer(&shape, shape.prompt, true)?;
        }
        drop(model.lm_head(&shape, 1)?);
    }
    // Tests that break something mid-run hold the decode steps until they are done.
    if let Some(flag) = std::env::var_os("CUDARC_LLM_WAIT_FOR") {
        while !std::path::Path::new(&flag).exists() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    if shape.graph_decode {
        // One decode step captured (nothing runs), then replayed once per step.
        // Activations are allocated before the capture, as graph-based engines do.
        let mut act = Buffers::new(&stream, &shape, 1)?;
        let mut lm = LmBuffers::new(&stream, &shape, 1)?;
        stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
            .context("beginning the decode step's capture")?;
        for _ in 0..shape.layers {
            model.layer_in(&mut act, &shape, 1, false)?;
        }
        model.lm_head_in(&mut lm, &shape, 1)?;
        let graph = stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .context("capturing the decode step")?
            .context("the capture made no graph")?;
        for _ in 0..shape.decode_steps {
            let decode = cudarc::nvtx::scoped_range("decode");
            graph.launch().context("replaying the decode step")?;
            model.read_token(&lm)?;
            drop(decode);
            idle(&stream, shape.step_gap_ms)?;
        }
    } else {
        for _ in 0..shape.decode_steps {
            let decode = cudarc::nvtx::scoped_range("decode");
            for _ in 0..shape.layers {
                model.layer(&shape, 1, false)?;
            }
            let lm = model.lm_head(&shape, 1)?;
            model.read_token(&lm)?;
            drop(decode);
            idle(&stream, shape.step_gap_ms)?;
        }
    }
    stream.synchronize()?;
    println!(
        "cudarc-llm: ok: {} layers, prompt {}, {} decode steps{}: {} kernel launches, {} GEMMs",
        shape.layers,
        shape.prompt,
        shape.decode_steps,
        if shape.graph_decode {
            " (one CUDA graph, replayed)"
        } else {
            ""
        },
        model.launches,
        model.gemms
    );
    std::thread::sleep(std::time::Duration::from_millis(shape.linger_ms));
    use std::io::Write;
    std::io::stdout().flush()?;
    match shape.end_by {
        EndBy::Return => Ok(()),
        // Exit handlers run; the context, owned by main's caller, is never released.
        EndBy::ExitWithContext => std::process::exit(0),
        EndBy::Abort => std::process::abort(),
        // SAFETY: ends the process at once; nothing after this runs.
        EndBy::Exit => unsafe { libc::_exit(0) },
        EndBy::Kill => {
            // SAFETY: signals this process; SIGKILL cannot be caught.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            unreachable!("SIGKILL was delivered")
        }
    }
}
