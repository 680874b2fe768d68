"""jitwarm's cache tiers as Triton's cache: a cache manager (Triton's
documented hook, `triton.knobs.cache.manager_class` or TRITON_CACHE_MANAGER)
that keeps every file Triton writes (a compile's IR, binary and metadata,
the group that ties them, the launcher a driver builds, the autotuner's
timings) as an external entry of a jitwarm runtime, so the disk cache, the
system layer, the Redis tier and bundles carry Triton's kernels beside
jitwarm's own, checked the same way.

An entry per compile (a group: every file Triton puts for one compile, then
ties with put_group) and per file Triton stores alone (a launcher, the
driver's utilities, the autotuner's timings):
  key          CompileKey(<the file's stem>, "triton", <target>), where the
               target is jitwarm's name for the GPU Triton compiles for
               ("cuda:sm_90", "hip:gfx942": `jitwarm cache export --target
               sm_90` ships both), from the bridge's target warmup or the
               current device, else "triton" (no device, no target given);
  fingerprint  "<Triton's cache key>/<file name>" (Triton's key already
               holds its version, the source, the options and the target;
               a native module's also names the Python ABI and C library);
  format       "triton-group" (the group's files in one entry: a lookup per
               compile, not one per file) or "triton-file"; entry point the
               group's or the file's name. Groups of earlier versions (a
               "triton-file" listing and an entry per file) still load.

Triton reads files by path, so each file found is written (atomically) into
a staging directory of this process, removed when it exits. A group with a
file missing, malformed or rejected is a miss, and Triton compiles the
kernel again.
"""
from __future__ import annotations

import atexit
import contextlib
import contextvars
import json
import logging
import os
import shutil
import sys
import sysconfig
import tempfile
import threading
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from . import CompileKey, InvalidArgumentError, Runtime, Status, parse_target

__all__ = ["CacheManager", "use_jitwarm_cache", "stop_using_jitwarm_cache", "cache_counters",
           "jitwarm_target", "gpu_target", "warmup_target"]

_log = logging.getLogger("jitwarm.triton")

FORMAT = "triton-file"
GROUP_FORMAT = "triton-group"
# A group entry: this line, a JSON list of [file name, size], a newline, then
# the files' bytes in that order.
_GROUP_MAGIC = b"jitwarm triton group 1\n"
IMPL = "triton"
_GROUP_PREFIX = "__grp__"
_AUTOTUNE_SUFFIX = ".autotune.json"


def _triton():
    import triton  # noqa: WPS433  (Triton is a run-time dependency only)
    return triton


# ---------------------------------------------------------------------------
# Targets: jitwarm's names for Triton's GPUTarget
# ---------------------------------------------------------------------------
def jitwarm_target(target: Any) -> str:
    """jitwarm's name for a Triton GPUTarget: cuda 90 -> "cuda:sm_90",
    hip gfx942 -> "hip:gfx942"."""
    if target.backend == "cuda":
        return f"cuda:sm_{target.arch}"
    return f"{target.backend}:{target.arch}"


def gpu_target(target: str) -> Any:
    """Triton's GPUTarget for a jitwarm target ("cuda:sm_90" or "sm_90",
    "hip:gfx942" or "gfx942")."""
    from triton.backends.compiler import GPUTarget  # noqa: WPS433
    try:
        platform, name = parse_target(target).split(":", 1)
    except InvalidArgumentError:
        platform, name = "", target
    if platform == "cuda" and name.startswith("sm_") and name[3:].isdigit():
        return GPUTarget("cuda", int(name[3:]), 32)
    if platform == "hip" and name.startswith("gfx") and len(name) > 3:
        return GPUTarget("hip", name, 64)
    raise InvalidArgumentError(
        f"unknown Triton target '{target}': give cuda:sm_NN (or sm_NN) or hip:gfxNNN "
        "(or gfxNNN)", Status.INVALID_ARGUMENT)


_warmup_target: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar(
    "jitwarm_triton_warmup_target", default=None)


@contextlib.contextmanager
def warmup_target(target: str) -> Iterator[None]:
    """Within the block, Triton's files are entries of this target (a
    compile-only warmup for a GPU this process does not drive)."""
    token = _warmup_target.set(target)
    try:
        yield
    finally:
        _warmup_target.reset(token)


def _entry_target() -> str:
    given = _warmup_target.get()
    if given is not None:
        return given
    return _device_target()


