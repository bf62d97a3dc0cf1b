"""`port_source`: one file's text with its RLlib imports rewritten, and a `Problem` for each line left."""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

import libcst as cst

from flywheel.porting.plan import make_plan, touches
from flywheel.porting.rewrite import Rewriter
from flywheel.porting.table import ImportTable, load_table


@dataclass(frozen=True, order=True)
class Problem:
    """A line `flywheel port` could not port; ``str()`` is ``file:line: what it is: what to do instead``."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def port_source(
    text: str, filename: str = "<string>", *, table: ImportTable | None = None
) -> tuple[str, list[Problem]]:
    """Rewrites the RLlib imports of `text` (Python source) into flywheel's.

    Returns the new text and the problems of the new text, in line order (line numbers are the new
    text's). Porting the result again changes nothing and reports the same problems. `table`
    defaults to the table flywheel ships (`load_table()`).

    >>> text, problems = port_source("from ray.rllib.core.columns import Columns  # the column names\\n")
    >>> text
    'from flywheel.columns import Columns  # the column names\\n'
    >>> problems
    []
    """
    table = table or load_table()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # e.g. "\\d" in old strings: not ours to report
            tree = ast.parse(text, filename)
    except SyntaxError as err:
        return text, [
            Problem(filename, err.lineno or 1, f"not valid Python ({err.msg}); fix it and port again")
        ]
    if not touches(tree, table):  # the common case in a project: settled by Python's own fast parser
        return text, []
    module = cst.parse_module(text)
    plan = make_plan(module, tree, table)
    if plan.actions:
        text = module.visit(Rewriter(plan)).code
        tree = ast.parse(text, filename)
        plan = make_plan(cst.parse_module(text), tree, table) if touches(tree, table) else None
    return text, [Problem(filename, line, message) for line, message in plan.problems] if plan else []
