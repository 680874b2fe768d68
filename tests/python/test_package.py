"""The package as installed: the type stubs and py.typed ship next to the
extension, and the stubs describe every public name of the extension."""
import ast
import os

import jitwarm
from jitwarm import _jitwarm

from conftest import stub_tree


def stub_names():
    tree = stub_tree()
    top, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
        if isinstance(node, ast.ClassDef):
            names = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    names.add(item.name)
                elif isinstance(item, ast.AnnAssign):
                    names.add(item.target.id)
            members[node.name] = names
    return top, members


def public(names):
    return {n for n in names if not (n.startswith("__") and n.endswith("__"))}


def test_given_the_package_then_stubs_and_py_typed_ship_with_it():
    directory = os.path.dirname(jitwarm.__file__)
    assert os.path.isfile(os.path.join(directory, "py.typed"))
    assert os.path.dirname(_jitwarm.__file__) == directory


def test_given_the_extension_then_the_stubs_name_every_public_function_class_and_member():
    top, members = stub_names()
    module_names = public(dir(_jitwarm)) - {"_errors"}
    assert module_names - top == set()
    for name, names in members.items():
        cls = getattr(_jitwarm, name)
        assert public(dir(cls)) - names - {"_pybind11_conduit_v1_"} == set(), name
