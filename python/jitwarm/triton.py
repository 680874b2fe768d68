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
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import (
    CompileKey,
    InvalidArgumentError,
    JitRefusedError,
    KernelSchema,
    NoDeviceError,
    Status,
    WarmupRequest,
    _jitwarm,
    enumerate_warmup_keys,
    manifest_requests,
    scalar_specialization_rep,
    IntSpec,
    warmup_inputs_for,
)

from . import _triton_cache
from ._triton_launchers import prepare_launch
from ._triton_cache import (
    CacheManager,
    cache_counters,
    gpu_target,
    jitwarm_target,
    stop_using_jitwarm_cache,
    use_jitwarm_cache,
)

__all__ = [
    "TritonKernel", "TritonWarmupResult", "SpecializationMismatch", "seal", "unseal",
    "monitor", "counters", "sealed", "install_hook", "uninstall_hook",
    "CacheManager", "use_jitwarm_cache", "stop_using_jitwarm_cache", "cache_counters",
    "jitwarm_target", "gpu_target",
]

_log = logging.getLogger("jitwarm.triton")

# Triton's canonical type names for jitwarm's dtypes are jitwarm's short names
# (bf16, fp16, fp32, i32, u8, i1, ...): jitwarm.dtype_name gives the long name,
# _SHORT maps it.
_SHORT = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
}
_LONG = {short: long for long, short in _SHORT.items()}


def _triton():
    import triton  # noqa: WPS433  (Triton is a run-time dependency only)
    return triton


# ---------------------------------------------------------------------------
# The schema of a Triton kernel
# ---------------------------------------------------------------------------
def _kind_of_annotation(annotation: str) -> Optional[Dict[str, Any]]:
    """A parameter's kind from Triton's normalized annotation ('*fp16', 'i32',
    'fp32', 'constexpr'), or None when it has none."""
    if not annotation:
        return None
    if "constexpr" in annotation:
        return {"kind": "constexpr"}
    if annotation.startswith("*"):
        element = annotation.lstrip("*").lstrip("k")
        return {"kind": "tensor", "dtypes": [_LONG[element]]} if element in _LONG else {"kind": "tensor"}
    if annotation in ("i32", "i64", "u64", "i8", "i16", "u8", "u16", "u32"):
        return {"kind": "int"}
    if annotation in ("fp16", "bf16", "fp32"):
        return {"kind": "float"}
    if annotation == "fp64":
        return {"kind": "float", "float64": True}
    return None


def _kind_of_value(value: Any) -> Optional[str]:
    """What a warmup axis value says about its parameter's kind."""
    if isinstance(value, (list, tuple)):
        kinds = {_kind_of_value(v) for v in value} - {None}
        return kinds.pop() if len(kinds) == 1 else None
    if isinstance(value, bool):
        return "constexpr"
    if isinstance(value, (int, range)):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, (str, dict, _jitwarm.WarmupTensor)):
        return "tensor"
    try:
        _jitwarm.dtype_name(value)  # a NumPy or torch dtype
        return "tensor"
    except Exception:  # noqa: BLE001  (not a dtype: no opinion)
        return None


def _request_values(request: WarmupRequest, name: str) -> List[Any]:
    values = []
    if name in request.params:
        values.append(request.params[name])
    for group in request.zip:
        if name in group:
            values.append(list(group[name]))
    return values


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


class _MockTensor:
    """A storage-free tensor for Triton's warmup: a dtype and a data pointer
    that is 16-byte aligned or not (one element off), never dereferenced."""

    __slots__ = ("dtype", "_ptr")

    def __init__(self, dtype: Any, aligned: bool, element_size: int) -> None:
        self.dtype = dtype
        self._ptr = 0x10000 if aligned else 0x10000 + max(1, element_size)

    def data_ptr(self) -> int:
        return self._ptr

    def ptr_range(self) -> int:  # Triton's MockTensor has it too
        return 0

    def __repr__(self) -> str:
        return f"MockTensor({self.dtype}, ptr={self._ptr:#x})"


