"""Operators' view of the cache: Runtime.metrics_text() in Prometheus' text
format, jitwarm.prometheus' collector, bundles whose entries a runtime ever
hit, counted across processes, and Runtime.explain_miss (why a key would
miss)."""
import os
import shutil
import subprocess
import sys

import pytest

import jitwarm

from conftest import RMS_NORM, SILU
from test_monitor import launch

REQUEST = jitwarm.WarmupRequest(SILU, params={"x": ["float32", "float16"]})


def test_given_a_warmup_then_the_metrics_text_parses_and_counts_it(rt):
    parser = pytest.importorskip("prometheus_client.parser")
    result = rt.warmup(REQUEST, platform="cpu")
    rt.seal()
    text = rt.metrics_text()
    families = {f.name: f for f in parser.text_string_to_metric_families(text)}
    compiles = families["jitwarm_compiles"]
    assert compiles.type == "counter"
    before = [s for s in compiles.samples if s.labels.get("phase") == "before_seal"]
    assert sum(s.value for s in before) == result.compiled == rt.cache_stats().compiles
    assert {s.labels["platform"] for s in before} == {"cpu"}
    assert {s.labels["kernel"] for s in before} == {SILU}
    assert not [s for s in compiles.samples if s.labels.get("phase") == "after_seal"]
    hits = {s.labels["tier"]: s.value for s in families["jitwarm_cache_hits"].samples}
    assert set(hits) == {"memory", "disk", "system", "bundle", "redis"}
    assert hits["memory"] == rt.cache_stats().hits
    assert families["jitwarm_sealed"].samples[0].value == 1
    assert families["jitwarm_compile_seconds"].type == "histogram"


