"""Minari input: `input_="minari:DATASET_ID"` reads a dataset made locally with Minari's own writer."""

import gymnasium as gym
import minari
import numpy as np
import pytest
from minari.data_collector import EpisodeBuffer

from flywheel import BCConfig, CQLConfig
from flywheel.errors import OfflineDataError
from flywheel.offline.minari_data import MinariData


def collect(dataset_id, env_id, policy, num_episodes):
    """Steps `env_id` with `policy` and saves the episodes as the local Minari dataset `dataset_id`
    (through `EpisodeBuffer`s: Minari's `DataCollector` wrapper needs jax, `minari[create]`)."""
    env = gym.make(env_id)
    buffers = []
    for episode in range(num_episodes):
        obs, _ = env.reset(seed=episode)
        steps = {"observations": [obs], "actions": [], "rewards": [], "terminations": [], "truncations": []}
        while not (steps["terminations"] and (steps["terminations"][-1] or steps["truncations"][-1])):
            action = policy(obs)
            obs, reward, terminated, truncated, _ = env.step(action)
            for key, value in zip(steps, (obs, action, reward, terminated, truncated), strict=True):
                steps[key].append(value)
        arrays = {key: np.asarray(values) for key, values in steps.items()}
        buffers.append(EpisodeBuffer(id=episode, seed=episode, infos={}, **arrays))
    return minari.create_dataset_from_buffers(
        dataset_id, buffers, env=env_id, algorithm_name="test policy", data_format="arrow"
    )


@pytest.fixture
def minari_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    return tmp_path / "minari"


def bc_config(input_, env="CartPole-v1"):
    return (
        BCConfig()
        .environment(env)
        .offline_data(input_=input_)
        .training(lr=3e-3, train_batch_size_per_learner=500, minibatch_size=100, num_epochs=2)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .evaluation(evaluation_duration=5, evaluation_config={"explore": False})
        .debugging(seed=0)
    )


def test_bc_learns_from_a_local_minari_dataset(minari_folder):
    collect("cartpole/heuristic-v0", "CartPole-v1", lambda obs: int(obs[2] + 0.5 * obs[3] > 0), 4)
    assert (minari_folder / "cartpole" / "heuristic-v0").is_dir()
    algo = bc_config("minari:cartpole/heuristic-v0").build_algo()
    results = [algo.train() for _ in range(25)]
    returns = algo.evaluate()["env_runners"]["episode_return_mean"]
    algo.stop()
    trained = results[-1]["learners"]["__all_modules__"]["num_env_steps_trained"]
    assert trained == 2 * 500  # whole episodes of 500 steps, 2 epochs
    assert returns >= 400


def test_missing_dataset_names_the_folder_and_the_fix(minari_folder):
    with pytest.raises(
        OfflineDataError,
        match=(
            r"the Minari dataset 'cartpole/none-v0' is not in the local Minari data folder .*minari "
            r"\(set by MINARI_DATASETS_PATH\); flywheel never downloads\. Fix: `minari download cartpole/none-v0`, "
            r"or create it with minari\.DataCollector\(env\)\.create_dataset"
        ),
    ):
        bc_config("minari:cartpole/none-v0").build_algo()


def test_space_mismatch_with_the_env(minari_folder):
    collect("cartpole/random-v0", "CartPole-v1", lambda obs: 0, 1)
    with pytest.raises(
        OfflineDataError,
        match=r"The Minari dataset 'cartpole/random-v0' was recorded with the observation space Box\(.*\(4,\).*"
        r"but the env's observation space is Box\(.*\(2,\)",
    ):
        bc_config("minari:cartpole/random-v0", env="MountainCar-v0").build_algo()


@pytest.mark.parametrize("normalized", [False, True])
def test_box_actions_are_normalized_on_read_unless_they_already_are(minari_folder, normalized):
    collect("pendulum/const-v0", "Pendulum-v1", lambda obs: np.array([1.5], np.float32), 1)
    env = gym.make("Pendulum-v1")
    config = bc_config("minari:pendulum/const-v0", env="Pendulum-v1").offline_data(
        actions_in_input_normalized=normalized
    )
    [episode] = MinariData(config, env.observation_space, env.action_space).sample(num_rows=200)
    expected = 1.5 if normalized else 0.75  # Pendulum's bounds are [-2, 2]
    np.testing.assert_allclose(episode.get_actions(), np.full((200, 1), expected, np.float32))


def test_a_shuffle_buffer_hands_out_the_steps_as_one_step_chunks_in_random_order(minari_folder):
    collect("cartpole/tilt-v0", "CartPole-v1", lambda obs: int(obs[2] > 0), 3)
    env = gym.make("CartPole-v1")
    episodes = list(minari.load_dataset("cartpole/tilt-v0").iterate_episodes())
    steps = sum(len(e.actions) for e in episodes)
    config = bc_config("minari:cartpole/tilt-v0").offline_data(
        iter_batches_kwargs={"local_shuffle_buffer_size": 5}, input_read_method_kwargs={"shuffle": False}
    )
    chunks = MinariData(config, env.observation_space, env.action_space).sample(num_rows=steps)

    assert [len(chunk) for chunk in chunks] == [1] * steps
    stored = [(e.id, t) for e in episodes for t in range(len(e.actions))]
    handed = [(int(c.id_.removeprefix("minari-")), c.t_started) for c in chunks]
    # (Passes over the data follow each other in the stream, so a step may come twice before another.)
    assert set(handed) <= set(stored) and handed != stored
    for chunk, (episode_id, t) in zip(chunks, handed, strict=True):
        data = episodes[episode_id]
        np.testing.assert_allclose(chunk.get_observations(), data.observations[t : t + 2])
        assert chunk.get_actions()[0] == data.actions[t]
        last = t == len(data.actions) - 1
        assert chunk.is_terminated == (last and bool(data.terminations[-1]))
        assert chunk.is_truncated == (last and bool(data.truncations[-1]))


def test_cql_shuffles_minari_steps_by_default(minari_folder):
    collect("pendulum/zero-v0", "Pendulum-v1", lambda obs: np.zeros(1, np.float32), 2)
    env = gym.make("Pendulum-v1")
    config = CQLConfig().environment("Pendulum-v1").offline_data(input_="minari:pendulum/zero-v0")
    chunks = MinariData(config, env.observation_space, env.action_space).sample(num_rows=400)
    assert len(chunks) == 400 and {len(chunk) for chunk in chunks} == {1}
    turned_off = config.offline_data(iter_batches_kwargs={"local_shuffle_buffer_size": None})
    whole = MinariData(turned_off, env.observation_space, env.action_space).sample(num_rows=400)
    assert [len(episode) for episode in whole] == [200, 200]
