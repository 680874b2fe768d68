"""Fixtures for the jitwarm package tests. The meson test sets the plugin
and source paths (tests/python/meson.build); run by hand with the same
variables and PYTHONPATH=<build>/python."""
import ast
import os
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import jitwarm

SILU = "vllm.model_executor.layers.activation.silu_and_mul"
RMS_NORM = "vllm.model_executor.layers.layernorm.rms_norm"
EXPAND = "vllm.v1.sample.rejection_sampler.expand"
BATCH_MEMCPY = "vllm.v1.worker.mamba_utils.batch_memcpy"


def stub_tree():
    """The parsed type stubs the package ships (_jitwarm.pyi)."""
    path = os.path.join(os.path.dirname(jitwarm.__file__), "_jitwarm.pyi")
    with open(path) as f:
        return ast.parse(f.read())


def env_path(name):
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set (run through `meson test`)")
    return value


@pytest.fixture
def reference_dir():
    return env_path("JITWARM_TEST_REFERENCE_PLUGIN_DIR")


@pytest.fixture
def source_root():
    return env_path("JITWARM_TEST_SOURCE_ROOT")


@pytest.fixture
def rt(reference_dir):
    """A fresh runtime with only the CPU reference loaded."""
    runtime = jitwarm.Runtime()
    runtime.load_plugins(reference_dir, strict=True)
    return runtime


@pytest.fixture
def gpu_rt():
    """A fresh runtime with every bundled plugin (JITWARM_PLUGIN_PATH)."""
    env_path("JITWARM_PLUGIN_PATH")
    runtime = jitwarm.Runtime()
    runtime.load_plugins()
    return runtime


def silu_reference(x):
    h = x.shape[1] // 2
    a = x[:, :h].astype(np.float64)
    return (a / (1.0 + np.exp(-a)) * x[:, h:]).astype(x.dtype)


def aligned_empty(shape, dtype, offset_elements=0):
    """A NumPy array whose data starts 16-byte aligned plus offset_elements."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape)) if shape else 1
    raw = np.zeros(count * dtype.itemsize + 64 + offset_elements * dtype.itemsize, np.uint8)
    start = (-raw.ctypes.data) % 16 + offset_elements * dtype.itemsize
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


@pytest.fixture
def fake_torch(monkeypatch):
    """A stand-in `torch` module with the attributes the binding reads from a
    torch.Tensor (data_ptr(), dtype, shape, stride(), get_device()) and
    torch._C._cuda_getCurrentRawStream, so the torch path runs here."""
    import fake_torch as module
    monkeypatch.setitem(sys.modules, "torch", module)
    module.reset()
    return module


@pytest.fixture
def redis_url(tmp_path):
    """A redis-server of this test's own on a free loopback port."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian package redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("redis-server did not start")
                time.sleep(0.01)
        yield f"redis://127.0.0.1:{port}/0", server
    finally:
        server.kill()
        server.wait()
