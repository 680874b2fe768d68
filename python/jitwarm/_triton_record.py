"""The monitor's record mode: a Triton compile after seal written as a warmup
manifest entry, so the next start warms that specialization too."""
from __future__ import annotations

from typing import Any

from . import IntSpec, scalar_specialization_rep
from ._triton_schema import constexpr_value, long_dtype


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return f'"{value}"'  # beyond TOML's integers, as the manifest takes them
    if isinstance(value, (int, float)):
        return repr(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def manifest_entry(name: str, compile: Any, description: str) -> str:
    """A manifest entry that warms the specialization Triton was asked to
    compile (record mode), named `name`, from the hook's compile info (Triton >= 3.2: a
    signature by name, constants and attributes by argument path). Anything
    it cannot read becomes a comment naming the compile."""
    try:
        signature = compile["signature"]
        constants = compile.get("constants") or {}
        attrs = (compile.get("configs") or [{}])[0]
        lines = ["[[kernel]]", f"name = {toml_value(name)}", "[kernel.params]"]
        for index, (param, ty) in enumerate(signature.items()):
            divisible = any(a[0] == "tt.divisibility" for a in attrs.get((index,), []))
            if ty == "constexpr":
                value = constexpr_value(constants[(index,)])
                if value is not None:
                    lines.append(f"{param} = {toml_value(value)}")
            elif ty.startswith("*"):
                dtype = long_dtype(ty.lstrip("*").lstrip("k"))
                if dtype is None:
                    raise ValueError(ty)
                lines.append(f'{param} = {{ dtype = "{dtype}", aligned = {toml_value(divisible)} }}')
            elif ty in ("i32", "i64", "u64"):
                rep = scalar_specialization_rep(IntSpec(ty, "div16" if divisible else "none"))
                lines.append(f"{param} = {toml_value(rep)}")
            elif ty.startswith(("fp", "bf")):
                lines.append(f"{param} = 0.0")
            else:
                raise ValueError(ty)
        return "\n".join(lines) + "\n"
    except Exception:  # noqa: BLE001  (an unknown layout: keep the compile's name)
        return f"# Triton compile after seal, not expressible as an entry: {description}\n"
