"""Offline BC training throughput: rows/s into BC's learner, from Parquet files on disk (flywheel or RLlib 2.60),
and the compute floor of the same updates in bare torch.

    python bench/offline_bc.py --record DATA_DIR              # once: CartPole rows for both (flywheel's recorder)
    python bench/offline_bc.py --framework rllib --data DATA_DIR
    python bench/offline_bc.py --framework flywheel --data DATA_DIR
    python bench/offline_bc.py --framework torch_floor --data DATA_DIR

Both read the same files (one row per step: eps_id, t, obs, actions, rewards, new_obs, terminateds,
truncateds, ... as plain Parquet columns) with the same settings: BC on CartPole-v1, a local learner
(`num_learners=0`), train batch 2000 rows, one gradient step per update on the whole batch (RLlib's
BC uses the train batch as its minibatch), one update per `train()`, lr 1e-4, a 256x256 network, no
evaluation, learners on torch's default threads (flywheel's as `num_cpus_per_learner`). `torch_floor` is what no framework can beat: the same 256x256 tanh policy network, Adam at
lr 1e-4 and loss (mean Categorical log-likelihood of the actions) on 2000-row batches of the files'
rows, held in memory as tensors (no reading, no episodes, no value branch), torch's default threads.
After `--warmup` untimed `train()` calls, timed ones give rows/s = rows trained / seconds;
with `--turns-dir` they are taken in turns with the peer process (see turns.py), else for
`--min-seconds`. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from benchlib import peak_rss_mb, run_guarded, since_start
from turns import Turns

BATCH = 2000
SETTINGS: dict[str, dict[str, Any]] = {
    "training": {"lr": 1e-4, "train_batch_size_per_learner": BATCH},
    "rl_module": {"model_config": {"fcnet_hiddens": [256, 256]}},
}


def record(folder: str, num_rows: int) -> dict[str, Any]:
    """`num_rows` CartPole steps of an untrained PPO policy, one row per step, files of 5000 rows."""
    from flywheel import PPOConfig, SingleAgentEnvRunner

    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=8)
        .offline_data(output=folder, output_write_episodes=False, output_max_rows_per_file=5000)
        .debugging(seed=0)
    )
    runner = SingleAgentEnvRunner(config=config)
    runner.sample(num_timesteps=num_rows)
    runner.stop()
    return {"rows": num_rows, "folder": folder}


class TorchFloor:
    """BC's update in bare torch on rows held in memory: `train()` is one Adam step on the next
    BATCH rows (cycling through the files' rows)."""

    def __init__(self, data: str) -> None:
        import pyarrow.parquet as pq
        import torch

        table = pq.read_table(data, columns=["obs", "actions"])
        obs = table.column("obs").combine_chunks().to_numpy_ndarray()
        torch.manual_seed(0)
        self.obs = torch.from_numpy(obs).float()
        self.actions = torch.from_numpy(table.column("actions").to_numpy()).long()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(obs.shape[1], 256), torch.nn.Tanh(),
            torch.nn.Linear(256, 256), torch.nn.Tanh(), torch.nn.Linear(256, 2),
        )  # fmt: skip
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=SETTINGS["training"]["lr"])
        self.start = 0

    def train(self) -> None:
        import torch

        if self.start + BATCH > len(self.obs):
            self.start = 0
        rows = slice(self.start, self.start + BATCH)
        self.start += BATCH
        dist = torch.distributions.Categorical(logits=self.net(self.obs[rows]))
        loss = -dist.log_prob(self.actions[rows]).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

    def stop(self) -> None:
        pass


