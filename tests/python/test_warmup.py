"""Warmup from Python: requests (tensor tables, WarmupTensors, NumPy dtypes,
ranges, zip, exclude, a Python filter), manifests as files and as TOML text,
plans, exact keys, progress, failures, and compile-only warmup for CUDA and
HIP targets on a machine without their GPUs."""
import os
import subprocess
import sys

import numpy as np
import pytest

import jitwarm
from conftest import BATCH_MEMCPY, RMS_NORM, SILU, aligned_empty, env_path

SILU_TOML = f"""
version = 1
[[kernel]]
name = "{SILU}"
[kernel.params]
x = {{ dtype = ["float32", "float16"], aligned = [true, false] }}
H = [16, 17, 1]
"""


def key_texts(keys):
    return [k.text if hasattr(k, "text") else k.key_text for k in keys]


def test_given_a_request_then_warmup_compiles_its_keys_and_launches_compile_nothing(rt):
    request = jitwarm.WarmupRequest(SILU, params={"x": {"dtype": ["float32", "float16"],
                                                       "aligned": [True, False]},
                                                 "H": [16, 17, 1]})
    plan = rt.warmup_plan(request, platform="cpu")
    result = rt.warmup(request, platform="cpu")
    assert len(plan) == len(result.keys) == 12 and result.compiled == 12
    assert key_texts(plan) == key_texts(result.keys)
    assert rt.cache_stats().compiles == 12
    x = aligned_empty((2, 34), np.float32)
    out = aligned_empty((2, 17), np.float32)
    rt.kernel(SILU)(out, x, 2, 17)
    assert rt.cache_stats().compiles == 12
    again = rt.warmup([request], platform="cpu")
    assert (again.compiled, again.cached) == (0, 12)
    assert "12 keys: 0 compiled, 12 cached, 0 failed" in repr(again)


def test_given_the_same_warmup_as_toml_text_and_as_a_file_then_the_keys_are_the_same(rt,
                                                                                   tmp_path):
    manifest = tmp_path / "silu.toml"
    manifest.write_text(SILU_TOML)
    from_requests = rt.warmup_plan(jitwarm.WarmupRequest(
        SILU, params={"x": {"dtype": ["float32", "float16"], "aligned": [True, False]},
                      "H": [16, 17, 1]}), platform="cpu")
    assert key_texts(rt.warmup_plan(toml=SILU_TOML, platform="cpu")) == key_texts(from_requests)
    assert key_texts(rt.warmup_plan(manifest=manifest, platform="cpu")) == key_texts(from_requests)
    result = rt.warmup(manifest=str(manifest), platform="cpu")
    assert result.compiled == 12
    (request,) = jitwarm.manifest_requests(manifest=manifest)
    assert request.kernel == SILU and request.params["H"] == [16, 17, 1]
    assert request.params["x"][0] == {"dtype": "float32", "aligned": True}
    assert key_texts(rt.warmup_plan(request, platform="cpu")) == key_texts(from_requests)


def test_given_the_kernel_set_manifest_then_python_warms_what_the_plan_says(rt, source_root):
    manifest = os.path.join(source_root, "manifests", "kernel-set.toml")
    plan = rt.warmup_plan(manifest=manifest, platform="cpu")
    result = rt.warmup(manifest=manifest, platform="cpu", jobs=2)
    assert len(plan) == len(result.keys) == result.compiled > 100
    assert rt.cache_stats().entries == len(plan)


def test_given_ranges_zip_exclude_and_dtypes_of_any_kind_then_keys_collapse_and_skip(rt):
    request = jitwarm.WarmupRequest(
        RMS_NORM,
        params={"x": [np.float32, np.dtype("float16"), "bf16"], "x_stride": range(1, 8193),
                "H": range(0, 2**40, 3), "eps": 1e-6},
        exclude=[{"x": "float16"}])
    texts = key_texts(rt.warmup_plan(request, platform="cpu"))
    assert not any("fp16" in t for t in texts)
    # 2 dtypes x x_stride (1, a multiple of 16, other) x H (0, 3, 6, ... never
    # meets 1: i32 and i64 each give a multiple of 16 and another value).
    assert len(texts) == 2 * 3 * 4
    zipped = jitwarm.WarmupRequest(SILU, params={"x": "float32"},
                                   zip=[{"H": [16, 17], "T": [1, 2]}])
    assert len(rt.warmup_plan(zipped, platform="cpu")) == 2


