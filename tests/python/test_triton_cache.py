"""Triton's kernels in jitwarm's cache tiers (jitwarm.triton.CacheManager,
use_jitwarm_cache) against the stand-in Triton (fake_triton.py: Triton's
cache-manager protocol, compile() through it, the autotuner's disk cache):
files and groups round-trip through the disk cache, bundles and a Redis
tier; a corrupt entry makes Triton compile again, and so does a tampered
one under trusted keys; a warmup for a target with the GPU hidden serves a
later launch on such a GPU, its launchers and the driver's utilities
included; the options Triton keys
its in-memory cache on; autotuned kernels warmed in every config with the
autotuner's choice in the tiers; and the monitor's refusals and counters.

A "fresh process" here is what a new process starts with: a new runtime on
the tiers, a new JITFunction (an empty in-memory cache) and a new staging
directory."""
import json
import logging
import os

import pytest

import jitwarm
import jitwarm.triton as jwt

DTYPES = ["bfloat16", "float32"]


@pytest.fixture
def triton(monkeypatch, tmp_path, fake_torch):
    # Triton's GPU drivers run on torch: the stand-in torch is `torch`.
    import fake_triton
    module = fake_triton.install(monkeypatch, cache_dir=tmp_path / "triton-files")
    yield module
    jwt.stop_using_jitwarm_cache()
    jwt.uninstall_hook()
    jwt.unseal()
    jwt.reset_counters()


def fake():
    import fake_triton
    return fake_triton


def make_add(triton):
    @triton.jit
    def add_kernel(out_ptr, x_ptr, y_ptr, n, BLOCK: triton.language.constexpr):
        pass

    return add_kernel


def add_bridge(kernel):
    return jwt.TritonKernel(kernel, name="add_kernel", params={
        "out_ptr": {"kind": "tensor", "same_dtype_as": "x_ptr"},
        "y_ptr": {"kind": "tensor", "same_dtype_as": "x_ptr"}})


ADD_REQUEST = jitwarm.WarmupRequest("add_kernel", params={
    "x_ptr": {"dtype": DTYPES, "aligned": [True]}, "n": [16, 17], "BLOCK": [256]})


class DeviceTensor:
    def __init__(self, dtype, aligned=True):
        self.dtype = "torch." + dtype
        self.ptr = 0x7F00_0000_0000 if aligned else 0x7F00_0000_0002

    def data_ptr(self):
        return self.ptr


def launch_add(kernel, dtype, n, **options):
    t = [DeviceTensor(dtype) for _ in range(3)]
    kernel[(1,)](*t, n, BLOCK=256, **options)


def launch_every_add(kernel):
    for dtype in DTYPES:
        for n in (16, 17):
            launch_add(kernel, dtype, n)


def runtime_at(path):
    return jitwarm.Runtime(cache_dir=path, no_remote_cache=True)


# ---------------------------------------------------------------------------
# The protocol
# ---------------------------------------------------------------------------
def test_given_files_and_a_group_when_put_then_a_fresh_manager_finds_every_file(
        triton, tmp_path):
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    manager = jwt.CacheManager("KEYONE")
    cubin = manager.put(b"\x00binary\xff", "add_kernel.cubin")
    meta = manager.put('{"name": "add_kernel"}', "add_kernel.json", binary=False)
    manager.put_group("add_kernel.json", {"add_kernel.cubin": cubin, "add_kernel.json": meta})
    assert open(cubin, "rb").read() == b"\x00binary\xff"
    assert manager.get_file("absent.ptx") is None and not manager.has_file("absent.ptx")

    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))  # a fresh process
    again = jwt.CacheManager("KEYONE")
    assert not again.has_file("add_kernel.cubin")  # a compile's files live in its group
    group = again.get_group("add_kernel.json")
    assert sorted(group) == ["add_kernel.cubin", "add_kernel.json"]
    assert open(group["add_kernel.cubin"], "rb").read() == b"\x00binary\xff"
    assert json.load(open(group["add_kernel.json"])) == {"name": "add_kernel"}
    assert group["add_kernel.cubin"] != cubin  # this process's own staging copy
    assert jwt.CacheManager("KEYTWO").get_group("add_kernel.json") is None

    listing = jitwarm.list_cache(cache_dir=tmp_path / "jw")
    rows = {(e.kernel, e.implementation, e.target) for e in listing.entries}
    assert rows == {("add_kernel", "triton", "cuda:sm_90")}
    assert len(listing.entries) == 1  # the group and its files: one entry, one lookup
    counts = jwt.cache_counters()
    assert (counts["groups_loaded"], counts["group_misses"], counts["files_loaded"]) == (1, 1, 0)


