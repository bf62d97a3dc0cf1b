"""What the Atari speed scripts share: their command line and the timing of a built algorithm."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from benchlib import time_sampling, turns_of


def atari_args(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--mode", choices=("sample", "train"), default="sample")
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--num-timesteps", type=int, default=512, help="env steps per sample() call")
    parser.add_argument("--train-batch", type=int, default=512, help="train_batch_size_per_learner")
    parser.add_argument("--num-epochs", type=int, default=1)
    parser.add_argument("--calls", type=int, default=3, help="timed calls (alone)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--min-seconds", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--torch-threads", type=int, default=0, help="torch threads (0: the framework's choice)"
    )
    parser.add_argument("--turns-dir")
    parser.add_argument("--turn-order")
    parser.add_argument("--turn-as")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(sys.argv[1:])
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    return args


def atari_meta(args: argparse.Namespace, framework: str) -> dict[str, Any]:
    """What a result line says about the run besides its timings."""
    return {
        "bench": f"atari_{args.mode}",
        "framework": framework,
        "num_envs": args.num_envs,
        "train_batch": args.train_batch,
        "num_epochs": args.num_epochs,
        "torch_threads": args.torch_threads,
    }


def time_algo(algo: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Times `algo.env_runner.sample(num_timesteps=N, explore=True)` (`--mode sample`) or `algo.train()`
    (`--mode train`) as `time_sampling` does (RLlib's and flywheel's algorithms answer both alike)."""
    runner = algo.env_runner

    def sample(n: int) -> int:
        return sum(len(e) for e in runner.sample(num_timesteps=n, explore=True))

    def train(_: int) -> int:
        return algo.train()["env_runners"]["num_env_steps_sampled"]

    result = time_sampling(
        sample if args.mode == "sample" else train,
        num_timesteps=args.num_timesteps,
        calls=args.calls,
        warmup=args.warmup,
        min_seconds=args.min_seconds,
        turns=turns_of(args),
    )
    algo.stop()
    return result
