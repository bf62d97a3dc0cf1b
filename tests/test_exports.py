"""`flywheel`'s public names: each loads on first use, and editors see each through a type-checking
import of the same module (so `from flywheel import PPOConfig` is typed), without `import flywheel`
importing torch or ray."""

import ast
import subprocess
import sys
from pathlib import Path

import flywheel

INIT = Path(flywheel.__file__)


def type_checking_imports() -> dict[str, str]:
    """{name: module} of the imports under `if TYPE_CHECKING:` in flywheel/__init__.py."""
    for node in ast.parse(INIT.read_text()).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            return {
                alias.name: statement.module
                for statement in node.body
                if isinstance(statement, ast.ImportFrom) and statement.module
                for alias in statement.names
            }
    return {}


def test_every_export_is_listed_typed_and_loads():
    assert type_checking_imports() == flywheel._EXPORTS
    assert sorted(flywheel.__all__) == sorted([*flywheel._EXPORTS, "__version__"])
    for name in flywheel._EXPORTS:
        assert getattr(flywheel, name).__name__ == name


def test_import_flywheel_imports_neither_torch_nor_ray():
    code = "import sys, flywheel; print(sorted({'torch', 'ray'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
