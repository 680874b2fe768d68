"""jitwarm.triton against a stand-in Triton (fake_triton.py, Triton 3.x's
JITFunction run/warmup/compile-hook behaviour): warming a @triton.jit
kernel's specializations from jitwarm requests and manifests, checking each
input against Triton's own specialization, and the monitor on Triton's
compile hook after seal."""
import logging

import pytest

import jitwarm
import jitwarm.triton as jwt

DTYPES = ["bfloat16", "float16", "float32"]


@pytest.fixture
def triton(monkeypatch, tmp_path):
    import fake_triton
    module = fake_triton.install(monkeypatch, cache_dir=tmp_path / "triton-files")
    yield module
    jwt.uninstall_hook()
    jwt.unseal()
    jwt.reset_counters()


def make_silu(triton):
    tl = triton.language

    @triton.jit
    def silu_and_mul(out_ptr, x_ptr, T, H, BLOCK: tl.constexpr):
        pass

    return silu_and_mul


class DeviceTensor:
    """A tensor as Triton sees one: a dtype and a data pointer."""

    def __init__(self, dtype, aligned=True):
        self.dtype = "torch." + dtype
        self.ptr = 0x7F00_0000_0000 if aligned else 0x7F00_0000_0002

    def data_ptr(self):
        return self.ptr


def silu_bridge(kernel):
    return jwt.TritonKernel(kernel, name="silu_and_mul",
                            params={"out_ptr": {"kind": "tensor", "same_dtype_as": "x_ptr"}})


SILU_REQUEST = jitwarm.WarmupRequest("silu_and_mul", params={
    "x_ptr": {"dtype": DTYPES, "aligned": [True, False]}, "H": [16, 17, 1], "T": [2],
    "BLOCK": [1024]})


def launch(kernel, dtype, aligned, H):
    out, x = DeviceTensor(dtype, aligned), DeviceTensor(dtype, aligned)
    kernel[(2, 1)](out, x, 2, H, BLOCK=1024)


def test_given_the_18_specializations_then_triton_compiles_each_once_and_launches_hit(triton):
    kernel = make_silu(triton)
    bridge = silu_bridge(kernel)
    jwt.install_hook()
    result = bridge.warmup(SILU_REQUEST)
    assert (result.compiled, result.cached, len(result.keys)) == (18, 0, 18)
    assert len(kernel.compiled) == 18 and bridge.cache_size() == 18
    assert all(k.target == "triton:cuda:90" for k in result.keys)
    assert len(set(result.specializations)) == 18
    again = bridge.warmup(SILU_REQUEST)
    assert (again.compiled, again.cached) == (0, 18) and len(kernel.compiled) == 18
    jwt.seal("error")
    for dtype in DTYPES:
        for aligned in (True, False):
            for H in (16, 17, 1, 4096, 33):  # 4096 and 33 share 16's and 17's classes
                launch(kernel, dtype, aligned, H)
    assert len(kernel.launches) == 30 and len(kernel.compiled) == 18
    counts = jwt.counters()
    assert counts["warmup_compiles"] == 18 and counts["compiles_after_seal"] == 0


def test_given_seal_error_then_an_unwarmed_triton_compile_is_refused(triton):
    kernel = make_silu(triton)
    silu_bridge(kernel).warmup(SILU_REQUEST)
    jwt.seal("error")
    assert jwt.sealed()
    with pytest.raises(jitwarm.JitRefusedError) as info:
        launch(kernel, "float32", True, 2**40)  # an i64 H was not warmed
    assert info.value.status == jitwarm.Status.JIT_REFUSED
    assert "refusing to compile Triton kernel" in info.value.message
    # the kernel, every argument's specialization and the options
    assert ("silu_and_mul(out_ptr: *fp32 (16-byte aligned), x_ptr: *fp32 (16-byte aligned), "
            "T: i32, H: i64 (divisible by 16), BLOCK: constexpr=1024) with num_warps=4, "
            "num_ctas=1, num_stages=3") in info.value.message
    assert len(kernel.compiled) == 18 and kernel.launches == []
    assert jwt.counters()["refusals"] == 1


def test_given_seal_warn_then_the_compile_happens_and_is_logged_once(triton, caplog):
    kernel = make_silu(triton)
    jwt.seal("warn")
    with caplog.at_level(logging.WARNING, logger="jitwarm.triton"):
        launch(kernel, "float16", False, 48)
        launch(kernel, "float16", False, 48)
    assert len(kernel.compiled) == 1 and len(kernel.launches) == 2
    (record,) = caplog.records
    assert "compiling Triton kernel" in record.getMessage()
    assert ("silu_and_mul(out_ptr: *fp16, x_ptr: *fp16, T: i32, H: i32 (divisible by 16), "
            "BLOCK: constexpr=1024) with num_warps=4") in record.getMessage()
    counts = jwt.counters()
    assert counts["compiles_after_seal"] == 1 and counts["warnings"] == 1