class _DtypeName:
    """A dtype Triton's canonicalize_dtype reads (str() ends in the name) when
    torch is not there to give a real one."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return "jitwarm." + self.name

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _DtypeName) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


_ELEMENT_SIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2,
                 "bfloat16": 2, "int32": 4, "uint32": 4, "float32": 4, "int64": 8,
                 "uint64": 8, "float64": 8}


def _triton_dtype(name: str) -> Any:
    try:
        import torch  # noqa: WPS433
        return getattr(torch, name)
    except (ImportError, AttributeError):
        return _DtypeName(name)


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
        _monitor.names[id(kernel)] = self.name
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
                desc.update(_kind_of_annotation(annotation) or {})
            desc.update(self.hints.get(p.name, {}))
            if "kind" not in desc:
                kinds = {_kind_of_value(v) for r in requests for v in _request_values(r, p.name)}
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
                args[desc.name] = _MockTensor(_triton_dtype(value.dtype), value.aligned,
                                              _ELEMENT_SIZE[value.dtype])
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
                out.append(("*" + _SHORT[p.dtype], "D" if p.alignment == "a16" else ""))
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
                same = a_type == "constexpr" and _constexpr_value(a_attr) == e_attr
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
        previous = getattr(_monitor.local, "bridge_warmup", False)
        _monitor.local.bridge_warmup = True
        try:
            if target is None:
                self._warm_here(runs, grid, result)
            else:
                self._warm_for_target(runs, target, result)
        finally:
            _monitor.local.bridge_warmup = previous
            with _monitor.lock:
                _monitor.counts["warmup_compiles"] += result.compiled + result.loaded
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
                    if (form == 0 and compiled is not None and _triton_cache.in_use()
                            and prepare_launch(compiled, self._device_target())):
                        result.launchers += 1
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


def _constexpr_value(value: Any) -> Any:
    return getattr(value, "value", value)


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


# ---------------------------------------------------------------------------
# The monitor: Triton compiles on the launch path after seal
# ---------------------------------------------------------------------------
class _Monitor:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sealed = False
        self.mode = "off"
        self.record: Optional[str] = None
        self.previous_hook: Any = None
        self.installed = False
        self.warned: set = set()
        self.recorded: set = set()
        # id(JITFunction) -> the name TritonKernel gave it, for recorded entries.
        self.names: Dict[int, str] = {}
        self.counts = {"compiles_before_seal": 0, "warmup_compiles": 0,
                       "compiles_after_seal": 0, "loads_after_seal": 0, "warnings": 0,
                       "refusals": 0}
        # Per thread: the bridge's warmup is running (it counts its own
        # compiles), and a launch's compile waiting for its group lookup.
        self.local = threading.local()

    def hook(self, *, key: Any, repr: str, fn: Any, compile: Any, is_manual_warmup: bool,
             already_compiled: bool, **extra: Any) -> Optional[bool]:
        with self.lock:
            self.local.pending = None
            if is_manual_warmup:
                if not getattr(self.local, "bridge_warmup", False):
                    self.counts["warmup_compiles"] += 1
            elif not self.sealed:
                self.counts["compiles_before_seal"] += 1
            elif _triton_cache.in_use():
                # Triton calls the hook on a miss of its in-memory cache; with
                # jitwarm's tiers under it, the group lookup that follows tells
                # a load (found) from a compile (_on_group_lookup).
                self.local.pending = (key, fn, compile, repr)
            else:
                self.compile_after_seal(key, fn, compile, repr)
        if self.previous_hook is not None:
            return self.previous_hook(key=key, repr=repr, fn=fn, compile=compile,
                                      is_manual_warmup=is_manual_warmup,
                                      already_compiled=already_compiled, **extra)
        return None

    def compile_after_seal(self, key: Any, fn: Any, compile: Any, repr: str) -> None:
        """A compile on the launch path after seal: counted, recorded, then
        refused (raises JitRefusedError) or warned about by mode. Holds the
        lock."""
        self.counts["compiles_after_seal"] += 1
        if self.record and str(key) not in self.recorded:
            self.recorded.add(str(key))
            with open(self.record, "a") as out:
                out.write(_manifest_entry(fn, compile, repr) + "\n")
        if self.mode == "error":
            self.counts["refusals"] += 1
            raise JitRefusedError(
                f"JIT monitor: refusing to compile Triton kernel {_describe_compile(fn, compile, repr)} "
                "on the launch path after warmup was sealed (warm this specialization, or set "
                "the monitor to warn)", Status.JIT_REFUSED)
        if self.mode == "warn" and str(key) not in self.warned:
            self.warned.add(str(key))
            self.counts["warnings"] += 1
            _log.warning("JIT monitor: compiling Triton kernel %s on the launch path "
                         "after warmup", _describe_compile(fn, compile, repr))

    def on_group_lookup(self, filename: str, found: bool) -> None:
        pending = getattr(self.local, "pending", None)
        if pending is None:
            return
        self.local.pending = None
        with self.lock:
            if found:
                self.counts["loads_after_seal"] += 1
            else:
                self.compile_after_seal(*pending)


_monitor = _Monitor()
_triton_cache.group_observer = _monitor.on_group_lookup

# The options a refusal names, of those Triton's compile info carries.
_DESCRIBED_OPTIONS = ("num_warps", "num_ctas", "num_stages", "maxnreg", "enable_fp_fusion",
                      "launch_cooperative_grid", "debug")


def _describe_compile(fn: Any, compile: Any, fallback: str) -> str:
    """A compile as a person reads it: the kernel, every argument's
    specialization (type, 16-divisibility, constexpr values) and the
    options, from the hook's compile info (Triton >= 3.2: signature by name,
    constants and attributes by argument path). Triton's own repr where the
    info has another layout."""
    try:
        jit_function = getattr(fn, "jit_function", None)
        name = _monitor.names.get(id(jit_function)) or getattr(fn, "name", None) or str(fn)
        constants = compile.get("constants") or {}
        attrs = (compile.get("configs") or [{}])[0]
        arguments = []
        for index, (param, ty) in enumerate(compile["signature"].items()):
            param_name = getattr(param, "name", param)
            if ty == "constexpr":
                arguments.append(f"{param_name}: constexpr={_constexpr_value(constants.get((index,)))!r}")
                continue
            divisible = any(a[0] == "tt.divisibility" for a in attrs.get((index,), []))
            if ty.startswith("*"):
                arguments.append(f"{param_name}: {ty}" + (" (16-byte aligned)" if divisible else ""))
            else:
                arguments.append(f"{param_name}: {ty}" + (" (divisible by 16)" if divisible else ""))
        options = [f"{k}={compile[k]!r}" for k in _DESCRIBED_OPTIONS if k in compile]
        return f"{name}({', '.join(arguments)})" + (f" with {', '.join(options)}" if options else "")
    except Exception:  # noqa: BLE001  (an unknown layout: Triton's own words)
        return fallback


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return f'"{value}"'  # beyond TOML's integers, as the manifest takes them
    if isinstance(value, (int, float)):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _manifest_entry(fn: Any, compile: Any, description: str) -> str:
    """A manifest entry that warms the specialization Triton was asked to
    compile (record mode), from the hook's compile info (Triton >= 3.2: a
    signature by name, constants and attributes by argument path). Anything
    it cannot read becomes a comment naming the compile."""
    try:
        jit_function = getattr(fn, "jit_function", None)
        name = _monitor.names.get(id(jit_function)) or (
            f"{fn.module}.{fn.name}" if hasattr(fn, "module") else str(fn))
        signature = compile["signature"]
        constants = compile.get("constants") or {}
        attrs = (compile.get("configs") or [{}])[0]
        lines = ["[[kernel]]", f"name = {_toml_value(name)}", "[kernel.params]"]
        for index, (param, ty) in enumerate(signature.items()):
            divisible = any(a[0] == "tt.divisibility" for a in attrs.get((index,), []))
            if ty == "constexpr":
                value = _constexpr_value(constants[(index,)])
                if value is not None:
                    lines.append(f"{param} = {_toml_value(value)}")
            elif ty.startswith("*"):
                dtype = _LONG[ty.lstrip("*").lstrip("k")]
                lines.append(f'{param} = {{ dtype = "{dtype}", aligned = {_toml_value(divisible)} }}')
            elif ty in ("i32", "i64", "u64"):
                rep = scalar_specialization_rep(IntSpec(ty, "div16" if divisible else "none"))
                lines.append(f"{param} = {_toml_value(rep)}")
            elif ty.startswith(("fp", "bf")):
                lines.append(f"{param} = 0.0")
            else:
                raise ValueError(ty)
        return "\n".join(lines) + "\n"
    except Exception:  # noqa: BLE001  (an unknown layout: keep the compile's name)
        return f"# Triton compile after seal, not expressible as an entry: {description}\n"


def _hook_slot():
    """(object, attribute) of Triton's compile hook: knobs.runtime.jit_cache_hook
    (3.4+), else JITFunction.cache_hook (3.0-3.3)."""
    triton = _triton()
    knobs = getattr(triton, "knobs", None)
    runtime = getattr(knobs, "runtime", None)
    if runtime is not None and hasattr(runtime, "jit_cache_hook"):
        return runtime, "jit_cache_hook"
    from triton.runtime.jit import JITFunction  # noqa: WPS433
    if hasattr(JITFunction, "cache_hook"):
        return JITFunction, "cache_hook"
    raise InvalidArgumentError("this Triton has no compile hook the bridge knows "
                               "(knobs.runtime.jit_cache_hook or JITFunction.cache_hook)",
                               Status.UNSUPPORTED)


def install_hook() -> None:
    """Puts the monitor on Triton's compile hook (chaining to a hook already
    there). seal() does it; counting compiles before seal needs it earlier."""
    with _monitor.lock:
        if _monitor.installed:
            return
        owner, attr = _hook_slot()
        _monitor.previous_hook = getattr(owner, attr, None)
        setattr(owner, attr, _monitor.hook)
        _monitor.installed = True


def uninstall_hook() -> None:
    """Restores Triton's compile hook as it was."""
    with _monitor.lock:
        if not _monitor.installed:
            return
        owner, attr = _hook_slot()
        setattr(owner, attr, _monitor.previous_hook)
        _monitor.previous_hook = None
        _monitor.installed = False


