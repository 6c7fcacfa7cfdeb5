#!/usr/bin/env python3
"""Fetch NVIDIA's CUPTI and CUDA runtime wheels pinned by gpuprof, verify and unpack them.

The wheels carry the headers the bindings are generated from and the real
libcupti.so / libnvperf_host.so the offline tests check against. Nothing here
needs a GPU.

    scripts/nvidia-wheels.py fetch         # download (cached) + verify + unpack
    scripts/nvidia-wheels.py fetch-extras [NAME...]  # only the extra libraries (all, or
                                                     # those named: the demo's)
    scripts/nvidia-wheels.py path          # print the directory holding them

Cache: $GPUPROF_NVIDIA_DIR, default <repo>/target/nvidia. A wheel already in the
cache with the pinned sha256 is not downloaded again.
"""

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# (CUPTI release, cupti dist, version, sha256, runtime dist, version, sha256)
# The runtime headers include crt/*.h, shipped separately (CRT below).
# One row per CUPTI minor release whose activity record layouts gpuprof decodes.
RELEASES = [
    ("12.4", "nvidia-cuda-cupti-cu12", "12.4.127",
     "9dec60f5ac126f7bb551c055072b69d85392b13311fcc1bcda2202d172df30fb",
     "nvidia-cuda-runtime-cu12", "12.9.79",
     "25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3"),
    ("12.6", "nvidia-cuda-cupti-cu12", "12.6.80",
     "6768bad6cab4f19e8292125e5f1ac8aa7d1718704012a0e3272a6f61c4bce132",
     "nvidia-cuda-runtime-cu12", "12.9.79",
     "25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3"),
    ("12.8", "nvidia-cuda-cupti-cu12", "12.8.90",
     "ea0cb07ebda26bb9b29ba82cda34849e73c166c18162d3913575b0c9db9a6182",
     "nvidia-cuda-runtime-cu12", "12.9.79",
     "25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3"),
    ("12.9", "nvidia-cuda-cupti-cu12", "12.9.79",
     "096bcf334f13e1984ba36685ad4c1d6347db214de03dbb6eebb237b41d9d934f",
     "nvidia-cuda-runtime-cu12", "12.9.79",
     "25bba2dfb01d48a9b59ca474a1ac43c6ebf7011f1b0b8cc44f54eb6ac48a96c3"),
    ("13.0", "nvidia-cuda-cupti", "13.0.85",
     "4eb01c08e859bf924d222250d2e8f8b8ff6d3db4721288cf35d14252a4d933c8",
     "nvidia-cuda-runtime", "13.0.96",
     "7f82250d7782aa23b6cfe765ecc7db554bd3c2870c43f3d1821f1d18aebf0548"),
    ("13.1", "nvidia-cuda-cupti", "13.1.115",
     "2c76d91807cf76fc0e4b08ad71c4dff0e8e9f678fc8dbbbc43ec55125a70b553",
     "nvidia-cuda-runtime", "13.1.80",
     "dac25b52e69050e5a7a84957e6df470a85b185f8f648a99a1ab1dfce027576cf"),
    ("13.2", "nvidia-cuda-cupti", "13.2.86",
     "8fa29f15dd8336181f961764d9d95236fc6b931dd0c8fcf8cd70aab0c310b586",
     "nvidia-cuda-runtime", "13.2.86",
     "3498247680dfddce31bad102af7e3e26fc795342a3cac64722bb0fa95e7f60f0"),
    ("13.3", "nvidia-cuda-cupti", "13.3.75",
     "a969cc446c44db612e417bd0af722cfad9009c027dabd4ed255262c0e9a9a3d2",
     "nvidia-cuda-runtime", "13.3.29",
     "e04420616e72f563167a7733272992d7e6df6dc5cb54b2f94f9f1520ea9e30c1"),
    ("13.4", "nvidia-cuda-cupti", "13.4.92",
     "037b561575e6983bc4fe1caae644d7a296a8367f451bf6c2a3194f4d0765431c",
     "nvidia-cuda-runtime", "13.4.92",
     "9641f797da20ce1dd8e779b6e96d08cf9ba564cec8e8225458811ee26423f3a5"),
    ("13.5", "nvidia-cuda-cupti", "13.5.25",
     "9dcca41c12a734192b14e7128ae116bc9ce1b9da686e2ebf48ae7a4415f76650",
     "nvidia-cuda-runtime", "13.5.37",
     "df2b79a8852f10d1fef8c848489c49eebb5754051bf870202a862831412b179d"),
]

