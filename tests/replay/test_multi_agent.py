"""MultiAgentEpisodeReplayBuffer: per-module buffers fed with the agents' episodes, sampled by module."""

import numpy as np
import pytest

from flywheel import Columns
from flywheel.errors import ConfigError
from flywheel.replay import (
    INDICES,
    MultiAgentEpisodeReplayBuffer,
    MultiAgentPrioritizedEpisodeReplayBuffer,
    PrioritizedEpisodeReplayBuffer,
)

from .conftest import chunk


def by_module(episodes):
    """`{module_id: columns}` of sampled transitions (one block per module)."""
    return {block.module_id: block.columns for block in episodes.blocks}


class StandInMultiAgentEpisode:
    """What the buffer needs of a MultiAgentEpisode: per-agent episodes and the agent → module mapping."""

    def __init__(self, agent_episodes, mapping):
        self.agent_episodes = agent_episodes
        self._mapping = mapping

    def module_for(self, agent_id):
        return self._mapping[agent_id]


MAPPING = {"a0": "p0", "a1": "p1", "a2": "p0"}


def _episode(base, t_started=0, steps=3, terminated=False):
    """Agent a<k> sees observations base + 100 k + t."""
    return StandInMultiAgentEpisode(
        {
            agent: chunk(
                [1.0] * steps,
                base=base + 100 * k,
                t_started=t_started,
                terminated=terminated,
                id_=f"{base}-{agent}",
            )
            for k, agent in enumerate(MAPPING)
        },
        MAPPING,
    )


def test_agents_steps_go_to_their_modules_and_chunks_continue():
    buffer = MultiAgentEpisodeReplayBuffer(capacity=100, seed=0)
    buffer.add([_episode(0), _episode(1000)])
    buffer.add([_episode(0, t_started=3, steps=2, terminated=True)])
    assert sorted(buffer.keys()) == ["p0", "p1"] and "p0" in buffer and "p2" not in buffer
    assert (buffer.get_num_timesteps("p0"), buffer.get_num_timesteps("p1"), len(buffer)) == (16, 8, 24)
    assert (buffer.get_num_episodes("p0"), buffer.get_num_episodes()) == (4, 6)
    assert buffer.get_added_timesteps() == 24
    episodes = buffer.sample(300, n_step=3, gamma=0.5)
    assert len(episodes) == 600  # 300 per module
    assert [episodes[0].module_id, episodes[299].module_id, episodes[300].module_id] == ["p0", "p0", "p1"]
    batches = by_module(episodes)
    assert list(batches) == ["p0", "p1"]
    assert set(batches["p1"][Columns.OBS][:, 0].tolist()) == {100, 101, 102, 103, 104, 1100, 1101, 1102}
    p0 = batches["p0"]
    assert set(p0[Columns.OBS][:, 0].tolist()) == {
        *range(0, 5), *range(200, 205), *range(1000, 1003), *range(1200, 1203)
    }  # fmt: skip
    crossing = p0[Columns.OBS][:, 0] == 202  # a2's window over both of its chunks
    assert p0[Columns.NEXT_OBS][crossing, 0].tolist()[0] == 205 and p0[Columns.TERMINATEDS][crossing].all()
    assert list(by_module(buffer.sample(2, module_ids=["p1"]))) == ["p1"]


def test_single_agent_episodes_go_to_their_module_id_or_the_default():
    buffer = MultiAgentEpisodeReplayBuffer(capacity=10)
    tagged = chunk([1.0, 1.0], base=50)
    tagged.module_id = "p1"
    buffer.add([chunk([1.0]), tagged])
    assert {m: len(buffer[m]) for m in buffer} == {"default_policy": 1, "p1": 2}
    with pytest.raises(
        KeyError,
        match=r"No replay buffer for module 'p9'; modules with stored steps: \['default_policy', 'p1'\]",
    ):
        buffer["p9"]


