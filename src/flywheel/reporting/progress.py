"""`ProgressBar`: a live tqdm bar over training results (iteration, env steps, return, steps/s).

The driving loop::

    with ProgressBar(total_iters=20) as bar:
        for _ in range(20):
            bar.update(algo.train())

The bar counts iterations, or env steps when `total_timesteps` is given, and shows the newest
result's numbers after it: ``iter=3 env_steps=12000 return=41.20 steps/s=9530``.

While a drawn bar is open (inside ``with``), log records the root logger's console handlers would
print and ``warnings.warn`` messages are written through the bar (`tqdm.write`): each on a line of
its own above the bar, which is then drawn again, instead of on the bar's line.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import IO, Any, Self

from tqdm import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from flywheel.metrics.keys import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)


class ProgressBar:
    """A tqdm bar fed with `algo.train()` results.

    Args:
        total_iters: Iterations the run will take at most (the bar's total), if known.
        total_timesteps: Env steps the run will take at most; makes the bar count env steps.
        desc: Text before the bar (e.g. "PPO CartPole-v1").
        file: Where to draw (default: stderr, so stdout stays clean for results).
        disable: Draw nothing (update() still works; for quiet runs).
    """

    def __init__(
        self,
        *,
        total_iters: int | None = None,
        total_timesteps: int | None = None,
        desc: str | None = None,
        file: IO[str] | None = None,
        disable: bool = False,
    ) -> None:
        self._count_timesteps = total_timesteps is not None
        self._bar = tqdm(
            total=total_timesteps if self._count_timesteps else total_iters,
            desc=desc,
            unit="step" if self._count_timesteps else "iter",
            file=file,
            disable=disable,
            dynamic_ncols=True,
        )
        self._redirect = contextlib.ExitStack()

    def update(self, result: Mapping[str, Any]) -> None:
        """Moves the bar to `result`'s iteration (or env steps) and shows its numbers."""
        iteration = int(result["training_iteration"])
        env_steps = int(result[NUM_ENV_STEPS_SAMPLED_LIFETIME])
        self._bar.set_postfix_str(describe_result(result), refresh=False)
        self._bar.update((env_steps if self._count_timesteps else iteration) - self._bar.n)

    def close(self) -> None:
        """Leaves the final bar on screen and releases it (and ends the redirection of log lines)."""
        self._redirect.close()
        self._bar.close()

    def __enter__(self) -> Self:
        if not self._bar.disable:
            self._redirect.enter_context(logging_redirect_tqdm())
            self._redirect.enter_context(_warnings_through_bar())
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def describe_result(result: Mapping[str, Any]) -> str:
    """``iter=3 env_steps=12000 return=41.20 steps/s=9530``: a result's headline numbers on one line.

    `return` is ``env_runners/episode_return_mean`` (nan until an episode finished); `steps/s` is the
    env steps sampled in this iteration over its wall time.
    """
    runners = result.get(ENV_RUNNER_RESULTS, {})
    seconds = result.get("time_this_iter_s", 0.0)
    sampled = runners.get(NUM_ENV_STEPS_SAMPLED, 0)
    rate = sampled / seconds if seconds > 0 else float("nan")
    return (
        f"iter={result['training_iteration']} env_steps={result[NUM_ENV_STEPS_SAMPLED_LIFETIME]} "
        f"return={runners.get(EPISODE_RETURN_MEAN, float('nan')):.2f} steps/s={rate:.0f}"
    )


@contextlib.contextmanager
def _warnings_through_bar() -> Iterator[None]:
    """`warnings.warn` messages written with `tqdm.write` (above any bar on their file) while inside."""
    shown = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: IO[str] | None = None,
        line: str | None = None,
    ) -> None:
        text = warnings.formatwarning(message, category, filename, lineno, line)
        tqdm.write(text.rstrip("\n"), file=file or sys.stderr)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown
