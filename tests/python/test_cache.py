"""Caches from Python: the per-user default and the settings the core
resolves (the same as a Runtime's and the CLI's), bundles, shards, and a
shared Redis tier (a redis-server of the test's own; skipped without one)."""
import os

import pytest

import jitwarm

from conftest import SILU


def test_given_no_options_then_the_cache_is_the_per_user_default(monkeypatch, tmp_path):
    monkeypatch.delenv("JITWARM_NO_CACHE_DIR", raising=False)
    monkeypatch.delenv("JITWARM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    settings = jitwarm.resolve_cache_settings()
    assert settings.directory == str(tmp_path / "jitwarm")
    assert settings.default_directory
    assert "per-user default" in settings.directory_source
    runtime = jitwarm.Runtime()
    assert runtime.cache_settings.directory == settings.directory
    assert runtime.cache_settings.persistent
    assert (tmp_path / "jitwarm").is_dir()


def test_given_options_then_they_win_and_no_cache_dir_wins_over_all(monkeypatch, tmp_path):
    monkeypatch.setenv("JITWARM_CACHE_DIR", str(tmp_path / "env"))
    monkeypatch.delenv("JITWARM_NO_CACHE_DIR", raising=False)
    assert jitwarm.resolve_cache_settings().directory_source == "JITWARM_CACHE_DIR"
    assert jitwarm.resolve_cache_settings(cache_dir=tmp_path / "opt").directory == str(
        tmp_path / "opt")
    none = jitwarm.resolve_cache_settings(cache_dir=tmp_path, no_cache_dir=True)
    assert none.directory == "" and not none.persistent
    remote = jitwarm.resolve_cache_settings(remote_cache="redis://:pw@10.1.2.3:7000/2",
                                            remote_timeout=0.25)
    assert remote.remote == "redis://:***@10.1.2.3:7000/2"
    assert remote.remote_timeout == 0.25
    with pytest.raises(jitwarm.InvalidArgumentError,
                       match="^remote_cache 'http://cache' is not a Redis URL") as bad:
        jitwarm.resolve_cache_settings(remote_cache="http://cache")
    assert "--remote-cache" not in str(bad.value)
    with pytest.raises(jitwarm.InvalidArgumentError, match="remote_cache 'http://cache'"):
        jitwarm.Runtime(remote_cache="http://cache")
    assert jitwarm.resolve_cache_settings(remote_cache="redis://h/0").remote_source == \
        "remote_cache"
    assert "no_remote_cache=True" in jitwarm.resolve_cache_settings(
        no_remote_cache=True).remote_source
    with pytest.raises(jitwarm.InvalidArgumentError, match="remote_timeout"):
        jitwarm.Runtime(remote_timeout=0)
    with pytest.raises(jitwarm.InvalidArgumentError, match="cache_max_bytes"):
        jitwarm.Runtime(cache_max_bytes=-1)


def test_given_a_warm_cache_when_exported_and_imported_then_a_new_runtime_compiles_nothing(
        tmp_path, reference_dir):
    request = jitwarm.WarmupRequest(SILU, params={"x": "float32", "H": [16, 17]})
    warm = jitwarm.Runtime(cache_dir=tmp_path / "warm")
    warm.load_plugins(reference_dir)
    warm.warmup(request, target="cpu:x86_64")
    warm.warmup(request, target="cpu:aarch64")
    bundle = tmp_path / "cpu.jwb"
    exported = jitwarm.export_cache_bundle(bundle, ["cpu:aarch64"], cache_dir=tmp_path / "warm")
    assert (exported.entries, exported.targets) == (2, {"cpu:aarch64": 2})
    assert [e.target for e in exported.manifest] == ["cpu:aarch64"] * 2
    imported = jitwarm.import_cache_bundle(bundle, cache_dir=tmp_path / "new")
    assert (imported.written, imported.present) == (2, 0)
    assert jitwarm.import_cache_bundle(str(bundle), cache_dir=tmp_path / "new").present == 2
    # Targets as the command takes them: the same parser.
    assert len(jitwarm.list_cache(["cpu:aarch64"], cache_dir=tmp_path / "new").entries) == 2
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown target 'aarch64'"):
        jitwarm.list_cache(["aarch64"], cache_dir=tmp_path / "new")
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown target 'x86'"):
        jitwarm.export_cache_bundle(tmp_path / "x.jwb", ["x86"], cache_dir=tmp_path / "warm")
    fresh = jitwarm.Runtime(cache_dir=tmp_path / "new")
    fresh.load_plugins(reference_dir)
    result = fresh.warmup(request, target="cpu:aarch64")
    assert (result.compiled, result.cached) == (0, 2)
    assert fresh.cache_stats().disk_hits == 2


def test_given_a_truncated_bundle_then_import_raises_and_writes_nothing(tmp_path,
                                                                      reference_dir):
    warm = jitwarm.Runtime(cache_dir=tmp_path / "warm")
    warm.load_plugins(reference_dir)
    warm.warmup(jitwarm.WarmupRequest(SILU, params={"x": "float32"}), platform="cpu")
    bundle = tmp_path / "b.jwb"
    jitwarm.export_cache_bundle(bundle, cache_dir=tmp_path / "warm")
    data = bundle.read_bytes()
    bundle.write_bytes(data[: len(data) - 5])
    with pytest.raises(jitwarm.InvalidArgumentError, match="nothing was imported"):
        jitwarm.import_cache_bundle(bundle, cache_dir=tmp_path / "into")
    assert not (tmp_path / "into").exists()
    with pytest.raises(jitwarm.NotFoundError, match="does not exist"):
        jitwarm.export_cache_bundle(tmp_path / "x.jwb", cache_dir=tmp_path / "absent")


def test_given_shards_of_a_plan_then_they_are_disjoint_and_cover_it(rt):
    plan = rt.warmup_plan(jitwarm.WarmupRequest(SILU, params={"x": ["float32", "float16"],
                                                              "H": [16, 17, 1]}),
                          platform="cpu")
    parts = [jitwarm.warmup_shard(plan, i, 4) for i in range(1, 5)]
    hashes = [k.hash for part in parts for k in part]
    assert sorted(hashes) == sorted(k.hash for k in plan)
    assert len(set(hashes)) == len(plan)
    with pytest.raises(jitwarm.InvalidArgumentError, match="numbered 1"):
        jitwarm.warmup_shard(plan, 0, 4)


def test_given_a_shared_redis_then_a_second_runtime_fetches_without_compiling(
        tmp_path, reference_dir, redis_url):
    url, server = redis_url
    request = jitwarm.WarmupRequest(SILU, params={"x": "float32", "H": [16, 17, 1]})
    first = jitwarm.Runtime(cache_dir=tmp_path / "a", remote_cache=url)
    first.load_plugins(reference_dir)
    first.warmup(request, platform="cpu")
    assert first.cache_stats().remote_writes == 3
    second = jitwarm.Runtime(cache_dir=tmp_path / "b", remote_cache=url)
    second.load_plugins(reference_dir)
    result = second.warmup(request, platform="cpu")
    stats = second.cache_stats()
    assert (result.compiled, stats.remote_hits, stats.remote_misses) == (0, 3, 0)
    assert second.cache_settings.remote == url

    server.kill()
    server.wait()
    lines = []
    third = jitwarm.Runtime(no_cache_dir=True, remote_cache=url, remote_timeout=0.5,
                            log=lambda level, message: lines.append((level, message)))
    third.load_plugins(reference_dir)
    result = third.warmup(request, platform="cpu")
    assert result.failed == 0 and result.compiled == 3
    assert third.cache_stats().remote_errors > 0
    assert sum("is unavailable" in m for _, m in lines) == 1
