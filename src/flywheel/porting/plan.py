"""`make_plan`: what `flywheel port` does with each RLlib import of one parsed file, and why not where it can't.

The plan is read off the file and the import table only. `rewrite.py` carries it out; the report runs
the same planner on the rewritten file, so every import that is still RLlib's comes with its reason.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import libcst as cst
from libcst.metadata import (
    ImportAssignment,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)

from flywheel.porting.statements import Statements, TorchNames
from flywheel.porting.table import DROP_DECORATOR, IMPORT_TORCH, ImportTable, in_rllib


@dataclass(frozen=True)
class FromImport:
    """The alias becomes ``from <module> import <name> [as <asname>]``."""

    module: str
    name: str
    asname: str | None


@dataclass(frozen=True)
class ModuleImport:
    """The alias becomes ``import <module> [as <asname>]``."""

    module: str
    asname: str | None


@dataclass(frozen=True)
class KeepAndImport:
    """The alias stays (a module outside RLlib, e.g. ``from ray import tune``), and ``import <module>``
    follows the statement for each of `modules` (the flywheel modules its rewritten attributes name)."""

    modules: tuple[str, ...]


DROP = "drop"
"""The alias goes away (an idiom whose every use is rewritten)."""

Action = FromImport | ModuleImport | KeepAndImport | str

_SHAPES = {
    DROP_DECORATOR: "`@{name}` / `@{name}(...)`",
    IMPORT_TORCH: "`torch, nn = {name}()`",
}


@dataclass
class Plan:
    """Changes keyed by the (identity of the) original nodes they apply to."""

    actions: dict[cst.ImportAlias, Action] = field(default_factory=dict)
    decorators: set[cst.Decorator] = field(default_factory=set)
    torch_assigns: dict[cst.Assign, TorchNames] = field(default_factory=dict)
    attribute_renames: dict[cst.Attribute, str] = field(default_factory=dict)
    chains: dict[cst.CSTNode, str] = field(default_factory=dict)
    """``ray.rllib.x.y`` expressions (uses of ``import ray.rllib.x.y``) -> the flywheel module's dotted name."""
    problems: list[tuple[int, str]] = field(default_factory=list)
    """(line, "what: what to do instead") for every RLlib import that stays."""


def dotted(node: cst.BaseExpression | None) -> str:
    """``a.b.c`` for a Name/Attribute chain ("" for None)."""
    if node is None:
        return ""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    raise TypeError(f"not a dotted name: {node!r}")


