"""What the off-policy peer scripts share: the tasks, and a watch on the mean return of the last N episodes.

`learning_offpolicy_rllib.py` and `learning_offpolicy_sb3.py` feed finished episodes to a
`ThresholdWatch`, which records when the mean of the last `window` finished training episodes
first reaches the threshold, the best mean so far, and builds the per-algorithm fields of the JSON
line (named as in flywheel's `learning_offpolicy.py` where they mean the same).
Nothing here imports a framework.
"""

from __future__ import annotations

import argparse
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

# The same thresholds and windows as flywheel's bench/learning_offpolicy.py.
TASKS: dict[str, dict[str, Any]] = {
    "dqn": {"env": "CartPole-v1", "threshold": 450.0, "window": 100},
    "sac": {"env": "Pendulum-v1", "threshold": -250.0, "window": 10},
}


class ThresholdWatch:
    """Follows one training run: env steps, finished-episode returns, the first crossing of the threshold.

    Time counts from `start()` (the start of the training loop, after the algorithm is built), as in
    flywheel's script, so the seconds compare like with like; `setup_s` is the time from creating the
    watch (just before the algorithm is built) to `start()`.
    """

    def __init__(self, task: dict[str, Any], max_seconds: float) -> None:
        self.task = task
        self.max_seconds = max_seconds
        self.returns: deque[float] = deque(maxlen=task["window"])
        self.num_episodes = 0
        self.env_steps = 0
        self.best: tuple[float, int] | None = None  # (mean, env steps) over full windows only
        self.reached: dict[str, Any] | None = None
        self._partial: dict[Any, float] = {}
        self._created = time.perf_counter()
        self._wall0, self._cpu0 = self._created, time.process_time()

    def start(self) -> None:
        self._wall0, self._cpu0 = time.perf_counter(), time.process_time()

    def elapsed(self) -> float:
        return time.perf_counter() - self._wall0

    def out_of_time(self) -> bool:
        return self.elapsed() >= self.max_seconds

    def done(self) -> bool:
        """True once the threshold was reached or the time is up: the training loop stops."""
        return self.reached is not None or self.out_of_time()

    def add_finished(self, episode_return: float, env_steps: int) -> None:
        """One finished episode, `env_steps` sampled so far; checks the last-N mean (it changes only here)."""
        self.env_steps = env_steps
        self.returns.append(episode_return)
        self.num_episodes += 1
        if len(self.returns) < self.returns.maxlen:
            return
        mean = sum(self.returns) / len(self.returns)
        if self.best is None or mean > self.best[0]:
            self.best = (mean, env_steps)
        if self.reached is None and mean >= self.task["threshold"]:
            self.reached = {
                "env_steps": env_steps,
                "seconds": self.elapsed(),
                "cpu_seconds": time.process_time() - self._cpu0,
            }

    def add_chunks(self, episodes: Iterable[Any]) -> None:
        """Episode chunks of one `sample()` call (RLlib): returns summed per episode id until the done chunk.

        The call's env steps count first, so a crossing in it is credited with all of them: the
        runner knows of it only when the call returns.
        """
        episodes = list(episodes)
        self.env_steps += sum(len(episode) for episode in episodes)
        for episode in episodes:
            ret = self._partial.pop(episode.id_, 0.0) + float(episode.get_return())
            if episode.is_done:
                self.add_finished(ret, self.env_steps)
            else:
                self._partial[episode.id_] = ret

    def result(self, env_steps: int | None = None) -> dict[str, Any]:
        """The per-algorithm fields of the JSON line (see bench/README.md)."""
        steps = self.env_steps if env_steps is None else env_steps
        wall, cpu = self.elapsed(), time.process_time() - self._cpu0
        hit = self.reached
        return {
            "env": self.task["env"],
            "threshold": self.task["threshold"],
            "window": self.task["window"],
            "max_seconds": self.max_seconds,
            "env_steps_to_threshold": hit["env_steps"] if hit else None,
            "seconds_to_threshold": round(hit["seconds"], 1) if hit else None,
            "cpu_seconds_to_threshold": round(hit["cpu_seconds"], 1) if hit else None,
            "env_steps": steps,
            "seconds": round(wall, 1),
            "cpu_seconds": round(cpu, 1),
            "env_steps_per_s": round(steps / wall, 1) if wall > 0 else None,
            "best_mean_return": round(self.best[0], 1) if self.best else None,
            "env_steps_at_best": self.best[1] if self.best else None,
            "last_mean_return": round(sum(self.returns) / len(self.returns), 1) if self.returns else None,
            "num_episodes": self.num_episodes,
            "setup_s": round(self._wall0 - self._created, 1),
        }


def offpolicy_args(description: str) -> argparse.Namespace:
    """Command line shared by the off-policy peer scripts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--algos", nargs="+", choices=sorted(TASKS), default=sorted(TASKS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-seconds", type=float, default=600.0, help="training wall-clock cap per algorithm"
    )
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=0,
        help="torch intra-op threads; 0 keeps the framework's default (torch's: one per core)",
    )
    return parser.parse_args()


def set_torch_threads(num_threads: int) -> int:
    """Applies `--torch-threads` (0: leave torch's default) and returns the threads torch will use.

    Neither peer sets torch's thread count; flywheel runs its local runner and learner on one
    thread. On this 2-core machine with other load, two threads made SB3's SAC ~8x slower than one.
    """
    import torch

    if num_threads > 0:
        torch.set_num_threads(num_threads)
    return torch.get_num_threads()
