"""One data path: whatever the pipeline holds and wherever custom code touches the episodes, every
forward pass of a SingleAgentEnvRunner sees exactly the observations its episodes hold.

Each test runs a runner whose module records every observation batch it is given, tracks which
sub-env each episode chunk belongs to (callbacks get `env_index`), and rebuilds from the returned
chunks what the module must have seen: per sub-env, the observation before each recorded step, in
order.
"""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import Columns, ConnectorV2, PPOConfig, RLModuleSpec
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.connectors.env_to_module import (
    AddObservationsFromEpisodesToBatch,
    BatchIndividualItems,
    NumpyToTensor,
)

NUM_ENVS = 3
AFTER_EACH_DEFAULT_PIECE = pytest.mark.parametrize(
    "where",
    [AddObservationsFromEpisodesToBatch, BatchIndividualItems, NumpyToTensor],
    ids=lambda c: c.__name__,
)


class RecordingModule(DefaultPPOTorchRLModule):
    """PPO's default module that keeps a copy of every observation batch it acts on."""

    def setup(self):
        super().setup()
        self.seen = []

    def _forward(self, batch, **kwargs):
        obs = batch[Columns.OBS]
        self.seen.append(obs.reshape(len(obs), -1).numpy().astype(np.float64))
        return super()._forward(batch, **kwargs)


class AddTen(ConnectorV2):
    """Rewrites each episode's newest observation to obs + 10 (as a normalizing filter would)."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for episode in episodes:
            episode.set_observations(new_data=episode.get_observations(-1) + 10.0, at_indices=-1)
        return batch


class ReadLengths(ConnectorV2):
    """Reads every episode (its length and newest observation) into a column of its own."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        batch["lengths"] = np.array([len(e) + 0 * e.get_observations(-1)[0] for e in episodes])
        return batch


