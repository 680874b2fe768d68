"""jitwarm for Python: warm run-time compiled GPU kernels at start-up, seal,
override kernels per platform, and launch with NumPy arrays or torch tensors.

    import jitwarm
    rt = jitwarm.Runtime()
    rt.load_plugins()
    rt.warmup(manifest="warm.toml")          # compile-only, into the launch cache
    rt.seal()
    with rt.monitor("error"):                # a compile after seal is refused
        rt.kernel("vllm.model_executor.layers.activation.silu_and_mul")(out, x, T, H)

docs/python.md has the whole API and a vLLM-style example.
"""
from __future__ import annotations

import contextlib
import inspect
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _vendor_libraries

# Before any plugin can load: where this Python's nvidia packages keep NVRTC.
_vendor_libraries.hand_to_core()

from ._errors import (  # noqa: E402,F401  (re-exported)
    AbiMismatchError,
    AlreadyExistsError,
    CompileError,
    Error,
    InternalError,
    InvalidArgumentError,
    IoError,
    JitRefusedError,
    LaunchError,
    NoDeviceError,
    NotFoundError,
    OutOfMemoryError,
    Status,
    UnsupportedError,
)
from . import _jitwarm  # noqa: E402
from ._jitwarm import (  # noqa: E402,F401  (re-exported)
    CacheBundleEntry,
    CacheBundleSummary,
    CacheBundleUse,
    CacheEntryInfo,
    CacheKeyPair,
    CacheListing,
    CacheReport,
    CacheSettings,
    CacheStats,
    CompileKey,
    ImplementationInfo,
    IntSpec,
    Kernel,
    KernelExplanation,
    KernelSchema,
    LoadReport,
    MissExplanation,
    TuneResult,
    TuneTiming,
    MissFactor,
    MissNeighbour,
    ParamDesc,
    ParamSpec,
    PlatformExplanation,
    PlatformInfo,
    PluginLoadRecord,
    Registration,
    WarmupKeyResult,
    WarmupResult,
    WarmupTensor,
    current_launch_stream,
    dtype_name,
    dtype_short_name,
    parse_target,
    dtype_size,
    install_location,
    cache_directory_stats,
    cache_keygen,
    clear_cache,
    export_cache_bundle,
    import_cache_bundle,
    list_cache,
    prune_cache,
    verify_cache,
    manifest_requests,
    resolve_cache_settings,
    scalar_specialization_rep,
    specialize_integer,
    warmup_shard,
)

__all__ = [
    "Runtime", "Kernel", "WarmupRequest", "WarmupTensor", "Registration",
    "CompileKey", "ParamSpec", "IntSpec", "KernelSchema", "ParamDesc", "LoadReport",
    "PluginLoadRecord", "KernelExplanation", "PlatformExplanation", "ImplementationInfo",
    "PlatformInfo", "CacheStats", "CacheSettings", "CacheBundleSummary", "CacheBundleEntry",
    "WarmupResult", "WarmupKeyResult", "MissExplanation", "MissNeighbour", "MissFactor",
    "TuneResult", "TuneTiming",
    "resolve_cache_settings", "export_cache_bundle",
    "import_cache_bundle", "warmup_shard", "CacheEntryInfo", "CacheListing", "CacheReport",
    "CacheBundleUse", "CacheKeyPair", "cache_keygen", "list_cache", "cache_directory_stats", "verify_cache", "prune_cache", "clear_cache",
    "specialize_integer", "scalar_specialization_rep", "dtype_name", "dtype_short_name", "dtype_size", "parse_target", "install_location",
    "current_launch_stream", "manifest_requests", "enumerate_warmup_keys", "warmup_inputs_for",
    "Status", "Error", "InvalidArgumentError", "NotFoundError", "AlreadyExistsError",
    "UnsupportedError", "CompileError", "LaunchError", "NoDeviceError",
    "AbiMismatchError", "OutOfMemoryError", "JitRefusedError", "IoError", "InternalError",
]

PathLike = Union[str, "os.PathLike[str]"]
Override = Union[Callable[..., Any], Tuple[str, Callable[..., Any]]]


