"""EpisodeReplayBuffer: n-step windows with known answers (as RLlib's one-step episodes and as columns),
chunks, eviction, extras, state."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import Columns
from flywheel.episodes import SingleAgentEpisode
from flywheel.errors import CheckpointError, ConfigError, EpisodeError
from flywheel.replay import INDICES, EpisodeReplayBuffer

from .conftest import chunk, columns, runner_chunks, transitions


def sampled_obs(buffer, n=400):
    return set(columns(buffer.sample(n))[Columns.OBS][:, 0].tolist())


# ------------------------------------------------------------------------------- n-step windows


def test_n_step_returns_stop_at_termination():
    buffer = EpisodeReplayBuffer(100, seed=0)
    buffer.add(chunk([1.0, 2.0, 4.0, 8.0], terminated=True))
    assert transitions(buffer.sample(200, n_step=3, gamma=0.5)) == {
        0.0: (3.0, 3.0, 3, False, False),  # 1 + 0.5 * 2 + 0.25 * 4, bootstrap from obs 3
        1.0: (6.0, 4.0, 3, True, False),  # 2 + 0.5 * 4 + 0.25 * 8, ends at the termination
        2.0: (8.0, 4.0, 2, True, False),  # only 2 steps left
        3.0: (8.0, 4.0, 1, True, False),
    }


def test_n_step_returns_stop_at_truncation_and_bootstrap_from_the_last_obs():
    buffer = EpisodeReplayBuffer(100, seed=0)
    buffer.add(chunk([1.0, 2.0, 4.0, 8.0], truncated=True))
    assert transitions(buffer.sample(200, n_step=3, gamma=0.5)) == {
        0.0: (3.0, 3.0, 3, False, False),
        1.0: (6.0, 4.0, 3, False, True),
        2.0: (8.0, 4.0, 2, False, True),
        3.0: (8.0, 4.0, 1, False, True),
    }


def test_ongoing_episode_windows_stop_at_the_newest_stored_obs():
    buffer = EpisodeReplayBuffer(100, seed=0)
    buffer.add(chunk([1.0, 2.0, 4.0, 8.0]))
    assert transitions(buffer.sample(200, n_step=3, gamma=0.5)) == {
        0.0: (3.0, 3.0, 3, False, False),
        1.0: (6.0, 4.0, 3, False, False),
        2.0: (8.0, 4.0, 2, False, False),  # fewer steps, no done flag: bootstrap with gamma**2
        3.0: (8.0, 4.0, 1, False, False),
    }


def test_one_step_transitions_are_plain_steps():
    buffer = EpisodeReplayBuffer(100, seed=0)
    buffer.add(chunk([1.0, 2.0, 4.0], terminated=True))
    sampled = buffer.sample(100)
    batch = columns(sampled)
    assert transitions(sampled) == {
        0.0: (1.0, 1.0, 1, False, False),
        1.0: (2.0, 2.0, 1, False, False),
        2.0: (4.0, 3.0, 1, True, False),
    }
    np.testing.assert_array_equal(batch[Columns.ACTIONS], batch[Columns.OBS][:, 0].astype(np.int64))
    assert batch[Columns.WEIGHTS].tolist() == [1.0] * 100
    assert batch[Columns.REWARDS].dtype == np.float32 and batch[Columns.OBS].dtype == np.float32


def test_windows_run_across_chunks_of_one_episode_with_other_episodes_in_between():
    first, second = runner_chunks([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], cut_after=[3], terminated=True)
    buffer = EpisodeReplayBuffer(100, seed=0)
    buffer.add(first)
    assert transitions(buffer.sample(200, n_step=3, gamma=0.5)) == {
        0.0: (3.0, 3.0, 3, False, False),
        1.0: (4.0, 3.0, 2, False, False),
        2.0: (4.0, 3.0, 1, False, False),
    }
    buffer.add(chunk([5.0, 5.0], base=100))
    buffer.add(second)
    assert (len(buffer), buffer.get_num_episodes(), buffer.get_added_timesteps()) == (8, 2, 8)
    assert transitions(buffer.sample(400, n_step=3, gamma=0.5)) == {
        0.0: (3.0, 3.0, 3, False, False),
        1.0: (6.0, 4.0, 3, False, False),
        2.0: (12.0, 5.0, 3, False, False),  # rewards 4, 8, 16 from both chunks
        3.0: (24.0, 6.0, 3, True, False),
        4.0: (32.0, 6.0, 2, True, False),
        5.0: (32.0, 6.0, 1, True, False),
        100.0: (7.5, 102.0, 2, False, False),
        101.0: (5.0, 102.0, 1, False, False),
    }


def test_n_step_range_draws_lengths_per_transition():
    rewards = [1.0, 2.0, 4.0, 8.0]
    buffer = EpisodeReplayBuffer(100, seed=0)
    buffer.add(chunk(rewards, terminated=True))
    batch = columns(buffer.sample(400, n_step=(1, 3), gamma=0.5))
    seen = {}
    for obs, reward, next_obs, n in zip(
        batch[Columns.OBS][:, 0], batch[Columns.REWARDS], batch[Columns.NEXT_OBS][:, 0], batch[Columns.N_STEP]
    ):
        t = int(obs)
        assert reward == sum(rewards[t + j] * 0.5**j for j in range(n))
        assert next_obs == t + n
        seen.setdefault(t, set()).add(int(n))
    assert seen == {0: {1, 2, 3}, 1: {1, 2, 3}, 2: {1, 2}, 3: {1}}


def test_list_based_chunks_are_stored_without_being_changed():
    episode = SingleAgentEpisode()
    episode.add_env_reset(np.array([0.0], np.float32))
    episode.add_env_step(np.array([1.0], np.float32), 0, 1.0)
    buffer = EpisodeReplayBuffer(10, seed=0)
    buffer.add(episode)
    assert not episode.is_numpy
    assert transitions(buffer.sample(10)) == {0.0: (1.0, 1.0, 1, False, False)}


def test_dict_observations_are_stored_leaf_wise():
    space = gym.spaces.Dict({"id": gym.spaces.Discrete(9), "pos": gym.spaces.Box(-9, 9, (2,), np.float32)})
    observations = [{"id": t, "pos": np.full(2, t, np.float32)} for t in range(4)]
    episode = SingleAgentEpisode(
        observations=observations, observation_space=space, actions=[0, 1, 2], rewards=[1.0, 1.0, 1.0],
        terminated=True, len_lookback_buffer=0,
    ).to_numpy()  # fmt: skip
    buffer = EpisodeReplayBuffer(10, seed=0)
    buffer.add(episode)
    batch = columns(buffer.sample(50, n_step=2))
    obs, next_obs = batch[Columns.OBS], batch[Columns.NEXT_OBS]
    assert obs["pos"].shape == (50, 2) and obs["id"].dtype == np.int64
    np.testing.assert_array_equal(next_obs["id"], np.minimum(obs["id"] + 2, 3))
    np.testing.assert_array_equal(next_obs["pos"][:, 0], np.minimum(obs["pos"][:, 0] + 2, 3))


def test_sampling_is_uniform_over_stored_steps():
    buffer = EpisodeReplayBuffer(100, seed=1)
    buffer.add([chunk([0.0] * 4, terminated=True), chunk([0.0] * 6, base=10)])
    obs = columns(buffer.sample(50_000))[Columns.OBS][:, 0]
    values, counts = np.unique(obs, return_counts=True)
    assert values.tolist() == [0, 1, 2, 3, 10, 11, 12, 13, 14, 15]
    np.testing.assert_allclose(counts / 50_000, 0.1, atol=0.006)


def test_batch_size_defaults_and_keys():
    buffer = EpisodeReplayBuffer(100, batch_size_B=7, seed=0)
    buffer.add(chunk([1.0, 1.0]))
    batch = columns(buffer.sample())
    assert set(batch) == {
        Columns.OBS, Columns.ACTIONS, Columns.REWARDS, Columns.NEXT_OBS, Columns.TERMINATEDS,
        Columns.TRUNCATEDS, Columns.N_STEP, Columns.WEIGHTS, INDICES,
    }  # fmt: skip
    assert len(batch[Columns.OBS]) == 7
    assert len(buffer.sample(batch_size_B=3)) == 3
    assert len(buffer.sample(5)) == 5


# ------------------------------------------------------------------------------ chunks, eviction


def test_eviction_drops_the_oldest_chunks_whole():
    buffer = EpisodeReplayBuffer(10, seed=0)
    buffer.add([chunk([1.0] * 4, terminated=True), chunk([1.0] * 3, base=100, id_="B")])
    buffer.add(chunk([1.0] * 3, base=200, terminated=True))
    assert (len(buffer), buffer.get_num_episodes()) == (10, 3)

    buffer.add(chunk([1.0] * 2, base=100, t_started=3, id_="B"))  # continues B; the first episode goes
    assert (len(buffer), buffer.get_num_episodes()) == (8, 2)
    assert sampled_obs(buffer) == {100, 101, 102, 103, 104, 200, 201, 202}

    buffer.add(chunk([1.0] * 5, base=300, terminated=True))  # B's first chunk goes, its second stays
    assert (len(buffer), buffer.get_num_episodes()) == (10, 3)
    assert sampled_obs(buffer) == {103, 104, 200, 201, 202, 300, 301, 302, 303, 304}
    assert transitions(buffer.sample(400, n_step=3, gamma=0.5))[103.0] == (1.5, 105.0, 2, False, False)

    buffer.add(chunk([1.0] * 4, base=400, terminated=True))  # the third episode and B's rest go
    assert (len(buffer), buffer.get_num_timesteps(), buffer.get_num_episodes()) == (9, 9, 2)
    assert buffer.get_added_timesteps() == 21
    assert sampled_obs(buffer) == {300, 301, 302, 303, 304, 400, 401, 402, 403}


def test_a_chunk_whose_episode_was_evicted_starts_a_new_record():
    buffer = EpisodeReplayBuffer(5, seed=0)
    buffer.add([chunk([1.0] * 3, id_="B"), chunk([1.0] * 2, base=500, terminated=True)])
    buffer.add(chunk([1.0] * 3, base=600, terminated=True))
    assert buffer.get_num_episodes() == 2  # B is gone
    buffer.add(chunk([1.0, 1.0], t_started=3, id_="B"))
    assert (len(buffer), buffer.get_num_episodes()) == (5, 2)
    assert transitions(buffer.sample(200, n_step=3, gamma=0.5))[3.0] == (1.5, 5.0, 2, False, False)


def test_empty_chunks_are_skipped():
    episode = SingleAgentEpisode()
    episode.add_env_reset(np.zeros(1, np.float32))
    buffer = EpisodeReplayBuffer(5)
    buffer.add(episode)
    assert (len(buffer), buffer.get_num_episodes()) == (0, 0)


def test_chunks_that_do_not_fit_or_do_not_continue_are_rejected():
    buffer = EpisodeReplayBuffer(10, seed=0)
    with pytest.raises(
        EpisodeError, match="brings 11 env steps in one chunk, more than the buffer's capacity of 10"
    ):
        buffer.add(chunk([1.0] * 11))
    done = chunk([1.0] * 2, terminated=True, id_="A")
    buffer.add([done, chunk([1.0] * 3, id_="B")])
    with pytest.raises(EpisodeError, match="Episode A is stored and already done at t=2"):
        buffer.add(done)
    with pytest.raises(EpisodeError, match="stored up to t=3, but the new chunk starts at t_started=4"):
        buffer.add(chunk([1.0], t_started=4, id_="B"))
    with pytest.raises(
        EpisodeError,
        match=r"Expected observation items shaped like the stored ones \[\(1,\)\], got \[\(2,\)\]",
    ):
        buffer.add(
            SingleAgentEpisode(
                observations=np.zeros((2, 2), np.float32), actions=[0], rewards=[0.0], len_lookback_buffer=0
            )
        )
    assert (len(buffer), buffer.get_num_episodes(), buffer.get_added_timesteps()) == (5, 2, 5)


def test_invalid_arguments_are_rejected():
    with pytest.raises(ConfigError, match=r"capacity must be an int >= 1 \(env steps\), got 0; batch_size_B"):
        EpisodeReplayBuffer(0, batch_size_B=0)
    buffer = EpisodeReplayBuffer(10)
    with pytest.raises(EpisodeError, match="holds no env steps yet; add episodes before sampling"):
        buffer.sample()
    buffer.add(chunk([1.0]))
    with pytest.raises(
        ConfigError,
        match=r"Expected n_step to be an int >= 1 or a range \(lo, hi\) with 1 <= lo <= hi, got 0",
    ):
        buffer.sample(n_step=0)
    with pytest.raises(ConfigError, match=r"got \(3, 1\)"):
        buffer.sample(n_step=(3, 1))
    with pytest.raises(ConfigError, match="takes num_items or batch_size_B, got both"):
        buffer.sample(4, batch_size_B=4)
    with pytest.raises(ConfigError, match="an int >= 1, got 0"):
        buffer.sample(0)


# ------------------------------------------------------------------------------- extra outputs


def test_extra_model_outputs_at_the_first_step_of_each_transition():
    extras = {"logp": [-0.0, -0.5, -1.0], "state_out": {"h": np.arange(6, dtype=np.float32).reshape(3, 2)}}
    buffer = EpisodeReplayBuffer(6, seed=0)
    buffer.add(chunk([1.0] * 3, extras=extras))
    batch = columns(buffer.sample(50, include_extra_model_outputs=True))
    t = batch[Columns.OBS][:, 0].astype(int)
    np.testing.assert_array_equal(batch["logp"], -0.5 * t)
    np.testing.assert_array_equal(batch["state_out"]["h"][:, 1], 2 * t + 1)
    assert "logp" not in columns(buffer.sample(5))

    buffer.add(chunk([1.0] * 3, base=10))  # no extra outputs
    with pytest.raises(EpisodeError, match=r"have the extra model output 'logp', but \d+ of 50 have none"):
        buffer.sample(50, include_extra_model_outputs=True)
    buffer.add(chunk([1.0] * 3, base=20))  # evicts the only steps that had outputs
    assert set(columns(buffer.sample(5, include_extra_model_outputs=True))) == set(columns(buffer.sample(5)))


# ---------------------------------------------------------------------------- episodes, state


def test_sample_returns_rllibs_one_step_n_step_episodes():
    stored = chunk([1.0, 2.0, 4.0, 8.0], terminated=True, id_="E")
    buffer = EpisodeReplayBuffer(10, seed=0)
    buffer.add(stored)
    episodes = buffer.sample(40, n_step=2, gamma=0.5)
    assert len(episodes) == 40 and not episodes.touched
    by_t = {episode.t_started: episode for episode in episodes}
    assert sorted(by_t) == [0, 1, 2, 3]
    last = by_t[3]
    assert (last.id_, len(last), last.is_terminated, last.get_actions(0)) == ("E", 1, True, 3)
    assert last.get_observations().tolist() == [[3.0], [4.0]] and last.get_rewards().tolist() == [8.0]
    assert last.get_extra_model_outputs(Columns.N_STEP).tolist() == [1]
    first = by_t[0]
    assert (first.get_observations().tolist(), first.get_rewards().tolist(), first.is_done) == (
        [[0.0], [2.0]],
        [2.0],
        False,
    )
    assert first.get_extra_model_outputs(Columns.N_STEP).tolist() == [2]
    assert first.get_extra_model_outputs(INDICES).tolist() == [0]
    assert first.get_extra_model_outputs(Columns.WEIGHTS).tolist() == [1.0]
    assert first.observation_space == stored.observation_space and first.module_id is None
    assert episodes.touched and episodes[-40] is episodes[0]  # built once, on first use


def _leaves_are_plain(value):
    if isinstance(value, dict):
        return all(isinstance(k, str) and _leaves_are_plain(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_leaves_are_plain(v) for v in value)
    return isinstance(value, np.ndarray | int | float | bool | str | gym.Space | type(None))


def _filled_buffer(capacity=10):
    buffer = EpisodeReplayBuffer(capacity, seed=3)
    first, second = runner_chunks([1.0] * 5, cut_after=[3], base=100)
    buffer.add([chunk([1.0] * 4, terminated=True), first])
    buffer.add(chunk([2.0] * 3, base=200, truncated=True, extras={"logp": [0.1, 0.2, 0.3]}))
    buffer.add(second)  # evicts the first episode
    return buffer


def test_state_round_trip_restores_steps_episodes_and_random_state():
    buffer = _filled_buffer()
    state = buffer.get_state()
    assert _leaves_are_plain(state)
    restored = EpisodeReplayBuffer(10)
    restored.set_state(state)
    counts = (len(restored), restored.get_num_episodes(), restored.get_added_timesteps())
    assert counts == (len(buffer), buffer.get_num_episodes(), buffer.get_added_timesteps()) == (8, 2, 12)
    for a, b in (
        (buffer.sample(64, n_step=3), restored.sample(64, n_step=3)),
        (buffer.sample(64, n_step=(1, 2)), restored.sample(64, n_step=(1, 2))),
    ):
        for key, column in columns(a).items():
            np.testing.assert_array_equal(column, columns(b)[key])
    for each in (buffer, restored):  # both continue alike: chunks, eviction
        each.add(chunk([1.0] * 4, base=300, terminated=True))
    assert transitions(restored.sample(400, n_step=3)) == transitions(buffer.sample(400, n_step=3))
    assert len(restored) == 9 and sampled_obs(restored) == {103, 104, 200, 201, 202, 300, 301, 302, 303}


def test_state_restores_into_other_capacities_that_hold_it():
    state = _filled_buffer().get_state()
    larger = EpisodeReplayBuffer(50)
    larger.set_state(state)
    assert transitions(larger.sample(400, n_step=2)) == transitions(_restored(state).sample(400, n_step=2))
    with pytest.raises(CheckpointError, match="holds 8 env steps, more than this buffer's capacity of 7"):
        EpisodeReplayBuffer(7).set_state(state)


def _restored(state):
    buffer = EpisodeReplayBuffer(10)
    buffer.set_state(state)
    return buffer


def test_state_of_an_empty_buffer_round_trips():
    restored = EpisodeReplayBuffer(5)
    restored.set_state(EpisodeReplayBuffer(5).get_state())
    restored.add(chunk([1.0]))
    assert transitions(restored.sample(3)) == {0.0: (1.0, 1.0, 1, False, False)}