def test_prioritized_modules_update_their_own_priorities():
    buffer = MultiAgentPrioritizedEpisodeReplayBuffer(capacity=10, alpha=1.0, seed=0)
    assert buffer.buffer_class is PrioritizedEpisodeReplayBuffer
    buffer.add([_episode(0)])
    batches = by_module(buffer.sample(4))
    buffer.update_priorities(
        {"p0": np.full(4, 1.0), "p1": np.full(4, 1.0)}, {m: b[INDICES] for m, b in batches.items()}
    )
    buffer.update_priorities({"p1": np.array([97.0])}, {"p1": np.array([2])})
    p1 = by_module(buffer.sample(1000, beta=1.0))["p1"]
    assert (p1[INDICES] == 2).mean() > 0.95
    np.testing.assert_allclose(p1[Columns.WEIGHTS][p1[INDICES] == 2], 1 / 97)
    with pytest.raises(ConfigError, match=r"for the same modules, got \['p0'\] and \['p1'\]"):
        buffer.update_priorities({"p0": np.ones(1)}, {"p1": np.zeros(1, int)})
    uniform = MultiAgentEpisodeReplayBuffer(capacity=10)
    uniform.add([_episode(0)])
    with pytest.raises(
        ConfigError, match=r"needs prioritized buffers, but module 'p1' has a EpisodeReplayBuffer"
    ):
        uniform.update_priorities({"p1": np.ones(1)}, {"p1": np.zeros(1, int)})
    with pytest.raises(ConfigError, match="Expected alpha to be a number >= 0"):
        MultiAgentEpisodeReplayBuffer(buffer_class=PrioritizedEpisodeReplayBuffer, alpha=-1.0)


def test_seeded_module_streams_are_reproducible_and_distinct():
    def samples(seed):
        buffer = MultiAgentEpisodeReplayBuffer(capacity=100, seed=seed)
        buffer.add(
            [
                StandInMultiAgentEpisode(
                    {"x": chunk([1.0] * 50, id_="x"), "y": chunk([1.0] * 50, id_="y")}, {"x": "p0", "y": "p1"}
                )
            ]
        )
        return {m: b[INDICES].tolist() for m, b in by_module(buffer.sample(20)).items()}

    first = samples(7)
    assert first == samples(7) and first["p0"] != first["p1"]


def test_state_round_trip():
    buffer = MultiAgentEpisodeReplayBuffer(capacity=8, buffer_class=PrioritizedEpisodeReplayBuffer, seed=1)
    buffer.add([_episode(0), _episode(1000)])
    buffer.update_priorities({"p1": np.array([3.0])}, {"p1": np.array([4])})
    restored = MultiAgentEpisodeReplayBuffer(capacity=8, buffer_class=PrioritizedEpisodeReplayBuffer)
    restored.set_state(buffer.get_state())
    assert (
        sorted(restored.keys()) == ["p0", "p1"] and len(restored) == len(buffer) == 12
    )  # p0 evicted one chunk
    a, b = (
        by_module(buffer.sample(100, n_step=2, beta=0.5)),
        by_module(restored.sample(100, n_step=2, beta=0.5)),
    )
    for module_id in a:
        for key in a[module_id]:
            np.testing.assert_array_equal(a[module_id][key], b[module_id][key])


def test_real_multi_agent_episode_chunks_continue_per_agent():
    from flywheel import MultiAgentEpisode

    episode = MultiAgentEpisode(agent_module_ids={"a0": "p0", "a1": "p1"})
    episode.add_env_reset(observations={"a0": np.array([0.0]), "a1": np.array([100.0])})
    chunks = []
    for t in range(1, 6):
        episode.add_env_step(
            {"a0": np.array([float(t)]), "a1": np.array([100.0 + t])},
            {"a0": 0, "a1": 1},
            {"a0": 1.0, "a1": 2.0},
            terminateds={"__all__": t == 5},
        )
        if t == 2:
            chunks.append(episode)
            episode = episode.cut(len_lookback_buffer=1)
            chunks[-1].to_numpy()
    chunks.append(episode.to_numpy())
    buffer = MultiAgentEpisodeReplayBuffer(capacity=20, seed=0)
    for each in chunks:
        buffer.add([each])
    assert (buffer.get_num_timesteps("p0"), buffer.get_num_episodes("p0"), buffer.get_num_episodes()) == (
        5,
        1,
        2,
    )
    batch = by_module(buffer.sample(200, n_step=3, gamma=0.5, module_ids=["p1"]))["p1"]
    from_101 = batch[Columns.OBS][:, 0] == 101.0  # a window over both chunks
    assert batch[Columns.REWARDS][from_101][0] == 2.0 * (1 + 0.5 + 0.25)
    assert batch[Columns.NEXT_OBS][from_101][0, 0] == 104.0
    assert batch[Columns.TERMINATEDS][batch[Columns.OBS][:, 0] == 104.0].all()
