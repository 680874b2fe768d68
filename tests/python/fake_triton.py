"""A stand-in for the parts of Triton 3.x that jitwarm.triton uses (Triton is
not installed on the CI machine). It follows python/triton/runtime/jit.py of
Triton 3.4+: JITFunction.params (KernelParam: name, is_constexpr,
do_not_specialize, do_not_specialize_on_alignment, annotation),
device_caches[device] = (kernel_cache, kernel_key_cache, target, backend,
binder), the binder's (bound_args, specialization, options), the in-memory
key str(specialization) + str(options) (the options as passed), `warmup` as
run(warmup=True) with no launch, and knobs.runtime.jit_cache_hook called
before each compile with key, repr, fn, compile (signature by name,
constants and attributes by argument path, the options) and
is_manual_warmup; a truthy answer skips the compile.

Specialization is Triton's default (create_specialize_impl with the base
backend's get_int_specialization / get_tensor_specialization): ints are i32,
u64 or i64, the value 1 a constexpr, "D" for a multiple of 16; a tensor is
"*" + its canonical dtype, "D" for a 16-byte aligned data_ptr(); floats fp32.
INT_DIVISIBILITY = False makes a Triton that never marks integers "D" (for
the bridge's mismatch check).

Below the in-memory cache, as triton/compiler/compiler.py and
triton/runtime/cache.py do: `compile(src, target, options)` parses the
options (the backend's defaults filled in), keys the compile by the source,
the backend and the parsed options, asks the cache manager
(knobs.cache.manager_class, TRITON_CACHE_MANAGER, else FileCacheManager in
knobs.cache.dir) for the group `<name>.json`, and on a miss "compiles": it
puts <name>.ttir, <name>.cubin and <name>.json, then the group. `compiles`
and `loads` record which happened. triton.autotune / triton.Config follow
runtime/autotuner.py: a tuning key of the `key` arguments and the tensors'
dtypes, every config benchmarked on a new key (`benchmarks`), and with
knobs.autotuning.cache (or cache_results) the timings read from and written
to the cache manager as <fn>.autotune.json. `hide_gpu()` makes a machine
whose driver has no device (for compile-only warmup for a target).

Native modules follow triton/runtime/build.py and the nvidia backend's
driver.py: `driver.active` makes the backend's driver (here: at the first
launch), and making it builds the driver's utilities (cuda_utils) through
compile_module_from_src, which keys a module by its C source, looks it up in
the cache manager as <name><EXT_SUFFIX> and on a miss "builds" it with the C
compiler (`builds`) and puts it, then loads it (`module_loads`; LOADABLE =
False is a machine without the driver library, where loading fails after the
put). A compiled kernel's first real launch makes its launcher
(driver.launcher_cls(src, metadata)): one module per argument-type
signature. Asking `driver.active` again while it is being made recurses, as
Triton's lazy proxy does.
"""
import base64
import builtins
import collections
import hashlib
import importlib
import inspect
import json
import os
import sys
import sysconfig
import tempfile
import types
import uuid
from dataclasses import dataclass, fields
from typing import Optional

INT_DIVISIBILITY = True

