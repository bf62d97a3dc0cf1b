"""PPO on MinAtar Breakout: the quick pixel test bed (10x10 frames with 4 channels, a small CNN).

    python examples/ppo_minatar.py                 # 1M env steps (the bench run: mean return >= 10)
    python examples/ppo_minatar.py --smoke         # one tiny iteration (CI)

MinAtar ids (`MinAtar/Breakout-v1`, ...) need the `minatar` extra; flywheel registers them on first
use. Observations are `bool` frames `(10, 10, 4)`; the default PPO module reads them with the CNN
`conv_filters` picks (here one 3x3 layer of 32 channels, as the MinAtar paper's network with twice its
channels) and a 256-unit head.
"""

from __future__ import annotations

import argparse

from flywheel import PPOConfig
from flywheel.reporting import train_with_progress


def build_config(seed: int = 0) -> PPOConfig:
    """The recipe: 8 envs, batches of 1024 steps, 8 epochs of minibatches of 256, the learning rate
    falling from 1e-3 to 1e-4 over 1M env steps, and separate policy and value CNNs."""
    return (
        PPOConfig()
        .environment("MinAtar/Breakout-v1")
        .env_runners(num_envs_per_env_runner=8)
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lr=[[0, 1e-3], [1_000_000, 1e-4]],
            train_batch_size_per_learner=1024,
            minibatch_size=256,
            num_epochs=8,
            entropy_coeff=0.01,
            gamma=0.99,
            lambda_=0.95,
            vf_clip_param=float("inf"),
        )
        .rl_module(
            model_config={"conv_filters": [[32, 3, 1]], "head_fcnet_hiddens": [256], "vf_share_layers": False}
        )
        .debugging(seed=seed)
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration")
    parser.add_argument("--timesteps", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    config = build_config(args.seed)
    if args.smoke:
        config.training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
    algo = config.build_algo()
    try:
        result = train_with_progress(
            algo, stop_iters=1 if args.smoke else None, stop_timesteps=None if args.smoke else args.timesteps
        )
    finally:
        algo.stop()
    ret = result["env_runners"]["episode_return_mean"]
    print(
        f"iteration {result['training_iteration']}: mean return {ret:.1f} after "
        f"{result['num_env_steps_sampled_lifetime']} env steps"
    )
    return result


if __name__ == "__main__":
    main()
