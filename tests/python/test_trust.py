"""Trust from Python (docs/python.md, "Trust"): keys from cache_keygen, a
Runtime's signing key, trusted keys and remote cache mode as its settings
show them; signed bundles refused by an unknown key or a wrong digest with
nothing written, imported once trusted; verify_cache's signers; a tampered
entry refused, counted by reason and recompiled with a right launch after
it (the CPU reference plugin)."""
import math
import os

import numpy as np
import pytest

import jitwarm
from tampered_entry import tamper

SILU_AND_MUL = "vllm.model_executor.layers.activation.silu_and_mul"


def launch_silu_and_mul(runtime):
    x = np.ones((1, 16), dtype=np.float32)
    out = np.zeros((1, 8), dtype=np.float32)
    runtime.kernel(SILU_AND_MUL).on(platform="cpu")(out, x, 1, 8)
    assert np.allclose(out, 1.0 / (1.0 + math.exp(-1.0)))


def runtime(cache_dir, **trust):
    rt = jitwarm.Runtime(cache_dir=cache_dir, no_remote_cache=True, **trust)
    rt.load_plugins()
    return rt


def entries(cache_dir):
    return sorted(p for p in (cache_dir / "v1").rglob("*.jwc"))


def rejected(rt, reason):
    series = ('jitwarm_cache_rejected_entries_total{tier="disk",reason="%s"} ' % reason)
    line = next(l for l in rt.metrics_text().splitlines() if l.startswith(series))
    return float(line.split()[-1])


def test_given_keygen_then_the_files_read_back_as_one_key_and_are_never_overwritten(tmp_path):
    pair = jitwarm.cache_keygen(tmp_path / "build.key")
    assert os.stat(pair.secret_key_file).st_mode & 0o777 == 0o600
    assert open(pair.public_key_file).read() == pair.public_key + "\n"
    assert len(pair.key_id) == 16
    with pytest.raises(jitwarm.AlreadyExistsError):
        jitwarm.cache_keygen(tmp_path / "build.key")
    rt = jitwarm.Runtime(cache_dir=tmp_path / "c", signing_key=pair.secret_key_file,
                         trusted_keys=[pair.public_key, pair.public_key_file],
                         remote_cache_mode="read-only")
    s = rt.cache_settings
    assert s.signing_key_id == pair.key_id
    assert s.trusted_key_ids == [pair.key_id, pair.key_id]
    assert s.remote_cache_mode == "read-only"
    with pytest.raises(jitwarm.InvalidArgumentError, match="read-write or read-only"):
        jitwarm.Runtime(remote_cache_mode="sometimes")
    with pytest.raises(jitwarm.InvalidArgumentError, match="not a jitwarm public key"):
        jitwarm.Runtime(trusted_keys="jitwarm-ed25519:AAAA")


def test_given_a_signed_bundle_then_import_refuses_an_unknown_key_and_a_wrong_digest_and_takes_a_trusted_one(
        tmp_path):
    build = jitwarm.cache_keygen(tmp_path / "build.key")
    other = jitwarm.cache_keygen(tmp_path / "other.key")
    launch_silu_and_mul(runtime(tmp_path / "build", signing_key=build.secret_key_file))
    report = jitwarm.verify_cache(cache_dir=tmp_path / "build", trusted_keys=build.public_key)
    assert report.signers == {build.key_id: 1} and report.untrusted == []

    bundle = tmp_path / "cpu.jwb"
    exported = jitwarm.export_cache_bundle(bundle, cache_dir=tmp_path / "build",
                                           signing_key=build.secret_key_file)
    assert exported.signer == build.key_id and len(exported.sha256) == 64
    node = tmp_path / "node"
    with pytest.raises(jitwarm.InvalidArgumentError, match="not trusted"):
        jitwarm.import_cache_bundle(bundle, cache_dir=node, trusted_keys=other.public_key)
    with pytest.raises(jitwarm.InvalidArgumentError, match="pinned"):
        jitwarm.import_cache_bundle(bundle, cache_dir=node, sha256="0" * 64)
    assert not node.exists() or entries(node) == []
    imported = jitwarm.import_cache_bundle(
        bundle, cache_dir=node, trusted_keys=[other.public_key, build.public_key_file],
        sha256=exported.sha256.upper())
    assert imported.written == 1 and imported.signer == build.key_id

    rt = runtime(node, trusted_keys=build.public_key)
    launch_silu_and_mul(rt)
    assert rt.cache_stats().compiles == 0


def test_given_a_tampered_signed_entry_then_a_trusting_runtime_refuses_it_recompiles_and_launches_right(
        tmp_path):
    build = jitwarm.cache_keygen(tmp_path / "build.key")
    launch_silu_and_mul(runtime(tmp_path / "c", signing_key=build.secret_key_file))
    (entry,) = entries(tmp_path / "c")
    tamper(entry)
    report = jitwarm.verify_cache(cache_dir=tmp_path / "c", trusted_keys=build.public_key)
    assert report.corrupt == 0 and len(report.untrusted) == 1

    lines = []
    rt = jitwarm.Runtime(cache_dir=tmp_path / "c", no_remote_cache=True,
                         trusted_keys=build.public_key,
                         log=lambda level, message: lines.append(message))
    rt.load_plugins()
    launch_silu_and_mul(rt)
    assert rt.cache_stats().compiles == 1
    assert rejected(rt, "bad_signature") == 1
    assert sum("tampered" in line for line in lines) == 1
