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
    Status,
    WarmupRequest,
    _jitwarm,
    enumerate_warmup_keys,
    manifest_requests,
    scalar_specialization_rep,
    IntSpec,
    warmup_inputs_for,
)

__all__ = [
    "TritonKernel", "TritonWarmupResult", "SpecializationMismatch", "seal", "unseal",
    "monitor", "counters", "sealed", "install_hook", "uninstall_hook",
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
    compiled: int = 0  # keys Triton compiled (or read from its disk cache)
    cached: int = 0    # keys already in Triton's in-memory cache
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
        target = _triton().runtime.driver.active.get_current_target()
        return f"triton:{target.backend}:{target.arch}"

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
               options: Optional[Dict[str, Any]] = None) -> TritonWarmupResult:
        """Compile every specialization the requests produce into Triton's
        cache through Triton's own kernel.warmup (compile only, no launch).
        options: Triton's launch options (num_warps, num_stages, ...), which
        are part of Triton's key: give the ones the launches use. Raises
        InvalidArgumentError naming the key and the parameter when an input's
        Triton specialization is not what jitwarm's key says, before any
        compile."""
        import time

        options = dict(options or {})
        mine = self._requests(requests, manifest, toml)
        schema = self.schema(mine)
        keys = self.keys(mine, target=self.target())
        plan, mismatches = [], []
        for key in keys:
            args = self.triton_arguments(schema, key)
            specialization = self.triton_specialization(args, options)
            mismatches += self.check_key(key, specialization)
            plan.append((key, args, str(specialization)))
        if mismatches:
            raise InvalidArgumentError(
                "Triton warmup inputs do not reproduce jitwarm's keys:\n  "
                + "\n  ".join(str(m) for m in mismatches), Status.INVALID_ARGUMENT)
        result = TritonWarmupResult()
        kernel_cache, _ = self._device_cache()
        start = time.perf_counter()
        for key, args, specialization in plan:
            before = len(kernel_cache)
            self.kernel.warmup(grid=grid, **args, **options)
            kernel_cache, _ = self._device_cache()
            if not any(k.startswith(specialization) for k in kernel_cache):
                raise InvalidArgumentError(
                    f"Triton warmup of {key.text} left no cache entry for its specialization "
                    f"{specialization}", Status.INVALID_ARGUMENT)
            if len(kernel_cache) > before:
                result.compiled += 1
            else:
                result.cached += 1
            result.keys.append(key)
            result.specializations.append(specialization)
        result.seconds = time.perf_counter() - start
        return result

    def cache_size(self) -> int:
        """Entries in Triton's in-memory cache of this kernel (current device)."""
        kernel_cache, _ = self._device_cache()
        return len(kernel_cache)


def _constexpr_value(value: Any) -> Any:
    return getattr(value, "value", value)


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
                       "compiles_after_seal": 0, "warnings": 0, "refusals": 0}

    def hook(self, *, key: Any, repr: str, fn: Any, compile: Any, is_manual_warmup: bool,
             already_compiled: bool, **extra: Any) -> Optional[bool]:
        with self.lock:
            if is_manual_warmup:
                self.counts["warmup_compiles"] += 1
            elif not self.sealed:
                self.counts["compiles_before_seal"] += 1
            else:
                self.counts["compiles_after_seal"] += 1
                if self.record and str(key) not in self.recorded:
                    self.recorded.add(str(key))
                    with open(self.record, "a") as out:
                        out.write(_manifest_entry(fn, compile, repr) + "\n")
                if self.mode == "error":
                    self.counts["refusals"] += 1
                    raise JitRefusedError(
                        f"JIT monitor: refusing to compile Triton kernel {repr} on the launch "
                        "path after warmup was sealed (warm this specialization, or set the "
                        "monitor to warn)", Status.JIT_REFUSED)
                if self.mode == "warn" and str(key) not in self.warned:
                    self.warned.add(str(key))
                    self.counts["warnings"] += 1
                    _log.warning("JIT monitor: compiling Triton kernel %s on the launch path "
                                 "after warmup", repr)
        if self.previous_hook is not None:
            return self.previous_hook(key=key, repr=repr, fn=fn, compile=compile,
                                      is_manual_warmup=is_manual_warmup,
                                      already_compiled=already_compiled, **extra)
        return None


_monitor = _Monitor()


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
