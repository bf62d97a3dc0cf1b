"""Ray Data reading with remote learners (num_learners=2): shards stream to the learners, every row is
read once per pass, the learners stay identical, and BC learns from a heuristic CartPole policy."""

import os

import gymnasium as gym
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from flywheel import BCConfig
from flywheel.connectors.connector import ConnectorV2
from flywheel.errors import OfflineDataError
from flywheel.offline.arrow_columns import to_arrow

pytestmark = pytest.mark.ray

NUM_ROWS = 2000
BATCH = 250  # rows per learner per update: a pass is NUM_ROWS / (2 * BATCH) = 4 updates


def heuristic_cartpole_rows(folder, num_rows=NUM_ROWS, num_files=4):
    """`num_rows` steps of a hand-written CartPole controller (push toward where the pole falls;
    ~500 per episode), written as plain Parquet (one row per step) without flywheel's metadata."""
    env = gym.make("CartPole-v1")
    columns = {
        key: []
        for key in ("eps_id", "t", "obs", "actions", "rewards", "new_obs", "terminateds", "truncateds")
    }
    episode = 0
    while len(columns["t"]) < num_rows:
        obs, _ = env.reset(seed=episode)
        for t in range(500):
            action = int(obs[2] + 0.5 * obs[3] > 0)
            new_obs, reward, terminated, truncated, _ = env.step(action)
            cut = len(columns["t"]) == num_rows - 1
            for key, value in zip(
                columns,
                (f"e{episode}", t, obs, action, reward, new_obs, terminated, truncated or cut),
                strict=True,
            ):
                columns[key].append(value)
            obs = new_obs
            if terminated or truncated or cut:
                break
        episode += 1
    table = pa.table({key: to_arrow(np.asarray(values)) for key, values in columns.items()})
    for index, part in enumerate(np.array_split(np.arange(num_rows), num_files)):
        pq.write_table(table.take(part), os.path.join(folder, f"part-{index}.parquet"))


def row_logger(folder):
    """A learner pipeline whose first piece appends `eps_id t_started length` of every episode chunk
    the learner trains on to a file per learner process (defined here, so it travels by value)."""

    class LogRows(ConnectorV2):
        def __call__(self, *, episodes, batch, **kwargs):
            with open(os.path.join(folder, f"learner-{os.getpid()}.txt"), "a") as file:
                file.writelines(f"{e.id_} {e.t_started} {len(e)}\n" for e in episodes)
            return batch

    return lambda observation_space, action_space: LogRows()


def bc_config(data, **learners):
    return (
        BCConfig()
        .environment("CartPole-v1")
        .offline_data(input_=str(data), input_read_method_kwargs={"override_num_blocks": 4})
        .training(lr=3e-3, train_batch_size_per_learner=BATCH, minibatch_size=50, num_epochs=4)
        .learners(num_learners=2, num_cpus_per_learner=0.5, **learners)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .evaluation(evaluation_interval=None, evaluation_duration=5, evaluation_config={"explore": False})
        .debugging(seed=0)
    )


def logging_bc_config(tmp_path, **offline):
    """`bc_config` on `heuristic_cartpole_rows` with `row_logger` (and `offline` settings), and the
    folder of its logs."""
    data, logs = tmp_path / "data", tmp_path / "logs"
    data.mkdir()
    logs.mkdir()
    heuristic_cartpole_rows(data)
    return bc_config(data, learner_connector=row_logger(str(logs))).offline_data(**offline), logs


def logged_steps(logs):
    """`(eps_id, t)` of every row the learners trained on, and the chunk lengths, from `row_logger`'s files."""
    lines = [line.split() for file in sorted(logs.iterdir()) for line in file.read_text().splitlines()]
    rows = [
        (eps_id, t) for eps_id, start, length in lines for t in range(int(start), int(start) + int(length))
    ]
    return rows, [int(length) for _, _, length in lines]


def test_bc_with_two_learners_reads_every_row_and_learns(ray_session, tmp_path):
    config, logs = logging_bc_config(tmp_path, dataset_num_iters_per_learner=2)
    algo = config.build_algo()
    before = algo.evaluate()["env_runners"]["episode_return_mean"]
    trained = [algo.train()["learners"]["__all_modules__"]["num_env_steps_trained"] for _ in range(2)]
    # 2 updates x 2 learners x 250 rows per iteration, 4 epochs each: one pass over the 2000 rows in total
    assert trained == [4 * 1000, 4 * 1000]

    files = sorted(logs.iterdir())
    assert len(files) == 2  # each learner process read its own shard
    steps, _ = logged_steps(logs)
    assert len(steps) == len(set(steps)) == NUM_ROWS  # every row exactly once
    shard_rows = [sum(int(line.split()[2]) for line in f.read_text().splitlines()) for f in files]
    assert shard_rows == [NUM_ROWS // 2, NUM_ROWS // 2]

    weights = algo.learner_group.foreach_learner(lambda learner: learner.get_weights())
    for name, tensor in weights[0]["default_policy"].items():
        torch.testing.assert_close(weights[1]["default_policy"][name], tensor, rtol=0, atol=0)
    for _ in range(6):
        algo.train()  # the next passes start where the first ended
    after = algo.evaluate()["env_runners"]["episode_return_mean"]
    algo.stop()
    assert after >= before + 100, (before, after)


def test_ray_path_names_bad_data(ray_session, tmp_path):
    heuristic_cartpole_rows(tmp_path, num_rows=40, num_files=1)
    table = pq.read_table(tmp_path / "part-0.parquet")
    pq.write_table(table.drop_columns(["new_obs"]), tmp_path / "part-0.parquet")
    with pytest.raises(OfflineDataError, match=r"part-0\.parquet has no column\(s\) \['new_obs'\]"):
        bc_config(tmp_path).build_algo()


def test_ray_path_needs_a_free_cpu(ray_session, tmp_path):
    heuristic_cartpole_rows(tmp_path, num_rows=40, num_files=1)
    config = bc_config(tmp_path).learners(num_cpus_per_learner=1)
    with pytest.raises(
        OfflineDataError, match=r"needs a free CPU for its read tasks, but the Ray cluster has 0 CPU"
    ):
        config.build_algo()


def test_shards_shuffle_rows_with_ray_datas_local_shuffle_buffer(ray_session, tmp_path):
    config, logs = logging_bc_config(
        tmp_path, dataset_num_iters_per_learner=4, iter_batches_kwargs={"local_shuffle_buffer_size": 500}
    )
    config.training(num_epochs=1)
    algo = config.build_algo()
    algo.train()  # 4 updates x 2 learners x 250 rows: one pass
    algo.stop()
    rows, lengths = logged_steps(logs)
    assert len(rows) == len(set(rows)) == NUM_ROWS  # every row exactly once, shuffled or not
    assert len(lengths) >= 0.95 * NUM_ROWS  # single rows, not runs of consecutive steps


def test_ray_path_names_iter_batches_kwargs_the_reader_sets(ray_session, tmp_path):
    heuristic_cartpole_rows(tmp_path, num_rows=40, num_files=1)
    config = bc_config(tmp_path).offline_data(iter_batches_kwargs={"batch_size": 10})
    with pytest.raises(
        OfflineDataError, match=r"iter_batches_kwargs sets \['batch_size'\], which the reader sets"
    ):
        config.build_algo()
