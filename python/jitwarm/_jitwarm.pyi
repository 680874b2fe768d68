"""Type stubs for jitwarm._jitwarm, the extension module (python/src)."""
from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, Tuple, Union
import os

from . import WarmupRequest

PathLike = Union[str, os.PathLike[str]]
DtypeLike = Any  # a name ("bfloat16", "bf16"), a NumPy dtype or scalar type, a torch dtype
MonitorMode = Literal["off", "warn", "error"]

abi_version: int


def dtype_name(dtype: DtypeLike) -> str: ...
def parse_target(target: str) -> str: ...
def dtype_short_name(dtype: DtypeLike) -> str: ...
def dtype_size(dtype: DtypeLike) -> int: ...
def current_launch_stream() -> Optional[int]: ...
def install_location() -> Dict[str, Any]: ...
def specialize_integer(value: int, do_not_specialize: bool = ...) -> IntSpec: ...
def scalar_specialization_rep(spec: IntSpec) -> int: ...
def manifest_requests(*, manifest: Optional[PathLike] = ...,
                      toml: Optional[str] = ...) -> List[WarmupRequest]: ...
def _enumerate_warmup_keys(schema: KernelSchema, request: WarmupRequest, target: str,
                           impl_name: str) -> List[CompileKey]: ...
def _warmup_inputs_for(schema: KernelSchema, key: CompileKey) -> List[Any]: ...
def _make_registration(runtime: Runtime, entries: List[Tuple[str, str, Callable[..., Any],
                                                             List[str], str]],
                       origin: str) -> Registration: ...


class WarmupTensor:
    def __init__(self, dtype: DtypeLike, shape: Sequence[int] = ...,
                 strides: Optional[Sequence[int]] = ..., aligned: bool = ...) -> None: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def strides(self) -> Optional[Tuple[int, ...]]: ...
    @property
    def aligned(self) -> bool: ...


class IntSpec:
    def __init__(self, type: Literal["i32", "i64", "u64"],
                 value_class: Literal["none", "one", "div16"]) -> None: ...
    @property
    def type(self) -> str: ...
    @property
    def value_class(self) -> str: ...


class ParamSpec:
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def dtype(self) -> Optional[str]: ...
    @property
    def alignment(self) -> Optional[str]: ...
    @property
    def stride_specs(self) -> List[IntSpec]: ...
    @property
    def int_spec(self) -> Optional[IntSpec]: ...
    @property
    def float_type(self) -> Optional[str]: ...
    @property
    def value(self) -> Union[int, float, bool, None]: ...