def test_given_a_python_filter_then_it_sees_each_combination_and_skips_some(rt):
    seen = []

    def only_aligned_fp32(values):
        seen.append(dict(values))
        return values["x"].dtype == "float32" and values["H"] != 1

    request = jitwarm.WarmupRequest(
        SILU, params={"x": {"dtype": ["float32", "float16"], "aligned": [True, False]},
                      "H": [16, 17, 1]}, filter=only_aligned_fp32)
    texts = key_texts(rt.warmup(request, platform="cpu").keys)
    assert len(texts) == 4 and all("x:fp32*" in t for t in texts)
    assert len(seen) == 12
    first = seen[0]
    assert isinstance(first["x"], jitwarm.WarmupTensor) and first["x"].aligned
    assert first["H"] == 16 and isinstance(first["T"], int)


def test_given_a_filter_that_raises_then_warmup_raises_that_exception(rt):
    def broken(values):
        return 1 / 0

    with pytest.raises(ZeroDivisionError):
        rt.warmup(jitwarm.WarmupRequest(SILU, params={"x": "float32"}, filter=broken),
                  platform="cpu")
    with pytest.raises(jitwarm.InvalidArgumentError, match="filter 5 is not callable"):
        rt.warmup(jitwarm.WarmupRequest(SILU, filter=5), platform="cpu")


def test_given_progress_then_it_is_called_per_key_and_its_exception_comes_back(rt):
    calls = []
    rt.warmup(toml=SILU_TOML, platform="cpu", jobs=2,
              progress=lambda done, total, key: calls.append((done, total, key)))
    assert sorted(c[0] for c in calls) == list(range(1, 13))
    assert all(total == 12 and "silu_and_mul[cpu:" in key for _, total, key in calls)

    def broken(done, total, key):
        raise KeyError("progress bar")

    with pytest.raises(KeyError, match="progress bar"):
        rt.warmup(toml=SILU_TOML.replace("16, 17, 1", "32, 33"), platform="cpu", jobs=2,
                  progress=broken)


def test_given_exact_keys_then_warmup_keys_compiles_them(rt):
    kernel = rt.kernel(SILU)
    keys = [kernel.key_for(jitwarm.WarmupTensor("float32", (2, h)),
                           jitwarm.WarmupTensor("float32", (2, 2 * h)), 2, h) for h in (16, 3)]
    result = rt.warmup_keys(keys)
    assert result.compiled == 2 and key_texts(result.keys) == key_texts(keys)
    assert all(rt.is_cached(k) for k in keys)
    decoded = jitwarm.CompileKey.decode(keys[0].encoding)
    assert decoded == keys[0] and rt.warmup_keys([decoded]).cached == 1


def test_given_keys_that_fail_then_warmup_raises_with_the_result_or_returns_it(rt):
    request = jitwarm.WarmupRequest(BATCH_MEMCPY, params={"BLOCK_SIZE": [0, 256]})
    with pytest.raises(jitwarm.CompileError, match="1 of 2 keys failed; the first") as info:
        rt.warmup(request, platform="cpu")
    assert info.value.status == jitwarm.Status.COMPILE_FAILED
    assert info.value.result.failed == 1 and info.value.result.compiled == 1
    result = rt.warmup(request, platform="cpu", check=False)
    failed = [k for k in result.keys if k.failed]
    assert len(failed) == 1 and "BLOCK_SIZE" in failed[0].error


def test_given_bad_requests_then_the_errors_say_what_is_wrong(rt):
    plan = rt.warmup_plan
    with pytest.raises(jitwarm.InvalidArgumentError, match="exactly one of requests"):
        plan(jitwarm.WarmupRequest(SILU), toml=SILU_TOML)
    with pytest.raises(jitwarm.InvalidArgumentError, match="exactly one of requests"):
        rt.warmup()
    with pytest.raises(jitwarm.Error, match="'nope'"):
        plan(jitwarm.WarmupRequest(SILU, params={"nope": 1}), platform="cpu")
    with pytest.raises(jitwarm.InvalidArgumentError, match="empty list"):
        plan(jitwarm.WarmupRequest(SILU, params={"H": []}), platform="cpu")
    with pytest.raises(jitwarm.InvalidArgumentError, match="a list inside a list"):
        plan(jitwarm.WarmupRequest(SILU, params={"H": [[1, 2]]}), platform="cpu")
    with pytest.raises(jitwarm.InvalidArgumentError, match="ranges are not allowed here"):
        plan(jitwarm.WarmupRequest(SILU, zip=[{"H": range(3), "T": range(3)}]), platform="cpu")
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown field 'align'"):
        plan(jitwarm.WarmupRequest(SILU, params={"x": {"align": True}}), platform="cpu")
    with pytest.raises(jitwarm.InvalidArgumentError, match="takes an integer|takes a tensor"):
        plan(jitwarm.WarmupRequest(SILU, params={"x": 5}), platform="cpu")
    with pytest.raises(jitwarm.NotFoundError, match="unknown kernel 'vllm.nope'"):
        plan(jitwarm.WarmupRequest("vllm.nope"), platform="cpu")
    with pytest.raises(jitwarm.IoError):
        plan(manifest="/nonexistent/warm.toml")
    with pytest.raises(jitwarm.InvalidArgumentError, match="<toml text>"):
        plan(toml="version = 1\n[[kernel]]\nname = 5\n")


