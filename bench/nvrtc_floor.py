#!/usr/bin/env python3
"""What NVRTC alone takes for one program, per set of options.

The program is the CUDA plugin's for one expand key (plugins/common/kernels/
expand.cuh with its two headers, name expression expand<float, float, float,
8, true>), or an empty kernel: the floor a first launch that must compile one key
cannot go below, whatever jitwarm does around the compiler. Each set is
compiled repeatedly in this process after one first compile (NVRTC's own
start-up is not counted); the median and minimum are printed.

    python3 bench/nvrtc_floor.py [--repeat N] [--set NAME ...]

Needs libnvrtc.so.13 (or NVRTC= a path) and no GPU.
docs/results/compile-throughput.md records what it printed.
"""
import argparse
import ctypes
import os
import statistics
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(ROOT, "plugins", "common", "kernels")
BASE = ["--gpu-architecture=sm_90", "-std=c++17", "--no-cache"]
SETS = {
    "the plugin's (one key)": ["-minimal"],
    "the plugin's before 1c6ff73": ["--split-compile=0"],
    "no -minimal": [],
    "fast compile max": ["-minimal", "--Ofast-compile=max"],
    "fast compile mid": ["-minimal", "--Ofast-compile=mid"],
}


def program(empty):
    if empty:
        return b'extern "C" __global__ void k(int* p) { *p = 1; }\n', [], []
    read = lambda name: open(os.path.join(KERNELS, name), "rb").read()
    headers = ["portability.cuh", "kernel_support.cuh"]
    return read("expand.cuh"), [(h, read(h)) for h in headers], ["jw::kernels::expand<float, float, float, 8, true>"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--set", action="append", choices=SETS, help="only these option sets")
    args = parser.parse_args()
    nvrtc = ctypes.CDLL(os.environ.get("NVRTC", "libnvrtc.so.13"))
    strings = lambda xs: (ctypes.c_char_p * len(xs))(*xs)

    def compile_once(source, headers, names, options):
        prog = ctypes.c_void_p()
        status = nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source, b"main.cu", len(headers),
                                          strings([t for _, t in headers]),
                                          strings([n.encode() for n, _ in headers]))
        if status != 0:
            raise SystemExit(f"nvrtcCreateProgram: {status}")
        for name in names:
            nvrtc.nvrtcAddNameExpression(prog, name.encode())
        encoded = [o.encode() for o in options]
        start = time.perf_counter()
        status = nvrtc.nvrtcCompileProgram(prog, len(encoded), strings(encoded))
        seconds = time.perf_counter() - start
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
        if status != 0:
            raise SystemExit(f"nvrtcCompileProgram {options}: {status}")
        return seconds * 1000

    for empty in (False, True):
        source, headers, names = program(empty)
        compile_once(source, headers, names, BASE)
        print("an empty kernel:" if empty else "expand<float, float, float, 8, true>:")
        for label in args.set or SETS:
            times = [compile_once(source, headers, names, BASE + SETS[label]) for _ in range(args.repeat)]
            print(f"  {label:32s} median {statistics.median(times):6.1f} ms   min {min(times):6.1f} ms"
                  f"   ({' '.join(SETS[label]) or 'no option'})")


if __name__ == "__main__":
    main()