class CompileKey:
    def __init__(self, kernel_name: str, impl_name: str, target: str) -> None: ...
    @property
    def text(self) -> str: ...
    @property
    def kernel_name(self) -> str: ...
    @property
    def impl_name(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def params(self) -> List[ParamSpec]: ...
    @property
    def hash(self) -> str: ...
    @property
    def encoding(self) -> bytes: ...
    @property
    def config(self) -> Dict[str, int]: ...
    def with_config(self, config: Dict[str, int]) -> CompileKey: ...
    @staticmethod
    def decode(encoding: bytes) -> CompileKey: ...


class ParamDesc:
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def flags(self) -> int: ...
    @property
    def dtypes(self) -> List[str]: ...
    @property
    def rank(self) -> Optional[int]: ...
    @property
    def default(self) -> Union[int, float, bool, None]: ...
    @property
    def same_dtype_as(self) -> Optional[str]: ...
    @property
    def do_not_specialize(self) -> bool: ...
    @property
    def do_not_specialize_on_alignment(self) -> bool: ...
    @property
    def output(self) -> bool: ...


class KernelSchema:
    def __init__(self, name: str, params: List[Dict[str, Any]], summary: str = ...,
                 launch_rule: str = ..., origin: str = ...) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def short_name(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def launch_rule(self) -> str: ...
    @property
    def origin(self) -> str: ...
    @property
    def params(self) -> List[ParamDesc]: ...


class PluginLoadRecord:
    path: str
    loaded: bool
    rejection: Optional[str]
    detail: str
    plugin_name: str
    plugin_version: str
    abi_version: int
    kernels: List[str]
    schemas: List[str]
    platforms: List[str]


class LoadReport:
    searched_directories: List[str]
    records: List[PluginLoadRecord]
    @property
    def loaded_count(self) -> int: ...
    @property
    def rejected_count(self) -> int: ...
    def to_text(self) -> str: ...
    def to_json(self) -> str: ...


class ImplementationInfo:
    impl_name: str
    platform: str
    origin: str
    pending: bool


class PlatformExplanation:
    platform: str
    winner: ImplementationInfo
    replaced: List[ImplementationInfo]


class KernelExplanation:
    kernel_name: str
    schema_origin: str
    platforms: List[PlatformExplanation]
    def to_text(self) -> str: ...


class PlatformInfo:
    name: str
    origin: str
    can_compile: bool
    can_launch: bool
    detail: str
    device_count: int


class CacheStats:
    hits: int
    misses: int
    compiles: int
    disk_hits: int
    disk_writes: int
    disk_rejects: int
    compile_seconds: float
    entries: int
    remote_hits: int
    remote_misses: int
    remote_rejects: int
    remote_errors: int
    remote_writes: int


class CacheSettings:
    directory: str
    directory_source: str
    default_directory: bool
    system_directory: str
    max_bytes: int
    remote: str
    remote_source: str
    remote_timeout: float
    problem: str
    persistent: bool
    signing_key_id: str
    trusted_key_ids: List[str]
    remote_cache_mode: str


class CacheBundleEntry:
    key: str
    target: str
    bytes: int


class CacheBundleSummary:
    bundle: str
    cache_dir: str
    entries: int
    written: int
    present: int
    skipped_corrupt: int
    entry_bytes: int
    file_bytes: int
    sha256: str
    signer: str
    targets: Dict[str, int]
    manifest: List[CacheBundleEntry]


def resolve_cache_settings(*, cache_dir: Optional[PathLike] = ...,
                           no_cache_dir: Optional[bool] = ...,
                           system_cache_dir: Optional[PathLike] = ...,
                           cache_max_bytes: Optional[int] = ...,
                           remote_cache: Optional[str] = ...,
                           no_remote_cache: Optional[bool] = ...,
                           remote_timeout: Optional[float] = ...) -> CacheSettings: ...
class CacheEntryInfo:
    key: str
    kernel: str
    implementation: str
    target: str
    bytes: int
    system: bool


class CacheListing:
    cache_dir: str
    entries: List[CacheEntryInfo]
    @property
    def corrupt(self) -> List[Tuple[str, str]]: ...


class CacheBundleUse:
    name: str
    id: str
    imported: int
    entries: int
    entries_ever_hit: int


class CacheReport:
    cache_dir: str
    entries: int
    bytes: int
    system_entries: int
    system_bytes: int
    corrupt: int
    corrupt_files: List[str]
    removed: int
    removed_bytes: int
    bundles: List[CacheBundleUse]
    bundle_problems: List[str]
    @property
    def removed_by_target(self) -> Dict[str, int]: ...
    @property
    def signers(self) -> Dict[str, int]: ...
    @property
    def untrusted(self) -> List[Tuple[str, str]]: ...


def list_cache(targets: Sequence[str] = ..., *, cache_dir: Optional[PathLike] = ...,
               system_cache_dir: Optional[PathLike] = ...) -> CacheListing: ...
def cache_directory_stats(*, cache_dir: Optional[PathLike] = ...,
                          system_cache_dir: Optional[PathLike] = ...) -> CacheReport: ...
def verify_cache(*, cache_dir: Optional[PathLike] = ...,
                 trusted_keys: Union[PathLike, Sequence[PathLike], None] = ...) -> CacheReport: ...
def prune_cache(*, max_bytes: Optional[int] = ...,
                cache_dir: Optional[PathLike] = ...) -> CacheReport: ...
def clear_cache(targets: Sequence[str] = ..., *,
                cache_dir: Optional[PathLike] = ...) -> CacheReport: ...
def export_cache_bundle(path: PathLike, targets: Sequence[str] = ..., *,
                        cache_dir: Optional[PathLike] = ...,
                        system_cache_dir: Optional[PathLike] = ...,
                        signing_key: Optional[PathLike] = ...) -> CacheBundleSummary: ...
def import_cache_bundle(path: PathLike, *,
                        cache_dir: Optional[PathLike] = ...,
                        trusted_keys: Union[PathLike, Sequence[PathLike], None] = ...,
                        sha256: str = ...) -> CacheBundleSummary: ...


class CacheKeyPair:
    secret_key_file: str
    public_key_file: str
    public_key: str
    key_id: str


def cache_keygen(path: PathLike) -> CacheKeyPair: ...
def warmup_shard(plan: Sequence[CompileKey], shard: int, count: int) -> List[CompileKey]: ...


class MissFactor:
    name: str
    wanted: str
    found: str


class MissNeighbour:
    key: str
    target: str
    system: bool
    factors: List[MissFactor]


class MissExplanation:
    key: str
    would_hit: bool
    not_kept: str
    entries: int
    neighbours: List[MissNeighbour]
    def to_text(self) -> str: ...


class TuneTiming:
    @property
    def config(self) -> Dict[str, int]: ...
    seconds: float
    error: str


class TuneResult:
    key_text: str
    @property
    def key_hash(self) -> str: ...
    device_kind: str
    @property
    def best(self) -> Dict[str, int]: ...
    timings: List[TuneTiming]
    stored: bool
    def to_text(self) -> str: ...


class WarmupKeyResult:
    key_text: str
    key_hash: str
    compiled: bool
    failed: bool
    error: str


class WarmupResult:
    keys: List[WarmupKeyResult]
    compiled: int
    cached: int
    failed: int
    seconds: float
    remote_answered: int
    remote_failed: int


class Registration:
    def release(self) -> None: ...
    @property
    def active(self) -> bool: ...
    def __enter__(self) -> Registration: ...
    def __exit__(self, *exc: Any) -> bool: ...


class Kernel:
    """Call it to launch: arguments by position (schema order) or by name."""
    def __call__(self, *args: Any, **kwargs: Any) -> None: ...
    def key_for(self, *args: Any, **kwargs: Any) -> CompileKey: ...
    def tune(self, *args: Any, **kwargs: Any) -> TuneResult: ...
    def on(self, platform: Optional[str] = ..., device: Optional[int] = ...,
           stream: Any = ...) -> Kernel: ...
    @property
    def name(self) -> str: ...
    @property
    def schema(self) -> KernelSchema: ...
    @property
    def platform(self) -> Optional[str]: ...
    @property
    def device(self) -> Optional[int]: ...
    @property
    def stream(self) -> Optional[int]: ...


class Runtime:
    def __init__(self, *, cache_dir: Optional[PathLike] = ..., jit_monitor: Optional[str] = ...,
                 jit_record_path: Optional[PathLike] = ...,
                 log: Optional[Callable[[str, str], None]] = ...,
                 no_cache_dir: Optional[bool] = ..., system_cache_dir: Optional[PathLike] = ...,
                 cache_max_bytes: Optional[int] = ..., remote_cache: Optional[str] = ...,
                 no_remote_cache: Optional[bool] = ...,
                 remote_timeout: Optional[float] = ...,
                 signing_key: Optional[PathLike] = ...,
                 trusted_keys: Union[PathLike, Sequence[PathLike], None] = ...,
                 remote_cache_mode: Optional[str] = ...) -> None: ...
    def load_plugins(self, search_path: Union[str, Sequence[PathLike], None] = ...,
                     strict: bool = ..., isolate: bool = ...,
                     probe_timeout: Optional[float] = ...) -> LoadReport: ...
    def load_plugin(self, path: PathLike, strict: bool = ...) -> PluginLoadRecord: ...
    @property
    def load_history(self) -> List[PluginLoadRecord]: ...
    def _kernel(self, name: str, /) -> Kernel: ...
    def kernel_names(self) -> List[str]: ...
    def schema(self, name: str) -> KernelSchema: ...
    def implementations(self, name: str) -> List[ImplementationInfo]: ...
    def explain(self, name: str) -> KernelExplanation: ...
    def platforms(self) -> List[PlatformInfo]: ...
    def default_platform(self) -> str: ...
    def cpu_fallback_reason(self) -> str: ...
    def target_for(self, platform: str, device: int = ...) -> str: ...
    def cache_stats(self) -> CacheStats: ...
    def metrics_text(self) -> str: ...
    @property
    def cache_settings(self) -> CacheSettings: ...
    def is_cached(self, key: CompileKey) -> bool: ...
    def explain_miss(self, key: CompileKey) -> MissExplanation: ...
    def tune_candidates(self, key: CompileKey) -> List[Dict[str, int]]: ...
    def tune_result(self, key: CompileKey, device_kind: str) -> Optional[TuneResult]: ...
    def device_kind(self, platform: str = ..., device: int = ...) -> str: ...
    def store_external_entry(self, key: CompileKey, fingerprint: str, binary: bytes,
                             format: str, entry_point: str = ...) -> bool: ...
    def load_external_entry(self, key: CompileKey, fingerprint: str
                            ) -> Optional[Tuple[bytes, str, str]]: ...
    def warmup_plan(self, requests: Union[WarmupRequest, Sequence[WarmupRequest], None] = ..., *,
                    manifest: Optional[PathLike] = ..., toml: Optional[str] = ...,
                    platform: Optional[str] = ..., target: Optional[str] = ...,
                    device_kind: Optional[str] = ...) -> List[CompileKey]: ...
    def _warmup(self, requests: Any, manifest: Any, toml: Any, platform: Optional[str],
                target: Optional[str], device_kind: Optional[str], jobs: int, parallel: str,
                batch_size: int,
                progress: Optional[Callable[[int, int, str], None]]) -> WarmupResult: ...
    def _warmup_keys(self, keys: List[CompileKey], device_kind: Optional[str], jobs: int,
                     parallel: str, batch_size: int,
                     progress: Optional[Callable[[int, int, str], None]]) -> WarmupResult: ...
    def seal(self) -> None: ...
    @property
    def sealed(self) -> bool: ...
    @property
    def jit_monitor(self) -> str: ...
    @jit_monitor.setter
    def jit_monitor(self, mode: str) -> None: ...
    def _set_jit_record_path(self, path: Optional[PathLike]) -> None: ...
