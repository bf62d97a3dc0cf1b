"""flywheel PPO on MinAtar Breakout (examples/ppo_minatar.py's recipe) for 1M env steps.

    .venv/bin/python bench/learning_minatar.py --seed 0

Prints one JSON line: the env steps at which the mean return (last 100 episodes) first reached 10
(null if not within the budget), the mean return at the end and at its best, env steps per second,
and the curve every 50,000 env steps.
"""

from __future__ import annotations

import argparse
import runpy
import time
from pathlib import Path

from benchlib import emit

EXAMPLE = Path(__file__).parents[1] / "examples" / "ppo_minatar.py"
THRESHOLD = 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=int, default=1_000_000)
    args = parser.parse_args()
    algo = runpy.run_path(str(EXAMPLE), run_name="bench")["build_config"](args.seed).build_algo()
    start, steps, reached, best, curve, next_point = time.perf_counter(), 0, None, float("-inf"), [], 0
    try:
        while steps < args.budget:
            result = algo.train()
            steps = result["num_env_steps_sampled_lifetime"]
            ret = result["env_runners"]["episode_return_mean"]
            best = max(best, ret)
            if reached is None and ret >= THRESHOLD:
                reached = steps
            if steps >= next_point:
                curve.append([steps, round(ret, 2)])
                next_point += 50_000
    finally:
        algo.stop()
    seconds = time.perf_counter() - start
    emit(
        {
            "bench": "learning_minatar",
            "framework": "flywheel",
            "env": "MinAtar/Breakout-v1",
            "seed": args.seed,
            "threshold": THRESHOLD,
            "env_steps_to_threshold": reached,
            "env_steps": steps,
            "last_mean_return": round(ret, 2),
            "best_mean_return": round(best, 2),
            "seconds": round(seconds, 1),
            "env_steps_per_s": round(steps / seconds, 1),
            "curve": curve,
        }
    )


if __name__ == "__main__":
    main()
