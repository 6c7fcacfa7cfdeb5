"""A parent CUDA process that spawns CUDA worker processes, the way torchrun-style
launchers and multiprocessing data loaders do: the parent and every worker initialise
CUDA, load a module and launch kernels; workers start with the "spawn" method (a fresh
interpreter, so CUDA state is not inherited across fork).

usage: python multiproc.py [--workers N] [--launches N]
Each process launches N kernels named worker_kernel (parent: parent_kernel).
Prints one line per process and exits non-zero if any worker failed.
"""

import argparse
import ctypes
import multiprocessing as mp
import os
import sys

from cuda.bindings import driver as cu


def check(result):
    err, *values = result
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA error {int(err)}")
    return values[0] if len(values) == 1 else (values or None)


def run(kernel: str, launches: int) -> None:
    check(cu.cuInit(0))
    dev = check(cu.cuDeviceGet(0))
    ctx = check(cu.cuDevicePrimaryCtxRetain(dev))
    check(cu.cuCtxSetCurrent(ctx))
    ptx = (".version 8.0\n.target sm_80\n.address_size 64\n"
           f".visible .entry {kernel}(.param .u32 n)\n{{\n\tret;\n}}\n\0").encode()
    module = check(cu.cuModuleLoadData(ptx))
    func = check(cu.cuModuleGetFunction(module, kernel.encode()))
    n = ctypes.c_uint32(1)
    params = (ctypes.c_void_p * 1)(ctypes.addressof(n))
    for _ in range(launches):
        check(cu.cuLaunchKernel(func, 4, 1, 1, 128, 1, 1, 0, 0, ctypes.addressof(params), 0))
    check(cu.cuCtxSynchronize())
    print(f"multiproc: pid {os.getpid()} launched {launches} x {kernel}", flush=True)


def worker(launches: int) -> None:
    run("worker_kernel", launches)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--launches", type=int, default=25)
    args = ap.parse_args()
    run("parent_kernel", args.launches)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(args.launches,)) for _ in range(args.workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed = [p.exitcode for p in procs if p.exitcode != 0]
    if failed:
        print(f"multiproc: {len(failed)} workers failed: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
