"""`train_with_progress`: the `algo.train()` loop with stop conditions, a progress bar and result writers;
`default_writers`: the writers of one run dir.

The CLI's `flywheel train` runs this loop; user scripts opt into the same bar and files with::

    result = train_with_progress(algo, stop_reward=475, stop_timesteps=200_000, writers=default_writers("runs/x"))
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flywheel.metrics.keys import ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN, NUM_ENV_STEPS_SAMPLED_LIFETIME
from flywheel.reporting.progress import ProgressBar
from flywheel.reporting.videos import VideoWriter
from flywheel.reporting.writers import (
    RESULTS_CSV,
    RESULTS_JSONL,
    TENSORBOARD_EVENTS,
    VIDEO_DIR,
    CSVWriter,
    JSONLWriter,
    ResultWriter,
    TensorBoardWriter,
)

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm import Algorithm


def stop_reason(
    result: Mapping[str, Any],
    *,
    stop_iters: int | None = None,
    stop_timesteps: int | None = None,
    stop_reward: float | None = None,
) -> str | None:
    """Why training should stop after `result` (the first condition met, as text), or None to go on.

    The reward condition reads ``result["env_runners"]["episode_return_mean"]`` (NaN, i.e. no episode
    finished yet, never meets it); timesteps read ``num_env_steps_sampled_lifetime``.
    """
    if stop_reward is not None:
        ret = result.get(ENV_RUNNER_RESULTS, {}).get(EPISODE_RETURN_MEAN, math.nan)
        if ret >= stop_reward:
            return f"{EPISODE_RETURN_MEAN} {ret:.2f} >= {stop_reward:g}"
    if stop_timesteps is not None and result[NUM_ENV_STEPS_SAMPLED_LIFETIME] >= stop_timesteps:
        return (
            f"{NUM_ENV_STEPS_SAMPLED_LIFETIME} {result[NUM_ENV_STEPS_SAMPLED_LIFETIME]} >= {stop_timesteps}"
        )
    if stop_iters is not None and result["training_iteration"] >= stop_iters:
        return f"training_iteration {result['training_iteration']} >= {stop_iters}"
    return None


def train_with_progress(
    algo: Algorithm,
    *,
    stop_iters: int | None = None,
    stop_timesteps: int | None = None,
    stop_reward: float | None = None,
    writers: Sequence[ResultWriter] = (),
    progress_bar: bool = True,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    desc: str | None = None,
) -> dict[str, Any]:
    """Calls `algo.train()` until a stop condition is met; returns the last result.

    Each result goes to every writer, then to `on_result` (e.g. to save a checkpoint), and moves
    the progress bar (drawn on stderr unless `progress_bar=False`). With no stop condition the loop
    runs until interrupted. The writers stay open: the caller closes them.
    """
    stops = {"stop_iters": stop_iters, "stop_timesteps": stop_timesteps, "stop_reward": stop_reward}
    bar = ProgressBar(
        total_iters=stop_iters, total_timesteps=stop_timesteps, desc=desc, disable=not progress_bar
    )
    with bar:
        while True:
            result = algo.train()
            for writer in writers:
                writer.write(result)
            if on_result is not None:
                on_result(result)
            bar.update(result)
            if stop_reason(result, **stops) is not None:
                return result


def default_writers(run_dir: str | os.PathLike) -> list[ResultWriter]:
    """TensorBoard event files in `run_dir`, plus `run_dir/results.csv`, `run_dir/results.jsonl`, and the
    videos results hold (e.g. with `render_env`) as mp4 files in `run_dir/videos/` (`VideoWriter`).

    A run dir holds one run: as the two results files are started afresh, the TensorBoard event files
    an earlier run left in `run_dir` are deleted (TensorBoard would draw both runs as one)."""
    run_dir = Path(run_dir)
    for stale in run_dir.glob(TENSORBOARD_EVENTS):
        stale.unlink()
    return [
        TensorBoardWriter(run_dir),
        CSVWriter(run_dir / RESULTS_CSV),
        JSONLWriter(run_dir / RESULTS_JSONL),
        VideoWriter(run_dir / VIDEO_DIR),
    ]
