"""The Triton bridge's JIT monitor: Triton's compile hook, sealed in 'off',
'warn' or 'error' mode like jitwarm's own monitor, with jitwarm's tiers telling
a load from a compile, and record mode (_triton_record)."""
from __future__ import annotations

import contextlib
import logging
import os
import threading
from typing import Any, Dict, Iterator, Optional, Union

from . import InvalidArgumentError, JitRefusedError, Status
from . import _triton_cache
from ._triton_cache import _triton
from ._triton_record import manifest_entry
from ._triton_schema import constexpr_value

_log = logging.getLogger("jitwarm.triton")


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
                out.write(manifest_entry(_recorded_name(fn), compile, repr) + "\n")
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


state = _Monitor()
_triton_cache.group_observer = state.on_group_lookup

# The options a refusal names, of those Triton's compile info carries.
_DESCRIBED_OPTIONS = ("num_warps", "num_ctas", "num_stages", "maxnreg", "enable_fp_fusion",
                      "launch_cooperative_grid", "debug")


def _recorded_name(fn: Any) -> str:
    """The name a recorded entry gives the kernel: the bridge's, else Triton's
    module.name."""
    name = state.names.get(id(getattr(fn, "jit_function", None)))
    return name or (f"{fn.module}.{fn.name}" if hasattr(fn, "module") else str(fn))


def _describe_compile(fn: Any, compile: Any, fallback: str) -> str:
    """A compile as a person reads it: the kernel, every argument's
    specialization (type, 16-divisibility, constexpr values) and the
    options, from the hook's compile info (Triton >= 3.2: signature by name,
    constants and attributes by argument path). Triton's own repr where the
    info has another layout."""
    try:
        jit_function = getattr(fn, "jit_function", None)
        name = state.names.get(id(jit_function)) or getattr(fn, "name", None) or str(fn)
        constants = compile.get("constants") or {}
        attrs = (compile.get("configs") or [{}])[0]
        arguments = []
        for index, (param, ty) in enumerate(compile["signature"].items()):
            param_name = getattr(param, "name", param)
            if ty == "constexpr":
                arguments.append(f"{param_name}: constexpr={constexpr_value(constants.get((index,)))!r}")
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
    with state.lock:
        if state.installed:
            return
        owner, attr = _hook_slot()
        state.previous_hook = getattr(owner, attr, None)
        setattr(owner, attr, state.hook)
        state.installed = True


def uninstall_hook() -> None:
    """Restores Triton's compile hook as it was."""
    with state.lock:
        if not state.installed:
            return
        owner, attr = _hook_slot()
        setattr(owner, attr, state.previous_hook)
        state.previous_hook = None
        state.installed = False


def seal(mode: str = "error", *, record: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
    """From now on a Triton compile on a launch goes to the monitor: 'off'
    (counted), 'warn' (logged once per key on the 'jitwarm.triton' logger),
    'error' (refused: the launch raises JitRefusedError and compiles nothing).
    record: append each such compile's signature to this file."""
    if mode not in ("off", "warn", "error"):
        raise InvalidArgumentError(f"unknown JIT monitor mode '{mode}' (use off, warn or error)",
                                   Status.INVALID_ARGUMENT)
    install_hook()
    with state.lock:
        state.sealed, state.mode = True, mode
        state.record = os.fspath(record) if record is not None else None


def unseal() -> None:
    """Ends the seal (compiles are counted as before it)."""
    with state.lock:
        state.sealed = False


def sealed() -> bool:
    return state.sealed


@contextlib.contextmanager
def monitor(mode: str, *, record: Optional[Union[str, "os.PathLike[str]"]] = None) -> Iterator[None]:
    """Sealed with `mode` within the block; the previous state on exit."""
    with state.lock:
        previous = (state.sealed, state.mode, state.record)
    seal(mode, record=record)
    try:
        yield
    finally:
        with state.lock:
            state.sealed, state.mode, state.record = previous


def counters() -> Dict[str, int]:
    """Triton compiles seen by the hook: before seal, by warmup, after seal
    (launch path), and the monitor's warnings and refusals."""
    with state.lock:
        return dict(state.counts)


def reset_counters() -> None:
    with state.lock:
        for k in state.counts:
            state.counts[k] = 0
        state.warned.clear()
        state.recorded.clear()
