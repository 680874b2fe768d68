"""The host API in its three languages: every public operation of
jitwarm::Runtime and jitwarm::KernelHandle (core/include/jitwarm/jitwarm.hpp)
has its C functions (jitwarm.h, exported by libjitwarm) and its Python member
(jitwarm.Runtime, jitwarm.Kernel), or api_parity.toml says why it has none.

A new public method of either class fails here until it has an entry in
api_parity.toml; so does an entry that names a C function or a Python member
that does not exist, and a C function of a runtime or kernel handle
(jw_runtime_*, jw_kernel_*, jw_register_*) or a public Python member that no
entry names.
docs/architecture.md ("Adding a host API operation") says where each form
is written."""
import ctypes
import os
import re
from dataclasses import dataclass
from typing import List, Optional

import pytest

import jitwarm
from conftest import env_path

try:
    import tomllib  # Python 3.11
except ModuleNotFoundError:  # the package supports 3.9 and 3.10 too
    tomllib = pytest.importorskip("tomli")


@dataclass(frozen=True)
class Exposed:
    """An operation's forms: the jw_* functions that are it, or why C has
    none; its Python member ("Runtime.name", "Kernel.name"), or why Python
    has none."""
    c: Optional[List[str]]
    no_c: Optional[str]
    python: Optional[str]
    no_python: Optional[str]


def read_table():
    """api_parity.toml: (the operations by "Class::name", c_only,
    python_only)."""
    with open(os.path.join(os.path.dirname(__file__), "api_parity.toml"), "rb") as f:
        table = tomllib.load(f)
    api = {}
    for class_name in ("Runtime", "KernelHandle"):
        for name, entry in table[class_name].items():
            operation = f"{class_name}::{name}"
            unknown = entry.keys() - {"c", "no_c", "python", "no_python"}
            assert not unknown, f"api_parity.toml, {operation}: unknown fields {unknown}"
            assert ("c" in entry) != ("no_c" in entry), (
                f"api_parity.toml, {operation}: give c or no_c (one)")
            assert ("python" in entry) != ("no_python" in entry), (
                f"api_parity.toml, {operation}: give python or no_python (one)")
            api[operation] = Exposed(entry.get("c"), entry.get("no_c"), entry.get("python"),
                                     entry.get("no_python"))
    return api, table["c_only"], table["python_only"]


API, C_ONLY, PYTHON_ONLY = read_table()


def read_header(name):
    root = env_path("JITWARM_TEST_SOURCE_ROOT")
    with open(os.path.join(root, "core", "include", "jitwarm", name)) as f:
        return f.read()


def without_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def class_body(text, name):
    """The text between the braces of `class name { ... };`."""
    start = re.search(r"\bclass\s+" + name + r"\s*(?::[^{;]*)?\{", text)
    assert start, f"jitwarm.hpp: class {name} not found"
    depth, i = 1, start.end()
    while depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[start.end():i - 1]


def members(body):
    """(access, declaration) for each member declaration of a class body."""
    out, access, current, depth, i = [], "private", "", 0, 0
    while i < len(body):
        ch = body[i]
        label = re.match(r"\s*(public|private|protected)\s*:(?!:)", body[i:]) if depth == 0 \
            and not current.strip() else None
        if label:
            access = label.group(1)
            i += label.end()
            continue
        current += ch
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            # A function's body ends the member, unless a ';' follows (a struct).
            if ch == "}" and depth == 0 and not re.match(r"\s*;", body[i + 1:]):
                out.append((access, current.strip()))
                current = ""
        elif ch == ";" and depth == 0:
            out.append((access, current.strip()))
            current = ""
        i += 1
    return out


def operations(body, class_name):
    """The names of a class's public member functions, from its body (its
    constructors as the class's name; no destructor, operator or deleted
    function)."""
    names = set()
    for access, decl in members(body):
        if access != "public" or "(" not in decl:
            continue
        if re.match(r"(friend|using|typedef|struct|class|enum|static_assert)\b", decl):
            continue
        if re.search(r"=\s*delete\s*;?$", decl):
            continue
        name = re.search(r"(~?\w+)\s*$", decl[:decl.index("(")]).group(1)
        if name.startswith("~") or name.startswith("operator"):
            continue
        names.add(f"{class_name}::{name}")
    return names


def public_operations(class_name):
    header = without_comments(read_header("jitwarm.hpp"))
    return operations(class_body(header, class_name), class_name)


def c_functions():
    text = without_comments(read_header("jitwarm.h"))
    return set(re.findall(r"JITWARM_EXPORT[^;(]*?\b(jw_\w+)\s*\(", text))


def python_member(path):
    class_name, member = path.split(".")
    return getattr(getattr(jitwarm, class_name), member, None)


def test_given_jitwarm_hpp_then_every_public_operation_has_an_entry():
    operations = public_operations("Runtime") | public_operations("KernelHandle")
    assert operations - API.keys() == set(), (
        "public operations with no entry in api_parity.toml: give each its C "
        "functions and Python member, or say why it has none")
    assert API.keys() - operations == set(), "entries for operations jitwarm.hpp no longer has"


def test_given_the_table_then_each_c_function_is_declared_and_exported():
    declared = c_functions()
    library = ctypes.CDLL(jitwarm.install_location()["library"])
    for operation, exposed in API.items():
        for name in exposed.c or []:
            assert name in declared, f"{operation}: {name} is not declared in jitwarm.h"
            assert hasattr(library, name), f"{operation}: libjitwarm does not export {name}"


def test_given_the_table_then_each_python_member_exists():
    for operation, exposed in API.items():
        if exposed.python is not None:
            assert python_member(exposed.python) is not None, (
                f"{operation}: jitwarm.{exposed.python} does not exist")


def test_given_jitwarm_h_then_every_function_of_a_runtime_or_a_handle_has_an_entry():
    named = {name for e in API.values() for name in e.c or []}
    handles = {n for n in c_functions()
               if re.match(r"jw_(runtime|kernel|register)_", n)}
    assert handles - named - C_ONLY.keys() == set(), (
        "C functions no entry names: add them to their operation's entry, or to "
        "[c_only]")
    assert C_ONLY.keys() <= handles


def test_given_the_python_classes_then_every_public_member_has_an_entry():
    named = {e.python for e in API.values() if e.python is not None}
    public = {f"{cls}.{name}" for cls in ("Runtime", "Kernel")
              for name in dir(getattr(jitwarm, cls)) if not name.startswith("_")}
    assert public - named - PYTHON_ONLY.keys() == set(), (
        "Python members no entry names: add them to their operation's entry, or "
        "to [python_only]")
    assert PYTHON_ONLY.keys() <= public


def test_given_a_class_body_then_the_reader_names_its_public_functions():
    body = """
      int hidden();
     public:
      explicit Thing(int x = {});
      Thing(const Thing&) = delete;
      ~Thing();
      struct Info { int a; };
      std::optional<Info> info(const std::string& k) const;
      void run(std::span<int> a, const Options& o = {}) const;
      void run(std::initializer_list<int> a) const { run(std::span<int>(a)); }
      const std::vector<std::string>& names() const { return names_; }
     private:
      friend class Other;
      int secret();
    """
    assert operations(body, "Thing") == {"Thing::Thing", "Thing::info", "Thing::run",
                                          "Thing::names"}
