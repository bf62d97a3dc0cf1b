"""`rotate_checkpoints`: keep only the newest periodic checkpoints of a run directory."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

_PERIODIC = re.compile(r"checkpoint_(\d+)")


def rotate_checkpoints(run_dir: str | os.PathLike, keep_last: int) -> list[str]:
    """Deletes all but the `keep_last` newest `<run_dir>/checkpoint_<iteration>` directories.

    Newest means the highest iteration number. Other entries (the final `checkpoint`, result
    files, a save in progress) are left alone. Returns the deleted paths, oldest first.
    """
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 1:
        raise ValueError(
            f"rotate_checkpoints() needs keep_last >= 1, got {keep_last!r}. Fix: pass how many periodic "
            "checkpoints to keep (e.g. 3)."
        )
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return []
    periodic = sorted(
        (int(match.group(1)), entry)
        for entry in run_dir.iterdir()
        if entry.is_dir() and (match := _PERIODIC.fullmatch(entry.name))
    )
    doomed = [entry for _, entry in periodic[: max(0, len(periodic) - keep_last)]]
    for entry in doomed:
        shutil.rmtree(entry)
    return [str(entry) for entry in doomed]
