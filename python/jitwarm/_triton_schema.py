"""A Triton kernel's parameters in jitwarm's terms: their kinds, from
Triton's annotations or the warmup requests' values; storage-free arguments
that reproduce a key (mock tensors, jitwarm's representatives); Triton's
names for dtypes, which are the core's short names (bf16, fp32, i64, i1)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from . import InvalidArgumentError, WarmupRequest, _jitwarm


def long_dtype(short: str) -> Optional[str]:
    """jitwarm's name of a Triton element type ("bf16" -> "bfloat16"), None
    for one jitwarm has no dtype for (fp8 and the like)."""
    try:
        return _jitwarm.dtype_name(short)
    except InvalidArgumentError:
        return None


def short_dtype(name: str) -> str:
    """Triton's name of a jitwarm dtype ("bfloat16" -> "bf16")."""
    return _jitwarm.dtype_short_name(name)


def kind_of_annotation(annotation: str) -> Optional[Dict[str, Any]]:
    """A parameter's kind from Triton's normalized annotation ('*fp16', 'i32',
    'fp32', 'constexpr'), or None when it has none."""
    if not annotation:
        return None
    if "constexpr" in annotation:
        return {"kind": "constexpr"}
    if annotation.startswith("*"):
        element = long_dtype(annotation.lstrip("*").lstrip("k"))
        return {"kind": "tensor", "dtypes": [element]} if element else {"kind": "tensor"}
    if annotation in ("i32", "i64", "u64", "i8", "i16", "u8", "u16", "u32"):
        return {"kind": "int"}
    if annotation in ("fp16", "bf16", "fp32"):
        return {"kind": "float"}
    if annotation == "fp64":
        return {"kind": "float", "float64": True}
    return None


def kind_of_value(value: Any) -> Optional[str]:
    """What a warmup axis value says about its parameter's kind."""
    if isinstance(value, (list, tuple)):
        kinds = {kind_of_value(v) for v in value} - {None}
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


def request_values(request: WarmupRequest, name: str) -> List[Any]:
    values = []
    if name in request.params:
        values.append(request.params[name])
    for group in request.zip:
        if name in group:
            values.append(list(group[name]))
    return values


class MockTensor:
    """A storage-free tensor for Triton's warmup: a dtype and a data pointer
    that is 16-byte aligned or not (one element off), never dereferenced."""

    __slots__ = ("dtype", "_ptr")

    def __init__(self, dtype_name: str, aligned: bool) -> None:
        self.dtype = triton_dtype(dtype_name)
        self._ptr = 0x10000 if aligned else 0x10000 + _jitwarm.dtype_size(dtype_name)

    def data_ptr(self) -> int:
        return self._ptr

    def ptr_range(self) -> int:  # Triton's MockTensor has it too
        return 0

    def __repr__(self) -> str:
        return f"MockTensor({self.dtype}, ptr={self._ptr:#x})"


class DtypeName:
    """A dtype Triton's canonicalize_dtype reads (str() ends in the name) when
    torch is not there to give a real one."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return "jitwarm." + self.name

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DtypeName) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


def triton_dtype(name: str) -> Any:
    try:
        import torch  # noqa: WPS433
        return getattr(torch, name)
    except (ImportError, AttributeError):
        return DtypeName(name)


def constexpr_value(value: Any) -> Any:
    return getattr(value, "value", value)