def seal(mode: str = "error", *, record: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
    """From now on a Triton compile on a launch goes to the monitor: 'off'
    (counted), 'warn' (logged once per key on the 'jitwarm.triton' logger),
    'error' (refused: the launch raises JitRefusedError and compiles nothing).
    record: append each such compile's signature to this file."""
    if mode not in ("off", "warn", "error"):
        raise InvalidArgumentError(f"unknown JIT monitor mode '{mode}' (use off, warn or error)",
                                   Status.INVALID_ARGUMENT)
    install_hook()
    with _monitor.lock:
        _monitor.sealed, _monitor.mode = True, mode
        _monitor.record = os.fspath(record) if record is not None else None


def unseal() -> None:
    """Ends the seal (compiles are counted as before it)."""
    with _monitor.lock:
        _monitor.sealed = False


def sealed() -> bool:
    return _monitor.sealed


@contextlib.contextmanager
def monitor(mode: str, *, record: Optional[Union[str, "os.PathLike[str]"]] = None) -> Iterator[None]:
    """Sealed with `mode` within the block; the previous state on exit."""
    with _monitor.lock:
        previous = (_monitor.sealed, _monitor.mode, _monitor.record)
    seal(mode, record=record)
    try:
        yield
    finally:
        with _monitor.lock:
            _monitor.sealed, _monitor.mode, _monitor.record = previous


def counters() -> Dict[str, int]:
    """Triton compiles seen by the hook: before seal, by warmup, after seal
    (launch path), and the monitor's warnings and refusals."""
    with _monitor.lock:
        return dict(_monitor.counts)


def reset_counters() -> None:
    with _monitor.lock:
        for k in _monitor.counts:
            _monitor.counts[k] = 0
        _monitor.warned.clear()
        _monitor.recorded.clear()