@dataclass
class WarmupRequest:
    """What to warm for one kernel, as a manifest's [[kernel]] table says it
    (docs/warmup.md):

    - params: per parameter a value or a list of values. Integers, floats and
      bools as themselves; a Python range (start, stop, step) for integers;
      a tensor as a dtype ("bfloat16", a NumPy or a torch dtype), a
      WarmupTensor, or a table {"dtype": ..., "aligned": ..., "strides": ...}
      whose fields may be lists (their product is taken).
    - zip: groups of parameters that vary in lockstep (lists of equal length).
    - exclude: tables; a combination matching every entry of one is skipped.
    - filter: a callable that gets each combination as {name: value} and
      returns False to skip it (it sees the first value of each class).
    - platform: the platform to warm for (the warmup's own wins).
    """

    kernel: str
    params: Dict[str, Any] = field(default_factory=dict)
    zip: List[Dict[str, Sequence[Any]]] = field(default_factory=list)
    exclude: List[Dict[str, Any]] = field(default_factory=list)
    filter: Optional[Callable[[Dict[str, Any]], bool]] = None
    platform: Optional[str] = None


def enumerate_warmup_keys(schema: KernelSchema, request: WarmupRequest, target: str,
                          impl_name: str = "python") -> List[CompileKey]:
    """The keys a request produces for a schema and a target, in order, without
    duplicates (no runtime needed: for schemas of other systems, e.g. Triton)."""
    return _jitwarm._enumerate_warmup_keys(schema, request, target, impl_name)


def warmup_inputs_for(schema: KernelSchema, key: CompileKey) -> List[Any]:
    """Storage-free arguments (WarmupTensors and representative scalars), in
    schema order, that reproduce `key`; raises naming both keys if they do not."""
    return _jitwarm._warmup_inputs_for(schema, key)


def _override_parameter_names(fn: Callable[..., Any], schema: KernelSchema) -> List[str]:
    """How an override takes its arguments (docs/architecture.md, "Registry
    and overrides"; docs/python.md, "Overrides"): by name when its parameter
    names are the schema's (or it takes **kwargs), by position otherwise. The
    names go to the core, which refuses unexpected or missing ones with the
    schema's list."""
    schema_names = [p.name for p in schema.params]
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature
        return []
    named = [p.name for p in signature.parameters.values()
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           inspect.Parameter.KEYWORD_ONLY)]
    kinds = {p.kind for p in signature.parameters.values()}
    if inspect.Parameter.VAR_KEYWORD in kinds and set(named) <= set(schema_names):
        return schema_names
    if not named:
        return []
    if not set(named) & set(schema_names) and len(named) == len(schema_names):
        return []  # none of its names is the schema's: by position
    return named


def _origin_of(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None) or repr(fn)
    try:
        file = inspect.getsourcefile(fn)
        line = inspect.getsourcelines(fn)[1]
        return f"{name} ({file}:{line})"
    except (TypeError, OSError):
        return name