def test_given_short_kernel_names_then_requests_manifests_and_overrides_take_them(rt):
    plan = rt.warmup_plan(jitwarm.WarmupRequest("silu_and_mul", params={"x": "float32",
                                                                      "H": [16, 17]}),
                          platform="cpu")
    assert len(plan) == 2 and {k.kernel_name for k in plan} == {SILU}
    with pytest.raises(jitwarm.NotFoundError,
                       match=f"unknown kernel 'silu_and_mull'; did you mean '{SILU}'"):
        rt.warmup_plan(jitwarm.WarmupRequest("silu_and_mull"), platform="cpu")
    with pytest.raises(jitwarm.NotFoundError,
                       match=f"<toml text>:3: unknown kernel 'rms_nrom'; did you mean "
                             f"'{RMS_NORM}'"):
        rt.warmup_plan(toml='version = 1\n\n[[kernel]]\nname = "rms_nrom"\n', platform="cpu")
    calls = []
    with rt.register_kernels({"silu_and_mul": ("cpu", lambda *args: calls.append(args))}):
        assert "python:" in rt.explain(SILU).to_text()
        x = aligned_empty((2, 34), np.float32)
        rt.kernel("silu_and_mul")(aligned_empty((2, 17), np.float32), x, 2, 17)
    assert len(calls) == 1
    with pytest.raises(jitwarm.NotFoundError, match="did you mean"):
        rt.implementations("silu_and_mull")


def test_given_the_command_line_target_shorthand_then_python_takes_it_too(rt, gpu_rt):
    request = jitwarm.WarmupRequest(SILU, params={"x": "float32", "H": [16]})
    with pytest.raises(jitwarm.InvalidArgumentError,
                       match="unknown target 'x86_64': give PLATFORM:ARCH"):
        rt.warmup_plan(request, target="x86_64")
    if "cuda" not in {p.name for p in gpu_rt.platforms()}:
        pytest.skip("the cuda plugin was not built")
    plan = gpu_rt.warmup_plan(request, target="sm_90")
    assert plan and {k.target for k in plan} == {"cuda:sm_90"}


def test_given_no_platform_on_a_gpu_less_machine_then_warmup_says_it_warms_the_cpu():
    env_path("JITWARM_PLUGIN_PATH")
    logs = []
    rt = jitwarm.Runtime(log=lambda level, message: logs.append((level, message)))
    rt.load_plugins()
    if rt.default_platform() != "cpu" or not rt.cpu_fallback_reason():
        pytest.skip("a GPU is here, or no GPU plugin that compiles was loaded")
    assert "no device here" in rt.cpu_fallback_reason()
    request = jitwarm.WarmupRequest(SILU, params={"x": "float32", "H": [16]})
    plan = rt.warmup_plan(request)
    assert {k.target.split(":")[0] for k in plan} == {"cpu"}
    warnings = [m for level, m in logs if level == "warning" and "CPU reference" in m]
    assert len(warnings) == 1 and rt.cpu_fallback_reason() in warnings[0]
    logs.clear()
    rt.warmup_plan(request, platform="cpu")
    assert not [m for _, m in logs if "CPU reference" in m]


def test_given_jobs_then_python_warms_in_worker_processes_as_the_command_does(reference_dir):
    logs = []
    rt = jitwarm.Runtime(log=lambda level, message: logs.append(message))
    rt.load_plugins(reference_dir, strict=True)
    result = rt.warmup(toml=SILU_TOML, platform="cpu", jobs=2)
    assert result.compiled == 12
    # The process pool logs each unit it hands back (warmup_execution_processes.cpp).
    assert any("ended at" in m for m in logs), logs