def test_given_off_then_compiles_after_seal_are_counted_and_the_block_restores(triton):
    kernel = make_silu(triton)
    launch(kernel, "float32", True, 16)  # not sealed yet
    with jwt.monitor("off"):
        launch(kernel, "float32", True, 17)
        assert jwt.sealed()
    assert not jwt.sealed()
    counts = jwt.counters()
    assert counts["compiles_before_seal"] == 0  # the hook was installed by the block
    assert counts["compiles_after_seal"] == 1
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown JIT monitor mode"):
        jwt.seal("loud")


def test_given_record_mode_then_the_recorded_manifest_warms_the_next_start(triton, tmp_path):
    record = tmp_path / "triton.toml"
    kernel = make_silu(triton)
    silu_bridge(kernel)
    with jwt.monitor("warn", record=record):
        launch(kernel, "bfloat16", False, 48)
        launch(kernel, "float32", True, 1)
    requests = jitwarm.manifest_requests(manifest=record)
    assert [r.kernel for r in requests] == ["silu_and_mul", "silu_and_mul"]
    restarted = make_silu(triton)
    result = silu_bridge(restarted).warmup(manifest=record)
    assert result.compiled == 2
    jwt.seal("error")
    launch(restarted, "bfloat16", False, 48)
    launch(restarted, "float32", True, 1)
    assert len(restarted.compiled) == 2


def test_given_a_triton_whose_specialization_differs_then_warmup_refuses_before_compiling(
        triton):
    import fake_triton
    fake_triton.INT_DIVISIBILITY = False
    kernel = make_silu(triton)
    with pytest.raises(jitwarm.InvalidArgumentError) as info:
        silu_bridge(kernel).warmup(SILU_REQUEST)
    assert "do not reproduce jitwarm's keys" in info.value.message
    assert "parameter 'H': jitwarm expects Triton specialization ('i32', 'D')" in info.value.message
    assert kernel.compiled == []


def test_given_a_manifest_then_the_bridge_warms_its_own_kernel_only(triton, tmp_path):
    kernel = make_silu(triton)
    toml = """
version = 1
[[kernel]]
name = "silu_and_mul"
[kernel.params]
x_ptr = { dtype = ["bfloat16", "float16", "float32"], aligned = [true, false] }
H = [16, 17, 1]
T = [2]
BLOCK = [1024]

[[kernel]]
name = "vllm.model_executor.layers.layernorm.rms_norm"
[kernel.params]
H = [1]
"""
    path = tmp_path / "silu.toml"
    path.write_text(toml)
    bridge = silu_bridge(kernel)
    assert len(bridge.keys(manifest=path)) == 18
    assert bridge.warmup(toml=toml).compiled == 18
    with pytest.raises(jitwarm.InvalidArgumentError, match="no request names the Triton kernel"):
        jwt.TritonKernel(kernel, name="other").warmup(toml=toml)


def test_given_kernel_parameters_then_kinds_come_from_annotations_requests_and_hints(triton):
    @triton.jit
    def scale(out_ptr: "*fp16", x_ptr, n: "i32", alpha, BLOCK: triton.language.constexpr = 64):
        pass

    bridge = jwt.TritonKernel(scale, name="scale")
    request = jitwarm.WarmupRequest("scale", params={"x_ptr": "float16", "alpha": 0.5})
    kinds = [p.kind for p in bridge.schema([request]).params]
    assert kinds == ["tensor", "tensor", "int", "float", "constexpr"]
    assert bridge.schema([request]).params[0].dtypes == ["float16"]
    assert bridge.warmup(request).compiled == 3  # n: 1, 16, 2
    with pytest.raises(jitwarm.InvalidArgumentError, match="kind of parameter 'x_ptr' is not known"):
        bridge.schema([jitwarm.WarmupRequest("scale")])
    with pytest.raises(jitwarm.InvalidArgumentError, match="hints for unknown parameter"):
        jwt.TritonKernel(scale, params={"y": {"kind": "int"}})
    with pytest.raises(jitwarm.InvalidArgumentError, match="is not a @triton.jit kernel"):
        jwt.TritonKernel(lambda: None)


def test_given_a_hook_already_installed_then_the_monitor_chains_to_it_and_restores_it(triton):
    calls = []

    def previous(**kwargs):
        calls.append(kwargs["is_manual_warmup"])

    triton.knobs.runtime.jit_cache_hook = previous
    kernel = make_silu(triton)
    jwt.install_hook()
    assert triton.knobs.runtime.jit_cache_hook is not previous
    launch(kernel, "float32", True, 16)
    assert calls == [False]
    jwt.uninstall_hook()
    assert triton.knobs.runtime.jit_cache_hook is previous


def test_given_an_older_triton_then_the_hook_is_jitfunction_cache_hook(triton, monkeypatch):
    monkeypatch.delattr(triton, "knobs")
    monkeypatch.setattr(triton.runtime.jit.JITFunction, "cache_hook", None, raising=False)
    jwt.install_hook()
    assert triton.runtime.jit.JITFunction.cache_hook is not None
    jwt.uninstall_hook()
    assert triton.runtime.jit.JITFunction.cache_hook is None
