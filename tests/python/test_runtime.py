"""jitwarm.Runtime: loading plugins and the load report, kernels, schemas,
explain, platforms, the default platform, targets, cache counters, options,
and errors as exceptions carrying the status."""
import json
import os
import sys

import pytest

import jitwarm
from conftest import SILU


def test_given_the_reference_directory_when_loading_then_the_report_lists_it(reference_dir):
    rt = jitwarm.Runtime()
    report = rt.load_plugins(reference_dir)
    assert isinstance(report, jitwarm.LoadReport)
    assert report.loaded_count == 1 and report.rejected_count == 0
    assert report.searched_directories == [reference_dir]
    (record,) = report.records
    assert record.loaded and record.rejection is None
    assert record.path.endswith("libjitwarm-reference-cpu.so")
    assert record.plugin_name == "jitwarm-reference-cpu" and record.abi_version == 1
    assert len(record.schemas) == 10 and SILU in record.schemas
    assert any(p.startswith("cpu: launch") for p in record.platforms)
    assert str(report) == report.to_text()
    assert "1 loaded, 0 rejected" in report.to_text()
    assert json.loads(report.to_json())["loaded"] == 1
    assert [r.path for r in rt.load_history] == [record.path]


def test_given_fake_plugins_when_loading_then_each_rejection_is_reported_with_its_reason(
        reference_dir):
    fakes = os.environ.get("JITWARM_TEST_FAKE_PLUGIN_DIR")
    if not fakes:
        pytest.skip("JITWARM_TEST_FAKE_PLUGIN_DIR is not set")
    rt = jitwarm.Runtime(log=lambda level, message: None)
    report = rt.load_plugins([reference_dir, fakes])
    reasons = {os.path.basename(r.path): r.rejection for r in report.records if not r.loaded}
    assert reasons["libjitwarm-fake-abi-too-old.so"] == "ABI too old"
    assert reasons["libjitwarm-fake-no-entry.so"] == "missing entry symbol"
    assert report.rejected_count == len(reasons) >= 2
    with pytest.raises(jitwarm.InvalidArgumentError):
        jitwarm.Runtime().load_plugins(fakes, strict=True)


def test_given_a_bad_plugin_path_when_loading_one_strictly_then_the_error_names_it(rt):
    with pytest.raises(jitwarm.Error) as info:
        rt.load_plugin("/nonexistent/libjitwarm-nope.so", strict=True)
    assert "/nonexistent/libjitwarm-nope.so" in str(info.value)
    record = rt.load_plugin("/nonexistent/libjitwarm-nope.so")
    assert not record.loaded and record.rejection


def test_given_loaded_plugins_then_kernels_schemas_and_explain_are_objects(rt):
    names = rt.kernel_names()
    assert len(names) == 10 and names == sorted(names) and SILU in names
    schema = rt.schema(SILU)
    assert schema.name == SILU and schema.short_name == "silu_and_mul"
    assert [p.name for p in schema.params] == ["out", "x", "T", "H"]
    out, x, T, H = schema.params
    assert out.kind == "tensor" and out.output and out.same_dtype_as == "x"
    assert set(x.dtypes) == {"float16", "bfloat16", "float32"} and x.rank == 2
    assert T.kind == "int" and T.do_not_specialize and not H.do_not_specialize
    explanation = rt.explain(SILU)
    assert explanation.kernel_name == SILU
    (cpu,) = explanation.platforms
    assert cpu.platform == "cpu" and cpu.winner.impl_name == "reference-cpu"
    assert cpu.replaced == []
    assert "cpu: 'reference-cpu'" in str(explanation)
    (impl,) = rt.implementations(SILU)
    assert impl.platform == "cpu" and "reference-cpu" in impl.origin


def test_given_a_kernel_name_twice_then_the_same_handle_comes_back(rt):
    kernel = rt.kernel(SILU)
    assert rt.kernel(SILU) is kernel
    assert kernel.name == SILU and kernel.schema.name == SILU
    assert repr(kernel) == f"<jitwarm.Kernel '{SILU}'>"


