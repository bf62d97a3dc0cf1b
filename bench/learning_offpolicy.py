"""flywheel's off-policy algorithms until their learning thresholds: DQN on CartPole-v1 to a mean return
of 450 (last 100 episodes) within 100,000 env steps, SAC on Pendulum-v1 to -250 (last 10 episodes)
within 20,000 env steps, with the settings of examples/dqn_cartpole.py and examples/sac_pendulum.py.

    .venv/bin/python bench/learning_offpolicy.py                  # both, seed 0
    .venv/bin/python bench/learning_offpolicy.py --algos sac --seed 1

Prints one JSON line: per algorithm the env steps, wall and CPU seconds at which the threshold was
first reached (null if not within the budget), the last mean return, and the training steps per
second (one training step = sample a few env steps, replay, update, sync weights), or "error".
"""

from __future__ import annotations

import argparse
import runpy
import time
from pathlib import Path
from typing import Any

from benchlib import emit

EXAMPLES = Path(__file__).parents[1] / "examples"
TASKS = {
    "dqn": {"example": "dqn_cartpole.py", "env": "CartPole-v1", "threshold": 450.0, "budget": 100_000},
    "sac": {"example": "sac_pendulum.py", "env": "Pendulum-v1", "threshold": -250.0, "budget": 20_000},
}


def run(task: dict[str, Any], seed: int) -> dict[str, Any]:
    """Trains until the threshold or the budget; returns what the JSON line reports for `task`."""
    config = runpy.run_path(str(EXAMPLES / task["example"]), run_name="bench")["build_config"]()
    config.debugging(seed=seed)
    steps_per_training_step = config.get_rollout_fragment_length() * config.num_envs_per_env_runner
    steps_per_training_step *= config.sample_and_train_rounds()[0]
    algo = config.build_algo()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    reached, ret, steps, best, best_steps = None, float("nan"), 0, float("-inf"), 0
    try:
        while steps < task["budget"]:
            result = algo.train()
            steps = result["num_env_steps_sampled_lifetime"]
            ret = result["env_runners"].get("episode_return_mean", float("nan"))
            if ret > best:
                best, best_steps = ret, steps
            if ret >= task["threshold"]:
                reached = steps
                break
    finally:
        algo.stop()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {
        "env": task["env"],
        "threshold": task["threshold"],
        "budget_env_steps": task["budget"],
        "env_steps_to_threshold": reached,
        "seconds_to_threshold": round(wall, 1) if reached else None,
        "cpu_seconds_to_threshold": round(cpu, 1) if reached else None,
        "env_steps": steps,
        "last_mean_return": round(ret, 1),
        "best_mean_return": round(best, 1),
        "env_steps_at_best": best_steps,
        "seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "env_steps_per_s": round(steps / wall, 1),
        "training_steps_per_s": round(steps / steps_per_training_step / wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", choices=sorted(TASKS), default=sorted(TASKS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    line: dict[str, Any] = {"bench": "learning_offpolicy", "framework": "flywheel", "seed": args.seed}
    for name in args.algos:
        try:
            line[name] = run(TASKS[name], args.seed)
        except Exception as exc:  # noqa: BLE001 - a failing algorithm is reported, the other still runs
            line[name] = {"error": f"{type(exc).__name__}: {exc}"}
    emit(line)


if __name__ == "__main__":
    main()
