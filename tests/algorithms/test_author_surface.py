"""The built-in algorithms use only the public surface of the classes they build on: in
`algorithms/<name>/`, every private name a file reads on `self` is one that file defines or assigns,
and no file reaches a private name through `super()` or another object."""

import ast
from pathlib import Path

import pytest

import flywheel.algorithms

ALGORITHMS = Path(flywheel.algorithms.__file__).parent
FILES = sorted(ALGORITHMS.glob("*/*.py"))


def private_reads(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) of each `x._name` read, where `x` is not `self` / `cls`, or is `self` and the file
    neither defines nor assigns `_name`."""
    own = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
    own |= {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
    }
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__"):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls") and name in own:
            continue
        found.append((node.lineno, name))
    return sorted(found)


def test_the_rule_finds_what_it_is_meant_to():
    code = "class A(B):\n    def f(self):\n        self._mine = 1\n        return self._mine, self._base(), super()._hook(), other._x\n"
    assert private_reads(ast.parse(code)) == [(4, "_base"), (4, "_hook"), (4, "_x")]


@pytest.mark.parametrize("path", FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_no_private_name_of_another_class(path):
    assert FILES, "no algorithm folders found"
    reads = private_reads(ast.parse(path.read_text()))
    assert not reads, f"{path.parent.name}/{path.name} reads private names of other classes: {reads}"
