"""Fixtures for porting RLlib code: the installed wheel's `ray/rllib/examples/` folder, and a ported copy.

The wheel's files are only read as text (never imported): `flywheel port` writes ported copies to a
temporary folder, which a test may put on `sys.path` to import `examples.<...>` from there.
"""

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
