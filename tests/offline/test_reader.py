"""Reading: recorded Parquet files stream back as the episodes that were recorded; bad data is named."""

import gymnasium as gym
import numpy as np
import pyarrow.parquet as pq
import pytest

from flywheel import PPOConfig, SingleAgentEnvRunner
from flywheel.errors import OfflineDataError
from flywheel.offline.reader import OfflineData

CARTPOLE = gym.make("CartPole-v1")
SPACES = (CARTPOLE.observation_space, CARTPOLE.action_space)


def record(folder, *, episodes, num_timesteps=300, **offline):
    config = (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=2)
        .offline_data(output=str(folder), output_write_episodes=episodes, **offline)
        .debugging(seed=0)
    )
    runner = SingleAgentEnvRunner(config=config)
    sampled = runner.sample(num_timesteps=num_timesteps)
    runner.stop()
    return sampled


def reading_config(folder, *, episodes, **kwargs):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .offline_data(input_=str(folder), input_read_episodes=episodes, input_read_method_kwargs=kwargs)
    )


@pytest.mark.parametrize("episodes", [False, True])
def test_read_episodes_equal_the_recorded_ones(tmp_path, episodes):
    sampled = record(tmp_path, episodes=episodes)
    data = OfflineData(reading_config(tmp_path, episodes=episodes, shuffle=False), *SPACES)
    read = data.sample(num_rows=300)
    assert sum(len(e) for e in read) == 300
    by_id = {e.id_: e for e in sampled}
    assert {e.id_ for e in read} == set(by_id)
    for episode in read:
        original = by_id[episode.id_]
        assert (len(episode), episode.t_started) == (len(original), original.t_started)
        assert (episode.is_terminated, episode.is_truncated) == (
            original.is_terminated,
            original.is_truncated,
        )
        np.testing.assert_array_equal(episode.get_observations(), original.get_observations())
        np.testing.assert_array_equal(episode.get_actions(), original.get_actions())
        np.testing.assert_array_equal(episode.get_rewards(), original.get_rewards())


def test_record_batches_cut_chunks_that_continue(tmp_path):
    record(tmp_path, episodes=False, num_timesteps=100)
    data = OfflineData(reading_config(tmp_path, episodes=False, batch_size=7, shuffle=False), *SPACES)
    read = data.sample(num_rows=100)
    assert all(len(e) <= 7 for e in read)
    continued = [(a, b) for a, b in zip(read, read[1:]) if a.id_ == b.id_]
    assert continued and all(b.t_started == a.t and not a.is_done for a, b in continued)


def test_streams_past_the_end_into_a_new_pass(tmp_path):
    record(tmp_path, episodes=True, num_timesteps=50)
    data = OfflineData(reading_config(tmp_path, episodes=True), *SPACES)
    assert sum(len(e) for e in data.sample(num_rows=500)) >= 500


def test_input_with_rays_local_scheme_reads_the_local_folder(tmp_path):
    record(tmp_path, episodes=True, num_timesteps=50)
    data = OfflineData(reading_config(f"local://{tmp_path}", episodes=True, shuffle=False), *SPACES)
    assert data.paths == sorted(str(p) for p in tmp_path.glob("*.parquet")) and data.paths


def test_empty_and_missing_paths(tmp_path):
    with pytest.raises(OfflineDataError, match=r"input_=.* holds no Parquet files \(\*\.parquet\)"):
        OfflineData(reading_config(tmp_path, episodes=True), *SPACES)
    with pytest.raises(OfflineDataError, match=r"input_ names '.*nowhere', which does not exist"):
        OfflineData(reading_config(tmp_path / "nowhere", episodes=True), *SPACES)


def test_missing_column(tmp_path):
    record(tmp_path, episodes=False, num_timesteps=20)
    [path] = tmp_path.glob("*.parquet")
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["new_obs"]).replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(OfflineDataError, match=r"runner0-.*\.parquet has no column\(s\) \['new_obs'\]"):
        OfflineData(reading_config(tmp_path, episodes=False), *SPACES)


def test_layout_mismatch(tmp_path):
    record(tmp_path, episodes=True, num_timesteps=20)
    with pytest.raises(
        OfflineDataError, match=r"input_read_episodes=False\. Fix: .*input_read_episodes=True"
    ):
        OfflineData(reading_config(tmp_path, episodes=False), *SPACES)


def test_space_mismatch(tmp_path):
    record(tmp_path, episodes=True, num_timesteps=20)
    other = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    with pytest.raises(
        OfflineDataError,
        match=r"recorded with the observation space Box\(.*\(4,\).*env's observation space is Box\(-1\.0, 1\.0, \(3,\)",
    ):
        OfflineData(reading_config(tmp_path, episodes=True), other, SPACES[1])


def test_unknown_read_kwargs(tmp_path):
    record(tmp_path, episodes=True, num_timesteps=20)
    with pytest.raises(OfflineDataError, match=r"unknown key\(s\) \['columns'\]"):
        OfflineData(reading_config(tmp_path, episodes=True, columns=["obs"]), *SPACES)


def test_box_actions_normalized_on_read_only_when_the_data_is_in_env_bounds(tmp_path):
    config = (
        PPOConfig()
        .environment("Pendulum-v1")
        .offline_data(output=str(tmp_path), output_write_episodes=False)
        .debugging(seed=0)
    )
    runner = SingleAgentEnvRunner(config=config)
    [sampled] = runner.sample(num_timesteps=50)
    runner.stop()
    recorded = sampled.get_actions()  # the module's actions: normalized space (normalize_actions=True)
    pendulum = gym.make("Pendulum-v1")
    spaces = (pendulum.observation_space, pendulum.action_space)

    def read(**offline):
        config = PPOConfig().environment("Pendulum-v1").offline_data(input_=str(tmp_path), **offline)
        [episode] = OfflineData(config, *spaces).sample(num_rows=50)
        return episode.get_actions()

    np.testing.assert_array_equal(read(), recorded)  # the file says its actions are normalized
    [path] = tmp_path.glob("*.parquet")
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata(None), path)  # as another tool writes it: no metadata
    np.testing.assert_allclose(read(), recorded / 2.0)  # taken as env actions in [-2, 2]
    np.testing.assert_array_equal(read(actions_in_input_normalized=True), recorded)
