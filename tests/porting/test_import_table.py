"""The shipped import table: well-formed, sorted, true on both sides, and the same as docs/porting.md."""

import ast
import re
from functools import cache
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path

import pytest

from flywheel.porting import load_table
from flywheel.porting.table import IDIOMS

REPO = Path(__file__).parents[2]
TOML = REPO / "src/flywheel/porting/imports.toml"
DOCS = REPO / "docs/porting.md"
BEGIN = "<!-- import table: generated from src/flywheel/porting/imports.toml; tests/porting/test_import_table.py checks it -->\n"
END = "<!-- end of import table -->\n"
TABLE = load_table()

HEADINGS = {
    "prefixes": ("Module prefixes", "RLlib module prefix", "flywheel module prefix"),
    "names": ("Names", "RLlib `module:Name`", "flywheel `module:Name`"),
    "modules": ("Modules imported as modules", "RLlib module", "flywheel module"),
    "idioms": ("Idioms", "RLlib `module:Name`", "what happens to it"),
    "problems": ("Reported lines", "RLlib `module:Name`, `Name` or module", "what the report says"),
}


def render() -> str:
    """The import-table part of docs/porting.md, from the shipped table."""
    parts = [BEGIN]
    for section, (title, left, right) in HEADINGS.items():
        parts.append(f"\n### {title}\n\n| {left} | {right} |\n| --- | --- |\n")
        entries = getattr(TABLE, section)
        for key, value in entries.items():
            shown = f"`{value.module}:{value.name}`" if section == "names" else value
            shown = f"`{shown}`" if section in ("prefixes", "modules", "idioms") else shown
            parts.append(f"| `{key}` | {shown} |\n")
    return "".join(parts) + "\n" + END


def test_docs_show_the_shipped_table():
    text = DOCS.read_text()
    found = text[text.index(BEGIN) : text.index(END) + len(END)] if BEGIN in text and END in text else ""
    assert found == render(), (
        "docs/porting.md's import table differs from imports.toml; put this there:\n" + render()
    )


def test_every_section_is_sorted_with_one_entry_per_line():
    sections: dict[str, list[str]] = {}
    section = None
    for line in TOML.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            sections[section] = []
            continue
        assert re.fullmatch(r'("[^"]+"|[A-Za-z_]\w*) = "[^"]+"', line), (
            f'not one `key = "value"` entry: {line!r}'
        )
        sections[section].append(line.split(" = ")[0].strip('"'))
    assert list(sections) == list(HEADINGS)
    for name, keys in sections.items():
        assert keys == sorted(keys), f"[{name}] is not sorted"
    assert set(TABLE.idioms.values()) <= set(IDIOMS)


@pytest.mark.parametrize("key", sorted(TABLE.names))
def test_every_flywheel_target_imports(key):
    target = TABLE.names[key]
    assert hasattr(import_module(target.module), target.name), f"{key} -> {target}: no such flywheel name"


@pytest.mark.parametrize("module", sorted(set(TABLE.modules.values())))
def test_every_flywheel_module_imports(module):
    import_module(module)


def test_every_modules_entry_has_its_names_in_that_module():
    """`import ray.rllib.<m> as m` rewrites only when `m.X` maps into the module; an entry none of whose
    names does would never rewrite anything."""
    for rllib_module, flywheel_module in TABLE.modules.items():
        targets = [target for key, target in TABLE.names.items() if key.startswith(rllib_module + ":")]
        assert any(target.module == flywheel_module for target in targets), rllib_module


# ------------------------------------------------------------------------------ the RLlib side is real


@cache
def source_file(module: str) -> Path | None:
    """The installed file of `module` (``ray.x.y``), found without importing ray."""
    spec = find_spec("ray")
    if spec is None or spec.origin is None:
        pytest.skip("the ray wheel is not installed")
    base = Path(spec.origin).parent.parent / module.replace(".", "/")
    return next((path for path in (base.with_suffix(".py"), base / "__init__.py") if path.is_file()), None)


@cache
def defined_names(module: str) -> set[str]:
    """Names `module` binds at its top level (definitions, assignments and imports, also under if/try)."""
    names: set[str] = set()
    statements = list(ast.parse(source_file(module).read_text()).body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.If | ast.Try):
            statements += [
                *node.body,
                *node.orelse,
                *getattr(node, "finalbody", []),
                *getattr(node, "handlers", []),
            ]
        elif isinstance(node, ast.ExceptHandler):
            statements += node.body
        elif isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {
                name.id for target in targets for name in ast.walk(target) if isinstance(name, ast.Name)
            }
    return names


RLLIB_NAMES = sorted({*TABLE.names, *TABLE.idioms, *(key for key in TABLE.problems if ":" in key)})
RLLIB_MODULES = sorted(
    {*TABLE.modules, *TABLE.prefixes, *(key for key in TABLE.problems if "." in key and ":" not in key)}
)


@pytest.mark.parametrize("key", RLLIB_NAMES)
def test_every_rllib_name_exists_in_the_wheel(key):
    module, _, name = key.partition(":")
    assert source_file(module) is not None, f"{key}: no module {module} in the installed wheel"
    assert name in defined_names(module), f"{key}: {module} has no {name}"


@pytest.mark.parametrize("module", RLLIB_MODULES)
def test_every_rllib_module_exists_in_the_wheel(module):
    assert source_file(module) is not None, f"no module {module} in the installed wheel"
