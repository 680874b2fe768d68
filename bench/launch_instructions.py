#!/usr/bin/env python3
"""Host instructions of one prepared CUDA launch, counted without a GPU.

Runs jitwarm-bench-launch-overhead --platform cuda under callgrind against
bench/null_driver's libcuda.so.1 (every call succeeds, launches do nothing),
then divides what the launch path executed by the launches it made:

    python3 bench/launch_instructions.py [BUILD_DIR]    (default: build)

The core's share is Launcher::launch less the compiles of first launches
(prepare) and less the plugin call; the plugin's share is that call (its
driver calls included, a few instructions each in the null driver); their
parts are given per call (a part a hit skips shows few calls). The
benchmark's own loop and timing are outside both. Needs valgrind.
"""
import os
import re
import subprocess
import sys
import tempfile

LINE = re.compile(r"^\s*([\d,]+) \([ \d.]+%\)\s+([*<>])\s+(.*?)(?: \(([\d,]+)x\))?(?: \[.*\])?$")


def number(text):
    return int(text.replace(",", ""))


def blocks(annotated):
    """{function: (inclusive, {callee: (inclusive, calls)})} from --tree=calling."""
    out, current = {}, None
    for line in annotated.splitlines():
        m = LINE.match(line)
        if not m:
            current = None if not line.strip() else current
            continue
        cost, mark, name, calls = m.groups()
        if mark == "*":
            current = out.setdefault(name, [number(cost), {}])
        elif mark == ">" and current is not None:
            current[1][name] = (number(cost), number(calls) if calls else 0)
    return out


def lookup(table, fragment, calling):
    """The block of the function matching `fragment` that calls `calling`
    (callgrind may list a function twice, under two spellings of its file),
    or None."""
    for name, value in table.items():
        if fragment in name and any(calling in c for c in value[1]):
            return value
    return None


def find(table, fragment, calling):
    """lookup's block; its absence ends the run, naming the near matches."""
    block = lookup(table, fragment, calling)
    if block is not None:
        return block
    near = sorted(name for name in table if fragment.split("(")[0] in name)
    raise SystemExit(f"launch_instructions: no function matching {fragment!r} that calls {calling!r}"
                     " in the profile" + "".join(f"\n  seen: {name}" for name in near[:10]))


def callee(block, fragment):
    for name, value in block[1].items():
        if fragment in name:
            return value
    return (0, 0)


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    bench = os.path.join(build, "bench", "jitwarm-bench-launch-overhead")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.path.join(build, "bench", "null_driver") + ":" + env.get("LD_LIBRARY_PATH", "")
        env["JITWARM_PLUGIN_PATH"] = ":".join(os.path.join(build, "plugins", p) for p in ("reference-cpu", "cuda"))
        env["JITWARM_CACHE_DIR"] = os.path.join(tmp, "cache")
        # LAUNCH_INSTRUCTIONS_PROFILE keeps the profile, for callgrind_annotate.
        profile = os.environ.get("LAUNCH_INSTRUCTIONS_PROFILE") or os.path.join(tmp, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}", bench,
                        "--platform", "cuda", "--iterations", "20000", "--rounds", "1"],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        annotated = subprocess.run(["callgrind_annotate", "--tree=calling", "--inclusive=yes", profile],
                                   check=True, capture_output=True, text=True).stdout
    table = blocks(annotated)
    launch = find(table, "detail::Launcher::launch(jitwarm::detail::KernelSlot", "impl_launch_prepared(")
    plugin_total, launches = callee(launch, "impl_launch_prepared(")
    if launches == 0:
        raise SystemExit("launch_instructions: no prepared launch in the profile")
    # The compiles of first launches happen below find_or_prepare; the
    # bench's "signature + lookup" row calls it too (find_prepared), so its
    # parts are given per call, not per launch.
    lookup = find(table, "detail::Launcher::find_or_prepare(", "PreparedLaunchTable::recall(")
    prepare, _ = callee(lookup, "detail::Launcher::prepare(")
    core = (launch[0] - prepare - plugin_total) / launches
    print(f"host instructions per prepared launch of expand ({launches} launches, callgrind, null driver):")
    print(f"  core    {core:6.0f}")

    def per_call(block, label, fragment):
        cost, calls = callee(block, fragment)
        note = f"per call, {calls} calls" if calls else "not called"
        print(f"    {label:<26}{cost / calls if calls else 0:6.0f}   ({note})")

    per_call(launch, "platform", "detail::Launcher::resolve(")
    per_call(lookup, "the last arguments' launch", "PreparedLaunchTable::recall(")
    per_call(lookup, "argument image (a miss)", "ArgumentImage::capture(")
    per_call(lookup, "signature and validation", "specialize_arguments(")
    per_call(lookup, "lookup by signature", "PreparedLaunchTable::find(")
    print(f"  plugin  {plugin_total / launches:6.0f}")
    gpu = lookup(table, "GpuLauncher::launch_prepared(jitwarm::gpu::GpuPreparedLaunch", "ArgumentPacking::pack(")
    if gpu is None:
        # A release build inlines the plugin's launch into its C callback:
        # the total above stands, its parts are not in the profile.
        print("    (its parts are inlined in this build)")
    else:
        for label, fragment in (("launch plan", "plan_launch("), ("argument packing", "ArgumentPacking::pack("),
                                ("stream's context", "launch_context("), ("driver launch", "CudaDeviceDriver::launch(")):
            per_call(gpu, label, fragment)
    print(f"  total   {core + plugin_total / launches:6.0f}")

if __name__ == "__main__":
    main()
