"""TQC env steps/s of `train()` on Pendulum-v1, and IQL rows/s of offline `train()` from Parquet on disk:
flywheel or RLlib 2.60, with the same settings, for the side-by-side run (`--turns-dir` alternates
the peers' timed turns, see turns.py).

    python bench/offpolicy_speed.py --record DATA_DIR               # once: Pendulum rows for IQL
    python bench/offpolicy_speed.py --algo tqc --framework rllib
    python bench/offpolicy_speed.py --algo iql --framework flywheel --data DATA_DIR

TQC: RLlib 2.60's defaults on both sides (25 quantiles, 2 critics, 2 dropped per net, SAC's
settings: train batch 256, one update per env step, 100 env steps a `train()`: RLlib's default, set on
both, as flywheel's 1000 would spread its per-call cost thinner), learning from step 256 on, one env,
no remote runners or learners; the timed calls come after `--warmup` calls past that point, so each
one samples and updates. IQL: RLlib 2.60's defaults (beta 0.1, expectile 0.8, twin Q), train batch
256 rows, one update a `train()` (`dataset_num_iters_per_learner=1`), rows recorded by flywheel's
recorder as plain Parquet columns that both read (`input_read_episodes=False`), no evaluation.
Learners compute on `--torch-threads` threads on both sides (flywheel's as `num_cpus_per_learner`;
0: torch's default, every core). Prints one JSON line.
"""

from __future__ import annotations

import argparse
from typing import Any

from benchlib import peak_rss_mb, run_guarded, since_start, time_sampling, turns_of

BATCH = 256
LEARNING_STARTS = 256
STEPS_PER_CALL = 100
"""TQC's env steps a `train()`: RLlib's default for SAC and TQC, set on both (flywheel's is 1000)."""


def record(folder: str, num_rows: int) -> dict[str, Any]:
    """`num_rows` Pendulum steps of an untrained SAC policy, one row per step, files of 5000 rows."""
    from flywheel import SACConfig, SingleAgentEnvRunner

    config = (
        SACConfig()
        .environment("Pendulum-v1")
        .offline_data(output=folder, output_write_episodes=False, output_max_rows_per_file=5000)
        .debugging(seed=0)
    )
    runner = SingleAgentEnvRunner(config=config)
    runner.sample(num_timesteps=num_rows)
    runner.stop()
    return {"rows": num_rows, "folder": folder}


def build(args: argparse.Namespace) -> Any:
    import gymnasium as gym
    import torch

    rllib = args.framework == "rllib"
    if args.algo == "tqc":
        if rllib:
            from ray.rllib.algorithms.tqc import TQCConfig as Config
        else:
            from flywheel import TQCConfig as Config
        config = Config().environment("Pendulum-v1").env_runners(num_env_runners=0)
        config = config.training(
            train_batch_size_per_learner=BATCH, num_steps_sampled_before_learning_starts=LEARNING_STARTS
        ).reporting(min_sample_timesteps_per_iteration=STEPS_PER_CALL)
    else:
        if rllib:
            from ray.rllib.algorithms.iql import IQLConfig as Config
        else:
            from flywheel import IQLConfig as Config
        env = gym.make("Pendulum-v1")
        # RLlib maps rows to episodes in Ray Data actors (2 of 1 CPU each by default); on 2 CPUs they
        # leave none for the read task, which then waits forever: one actor, one CPU left for reading.
        rllib_only = {"map_batches_kwargs": {"concurrency": 1, "num_cpus": 1}} if rllib else {}
        config = (
            Config()
            .environment(
                "Pendulum-v1", observation_space=env.observation_space, action_space=env.action_space
            )
            .offline_data(
                input_=[args.data], input_read_episodes=False, dataset_num_iters_per_learner=1, **rllib_only
            )
            .training(train_batch_size_per_learner=BATCH)
            .evaluation(evaluation_interval=None)
        )
    threads = {} if rllib else {"num_cpus_per_learner": torch.get_num_threads()}
    return config.learners(num_learners=0, **threads).debugging(seed=args.seed).build_algo()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    algo = build(args)
    startup_s = since_start()
    if args.algo == "tqc":
        key = ("env_runners", "num_env_steps_sampled")
        while algo.train()["env_runners"]["num_env_steps_sampled_lifetime"] < LEARNING_STARTS:
            pass
    else:
        key = ("learners", "__all_modules__", "num_env_steps_trained")

    def train(_: int) -> int:
        result = algo.train()
        if args.algo == "iql":
            return BATCH  # one update of BATCH rows a call (dataset_num_iters_per_learner=1)
        return int(result[key[0]][key[1]])

    timing = time_sampling(
        train, num_timesteps=0, calls=args.calls, warmup=args.warmup, min_seconds=args.min_seconds,
        turns=turns_of(args),
    )  # fmt: skip
    algo.stop()
    if args.algo == "iql":  # time_sampling counts "steps": here they are rows trained
        timing = {k.replace("env_steps", "rows").replace("_steps_", "_rows_"): v for k, v in timing.items()}
    return {
        **timing,
        "torch_threads": torch.get_num_threads(),
        "startup_s": round(startup_s, 2),
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=("tqc", "iql"), default="tqc")
    parser.add_argument("--framework", choices=("rllib", "flywheel"), default="flywheel")
    parser.add_argument("--data", help="folder of Parquet rows recorded with --record (IQL)")
    parser.add_argument("--record", metavar="DIR", help="record the IQL dataset to DIR and exit")
    parser.add_argument("--rows", type=int, default=20_000, help="rows to record (--record)")
    parser.add_argument("--calls", type=int, default=3, help="timed train() calls at least (alone)")
    parser.add_argument(
        "--warmup", type=int, default=1, help="untimed train() calls (TQC: after learning starts)"
    )
    parser.add_argument("--min-seconds", type=float, default=20.0, help="timed seconds without --turns-dir")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--torch-threads", type=int, default=0,
                        help="torch threads the learners compute on (0: torch's default, every core)")  # fmt: skip
    parser.add_argument("--turns-dir")
    parser.add_argument("--turn-order", default="rllib,flywheel")
    parser.add_argument("--turn-as")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    if args.record:
        run_guarded({"bench": "iql_data", "framework": "flywheel"}, lambda: record(args.record, args.rows))
        return
    if args.algo == "iql" and not args.data:
        parser.error("--algo iql needs --data DIR (record it once with --record DIR)")
    meta = {"bench": f"{args.algo}_speed", "framework": args.framework, "train_batch_size": BATCH}
    run_guarded(meta, lambda: measure(args))


if __name__ == "__main__":
    main()