_CANONICAL = {"bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
              "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
              "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}

# What happened below the in-memory cache, since install(): (kernel name,
# Triton's cache key) per compile and per load from the cache manager, and
# the autotuner's benchmark runs (one per new tuning key).
compiles = []
loads = []
benchmarks = []
builds = []
module_loads = []
LOADABLE = True


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
    hidden = False
    made = None      # the backend's driver, once made
    making = False

    def _device(self):
        if self.hidden:
            raise RuntimeError("0 active drivers ([]). There should only be one.")
        if self.making:
            raise RecursionError("maximum recursion depth exceeded (driver.active)")

    @property
    def launcher_cls(self):
        self._device()
        if self.made is None:
            self.making = True
            try:
                self.made = CudaDriver()
            finally:
                self.making = False
        return self.made.launcher_cls

    def get_current_device(self):
        self._device()
        return 0

    def get_current_target(self):
        self._device()
        return GPUTarget("cuda", 90, 32)

    def get_current_stream(self, device):
        return 0


def hide_gpu():
    """CUDA_VISIBLE_DEVICES= : no device for Triton's driver, nor for torch."""
    _driver.active.hidden = True
    torch = sys.modules.get("torch")
    if getattr(torch, "cuda", None) is not None:
        torch.cuda.available = False


def show_gpu():
    """The GPU back (a node that has one)."""
    _driver.active.hidden = False
    torch = sys.modules.get("torch")
    if getattr(torch, "cuda", None) is not None:
        torch.cuda.available = True


# ---------------------------------------------------------------------------
# The backend: options with defaults, attributes
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CUDAOptions:
    num_warps: int = 4
    num_ctas: int = 1
    num_stages: int = 3
    maxnreg: Optional[int] = None
    enable_fp_fusion: bool = True
    launch_cooperative_grid: bool = False
    debug: bool = False
    arch: str = ""

    def hash(self):
        return hashlib.sha256(repr(sorted(self.__dict__.items())).encode()).hexdigest()


class CUDABackend:
    def __init__(self, target):
        self.target = target

    @staticmethod
    def supports_target(target):
        return target.backend == "cuda"

    def parse_options(self, options):
        known = {f.name for f in fields(CUDAOptions)}
        args = {k: v for k, v in options.items() if k in known and v is not None}
        args.setdefault("arch", f"sm{self.target.arch}")
        return CUDAOptions(**args)

    def parse_attr(self, desc):
        return [["tt.divisibility", 16]] if "D" in desc else []

    def hash(self):
        return f"fake-cuda-{self.target.arch}"


def make_backend(target):
    return CUDABackend(target)


# ---------------------------------------------------------------------------
# Parameters and specialization
# ---------------------------------------------------------------------------
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


def create_function_from_signature(signature, params, backend):
    """The binder: (bound arguments, specialization, options as passed)."""

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

    return binder


# ---------------------------------------------------------------------------
# The cache manager (triton/runtime/cache.py)
# ---------------------------------------------------------------------------
class CacheManager:
    def __init__(self, key, override=False, dump=False):
        pass


class FileCacheManager(CacheManager):
    def __init__(self, key, override=False, dump=False):
        self.key = key
        base = os.environ.get("TRITON_OVERRIDE_DIR" if override else "TRITON_DUMP_DIR" if dump
                              else "TRITON_CACHE_DIR") or knobs.cache.dir
        self.cache_dir = os.path.join(base, key)
        os.makedirs(self.cache_dir, exist_ok=True)

    def _make_path(self, filename):
        return os.path.join(self.cache_dir, filename)

    def has_file(self, filename):
        return os.path.exists(self._make_path(filename))

    def get_file(self, filename):
        return self._make_path(filename) if self.has_file(filename) else None

    def get_group(self, filename):
        path = self.get_file(f"__grp__{filename}")
        if path is None:
            return None
        with open(path) as f:
            child_paths = json.load(f).get("child_paths")
        if child_paths is None:
            return None
        return {c: p for c, p in child_paths.items() if os.path.exists(p)}

    def put_group(self, filename, group):
        return self.put(json.dumps({"child_paths": group}), f"__grp__{filename}", binary=False)

    def put(self, data, filename, binary=True):
        binary = isinstance(data, bytes)
        if not binary:
            data = str(data)
        path = self._make_path(filename)
        temp = f"{path}.tmp.{os.getpid()}.{uuid.uuid4()}"
        with open(temp, "wb" if binary else "w") as f:
            f.write(data)
        os.replace(temp, path)
        return path


def _base32(key):
    return base64.b32encode(bytes.fromhex(key)).decode("utf-8").rstrip("=")


def _manager_class():
    if knobs.cache.manager_class is not None:
        return knobs.cache.manager_class
    named = os.environ.get("TRITON_CACHE_MANAGER")
    if named:
        module, name = named.split(":")
        return getattr(importlib.import_module(module), name)
    return FileCacheManager


def get_cache_manager(key):
    return _manager_class()(_base32(key))


# ---------------------------------------------------------------------------
# compile (triton/compiler/compiler.py)
# ---------------------------------------------------------------------------
class ASTSource:
    def __init__(self, fn, signature, constexprs=None, attrs=None):
        self.fn = fn
        self.name = fn.__name__
        self.signature = signature
        self.constexprs = constexprs or {}
        self.attrs = attrs or {}

    def hash(self):
        text = (f"{self.fn.cache_key}-{sorted(self.attrs.items())}-{sorted(self.signature.items())}"
                f"-{sorted(self.constexprs.items())}")
        return hashlib.sha256(text.encode()).hexdigest()


def cubin_for(cache_key):
    """The binary a compile of this Triton key makes."""
    return b"\x7fELF-fake-cubin-" + cache_key.encode()


class CompiledKernel:
    def __init__(self, src, metadata_group, cache_key):
        self.hash = cache_key
        self.name = src.name
        self.src = src
        self.launcher = None
        with open(metadata_group[f"{src.name}.json"]) as f:
            self.metadata = json.load(f)
        with open(metadata_group[f"{src.name}.cubin"], "rb") as f:
            self.cubin = f.read()
        if self.cubin != cubin_for(cache_key):
            raise RuntimeError(f"cubin of {src.name} does not belong to {cache_key}")

    def _init_handles(self):
        if self.launcher is None:
            self.launcher = _driver.active.launcher_cls(self.src, self.metadata)


# ---------------------------------------------------------------------------
# Native modules (triton/runtime/build.py) and the driver (backends/nvidia)
# ---------------------------------------------------------------------------
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def _module_bytes(src):
    return b"\x7fELF-fake-module:" + src.encode()


def compile_module_from_src(src, name, library_dirs=None, include_dirs=None, libraries=None,
                            ccflags=None):
    key = hashlib.sha256((src + "x86_64,Linux,64bit,ELF").encode()).hexdigest()
    cache = get_cache_manager(key)
    filename = f"{name}{EXT_SUFFIX}"
    path = cache.get_file(filename)
    if path is not None:
        with open(path, "rb") as f:
            if f.read() != _module_bytes(src):
                path = None  # Triton: the module does not load, it builds it again
    if path is None:
        builds.append((name, src))
        path = cache.put(_module_bytes(src), filename, binary=True)
    if not LOADABLE:
        raise ImportError("libcuda.so.1: cannot open shared object file")
    module_loads.append(name)
    return types.SimpleNamespace(name=name, path=path)


class CudaUtils:
    def __init__(self):
        self.module = compile_module_from_src("// driver.c: load_binary, ...", "cuda_utils")


def make_launcher(signature):
    """A launcher's C source: the argument types (a pointer is a pointer,
    whatever it points to; a constexpr is no argument)."""
    kinds = ["ptr" if t.startswith("*") else t for t in signature.values() if t != "constexpr"]
    return f"// launcher ({', '.join(kinds)})"


class CudaLauncher:
    def __init__(self, src, metadata):
        self.module = compile_module_from_src(make_launcher(src.signature), "__triton_launcher")


class CudaDriver:
    def __init__(self):
        self.utils = CudaUtils()
        self.launcher_cls = CudaLauncher


def compile(src, target=None, options=None):  # noqa: A001  (Triton's name)
    if target is None:
        target = _driver.active.get_current_target()
    backend = make_backend(target)
    options = backend.parse_options(dict(options or {}))
    key = f"fake-triton-3-{src.hash()}-{backend.hash()}-{options.hash()}"
    cache_key = hashlib.sha256(key.encode()).hexdigest()
    manager = get_cache_manager(cache_key)
    metadata_filename = f"{src.name}.json"
    group = manager.get_group(metadata_filename) or {}
    if group.get(metadata_filename) is not None:
        loads.append((src.name, cache_key))
        return CompiledKernel(src, group, cache_key)
    compiles.append((src.name, cache_key))
    group = {f"{src.name}.ttir": manager.put(f"// ttir of {src.name} {cache_key}\n",
                                             f"{src.name}.ttir"),
             f"{src.name}.cubin": manager.put(cubin_for(cache_key), f"{src.name}.cubin")}
    metadata = {"name": src.name, "hash": cache_key, "target": [target.backend, target.arch],
                **options.__dict__}
    group[metadata_filename] = manager.put(json.dumps(metadata), metadata_filename, binary=False)
    manager.put_group(metadata_filename, group)
    return CompiledKernel(src, group, cache_key)


# ---------------------------------------------------------------------------
# JITFunction (triton/runtime/jit.py)
# ---------------------------------------------------------------------------
@dataclass
class JitFunctionInfo:
    module: object
    name: str
    jit_function: object


class JITFunction:
    def __init__(self, fn, do_not_specialize=None, do_not_specialize_on_alignment=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.signature = inspect.signature(fn)
        self._fn_name = f"{fn.__module__}.{fn.__qualname__}"
        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            source = self._fn_name
        self.cache_key = hashlib.sha256((self._fn_name + source).encode()).hexdigest()
        dns = do_not_specialize or []
        dnsa = do_not_specialize_on_alignment or []
        self.params = [KernelParam(i, p, i in dns or p.name in dns, i in dnsa or p.name in dnsa)
                       for i, p in enumerate(self.signature.parameters.values())]
        self.arg_names = [p.name for p in self.params]
        self.device_caches = collections.defaultdict(self.create_binder)
        self.compiled = []   # in-memory keys that went to compile(), in order
        self.launches = []   # (grid, bound args) of real launches

    def create_binder(self):
        target = _driver.active.get_current_target()
        backend = make_backend(target)
        binder = create_function_from_signature(self.signature, self.params, backend)
        return {}, {}, target, backend, binder

    def _pack_args(self, backend, kwargs, bound_args, specialization, options):
        options = backend.parse_options(kwargs)
        sigvals = [s[0] for s in specialization]
        signature = {p.name: v for p, v in zip(self.params, sigvals)}
        values = list(bound_args.values())
        constexprs = {(i,): values[i] for i, s in enumerate(specialization)
                      if s[0] == "constexpr"}
        attrs = {(i,): backend.parse_attr(s[1]) for i, s in enumerate(specialization)
                 if isinstance(s[1], str)}
        return options, signature, constexprs, attrs

    def run(self, *args, grid, warmup, **kwargs):
        kwargs["debug"] = kwargs.get("debug", False)
        device = _driver.active.get_current_device()
        kernel_cache, _, target, backend, binder = self.device_caches[device]
        bound_args, specialization, options = binder(*args, **kwargs)
        key = str(specialization) + str(options)
        kernel = kernel_cache.get(key)
        if kernel is None:
            packed, signature, constexprs, attrs = self._pack_args(
                backend, kwargs, bound_args, specialization, options)
            hook = knobs.runtime.jit_cache_hook
            if hook is not None:
                repr_ = f"{self.fn.__qualname__}[num_warps={packed.num_warps}]" \
                        f"({', '.join(map(str, specialization))})"
                info = {"key": key, "signature": signature, "device": device,
                        "constants": constexprs, "num_warps": packed.num_warps,
                        "num_ctas": packed.num_ctas, "num_stages": packed.num_stages,
                        "enable_fp_fusion": packed.enable_fp_fusion,
                        "launch_cooperative_grid": packed.launch_cooperative_grid,
                        "configs": [attrs], "is_warmup": warmup}
                skip = hook(key=key, repr=repr_, fn=JitFunctionInfo(self.fn.__module__,
                                                                    self.fn.__qualname__, self),
                            compile=info, is_manual_warmup=warmup, already_compiled=False)
                if skip:
                    return None
            kernel = compile(ASTSource(self, signature, constexprs, attrs), target=target,
                             options=packed.__dict__)
            kernel_cache[key] = kernel
            self.compiled.append(key)
        if not warmup:
            kernel._init_handles()
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


# ---------------------------------------------------------------------------
# The autotuner (triton/runtime/autotuner.py)
# ---------------------------------------------------------------------------
class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None,
                 pre_hook=None):
        self.kwargs = kwargs
        self.num_warps = num_warps
        self.num_ctas = num_ctas
        self.num_stages = num_stages
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook

    def all_kwargs(self):
        return {**self.kwargs, **{k: v for k, v in (
            ("num_warps", self.num_warps), ("num_ctas", self.num_ctas),
            ("num_stages", self.num_stages), ("maxnreg", self.maxnreg)) if v is not None}}

    def __hash__(self):
        return hash((*self.all_kwargs().items(), self.pre_hook))

    def __eq__(self, other):
        return isinstance(other, Config) and self.all_kwargs() == other.all_kwargs()

    def __str__(self):
        return ", ".join(f"{k}: {v}" for k, v in self.all_kwargs().items())


class Autotuner:
    def __init__(self, fn, arg_names, configs, key, cache_results=False):
        self.fn = fn
        self.arg_names = arg_names
        self.configs = configs
        self.keys = key
        # Read once, here, as Triton does.
        self.cache_results = cache_results or knobs.autotuning.cache
        self.cache = {}
        self.configs_timings = None

    def _tuning_key(self, args, kwargs):
        named = {**dict(zip(self.arg_names, args)), **kwargs}
        key = [named[k] for k in self.keys if k in named]
        key += [str(a.dtype) for a in named.values() if hasattr(a, "dtype")]
        return tuple(key)

    def check_disk_cache(self, tuning_key, configs, bench_fn):
        backend = make_backend(_driver.active.get_current_target())
        parts = [self.fn.cache_key, backend.hash(), str(tuning_key)] + [str(c) for c in configs]
        cache = get_cache_manager(hashlib.sha256("-".join(parts).encode()).hexdigest())
        file_name = f"{self.fn.__name__[:150]}.autotune.json"
        path = cache.get_file(file_name)
        if path:
            with open(path) as cached:
                timings = json.load(cached)["configs_timings"]
            timings = {Config(**config): timing for config, timing in timings}
            self.cache[tuning_key] = builtins.min(timings, key=timings.get)
            self.configs_timings = timings
            return True
        bench_fn()
        cache.put(json.dumps({"key": list(tuning_key), "configs_timings": [
            (config.__dict__, timing) for config, timing in self.configs_timings.items()]}),
            file_name, binary=False)
        return False

    def run(self, *args, grid, warmup=False, **kwargs):
        tuning_key = self._tuning_key(args, kwargs)
        if tuning_key not in self.cache:
            def bench():
                benchmarks.append((self.fn.__name__, tuning_key))
                timings = {}
                for index, config in enumerate(self.configs):
                    self.fn.run(*args, grid=grid, warmup=False, **kwargs, **config.all_kwargs())
                    timings[config] = 1.0 + len(self.configs) - index  # the last is fastest
                self.configs_timings = timings
                self.cache[tuning_key] = builtins.min(timings, key=timings.get)

            if self.cache_results:
                self.check_disk_cache(tuning_key, self.configs, bench)
            else:
                bench()
        config = self.cache[tuning_key]
        return self.fn.run(*args, grid=grid, warmup=warmup, **kwargs, **config.all_kwargs())

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)