# release -> (dist, version, sha256) of the wheel with crt/host_defines.h: nvidia-cuda-crt
# for CUDA 13, the compiler wheel for CUDA 12.
CUDA12_CRT = ("nvidia-cuda-nvcc-cu12", "12.9.86",
              "5d6a0d32fdc7ea39917c20065614ae93add6f577d840233237ff08e9a38f58f0")
CRT = {
    "12.4": CUDA12_CRT,
    "12.6": CUDA12_CRT,
    "12.8": CUDA12_CRT,
    "12.9": CUDA12_CRT,
    "13.0": ("nvidia-cuda-crt", "13.0.88", "2c8043c7c9e02492716426e9919fc78d2c5b3b2a7a768a88e952676b08aa55a4"),
    "13.1": ("nvidia-cuda-crt", "13.1.80", "4d9c87b60d82140e07881b8b8fa197c4867d27e41cef5f2171a82fa916211eba"),
    "13.2": ("nvidia-cuda-crt", "13.2.86", "e3ab08801bf9b1e6dc979275d25e816bb5000521b648e19c324d5eef0c79f1da"),
    "13.3": ("nvidia-cuda-crt", "13.3.33", "01ff37600c7b880a14cab4ade763b4c10c0ff92f25cc9dca30f0881ce52693c4"),
    "13.4": ("nvidia-cuda-crt", "13.4.92", "731ce3de11df8add8306404417a1edaede225dbe27eb233aed37c8de9d4fe720"),
    "13.5": ("nvidia-cuda-crt", "13.5.37", "e898b7f73d3035fa89915a3f7bf3b54a73e90249746111aed295822c4729bb29"),
}

# Other NVIDIA libraries the tests run for real: NVTX (libnvtx3interop.so.1 exports
# the NVTX C API and implements NVTX_INJECTION64_PATH; cudarc loads it as
# libnvToolsExt.so). name -> (dist, version, sha256, file inside the wheel)
# cuBLAS 12.9.1.4: (dist, version, sha256); its headers and libraries are two extras.
CUBLAS_WHEEL = ("nvidia-cublas-cu12", "12.9.1.4",
                "453611eb21a7c1f2c2156ed9f3a45b691deda0440ec550860290dc901af5b4c2")