# Device index -> its target, for this process (a device's target never changes).
_device_targets: Dict[int, str] = {}
_resolving = threading.local()


def _device_target() -> str:
    """The target of this process's current GPU. torch answers where it is
    loaded: Triton's own answer (driver.active) first creates Triton's
    driver, whose creation looks up its utility module through this cache
    manager, so asking it from inside that lookup would recurse; the utility
    module would then be an entry of no target, which no bundle of the
    GPU's target carries."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            device = torch.cuda.current_device()
            target = _device_targets.get(device)
            if target is None:
                if getattr(torch.version, "hip", None):
                    arch = torch.cuda.get_device_properties(device).gcnArchName.split(":")[0]
                    target = f"hip:{arch}"
                else:
                    major, minor = torch.cuda.get_device_capability(device)
                    target = f"cuda:sm_{major}{minor}"
                _device_targets[device] = target
            return target
        except Exception:  # noqa: BLE001  (no usable device through torch: ask Triton)
            pass
    if getattr(_resolving, "active", False):
        return "triton"
    _resolving.active = True
    try:
        return jitwarm_target(_triton().runtime.driver.active.get_current_target())
    except Exception:  # noqa: BLE001  (no device, no driver: entries of no GPU)
        return "triton"
    finally:
        _resolving.active = False


# ---------------------------------------------------------------------------
# The store: a runtime, the staging directory and the counters
# ---------------------------------------------------------------------------
_COUNTERS = ("groups_loaded", "groups_stored", "group_misses", "files_loaded", "files_stored",
             "file_misses", "autotune_loaded", "autotune_stored", "modules_loaded",
             "modules_built")


class _Store:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.staging = tempfile.mkdtemp(prefix="jitwarm-triton-")
        atexit.register(shutil.rmtree, self.staging, True)
        self.lock = threading.Lock()
        self.counts = dict.fromkeys(_COUNTERS, 0)
        # Staged files and made directories of this process: a file found in
        # the tiers is written where Triton reads it once, whatever asks again.
        self.staged: set = set()
        self.directories: set = set()
        # Triton's drivers made for this cache (jitwarm.triton's warmup for a
        # target builds their utilities and launchers into it), per backend.
        self.drivers: Dict[str, Any] = {}

    def count(self, name: str) -> None:
        with self.lock:
            self.counts[name] += 1

    def directory(self, key: str) -> str:
        directory = os.path.join(self.staging, key)
        if directory not in self.directories:
            os.makedirs(directory, exist_ok=True)
            self.directories.add(directory)
        return directory

    def close(self) -> None:
        shutil.rmtree(self.staging, True)


_store: Optional[_Store] = None
_store_lock = threading.Lock()

# Told of each group lookup, hit or miss, with the group's file name: the
# monitor (jitwarm.triton) refuses or counts a compile after seal where the
# lookup misses, since a group found is a load, not a compile.
group_observer: Optional[Callable[[str, bool], None]] = None


def active_store() -> _Store:
    """The store use_jitwarm_cache set, or else (Triton named the manager
    through TRITON_CACHE_MANAGER alone) one on a runtime of the environment's
    cache settings (JITWARM_CACHE_DIR, JITWARM_REMOTE_CACHE, ...)."""
    global _store
    with _store_lock:
        if _store is None:
            _store = _Store(Runtime())
        return _store


def _manager_slot():
    """(object, attribute) where Triton reads its cache manager class, or
    None for a Triton that only reads TRITON_CACHE_MANAGER."""
    cache = getattr(getattr(_triton(), "knobs", None), "cache", None)
    if cache is not None and hasattr(cache, "manager_class"):
        return cache
    return None


_ENV_NAME = "jitwarm.triton:CacheManager"


def use_jitwarm_cache(runtime_or_settings: Any = None, *, autotune: bool = True) -> Runtime:
    """From now on Triton keeps its cache in a jitwarm runtime's tiers.

    runtime_or_settings: a jitwarm.Runtime, or a dict of Runtime's keyword
    settings (cache_dir=, remote_cache=, ...), or None for the environment's
    (JITWARM_CACHE_DIR, JITWARM_REMOTE_CACHE, ...). autotune: also keep the
    autotuner's timings there (Triton's autotune cache, TRITON_CACHE_AUTOTUNING),
    so a node with the entries neither benchmarks nor compiles. Returns the
    runtime."""
    global _store
    if isinstance(runtime_or_settings, Runtime):
        runtime = runtime_or_settings
    elif runtime_or_settings is None:
        runtime = Runtime()
    elif isinstance(runtime_or_settings, dict):
        runtime = Runtime(**runtime_or_settings)
    else:
        raise InvalidArgumentError(
            "use_jitwarm_cache: give a jitwarm.Runtime, a dict of its settings "
            f"(cache_dir=..., remote_cache=...) or nothing, not {type(runtime_or_settings).__name__}",
            Status.INVALID_ARGUMENT)
    with _store_lock:
        if _store is not None:
            _store.close()
        _store = _Store(runtime)
    slot = _manager_slot()
    if slot is not None:
        slot.manager_class = CacheManager
    os.environ["TRITON_CACHE_MANAGER"] = _ENV_NAME
    if autotune:
        autotuning = getattr(getattr(_triton(), "knobs", None), "autotuning", None)
        if autotuning is not None:
            autotuning.cache = True
        os.environ["TRITON_CACHE_AUTOTUNING"] = "1"
    _autotuners_cache_results(autotune)
    return runtime


# Triton reads TRITON_CACHE_AUTOTUNING (knobs.autotuning.cache) once, when
# @triton.autotune builds its Autotuner, into the instance's cache_results. A
# kernel module imported before use_jitwarm_cache (the usual order in a
# server) would then benchmark on every node. While jitwarm keeps the
# autotune cache, a property on the class answers for every Autotuner, made
# before or after; an instance's own value (cache_results=True) still holds,
# and interpreter mode never caches, as in Triton.
_autotune_cache_on = False


def _instance_cache_results(tuner: Any) -> bool:
    if tuner.__dict__.get("cache_results"):
        return True
    if not _autotune_cache_on:
        return False
    runtime_knobs = getattr(getattr(_triton(), "knobs", None), "runtime", None)
    return not getattr(runtime_knobs, "interpret", False)


def _set_instance_cache_results(tuner: Any, value: bool) -> None:
    tuner.__dict__["cache_results"] = value


_CACHE_RESULTS = property(_instance_cache_results, _set_instance_cache_results)


def _autotuners_cache_results(on: bool) -> None:
    global _autotune_cache_on
    _autotune_cache_on = on
    try:
        import importlib  # noqa: WPS433
        autotuner = importlib.import_module("triton.runtime.autotuner").Autotuner
    except (ImportError, AttributeError):
        return
    installed = autotuner.__dict__.get("cache_results") is _CACHE_RESULTS
    if on and not installed:
        autotuner.cache_results = _CACHE_RESULTS
    elif not on and installed:
        del autotuner.cache_results


def stop_using_jitwarm_cache() -> None:
    """Triton's own file cache again (the manager and autotune cache as they
    are by default)."""
    global _store
    slot = _manager_slot()
    if slot is not None and slot.manager_class is CacheManager:
        slot.manager_class = None
    if os.environ.get("TRITON_CACHE_MANAGER") == _ENV_NAME:
        del os.environ["TRITON_CACHE_MANAGER"]
    autotuning = getattr(getattr(_triton(), "knobs", None), "autotuning", None)
    if autotuning is not None and getattr(autotuning, "cache", False):
        autotuning.cache = False
    os.environ.pop("TRITON_CACHE_AUTOTUNING", None)
    _autotuners_cache_results(False)
    with _store_lock:
        if _store is not None:
            _store.close()
        _store = None


def in_use() -> bool:
    """Whether Triton's cache manager is this one."""
    slot = _manager_slot()
    if slot is not None and slot.manager_class is not None:
        return slot.manager_class is CacheManager
    return os.environ.get("TRITON_CACHE_MANAGER") == _ENV_NAME


