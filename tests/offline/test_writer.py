"""Recording: every runner writes what it samples to Parquet files, atomically, and loses nothing on stop."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from flywheel import PPOConfig, SingleAgentEnvRunner
from flywheel.columns import Columns
from flywheel.env_runners.multi_agent import MultiAgentEnvRunner
from flywheel.offline.arrow_columns import read_spaces
from flywheel.offline.writer import OfflineWriter
from flywheel.testing.multi_agent_envs import TurnBasedEnv


def recording_config(output, **offline):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .offline_data(output=str(output), **offline)
        .debugging(seed=0)
    )


def files(folder):
    return sorted(folder.glob("*.parquet"))


def test_rows_layout_one_row_per_step_with_module_outputs_and_spaces(tmp_path):
    runner = SingleAgentEnvRunner(config=recording_config(tmp_path, output_write_episodes=False))
    episodes = runner.sample(num_timesteps=100)
    runner.stop()
    [path] = files(tmp_path)
    table = pq.read_table(path)
    assert table.num_rows == sum(len(e) for e in episodes) == 100
    assert table.column_names == [
        "eps_id", "agent_id", "module_id", "t", "obs", "actions", "rewards", "action_dist_inputs",
        "action_logp", "weights_seq_no", "new_obs", "terminateds", "truncateds",
    ]  # fmt: skip
    first = episodes[0]
    rows = table.filter(pq.filters_to_expression([("eps_id", "=", first.id_)]))
    assert rows.num_rows == len(first)
    np.testing.assert_array_equal(
        rows.column("obs").combine_chunks().to_numpy_ndarray(), first.get_observations(slice(0, len(first)))
    )
    np.testing.assert_array_equal(rows.column("t").to_numpy(), np.arange(len(first)))
    assert rows.column("terminateds").to_pylist()[-1] == first.is_terminated
    assert set(table.column("module_id").to_pylist()) == {"default_policy"}
    spaces = read_spaces(pq.read_schema(path).metadata, str(path))
    assert spaces == {"default": (runner.env.single_observation_space, runner.env.single_action_space)}


def test_episodes_layout_one_row_per_chunk(tmp_path):
    runner = SingleAgentEnvRunner(config=recording_config(tmp_path))
    episodes = runner.sample(num_timesteps=60)
    runner.stop()
    table = pq.read_table(files(tmp_path)[0])
    assert table.num_rows == len(episodes)
    assert table.column("eps_id").to_pylist() == [e.id_ for e in episodes]
    assert [len(o) for o in table.column("obs").to_pylist()] == [len(e) + 1 for e in episodes]
    assert [sum(r) for r in table.column("rewards").to_pylist()] == pytest.approx(
        [e.get_return() for e in episodes]
    )
    assert table.column("is_terminated").to_pylist() == [e.is_terminated for e in episodes]


def test_max_rows_per_file_and_the_rest_is_written_on_stop(tmp_path):
    runner = SingleAgentEnvRunner(
        config=recording_config(tmp_path, output_write_episodes=False, output_max_rows_per_file=30)
    )
    runner.sample(num_timesteps=100)
    assert [pq.read_metadata(p).num_rows for p in files(tmp_path)] == [30, 30, 30]
    runner.stop()
    assert [pq.read_metadata(p).num_rows for p in files(tmp_path)] == [30, 30, 30, 10]


def test_output_write_remaining_data_false_drops_the_rest_on_stop_as_rllib_does(tmp_path):
    runner = SingleAgentEnvRunner(
        config=recording_config(
            tmp_path,
            output_write_episodes=False,
            output_max_rows_per_file=30,
            output_write_remaining_data=False,
        )
    )
    runner.sample(num_timesteps=100)
    runner.stop()
    assert [pq.read_metadata(p).num_rows for p in files(tmp_path)] == [30, 30, 30]


def test_files_appear_atomically_no_partial_file_is_visible(tmp_path, monkeypatch):
    seen = []
    original = pq.write_table

    def spy(table, where, **kwargs):
        original(table, where, **kwargs)
        seen.append(([p.name for p in tmp_path.iterdir()], where))

    monkeypatch.setattr(pq, "write_table", spy)
    writer = OfflineWriter(tmp_path, spaces={}, write_episodes=False)
    runner = SingleAgentEnvRunner(config=PPOConfig().environment("CartPole-v1"))
    writer.write(runner.sample(num_timesteps=10))
    [(names, where)] = seen
    assert names == [where.split("/")[-1]]  # while written, the file has only its temporary name
    assert names[0].startswith(".") and names[0].endswith(".tmp")
    assert [p.name for p in tmp_path.iterdir()] == [names[0][1:].removesuffix(".tmp")]


def test_compressed_columns_use_zstd(tmp_path):
    runner = SingleAgentEnvRunner(config=recording_config(tmp_path, output_write_episodes=False))
    runner.sample(num_timesteps=20)
    runner.stop()
    group = pq.read_metadata(files(tmp_path)[0]).row_group(0)
    codecs = {group.column(i).path_in_schema: group.column(i).compression for i in range(group.num_columns)}
    assert codecs["obs.list.element"] == codecs["new_obs.list.element"] == "ZSTD"
    assert codecs["rewards"] == "SNAPPY"


def test_evaluation_runners_record_too_as_in_rllib(tmp_path):
    config = recording_config(tmp_path).evaluation(
        evaluation_interval=1, evaluation_duration=3, evaluation_config={"explore": False}
    )
    algo = config.training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1).build_algo()
    result = algo.train()
    algo.stop()
    steps = [len(o) - 1 for p in files(tmp_path) for o in pq.read_table(p).column("obs").to_pylist()]
    evaluated = result["evaluation"]["env_runners"]["num_env_steps_sampled"]
    assert evaluated > 0 and sum(steps) == 64 + evaluated


def test_evaluation_config_output_none_keeps_evaluation_out_of_the_recording(tmp_path):
    config = recording_config(tmp_path).evaluation(
        evaluation_interval=1, evaluation_duration=1, evaluation_config={"output": None}
    )
    algo = config.training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1).build_algo()
    algo.train()
    algo.stop()
    assert sum(len(o) - 1 for p in files(tmp_path) for o in pq.read_table(p).column("obs").to_pylist()) == 64


def test_rays_local_scheme_names_a_local_folder(tmp_path):
    runner = SingleAgentEnvRunner(config=recording_config(f"local://{tmp_path}", output_write_episodes=False))
    episodes = runner.sample(num_timesteps=30)
    runner.stop()
    assert pq.read_table(files(tmp_path)[0]).num_rows == sum(len(e) for e in episodes) == 30


def test_multi_agent_runner_records_each_agent_with_its_module(tmp_path):
    config = (
        PPOConfig()
        .environment(TurnBasedEnv)
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **k: agent_id)
        .offline_data(output=str(tmp_path), output_write_episodes=False)
        .debugging(seed=0)
    )
    runner = MultiAgentEnvRunner(config=config)
    episodes = runner.sample(num_episodes=2)
    runner.stop()
    table = pq.read_table(files(tmp_path)[0])
    assert table.num_rows == sum(e.agent_steps() for e in episodes)
    assert set(
        zip(table.column("agent_id").to_pylist(), table.column("module_id").to_pylist(), strict=True)
    ) == {
        ("p0", "p0"),
        ("p1", "p1"),
    }
    assert set(table.column("eps_id").to_pylist()) == {e.id_ for e in episodes}
    spaces = json.loads(pq.read_schema(files(tmp_path)[0]).metadata[b"flywheel.spaces"])
    assert sorted(spaces) == ["p0", "p1"]


@pytest.mark.ray
def test_remote_runners_record_and_flush_on_algo_stop(tmp_path, ray_session):
    config = recording_config(tmp_path, output_max_rows_per_file=10_000).env_runners(num_env_runners=1)
    config.training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
    algo = config.build_algo()
    algo.train()
    assert files(tmp_path) == []  # fewer rows than a file holds: buffered in the remote runner
    algo.stop()
    [path] = files(tmp_path)
    assert path.name.startswith("runner1-")
    steps = sum(len(a) for a in pq.read_table(path).column(Columns.ACTIONS).to_pylist())
    assert steps == 200