def test_given_a_group_with_a_file_gone_then_it_is_a_miss_and_triton_compiles_again(
        triton, tmp_path):
    runtime = jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    manager = jwt.CacheManager("KEY")
    manager.put_group("k.json", {"k.cubin": "/nowhere/k.cubin"})  # never put
    assert manager.get_group("k.json") is None
    bad = jitwarm.CompileKey("k", "triton", "cuda:sm_90")
    for packed in (b"jitwarm triton group 1\n[[\"k.cubin\", 9]]\nshort",
                   b"jitwarm triton group 1\n[[\"../k\", 1]]\nx", b"not a group"):
        runtime.store_external_entry(bad, "KEY/__grp__p.json", packed, "triton-group",
                                     "__grp__p.json")
        assert manager.get_group("p.json") is None
    # An earlier version's group: a listing and an entry per file.
    runtime.store_external_entry(bad, "KEY/k.cubin", b"cubin", "triton-file", "k.cubin")
    runtime.store_external_entry(jitwarm.CompileKey("o", "triton", "cuda:sm_90"),
                                 "KEY/__grp__o.json", b'{"child_paths": ["k.cubin"]}',
                                 "triton-file", "__grp__o.json")
    assert open(manager.get_group("o.json")["k.cubin"], "rb").read() == b"cubin"
    runtime.store_external_entry(bad, "KEY/__grp__j.json", b"{not json", "triton-file",
                                 "__grp__j.json")
    assert manager.get_group("j.json") is None
    runtime.store_external_entry(bad, "KEY/__grp__l.json", b'{"child_paths": ["../x"]}',
                                 "triton-file", "__grp__l.json")
    assert manager.get_group("l.json") is None


def test_given_bad_arguments_then_the_errors_say_what_is_wrong(triton, tmp_path):
    with pytest.raises(jitwarm.InvalidArgumentError, match="give a jitwarm.Runtime"):
        jwt.use_jitwarm_cache(42)
    with pytest.raises(jitwarm.InvalidArgumentError, match="unknown Triton target 'vulkan:x'"):
        jwt.gpu_target("vulkan:x")
    runtime = runtime_at(tmp_path / "jw")
    key = jitwarm.CompileKey("k", "triton", "cuda:sm_90")
    with pytest.raises(jitwarm.InvalidArgumentError, match="needs a fingerprint"):
        runtime.store_external_entry(key, "", b"x", "triton-file")
    with pytest.raises(jitwarm.InvalidArgumentError, match="needs a format"):
        runtime.store_external_entry(key, "f", b"x", "")
    assert runtime.load_external_entry(key, "f") is None
    assert jwt.gpu_target("sm_90") == triton.backends.compiler.GPUTarget("cuda", 90, 32)
    # The shorthand as jitwarm.parse_target reads it; a platform's name for
    # another platform's GPU is no target.
    for wrong in ("cuda:gfx942", "hip:sm_90", "cpu:x86_64"):
        with pytest.raises(jitwarm.InvalidArgumentError, match="unknown Triton target"):
            jwt.gpu_target(wrong)
    assert jwt.jitwarm_target(jwt.gpu_target("hip:gfx942")) == "hip:gfx942"


def test_given_the_manager_named_in_the_environment_only_then_it_uses_the_environment_cache(
        triton, tmp_path, monkeypatch):
    monkeypatch.setenv("JITWARM_CACHE_DIR", str(tmp_path / "env-cache"))
    monkeypatch.delenv("JITWARM_NO_CACHE_DIR", raising=False)
    monkeypatch.setenv("TRITON_CACHE_MANAGER", "jitwarm.triton:CacheManager")
    kernel = make_add(triton)
    add_bridge(kernel).warmup(ADD_REQUEST)
    assert len(fake().compiles) == 4
    kinds = {e.implementation for e in jitwarm.list_cache(cache_dir=tmp_path / "env-cache").entries}
    assert kinds == {"triton"}


