"""PPO on CartPole-v1 with a live progress bar and TensorBoard/CSV/JSONL result files.

    python examples/ppo_cartpole.py                         # until the mean return reaches 475
    python examples/ppo_cartpole.py --run-dir runs/cartpole  # also write result files there
    tensorboard --logdir runs/cartpole

The same run from the command line: `flywheel train --algo PPO --env CartPole-v1 --stop-reward 475`.
"""

import argparse
import contextlib

from flywheel import PPOConfig
from flywheel.reporting import default_writers, train_with_progress


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop-reward", type=float, default=475.0, help="stop at this mean episode return")
    parser.add_argument(
        "--stop-timesteps", type=int, default=300_000, help="... or after this many env steps"
    )
    parser.add_argument("--stop-iters", type=int, default=None, help="... or after this many iterations")
    parser.add_argument(
        "--run-dir", default=None, help="write TensorBoard, results.csv and results.jsonl here"
    )
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration (what CI runs)")
    args = parser.parse_args(argv)

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        # 8 sub-envs stepped together: one forward pass serves all of them.
        .env_runners(num_envs_per_env_runner=8)
        # flywheel's CartPole recipe (RLlib's PPO defaults: lr=5e-5, 30 epochs, clip 0.3, a KL loss,
        # lambda 1.0): 4000 env steps per iteration, 10 epochs of 128-step minibatches.
        .training(
            clip_param=0.2,
            use_kl_loss=False,
            lambda_=0.95,
            lr=3e-4,
            train_batch_size_per_learner=4000,
            minibatch_size=128,
            num_epochs=10,
        )
        .debugging(seed=0)
    )
    if args.smoke:
        config.training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=1)
        args.stop_iters = 1

    algo = config.build_algo()
    writers = default_writers(args.run_dir) if args.run_dir else []
    with contextlib.ExitStack() as closing:
        for writer in writers:
            closing.enter_context(writer)
        # algo.train() in a loop, with a progress bar (iteration, env steps, return, steps/s).
        result = train_with_progress(
            algo,
            stop_reward=args.stop_reward,
            stop_timesteps=args.stop_timesteps,
            stop_iters=args.stop_iters,
            writers=writers,
            desc="PPO CartPole-v1",
        )
    algo.stop()
    print(
        f"iteration {result['training_iteration']}: mean return "
        f"{result['env_runners']['episode_return_mean']:.1f} after "
        f"{result['num_env_steps_sampled_lifetime']} env steps"
    )
    return result


if __name__ == "__main__":
    main()