def test_given_the_collector_then_a_registry_serves_the_runtime_metrics(rt):
    pytest.importorskip("prometheus_client")
    from prometheus_client import CollectorRegistry, generate_latest
    import jitwarm.prometheus

    rt.warmup(REQUEST, platform="cpu")
    registry = CollectorRegistry()
    registry.register(jitwarm.prometheus.collector(rt))
    served = generate_latest(registry).decode()
    compiled = rt.cache_stats().compiles
    assert compiled > 0
    lines = [line for line in served.splitlines()
             if line.startswith("jitwarm_compiles_total{")]
    assert sum(float(line.rsplit(" ", 1)[1]) for line in lines) == compiled
    assert registry.get_sample_value("jitwarm_cache_hits_total", {"tier": "memory"}) == \
        rt.cache_stats().hits
    with pytest.raises(TypeError, match="jitwarm.Runtime"):
        jitwarm.prometheus.collector(object())


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_given_promtool_then_the_metrics_text_passes_its_check(rt):
    rt.warmup(REQUEST, platform="cpu")
    checked = subprocess.run(["promtool", "check", "metrics"], input=rt.metrics_text(),
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_given_prometheus_client_missing_then_the_collector_says_what_to_install(rt, monkeypatch):
    import jitwarm.prometheus
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(ImportError, match="needs prometheus_client"):
        jitwarm.prometheus.collector(rt)


def test_given_a_warning_and_a_refusal_after_seal_then_their_series_name_kernel_and_target(rt):
    rt.seal()
    rt.jit_monitor = "warn"
    launch(rt, 17)
    launch(rt, 17)  # once per key
    rt.jit_monitor = "error"
    with pytest.raises(jitwarm.JitRefusedError):
        launch(rt, 16)  # another key (H divisible by 16)
    text = rt.metrics_text()
    labels = f'{{platform="cpu",target="{rt.target_for("cpu")}",kernel="{SILU}"}}'

    def series(name):
        return [line for line in text.splitlines() if line.startswith(name + "{")
                or line.startswith(name + " ")]
    assert series("jitwarm_monitor_warnings_total") == \
        [f"jitwarm_monitor_warnings_total{labels} 1"]
    assert series("jitwarm_monitor_refusals_total") == \
        [f"jitwarm_monitor_refusals_total{labels} 1"]


HIT_IN_ANOTHER_PROCESS = """
import sys, jitwarm
rt = jitwarm.Runtime(cache_dir=sys.argv[1])
rt.load_plugins(sys.argv[2])
r = rt.warmup(jitwarm.WarmupRequest(sys.argv[3], params={"x": ["float32", "float16"]}),
              target="cpu:aarch64")
assert (r.compiled, r.cached) == (0, int(sys.argv[4])), (r.compiled, r.cached)
print(rt.metrics_text())
"""


def test_given_two_bundles_and_a_process_that_hit_one_then_stats_say_which_was_hit(
        tmp_path, reference_dir):
    warm = jitwarm.Runtime(cache_dir=tmp_path / "warm")
    warm.load_plugins(reference_dir)
    warm.warmup(REQUEST, target="cpu:x86_64")
    warm.warmup(REQUEST, target="cpu:aarch64")
    arm = tmp_path / "arm.jwb"
    x86 = tmp_path / "x86.jwb"
    n = jitwarm.export_cache_bundle(arm, ["cpu:aarch64"], cache_dir=tmp_path / "warm").entries
    m = jitwarm.export_cache_bundle(x86, ["cpu:x86_64"], cache_dir=tmp_path / "warm").entries
    assert n > 0 and m > 0
    new = tmp_path / "new"
    jitwarm.import_cache_bundle(arm, cache_dir=new)
    jitwarm.import_cache_bundle(x86, cache_dir=new)
    before = {b.name: (b.entries, b.entries_ever_hit)
              for b in jitwarm.cache_directory_stats(cache_dir=new).bundles}
    assert before == {"arm.jwb": (n, 0), "x86.jwb": (m, 0)}

    done = subprocess.run([sys.executable, "-c", HIT_IN_ANOTHER_PROCESS, str(new),
                           str(reference_dir), SILU, str(n)],
                          capture_output=True, text=True, env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    assert f'jitwarm_cache_hits_total{{tier="bundle"}} {n}' in done.stdout
    assert 'jitwarm_cache_hits_total{tier="disk"} 0' in done.stdout

    stats = jitwarm.cache_directory_stats(cache_dir=new)
    after = {b.name: (b.entries, b.entries_ever_hit) for b in stats.bundles}
    assert after == {"arm.jwb": (n, n), "x86.jwb": (m, 0)}
    assert all(len(b.id) == 32 and b.imported > 0 for b in stats.bundles)
    assert stats.bundle_problems == []
    # The bundles' folder is not an entry, corrupt or not.
    assert jitwarm.verify_cache(cache_dir=new).corrupt == 0
    assert jitwarm.list_cache(cache_dir=new).corrupt == []

    # A malformed record is ignored with the reason; the others still count.
    (new / "bundles" / "0123456789abcdef0123456789abcdef.json").write_text("{not json")
    stats = jitwarm.cache_directory_stats(cache_dir=new)
    assert len(stats.bundles) == 2
    assert len(stats.bundle_problems) == 1
    assert "not a JSON object" in stats.bundle_problems[0]

    # Entries cleared are no longer the bundle's; clearing all forgets them.
    jitwarm.clear_cache(["cpu:aarch64"], cache_dir=new)
    after = {b.name: (b.entries, b.entries_ever_hit)
             for b in jitwarm.cache_directory_stats(cache_dir=new).bundles}
    assert after == {"arm.jwb": (0, 0), "x86.jwb": (m, 0)}
    jitwarm.clear_cache(cache_dir=new)
    assert jitwarm.cache_directory_stats(cache_dir=new).bundles == []


def test_given_a_warmed_cache_then_explain_miss_says_a_key_hits_or_names_what_differs(
        tmp_path, reference_dir):
    warm = jitwarm.Runtime(cache_dir=tmp_path)
    warm.load_plugins(reference_dir, strict=True)
    warmed = warm.warmup(REQUEST, target="cpu:x86_64").compiled
    assert warmed > 0
    # Another runtime on the same directory: nothing in its memory, so the
    # answers come from the entries on disk.
    rt = jitwarm.Runtime(cache_dir=tmp_path)
    rt.load_plugins(reference_dir, strict=True)
    key = rt.warmup_plan(REQUEST, target="cpu:x86_64")[0]
    hit = rt.explain_miss(key)
    assert isinstance(hit, jitwarm.MissExplanation)
    assert hit.would_hit and hit.neighbours == [] and hit.not_kept == ""
    assert str(hit) == hit.to_text() == f"{key.text}: would hit"

    # The same key for another target: every entry of the kernel is a
    # neighbour, the nearest differs in the target alone.
    other = rt.warmup_plan(REQUEST, target="cpu:aarch64")[0]
    assert other.text == key.text.replace("cpu:x86_64", "cpu:aarch64")
    miss = rt.explain_miss(other)
    assert not miss.would_hit and miss.entries == warmed
    nearest = miss.neighbours[0]
    assert (nearest.key, nearest.target, nearest.system) == (key.text, "cpu:x86_64", False)
    assert [(f.name, f.wanted, f.found) for f in nearest.factors] == \
        [("target", "cpu:aarch64", "cpu:x86_64")]
    assert "target: wanted cpu:aarch64, found cpu:x86_64" in str(miss)

    # A dtype not warmed: the parameters it sets are named, by name.
    bf16 = rt.warmup_plan(jitwarm.WarmupRequest(SILU, params={"x": ["bfloat16"]}),
                          target="cpu:x86_64")[0]
    names = [f.name for f in rt.explain_miss(bf16).neighbours[0].factors]
    assert "parameter x" in names and "target" not in names

    # A kernel the cache holds nothing of.
    none = rt.explain_miss(rt.warmup_plan(jitwarm.WarmupRequest(RMS_NORM),
                                          target="cpu:x86_64")[0])
    assert not none.would_hit and none.neighbours == []
    assert "no entry of this kernel and target" in str(none)
    assert rt.cache_stats().compiles == 0  # explaining compiles nothing


def test_given_bad_keys_or_no_cache_directory_then_explain_miss_says_why(rt):
    key = rt.warmup_plan(REQUEST, platform="cpu")[0]
    unkept = rt.explain_miss(key)  # rt has no cache directory
    assert not unkept.would_hit and "no cache directory" in unkept.not_kept
    with pytest.raises(jitwarm.NotFoundError, match="unknown kernel 'vllm.nope'"):
        rt.explain_miss(jitwarm.CompileKey("vllm.nope", key.impl_name, key.target))
    with pytest.raises(jitwarm.NotFoundError, match="no implementation 'nope'"):
        rt.explain_miss(jitwarm.CompileKey(SILU, "nope", key.target))
    with pytest.raises(TypeError):
        rt.explain_miss(key.text)  # a key, as warmup_plan and key_for make it
