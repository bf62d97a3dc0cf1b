"""Command line of the Atari speed scripts: the sampling options plus `--mode`, the training batch and epochs."""

from __future__ import annotations

import argparse
import sys


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
