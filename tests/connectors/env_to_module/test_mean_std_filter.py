"""MeanStdFilter: running stats, normalization written back into episodes, exact merging across runners,
per agent and per Box of a Dict observation in a multi-agent pipeline."""

import gymnasium as gym
import numpy as np
import pytest

from flywheel import MultiAgentEnvRunner, PPOConfig
from flywheel.connectors import ConnectorPipelineV2
from flywheel.connectors.env_to_module import FlattenObservations, MeanStdFilter
from flywheel.env import MultiAgentEnv
from flywheel.errors import ConnectorError

from ..conftest import episode_from

SPACE = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)


def feed(piece, rows):
    """One pipeline call on fresh episodes whose newest observations are `rows`; returns the episodes."""
    episodes = [episode_from([np.asarray(row, np.float32)]) for row in rows]
    assert piece(rl_module=None, batch={}, episodes=episodes) == {}
    return episodes


def stats(piece):
    """The filter's current stats (shared + delta) via its public state."""
    merged = piece.merge_states([piece.get_state()])["shared"]
    return merged["count"], merged["mean"], merged["var"]


def test_output_space_is_the_clip_range():
    piece = MeanStdFilter(SPACE, clip=5.0)
    assert piece.observation_space == gym.spaces.Box(-5.0, 5.0, (2,), np.float32)


def test_non_box_observations_are_rejected():
    with pytest.raises(
        ConnectorError,
        match=r"MeanStdFilter normalizes Box observations \(or the Boxes in Dict/Tuple observations\), got "
        r"Discrete\(3\)\. Put FlattenObservations before it",
    ):
        MeanStdFilter(gym.spaces.Discrete(3))


def test_stats_and_normalized_observations_after_known_inputs():
    piece = MeanStdFilter(SPACE)
    first = feed(piece, [[1.0, 2.0], [3.0, 4.0]])
    count, mean, var = stats(piece)
    assert count == 2
    np.testing.assert_array_equal(mean, [2.0, 3.0])
    np.testing.assert_array_equal(var, [1.0, 1.0])
    # Normalized with the stats including this call's observations, written back as float32.
    assert first[0].get_observations(-1).dtype == np.float32
    np.testing.assert_allclose(first[0].get_observations(-1), [-1.0, -1.0], rtol=1e-6)
    np.testing.assert_allclose(first[1].get_observations(-1), [1.0, 1.0], rtol=1e-6)

    second = feed(piece, [[5.0, 6.0]])
    count, mean, var = stats(piece)
    assert count == 3
    np.testing.assert_array_equal(mean, [3.0, 4.0])
    np.testing.assert_allclose(var, [8 / 3, 8 / 3], rtol=1e-15)
    np.testing.assert_allclose(second[0].get_observations(-1), [2 / np.sqrt(8 / 3)] * 2, rtol=1e-6)


def test_clip_and_frozen_stats():
    piece = MeanStdFilter(SPACE, clip=3.0)
    feed(piece, [[0.0, 0.0], [2.0, 2.0]])  # mean 1, std 1
    piece.update_stats = False
    (episode,) = feed(piece, [[100.0, 1.5]])
    np.testing.assert_allclose(episode.get_observations(-1), [3.0, 0.5], rtol=1e-6)
    assert stats(piece)[0] == 2


def test_unfed_filter_only_clips():
    piece = MeanStdFilter(SPACE, clip=2.0, update_stats=False)
    (episode,) = feed(piece, [[0.5, -7.0]])
    np.testing.assert_allclose(episode.get_observations(-1), [0.5, -2.0], rtol=1e-6)


def test_merge_of_three_runners_equals_one_filter_fed_everything():
    rng = np.random.default_rng(0)
    data = [rng.normal(loc, 2.0, size=(n, 2)) for loc, n in ((1.0, 5), (-3.0, 7), (0.5, 4), (10.0, 3))]
    reference = MeanStdFilter(SPACE)
    for rows in data:
        feed(reference, rows)

    base = MeanStdFilter(SPACE)
    feed(base, data[0])
    runners = [MeanStdFilter(SPACE) for _ in range(3)]
    for runner, rows in zip(runners, data[1:]):
        runner.set_state(base.get_state())
        feed(runner, rows[:2])
        feed(runner, rows[2:])
    merged = runners[0].merge_states([runner.get_state() for runner in runners])

    expected_count, expected_mean, expected_var = stats(reference)
    assert merged["shared"]["count"] == expected_count == 19
    np.testing.assert_allclose(merged["shared"]["mean"], expected_mean, rtol=1e-12)
    np.testing.assert_allclose(merged["shared"]["var"], expected_var, rtol=1e-12)
    assert merged["delta"]["count"] == 0

    for runner in runners:
        runner.set_state(merged)
        state = runner.get_state()
        assert state["shared"]["count"] == 19 and state["delta"]["count"] == 0
    # Same stats everywhere → the same normalization as the reference.
    (a,) = feed(runners[2], [[0.25, 0.75]])
    (b,) = feed(reference, [[0.25, 0.75]])
    np.testing.assert_allclose(a.get_observations(-1), b.get_observations(-1), rtol=1e-6)


