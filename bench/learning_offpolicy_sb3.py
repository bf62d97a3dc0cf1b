"""Stable-Baselines3 DQN on CartPole-v1 to 450 (last 100 episodes) and SAC on Pendulum-v1 to -250 (last 10).

    bench/.venv/bin/python bench/learning_offpolicy_sb3.py --seed 0 --max-seconds 600
    bench/.venv/bin/python bench/learning_offpolicy_sb3.py --algos sac --max-seconds 60

rl-zoo's tuned settings (rl-zoo is not installed; the values are those of its dqn.yml and sac.yml):
- DQN CartPole-v1: MlpPolicy [256, 256], lr 2.3e-3, batch 64, buffer 100,000, learning_starts 1,000,
  gamma 0.99, target_update_interval 10, train_freq 256, gradient_steps 128, exploration_fraction
  0.16 and exploration_final_eps 0.04 of rl-zoo's 50,000-step budget.
- SAC Pendulum-v1: MlpPolicy, lr 1e-3, otherwise SB3's defaults; rl-zoo's budget is 20,000 steps.
Training goes on past the zoo budget (in further `learn()` calls of one budget each, which keep
the exploration schedule at its end) until the threshold or `--max-seconds` of training per
algorithm. Monitor's finished-episode returns are checked as each episode ends. Prints one JSON
line like learning_offpolicy.py (see bench/README.md for the fields).
"""

from __future__ import annotations

import traceback
from typing import Any

from benchlib import emit
from offpolicy_watch import TASKS, ThresholdWatch, offpolicy_args, set_torch_threads

ZOO_TIMESTEPS = {"dqn": 50_000, "sac": 20_000}


def build_model(algo: str, seed: int) -> Any:
    """The rl-zoo model for `algo`, on one Monitor-wrapped env, on the CPU."""
    from stable_baselines3 import DQN, SAC
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env(TASKS[algo]["env"], n_envs=1, seed=seed)
    if algo == "sac":
        return SAC("MlpPolicy", env, learning_rate=1e-3, seed=seed, device="cpu")
    return DQN(
        "MlpPolicy",
        env,
        learning_rate=2.3e-3,
        batch_size=64,
        buffer_size=100_000,
        learning_starts=1000,
        gamma=0.99,
        target_update_interval=10,
        train_freq=256,
        gradient_steps=128,
        exploration_fraction=0.16,
        exploration_final_eps=0.04,
        policy_kwargs={"net_arch": [256, 256]},
        seed=seed,
        device="cpu",
    )


def run(algo: str, seed: int, max_seconds: float) -> dict[str, Any]:
    """Trains `algo` until the threshold or `max_seconds` of training; returns its fields of the line."""
    from stable_baselines3.common.callbacks import BaseCallback

    watch = ThresholdWatch(TASKS[algo], max_seconds)

    class Watcher(BaseCallback):
        """Hands each finished episode to the watch; stops training once the watch says so."""

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    watch.add_finished(float(info["episode"]["r"]), self.num_timesteps)
            return not watch.done()

    model = build_model(algo, seed)
    watcher = Watcher()
    watch.start()
    model.learn(total_timesteps=ZOO_TIMESTEPS[algo], callback=watcher)
    # Further calls of one zoo budget each: progress = steps / (steps + budget) stays >= 0.5, past the
    # end of DQN's exploration schedule (0.16), so epsilon stays at its final value.
    while not watch.done():
        model.learn(total_timesteps=ZOO_TIMESTEPS[algo], callback=watcher, reset_num_timesteps=False)
    return watch.result(model.num_timesteps)


def main() -> None:
    args = offpolicy_args(__doc__.splitlines()[0])
    line: dict[str, Any] = {"bench": "learning_offpolicy", "framework": "sb3", "seed": args.seed}
    line["torch_threads"] = set_torch_threads(args.torch_threads)
    for algo in args.algos:
        try:
            line[algo] = run(algo, args.seed, args.max_seconds)
        except Exception as exc:  # noqa: BLE001 - a failing algorithm is reported, the other still runs
            traceback.print_exc()
            line[algo] = {"error": f"{type(exc).__name__}: {exc}"}
    emit(line)


if __name__ == "__main__":
    main()
