"""Offline RL with CQL: record what SAC samples on Pendulum-v1, then train CQL on those files alone.

    python examples/offline_cql_pendulum.py            # SAC for 20,000 env steps (recorded), then CQL
    python examples/offline_cql_pendulum.py --smoke    # one tiny iteration of each (for CI)

SAC (examples/sac_pendulum.py's settings, with one gradient step per 4 env steps) runs with
`offline_data(output=...)`: its env runner writes every transition it samples to Parquet files, one
row per step, from the first nearly random steps to the good policy at the end: the replay data of
the whole run (SAC's last 10 episodes: -206 / -215 / -213 at 20,000 env steps, seeds 0-2). CQL then learns from those
files only (no env steps for training) and evaluates its greedy policy on the env after every
iteration. CQL's reader hands it rows in random order (its default `iter_batches_kwargs=
{"local_shuffle_buffer_size": 10_000}`): a train batch of consecutive rows would be one or two whole
episodes, and CQL does not learn from such correlated batches (docs/concepts/offline.md).
Measured: greedy return >= -400 from 1,250 updates on, see CHANGELOG.md for the numbers per seed.
"""

import argparse
import runpy
import tempfile
from pathlib import Path

from flywheel import CQLConfig, SACConfig

SAC_EXAMPLE = Path(__file__).parent / "sac_pendulum.py"


def record_sac(folder: str, env_steps: int) -> float:
    """Trains SAC for `env_steps` env steps, recording every sampled step to `folder`; returns SAC's
    last mean return."""
    config: SACConfig = runpy.run_path(str(SAC_EXAMPLE), run_name="example")["build_config"]()
    config.offline_data(output=folder, output_write_episodes=False, output_max_rows_per_file=5000)
    # 64 replayed rows per env step: one 256-row update per 4 env steps, a quarter of the example's
    # updates (20,000 env steps in 63-140 s on a shared 2-core machine instead of 269 s), and SAC
    # still learns.
    config.training(training_intensity=64)
    if env_steps < 1000:
        config.training(num_steps_sampled_before_learning_starts=64, train_batch_size_per_learner=32)
        config.reporting(min_sample_timesteps_per_iteration=env_steps)
    algo = config.build_algo()
    while True:
        result = algo.train()
        if result["num_env_steps_sampled_lifetime"] >= env_steps:
            break
    algo.stop()  # writes the rows still buffered
    return result["env_runners"].get("episode_return_mean", float("nan"))


def build_config(folder: str) -> CQLConfig:
    """CQL on the recorded rows: 250 updates of 512 shuffled rows per iteration, behavior cloning for
    the first 200 updates, faster learning rates and target critics than CQL's defaults (which need
    many more updates), greedy evaluation on 10 episodes."""
    return (
        CQLConfig()
        .environment("Pendulum-v1")
        .offline_data(input_=folder, dataset_num_iters_per_learner=250)
        .training(train_batch_size_per_learner=512, bc_iters=200, actor_lr=1e-3, critic_lr=3e-3, tau=0.02)
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .evaluation(evaluation_interval=1, evaluation_duration=10, evaluation_config={"explore": False})
        .debugging(seed=0)
    )


def train_cql(folder: str, args: argparse.Namespace) -> dict:
    """Records a SAC run's replay data to `folder`, then trains CQL on it; returns CQL's last result."""
    sac_steps = 200 if args.smoke else args.sac_steps
    print(
        f"SAC: mean return {record_sac(folder, sac_steps):.1f} after {sac_steps} env steps, recorded to {folder}"
    )

    config = build_config(folder)
    if args.smoke:
        config.offline_data(dataset_num_iters_per_learner=2).training(
            num_actions=2, train_batch_size_per_learner=64
        )
        config.evaluation(evaluation_duration=1)
    algo = config.build_algo()
    for _ in range(1 if args.smoke else args.stop_iters):
        result = algo.train()
        ret = result["evaluation"]["env_runners"]["episode_return_mean"]
        print(f"iteration {result['training_iteration']}: mean return {ret:.1f} (greedy evaluation)")
    algo.stop()
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sac-steps", type=int, default=20_000, help="env steps of the recorded SAC run")
    parser.add_argument("--stop-iters", type=int, default=8, help="CQL iterations")
    parser.add_argument("--smoke", action="store_true", help="one tiny iteration of each (for CI)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="pendulum-sac-") as folder:  # deleted at the end
        return train_cql(folder, args)


if __name__ == "__main__":
    main()
