"""EpisodeReplayBuffer.sample_sequences: B x T rows of consecutive steps with is_first / is_terminated,
final observations as steps of their own, and jumps to a new draw where an episode's data ends."""

import numpy as np
import pytest

from flywheel.errors import ConfigError, EpisodeError
from flywheel.replay import EpisodeReplayBuffer

from .conftest import chunk, columns


def check_rows(sample, episodes):
    """Every step agrees with the episode its observation comes from (obs = base + t)."""
    obs = sample["obs"][..., 0]
    for b in range(obs.shape[0]):
        for t in range(obs.shape[1]):
            base, step = divmod(int(obs[b, t]), 100)
            length, terminated = episodes[base]
            first, term = sample["is_first"][b, t], sample["is_terminated"][b, t]
            assert term == (terminated and step == length)
            if t > 0 and not first:  # a continuation: the previous step is one earlier in the same episode
                assert obs[b, t - 1] == obs[b, t] - 1
                assert sample["rewards"][b, t] == float(step)  # reward of step t-1 -> t is t (see below)
            else:
                assert sample["rewards"][b, t] == 0.0
            if step < length:
                assert sample["actions"][b, t] == step
            else:
                assert sample["actions"][b, t] == 0  # the final observation's placeholder action


def test_rows_follow_episodes_and_their_ends():
    buffer = EpisodeReplayBuffer(1000, seed=0)
    # Episode k: observations 100k + t, reward of step t-1 -> t is t (rewards 1, 2, ...).
    episodes = {1: (3, True), 2: (5, False), 3: (4, True)}
    for base, (length, terminated) in episodes.items():
        buffer.add(
            chunk(
                list(range(1, length + 1)), base=100 * base, terminated=terminated, truncated=not terminated
            )
        )
    sample = buffer.sample_sequences(batch_size_B=8, batch_length_T=10)
    assert sample["obs"].shape == (8, 10, 1) and sample["actions"].shape == (8, 10)
    assert sample["is_first"][:, 0].all() and (~sample["is_first"][:, 1:]).sum() > 30
    check_rows(sample, episodes)
    # Terminal and truncated final observations both appear, and only terminal ones are flagged.
    assert sample["is_terminated"].sum() > 0
    assert (sample["obs"][..., 0] == 205).any()


def test_ongoing_episode_jumps_where_its_data_ends():
    buffer = EpisodeReplayBuffer(1000, seed=1)
    buffer.add(chunk([1.0, 2.0, 3.0], base=100))  # ongoing: its newest observation 103 has no row yet
    sample = buffer.sample_sequences(batch_size_B=4, batch_length_T=6)
    obs = sample["obs"][..., 0]
    assert not (obs == 103).any() and not sample["is_terminated"].any()
    # After 102 comes a new draw, flagged is_first with no reward.
    after = np.argwhere(obs[:, :-1] == 102)
    for b, t in after:
        assert sample["is_first"][b, t + 1] and sample["rewards"][b, t + 1] == 0.0


def test_errors():
    buffer = EpisodeReplayBuffer(100)
    with pytest.raises(EpisodeError, match="holds no env steps yet"):
        buffer.sample_sequences(batch_size_B=2, batch_length_T=3)
    buffer.add(chunk([1.0], base=100, terminated=True))
    with pytest.raises(ConfigError, match="batch_length_T to be an int >= 1"):
        buffer.sample_sequences(batch_length_T=0)


def test_extra_model_outputs_can_be_left_out():
    extras = {"logp": [-0.0, -0.5, -1.0]}
    kept, dropped = (
        EpisodeReplayBuffer(100, seed=0),
        EpisodeReplayBuffer(100, seed=0, store_extra_model_outputs=False),
    )
    for buffer in (kept, dropped):
        buffer.add(chunk([1.0, 2.0, 3.0], base=100, terminated=True, extras=extras))
    assert "logp" in columns(kept.sample(4, include_extra_model_outputs=True))
    assert set(columns(dropped.sample(4, include_extra_model_outputs=True))) == set(
        columns(dropped.sample(4))
    )
    # A restored buffer keeps leaving them out.
    restored = EpisodeReplayBuffer(100, store_extra_model_outputs=False)
    restored.set_state(dropped.get_state())
    restored.add(chunk([1.0], base=200, terminated=True, extras={"logp": [-0.1]}))
    assert len(restored) == 4
    assert "logp" not in columns(restored.sample(4, include_extra_model_outputs=True))