class Runtime(_jitwarm.Runtime):
    """A jitwarm runtime: plugins, kernels, warmup, the JIT monitor.

    cache_dir: the persistent compile cache (default: JITWARM_CACHE_DIR, else
    the per-user cache, $XDG_CACHE_HOME/jitwarm or ~/.cache/jitwarm);
    no_cache_dir=True: none (memory, and the remote cache if any);
    system_cache_dir, cache_max_bytes: the read-only layer and the budget
    (default: JITWARM_SYSTEM_CACHE_DIR, JITWARM_CACHE_MAX_BYTES);
    remote_cache: a shared Redis, 'redis://host:port/db' (default:
    JITWARM_REMOTE_CACHE), no_remote_cache=True: none; remote_timeout: the
    bound on each wait for it, in seconds (default 1). `cache_settings` says
    what was resolved, exactly as jitwarm.resolve_cache_settings does.
    jit_monitor: 'off', 'warn' or 'error' after seal (default:
    JITWARM_JIT_MONITOR, else 'off'). jit_record_path: append each key
    compiled after seal to this manifest (default: JITWARM_JIT_RECORD).
    log: a callable (level, message) for the core's log lines (default:
    stderr, filtered by JITWARM_LOG_LEVEL); it may be called from any thread.
    Trust (docs/python.md, 'Trust'): signing_key, a secret key file that
    signs every entry written (default: JITWARM_SIGNING_KEY); trusted_keys,
    a public key (its text or a file) or a list of them, with which only
    entries they signed load (default: JITWARM_TRUSTED_KEYS);
    remote_cache_mode, 'read-write' or 'read-only' (default:
    JITWARM_REMOTE_CACHE_MODE, else 'read-write').
    """

    def __init__(self, *, cache_dir: Optional[PathLike] = None, jit_monitor: Optional[str] = None,
                 jit_record_path: Optional[PathLike] = None,
                 log: Optional[Callable[[str, str], None]] = None,
                 no_cache_dir: Optional[bool] = None,
                 system_cache_dir: Optional[PathLike] = None,
                 cache_max_bytes: Optional[int] = None, remote_cache: Optional[str] = None,
                 no_remote_cache: Optional[bool] = None,
                 remote_timeout: Optional[float] = None,
                 signing_key: Optional[PathLike] = None,
                 trusted_keys: Union[PathLike, Sequence[PathLike], None] = None,
                 remote_cache_mode: Optional[str] = None) -> None:
        super().__init__(cache_dir=cache_dir, jit_monitor=jit_monitor,
                         jit_record_path=jit_record_path, log=log, no_cache_dir=no_cache_dir,
                         system_cache_dir=system_cache_dir, cache_max_bytes=cache_max_bytes,
                         remote_cache=remote_cache, no_remote_cache=no_remote_cache,
                         remote_timeout=remote_timeout, signing_key=signing_key,
                         trusted_keys=trusted_keys, remote_cache_mode=remote_cache_mode)
        self._kernels: Dict[str, Kernel] = {}
        self._record_path: Optional[str] = (
            os.fspath(jit_record_path) if jit_record_path is not None
            else os.environ.get("JITWARM_JIT_RECORD") or None)

    def kernel(self, name: str) -> Kernel:
        """The kernel's handle (one per name, kept): call it to launch. `name` is
        the full name or a short one that one kernel has ("rms_norm"), as the
        `jitwarm` command takes it. It resolves the implementation at every
        launch, so overrides apply at once."""
        kernel = self._kernels.get(name)
        if kernel is None:
            kernel = self._kernels[name] = self._kernel(name)
        return kernel

    def warmup(self, requests: Union[WarmupRequest, Sequence[WarmupRequest], None] = None, *,
               manifest: Optional[PathLike] = None, toml: Optional[str] = None,
               platform: Optional[str] = None, target: Optional[str] = None,
               device_kind: Optional[str] = None, jobs: int = 1,
               parallel: str = "processes", batch_size: Optional[int] = None,
               progress: Optional[Callable[[int, int, str], None]] = None,
               quiet: bool = False, check: bool = True) -> WarmupResult:
        """Compile-only warmup into the cache the launch path reads, from
        requests, a manifest file or TOML text (exactly one; a manifest may
        be the name of one installed with jitwarm, "kernel-set").
        platform/target: what to warm for (default: the requests', else the
        default platform; a target such as 'cuda:sm_90', or the shorthand
        'sm_90' / 'gfx942', warms without the device). device_kind: warm the
        tuning winners stored for that kind of device, e.g. "NVIDIA H200"
        (default: the device's when no target is given; docs/tuning.md).
        jobs: compiles at once, in worker processes forked from this one
        (parallel="processes", as `jitwarm warmup`: NVRTC and hiprtc scale
        better so) or in threads (parallel="threads": while other threads
        use the runtime). batch_size: keys of one kernel and target compiled
        together (1: one by one; None: what each plugin prefers for the
        target, else 8). progress: called (done, total, key_text) after each
        key; None: a progress bar on stderr when it is a terminal, as the
        command shows, unless quiet=True. check: raise CompileError (with
        .result) when a key failed."""
        result = self._warmup(requests, manifest, toml, platform, target, device_kind, jobs,
                              parallel, batch_size, _progress_or_bar(progress, quiet))
        _check_warmup(result, check)
        return result

    def warmup_keys(self, keys: Sequence[CompileKey], *, device_kind: Optional[str] = None,
                    jobs: int = 1, parallel: str = "processes",
                    batch_size: Optional[int] = None,
                    progress: Optional[Callable[[int, int, str], None]] = None,
                    quiet: bool = False, check: bool = True) -> WarmupResult:
        """Compile-only warmup of exact keys (from Kernel.key_for or a plan);
        a key of a tunable kernel is warmed in the winner stored for
        device_kind, if given; jobs, parallel, batch_size, progress and
        quiet as for warmup()."""
        result = self._warmup_keys(list(keys), device_kind, jobs, parallel, batch_size,
                                   _progress_or_bar(progress, quiet))
        _check_warmup(result, check)
        return result

    @property
    def jit_record_path(self) -> Optional[str]:
        """The manifest each key compiled after seal is appended to, or None."""
        return self._record_path

    @jit_record_path.setter
    def jit_record_path(self, path: Optional[PathLike]) -> None:
        self._set_jit_record_path(path)
        self._record_path = os.fspath(path) if path is not None else None

    @contextlib.contextmanager
    def monitor(self, mode: str, *, record: Optional[PathLike] = None) -> Iterator["Runtime"]:
        """Within the block, the JIT monitor is `mode` ('off', 'warn',
        'error') and, with `record`, keys compiled after seal are appended to
        that manifest; both are restored on exit."""
        previous_mode, previous_record = self.jit_monitor, self._record_path
        self.jit_monitor = mode
        try:
            if record is not None:
                self.jit_record_path = record
            yield self
        finally:
            self.jit_monitor = previous_mode
            if record is not None:
                self.jit_record_path = previous_record

    def register_kernels(self, overrides: Mapping[str, Override], *,
                         origin: Optional[str] = None) -> Registration:
        """Override kernels from Python: {name: callable} (on the default
        platform) or {name: (platform, callable)}. All or nothing. The
        callable runs when the kernel is launched on that platform, with the
        launch's own arguments (the tensors as passed), by name when its
        parameter names are the schema's, else by position. The returned
        Registration (also a context manager) removes every override and
        restores what each replaced."""
        entries = []
        for name, override in overrides.items():
            if isinstance(override, tuple):
                if len(override) != 2:
                    raise InvalidArgumentError(
                        f"register_kernels: the override of {name} must be a callable or "
                        f"(platform, callable), got a tuple of {len(override)}",
                        Status.INVALID_ARGUMENT)
                platform, fn = override
            else:
                platform, fn = self.default_platform(), override
            names = _override_parameter_names(fn, self.schema(name)) if callable(fn) else []
            impl_name = "python:" + getattr(fn, "__qualname__", type(fn).__name__)
            entries.append((name, platform, fn, names, impl_name))
        return _jitwarm._make_registration(
            self, entries, origin or ", ".join(_origin_of(e[2]) for e in entries))