# ---------------------------------------------------------------------------
# Compiles through the tiers
# ---------------------------------------------------------------------------
def test_given_a_warm_disk_cache_then_a_fresh_process_loads_every_kernel_and_compiles_none(
        triton, tmp_path):
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    warmed = add_bridge(make_add(triton)).warmup(ADD_REQUEST)
    assert (warmed.compiled, warmed.loaded, warmed.cached) == (4, 0, 0)
    assert len(fake().compiles) == 4 and not (tmp_path / "triton-files").exists()

    runtime = jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    restarted = make_add(triton)
    again = add_bridge(restarted).warmup(ADD_REQUEST)
    assert (again.compiled, again.loaded) == (0, 4)
    assert len(fake().compiles) == 4 and len(fake().loads) == 4
    jwt.seal("error")
    launch_every_add(restarted)
    assert len(restarted.launches) == 4 and len(fake().compiles) == 4
    # Each group (one entry); the driver's utilities and the kernels' one
    # launcher (built by the first warmup), found by the warmup and by the
    # first launches.
    assert runtime.cache_stats().disk_hits == 4 + 2 * (1 + 4)
    assert jwt.cache_counters()["modules_built"] == 0
    assert jwt.counters()["compiles_after_seal"] == 0


def test_given_a_bundle_then_an_empty_cache_that_imports_it_serves_every_launch(
        triton, tmp_path):
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "build"))
    add_bridge(make_add(triton)).warmup(ADD_REQUEST)
    bundle = tmp_path / "sm90.jwb"
    exported = jitwarm.export_cache_bundle(bundle, ["cuda:sm_90"], cache_dir=tmp_path / "build")
    # 4 groups, the driver's utilities, one launcher
    assert exported.targets == {"cuda:sm_90": 6}
    imported = jitwarm.import_cache_bundle(bundle, cache_dir=tmp_path / "node")
    assert imported.entries == 6

    jwt.use_jitwarm_cache(runtime_at(tmp_path / "node"))
    node = make_add(triton)
    jwt.seal("error")
    launch_every_add(node)  # nothing warmed in this process: every launch loads
    assert len(fake().compiles) == 4 and len(fake().loads) == 4
    counts = jwt.counters()
    assert (counts["loads_after_seal"], counts["compiles_after_seal"]) == (4, 0)


def test_given_a_redis_tier_then_a_second_node_with_no_disk_cache_compiles_nothing(
        triton, redis_url):
    url, _ = redis_url
    jwt.use_jitwarm_cache({"no_cache_dir": True, "remote_cache": url})
    add_bridge(make_add(triton)).warmup(ADD_REQUEST)
    assert len(fake().compiles) == 4

    runtime = jwt.use_jitwarm_cache({"no_cache_dir": True, "remote_cache": url})
    result = add_bridge(make_add(triton)).warmup(ADD_REQUEST)
    assert (result.compiled, result.loaded) == (0, 4)
    assert len(fake().compiles) == 4
    # 4 groups; the driver's utilities and the 4 kernels' launcher
    assert runtime.cache_stats().remote_hits == 4 + 1 + 4
    assert (result.launchers, jwt.cache_counters()["modules_built"]) == (4, 0)


