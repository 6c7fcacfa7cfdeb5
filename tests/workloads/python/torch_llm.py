#!/usr/bin/env python3
"""An LLM-shaped PyTorch workload for GPU machines: prefill eagerly, decode as one CUDA
graph replayed per step (as vLLM and SGLang run it), NVTX ranges "prefill" and "decode".

    python3 tests/workloads/python/torch_llm.py [--layers L] [--hidden H] [--ffn F]
        [--heads A] [--prompt P] [--batch B] [--decode-steps D] [--eager-decode]

Each layer is RMSNorm, a fused QKV projection, attention (scaled_dot_product_attention),
the output projection, RMSNorm and a SwiGLU MLP (gate+up, down), in bf16; cuBLAS runs
the projections. The last line is
"torch-llm: ok: L layers, prompt P, batch B, D decode steps (graph|eager)".
Needs PyTorch with CUDA; scripts/gpu-check.sh runs it under `gpuprof record`.
"""

import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=11008)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--decode-steps", type=int, default=16)
    ap.add_argument("--eager-decode", action="store_true")
    args = ap.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("torch-llm: no CUDA device", file=sys.stderr)
        return 1
    dev = torch.device("cuda")
    dt = torch.bfloat16
    h, f, nh = args.hidden, args.ffn, args.heads
    hd = h // nh
    gen = torch.Generator(device=dev).manual_seed(0)

    def weight(n, k):
        return torch.randn(n, k, device=dev, dtype=dt, generator=gen) * (k**-0.5)

    layers = [
        dict(qkv=weight(3 * h, h), o=weight(h, h), gu=weight(2 * f, h), down=weight(h, f))
        for _ in range(args.layers)
    ]

    def rms(x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype)

    def layer(x, w, kv_len):
        b, s, _ = x.shape
        qkv = torch.nn.functional.linear(rms(x), w["qkv"])
        q, k, v = qkv.view(b, s, 3, nh, hd).permute(2, 0, 3, 1, 4)
        if kv_len > s:
            # Decode: attend to a fixed-size cache (the graph needs static shapes).
            k = k.expand(b, nh, kv_len, hd)
            v = v.expand(b, nh, kv_len, hd)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=kv_len == s)
        x = x + torch.nn.functional.linear(a.transpose(1, 2).reshape(b, s, h), w["o"])
        gate, up = torch.nn.functional.linear(rms(x), w["gu"]).chunk(2, dim=-1)
        return x + torch.nn.functional.linear(torch.nn.functional.silu(gate) * up, w["down"])

    def forward(x, kv_len):
        for w in layers:
            x = layer(x, w, kv_len)
        return x

    with torch.no_grad():
        prompt = torch.randn(1, args.prompt, h, device=dev, dtype=dt, generator=gen)
        torch.cuda.nvtx.range_push("prefill")
        forward(prompt, args.prompt)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()

        token = torch.randn(args.batch, 1, h, device=dev, dtype=dt, generator=gen)
        if args.eager_decode:
            step = lambda: forward(token, args.prompt)  # noqa: E731
        else:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                forward(token, args.prompt)  # warm-up outside the capture
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                forward(token, args.prompt)
            step = graph.replay
        for _ in range(args.decode_steps):
            torch.cuda.nvtx.range_push("decode")
            step()
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
    mode = "eager" if args.eager_decode else "graph"
    print(
        f"torch-llm: ok: {args.layers} layers, prompt {args.prompt}, batch {args.batch}, "
        f"{args.decode_steps} decode steps ({mode})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
