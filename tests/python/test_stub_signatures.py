"""The type stubs (python/jitwarm/_jitwarm.pyi) against the extension, by
signature: every function and method the stub declares takes the parameters
the extension's takes, with the same names, kinds (positional, keyword-only,
*args, **kwargs) and defaults present, and is a method, a static method or a
property where the extension's is. test_package.py checks that the stub
names everything; this checks that what it says of each is true.

The extension's signatures are read from the first line of each __doc__,
which pybind11 writes as `name(self: T, a: int, *, b: str = 'x') -> R` (the
Kernel type, a plain CPython type, writes `name(a=None) -> R`). pybind11
names a parameter `argN` when the binding gave it no py::arg: such a
parameter cannot be passed by keyword, so the stub declares it
positional-only (before `/`), under any name."""
import ast
import inspect
import re
from dataclasses import dataclass

import pytest
from conftest import stub_tree

import jitwarm
from jitwarm import _jitwarm

POSITIONAL, POSITIONAL_ONLY, KEYWORD_ONLY, VAR_POSITIONAL, VAR_KEYWORD = (
    "positional", "positional-only", "keyword-only", "*args", "**kwargs")


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    has_default: bool

    def __str__(self):
        return f"{self.name} ({self.kind}{', default' if self.has_default else ''})"


def split_top_level(text):
    """`text` split at the commas outside brackets and quotes."""
    parts, depth, quote, current = [], 0, None, ""
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def parameter_list(signature):
    """The text between the parentheses of `name(...) -> R`."""
    start = signature.index("(")
    depth = 0
    for i in range(start, len(signature)):
        depth += {"(": 1, ")": -1}.get(signature[i], 0)
        if depth == 0:
            return signature[start + 1:i]
    raise ValueError(f"unbalanced signature: {signature}")


def extension_params(doc, bound):
    """The parameters of a signature line as the extension writes it, less
    `self` for a method (`bound`; the Kernel type's methods do not write
    it)."""
    params, kind = [], POSITIONAL
    for part in split_top_level(parameter_list(doc.splitlines()[0])):
        if part == "*":
            kind = KEYWORD_ONLY
        elif part == "/":
            params = [Param(p.name, POSITIONAL_ONLY, p.has_default) for p in params]
        elif part.startswith("**"):
            params.append(Param("**", VAR_KEYWORD, False))
        elif part.startswith("*"):
            params.append(Param("*", VAR_POSITIONAL, False))
            kind = KEYWORD_ONLY
        else:
            name = re.split(r"[:=]", part, maxsplit=1)[0].strip()
            unnamed = re.fullmatch(r"arg\d+", name) is not None
            params.append(Param("" if unnamed else name,
                                POSITIONAL_ONLY if unnamed else kind, "=" in part))
    if bound and params and params[0].name in ("self", ""):
        params = params[1:]
    return params


def stub_params(node, bound):
    """The parameters of a stub's `def`, less `self` for a method."""
    a = node.args
    positional = a.posonlyargs + a.args
    defaults = [False] * (len(positional) - len(a.defaults)) + [True] * len(a.defaults)
    params = [Param("" if i < len(a.posonlyargs) else arg.arg,
                    POSITIONAL_ONLY if i < len(a.posonlyargs) else POSITIONAL, d)
              for i, (arg, d) in enumerate(zip(positional, defaults))]
    if bound:
        params = params[1:]
    if a.vararg:
        params.append(Param("*", VAR_POSITIONAL, False))
    params += [Param(arg.arg, KEYWORD_ONLY, d is not None)
               for arg, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        params.append(Param("**", VAR_KEYWORD, False))
    return params


def decorators(node):
    return {d.id if isinstance(d, ast.Name) else ast.unparse(d) for d in node.decorator_list}


def stub_functions():
    """(qualified name, the extension's object or None, the stub's node, the
    owning stub class or None) for every `def` of the stub."""
    out = []
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            out.append((node.name, getattr(_jitwarm, node.name, None), node, None))
        elif isinstance(node, ast.ClassDef):
            cls = getattr(_jitwarm, node.name, None)
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    attr = None if cls is None else inspect.getattr_static(cls, item.name, None)
                    out.append((f"{node.name}.{item.name}", attr, item, node))
    return out


def signature_line(obj):
    """The extension's signature line of a function, method or static
    method, or None where it has none to compare (a slot wrapper such as a
    default __init__)."""
    func = obj.__func__ if isinstance(obj, staticmethod) else obj
    text = getattr(func, "__text_signature__", None)
    if text:  # a slot of the Kernel type: ($self, /, *args, **kwargs)
        return "f" + text.replace("$self", "self")
    doc = func.__doc__ or ""
    first = doc.splitlines()[0] if doc else ""
    return first if re.match(r"^\w+\(", first) else None


FUNCTIONS = stub_functions()


@pytest.mark.parametrize("name,obj,node,owner", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_given_a_function_of_the_stub_then_the_extension_has_it_with_those_parameters(
        name, obj, node, owner):
    assert obj is not None, f"the stub declares {name}, which the extension lacks"
    is_property = "property" in decorators(node) or any(
        d.endswith(".setter") for d in decorators(node))
    if is_property:
        assert isinstance(obj, property) or type(obj).__name__ == "getset_descriptor", (
            f"{name} is a property in the stub, not in the extension")
        return
    assert not isinstance(obj, property), f"{name} is a property in the extension"
    is_static = isinstance(obj, staticmethod)
    assert is_static == ("staticmethod" in decorators(node)), (
        f"{name}: static in {'the extension' if is_static else 'the stub'} only")
    line = signature_line(obj)
    if line is None:
        pytest.skip(f"{name}: the extension writes no signature")
    bound = owner is not None and not is_static
    wanted = extension_params(line, bound)
    declared = stub_params(node, bound)
    assert declared == wanted, (
        f"{name}: the stub declares ({', '.join(map(str, declared))}); the extension "
        f"takes ({', '.join(map(str, wanted))}) [{line}]")


def test_given_the_signature_reader_then_it_reads_names_kinds_and_defaults():
    line = ("f(self: jitwarm._jitwarm.Runtime, arg0: str, a: Dict[str, int], "
            "b: str = 'x, y', *, c: List[int] = [], **kwargs) -> None")
    assert extension_params(line, bound=True) == [
        Param("", POSITIONAL_ONLY, False), Param("a", POSITIONAL, False),
        Param("b", POSITIONAL, True), Param("c", KEYWORD_ONLY, True),
        Param("**", VAR_KEYWORD, False)]
    stub = ast.parse("def f(self, name: str, /, a: int, b: str = ..., *, c: int = ..., "
                     "**kwargs: Any) -> None: ...").body[0]
    assert stub_params(stub, bound=True) == extension_params(line, bound=True)
