"""`local_path`: a recording or input folder as the local filesystem names it; `MINARI_PREFIX`: the
`input_` that names a Minari dataset instead."""

from __future__ import annotations

import os

LOCAL_SCHEME = "local://"
"""Ray's prefix for a path on the node's own disk (`output="local:///tmp/cartpole"` in RLlib programs)."""
MINARI_PREFIX = "minari:"
"""`input_="minari:DATASET_ID"` reads a Minari dataset from the local Minari data folder."""


def local_path(path: str | os.PathLike) -> str:
    """`path` without Ray's `local://` prefix (`"local:///tmp/x"` -> `"/tmp/x"`); other paths as given."""
    path = os.fspath(path)
    return path[len(LOCAL_SCHEME) :] if path.startswith(LOCAL_SCHEME) else path
