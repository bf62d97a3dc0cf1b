"""flywheel PPO on a MuJoCo env with CleanRL's `ppo_continuous_action` recipe (or the tuned one).

The configs are `examples/ppo_mujoco.py`'s (`cleanrl_config`, `tuned_config` with `--tuned`): no
custom class, no env creator. The curve's points are flywheel's own `episode_return_mean` over the
last 10 episodes (`metrics_num_episodes_for_smoothing=10`): raw returns, as reported to users.
Usage (from the repo's .venv, so the worktree's code runs):
`.venv/bin/python bench/mujoco_flywheel.py --env HalfCheetah-v5 --seed 0`.
"""

from __future__ import annotations

import os
import runpy

from mujoco_recipe import EVAL_EPISODES, FINAL_EPISODES, Recorder, parse_args

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "ppo_mujoco.py")


def main() -> None:
    args = parse_args(__doc__)
    example = runpy.run_path(EXAMPLE, run_name="bench")
    make = example["tuned_config"] if args.tuned else example["cleanrl_config"]
    recorder = Recorder("flywheel" + args.tag, args)
    config = (
        make(args.env, args.seed, args.steps)
        .reporting(metrics_num_episodes_for_smoothing=FINAL_EPISODES)
        .evaluation(evaluation_duration=EVAL_EPISODES, evaluation_config={"explore": False})
    )
    algo = config.build_algo()
    steps = 0
    recorder.start_training()
    while steps < args.steps:
        result = algo.train()
        steps = result["num_env_steps_sampled_lifetime"]
        recorder.point(steps, result["env_runners"].get("episode_return_mean"))
    recorder.stop_training()
    eval_return = algo.evaluate()["env_runners"]["episode_return_mean"]
    algo.stop()
    recorder.finish(steps, [eval_return])


if __name__ == "__main__":
    main()
