"""Learning curves of one or more runs: return against env steps and against wall time.

    flywheel plot runs/ppo_pong_seed0 runs/ppo_pong_seed1 runs/dqn_pong -o curves.png

Each run directory holds the `results.csv` that `flywheel train` (or `default_writers`) wrote; a
directory without one stands for its sub-directories that have one. Runs are grouped by **label**:
the directory name without a trailing seed suffix (`_seed0`, `-seed1`, `_s2`), or the `labels` given.
One label with one run draws its curve; several runs under a label (seeds) draw their mean, with
the band from the lowest to the highest run, on the span of env steps (or seconds) they all reached.
Needs the `plot` extra (matplotlib).
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from flywheel.errors import FlywheelError
from flywheel.reporting.writers import RESULTS_CSV

DEFAULT_METRIC = "env_runners/episode_return_mean"
X_AXES = {"num_env_steps_sampled_lifetime": "env steps", "time_total_s": "wall time (s)"}
_SEED_SUFFIX = re.compile(r"[_-](?:seed|s)\d+$")
_GRID_POINTS = 200


class Curve(NamedTuple):
    """One run's metric (`y`) at each x axis's values (`xs[axis]`), rows where the metric is NaN left out."""

    run_dir: Path
    xs: dict[str, np.ndarray]
    y: np.ndarray


def run_label(run_dir: str | os.PathLike) -> str:
    """The directory's name without a trailing seed suffix: `runs/ppo_seed3` -> `ppo`."""
    return _SEED_SUFFIX.sub("", Path(run_dir).resolve().name)


def find_runs(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """The run directories `paths` name: each path with a results.csv, else its sub-directories that have one."""
    runs: list[Path] = []
    for path in map(Path, paths):
        if (path / RESULTS_CSV).is_file():
            runs.append(path)
            continue
        children = sorted(p for p in path.glob("*") if (p / RESULTS_CSV).is_file()) if path.is_dir() else []
        if not children:
            raise FlywheelError(
                f"{path} holds no {RESULTS_CSV} (nor do its sub-directories). Fix: pass the run directory "
                "`flywheel train --checkpoint-dir` wrote, or a folder of such directories."
            )
        runs.extend(children)
    return runs


def load_curve(run_dir: str | os.PathLike, metric: str = DEFAULT_METRIC) -> Curve:
    """`metric` against every x axis, from `run_dir/results.csv`."""
    path = Path(run_dir) / RESULTS_CSV
    with path.open(newline="") as file:
        rows = list(csv.DictReader(file))
    columns = rows[0].keys() if rows else []
    missing = [key for key in (metric, *X_AXES) if key not in columns]
    if missing:
        raise FlywheelError(
            f"{path} has no column {missing[0]!r} (its columns include {sorted(columns)[:8]}). Fix: pass "
            f"--metric with one of its columns, e.g. {DEFAULT_METRIC!r}."
        )
    table = {key: np.array([_number(row[key]) for row in rows]) for key in (metric, *X_AXES)}
    keep = ~np.isnan(table[metric])
    return Curve(Path(run_dir), {axis: table[axis][keep] for axis in X_AXES}, table[metric][keep])


def group_by_label(runs: Sequence[Path], labels: Sequence[str] | None = None) -> dict[str, list[Path]]:
    """Runs grouped by label (`labels[i]` for `runs[i]` when given, else `run_label`), in first-seen order."""
    if labels is not None and len(labels) != len(runs):
        raise FlywheelError(
            f"--labels gave {len(labels)} labels for {len(runs)} runs ({[str(r) for r in runs]}). Fix: give "
            "one label per run directory, in the same order."
        )
    groups: dict[str, list[Path]] = {}
    for i, run in enumerate(runs):
        groups.setdefault(labels[i] if labels is not None else run_label(run), []).append(run)
    return groups


def mean_and_band(
    curves: Sequence[Curve], axis: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x grid, mean, lowest, highest) of the curves, interpolated on a grid up to the x all of them reached."""
    reached = min(curve.xs[axis][-1] for curve in curves)
    start = max(curve.xs[axis][0] for curve in curves)
    grid = np.linspace(start, reached, _GRID_POINTS) if reached > start else np.array([start])
    values = np.stack([np.interp(grid, curve.xs[axis], curve.y) for curve in curves])
    return grid, values.mean(axis=0), values.min(axis=0), values.max(axis=0)


def plot_runs(
    paths: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    *,
    labels: Sequence[str] | None = None,
    metric: str = DEFAULT_METRIC,
) -> str:
    """Draws `metric` against env steps and wall time for the runs in `paths` into the image `out`."""
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise FlywheelError(
            "Plotting learning curves needs matplotlib. Fix: pip install 'flywheel[plot]'."
        ) from e
    groups = group_by_label(find_runs(paths), labels)
    curves = {label: [load_curve(run, metric) for run in runs] for label, runs in groups.items()}
    figure = Figure(figsize=(12, 4.5), layout="constrained")
    for ax, (axis, axis_name) in zip(figure.subplots(1, len(X_AXES)), X_AXES.items(), strict=True):
        for label, runs in curves.items():
            runs = [curve for curve in runs if len(curve.y)]
            if not runs:
                continue
            grid, mean, low, high = mean_and_band(runs, axis)
            name = label if len(runs) == 1 else f"{label} (mean of {len(runs)}, band: min-max)"
            (line,) = ax.plot(grid, mean, label=name)
            if len(runs) > 1:
                ax.fill_between(grid, low, high, color=line.get_color(), alpha=0.2)
        ax.set_xlabel(axis_name)
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=100)
    return str(out)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return math.nan
    return value
