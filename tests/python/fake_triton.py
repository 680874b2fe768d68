"""A stand-in for the parts of Triton 3.x that jitwarm.triton uses (Triton is
not installed on the CI machine). It follows python/triton/runtime/jit.py of
Triton 3.4+: JITFunction.params (KernelParam: name, is_constexpr,
do_not_specialize, do_not_specialize_on_alignment, annotation),
device_caches[device] = (kernel_cache, kernel_key_cache, target, backend,
binder), the binder's (bound_args, specialization, options), the key
str(specialization) + str(options), `warmup` as run(warmup=True) with no
launch, and knobs.runtime.jit_cache_hook called before each compile with
key, repr, fn, compile (signature by name, constants and attributes by
argument path) and is_manual_warmup; a truthy answer skips the compile.

Specialization is Triton's default (create_specialize_impl with the base
backend's get_int_specialization / get_tensor_specialization): ints are i32,
u64 or i64, the value 1 a constexpr, "D" for a multiple of 16; a tensor is
"*" + its canonical dtype, "D" for a 16-byte aligned data_ptr(); floats fp32.
INT_DIVISIBILITY = False makes a Triton that never marks integers "D" (for
the bridge's mismatch check).
"""
import collections
import inspect
import sys
import types
from dataclasses import dataclass

INT_DIVISIBILITY = True

_CANONICAL = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
              "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
              "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}


class constexpr:  # noqa: N801  (Triton's name)
    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"constexpr[{self.value}]"


@dataclass(frozen=True)
class GPUTarget:
    backend: str
    arch: object
    warp_size: int


class _ActiveDriver:
    def get_current_device(self):
        return 0

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def get_current_stream(self, device):
        return 0


class KernelParam:
    def __init__(self, num, param, do_not_specialize, do_not_specialize_on_alignment):
        self.num = num
        self._param = param
        self.name = param.name
        self.do_not_specialize = do_not_specialize
        self.do_not_specialize_on_alignment = do_not_specialize_on_alignment
        annotation = param.annotation
        if annotation is constexpr:
            self.annotation = "constexpr"
        elif isinstance(annotation, str):
            self.annotation = annotation
        else:
            self.annotation = ""
        self.is_constexpr = "constexpr" in self.annotation

    @property
    def default(self):
        return self._param.default

    @property
    def has_default(self):
        return self._param.default is not inspect.Parameter.empty


def canonicalize_dtype(dtype):
    return _CANONICAL[str(dtype).split(".")[-1]]


def specialize_impl(arg, specialize_value=True, align=True):
    if arg is None:
        return ("constexpr", None)
    if isinstance(arg, bool):
        return ("u1", None)
    if isinstance(arg, int):
        key = ("D" if arg % 16 == 0 and align and INT_DIVISIBILITY else "") if specialize_value else None
        if arg == 1 and specialize_value:
            return ("constexpr", 1)
        if -(2**31) <= arg <= 2**31 - 1:
            return ("i32", key)
        if 2**63 <= arg <= 2**64 - 1:
            return ("u64", key)
        return ("i64", key)
    if isinstance(arg, float):
        return ("fp32", None)
    if hasattr(arg, "data_ptr"):
        key = ("D" if arg.data_ptr() % 16 == 0 and align else "") if specialize_value else None
        return ("*" + canonicalize_dtype(arg.dtype), key)
    if isinstance(arg, constexpr):
        return ("constexpr", arg)
    raise TypeError("Unsupported type: %s" % type(arg))


@dataclass
class JitFunctionInfo:
    module: object
    name: str
    jit_function: object


class CompiledKernel:
    def __init__(self, key):
        self.key = key