def cache_counters() -> Dict[str, int]:
    """What Triton asked of jitwarm's tiers in this process: groups (compiled
    kernels) loaded, stored (compiled here) and missed, single files loaded,
    stored and missed, autotune timings loaded and stored (a store is a
    benchmark run here), and native modules (launchers, the driver's
    utilities) loaded and built here with the C compiler."""
    store = _store
    if store is None:
        return dict.fromkeys(_COUNTERS, 0)
    with store.lock:
        return dict(store.counts)


# Where this Python's native modules are named and built for (Triton names a
# module <name><EXT_SUFFIX>, e.g. __triton_launcher.cpython-312-x86_64-linux-gnu.so).
_MODULE_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _host_abi() -> str:
    import platform  # noqa: WPS433
    libc, version = platform.libc_ver()
    return f"{sys.implementation.cache_tag}-{platform.machine()}-{libc or 'libc'}{version}"


_HOST_ABI = _host_abi()


def _is_native_module(filename: str) -> bool:
    return filename.endswith((_MODULE_SUFFIX, ".so"))


def _kind_of(filename: str) -> str:
    """What a file is, for the counters: a group listing, the autotuner's
    timings, a native module (a launcher, the driver's utilities) or a
    compile's file."""
    if filename.startswith(_GROUP_PREFIX):
        return "group"
    if filename.endswith(_AUTOTUNE_SUFFIX):
        return "autotune"
    if _is_native_module(filename):
        return "modules"
    return "files"