def test_given_a_corrupt_or_truncated_entry_then_triton_compiles_again_and_nothing_crashes(
        triton, tmp_path):
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    kernel = make_add(triton)
    request = jitwarm.WarmupRequest("add_kernel", params={
        "x_ptr": "float32", "n": [16, 17], "BLOCK": [256]})
    add_bridge(kernel).warmup(request)
    # The two groups' entries (not the driver's utilities and the launcher).
    files = sorted(str(p) for p in (tmp_path / "jw").rglob("*") if p.is_file()
                   and not p.name.startswith(".") and b"ELF-fake-module" not in p.read_bytes())
    assert len(files) == 2
    with open(files[0], "r+b") as f:  # one byte flipped
        f.seek(40)
        byte = f.read(1)
        f.seek(40)
        f.write(bytes([byte[0] ^ 0xFF]))
    with open(files[1], "r+b") as f:  # truncated
        f.truncate(20)

    runtime = jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    again = add_bridge(make_add(triton)).warmup(request)
    assert (again.compiled, again.loaded) == (2, 0)
    assert len(fake().compiles) == 4
    assert runtime.cache_stats().disk_rejects >= 1
    report = jitwarm.verify_cache(cache_dir=tmp_path / "jw")
    assert report.corrupt == 0  # the compile replaced both entries

    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    assert add_bridge(make_add(triton)).warmup(request).loaded == 2


def test_given_trusted_keys_then_a_tampered_triton_group_is_a_miss_and_triton_compiles_again(
        triton, tmp_path):
    from tampered_entry import tamper
    key = jitwarm.cache_keygen(tmp_path / "build.key")
    jwt.use_jitwarm_cache({"cache_dir": tmp_path / "jw", "no_remote_cache": True,
                           "signing_key": key.secret_key_file})
    request = jitwarm.WarmupRequest("add_kernel", params={
        "x_ptr": "float32", "n": [16], "BLOCK": [256]})
    add_bridge(make_add(triton)).warmup(request)
    report = jitwarm.verify_cache(cache_dir=tmp_path / "jw", trusted_keys=key.public_key)
    # The group, the driver's utilities and the launcher, each signed.
    assert report.signers == {key.key_id: 3} and report.untrusted == []
    group = [p for p in (tmp_path / "jw").rglob("*.jwc") if b"ELF-fake-module" not in p.read_bytes()]
    assert len(group) == 1
    tamper(group[0])

    # Without trust, the tampered bytes would load (the checksum is right).
    trusting = {"cache_dir": tmp_path / "jw", "no_remote_cache": True,
                "trusted_keys": [key.public_key]}
    runtime = jwt.use_jitwarm_cache(trusting)
    again = add_bridge(make_add(triton)).warmup(request)
    assert (again.compiled, again.loaded) == (1, 0)
    assert len(fake().compiles) == 2
    assert 'tier="disk",reason="bad_signature"} 1' in runtime.metrics_text()

    # Trusted keys but this runtime signs nothing: its compile is unsigned
    # and so refused next time as well; the build box's signing key makes it
    # load again.
    jwt.use_jitwarm_cache(dict(trusting, signing_key=key.secret_key_file))
    assert add_bridge(make_add(triton)).warmup(request).compiled == 1
    jwt.use_jitwarm_cache(trusting)
    assert add_bridge(make_add(triton)).warmup(request).loaded == 1


# ---------------------------------------------------------------------------
# Warmup for a target without a GPU
# ---------------------------------------------------------------------------
def test_given_the_gpu_hidden_when_warmed_for_sm_90_then_a_launch_on_such_a_gpu_loads_it(
        triton, tmp_path):
    triton.fake.hide_gpu()
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    kernel = make_add(triton)
    with pytest.raises(jitwarm.NoDeviceError, match=r"no GPU here .*target='cuda:sm_90'"):
        add_bridge(kernel).warmup(ADD_REQUEST)  # the bridge's default needs a GPU
    result = add_bridge(kernel).warmup(ADD_REQUEST, target="cuda:sm_90",
                                       options=[{}, {"num_warps": 8}])
    assert (result.compiled, len(result.keys)) == (8, 4)
    assert all(k.target == "triton:cuda:90" for k in result.keys)
    targets = {e.target for e in jitwarm.list_cache(cache_dir=tmp_path / "jw").entries}
    assert targets == {"cuda:sm_90"}
    assert kernel.compiled == []  # nothing in Triton's in-memory cache

    triton.fake.show_gpu()  # the fleet node has the GPU
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    node = make_add(triton)
    jwt.seal("error")
    launch_every_add(node)
    for dtype in DTYPES:
        launch_add(node, dtype, 16, num_warps=8)
    assert len(fake().compiles) == 8 and len(fake().loads) == 6
    assert jwt.counters()["compiles_after_seal"] == 0


# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------
def test_given_triton_defaults_spelled_out_then_a_launch_that_omits_them_hits(triton):
    kernel = make_add(triton)
    request = jitwarm.WarmupRequest("add_kernel", params={
        "x_ptr": "float32", "n": [16], "BLOCK": [256]})
    result = add_bridge(kernel).warmup(request, options={"num_warps": 4, "num_stages": 2})
    # as given, and without num_warps=4 (a default); num_stages=2 is not one.
    # The second form finds the first one's files: a load, not a compile.
    assert (result.compiled, result.loaded, result.cached) == (1, 1, 0)
    assert len(kernel.compiled) == 2 and len(fake().compiles) == 1 and len(fake().loads) == 1
    jwt.seal("error")
    launch_add(kernel, "float32", 16, num_stages=2)
    launch_add(kernel, "float32", 16, num_warps=4, num_stages=2)
    assert len(kernel.launches) == 2 and len(kernel.compiled) == 2


def test_given_several_option_sets_then_each_is_warmed(triton):
    kernel = make_add(triton)
    request = jitwarm.WarmupRequest("add_kernel", params={
        "x_ptr": "float32", "n": [16], "BLOCK": [256]})
    add_bridge(kernel).warmup(request, options=[{"num_warps": 2}, {"num_warps": 8}])
    jwt.seal("error")
    launch_add(kernel, "float32", 16, num_warps=2)
    launch_add(kernel, "float32", 16, num_warps=8)
    with pytest.raises(jitwarm.JitRefusedError):
        launch_add(kernel, "float32", 16, num_warps=16)
    with pytest.raises(jitwarm.InvalidArgumentError, match="non-empty list"):
        add_bridge(kernel).warmup(request, options=[])


# ---------------------------------------------------------------------------
# Autotuned kernels
# ---------------------------------------------------------------------------
def make_tuned(triton):
    configs = [triton.Config({"BLOCK": 128}, num_warps=4),
               triton.Config({"BLOCK": 256}, num_warps=8),
               triton.Config({"BLOCK": 512}, num_warps=8, num_stages=2)]

    @triton.autotune(configs=configs, key=["n"])
    @triton.jit
    def scale_kernel(out_ptr, x_ptr, n, BLOCK: triton.language.constexpr):
        pass

    return scale_kernel


TUNED_REQUEST = jitwarm.WarmupRequest("scale_kernel", params={
    "x_ptr": {"dtype": "float32", "aligned": True}, "n": [4096]})


def tuned_bridge(kernel):
    return jwt.TritonKernel(kernel, name="scale_kernel",
                            params={"out_ptr": {"kind": "tensor", "same_dtype_as": "x_ptr"}})


def call_tuned(kernel, n=4096):
    kernel[(1,)](DeviceTensor("float32"), DeviceTensor("float32"), n)


def test_given_an_autotuned_kernel_then_every_config_is_warmed_and_its_choice_ships(
        triton, tmp_path):
    # A tuning run on a GPU: the autotuner benchmarks once and stores its choice.
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    call_tuned(make_tuned(triton))
    assert len(fake().benchmarks) == 1 and len(fake().compiles) == 3
    assert jwt.cache_counters()["autotune_stored"] == 1

    # The build box, GPU hidden: every config for sm_90 (already in the tiers).
    triton.fake.hide_gpu()
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    warmed = tuned_bridge(make_tuned(triton)).warmup(TUNED_REQUEST, target="sm_90")
    assert (warmed.compiled, warmed.loaded, len(warmed.keys)) == (0, 3, 3)
    blocks = sorted(p.value for k in warmed.keys for p in k.params if p.name == "BLOCK")
    assert blocks == [128, 256, 512]
    bundle = tmp_path / "fleet.jwb"
    jitwarm.export_cache_bundle(bundle, ["cuda:sm_90"], cache_dir=tmp_path / "jw")

    # A fleet node: imports, seals, calls: no benchmark, no compile.
    triton.fake.show_gpu()
    jitwarm.import_cache_bundle(bundle, cache_dir=tmp_path / "node")
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "node"))
    node = make_tuned(triton)
    jwt.seal("error")
    call_tuned(node)
    assert len(fake().benchmarks) == 1 and len(fake().compiles) == 3
    (choice,) = node.cache.values()
    assert choice.kwargs == {"BLOCK": 512}  # the choice the tuning run made
    assert jwt.cache_counters()["autotune_loaded"] == 1
    assert jwt.counters()["loads_after_seal"] == 1