def touches(tree: ast.Module, table: ImportTable) -> bool:
    """Whether any import of `tree` (Python's own, fast parse) is flywheel port's business."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if any(table.touches(node.module, alias.name) for alias in node.names):
                return True
        elif isinstance(node, ast.Import) and any(in_rllib(alias.name) for alias in node.names):
            return True
    return False


class _Planner:
    """Plans one file. Scopes, parents and positions are resolved only when a file needs them (each is a
    full pass over the tree); the lines of imports come from Python's own parse of the same text, and
    decorators and ``a, b = f()`` calls from a pass over statements only (`Statements`)."""

    def __init__(self, wrapper: cst.MetadataWrapper, tree: ast.Module, table: ImportTable) -> None:
        self.wrapper, self.table, self.plan = wrapper, table, Plan()
        self.statements = Statements()
        wrapper.module.visit(self.statements)
        self.imports = self.statements.imports
        found = sorted(
            (node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)),
            key=lambda node: (node.lineno, node.col_offset),
        )
        self.lines: dict[cst.CSTNode, int] = {}
        for statement, node in zip(self.imports, found, strict=True):
            self.lines[statement] = node.lineno
            if not isinstance(statement.names, cst.ImportStar):
                self.lines.update(
                    (alias, name.lineno) for alias, name in zip(statement.names, node.names, strict=True)
                )

    @cached_property
    def parents(self) -> Mapping[cst.CSTNode, cst.CSTNode]:
        return self.wrapper.resolve(ParentNodeProvider)

    @cached_property
    def references(self) -> dict[tuple[cst.CSTNode, str], list[cst.CSTNode]]:
        """``(import statement, local name) -> [nodes that use the name]``."""
        references: dict[tuple[cst.CSTNode, str], list[cst.CSTNode]] = {}
        for scope in set(self.wrapper.resolve(ScopeProvider).values()):
            for assignment in scope.assignments if scope is not None else ():
                if isinstance(assignment, ImportAssignment):
                    key = (assignment.node, assignment.name)
                    references.setdefault(key, []).extend(access.node for access in assignment.references)
        return references

    def line(self, node: cst.CSTNode) -> int:
        if node in self.lines:
            return self.lines[node]
        return self.wrapper.resolve(PositionProvider)[node].start.line

    def refs(self, statement: cst.CSTNode, local: str) -> list[cst.CSTNode]:
        return self.references.get((statement, local), [])

    # ------------------------------------------------------------------ from A import x, y

    def from_import(self, node: cst.ImportFrom) -> None:
        module = dotted(node.module)
        if isinstance(node.names, cst.ImportStar):
            if in_rllib(module):
                what = f"from {module} import *"
                self.plan.problems.append(
                    (self.line(node), f"{what}: import each name you use, so flywheel port can map it")
                )
            return
        for alias in node.names:
            name = cst.ensure_type(alias.name, cst.Name).value  # `from m import a.b` is not Python
            if not self.table.touches(module, name):
                continue
            local = cst.ensure_type(alias.asname.name, cst.Name).value if alias.asname else name
            if self.table.has_names_in(f"{module}.{name}"):  # e.g. `from ray import tune`: never reported
                action = self.attribute_action(f"{module}.{name}", self.refs(node, local))
                if action is not None:
                    self.plan.actions[alias] = action
                continue
            action = self.from_action(node, module, name, local)
            if action is not None:
                self.plan.actions[alias] = action
            else:
                self.problem_for_name(alias, node, module, name, local)

    def from_action(self, node: cst.ImportFrom, module: str, name: str, local: str) -> Action | None:
        target = self.table.name(module, name)  # a [names] entry wins over a prefix of its module
        if target is not None:
            return FromImport(target.module, target.name, None if local == target.name else local)
        mapped = self.table.module(module)
        if mapped is not None and mapped[1]:
            return FromImport(mapped[0], name, None if local == name else local)
        kind = self.table.idiom(module, name)
        if kind is not None:
            return (
                DROP if not self.unrecognized_idiom_uses(kind, self.refs(node, local), commit=True) else None
            )
        mapped = self.table.module(f"{module}.{name}")
        if mapped is None or self.module_use_problems(
            f"{module}.{name}", mapped, local, self.refs(node, local)
        ):
            return None
        parent, _, leaf = mapped[0].rpartition(".")
        asname = None if local == leaf else local
        return FromImport(parent, leaf, asname) if parent else ModuleImport(mapped[0], asname)

    def problem_for_name(
        self, alias: cst.ImportAlias, node: cst.ImportFrom, module: str, name: str, local: str
    ) -> None:
        what = f"{module}.{name}"
        kind = self.table.idiom(module, name)
        if kind is not None:
            unrecognized = self.unrecognized_idiom_uses(kind, self.refs(node, local))
            lines = ", ".join(str(line) for line in sorted({self.line(ref) for ref in unrecognized}))
            shape = _SHAPES[kind].format(name=local)
            message = f"used other than as {shape} on line {lines}; port that by hand (flywheel port rewrites only that form)"
            self.plan.problems.append((self.line(alias), f"{what}: {message}"))
            return
        mapped = self.table.module(what)
        problems = (
            self.module_use_problems(what, mapped, local, self.refs(node, local))
            if mapped is not None
            else []
        )
        for message in problems or [f"{what}: {self.table.problem(module, name)}"]:
            self.plan.problems.append((self.line(alias), message))

    def attribute_action(self, module: str, refs: Sequence) -> Action | None:
        """Plans ``tune.Tuner`` -> ``flywheel.tune.Tuner`` for each use of a [names] entry of `module` (a
        module outside RLlib) as an attribute; the import stays, followed by the flywheel modules'."""
        modules = []
        for ref in refs:
            parent = self.parents.get(ref)
            if not (isinstance(parent, cst.Attribute) and parent.value is ref):
                continue
            target = self.table.name(module, parent.attr.value)
            if target is not None:
                self.plan.chains[parent] = f"{target.module}.{target.name}"
                modules.append(target.module)
        return KeepAndImport(tuple(dict.fromkeys(modules))) if modules else None

    # ------------------------------------------------------------------ import a.b.c [as d]

    def plain_import(self, node: cst.Import) -> None:
        for alias in node.names:
            module = dotted(alias.name)
            if not in_rllib(module):
                continue
            mapped = self.table.module(module)
            if mapped is None:
                self.plan.problems.append((self.line(alias), f"{module}: {self.table.problem(module)}"))
                continue
            local = cst.ensure_type(alias.asname.name, cst.Name).value if alias.asname else module
            # Uses matter for a [modules] mapping (attributes are checked) or without `as` (they are rewritten).
            refs = self.refs(node, local) if not (mapped[1] and alias.asname) else []
            problems = self.module_use_problems(module, mapped, local, refs)
            if problems:
                self.plan.problems.extend((self.line(alias), message) for message in problems)
                continue
            self.plan.actions[alias] = ModuleImport(mapped[0], local if alias.asname else None)
            if not alias.asname:
                self.plan.chains.update((ref, mapped[0]) for ref in refs)

    def module_use_problems(
        self, module: str, mapped: tuple[str, bool], local: str, refs: Sequence
    ) -> list[str]:
        """Why `module` (bound to `local`) cannot become `mapped`; [] when it can (renames are then planned)."""
        target_module, by_prefix = mapped
        if by_prefix:
            return []
        problems, renames = [], {}
        for ref in refs:
            parent = self.parents.get(ref)
            if not (isinstance(parent, cst.Attribute) and parent.value is ref):
                continue  # the module object itself (passed around): fine either way
            attribute = parent.attr.value
            target = self.table.name(module, attribute)
            if target is not None and target.module == target_module:
                if target.name != attribute:
                    renames[parent] = target.name
                continue
            fix = (
                self.table.problem(module, attribute)
                if target is None
                else f"flywheel has it as {target.module}.{target.name}; import it from there"
            )
            use = f"used as {local}.{attribute} on line {self.line(ref)}"
            problems.append(f"{module}.{attribute} ({use}): {fix}")
        if not problems:
            self.plan.attribute_renames.update(renames)
        return problems

    # ------------------------------------------------------------------ idioms

    def unrecognized_idiom_uses(self, kind: str, refs: Sequence, *, commit: bool = False) -> list:
        """The uses of an idiom name that have no rewrite; with `commit`, plans the rest when all have one."""
        recognize = self.decorator_of if kind == DROP_DECORATOR else self.torch_assign_of
        found = {ref: recognize(ref) for ref in refs}
        unrecognized = [ref for ref, use in found.items() if use is None]
        if commit and not unrecognized:
            for use in found.values():
                if isinstance(use, cst.Decorator):
                    self.plan.decorators.add(use)
                elif use is not None:  # (none is: all were recognized)
                    self.plan.torch_assigns[use[0]] = use[1]
        return unrecognized

    def decorator_of(self, ref: cst.CSTNode) -> cst.Decorator | None:
        """The decorator `ref` is (``@name``) or calls (``@name(...)``), if any."""
        return self.statements.decorators.get(ref) if isinstance(ref, cst.Name) else None

    def torch_assign_of(self, ref: cst.CSTNode) -> tuple[cst.Assign, TorchNames] | None:
        """``a, b = try_import_torch(...)`` around `ref`, with the two names it binds."""
        return self.statements.pair_calls.get(ref) if isinstance(ref, cst.Name) else None


def make_plan(module: cst.Module, tree: ast.Module, table: ImportTable) -> Plan:
    """Plans the rewrite of every RLlib import in `module` (plus its idioms' uses); `tree` is
    ``ast.parse`` of the same text. The plan's changes are keyed by `module`'s own nodes."""
    planner = _Planner(cst.MetadataWrapper(module, unsafe_skip_copy=True), tree, table)
    for node in planner.imports:
        if isinstance(node, cst.Import):
            planner.plain_import(node)
        elif not node.relative and node.module is not None:
            planner.from_import(node)
    planner.plan.problems.sort(key=lambda item: item[0])
    return planner.plan