class NegateInPlace(ConnectorV2):
    """Negates the batch's OBS column in place, whatever it is at this point (array or tensor)."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        batch[Columns.OBS] *= -1
        return batch


def _config(*, vectorize_mode="sync", model_config=None, **env_runners):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=NUM_ENVS, gym_env_vectorize_mode=vectorize_mode, **env_runners)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=RecordingModule), model_config=model_config or {})
        .debugging(seed=0)
    )


def _sample_and_check(runner, sub_env_of, calls=3, num_timesteps=60, sign=1.0):
    """Samples, then checks that forward pass `k` saw, for each sub-env, the observation its episode
    held before its `k`-th step. (With a NEXT_STEP autoreset the final observation of an ended
    episode is acted on once more, in the step that only resets its sub-env.)"""
    chunks = [chunk for _ in range(calls) for chunk in runner.sample(num_timesteps=num_timesteps)]
    assert sum(chunk.is_done for chunk in chunks) >= 2  # episodes ended (and restarted) along the way
    next_step = runner.env.metadata.get("autoreset_mode") == gym.vector.AutoresetMode.NEXT_STEP
    expected = {i: [] for i in range(NUM_ENVS)}
    for chunk in chunks:
        observations = chunk.get_observations()
        expected[sub_env_of[chunk.id_]].extend(
            observations if next_step and chunk.is_done else observations[:-1]
        )
    seen = runner.module.seen
    # A sub-env whose episode ended in the very last step has not acted on its final observation yet.
    assert all(len(rows) - len(seen) in ((0, 1) if next_step else (0,)) for rows in expected.values())
    assert len(seen) >= calls * num_timesteps // NUM_ENVS
    for k, batch in enumerate(seen):
        np.testing.assert_allclose(batch, [sign * expected[i][k] for i in range(NUM_ENVS)], rtol=0, atol=1e-6)
    return chunks


def _runner(make_runner, config):
    sub_env_of = {}
    config.callbacks(
        on_episode_created=lambda episode, env_index, **kw: sub_env_of.__setitem__(episode.id_, env_index)
    )
    return make_runner(config), sub_env_of


@pytest.mark.parametrize("vectorize_mode", ["sync", "vector_entry_point", "envpool"])
def test_default_pieces_pass_the_envs_observations_through(make_runner, vectorize_mode):
    runner, sub_env_of = _runner(make_runner, _config(vectorize_mode=vectorize_mode))
    _sample_and_check(runner, sub_env_of)


def test_a_piece_before_the_defaults_that_rewrites_episodes(make_runner):
    config = _config(env_to_module_connector=lambda env, spaces, device: AddTen())
    runner, sub_env_of = _runner(make_runner, config)
    chunks = _sample_and_check(runner, sub_env_of)
    # Stored rewritten (cart positions lie in [-2.4, 2.4]), the final observations of ended episodes too.
    assert all((chunk.get_observations()[:, 0] > 7.0).all() for chunk in chunks)


@AFTER_EACH_DEFAULT_PIECE
def test_a_piece_after_a_default_piece_that_reads_episodes(make_runner, where):
    runner, sub_env_of = _runner(make_runner, _config())
    runner.env_to_module.insert_after(where, ReadLengths())
    _sample_and_check(runner, sub_env_of)


@AFTER_EACH_DEFAULT_PIECE
def test_a_piece_after_a_default_piece_that_changes_the_batch_in_place(make_runner, where):
    runner, sub_env_of = _runner(make_runner, _config())
    runner.env_to_module.insert_after(where, NegateInPlace())
    # The module sees the negated observations while the episodes keep the env's (a change that
    # reached the episodes too would show up negated on both sides).
    _sample_and_check(runner, sub_env_of, sign=-1.0)


def test_an_on_episode_step_callback_that_rewrites_observations(make_runner):
    def negate(episode, **kwargs):
        episode.set_observations(new_data=-episode.get_observations(-1), at_indices=-1)

    runner, sub_env_of = _runner(make_runner, _config().callbacks(on_episode_step=negate))
    _sample_and_check(runner, sub_env_of)


def test_a_stateful_module(make_runner):
    config = _config(model_config={"use_lstm": True, "lstm_cell_size": 8, "max_seq_len": 4})
    runner, sub_env_of = _runner(make_runner, config)
    _sample_and_check(runner, sub_env_of)


def test_a_callback_reading_new_episodes_and_a_piece_added_later(make_runner):
    starts = []
    config = _config().callbacks(
        on_episode_start=lambda episode, **kw: starts.append(episode.get_observations(0))
    )
    runner, sub_env_of = _runner(make_runner, config)
    runner.sample(num_timesteps=30)
    runner.env_to_module.prepend(AddTen())
    runner.module.seen.clear()
    _sample_and_check(runner, sub_env_of)
    assert len(starts) >= NUM_ENVS + 2


def test_episodes_nobody_read_and_episodes_read_mid_way_hold_the_same_steps(make_runner):
    # Sub-env 1's episodes are read as they start, so they are recorded step by step; the others
    # are recorded column-wise. Same seeds, same steps: the chunks must be equal, dtypes included.
    read = []

    def read_sub_env_1(episode, env_index, **kwargs):
        if env_index == 1:
            read.append(len(episode.get_observations()))

    chunks = []
    for config in (_config(), _config().callbacks(on_episode_start=read_sub_env_1)):
        chunks.append(make_runner(config).sample(num_timesteps=90))
    assert len(read) >= 2 and set(read) == {1}
    assert [len(c) for c in chunks[0]] == [len(c) for c in chunks[1]]
    for a, b in zip(*chunks, strict=True):
        assert (a.t_started, a.is_terminated, a.is_truncated) == (
            b.t_started,
            b.is_terminated,
            b.is_truncated,
        )
        assert a.is_numpy and b.is_numpy
        for getter in ("get_observations", "get_actions", "get_rewards"):
            x, y = getattr(a, getter)(), getattr(b, getter)()
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
        assert sorted(a.extra_model_outputs) == sorted(b.extra_model_outputs)
        for key in a.extra_model_outputs:
            x, y = a.get_extra_model_outputs(key), b.get_extra_model_outputs(key)
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
        assert a.get_infos() == b.get_infos() and len(a.get_infos()) == len(a) + 1
    assert {c.get_observations().dtype for c in chunks[0]} == {np.dtype(np.float32)}
    assert {c.get_rewards().dtype for c in chunks[0]} == {np.dtype(np.float32)}
