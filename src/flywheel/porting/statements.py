"""`Statements`: what the planner needs from a file's statements, gathered without entering expressions.

Import statements (in document order), the decorators a plain name makes (``@name`` or ``@name(...)``)
and the calls of the shape ``a, b = name(...)``, each keyed by the name node that ScopeProvider reports
as a use of an import. Statements hold most of a file's nodes inside their expressions, which this
visitor never enters, so it costs a small part of a full pass.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

TorchNames = tuple[str | None, str | None]
"""The names ``torch, nn = try_import_torch()`` binds; None for ``_``."""


def _pair_call(statement: cst.BaseSmallStatement) -> tuple[cst.Name, TorchNames] | None:
    """``(name node, (a, b))`` for ``a, b = name(...)`` (``_`` binding nothing), else None."""
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1):
        return None
    call, target = statement.value, statement.targets[0].target
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)):
        return None
    if not isinstance(target, cst.Tuple | cst.List) or len(target.elements) != 2:
        return None
    names: list[str | None] = []
    for element in target.elements:
        if type(element) is not cst.Element or not isinstance(element.value, cst.Name):
            return None
        names.append(None if element.value.value == "_" else element.value.value)
    return call.func, (names[0], names[1])


class Statements(cst.CSTVisitor):
    """Visit a module with it, then read `imports`, `decorators` and `pair_calls`."""

    def __init__(self) -> None:
        self.imports: list[cst.Import | cst.ImportFrom] = []
        self.decorators: dict[cst.Name, cst.Decorator] = {}
        self.pair_calls: dict[cst.Name, tuple[cst.Assign, TorchNames]] = {}

    def _small_statements(self, body: Sequence[cst.BaseSmallStatement]) -> bool:
        for statement in body:
            if isinstance(statement, cst.Import | cst.ImportFrom):
                self.imports.append(statement)
            elif (found := _pair_call(statement)) is not None:
                self.pair_calls[found[0]] = (cst.ensure_type(statement, cst.Assign), found[1])
        return False

    def _decorated(self, decorators: Sequence[cst.Decorator]) -> bool:
        for decorator in decorators:
            expression = decorator.decorator
            name = expression.func if isinstance(expression, cst.Call) else expression
            if isinstance(name, cst.Name):
                self.decorators[name] = decorator
        return True

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return self._small_statements(node.body)

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> bool:
        return self._small_statements(node.body)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self._decorated(node.decorators)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return self._decorated(node.decorators)

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        return False

    def visit_Parameters(self, node: cst.Parameters) -> bool:
        return False
