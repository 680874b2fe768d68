"""The Triton bridge: warm a @triton.jit kernel's specializations from the
same warmup requests and manifests as jitwarm's own kernels, check that each
warmup input gives the specialization Triton itself derives, and watch for
Triton compiles after seal with jitwarm's off / warn / error monitor.

    import jitwarm.triton as jwt

    bridge = jwt.TritonKernel(silu_and_mul, name="silu_and_mul",
                              params={"out_ptr": {"kind": "tensor", "same_dtype_as": "x_ptr"}})
    bridge.warmup(manifest="silu.toml", grid=(1,), options={"num_warps": 4})
    jwt.seal("error")            # a Triton compile on a launch now raises JitRefusedError

jitwarm enumerates the keys with its specialization rules (the same as
Triton's: i32/i64/u64, the value 1 as a constant, "divisible by 16" for
integers and 16-byte aligned pointers, do_not_specialize and
do_not_specialize_on_alignment, constexprs by value); Triton's own
`kernel.warmup` compiles each into Triton's cache, without a launch. The
compile hook is Triton's `knobs.runtime.jit_cache_hook` (Triton >= 3.4), or
`JITFunction.cache_hook` on older 3.x. Triton is imported only when used.

This module is the bridge's public face and its warmup; the rest is by job:
_triton_schema (parameter kinds, storage-free arguments, dtype names),
_triton_monitor (the compile hook and seal), _triton_record (record mode's
manifest entries), _triton_cache (Triton's cache in jitwarm's tiers) and
_triton_launchers (launchers and driver utilities warmed ahead).
"""
from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import (
    CompileKey,
    InvalidArgumentError,
    KernelSchema,
    NoDeviceError,
    Status,
    WarmupRequest,
    _jitwarm,
    enumerate_warmup_keys,
    manifest_requests,
    warmup_inputs_for,
)

from . import _triton_cache
from ._triton_cache import (
    CacheManager,
    _triton,
    cache_counters,
    gpu_target,
    jitwarm_target,
    stop_using_jitwarm_cache,
    use_jitwarm_cache,
)
from ._triton_launchers import prepare_launch
from ._triton_monitor import (
    counters,
    install_hook,
    monitor,
    reset_counters,
    seal,
    sealed,
    uninstall_hook,
    unseal,
)
from ._triton_monitor import state as _monitor_state
from ._triton_schema import (
    MockTensor,
    constexpr_value,
    kind_of_annotation,
    kind_of_value,
    request_values,
    short_dtype,
)

__all__ = [
    "TritonKernel", "TritonWarmupResult", "SpecializationMismatch", "seal", "unseal",
    "monitor", "counters", "reset_counters", "sealed", "install_hook", "uninstall_hook",
    "CacheManager", "use_jitwarm_cache", "stop_using_jitwarm_cache", "cache_counters",
    "jitwarm_target", "gpu_target",
]

_log = logging.getLogger("jitwarm.triton")

@dataclass
class SpecializationMismatch:
    """A warmup input whose Triton specialization is not the one jitwarm's key
    says (the bridge refuses to warm it)."""

    key: str
    parameter: str
    expected: Tuple[str, Any]
    triton: Tuple[Any, Any]

    def __str__(self) -> str:
        return (f"{self.key}: parameter '{self.parameter}': jitwarm expects Triton "
                f"specialization {self.expected}, Triton derived {self.triton}")


@dataclass
class TritonWarmupResult:
    """What TritonKernel.warmup did: one entry per jitwarm key."""

    keys: List[CompileKey] = field(default_factory=list)
    specializations: List[str] = field(default_factory=list)  # Triton's, per key
    # Per key and option form (warmup's options=): compiled (or, without
    # use_jitwarm_cache, read from Triton's own files), loaded from jitwarm's
    # tiers, or already in Triton's in-memory cache.
    compiled: int = 0
    loaded: int = 0
    cached: int = 0
    # With jitwarm's tiers under Triton: the keys whose launcher (and the
    # driver's utilities) is in the tiers for a first launch.
    launchers: int = 0
    seconds: float = 0.0