def autotune(configs, key, cache_results=False):
    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, cache_results)
    return decorator


knobs = types.SimpleNamespace(
    runtime=types.SimpleNamespace(jit_cache_hook=None, debug=False),
    cache=types.SimpleNamespace(manager_class=None, dir=None),
    autotuning=types.SimpleNamespace(cache=False))
_driver = types.SimpleNamespace(active=_ActiveDriver())


def install(monkeypatch, cache_dir=None):
    """Puts this module in sys.modules as `triton` (and its submodules), with
    an empty file cache in cache_dir (a fresh temporary directory if None)."""
    global INT_DIVISIBILITY
    INT_DIVISIBILITY = True
    knobs.runtime.jit_cache_hook = None
    knobs.runtime.debug = False
    knobs.cache.manager_class = None
    knobs.cache.dir = str(cache_dir) if cache_dir is not None else tempfile.mkdtemp()
    knobs.autotuning.cache = False
    _driver.active.hidden = False
    _driver.active.made = None
    global LOADABLE
    LOADABLE = True
    for name in ("TRITON_CACHE_MANAGER", "TRITON_CACHE_AUTOTUNING", "TRITON_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    del compiles[:], loads[:], benchmarks[:], builds[:], module_loads[:]
    this = sys.modules[__name__]

    def module(name, **attrs):
        made = types.ModuleType(name)
        made.__dict__.update(attrs)
        return made

    backends_compiler = module("triton.backends.compiler", GPUTarget=GPUTarget)
    compiler_compiler = module("triton.compiler.compiler", compile=compile, make_backend=make_backend,
                               ASTSource=ASTSource, CompiledKernel=CompiledKernel)
    compiler = module("triton.compiler", compile=compile, ASTSource=ASTSource,
                      CompiledKernel=CompiledKernel, make_backend=make_backend,
                      compiler=compiler_compiler)
    runtime_jit = module("triton.runtime.jit", JITFunction=JITFunction,
                         create_function_from_signature=create_function_from_signature)
    runtime_cache = module("triton.runtime.cache", CacheManager=CacheManager,
                           FileCacheManager=FileCacheManager, get_cache_manager=get_cache_manager)
    runtime_autotuner = module("triton.runtime.autotuner", Autotuner=Autotuner, Config=Config,
                               autotune=autotune)
    runtime = module("triton.runtime", driver=_driver, jit=runtime_jit, cache=runtime_cache,
                     autotuner=runtime_autotuner)
    language = module("triton.language", constexpr=constexpr)
    runtime_build = module("triton.runtime.build", compile_module_from_src=compile_module_from_src)
    runtime.build = runtime_build
    backends = module("triton.backends", compiler=backends_compiler, backends={
        "nvidia": types.SimpleNamespace(compiler=CUDABackend, driver=CudaDriver)})
    triton = module("triton", jit=jit, knobs=knobs, __version__="3.fake", runtime=runtime,
                    language=language, compiler=compiler, backends=backends, compile=compile,
                    autotune=autotune, Config=Config, fake=this)
    for made in (triton, runtime, runtime_jit, runtime_cache, runtime_autotuner, runtime_build,
                 language, compiler, compiler_compiler, backends, backends_compiler):
        monkeypatch.setitem(sys.modules, made.__name__, made)
    return triton
