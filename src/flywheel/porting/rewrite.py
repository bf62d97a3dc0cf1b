"""`Rewriter`: carries out a `Plan` on a file's syntax tree, keeping its comments and formatting.

An import whose names land in several flywheel modules splits into one import per module (in the
order of the names); names that stay RLlib's stay in the original statement. A statement that goes
away entirely (an idiom's import) leaves its comments to the next statement, or ``pass`` when it
was alone in its block.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from flywheel.porting.plan import DROP, FromImport, KeepAndImport, ModuleImport, Plan
from flywheel.porting.statements import TorchNames

_PRAGMA = re.compile(r"#\s*(noqa|type:|pylint:|pyright:|mypy:|isort:|fmt:)")
"""Trailing comments that speak about their line: copied to every line an import splits into."""


def _expression(dotted_name: str) -> cst.Attribute | cst.Name:
    expression = cst.parse_expression(dotted_name)
    assert isinstance(expression, cst.Attribute | cst.Name)  # a dotted name parses as one of these
    return expression


def _asname(local: str | None, name: str, original: cst.AsName | None = None) -> cst.AsName | None:
    if local is None or local == name:
        return None
    return original.with_changes(name=cst.Name(local)) if original else cst.AsName(name=cst.Name(local))


def _comment_lines(trailing: cst.TrailingWhitespace) -> list[cst.EmptyLine]:
    return [cst.EmptyLine(comment=trailing.comment)] if trailing.comment else []


def _with_commas(aliases: list[cst.ImportAlias], statement: cst.ImportFrom) -> list[cst.ImportAlias]:
    """`aliases` (a subset of `statement`'s, in order) with valid commas; the last takes the statement's
    last comma when parenthesized, so the closing parenthesis keeps its place."""
    out = [
        alias
        if isinstance(alias.comma, cst.Comma)
        else alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        for alias in aliases[:-1]
    ]
    return [*out, aliases[-1].with_changes(comma=_last_comma(aliases[-1].comma, statement))]


def _last_comma(
    own: cst.Comma | cst.MaybeSentinel, statement: cst.ImportFrom
) -> cst.Comma | cst.MaybeSentinel:
    """The comma of the last alias of an import split from `statement`.

    Without parentheses: none. With them: the alias's own when it ends a line (keeping a comment
    there), indented as the statement's last line so ``)`` stays in place; else the statement's last."""
    assert not isinstance(statement.names, cst.ImportStar)  # split imports name their aliases
    closing = statement.names[-1].comma
    if statement.lpar is None:
        return cst.MaybeSentinel.DEFAULT
    if isinstance(own, cst.Comma) and isinstance(own.whitespace_after, cst.ParenthesizedWhitespace):
        closing_line = cst.SimpleWhitespace("")
        if isinstance(closing, cst.Comma) and isinstance(
            closing.whitespace_after, cst.ParenthesizedWhitespace
        ):
            closing_line = closing.whitespace_after.last_line
        return own.with_changes(whitespace_after=own.whitespace_after.with_changes(last_line=closing_line))
    return closing


def _aliases(
    groups: dict[object, list[cst.ImportAlias] | cst.Import], module: str | None
) -> list[cst.ImportAlias]:
    """The aliases grouped under `module` (the other keys, ids of aliases, hold whole imports)."""
    aliases = groups.setdefault(module, [])
    assert isinstance(aliases, list)
    return aliases


def _split_part(
    statement: cst.ImportFrom, module: object, aliases: list[cst.ImportAlias] | cst.Import, index: int
) -> cst.BaseSmallStatement:
    """Part `index` of `statement` split by flywheel module (`module` None: the names that stay RLlib's).
    A comment right after ``(`` stays with the first part only."""
    if isinstance(aliases, cst.Import):
        return aliases
    changes: dict = {"names": _with_commas(aliases, statement)}
    if isinstance(module, str):
        changes["module"] = _expression(module)
    lpar = statement.lpar
    opening = lpar.whitespace_after if lpar is not None else None
    if index and lpar is not None and isinstance(opening, cst.ParenthesizedWhitespace):
        plain = opening.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
        changes["lpar"] = lpar.with_changes(whitespace_after=plain)
    return statement.with_changes(**changes)


def _with_semicolons(statements: Sequence[cst.BaseSmallStatement]) -> list[cst.BaseSmallStatement]:
    semicolon = cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" "))
    out = [
        s if isinstance(s.semicolon, cst.Semicolon) else s.with_changes(semicolon=semicolon)
        for s in statements[:-1]
    ]
    return [*out, statements[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)]


def _torch_imports(names: TorchNames) -> list[cst.BaseSmallStatement]:
    """``import torch [as t]`` and/or ``from torch import nn [as n]`` for ``t, n = try_import_torch()``."""
    torch_name, nn_name = names
    statements: list[cst.BaseSmallStatement] = []
    if torch_name or not nn_name:
        statements.append(
            cst.Import(names=[cst.ImportAlias(cst.Name("torch"), asname=_asname(torch_name, "torch"))])
        )
    if nn_name:
        alias = cst.ImportAlias(cst.Name("nn"), asname=_asname(nn_name, "nn"))
        statements.append(cst.ImportFrom(module=cst.Name("torch"), names=[alias]))
    return statements


class Rewriter(cst.CSTTransformer):
    """Applies `plan` (made on the same tree: it keys its changes by the original nodes)."""

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan
        self.removed: set[cst.SimpleStatementLine] = set()
        # Expressions change only for module imports; otherwise the (costly) walk stays at statement level.
        self.enter_expressions = bool(plan.chains or plan.attribute_renames)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        return self.enter_expressions

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> bool:
        return self.enter_expressions

    def visit_Decorator(self, node: cst.Decorator) -> bool:
        return self.enter_expressions

    def visit_Parameters(self, node: cst.Parameters) -> bool:
        return self.enter_expressions

    # ------------------------------------------------------------------ statements

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel[cst.SimpleStatementLine]:
        statements = self._replace_all(original_node.body, updated_node.body)
        if statements is None:
            return updated_node
        if not statements:
            placeholder = updated_node.with_changes(body=[cst.Pass()])
            self.removed.add(placeholder)
            return placeholder
        if len(updated_node.body) > 1 or len(statements) == 1:
            return updated_node.with_changes(body=_with_semicolons(statements))
        trailing = updated_node.trailing_whitespace
        copied = (
            trailing
            if trailing.comment and _PRAGMA.match(trailing.comment.value)
            else cst.TrailingWhitespace()
        )
        return cst.FlattenSentinel(
            [
                cst.SimpleStatementLine(
                    body=[statement],
                    leading_lines=updated_node.leading_lines if index == 0 else (),
                    trailing_whitespace=trailing if index == 0 else copied,
                )
                for index, statement in enumerate(statements)
            ]
        )

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        statements = self._replace_all(original_node.body, updated_node.body)
        if statements is None:
            return updated_node
        return updated_node.with_changes(body=_with_semicolons(statements or [cst.Pass()]))

    def _replace_all(self, originals: Sequence, updated: Sequence) -> list[cst.BaseSmallStatement] | None:
        """The small statements that replace `updated`, or None when none changes."""
        replacements = [self._replace(original, new) for original, new in zip(originals, updated)]
        if all(replacement is None for replacement in replacements):
            return None
        return [
            s
            for replacement, new in zip(replacements, updated)
            for s in (replacement if replacement is not None else [new])
        ]

    def _replace(self, original: cst.BaseSmallStatement, updated: cst.BaseSmallStatement) -> list | None:
        if isinstance(original, cst.ImportFrom) and isinstance(updated, cst.ImportFrom):
            return self._from_import(original, updated)
        if isinstance(original, cst.Import) and isinstance(updated, cst.Import):
            return self._import(original, updated)
        if isinstance(original, cst.Assign) and original in self.plan.torch_assigns:
            return _torch_imports(self.plan.torch_assigns[original])
        return None

    def _from_import(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> list | None:
        if isinstance(original.names, cst.ImportStar) or isinstance(updated.names, cst.ImportStar):
            return None
        actions = [self.plan.actions.get(alias) for alias in original.names]
        if all(action is None for action in actions):
            return None
        groups: dict[
            object, list[cst.ImportAlias] | cst.Import
        ] = {}  # flywheel module (None: kept) -> aliases
        for action, alias in zip(actions, updated.names):
            if isinstance(action, ModuleImport):
                new_alias = cst.ImportAlias(
                    _expression(action.module), asname=_asname(action.asname, action.module)
                )
                groups[id(alias)] = cst.Import(names=[new_alias])
            elif isinstance(action, FromImport):
                asname = _asname(action.asname, action.name, alias.asname)
                _aliases(groups, action.module).append(
                    alias.with_changes(name=cst.Name(action.name), asname=asname)
                )
            elif action != DROP:
                _aliases(groups, None).append(alias)
        parts = [
            _split_part(updated, module, items, index) for index, (module, items) in enumerate(groups.items())
        ]
        added = [
            module for action in actions if isinstance(action, KeepAndImport) for module in action.modules
        ]
        return parts + [
            cst.Import(names=[cst.ImportAlias(_expression(module))]) for module in dict.fromkeys(added)
        ]

    def _import(self, original: cst.Import, updated: cst.Import) -> list | None:
        actions = [self.plan.actions.get(alias) for alias in original.names]
        if all(action is None for action in actions):
            return None
        names = [
            alias.with_changes(name=_expression(action.module)) if isinstance(action, ModuleImport) else alias
            for action, alias in zip(actions, updated.names)
        ]
        return [updated.with_changes(names=names)]

    # ------------------------------------------------------------------ blocks: statements that went away

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body, footer = self._without_removed(updated_node.body, updated_node.footer)
        return updated_node.with_changes(body=body, footer=footer)

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        body, footer = self._without_removed(updated_node.body, updated_node.footer)
        return updated_node.with_changes(body=body, footer=footer)

    def _without_removed(self, body: Sequence, footer: Sequence[cst.EmptyLine]) -> tuple[list, list]:
        """`body` without removed statements, their comments moved to the next statement (or the footer);
        the first one stays as ``pass`` when nothing else is left in the block."""
        if not any(statement in self.removed for statement in body):
            return list(body), list(footer)
        out, carried = [], []
        if all(statement in self.removed for statement in body):
            out, body = [body[0]], body[1:]
        for statement in body:
            if statement in self.removed:
                carried += [*statement.leading_lines, *_comment_lines(statement.trailing_whitespace)]
            else:
                out.append(statement.with_changes(leading_lines=[*carried, *statement.leading_lines]))
                carried = []
        return out, [*carried, *footer]

    # ------------------------------------------------------------------ decorators and attributes

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        return self._without_decorators(original_node, updated_node)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        return self._without_decorators(original_node, updated_node)

    def _without_decorators(self, original: cst.FunctionDef | cst.ClassDef, updated):
        """`updated` without the planned decorators; their comments go to the next decorator (or the def)."""
        if not any(decorator in self.plan.decorators for decorator in original.decorators):
            return updated
        kept, carried = [], []
        for old, new in zip(original.decorators, updated.decorators):
            if old in self.plan.decorators:
                carried += [*new.leading_lines, *_comment_lines(new.trailing_whitespace)]
            else:
                kept.append(new.with_changes(leading_lines=[*carried, *new.leading_lines]))
                carried = []
        return updated.with_changes(
            decorators=kept, lines_after_decorators=[*carried, *updated.lines_after_decorators]
        )

    def leave_Attribute(
        self, original_node: cst.Attribute, updated_node: cst.Attribute
    ) -> cst.BaseExpression:
        if original_node in self.plan.chains:
            return _expression(self.plan.chains[original_node])
        if original_node in self.plan.attribute_renames:
            return updated_node.with_changes(attr=cst.Name(self.plan.attribute_renames[original_node]))
        return updated_node