EXTRAS = {
    "libnvtx3interop": ("nvidia-nvtx-cu12", "12.9.79",
                        "fec150986817f2b4e7eed72ed059f2dcb9ba3856b9a96134e448eac946a6952f",
                        "nvidia/nvtx/lib/libnvtx3interop.so.1"),
    # The NVTX headers (nvtx3/), which CUPTI's generated_nvtx_meta.h includes: the
    # bindings take the NVTX callback parameter structs from them.
    "nvtx_include": ("nvidia-nvtx-cu12", "12.9.79",
                     "fec150986817f2b4e7eed72ed059f2dcb9ba3856b9a96134e448eac946a6952f",
                     "nvidia/nvtx/include"),
    # cuBLAS / cuBLASLt headers (cublas_api.h, cublasLt.h): the bindings of the GEMM
    # functions libgpuprof.so hooks.
    "cublas_include": (*CUBLAS_WHEEL, "nvidia/cublas/include"),
    # NVIDIA's cuBLAS / cuBLASLt libraries (the same wheel): the tests check they export
    # every function libgpuprof.so hooks or calls, by the name the bindings declare.
    "cublas_lib": (*CUBLAS_WHEEL, "nvidia/cublas/lib"),
    # CCCL's <nv/target>, which the CUDA 12.9 cuda_fp16.h (included by cublas_api.h)
    # includes.
    "cccl_include": ("nvidia-cuda-cccl-cu12", "12.9.27",
                     "37869e17ce2e1ecec6eddf1927cca0f8c34e64fd848d40453df559091e2d7117",
                     "nvidia/cuda_cccl/include"),
    # NVIDIA's nvml.h: the simulated NVML follows it, and a C client compiled against
    # it checks the sim's layouts and versioned entry points.
    "nvml_include": ("nvidia-nvml-dev-cu12", "12.9.79",
                     "8bb367913c62cb65be9ae386c58dbf573f1f9e2f01cae54abb87bf5f63c6069e",
                     "nvidia/nvml_dev/include"),
    # NVIDIA's CUPTI 13.1, the newest whose Profiler Host API runs without a driver:
    # the simulated CUPTI asks it which metrics a chip accepts and how many passes a
    # config needs (SIMCUPTI_HOST_LIBRARY), in the demo and the tests.
    "cupti_host": ("nvidia-cuda-cupti", "13.1.115",
                   "2c76d91807cf76fc0e4b08ad71c4dff0e8e9f678fc8dbbbc43ec55125a70b553",
                   "nvidia/cu13/lib/libcupti.so.13"),
    # CUPTI of CUDA 12.6 GA (API 24, as 12.6 Update 2): it has PM sampling and the host
    # API but no range profiler (cuptiRangeProfiler*); the tests check gpuprof says so.
    "cupti_12_6_ga": ("nvidia-cuda-cupti-cu12", "12.6.37",
                      "29430c14b7f3ace887043a246d94871eb8caaab13a17a513410d0169de2c7252",
                      "nvidia/cuda_cupti"),
    # CUPTI of CUDA 12.9 GA (API 27; 12.9 Update 1 is API 28): the tests check it
    # answers 27 and ships the same headers as the 12.9 release above.
    "cupti_12_9_ga": ("nvidia-cuda-cupti-cu12", "12.9.19",
                      "300a5087166edc80693ce4291b44dbd03cbf3bbabfeee3456bfb79b355456ad1",
                      "nvidia/cuda_cupti"),
}


# Extras of which only the named directory is unpacked, each into a directory of its
# own (the cuBLAS wheel holds 580 MB of libraries besides its headers).
PARTIAL = {"cublas_include", "cublas_lib", "cccl_include"}



