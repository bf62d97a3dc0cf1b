"""`add_rllib_example_script_args`: the command-line flags of RLlib 2.60's example scripts, same names,
defaults and meanings (`run_rllib_example_script_experiment` applies them)."""

from __future__ import annotations

import argparse


def _duration(value: str) -> int | str:
    return value if value == "auto" else int(value)


def add_rllib_example_script_args(
    parser: argparse.ArgumentParser | None = None,
    default_reward: float = 100.0,
    default_iters: int = 200,
    default_timesteps: int = 100_000,
) -> argparse.ArgumentParser:
    """Adds RLlib's example-script flags to `parser` (default: a new parser) and returns it.

    `default_reward`, `default_iters` and `default_timesteps` are the defaults of `--stop-reward`,
    `--stop-iters` and `--stop-timesteps`: training stops at whichever is reached first, and `--as-test`
    fails the run when the reward was not reached.
    """
    parser = parser or argparse.ArgumentParser()
    add = parser.add_argument

    # The algorithm and its config.
    add("--algo", type=str, default="PPO", help="The registered algorithm to use (get_trainable_cls).")
    add("--framework", choices=["tf", "tf2", "torch"], default="torch", help="flywheel runs torch only.")
    add("--env", type=str, default=None, help="The env to use when the config names none.")
    add(
        "--num-env-runners", type=int, default=None, help="Remote EnvRunners (0: sample in the main process)."
    )
    add("--num-envs-per-env-runner", type=int, default=None, help="Vectorized sub-envs per EnvRunner.")
    add(
        "--num-agents",
        type=int,
        default=0,
        help="0: single-agent; n > 0: the script builds a multi-agent setup with n agents.",
    )

    # Evaluation.
    add("--evaluation-num-env-runners", type=int, default=0, help="Remote evaluation EnvRunners.")
    add("--evaluation-interval", type=int, default=0, help="Evaluate every n iterations (0: never).")
    add(
        "--evaluation-duration",
        type=_duration,
        default=10,
        help="Evaluation units per round, or 'auto' (as long as the training step, in parallel).",
    )
    add("--evaluation-duration-unit", type=str, default="episodes", choices=["episodes", "timesteps"])
    add("--evaluation-parallel-to-training", action="store_true", help="Evaluate while training.")

    # Logging.
    add("--output", type=str, default=None, help="Directory to record the sampled episodes to.")
    add("--log-level", type=str, default=None, choices=["INFO", "DEBUG", "WARN", "ERROR"])

    # Ray Tune.
    add("--no-tune", action="store_true", help="Train in a plain loop of algo.train() instead of a Tuner.")
    add("--num-samples", type=int, default=1, help="Trials of the Tuner.")
    add("--max-concurrent-trials", type=int, default=None, help="Trials run at once.")
    add("--verbose", type=int, default=2, help="The Tuner's verbosity (0-3).")
    add("--checkpoint-freq", type=int, default=0, help="Checkpoint every n iterations (0: never).")
    add("--checkpoint-at-end", action="store_true", help="Checkpoint when the trial ends.")
    add("--tune-max-report-freq", type=int, default=5, help="Seconds between progress tables.")

    # Weights & Biases.
    add("--wandb-key", type=str, default=None, help="Log to Weights & Biases with this API key.")
    add("--wandb-project", type=str, default=None)
    add("--wandb-run-name", type=str, default=None)

    # Stopping and testing.
    add("--stop-reward", type=float, default=default_reward, help="Stop at this mean episode return.")
    add("--stop-iters", type=int, default=default_iters, help="Stop after this many iterations.")
    add("--stop-timesteps", type=int, default=default_timesteps, help="Stop after this many env steps.")
    add(
        "--as-test",
        action="store_true",
        help="Fail (exit non-zero) unless --stop-reward is reached within the other stop criteria.",
    )
    add(
        "--as-release-test",
        action="store_true",
        help="--as-test, plus a JSON summary written to the file $TEST_OUTPUT_JSON names.",
    )

    # Learners.
    add("--num-learners", type=int, default=None, help="Remote Learners (0: learn in the main process).")
    add("--num-cpus-per-learner", type=float, default=None)
    add(
        "--num-gpus-per-learner",
        type=float,
        default=None,
        help="GPUs per Learner; default: 1 when there is a GPU for every Learner, else 0.",
    )
    add("--num-aggregator-actors-per-learner", type=int, default=None)

    # Ray.
    add("--num-cpus", type=int, default=0, help="CPUs for ray.init (0: all).")
    add("--num-gpus", type=int, default=None, help="RLlib's old API stack only (refused above 0).")
    add(
        "--old-api-stack",
        action="store_true",
        help="RLlib's old API stack (refused: flywheel has the new one).",
    )
    # Retired flags, kept so that using them says why.
    add("--enable-new-api-stack", action="store_true", help=argparse.SUPPRESS)
    add("--local-mode", action="store_true", help=argparse.SUPPRESS)
    return parser
