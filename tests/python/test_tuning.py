"""Tuning from Python (docs/tuning.md): the candidates of a tunable built-in
key, keys with configs, device kinds, stored results, and Kernel.tune's
refusal of an implementation that is not tunable. Tuning that measures runs
on a GPU (scripts/device-run.sh tune); the C++ tests cover it on a model
driver."""
import numpy as np
import pytest

import jitwarm

from conftest import RMS_NORM

BF16_ROWS = jitwarm.WarmupRequest(RMS_NORM, params={"x": "bfloat16", "H": 8192,
                                                   "x_stride": 8192})


def test_given_a_tunable_built_in_key_then_its_candidates_start_with_the_default(gpu_rt):
    if "cuda" not in [p.name for p in gpu_rt.platforms()]:
        pytest.skip("the CUDA plugin is not built")
    keys = gpu_rt.warmup_plan(BF16_ROWS, target="cuda:sm_90")
    # Five cached-access counts by three thread caps less the three that
    # spill, each with and without streaming (the keys are aligned).
    assert keys and all(len(gpu_rt.tune_candidates(k)) == 24 for k in keys)
    key = keys[0]
    assert key.config == {}
    candidates = gpu_rt.tune_candidates(key)
    assert candidates[0] == {"accesses": 4, "max_block": 1024, "streaming": 0}
    assert len(candidates) == 24
    assert all(set(c) == {"accesses", "max_block", "streaming"} for c in candidates)
    assert all(c["accesses"] * c["max_block"] <= 4096 for c in candidates)
    tuned = key.with_config({"max_block": 512, "accesses": 8, "streaming": 1})
    assert tuned.config == {"accesses": 8, "max_block": 512, "streaming": 1}
    assert tuned.text.endswith(") {accesses=8, max_block=512, streaming=1} via " +
                               key.impl_name)
    assert tuned != key and tuned.with_config({}) == key
    # Compile-only: an offered config compiles, one not offered is the key's error.
    result = gpu_rt.warmup_keys(
        [tuned, key.with_config({"accesses": 16, "max_block": 1024, "streaming": 0})], check=False)
    assert [k.failed for k in result.keys] == [False, True]
    assert "is not one" in result.keys[1].error
    with pytest.raises(TypeError, match="choice names"):
        key.with_config({"accesses": "8"})
    # No result is stored for any kind yet.
    assert gpu_rt.tune_result(key, "NVIDIA H200") is None


def test_given_the_cpu_reference_then_it_is_not_tunable_and_tune_says_so(rt):
    x = np.ones((4, 64), dtype=np.float32)
    out = np.empty_like(x)
    w = np.ones(64, dtype=np.float32)
    kernel = rt.kernel(RMS_NORM)
    key = kernel.key_for(out, x, 64, w, 1e-6, 4, 64)
    assert rt.tune_candidates(key) == []
    assert rt.device_kind("cpu") == key.target
    with pytest.raises(jitwarm.InvalidArgumentError, match="is not tunable"):
        kernel.tune(out, x, 64, w, 1e-6, 4, 64)
    assert rt.tune_result(key, rt.device_kind("cpu")) is None


def test_given_a_device_kind_without_results_then_warmup_plans_the_default_configs(gpu_rt):
    if "cuda" not in [p.name for p in gpu_rt.platforms()]:
        pytest.skip("the CUDA plugin is not built")
    plain = gpu_rt.warmup_plan(BF16_ROWS, target="cuda:sm_90")
    for_kind = gpu_rt.warmup_plan(BF16_ROWS, target="cuda:sm_90", device_kind="NVIDIA H200")
    assert for_kind == plain and all(k.config == {} for k in for_kind)
    result = gpu_rt.warmup_keys(plain[:1], device_kind="NVIDIA H200")
    assert [k.key_text for k in result.keys] == [plain[0].text]
    with pytest.raises(TypeError):
        gpu_rt.warmup_plan(BF16_ROWS, target="cuda:sm_90", device_kind=7)