def write_atomically(path, text):
    """Writes `text` to `path` so that a reader (a test running meanwhile) sees the old
    file or the new one, never a part of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)

def cache_dir() -> Path:
    env = os.environ.get("GPUPROF_NVIDIA_DIR")
    return Path(env) if env else REPO / "target" / "nvidia"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def wheel_prefix(dist: str, version: str) -> str:
    return f"{dist.replace('-', '_')}-{version}-"


def find_wheel(wheels: Path, dist: str, version: str):
    prefix = wheel_prefix(dist, version)
    for p in sorted(wheels.glob("*.whl")):
        if p.name.startswith(prefix):
            return p
    return None


def fetch_one(wheels: Path, dist: str, version: str, digest: str) -> Path:
    whl = find_wheel(wheels, dist, version)
    if whl is not None and sha256(whl) == digest:
        return whl
    if whl is not None:
        whl.unlink()
    print(f"gpuprof: downloading {dist}=={version}", file=sys.stderr, flush=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
           "--disable-pip-version-check", "--dest", str(wheels), f"{dist}=={version}"]
    res = subprocess.run(cmd)
    if res.returncode != 0:
        sys.exit(f"error: pip download {dist}=={version} failed (exit {res.returncode})")
    whl = find_wheel(wheels, dist, version)
    if whl is None:
        sys.exit(f"error: pip reported success but no wheel for {dist}=={version} in {wheels}")
    got = sha256(whl)
    if got != digest:
        whl.unlink()
        sys.exit(f"error: {whl.name}: sha256 {got} does not match the pinned {digest}")
    return whl


def unpack(whl: Path, dest: Path, only: str = "") -> None:
    """Unpacks the wheel into `dest` (only the members under `only`, when given)."""
    stamp = dest / ".unpacked"
    if stamp.exists():
        return
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(whl) as z:
        members = [m for m in z.namelist() if m.startswith(only)] if only else None
        z.extractall(dest, members)
    stamp.write_text(whl.name + "\n")


def package_dir(root: Path, kind: str) -> Path:
    """nvidia/cuda_cupti (cu12 wheels) or nvidia/cu13 (CUDA 13 wheels)."""
    nv = root / "nvidia"
    for sub in sorted(nv.iterdir()):
        if (sub / "include").is_dir() and (kind != "cupti" or (sub / "include" / "cupti.h").exists()):
            if kind == "runtime" and not (sub / "include" / "cuda.h").exists():
                continue
            return sub
    sys.exit(f"error: no {kind} include directory under {nv}")


def fetch_extras(base: Path, wheels: Path, names=None) -> None:
    """Fetches the extras `names` (default: all) and records them in extras.json,
    keeping the entries of others fetched before."""
    unknown = sorted(set(names or []) - set(EXTRAS))
    if unknown:
        sys.exit(f"error: no extra named {', '.join(unknown)} (known: {', '.join(EXTRAS)})")
    extras = {}
    if names:
        try:
            extras = json.loads((base / "extras.json").read_text())
        except (OSError, ValueError):
            extras = {}
    for name, (dist, ver, dig, inner) in EXTRAS.items():
        if names and name not in names:
            continue
        if name in PARTIAL:
            root = base / f"{dist}-{ver}-{name}"
            unpack(fetch_one(wheels, dist, ver, dig), root, inner + "/")
        else:
            root = base / f"{dist}-{ver}"
            unpack(fetch_one(wheels, dist, ver, dig), root)
        path = root / inner
        if not path.exists():
            sys.exit(f"error: {dist}=={ver} has no {inner}")
        extras[name] = str(path)
    write_atomically(base / "extras.json", json.dumps(extras, indent=1) + "\n")


def fetch() -> None:
    base = cache_dir()
    wheels = base / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    manifest = []
    for rel, cdist, cver, cdig, rdist, rver, rdig in RELEASES:
        cwhl = fetch_one(wheels, cdist, cver, cdig)
        rwhl = fetch_one(wheels, rdist, rver, rdig)
        croot = base / f"{cdist}-{cver}"
        rroot = base / f"{rdist}-{rver}"
        unpack(cwhl, croot)
        unpack(rwhl, rroot)
        cpkg = package_dir(croot, "cupti")
        rpkg = package_dir(rroot, "runtime")
        includes = [str(cpkg / "include"), str(rpkg / "include")]
        if rel in CRT:
            crt_dist, crt_ver, crt_dig = CRT[rel]
            crt_root = base / f"{crt_dist}-{crt_ver}"
            unpack(fetch_one(wheels, crt_dist, crt_ver, crt_dig), crt_root)
            crt_inc = [d for d in crt_root.glob("nvidia/*/include") if (d / "crt").is_dir()]
            if not crt_inc:
                sys.exit(f"error: no include/crt in {crt_root}")
            includes.append(str(crt_inc[0]))
        lib = cpkg / "lib"
        cupti = sorted(lib.glob("libcupti.so*"))
        manifest.append({
            "release": rel,
            "cupti_version": cver,
            "runtime_version": rver,
            "cupti_include": str(cpkg / "include"),
            "cuda_include": str(rpkg / "include"),
            "include_dirs": includes,
            "lib_dir": str(lib),
            "libcupti": str(cupti[0]) if cupti else None,
            "libnvperf_host": str(lib / "libnvperf_host.so"),
        })
    write_atomically(base / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    fetch_extras(base, wheels)
    print(base)


def main() -> None:
    cmd = sys.argv[1] if len(sys.argv) > 1 else "fetch"
    if cmd == "fetch":
        fetch()
    elif cmd == "fetch-extras":
        base = cache_dir()
        (base / "wheels").mkdir(parents=True, exist_ok=True)
        fetch_extras(base, base / "wheels", sys.argv[2:])
    elif cmd == "path":
        print(cache_dir())
    else:
        sys.exit(f"usage: {sys.argv[0]} fetch|fetch-extras [NAME...]|path")


if __name__ == "__main__":
    main()
