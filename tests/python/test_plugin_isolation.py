"""A Python host that probes plugins in a child process first
(load_plugins(isolate=True), or JITWARM_PLUGIN_ISOLATION=1 for any load):
plugins that crash, exit or spin in their own code are rejected with what
happened and where, and the server keeps working; kernel(), schema() and
explain() take the short names the command takes."""
import os

import numpy as np
import pytest

import jitwarm
from conftest import SILU, env_path, silu_reference


@pytest.fixture
def crash_dir():
    return env_path("JITWARM_TEST_ZOO_CRASH_DIR")


def test_given_crashing_plugins_when_loaded_isolated_then_each_is_rejected_and_the_host_launches(
        crash_dir, reference_dir):
    rt = jitwarm.Runtime()
    # 3 s: the two spinning plugins cost it each; a real load here takes ms.
    report = rt.load_plugins([crash_dir, reference_dir], isolate=True, probe_timeout=3)
    rejected = {os.path.basename(r.path): r for r in report.records if not r.loaded}
    assert len(rejected) == 8
    for name, record in rejected.items():
        assert record.rejection == "crashed in probe", name
        where = "jitwarm_plugin_negotiate" if "-entry-" in name else "register_all"
        assert record.detail.endswith(f" in {where}"), record.detail
    assert "timed out after 3 s while loading" in rejected["libjitwarm-zoo-entry-spins.so"].detail
    x = np.linspace(-2, 2, 6 * 16, dtype=np.float32).reshape(6, 16)
    out = np.zeros((6, 8), np.float32)
    rt.kernel("silu_and_mul")(out, x, 6, 8)
    np.testing.assert_allclose(out, silu_reference(x), rtol=1e-5, atol=1e-6)


def test_given_the_isolation_variable_then_a_plain_load_probes(crash_dir, monkeypatch):
    monkeypatch.setenv("JITWARM_PLUGIN_ISOLATION", "1")
    rt = jitwarm.Runtime()
    record = rt.load_plugin(os.path.join(crash_dir, "libjitwarm-zoo-register-aborts.so"))
    assert not record.loaded
    assert record.rejection == "crashed in probe"
    assert record.detail.endswith(" in register_all")


def test_given_a_bad_isolation_variable_then_loading_says_which(reference_dir, monkeypatch):
    monkeypatch.setenv("JITWARM_PLUGIN_ISOLATION", "sometimes")
    with pytest.raises(jitwarm.InvalidArgumentError, match="JITWARM_PLUGIN_ISOLATION=sometimes"):
        jitwarm.Runtime().load_plugins(reference_dir)


def test_given_short_names_then_kernel_schema_and_explain_take_them(rt):
    assert rt.kernel("silu_and_mul").name == SILU
    assert rt.schema("silu_and_mul").name == SILU
    assert rt.explain("silu_and_mul").kernel_name == SILU
    with pytest.raises(jitwarm.NotFoundError, match="did you mean"):
        rt.kernel("silu_and_mull")