def _kernel_of(filename: str) -> str:
    """The kernel a file belongs to: its name up to the first dot, without
    the group prefix ("add_kernel.cubin", "__grp__add_kernel.json" ->
    "add_kernel")."""
    name = filename[len(_GROUP_PREFIX):] if filename.startswith(_GROUP_PREFIX) else filename
    return name.split(".", 1)[0] or name


# ---------------------------------------------------------------------------
# Triton's CacheManager protocol
# ---------------------------------------------------------------------------
class CacheManager:
    """Triton's cache-manager protocol (get_file, put, get_group, put_group,
    has_file) on a jitwarm runtime's tiers. Dumps and overrides
    (TRITON_KERNEL_DUMP, TRITON_KERNEL_OVERRIDE) stay in Triton's own
    directories: they are for people, not for fleets."""

    def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
        self.key = key
        self._files = None
        # A compile's files, put before the group that ties them (put_group).
        self._pending: Dict[str, bytes] = {}
        if override or dump:
            from triton.runtime.cache import FileCacheManager  # noqa: WPS433
            self._files = FileCacheManager(key, override=override, dump=dump)
            self._store = None
        else:
            self._store = active_store()

    # --- one file -----------------------------------------------------------
    def _entry_key(self, filename: str) -> CompileKey:
        return CompileKey(_kernel_of(filename), IMPL, _entry_target())

    def _fingerprint(self, filename: str) -> str:
        if _is_native_module(filename):
            # Triton keys a launcher by its C source alone; the module also
            # depends on the Python it was built for (its file name says so)
            # and on the C library it links: a node with another one builds
            # its own (counted) instead of loading a module it cannot run.
            return f"{self.key}/{filename}/{_HOST_ABI}"
        return f"{self.key}/{filename}"

    def _load(self, filename: str, formats: Tuple[str, ...] = (FORMAT,)) -> Optional[bytes]:
        found = self._load_entry(filename, formats)
        return None if found is None else found[0]

    def _load_entry(self, filename: str,
                    formats: Tuple[str, ...]) -> Optional[Tuple[bytes, str]]:
        found = self._store.runtime.load_external_entry(self._entry_key(filename),
                                                        self._fingerprint(filename))
        if found is None:
            return None
        data, file_format, entry_point = found
        if file_format not in formats or entry_point != filename:
            _log.warning("jitwarm cache: entry for Triton file %s holds %s '%s'; ignored",
                         filename, file_format, entry_point)
            return None
        return data, file_format

    def _materialize(self, filename: str, data: bytes, *, found: bool = True) -> str:
        """The file where Triton reads it, in this process's staging
        directory. A file found in the tiers is written once per process (its
        entry was checked when it was loaded, and an entry's bytes are fixed
        by its key); one Triton puts is written every time."""
        path = os.path.join(self._store.directory(self.key), filename)
        if found and path in self._store.staged:
            return path
        # The directory is this process's own: a name per thread is unique.
        temporary = f"{path}.{threading.get_ident()}.tmp"
        try:
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(handle, view):]
            finally:
                os.close(handle)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        self._store.staged.add(path)
        return path

    def has_file(self, filename: str) -> bool:
        if self._files is not None:
            return self._files.has_file(filename)
        return filename in self._pending or self._load(filename) is not None

    def get_file(self, filename: str) -> Optional[str]:
        if self._files is not None:
            return self._files.get_file(filename)
        if filename in self._pending:
            return self._materialize(filename, self._pending[filename])
        data = self._load(filename)
        if data is None:
            self._store.count("file_misses")
            return None
        self._store.count(_kind_of(filename) + "_loaded")
        return self._materialize(filename, data)

    def put(self, data: Any, filename: str, binary: bool = True) -> str:
        if self._files is not None:
            return self._files.put(data, filename, binary=binary)
        if not isinstance(data, bytes):
            data = str(data).encode("utf-8")
        kind = _kind_of(filename)
        if kind == "files":
            # A compile's file: stored with its group (put_group), which Triton
            # puts right after its files, through this same manager.
            self._pending[filename] = data
        else:
            self._store.runtime.store_external_entry(self._entry_key(filename),
                                                     self._fingerprint(filename), data, FORMAT,
                                                     filename)
        if kind != "group":
            self._store.count({"autotune": "autotune_stored", "modules": "modules_built",
                               "files": "files_stored"}[kind])
        return self._materialize(filename, data, found=False)

    # --- a group: a compile's files ----------------------------------------
    def get_group(self, filename: str) -> Optional[Dict[str, str]]:
        if self._files is not None:
            return self._files.get_group(filename)
        group = self._load_group(filename)
        if group is None:
            self._store.count("group_misses")
        else:
            self._store.count("groups_loaded")
        if group_observer is not None:
            group_observer(filename, group is not None)
        return group

    def _load_group(self, filename: str) -> Optional[Dict[str, str]]:
        found = self._load_entry(_GROUP_PREFIX + filename, (GROUP_FORMAT, FORMAT))
        if found is None:
            return None
        data, file_format = found
        files = (_unpack_group(data) if file_format == GROUP_FORMAT
                 else self._load_listed_files(data))
        if files is None:
            _log.warning("jitwarm cache: Triton group %s of %s is malformed or incomplete; "
                         "Triton compiles it again", filename, self.key)
            return None
        return {name: self._materialize(name, content) for name, content in files.items()}

    def _load_listed_files(self, listing: bytes) -> Optional[Dict[str, bytes]]:
        """An earlier version's group: a listing, and an entry per file. A
        compile is its files together: one missing is a miss."""
        try:
            names = list(json.loads(listing.decode("utf-8"))["child_paths"])
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return None
        files = {}
        for name in names:
            data = self._load(name) if _is_file_name(name) else None
            if data is None:
                return None
            files[name] = data
        return files

    def put_group(self, filename: str, group: Dict[str, str]) -> str:
        if self._files is not None:
            return self._files.put_group(filename, group)
        files = {}
        for name, path in group.items():
            data = self._pending.pop(name, None)
            if data is None:  # put through another manager: read where it is
                try:
                    with open(path, "rb") as handle:
                        data = handle.read()
                except OSError as error:
                    _log.warning("jitwarm cache: Triton group %s of %s names %s, which cannot "
                                 "be read (%s); the group is not stored", filename, self.key,
                                 name, error)
                    return os.path.join(self._store.directory(self.key),
                                        _GROUP_PREFIX + filename)
            files[name] = data
        name = _GROUP_PREFIX + filename
        packed = _pack_group(files)
        self._store.runtime.store_external_entry(self._entry_key(name), self._fingerprint(name),
                                                 packed, GROUP_FORMAT, name)
        self._store.count("groups_stored")
        return self._materialize(name, packed, found=False)


def _is_file_name(name: Any) -> bool:
    return isinstance(name, str) and os.sep not in name and name not in ("", ".", "..")


def _pack_group(files: Dict[str, bytes]) -> bytes:
    sizes = json.dumps([[name, len(data)] for name, data in files.items()])
    return b"".join([_GROUP_MAGIC, sizes.encode("utf-8"), b"\n", *files.values()])


def _unpack_group(packed: bytes) -> Optional[Dict[str, bytes]]:
    """A group entry's files, or None when it is not one (a wrong header, a
    bad file name, sizes that do not add up to its length)."""
    if not packed.startswith(_GROUP_MAGIC):
        return None
    end = packed.find(b"\n", len(_GROUP_MAGIC))
    try:
        sizes = json.loads(packed[len(_GROUP_MAGIC):end].decode("utf-8")) if end > 0 else None
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(sizes, list):
        return None
    files, offset = {}, end + 1
    for item in sizes:
        if (not isinstance(item, list) or len(item) != 2 or not _is_file_name(item[0])
                or not isinstance(item[1], int) or item[1] < 0 or item[0] in files):
            return None
        files[item[0]] = packed[offset:offset + item[1]]
        offset += item[1]
    return files if offset == len(packed) else None