def build(framework: str, data: str) -> Any:
    if framework == "torch_floor":
        return TorchFloor(data)
    if framework == "rllib":
        from ray.rllib.algorithms.bc import BCConfig
    else:
        from flywheel import BCConfig
    import gymnasium as gym
    import torch

    env = gym.make("CartPole-v1")
    # RLlib maps rows to episodes in Ray Data actors (2 of 1 CPU each by default); on 2 CPUs they
    # leave none for the read task, which then waits forever: one actor, one CPU left for reading.
    rllib_only = {"map_batches_kwargs": {"concurrency": 1, "num_cpus": 1}} if framework == "rllib" else {}
    # RLlib's local learner computes on torch's default threads (every core); flywheel's learner on
    # num_cpus_per_learner (default 1). The same count for both: flywheel's learner gets the cores too.
    learner_threads = {} if framework == "rllib" else {"num_cpus_per_learner": torch.get_num_threads()}
    config = (
        BCConfig()
        .environment(  # both need the spaces when no evaluation runs (RLlib checks)
            "CartPole-v1", observation_space=env.observation_space, action_space=env.action_space
        )
        .offline_data(input_=[data], input_read_episodes=False, dataset_num_iters_per_learner=1, **rllib_only)
        .training(**SETTINGS["training"], **({} if framework == "rllib" else {"minibatch_size": BATCH}))
        .rl_module(**SETTINGS["rl_module"])
        .learners(num_learners=0, **learner_threads)
        .evaluation(evaluation_interval=None)
        .debugging(seed=0)
    )
    return config.build_algo()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """`--warmup` untimed `train()` calls, then timed ones: in `turns.rounds` turns with the peer
    (each at least as long as the lead's), or one stretch of `--min-seconds` alone."""
    import torch

    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    threads = torch.get_num_threads()  # what each learner computes on (flywheel's: num_cpus_per_learner)
    algo = build(args.framework, args.data)
    startup_s = since_start()
    for _ in range(args.warmup):
        algo.train()
    turns = Turns(args.turns_dir, args.turn_order.split(","), args.turn_as) if args.turns_dir else None
    if turns is not None:
        turns.ready()
    per_turn: list[float] = []
    rows = seconds = 0.0
    for _ in range(turns.rounds if turns else 1):
        at_least = turns.wait() if turns else args.min_seconds
        start, calls = time.perf_counter(), 0
        while time.perf_counter() - start < at_least:
            algo.train()  # one update on BATCH rows
            calls += 1
        took = time.perf_counter() - start
        if turns is not None:
            turns.pass_on(took)
        per_turn.append(round(calls * BATCH / took, 1))
        rows, seconds = rows + calls * BATCH, seconds + took
    if turns is not None:
        turns.finish()
    algo.stop()
    return {"torch_threads": threads, "rows": int(rows), "timed_s": round(seconds, 2), "rows_per_s": round(rows / seconds, 1),
            "per_turn_rows_per_s": per_turn, "startup_s": round(startup_s, 2), "peak_rss_mb": peak_rss_mb()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", choices=("rllib", "flywheel", "torch_floor"))
    parser.add_argument("--data", help="folder of Parquet files recorded with --record")
    parser.add_argument("--record", metavar="DIR", help="record the dataset to DIR and exit")
    parser.add_argument("--rows", type=int, default=100_000, help="rows to record (--record)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--min-seconds", type=float, default=20.0, help="timed seconds without --turns-dir")
    parser.add_argument("--torch-threads", type=int, default=0,
                        help="torch threads the learners compute on (0: torch's default, every core)")  # fmt: skip
    parser.add_argument("--turns-dir")
    parser.add_argument("--turn-order", default="rllib,flywheel")
    parser.add_argument("--turn-as")
    args = parser.parse_args()
    if args.record:
        run_guarded(
            {"bench": "offline_bc_data", "framework": "flywheel"}, lambda: record(args.record, args.rows)
        )
        return
    # Keys sort after "bench" (results print with sort_keys): run.sh keeps the line starting {"bench".
    meta = {"bench": "offline_bc", "framework": args.framework, "train_batch_size": BATCH}
    run_guarded(meta, lambda: measure(args))


if __name__ == "__main__":
    main()
