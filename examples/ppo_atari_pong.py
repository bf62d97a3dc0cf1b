"""PPO on Atari Pong from pixels: DeepMind preprocessing, 4 stacked uint8 frames, RLlib's 84x84 CNN.

    python examples/ppo_atari_pong.py --run-dir runs/pong      # long: Pong needs millions of env steps
    python examples/ppo_atari_pong.py --smoke                  # one tiny iteration (CI)
    flywheel plot runs/pong -o pong.png; tensorboard --logdir runs/pong

Needs the `ale` extra (and `video` for the evaluation videos saved under RUN_DIR/videos). Naming an
ALE id is all it takes: flywheel wraps each sub-env in `AtariPreprocessing` and stacks the last 4
frames in the env-to-module and learner pipelines (docs/concepts/pixels.md).
"""

from __future__ import annotations

import argparse
import contextlib

from flywheel import PPOConfig
from flywheel.reporting import default_writers, train_with_progress


def build_config(seed: int = 0) -> PPOConfig:
    """CleanRL's Atari PPO settings as a config: 8 envs x 128 steps, 4 epochs of 256-step minibatches."""
    return (
        PPOConfig()
        .environment(
            "ale_py:ALE/Pong-v5",
            env_config={"frameskip": 1, "repeat_action_probability": 0.0, "full_action_space": False},
            clip_rewards=True,
        )
        .env_runners(num_envs_per_env_runner=8)
        .training(
            use_kl_loss=False,
            lambda_=0.95,
            lr=[[0, 2.5e-4], [10_000_000, 0.0]],
            train_batch_size_per_learner=1024,
            minibatch_size=256,
            num_epochs=4,
            clip_param=0.1,
            entropy_coeff=0.01,
            vf_loss_coeff=0.5,
            vf_clip_param=float("inf"),
            grad_clip=0.5,
        )
        .rl_module(model_config={"vf_share_layers": True, "head_fcnet_hiddens": [512]})
        .evaluation(evaluation_interval=50, evaluation_duration=1, evaluation_config={"render_env": True})
        .debugging(seed=seed)
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-timesteps", type=int, default=10_000_000)
    parser.add_argument("--run-dir", default=None, help="write result files and evaluation videos here")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)
    config = build_config()
    if args.smoke:
        config.env_runners(num_envs_per_env_runner=2).training(
            train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1
        ).evaluation(evaluation_interval=None)
    algo = config.build_algo()
    writers = default_writers(args.run_dir) if args.run_dir else []
    with contextlib.ExitStack() as closing:
        for writer in writers:
            closing.enter_context(writer)
        result = train_with_progress(
            algo,
            stop_iters=1 if args.smoke else None,
            stop_timesteps=None if args.smoke else args.stop_timesteps,
            writers=writers,
            desc="PPO Pong",
        )
    algo.stop()
    print(
        f"iteration {result['training_iteration']}: mean return "
        f"{result['env_runners']['episode_return_mean']:.1f} after {result['num_env_steps_sampled_lifetime']} env steps"
    )
    return result


if __name__ == "__main__":
    main()