class _Terminal:
    """stderr as a terminal: what the progress bar is written to."""

    def __init__(self, tty):
        self.tty, self.text = tty, []

    def isatty(self):
        return self.tty

    def write(self, text):
        self.text.append(text)

    def flush(self):
        pass


def test_given_a_terminal_then_warmup_shows_progress_unless_quiet(rt, monkeypatch):
    terminal = _Terminal(True)
    monkeypatch.setattr(sys, "stderr", terminal)
    rt.warmup(toml=SILU_TOML, platform="cpu")
    bar = "".join(terminal.text)
    assert "\r[" in bar and "12/12 keys" in bar and bar.endswith("\n")
    terminal.text.clear()
    rt.warmup(toml=SILU_TOML, platform="cpu", quiet=True)
    rt.warmup_keys(rt.warmup_plan(toml=SILU_TOML, platform="cpu"), quiet=True)
    assert terminal.text == []
    monkeypatch.setattr(sys, "stderr", _Terminal(False))
    rt.warmup(toml=SILU_TOML, platform="cpu")
    assert sys.stderr.text == []


@pytest.mark.parametrize("target", ["cuda:sm_90", "hip:gfx90a"])
def test_given_no_gpu_then_warmup_compiles_for_a_gpu_target(gpu_rt, target):
    platform = target.split(":")[0]
    if platform not in {p.name for p in gpu_rt.platforms()}:
        pytest.skip(f"the {platform} plugin was not built")
    request = jitwarm.WarmupRequest(SILU, params={"x": ["bfloat16", "float16"], "H": [4096]})
    result = gpu_rt.warmup(request, target=target)
    assert result.compiled == 2 and result.failed == 0
    assert all(f"[{target}]" in k.key_text for k in result.keys)
    assert gpu_rt.cache_stats().compiles == 2


def test_given_worker_processes_and_batches_then_every_key_lands_in_this_runtime(gpu_rt):
    if "cuda" not in {p.name for p in gpu_rt.platforms()}:
        pytest.skip("the cuda plugin was not built")
    request = jitwarm.WarmupRequest(
        SILU, params={"x": ["bfloat16", "float32"], "H": [1, 4096, 4097]})
    progress = []
    result = gpu_rt.warmup(request, target="cuda:sm_90", jobs=2, parallel="processes",
                           batch_size=3, progress=lambda done, total, key: progress.append(done))
    assert result.compiled == 6 and result.failed == 0
    assert sorted(progress) == [1, 2, 3, 4, 5, 6]
    # Compiled in the workers, cached here: a second warmup compiles nothing.
    again = gpu_rt.warmup(request, target="cuda:sm_90")
    assert again.compiled == 0 and again.cached == 6
    with pytest.raises(jitwarm.InvalidArgumentError, match="'threads' or 'processes'"):
        gpu_rt.warmup(request, target="cuda:sm_90", parallel="fibers")


FORK_SAFE_SCRIPT = f"""
import ctypes
import jitwarm
driver = ctypes.CDLL("libcuda.so.1")  # the fake: it counts cuInit calls
rt = jitwarm.Runtime(no_cache_dir=True)
rt.load_plugins()
loaded = driver.fake_libcuda_init_calls()
result = rt.warmup(jitwarm.WarmupRequest("{SILU}", params={{"H": [4096]}}), target="cuda:sm_90")
assert result.compiled > 0 and result.failed == 0, repr(result)
warmed = driver.fake_libcuda_init_calls()
rt.platforms()  # counts devices: initializes the driver
print(loaded, warmed, driver.fake_libcuda_init_calls())
"""


def test_given_a_server_that_warms_then_forks_then_python_leaves_the_cuda_driver_alone():
    """A server may warm compile-only in its parent and fork GPU workers after
    (docs/warmup.md "Compile time"): through the package too, loading plugins
    and a warmup with a target never initialize the CUDA driver. The driver is
    tests/gpu/fake_libcuda, first on LD_LIBRARY_PATH of a fresh interpreter."""
    fake_dir = env_path("JITWARM_TEST_FAKE_LIBCUDA_DIR")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [fake_dir] + [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p])
    run = subprocess.run([sys.executable, "-c", FORK_SAFE_SCRIPT], env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    loaded, warmed, counted = run.stdout.split()
    assert (loaded, warmed) == ("0", "0")
    assert counted == "1"  # the fake is the plugin's driver: the check can fail