def test_merge_uses_the_latest_shared_stats_even_from_a_restarted_runner():
    synced, restarted = MeanStdFilter(SPACE), MeanStdFilter(SPACE)
    feed(synced, [[1.0, 1.0], [3.0, 3.0]])
    synced.set_state(synced.get_state())  # shared: count 2, mean 2
    feed(restarted, [[5.0, 5.0]])  # never synced: empty shared, delta count 1
    merged = synced.merge_states([restarted.get_state(), synced.get_state()])
    assert merged["shared"]["count"] == 3
    np.testing.assert_allclose(merged["shared"]["mean"], [3.0, 3.0])
    np.testing.assert_allclose(merged["shared"]["var"], [8 / 3, 8 / 3])


def test_set_state_folds_a_pending_delta_into_the_shared_stats():
    source, target = MeanStdFilter(SPACE), MeanStdFilter(SPACE)
    feed(source, [[1.0, 1.0], [3.0, 3.0]])
    target.set_state(source.get_state())
    state = target.get_state()
    assert state["shared"]["count"] == 2 and state["delta"]["count"] == 0
    np.testing.assert_array_equal(state["shared"]["mean"], [2.0, 2.0])


def test_reset_state_forgets_the_stats():
    piece = MeanStdFilter(SPACE)
    feed(piece, [[1.0, 1.0]])
    piece.reset_state()
    assert stats(piece)[0] == 0


def test_state_survives_the_pipeline_round_trip():
    pipeline = ConnectorPipelineV2(SPACE, connectors=[MeanStdFilter()])
    feed(pipeline, [[1.0, 2.0], [3.0, 4.0]])
    state = pipeline.get_state()
    assert list(state) == ["0_MeanStdFilter"]
    fresh = ConnectorPipelineV2(SPACE, connectors=[MeanStdFilter()])
    fresh.set_state(state)
    assert fresh.get_state()["0_MeanStdFilter"]["shared"]["count"] == 2
    assert fresh.observation_space == gym.spaces.Box(-10.0, 10.0, (2,), np.float32)


class DictObsAgents(MultiAgentEnv):
    """Two agents observing `{"pos": [5 + t] * 2, "vel": [-2] * 3}` for 5 steps."""

    def __init__(self, config=None):
        super().__init__()
        self.possible_agents = ["a0", "a1"]
        self.agents = list(self.possible_agents)
        space = gym.spaces.Dict(
            {
                "pos": gym.spaces.Box(-20, 20, (2,), np.float32),
                "vel": gym.spaces.Box(-10, 10, (3,), np.float32),
            }
        )
        self.observation_spaces = dict.fromkeys(self.possible_agents, space)
        self.action_spaces = {agent: gym.spaces.Discrete(2) for agent in self.possible_agents}
        self.t = 0

    def _obs(self):
        return {
            agent: {"pos": np.full(2, 5.0 + self.t, np.float32), "vel": np.full(3, -2.0, np.float32)}
            for agent in self.agents
        }

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {}

    def step(self, actions):
        self.t += 1
        return self._obs(), dict.fromkeys(self.agents, 1.0), {"__all__": self.t >= 5}, {"__all__": False}, {}


def test_multi_agent_dict_of_boxes_keeps_stats_per_agent_and_box():
    config = (
        PPOConfig()
        .environment(DictObsAgents)
        .multi_agent(policies={"p"}, policy_mapping_fn=lambda agent_id, episode, **kw: "p")
        .env_runners(
            env_to_module_connector=lambda env, spaces, device: [
                MeanStdFilter(multi_agent=True),
                FlattenObservations(multi_agent=True),
            ]
        )
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
    runner = MultiAgentEnvRunner(config=config)
    piece = runner.env_to_module.connectors[0]
    assert piece.observation_space["a0"] == gym.spaces.Dict(
        {"pos": gym.spaces.Box(-10, 10, (2,), np.float32), "vel": gym.spaces.Box(-10, 10, (3,), np.float32)}
    )
    (episode,) = runner.sample(num_episodes=1)
    runner.stop()
    state = piece.get_state()
    assert sorted(state) == ["a0/pos", "a0/vel", "a1/pos", "a1/vel"]
    pos, vel = state["a0/pos"]["delta"], state["a0/vel"]["delta"]
    # a0's observations: the reset, 5 steps, then the next episode's reset (prepared for its first action)
    seen = np.array([5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 5.0])
    assert pos["count"] == vel["count"] == 7
    np.testing.assert_allclose(pos["mean"], [seen.mean()] * 2)
    np.testing.assert_allclose(pos["var"], [seen.var()] * 2)
    np.testing.assert_array_equal(vel["mean"], [-2.0] * 3)
    np.testing.assert_array_equal(vel["var"], [0.0] * 3)
    # Stored normalized, then flattened (pos, vel): 5 against [5]; 6 against [5, 6] (mean 5.5, std 0.5).
    stored = episode.agent_episodes["a0"].get_observations(slice(0, 2))
    np.testing.assert_allclose(stored, [[0.0] * 5, [1.0, 1.0, 0.0, 0.0, 0.0]], atol=1e-6)
    merged = piece.merge_states([state, state])
    assert merged["a1/pos"]["shared"]["count"] == 14 and merged["a1/pos"]["delta"]["count"] == 0
    piece.set_state(merged)
    assert piece.get_state()["a0/vel"]["shared"]["count"] == 14
