"""Proof that a ported program runs on flywheel alone: a `sitecustomize.py` that makes `import ray.rllib`
fail in every Python process started with its folder on `PYTHONPATH` (ray itself, Tune, Data and Serve
stay importable), so nothing silently falls back to RLlib."""

from __future__ import annotations

from pathlib import Path

SITECUSTOMIZE = '''import sys


class BlockRLlib:
    """Makes `import ray.rllib` fail: the ported scripts must run on flywheel alone."""

    def find_spec(self, name, path=None, target=None):
        if name == "ray.rllib" or name.startswith("ray.rllib."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: run on flywheel)", name=name)
        return None


sys.meta_path.insert(0, BlockRLlib())
'''


def write_rllib_blocker(folder: str | Path) -> Path:
    """Writes the blocking `sitecustomize.py` into `folder` (created if missing); put `folder` first on
    the child processes' `PYTHONPATH`. Returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return folder
