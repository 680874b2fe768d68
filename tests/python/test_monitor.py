"""seal() and the JIT monitor from Python: modes as a context manager, the
refusal as JitRefusedError, warnings once per key, and record mode writing a
manifest that warms the recorded keys at the next start."""
import numpy as np
import pytest

import jitwarm
from conftest import SILU, aligned_empty


def launch(rt, H, dtype=np.float32):
    x = aligned_empty((2, 2 * H), dtype)
    out = aligned_empty((2, H), dtype)
    rt.kernel(SILU)(out, x, 2, H)


def test_given_seal_and_error_mode_then_an_unwarmed_launch_is_refused(rt):
    rt.warmup(jitwarm.WarmupRequest(SILU, params={"x": "float32", "H": [16]}), platform="cpu")
    assert not rt.sealed and rt.jit_monitor == "off"
    rt.seal()
    assert rt.sealed
    with rt.monitor("error") as same:
        assert same is rt and rt.jit_monitor == "error"
        launch(rt, 16)  # warmed: a hit
        compiles = rt.cache_stats().compiles
        with pytest.raises(jitwarm.JitRefusedError) as info:
            launch(rt, 17)
        assert info.value.status == jitwarm.Status.JIT_REFUSED
        assert "refusing to compile silu_and_mul[cpu:" in info.value.message
        assert rt.cache_stats().compiles == compiles
    assert rt.jit_monitor == "off"
    launch(rt, 17)  # off: it compiles
    assert rt.cache_stats().compiles == compiles + 1


def test_given_the_monitor_mode_set_then_it_reads_back_and_bad_modes_are_refused(rt):
    rt.jit_monitor = "warn"
    assert rt.jit_monitor == "warn"
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown JIT monitor mode 'loud'"):
        rt.jit_monitor = "loud"
    with pytest.raises(jitwarm.InvalidArgumentError):
        with rt.monitor("loud"):
            pass
    assert rt.jit_monitor == "warn"


def test_given_an_exception_in_the_block_then_the_monitor_is_restored(rt):
    with pytest.raises(RuntimeError):
        with rt.monitor("error"):
            raise RuntimeError("in the block")
    assert rt.jit_monitor == "off"


def test_given_record_mode_then_the_next_start_warms_what_was_compiled(rt, tmp_path,
                                                                       reference_dir):
    record = tmp_path / "recorded.toml"
    rt.seal()
    with rt.monitor("warn", record=record):
        assert rt.jit_record_path == str(record)
        launch(rt, 17)
        launch(rt, 17)
        launch(rt, 32, np.float16)
    assert rt.jit_record_path is None
    launch(rt, 5)  # after the block: not recorded
    requests = jitwarm.manifest_requests(manifest=record)
    assert len(requests) == 2
    restarted = jitwarm.Runtime()
    restarted.load_plugins(reference_dir)
    assert restarted.warmup(manifest=record, platform="cpu").compiled == 2
    restarted.seal()
    with restarted.monitor("error"):
        launch(restarted, 17)
        launch(restarted, 32, np.float16)
    assert restarted.cache_stats().compiles == 2


def test_given_the_record_path_option_then_the_runtime_starts_recording(tmp_path, reference_dir):
    record = tmp_path / "from-option.toml"
    rt = jitwarm.Runtime(jit_record_path=record, jit_monitor="off")
    rt.load_plugins(reference_dir)
    assert rt.jit_record_path == str(record)
    rt.seal()
    launch(rt, 16)
    assert len(jitwarm.manifest_requests(manifest=record)) == 1
    rt.jit_record_path = None
    launch(rt, 17)
    assert len(jitwarm.manifest_requests(manifest=record)) == 1
