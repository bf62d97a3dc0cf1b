"""flywheel PPO on CartPole-v1 with `num_env_runners` remote runners: `train()` env steps per second.

The same settings as `train_rllib_remote.py` (RLlib's CartPole example: lr 3e-4, 6 epochs of
128-step minibatches, train batch 4000, a linear 32-unit network with shared value layers, one
sub-env per runner), so the two figures compare directly when taken in the same run. One warm-up
iteration, then timed ones until at least `--iters` calls and `--min-seconds` passed (the same
span of time for a fast and a slow framework, so noise weighs alike); `num_env_runners=0` samples
in this process (the scaling baseline). Prints one JSON line.
"""

import argparse
import time
from collections.abc import Callable

from benchlib import run_guarded, since_start


def remote_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--num-env-runners", type=int, default=2)
    parser.add_argument("--iters", type=int, default=5, help="at least this many timed train() calls")
    parser.add_argument("--min-seconds", type=float, default=10.0, help="and at least this long")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def timed_train(train: Callable[[], int], args: argparse.Namespace) -> tuple[int, int, float]:
    """Calls `train` (which returns the lifetime env steps) until `args.iters` calls and
    `args.min_seconds` passed; returns (last lifetime steps, calls, seconds)."""
    start, iters = time.perf_counter(), 0
    while True:
        last = train()
        iters += 1
        elapsed = time.perf_counter() - start
        if iters >= args.iters and elapsed >= args.min_seconds:
            return last, iters, elapsed


def main() -> None:
    args = remote_args(__doc__)

    def body() -> dict:
        from flywheel import PPOConfig

        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .env_runners(num_env_runners=args.num_env_runners, num_envs_per_env_runner=1)
            .training(
                lr=3e-4,
                train_batch_size_per_learner=4000,
                minibatch_size=128,
                num_epochs=6,
                vf_loss_coeff=0.01,
            )
            .rl_module(
                model_config={"fcnet_hiddens": [32], "fcnet_activation": "linear", "vf_share_layers": True}
            )
            .debugging(seed=args.seed)
        )
        algo = config.build_algo()
        startup_s = since_start()
        first = algo.train()["num_env_steps_sampled_lifetime"]
        last, iters, elapsed = timed_train(lambda: algo.train()["num_env_steps_sampled_lifetime"], args)
        algo.stop()
        return {
            "steps_per_s": round((last - first) / elapsed, 1),
            "timed_env_steps": int(last - first),
            "timed_s": round(elapsed, 2),
            "timed_iters": iters,
            "startup_s": round(startup_s, 1),
        }

    run_guarded(
        {"bench": "train_remote", "framework": "flywheel", "num_env_runners": args.num_env_runners}, body
    )


if __name__ == "__main__":
    main()
