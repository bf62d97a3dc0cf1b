"""Fixtures for porting RLlib code: the installed wheel's `ray/rllib/examples/` folder, and a ported copy.

The wheel's files are only read as text (never imported): `flywheel port` writes ported copies to a
temporary folder, which a test may put on `sys.path` to import `examples.<...>` from there.
"""

import importlib
import inspect
import sys
import textwrap
from importlib.util import find_spec
from pathlib import Path

import pytest

from flywheel.porting import PortReport, port_paths


@pytest.fixture(scope="session")
def rllib_examples() -> Path:
    """The installed wheel's `ray/rllib/examples` folder (found without importing ray)."""
    spec = find_spec("ray")
    if spec is None or spec.origin is None:
        pytest.skip("the ray wheel is not installed (pip install flywheel[test])")
    return Path(spec.origin).parent / "rllib" / "examples"


@pytest.fixture(scope="session")
def ported_rllib_examples(rllib_examples: Path, tmp_path_factory) -> tuple[Path, PortReport]:
    """(the ported `examples` folder, the report): the wheel's examples ported once per session into a
    temporary folder; its parent folder on `sys.path` makes `import examples.<rest>` import them."""
    out = tmp_path_factory.mktemp("ported")
    report = port_paths([rllib_examples], out=out)
    return out / "examples", report


@pytest.fixture
def ported_example(ported_rllib_examples, monkeypatch):
    """`ported_example("rl_modules.classes.lstm_containing_rlm")` imports the ported copy of that example
    file (its folder's parent on `sys.path` for the test; no `examples.*` module outlives the test)."""
    out, _ = ported_rllib_examples
    monkeypatch.syspath_prepend(str(out.parent))
    _forget_examples()
    yield lambda name: importlib.import_module(f"examples.{name}")
    _forget_examples()


def _forget_examples() -> None:
    for name in [name for name in sys.modules if name == "examples" or name.startswith("examples.")]:
        del sys.modules[name]


def docstring_testcode(obj: object) -> list[str]:
    """The `.. testcode::` blocks of `obj`'s docstring (RLlib's doctest blocks), dedented."""
    blocks, lines = [], inspect.getdoc(obj).splitlines()
    for i, line in enumerate(lines):
        if line.strip() != ".. testcode::":
            continue
        body = []
        for following in lines[i + 1 :]:
            if following.strip() and not following.startswith((" ", "\t")):
                break
            body.append(following)
        if any(option.strip().startswith(":skipif: True") for option in body[:2]):
            continue  # RLlib does not run these either
        blocks.append(textwrap.dedent("\n".join(body)).strip() + "\n")
    return blocks