def test_given_an_autotuner_made_before_the_jitwarm_cache_then_its_choice_is_stored(
        triton, tmp_path):
    # A server imports its kernels first: Triton reads the autotune-cache
    # knob when @triton.autotune runs, before use_jitwarm_cache set it.
    early = make_tuned(triton)
    assert not early.cache_results
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    assert early.cache_results
    call_tuned(early)
    assert len(fake().benchmarks) == 1
    assert jwt.cache_counters()["autotune_stored"] == 1

    # Another process, its kernels imported first too: the choice is found.
    jwt.stop_using_jitwarm_cache()
    assert not early.cache_results
    again = make_tuned(triton)
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    call_tuned(again)
    assert len(fake().benchmarks) == 1
    assert jwt.cache_counters()["autotune_loaded"] == 1
    assert next(iter(again.cache.values())).kwargs == {"BLOCK": 512}


def test_given_an_autotuned_kernel_warmed_here_then_its_first_call_compiles_nothing(triton):
    kernel = make_tuned(triton)
    result = tuned_bridge(kernel).warmup(TUNED_REQUEST)
    assert result.compiled == 3 and len(kernel.fn.compiled) == 3
    jwt.seal("error")
    call_tuned(kernel)  # benchmarks every config: all warmed, nothing compiles
    assert len(fake().benchmarks) == 1 and len(kernel.fn.compiled) == 3


# ---------------------------------------------------------------------------
# The monitor
# ---------------------------------------------------------------------------
def test_given_a_refusal_then_it_names_the_kernel_each_argument_and_the_options(triton):
    kernel = make_add(triton)
    add_bridge(kernel)
    jwt.seal("error")
    with pytest.raises(jitwarm.JitRefusedError) as info:
        launch_add(kernel, "bfloat16", 17, num_warps=8)
    message = info.value.message
    assert ("add_kernel(out_ptr: *bf16 (16-byte aligned), x_ptr: *bf16 (16-byte aligned), "
            "y_ptr: *bf16 (16-byte aligned), n: i32, BLOCK: constexpr=256) with num_warps=8, "
            "num_ctas=1, num_stages=3, enable_fp_fusion=True, launch_cooperative_grid=False"
            ) in message
    assert fake().compiles == []


def test_given_the_tiers_under_triton_then_after_seal_a_load_passes_and_a_compile_is_refused(
        triton, tmp_path, caplog):
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    add_bridge(make_add(triton)).warmup(jitwarm.WarmupRequest("add_kernel", params={
        "x_ptr": "float32", "n": [16], "BLOCK": [256]}))
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    node = make_add(triton)
    jwt.seal("error")
    launch_add(node, "float32", 16)
    with pytest.raises(jitwarm.JitRefusedError, match="n: i32, BLOCK"):
        launch_add(node, "float32", 17)
    assert len(fake().compiles) == 1 and len(node.launches) == 1
    jwt.seal("warn")
    with caplog.at_level(logging.WARNING, logger="jitwarm.triton"):
        launch_add(node, "float32", 17)
    assert "add_kernel(out_ptr: *fp32 (16-byte aligned)" in caplog.text
    counts = jwt.counters()
    assert (counts["loads_after_seal"], counts["compiles_after_seal"], counts["refusals"],
            counts["warnings"]) == (1, 2, 1, 1)


def test_given_no_hook_installed_then_warmup_compiles_are_counted(triton):
    add_bridge(make_add(triton)).warmup(ADD_REQUEST)
    assert jwt.counters()["warmup_compiles"] == 4