class TritonKernel:
    """One @triton.jit kernel, warmed through jitwarm's requests.

    name: the kernel name requests use (default: Triton's full name,
    module.qualname). params: hints per parameter, as jitwarm.KernelSchema
    takes them ({"kind": "tensor", "same_dtype_as": "x_ptr", "dtypes": [...]}),
    for parameters whose kind neither an annotation nor the requests tell, or
    to tie an output's dtype and alignment to an input's.
    """

    def __init__(self, kernel: Any, *, name: Optional[str] = None,
                 params: Optional[Dict[str, Dict[str, Any]]] = None) -> None:
        # An @triton.autotune kernel wraps the @triton.jit one (through
        # heuristics, maybe): every config is warmed (_runs).
        self.autotuner = kernel if hasattr(kernel, "configs") and hasattr(kernel, "fn") else None
        while not hasattr(kernel, "params") and hasattr(kernel, "fn"):
            kernel = kernel.fn
        if not hasattr(kernel, "params") or not hasattr(kernel, "warmup"):
            raise InvalidArgumentError(
                f"TritonKernel: {kernel!r} is not a @triton.jit kernel (no params/warmup)",
                Status.INVALID_ARGUMENT)
        self.kernel = kernel
        self.name = name or getattr(kernel, "_fn_name", None) or (
            f"{kernel.fn.__module__}.{kernel.fn.__qualname__}")
        self.hints = dict(params or {})
        _monitor_state.names[id(kernel)] = self.name
        known = {p.name for p in kernel.params}
        unknown = set(self.hints) - known
        if unknown:
            raise InvalidArgumentError(
                f"TritonKernel {self.name}: hints for unknown parameter(s) "
                f"{', '.join(sorted(unknown))}; the kernel's are: {', '.join(p.name for p in kernel.params)}",
                Status.INVALID_ARGUMENT)

    # --- keys ---------------------------------------------------------------
    def schema(self, requests: Sequence[WarmupRequest] = ()) -> KernelSchema:
        """The jitwarm schema of the kernel: kinds from constexpr and type
        annotations, the hints, and else from the requests' values."""
        params = []
        for p in self.kernel.params:
            desc: Dict[str, Any] = {"name": p.name}
            annotation = getattr(p, "annotation", "") or ""
            if getattr(p, "is_constexpr", False):
                desc["kind"] = "constexpr"
            else:
                desc.update(kind_of_annotation(annotation) or {})
            desc.update(self.hints.get(p.name, {}))
            if "kind" not in desc:
                kinds = {kind_of_value(v) for r in requests for v in request_values(r, p.name)}
                kinds.discard(None)
                if len(kinds) != 1:
                    raise InvalidArgumentError(
                        f"TritonKernel {self.name}: the kind of parameter '{p.name}' is not "
                        "known: annotate it, give it in the warmup request, or pass a hint "
                        "(params={'%s': {'kind': 'tensor'}})" % p.name, Status.INVALID_ARGUMENT)
                desc["kind"] = kinds.pop()
            if desc["kind"] != "tensor":
                for tensor_only in ("dtypes", "same_dtype_as"):
                    desc.pop(tensor_only, None)
            if getattr(p, "do_not_specialize", False):
                desc["do_not_specialize"] = True
            if getattr(p, "do_not_specialize_on_alignment", False):
                desc["do_not_specialize_on_alignment"] = True
            if desc["kind"] == "constexpr" and getattr(p, "has_default", False):
                default = p.default
                if isinstance(default, (bool, int, float)):
                    desc.setdefault("default", default)
            params.append(desc)
        return KernelSchema(self.name, params, origin="triton: " + self.name)

    def target(self) -> str:
        """jitwarm's name for the device Triton compiles for: triton:<backend>:<arch>."""
        target = self._device_target()
        return f"triton:{target.backend}:{target.arch}"

    def _device_target(self) -> Any:
        """Triton's GPUTarget of this process's device."""
        try:
            return _triton().runtime.driver.active.get_current_target()
        except Exception as error:  # noqa: BLE001  (Triton's drivers raise RuntimeError)
            raise NoDeviceError(
                f"TritonKernel {self.name}: Triton has no GPU here ({error}); warm for a GPU "
                "this process does not drive with warmup(..., target='cuda:sm_90')",
                Status.NO_DEVICE) from error

    def _requests(self, requests, manifest, toml) -> List[WarmupRequest]:
        given = sum(x is not None for x in (requests, manifest, toml))
        if given != 1:
            raise InvalidArgumentError("warmup: give exactly one of requests, manifest= or toml=",
                                       Status.INVALID_ARGUMENT)
        if manifest is not None or toml is not None:
            requests = manifest_requests(manifest=manifest, toml=toml)
        elif isinstance(requests, WarmupRequest):
            requests = [requests]
        mine = [r for r in requests if r.kernel == self.name]
        if not mine:
            raise InvalidArgumentError(
                f"warmup: no request names the Triton kernel '{self.name}' (requests name: "
                f"{', '.join(sorted({r.kernel for r in requests})) or 'nothing'})",
                Status.INVALID_ARGUMENT)
        return mine

    def keys(self, requests: Union[WarmupRequest, Sequence[WarmupRequest], None] = None, *,
             manifest: Optional[Union[str, "os.PathLike[str]"]] = None,
             toml: Optional[str] = None, target: Optional[str] = None) -> List[CompileKey]:
        """The jitwarm keys the requests produce for this kernel, in order,
        without duplicates."""
        mine = self._requests(requests, manifest, toml)
        schema = self.schema(mine)
        target = target or self.target()
        seen, keys = set(), []
        for r in mine:
            for key in enumerate_warmup_keys(schema, r, target, impl_name="triton"):
                if key.encoding not in seen:
                    seen.add(key.encoding)
                    keys.append(key)
        return keys

    # --- Triton's view of a key ----------------------------------------------
    def triton_arguments(self, schema: KernelSchema, key: CompileKey) -> Dict[str, Any]:
        """Storage-free arguments for Triton that reproduce `key`: mock tensors
        (aligned or one element off) and jitwarm's representatives, by name."""
        args = {}
        for desc, value in zip(schema.params, warmup_inputs_for(schema, key)):
            if isinstance(value, _jitwarm.WarmupTensor):
                args[desc.name] = MockTensor(value.dtype, value.aligned)
            else:
                args[desc.name] = value
        return args

    @staticmethod
    def expected_specialization(key: CompileKey) -> List[Tuple[str, Any]]:
        """Per parameter, the (type, attribute) Triton's specializer gives for
        inputs of this key: ('*bf16', 'D') for an aligned bf16 pointer, ('i32',
        'D') for a multiple of 16, ('constexpr', 1) for the value 1, ('i32',
        None) when it does not specialize, ('fp32', None) for a float,
        ('constexpr', value) for a constexpr."""
        out = []
        for p in key.params:
            if p.kind == "tensor":
                out.append(("*" + short_dtype(p.dtype), "D" if p.alignment == "a16" else ""))
            elif p.kind == "constexpr":
                out.append(("constexpr", p.value))
            elif p.int_spec is not None:
                spec = p.int_spec
                if spec.value_class == "one":
                    out.append(("constexpr", 1))
                else:
                    out.append((spec.type, "D" if spec.value_class == "div16" else ""))
            else:
                out.append((p.float_type or "fp32", None))
        return out

    def _device_cache(self) -> Tuple[Dict[str, Any], Callable[..., Any]]:
        """Triton's in-memory kernel cache and binder for the current device:
        the first and last entries of JITFunction.device_caches[device] in
        every 3.x layout."""
        device = _triton().runtime.driver.active.get_current_device()
        caches = self.kernel.device_caches[device]
        return caches[0], caches[-1]

    def triton_specialization(self, args: Dict[str, Any], options: Dict[str, Any]) -> List[Any]:
        """Triton's own specialization of these arguments (its binder)."""
        _, binder = self._device_cache()
        _, specialization, _ = binder(**args, **options)
        return list(specialization)

    def check_key(self, key: CompileKey, specialization: Sequence[Any]) -> List[SpecializationMismatch]:
        """Where Triton's specialization differs from what jitwarm's key says."""
        mismatches = []
        for p, expected, actual in zip(key.params, self.expected_specialization(key), specialization):
            a_type, a_attr = actual[0], actual[1]
            e_type, e_attr = expected
            if e_type == "constexpr":
                same = a_type == "constexpr" and constexpr_value(a_attr) == e_attr
            else:
                # Triton writes "no attribute" as "" or None, by version.
                same = a_type == e_type and ("D" in (a_attr or "")) == (e_attr == "D")
            if not same:
                mismatches.append(SpecializationMismatch(key.text, p.name, expected, (a_type, a_attr)))
        return mismatches

    # --- warmup ---------------------------------------------------------------
    def warmup(self, requests: Union[WarmupRequest, Sequence[WarmupRequest], None] = None, *,
               manifest: Optional[Union[str, "os.PathLike[str]"]] = None,
               toml: Optional[str] = None, grid: Any = (1,),
               options: Union[Dict[str, Any], Sequence[Dict[str, Any]], None] = None,
               target: Optional[str] = None) -> TritonWarmupResult:
        """Compile every specialization the requests produce, without a
        launch, and check first that each input's Triton specialization is
        the one jitwarm's key says (InvalidArgumentError naming the key and
        the parameter, before any compile).

        options: Triton's launch options (num_warps, num_stages, ...), one
        set or a list of sets; they are part of Triton's key, so give the ones
        the launches use. Each set is warmed as given and, where it spells
        out Triton's defaults, as a launch that leaves them out is keyed.
        An @triton.autotune kernel is warmed in every config (its options
        and constexprs), and the options given are ignored for it.

        target: None warms for this process's GPU through Triton's own
        kernel.warmup, into Triton's in-memory cache and its cache (Triton's
        files, or jitwarm's tiers after use_jitwarm_cache). A jitwarm target
        ("cuda:sm_90", "hip:gfx942") compiles for that GPU through Triton's
        compile-only path (triton.compile with a GPUTarget), which needs no
        GPU, into the cache alone, where a launch on such a GPU finds it.
        With jitwarm's tiers under Triton (use_jitwarm_cache), either warmup
        also builds what the first launch of each kernel needs besides it:
        its launcher and the driver's utilities (native modules Triton builds
        with the C compiler), so a node that imports the cache builds none
        (`launchers` counts the kernels whose launcher is there)."""
        import time

        mine = self._requests(requests, manifest, toml)
        runs = self._runs(mine, _option_sets(options))
        result = TritonWarmupResult()
        start = time.perf_counter()
        previous = getattr(_monitor_state.local, "bridge_warmup", False)
        _monitor_state.local.bridge_warmup = True
        try:
            if target is None:
                self._warm_here(runs, grid, result)
            else:
                self._warm_for_target(runs, target, result)
        finally:
            _monitor_state.local.bridge_warmup = previous
            with _monitor_state.lock:
                _monitor_state.counts["warmup_compiles"] += result.compiled + result.loaded
        result.seconds = time.perf_counter() - start
        return result

    def _runs(self, mine: List[WarmupRequest],
              option_sets: List[Dict[str, Any]]) -> List[Tuple[List[WarmupRequest], Dict[str, Any]]]:
        """(requests, options) per warm pass: the option sets as given, or
        for an autotuned kernel one pass per config, whose constexprs join
        the requests and whose other fields are the options, in the order the
        autotuner passes them (Triton's in-memory key is their text)."""
        if self.autotuner is None:
            return [(mine, options) for options in option_sets]
        names = {p.name for p in self.kernel.params}
        runs = []
        for config in self.autotuner.configs:
            every = config.all_kwargs()
            constexprs = {k: [v] for k, v in every.items() if k in names}
            options = {k: v for k, v in every.items() if k not in names}
            runs.append(([dataclasses.replace(r, params={**r.params, **constexprs}) for r in mine],
                         options))
        return runs

    def _plan(self, requests: List[WarmupRequest], target: str, specialize: Callable[..., Any],
              options: Dict[str, Any]) -> List[Tuple[CompileKey, Dict[str, Any], str]]:
        """Per key: the storage-free arguments and Triton's specialization of
        them, checked against the key (raises before any compile)."""
        schema = self.schema(requests)
        plan, mismatches = [], []
        for key in self.keys(requests, target=target):
            args = self.triton_arguments(schema, key)
            specialization = list(specialize(args, options))
            mismatches += self.check_key(key, specialization)
            plan.append((key, args, str(specialization)))
        if mismatches:
            raise InvalidArgumentError(
                "Triton warmup inputs do not reproduce jitwarm's keys:\n  "
                + "\n  ".join(str(m) for m in mismatches), Status.INVALID_ARGUMENT)
        return plan

    def _warm_here(self, runs, grid: Any, result: TritonWarmupResult) -> None:
        target = self.target()
        # Where launchers are built for (the device's GPUTarget), asked once.
        device = self._device_target() if _triton_cache.in_use() else None
        passes = []
        for requests, options in runs:
            plan = self._plan(requests, target, self.triton_specialization, options)
            forms = [options] if self.autotuner is not None else _option_forms(options)
            passes.append((plan, forms))
        seen = set()
        for plan, forms in passes:
            for key, args, specialization in plan:
                for form, options in enumerate(forms):
                    kernel_cache, _ = self._device_cache()
                    before, tiers = len(kernel_cache), cache_counters()
                    compiled = self.kernel.warmup(grid=grid, **args, **options)
                    kernel_cache, _ = self._device_cache()
                    if not any(k.startswith(specialization) for k in kernel_cache):
                        raise InvalidArgumentError(
                            f"Triton warmup of {key.text} left no cache entry for its "
                            f"specialization {specialization}", Status.INVALID_ARGUMENT)
                    if len(kernel_cache) == before:
                        result.cached += 1
                    elif form > 0:
                        # The form without the defaults spelled out: Triton's
                        # file key parses the options first, so its compile
                        # found the files the first form made.
                        result.loaded += 1
                    else:
                        _count_compile(result, tiers)
                    if (form == 0 and compiled is not None and device is not None
                            and prepare_launch(compiled, device)):
                        result.launchers += 1
                if key.encoding not in seen:
                    seen.add(key.encoding)
                    result.keys.append(key)
                    result.specializations.append(specialization)

    def _warm_for_target(self, runs, target: str, result: TritonWarmupResult) -> None:
        triton = _triton()
        gpu = gpu_target(target)
        try:
            from triton.compiler import ASTSource  # noqa: WPS433
            from triton.compiler.compiler import make_backend  # noqa: WPS433
            from triton.runtime.jit import create_function_from_signature  # noqa: WPS433
            pack_args = self.kernel._pack_args  # noqa: SLF001  (Triton's own packing)
        except (ImportError, AttributeError) as error:
            raise InvalidArgumentError(
                f"this Triton ({getattr(triton, '__version__', '?')}) has no compile-only path "
                f"the bridge knows (triton.compile with a GPUTarget, 3.4+): {error}",
                Status.UNSUPPORTED) from error
        backend = make_backend(gpu)
        binder = create_function_from_signature(self.kernel.signature, self.kernel.params,
                                                backend)
        debug = getattr(getattr(getattr(triton, "knobs", None), "runtime", None), "debug", False)

        def launch_kwargs(args: Dict[str, Any], options: Dict[str, Any]) -> Dict[str, Any]:
            # What JITFunction.run hands its binder (it adds `debug`).
            kwargs = dict(args, **options)
            kwargs["debug"] = kwargs.get("debug", getattr(self.kernel, "debug", False)) or debug
            return kwargs

        def specialize(args: Dict[str, Any], options: Dict[str, Any]) -> List[Any]:
            return binder(**launch_kwargs(args, options))[1]

        key_target = f"triton:{gpu.backend}:{gpu.arch}"
        seen = set()
        with _triton_cache.warmup_target(jitwarm_target(gpu)):
            for requests, options in runs:
                for key, args, specialization in self._plan(requests, key_target, specialize,
                                                            options):
                    kwargs = launch_kwargs(args, options)
                    bound_args, spec, bound_options = binder(**kwargs)
                    packed, signature, constexprs, attrs = pack_args(backend, kwargs, bound_args,
                                                                     spec, bound_options)
                    tiers = cache_counters()
                    compiled = triton.compile(ASTSource(self.kernel, signature, constexprs, attrs),
                                              target=gpu, options=packed.__dict__)
                    _count_compile(result, tiers)
                    if _triton_cache.in_use() and prepare_launch(compiled, gpu):
                        result.launchers += 1
                    if key.encoding not in seen:
                        seen.add(key.encoding)
                        result.keys.append(key)
                        result.specializations.append(specialization)

    def cache_size(self) -> int:
        """Entries in Triton's in-memory cache of this kernel (current device)."""
        kernel_cache, _ = self._device_cache()
        return len(kernel_cache)


