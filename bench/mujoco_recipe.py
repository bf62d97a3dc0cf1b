"""CleanRL's `ppo_continuous_action` recipe, the numbers both MuJoCo benchmark scripts share.

Each framework's script (`mujoco_flywheel.py`, `mujoco_sb3.py`) spells these out in its own API;
nothing here imports a framework. `record` keeps one run's learning curve in a file as it goes,
so a run stopped early still leaves its curve.
"""

from __future__ import annotations

import argparse
import json
import os
import time

RECIPE = {
    "num_envs": 1,
    "num_steps": 2048,  # env steps per update (train batch)
    "minibatch_size": 64,  # 2048 / 32 minibatches
    "update_epochs": 10,
    "learning_rate": 3e-4,  # annealed linearly to 0 over the budget
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "clip_coef": 0.2,
    "clip_vloss": 0.2,  # the new value clipped to old +- 0.2 (PPO2 style)
    "ent_coef": 0.0,
    "vf_coef": 0.25,  # CleanRL's 0.5 * vf_coef (0.5) on the squared error
    "max_grad_norm": 0.5,
    "adam_eps": 1e-5,
    "hiddens": [64, 64],  # tanh; separate actor and critic
    "obs_clip": 10.0,  # observations and rewards normalized, then clipped to +-10
    "reward_clip": 10.0,
}
BUDGET = 1_000_000
FINAL_EPISODES = 10  # curve points and the final return: means over the last 10 training episodes
EVAL_EPISODES = 10  # plus 10 deterministic episodes after training
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def parse_args(doc: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--env", default="HalfCheetah-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=BUDGET)
    parser.add_argument("--tuned", action="store_true", help="the tuned recipe instead of CleanRL's")
    parser.add_argument("--tag", default="", help="appended to the framework name in the results")
    return parser.parse_args()


class Recorder:
    """Writes the learning curve to results/mujoco/<framework>_<env>_seed<seed>.jsonl, one point per
    update (`{"t": env steps, "r": mean raw return of the last 10 training episodes, "cpu_s", "wall_s"}`,
    seconds of training so far), and the summary line to results/mujoco_<framework>.jsonl."""

    def __init__(self, framework: str, args: argparse.Namespace):
        self.framework, self.args = framework, args
        os.makedirs(os.path.join(RESULTS, "mujoco"), exist_ok=True)
        name = f"{framework}_{args.env}_seed{args.seed}.jsonl"
        self.curve_path = os.path.join(RESULTS, "mujoco", name)
        with open(self.curve_path, "w"):
            pass  # a new run starts a new curve
        self.last_mean: float | None = None
        self.start = self.cpu_start = self.seconds = self.cpu_seconds = 0.0

    def start_training(self) -> None:
        """Training time counts from here (the algorithm is built) to `stop_training`."""
        self.start, self.cpu_start = time.time(), time.process_time()

    def stop_training(self) -> None:
        self.seconds = time.time() - self.start
        self.cpu_seconds = time.process_time() - self.cpu_start

    def point(self, env_steps: int, mean_return: float | None) -> None:
        if mean_return is None or mean_return != mean_return:  # no episode finished yet (or NaN)
            return
        self.last_mean = float(mean_return)
        with open(self.curve_path, "a") as f:
            point = {
                "t": int(env_steps),
                "r": round(self.last_mean, 2),
                "cpu_s": round(time.process_time() - self.cpu_start, 1),
            }
            f.write(json.dumps({**point, "wall_s": round(time.time() - self.start, 1)}) + "\n")

    def finish(self, env_steps: int, eval_returns: list[float], **extra) -> dict:
        line = {
            "bench": "mujoco",
            "framework": self.framework,
            "env": self.args.env,
            "seed": self.args.seed,
            "env_steps": int(env_steps),
            "train_seconds": round(self.seconds, 1),
            "train_cpu_seconds": round(self.cpu_seconds, 1),
            "env_steps_per_s": round(env_steps / self.seconds, 1),
            # Per second of this process's own CPU time: what one core does, whatever else loads the machine.
            "env_steps_per_cpu_s": round(env_steps / self.cpu_seconds, 1),
            "final_return": None if self.last_mean is None else round(self.last_mean, 1),
            "eval_return": round(sum(eval_returns) / max(1, len(eval_returns)), 1),
            "loadavg_1m": os.getloadavg()[0],
            **extra,
        }
        with open(os.path.join(RESULTS, f"mujoco_{self.framework}.jsonl"), "a") as f:
            f.write(json.dumps(line) + "\n")
        print(json.dumps(line), flush=True)
        return line
