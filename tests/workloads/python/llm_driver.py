"""An LLM-inference-shaped CUDA workload on NVIDIA's cuda-python (`cuda-bindings`),
driver API, unmodified as any user program: a module of attention-like and
elementwise kernels from PTX text, a prefill pass and decode steps (decode captured
once into a CUDA graph and replayed, as serving engines do), events around the
work, and a host -> device -> host round trip that must return the same bytes.

With --runtime the kernels are loaded and launched through the CUDA runtime's C ABI
(`libcudart.so.12` by ctypes, the library PyTorch links): cudaLibraryLoadData,
cudaLibraryGetKernel, cudaLaunchKernel. (cuda-bindings' own runtime module is
NVIDIA's static runtime, which reaches the driver through private tables.)

usage: python llm_driver.py [--layers N] [--prompt N] [--decode-steps N] [--runtime]
Prints one summary line; exits non-zero on any CUDA error.
"""

import argparse
import ctypes
import sys

from cuda.bindings import driver as cu

KERNELS = ["rms_norm_kernel", "flash_fwd_kernel", "paged_attention_v1_kernel",
           "silu_and_mul_kernel", "add_residual_kernel"]


def ptx() -> bytes:
    out = [".version 8.0", ".target sm_80", ".address_size 64", ""]
    for name in KERNELS:
        out += [f".visible .entry {name}(", f"\t.param .u64 {name}_param_0,",
                f"\t.param .u32 {name}_param_1", ")", ".maxnreg 64", "{", "\tret;", "}", ""]
    return ("\n".join(out) + "\0").encode()


def check(result):
    """cuda-bindings returns (CUresult, *values); raise on anything but success."""
    err, *values = result
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        raise RuntimeError(f"CUDA error {int(err)} ({name.decode() if name else '?'})")
    if not values:
        return None
    return values[0] if len(values) == 1 else values


class Launcher:
    def __init__(self, module, stream):
        self.funcs = {n: check(cu.cuModuleGetFunction(module, n.encode())) for n in KERNELS}
        self.stream = stream
        self.launches = 0

    def __call__(self, name, grid, block, ptr, n):
        arg_ptr = ctypes.c_uint64(int(ptr))
        arg_n = ctypes.c_uint32(n)
        params = (ctypes.c_void_p * 2)(ctypes.addressof(arg_ptr), ctypes.addressof(arg_n))
        check(cu.cuLaunchKernel(self.funcs[name], max(grid, 1), 1, 1, block, 1, 1, 0,
                                self.stream, ctypes.addressof(params), 0))
        self.launches += 1


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


class RuntimeLauncher:
    """The same launches through the CUDA runtime (libcudart.so.12)."""

    def __init__(self, stream):
        rt = ctypes.CDLL("libcudart.so.12")
        rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3,
                                        ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                                        ctypes.c_void_p]
        self.rt = rt
        self.code = ctypes.create_string_buffer(ptx())
        lib = ctypes.c_void_p()
        self.check(rt.cudaLibraryLoadData(ctypes.byref(lib), self.code, None, None, 0,
                                          None, None, 0), "cudaLibraryLoadData")
        self.funcs = {}
        for n in KERNELS:
            k = ctypes.c_void_p()
            self.check(rt.cudaLibraryGetKernel(ctypes.byref(k), lib, n.encode()),
                       "cudaLibraryGetKernel")
            self.funcs[n] = k
        self.stream = ctypes.c_void_p(int(stream))
        self.launches = 0

    @staticmethod
    def check(err, what):
        if err != 0:
            raise RuntimeError(f"{what}: CUDA runtime error {err}")

    def __call__(self, name, grid, block, ptr, n):
        arg_ptr = ctypes.c_uint64(int(ptr))
        arg_n = ctypes.c_uint32(n)
        params = (ctypes.c_void_p * 2)(ctypes.addressof(arg_ptr), ctypes.addressof(arg_n))
        self.check(self.rt.cudaLaunchKernel(self.funcs[name], Dim3(max(grid, 1), 1, 1),
                                            Dim3(block, 1, 1), params, 0, self.stream),
                   f"cudaLaunchKernel {name}")
        self.launches += 1