def test_given_unknown_names_then_not_found_errors_carry_status_and_message(rt):
    with pytest.raises(jitwarm.NotFoundError) as info:
        rt.kernel("vllm.nope")
    error = info.value
    assert isinstance(error, jitwarm.Error) and isinstance(error, LookupError)
    assert error.status == jitwarm.Status.NOT_FOUND
    assert "unknown kernel 'vllm.nope'" in error.message and SILU in error.message
    with pytest.raises(jitwarm.NotFoundError):
        rt.explain("vllm.nope")
    with pytest.raises(jitwarm.NotFoundError, match="unknown platform 'nope'"):
        rt.target_for("nope")


def test_given_the_cpu_reference_then_platforms_default_and_target_are_reported(rt, gpu_rt):
    (cpu,) = rt.platforms()
    assert (cpu.name, cpu.can_compile, cpu.can_launch, cpu.device_count) == ("cpu", True, True, 1)
    assert rt.default_platform() == "cpu"
    assert rt.target_for("cpu").startswith("cpu:")
    platforms = {p.name: p for p in gpu_rt.platforms()}
    launchable = [p.name for p in platforms.values() if p.can_launch and p.device_count > 0]
    assert gpu_rt.default_platform() in launchable
    for name in ("cuda", "hip"):
        if name in platforms:
            assert platforms[name].can_compile


def test_given_no_plugins_then_there_is_no_default_platform():
    with pytest.raises(jitwarm.NoDeviceError, match="no loaded platform can launch"):
        jitwarm.Runtime().default_platform()


def test_given_a_cache_dir_when_warming_then_entries_are_written_and_read_back(tmp_path,
                                                                             reference_dir):
    request = jitwarm.WarmupRequest(SILU, params={"x": "float32", "H": [16, 17]})
    first = jitwarm.Runtime(cache_dir=tmp_path)
    first.load_plugins(reference_dir)
    first.warmup(request, platform="cpu")
    assert first.cache_stats().disk_writes == 2
    second = jitwarm.Runtime(cache_dir=str(tmp_path))
    second.load_plugins(reference_dir)
    second.warmup(request, platform="cpu")
    stats = second.cache_stats()
    assert (stats.disk_hits, stats.compiles, stats.entries) == (2, 0, 2)


def test_given_bad_runtime_options_then_they_are_refused():
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown JIT monitor mode 'loud'"):
        jitwarm.Runtime(jit_monitor="loud")
    with pytest.raises(jitwarm.InvalidArgumentError, match="log is not callable"):
        jitwarm.Runtime(log=5)
    with pytest.raises(TypeError):
        jitwarm.Runtime("positional")


def test_given_a_log_callback_then_it_receives_the_core_lines(reference_dir, monkeypatch):
    monkeypatch.setenv("JITWARM_LOG_LEVEL", "warning")
    lines = []
    rt = jitwarm.Runtime(jit_monitor="warn", log=lambda level, message: lines.append((level, message)))
    rt.load_plugins(reference_dir)
    rt.seal()
    import numpy as np
    x = np.ones((1, 32), np.float32)
    rt.kernel(SILU)(np.zeros((1, 16), np.float32), x, 1, 16)
    assert [level for level, message in lines if "JIT monitor" in message] == ["warning"]


def test_given_a_failing_log_callback_then_the_launch_still_works(reference_dir, monkeypatch):
    monkeypatch.setenv("JITWARM_LOG_LEVEL", "warning")

    def broken(level, message):
        raise RuntimeError("log sink down")

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    rt = jitwarm.Runtime(jit_monitor="warn", log=broken)
    rt.load_plugins(reference_dir)
    rt.seal()
    import numpy as np
    out = np.zeros((1, 16), np.float32)
    rt.kernel(SILU)(out, np.ones((1, 32), np.float32), 1, 16)
    assert out[0, 0] > 0
    # One per line the core logged (the plugin load, the monitor's warning).
    assert unraisable and {str(u.exc_value) for u in unraisable} == {"log sink down"}