class _ProgressBar:
    """The bar `jitwarm warmup` draws on a terminal (tools/cmd_warmup.cpp):
    keys done of all, keys per second, time left and the key, redrawn in
    place on `stream`; a newline when the last key is in. Drawn here, not by
    the command's C++ bar, so it goes where Python's sys.stderr goes (a
    replaced or captured stream), which file descriptor 2 need not be."""

    WIDTH = 30

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._start = time.monotonic()

    def __call__(self, done: int, total: int, key: str) -> None:
        seconds = time.monotonic() - self._start
        rate = done / seconds if seconds > 0 else 0.0
        left = f"{(total - done) / rate:.0f}s left" if rate > 0 and done < total else "done"
        filled = self.WIDTH * done // total
        self._stream.write(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total} "
                           f"keys {rate:5.1f}/s {left:<10} {key[:50]:<50}")
        if done == total:
            self._stream.write("\n")
        self._stream.flush()


def _progress_or_bar(progress: Optional[Callable[[int, int, str], None]],
                     quiet: bool) -> Optional[Callable[[int, int, str], None]]:
    """The caller's progress callback; without one, a bar on stderr when it
    is a terminal and quiet is not asked for (docs/python.md)."""
    if progress is not None or quiet:
        return progress
    isatty = getattr(sys.stderr, "isatty", None)
    if sys.stderr is None or isatty is None or not isatty():
        return None
    return _ProgressBar(sys.stderr)


def _check_warmup(result: WarmupResult, check: bool) -> None:
    if not check or result.failed == 0:
        return
    first = next(k for k in result.keys if k.failed)
    error = CompileError(
        f"warmup: {result.failed} of {len(result.keys)} keys failed; the first, "
        f"{first.key_text}: {first.error}", Status.COMPILE_FAILED)
    error.result = result
    raise error