def _option_sets(options: Union[Dict[str, Any], Sequence[Dict[str, Any]], None]) -> List[Dict[str, Any]]:
    if options is None:
        return [{}]
    if isinstance(options, dict):
        return [dict(options)]
    sets = [dict(o) for o in options]
    if not sets or not all(isinstance(o, dict) for o in options):
        raise InvalidArgumentError("warmup: options= is a dict of Triton options or a non-empty "
                                   "list of them", Status.INVALID_ARGUMENT)
    return sets


def _option_forms(options: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The option set as given and, when it spells out some of Triton's
    defaults, without them: Triton keys its in-memory cache on the options
    as passed, so a launch that leaves a default out is another key (whose
    compile then finds the same files: Triton's file key parses the options
    first)."""
    if not options:
        return [options]
    try:
        from triton.compiler.compiler import make_backend  # noqa: WPS433
        defaults = make_backend(_triton().runtime.driver.active.get_current_target()).parse_options({})
    except Exception:  # noqa: BLE001  (no backend to ask: the options as given)
        return [options]
    missing = object()
    stripped = {k: v for k, v in options.items() if getattr(defaults, k, missing) != v}
    return [options] if stripped == options else [options, stripped]


def _count_compile(result: TritonWarmupResult, tiers_before: Dict[str, int]) -> None:
    """A compile Triton ran for the warmup: from jitwarm's tiers (a group
    found there) or compiled here (Triton's own cache cannot tell)."""
    if cache_counters()["groups_loaded"] > tiers_before["groups_loaded"]:
        result.loaded += 1
    else:
        result.compiled += 1


