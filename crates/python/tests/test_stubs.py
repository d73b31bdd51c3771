"""The type stubs name what the module holds: every public name of ``dealgym._core`` is in
``_core.pyi`` and every name the stubs declare exists, members included."""

from __future__ import annotations

import ast
import pathlib

import dealgym
from dealgym import _core

STUBS = pathlib.Path(dealgym.__file__).with_name("_core.pyi")


def declared() -> dict[str, set[str]]:
    tree = ast.parse(STUBS.read_text())
    names: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and is_typed_dict(node):
            continue
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = set()
        elif isinstance(node, ast.ClassDef):
            names[node.name] = {
                n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        elif isinstance(node, ast.FunctionDef):
            names[node.name] = set()
    return names


def is_typed_dict(node: ast.ClassDef) -> bool:
    """A ``TypedDict`` of the stubs names the shape of a dict the module hands out; it is a type
    alone, not a name the module holds."""
    return any(isinstance(b, ast.Name) and b.id == "TypedDict" for b in node.bases)


def test_the_typed_dicts_are_types_alone():
    tree = ast.parse(STUBS.read_text())
    shapes = [n.name for n in tree.body if isinstance(n, ast.ClassDef) and is_typed_dict(n)]
    assert shapes, "the stubs name the shapes of the dicts the module hands out"
    assert not [name for name in shapes if hasattr(_core, name)]


def test_the_stubs_and_the_module_name_the_same_things():
    stubs = declared()
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert public == set(stubs), (public ^ set(stubs))
    for name, members in stubs.items():
        for member in members - {"__init__", "__enter__", "__exit__"}:
            assert hasattr(getattr(_core, name), member), f"{name}.{member}"