class JITFunction:
    def __init__(self, fn, do_not_specialize=None, do_not_specialize_on_alignment=None):
        self.fn = fn
        self.signature = inspect.signature(fn)
        self._fn_name = f"{fn.__module__}.{fn.__qualname__}"
        dns = do_not_specialize or []
        dnsa = do_not_specialize_on_alignment or []
        self.params = [KernelParam(i, p, i in dns or p.name in dns, i in dnsa or p.name in dnsa)
                       for i, p in enumerate(self.signature.parameters.values())]
        self.device_caches = collections.defaultdict(self.create_binder)
        self.compiled = []   # keys compiled, in order
        self.launches = []   # (grid, bound args) of real launches

    def create_binder(self):
        params = self.params
        signature = self.signature

        def binder(*args, **kwargs):
            names = [p.name for p in params]
            options = {k: v for k, v in kwargs.items() if k not in names}
            bound = signature.bind(*args, **{k: v for k, v in kwargs.items() if k in names})
            bound.apply_defaults()
            specialization = []
            for p in params:
                value = bound.arguments[p.name]
                if p.is_constexpr:
                    specialization.append(("constexpr", value))
                else:
                    specialization.append(specialize_impl(
                        value, not p.do_not_specialize, not p.do_not_specialize_on_alignment))
            return dict(bound.arguments), specialization, options

        return {}, {}, _driver.active.get_current_target(), None, binder

    def run(self, *args, grid, warmup, **kwargs):
        kwargs["debug"] = kwargs.get("debug", False)
        device = _driver.active.get_current_device()
        kernel_cache, _, _, _, binder = self.device_caches[device]
        bound_args, specialization, options = binder(*args, **kwargs)
        key = str(specialization) + str(options)
        kernel = kernel_cache.get(key)
        if kernel is None:
            signature = {p.name: s[0] for p, s in zip(self.params, specialization)}
            constants = {(i,): s[1] for i, s in enumerate(specialization) if s[0] == "constexpr"}
            attrs = {(i,): [["tt.divisibility", 16]] for i, s in enumerate(specialization)
                     if isinstance(s[1], str) and "D" in s[1]}
            hook = knobs.runtime.jit_cache_hook
            if hook is not None:
                repr_ = f"{self.fn.__qualname__}[num_warps=4]({', '.join(map(str, specialization))})"
                skip = hook(key=key, repr=repr_, fn=JitFunctionInfo(self.fn.__module__,
                                                                    self.fn.__qualname__, self),
                            compile={"key": key, "signature": signature, "device": device,
                                     "constants": constants, "configs": [attrs],
                                     "is_warmup": warmup},
                            is_manual_warmup=warmup, already_compiled=False)
                if skip:
                    return None
            kernel = kernel_cache[key] = CompiledKernel(key)
            self.compiled.append(key)
        if not warmup:
            self.launches.append((grid, bound_args))
        return kernel

    def warmup(self, *args, grid, **kwargs):
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


def jit(fn=None, *, do_not_specialize=None, do_not_specialize_on_alignment=None):
    def decorator(f):
        return JITFunction(f, do_not_specialize, do_not_specialize_on_alignment)
    return decorator(fn) if fn is not None else decorator


knobs = types.SimpleNamespace(runtime=types.SimpleNamespace(jit_cache_hook=None))
_driver = types.SimpleNamespace(active=_ActiveDriver())


def install(monkeypatch):
    """Puts this module in sys.modules as `triton` (and its submodules)."""
    global INT_DIVISIBILITY
    INT_DIVISIBILITY = True
    knobs.runtime.jit_cache_hook = None
    triton = types.ModuleType("triton")
    triton.jit = jit
    triton.knobs = knobs
    triton.__version__ = "3.fake"
    runtime = types.ModuleType("triton.runtime")
    runtime.driver = _driver
    runtime_jit = types.ModuleType("triton.runtime.jit")
    runtime_jit.JITFunction = JITFunction
    runtime.jit = runtime_jit
    language = types.ModuleType("triton.language")
    language.constexpr = constexpr
    triton.runtime = runtime
    triton.language = language
    for name, module in [("triton", triton), ("triton.runtime", runtime),
                         ("triton.runtime.jit", runtime_jit), ("triton.language", language)]:
        monkeypatch.setitem(sys.modules, name, module)
    return triton