# ---------------------------------------------------------------------------
# What a first launch needs besides the kernel: launchers, driver utilities
# ---------------------------------------------------------------------------
def build_box_bundle(triton, tmp_path, *, driver_library=True):
    """A GPU-less build box warms the add kernel for sm_90 into its cache
    and exports the target's entries; returns (bundle, warmup result)."""
    triton.fake.hide_gpu()
    triton.fake.LOADABLE = driver_library
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "build"))
    result = add_bridge(make_add(triton)).warmup(ADD_REQUEST, target="cuda:sm_90")
    bundle = tmp_path / "sm90.jwb"
    jitwarm.export_cache_bundle(bundle, ["cuda:sm_90"], cache_dir=tmp_path / "build")
    return bundle, result


def fleet_node(triton, tmp_path, bundle):
    """A fresh process on a GPU node with the bundle imported into an empty
    cache: nothing built or compiled in it yet."""
    triton.fake.show_gpu()
    triton.fake._driver.active.made = None
    triton.fake.LOADABLE = True
    del triton.fake.builds[:], triton.fake.compiles[:], triton.fake.loads[:]
    jitwarm.import_cache_bundle(bundle, cache_dir=tmp_path / "node")
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "node"))
    return make_add(triton)


def test_given_a_warmup_for_sm_90_then_a_node_from_its_bundle_builds_no_module_at_first_launch(
        triton, tmp_path, fake_torch):
    bundle, result = build_box_bundle(triton, tmp_path)
    # Two dtypes and two classes of n: one argument-type signature, one launcher.
    assert (result.compiled, result.launchers) == (4, 4)
    assert [name for name, _ in fake().builds] == ["cuda_utils", "__triton_launcher"]
    assert jwt.cache_counters()["modules_built"] == 2

    node = fleet_node(triton, tmp_path, bundle)
    jwt.seal("error")
    launch_every_add(node)
    assert fake().builds == [] and fake().compiles == [] and len(fake().loads) == 4
    assert set(fake().module_loads) == {"cuda_utils", "__triton_launcher"}
    counts = jwt.cache_counters()
    # The utilities once, the one launcher by each kernel's first launch.
    assert (counts["modules_loaded"], counts["modules_built"]) == (1 + 4, 0)
    assert (counts["groups_stored"], counts["files_stored"], counts["autotune_stored"]) == (0, 0, 0)


def test_given_a_build_box_without_the_driver_library_then_its_modules_still_ship(
        triton, tmp_path, fake_torch):
    bundle, result = build_box_bundle(triton, tmp_path, driver_library=False)
    assert result.launchers == 4
    assert [name for name, _ in fake().builds] == ["cuda_utils", "__triton_launcher"]

    launch_every_add(fleet_node(triton, tmp_path, bundle))
    assert fake().builds == [] and jwt.cache_counters()["modules_built"] == 0


def test_given_a_node_with_another_python_then_it_builds_its_own_modules_counted(
        triton, tmp_path, fake_torch, monkeypatch):
    bundle, _ = build_box_bundle(triton, tmp_path)
    node = fleet_node(triton, tmp_path, bundle)
    from jitwarm import _triton_cache
    monkeypatch.setattr(_triton_cache, "_HOST_ABI", "cpython-399-x86_64-glibc2.99")
    launch_every_add(node)
    assert [name for name, _ in fake().builds] == ["cuda_utils", "__triton_launcher"]
    counts = jwt.cache_counters()
    assert (counts["modules_built"], counts["modules_loaded"], counts["groups_loaded"]) == (2, 3, 4)
    assert fake().compiles == []  # the kernels themselves still load


def test_given_the_driver_made_during_a_lookup_then_its_utilities_are_entries_of_the_gpu(
        triton, tmp_path, fake_torch):
    """Making Triton's driver looks its utilities up through the cache
    manager; the manager's target then comes from torch, not from the driver
    being made (which would recurse and give no target)."""
    jwt.use_jitwarm_cache(runtime_at(tmp_path / "jw"))
    launch_add(make_add(triton), "float32", 16)
    targets = {(e.kernel, e.target) for e in jitwarm.list_cache(cache_dir=tmp_path / "jw").entries}
    assert ("cuda_utils", "cuda:sm_90") in targets
    assert ("__triton_launcher", "cuda:sm_90") in targets