def layer(launch, buf, hidden, ffn, heads, tokens, prefill):
    launch("rms_norm_kernel", tokens, 256, buf, hidden * tokens)
    if prefill:
        launch("flash_fwd_kernel", -(-tokens // 128) * heads, 128, buf, hidden * tokens)
    else:
        launch("paged_attention_v1_kernel", heads * tokens, 128, buf, hidden * tokens)
    launch("add_residual_kernel", -(-hidden * tokens // 1024), 1024, buf, hidden * tokens)
    launch("rms_norm_kernel", tokens, 256, buf, hidden * tokens)
    launch("silu_and_mul_kernel", -(-ffn * tokens // 1024), 1024, buf, ffn * tokens)
    launch("add_residual_kernel", -(-hidden * tokens // 1024), 1024, buf, hidden * tokens)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--decode-steps", type=int, default=4)
    ap.add_argument("--runtime", action="store_true",
                    help="launch the kernels through the CUDA runtime (libcudart.so.12)")
    args = ap.parse_args()
    hidden, ffn, heads = 1024, 2816, 8

    check(cu.cuInit(0))
    dev = check(cu.cuDeviceGet(0))
    ctx = check(cu.cuDevicePrimaryCtxRetain(dev))
    check(cu.cuCtxSetCurrent(ctx))
    stream = check(cu.cuStreamCreate(0))

    size = 4096 * 4
    host_in = (ctypes.c_uint32 * 4096)(*[(i * 2654435761) & 0xFFFFFFFF for i in range(4096)])
    host_out = (ctypes.c_uint32 * 4096)()
    dptr = check(cu.cuMemAlloc(size))
    check(cu.cuMemcpyHtoD(dptr, ctypes.addressof(host_in), size))
    check(cu.cuMemcpyDtoH(ctypes.addressof(host_out), dptr, size))
    if list(host_in) != list(host_out):
        print("llm_driver: round trip changed the data", file=sys.stderr)
        return 1

    module = check(cu.cuModuleLoadData(ptx()))
    launch = RuntimeLauncher(stream) if args.runtime else Launcher(module, stream)
    buf = check(cu.cuMemAlloc(hidden * args.prompt * 2 * 4))

    start, end = check(cu.cuEventCreate(0)), check(cu.cuEventCreate(0))
    check(cu.cuEventRecord(start, stream))
    for _ in range(args.layers):
        layer(launch, buf, hidden, ffn, heads, args.prompt, True)

    # Decode: capture one step into a graph, replay it.
    check(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
    for _ in range(args.layers):
        layer(launch, buf, hidden, ffn, heads, 1, False)
    graph = check(cu.cuStreamEndCapture(stream))
    graph_exec = check(cu.cuGraphInstantiate(graph, 0))
    for _ in range(args.decode_steps):
        check(cu.cuGraphLaunch(graph_exec, stream))
    check(cu.cuEventRecord(end, stream))
    check(cu.cuStreamSynchronize(stream))
    ms = check(cu.cuEventElapsedTime(start, end))

    check(cu.cuGraphExecDestroy(graph_exec))
    check(cu.cuGraphDestroy(graph))
    check(cu.cuMemFree(buf))
    check(cu.cuMemFree(dptr))
    check(cu.cuModuleUnload(module))
    check(cu.cuStreamDestroy(stream))
    check(cu.cuDevicePrimaryCtxRelease(dev))
    print(f"llm_driver: ok: {args.layers} layers, prompt {args.prompt}, {args.decode_steps} decode steps "
          f"(graph replays): {launch.launches} launches captured or issued, {ms:.3f} ms on the GPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
