"""The torch/CUDA launch path for real: torch CUDA tensors through the CUDA
plugin, on torch's current stream. Skipped where torch, a CUDA device or the
CUDA plugin is missing (the CI machine); run on a GPU machine with
`python3 -m pytest tests/python/test_torch_cuda.py` and the environment of
docs/python.md."""
import pytest

import jitwarm
from conftest import RMS_NORM, SILU

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch sees no CUDA device", allow_module_level=True)


def cuda_runtime(**options):
    rt = jitwarm.Runtime(**options)
    rt.load_plugins()
    if not any(p.name == "cuda" and p.can_launch and p.device_count for p in rt.platforms()):
        pytest.skip("the jitwarm CUDA plugin cannot launch here")
    return rt


@pytest.fixture
def cuda_rt():
    return cuda_runtime()


def silu_reference(x):
    h = x.shape[1] // 2
    a = x[:, :h].float()
    return (a / (1 + torch.exp(-a)) * x[:, h:].float()).to(x.dtype)


TOLERANCE = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-5}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("aligned", [True, False])
def test_given_cuda_tensors_then_silu_and_mul_matches_torch(cuda_rt, dtype, aligned):
    T, H = 5, 4096 + 17
    shift = 0 if aligned else 1
    x = torch.randn(T * 2 * H + 8, dtype=dtype, device="cuda")[shift:shift + T * 2 * H].view(T, 2 * H)
    out = torch.empty(T * H + 8, dtype=dtype, device="cuda")[shift:shift + T * H].view(T, H)
    kernel = cuda_rt.kernel(SILU)
    assert ("x:" + {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}[dtype]
            + ("*:a16" if aligned else "*:a1")) in kernel.key_for(out, x, T, H).text
    kernel(out, x, T, H)
    torch.testing.assert_close(out, silu_reference(x), rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def test_given_a_non_default_torch_stream_then_the_launch_runs_on_it(cuda_rt):
    T, H = 64, 8192
    x = torch.randn(T, 2 * H, device="cuda")
    out = torch.zeros(T, H, device="cuda")
    stream = torch.cuda.Stream()
    seen = []
    kernel = cuda_rt.kernel(SILU)
    with torch.cuda.stream(stream):
        kernel(out, x, T, H)
        with cuda_rt.register_kernels({SILU: ("cuda", lambda out, x, T, H: seen.append(
                jitwarm.current_launch_stream()))}):
            kernel(out, x, T, H)
    assert seen == [stream.cuda_stream]
    stream.synchronize()
    torch.testing.assert_close(out, silu_reference(x))


def test_given_a_row_strided_cuda_view_then_rms_norm_matches_torch(cuda_rt):
    T, H = 7, 4096
    base = torch.randn(T, H + 64, dtype=torch.bfloat16, device="cuda")
    x = base[:, :H]
    weight = torch.randn(H, dtype=torch.bfloat16, device="cuda")
    out = torch.empty(T, H, dtype=torch.bfloat16, device="cuda")
    cuda_rt.kernel(RMS_NORM)(out, x, x.stride(0), weight, 1e-6, T, H)
    xf = x.float()
    expected = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * weight.float())
    torch.testing.assert_close(out.float(), expected, rtol=2e-2, atol=2e-2)


def test_given_warmup_and_seal_then_cuda_launches_compile_nothing(cuda_rt):
    cuda_rt.warmup(jitwarm.WarmupRequest(SILU, params={
        "x": {"dtype": ["bfloat16", "float16"], "aligned": [True]}, "H": [4096, 4097, 1]}))
    compiles = cuda_rt.cache_stats().compiles
    cuda_rt.seal()
    with cuda_rt.monitor("error"):
        for dtype in (torch.bfloat16, torch.float16):
            for H in (4096, 4097, 1, 8192):
                x = torch.randn(3, 2 * H, dtype=dtype, device="cuda")
                out = torch.empty(3, H, dtype=dtype, device="cuda")
                cuda_rt.kernel(SILU)(out, x, 3, H)
        with pytest.raises(jitwarm.JitRefusedError):
            x = torch.randn(3, 64, dtype=torch.float32, device="cuda")
            cuda_rt.kernel(SILU)(torch.empty(3, 32, device="cuda"), x, 3, 32)
    torch.cuda.synchronize()
    assert cuda_rt.cache_stats().compiles == compiles


@pytest.mark.parametrize("first_launch", ["before the capture", "inside the capture",
                                          "inside the capture, not compiled"])
def test_given_a_torch_cuda_graph_then_a_captured_launch_runs_on_replay(tmp_path, first_launch):
    # What a server does to its decode step: capture the launches with
    # torch.cuda.graph (its default capture mode refuses calls that are unsafe
    # while capturing), then replay with new data in the same buffers. A
    # compile-only warmup leaves the first launch that loads the kernel to the
    # capture when no warm-up run comes before it; without a warmup the
    # capture compiles too.
    cuda_rt = cuda_runtime(cache_dir=tmp_path)  # nothing compiled before this test
    T, H = 4, 4096 + 8
    compiled_before = first_launch != "inside the capture, not compiled"
    if compiled_before:
        cuda_rt.warmup(jitwarm.WarmupRequest(SILU, params={
            "x": {"dtype": ["float32"], "aligned": [True]}, "H": [H]}))
    compiles = cuda_rt.cache_stats().compiles
    x = torch.randn(T, 2 * H, device="cuda")
    out = torch.zeros(T, H, device="cuda")
    kernel = cuda_rt.kernel(SILU)
    if first_launch == "before the capture":
        kernel(out, x, T, H)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(out, x, T, H)
    torch.cuda.synchronize()
    assert cuda_rt.cache_stats().compiles == compiles + (0 if compiled_before else 1)
    out.zero_()
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, silu_reference(x))
