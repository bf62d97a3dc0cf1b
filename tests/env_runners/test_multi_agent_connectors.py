"""The default connector pieces on MultiAgentEpisodes: `{module_id: {column: batched}}`, rows in
(episode index, sorted agent id) order, actions from each module's own distribution and action space."""

import gymnasium as gym
import numpy as np
import torch

from flywheel import Columns, MultiAgentEpisode, MultiRLModuleSpec, RLModuleSpec
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.connectors.env_to_module import default_env_to_module_connectors
from flywheel.connectors.env_to_module.agent_rows import agent_rows
from flywheel.connectors.module_to_env import default_module_to_env_connectors
from flywheel.connectors.pipeline import ConnectorPipelineV2

OBS = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
DISCRETE = gym.spaces.Discrete(3)
BOX = gym.spaces.Box(np.array([0.0, -2.0], np.float32), np.array([4.0, 2.0], np.float32))


def modules():
    torch.manual_seed(0)
    specs = {
        "disc": RLModuleSpec(DefaultPPOTorchRLModule, OBS, DISCRETE),
        "cont": RLModuleSpec(DefaultPPOTorchRLModule, OBS, BOX),
    }
    return MultiRLModuleSpec(rl_module_specs=specs).build()


def episode(agents, mapping):
    ep = MultiAgentEpisode(agent_module_ids=mapping)
    ep.add_env_reset(observations={a: np.full(2, value, np.float32) for a, value in agents.items()})
    return ep


def test_env_to_module_batches_per_module_in_episode_then_agent_order():
    mapping = {"b": "disc", "a": "disc", "z": "cont"}
    episodes = [episode({"b": 1.0, "a": 2.0, "z": 3.0}, mapping), episode({"a": 4.0, "z": 5.0}, mapping)]
    pipeline = ConnectorPipelineV2(connectors=default_env_to_module_connectors())
    shared = {}
    batch = pipeline(rl_module=modules(), batch={}, episodes=episodes, explore=True, shared_data=shared)
    assert sorted(batch) == ["cont", "disc"]
    assert batch["disc"][Columns.OBS].dtype == torch.float32
    assert batch["disc"][Columns.OBS][:, 0].tolist() == [2.0, 1.0, 4.0]  # (0, a), (0, b), (1, a)
    assert batch["cont"][Columns.OBS][:, 0].tolist() == [3.0, 5.0]
    assert agent_rows(episodes, shared)["disc"].keys == [(0, "a"), (0, "b"), (1, "a")]


def test_module_to_env_samples_per_module_and_unsquashes_box_actions():
    multi = modules()
    mapping = {"a": "disc", "z": "cont"}
    episodes = [episode({"a": 0.0, "z": 0.0}, mapping)]
    to_module = ConnectorPipelineV2(connectors=default_env_to_module_connectors())(
        rl_module=multi, batch={}, episodes=episodes, explore=True, shared_data={}
    )
    out = multi.forward_exploration(to_module)
    pipeline = ConnectorPipelineV2(connectors=default_module_to_env_connectors(normalize_actions=True))
    to_env = pipeline(rl_module=multi, batch=out, episodes=episodes, explore=True, shared_data={})
    disc, cont = to_env["disc"], to_env["cont"]
    assert isinstance(disc[Columns.ACTIONS], np.ndarray) and disc[Columns.ACTIONS].shape == (1,)
    assert disc[Columns.ACTION_LOGP].shape == (1,)
    assert np.array_equal(disc[Columns.ACTIONS_FOR_ENV], disc[Columns.ACTIONS])
    expected = np.clip(
        np.array([2.0, 0.0]) + cont[Columns.ACTIONS][0] * np.array([2.0, 2.0]), BOX.low, BOX.high
    )
    np.testing.assert_allclose(cont[Columns.ACTIONS_FOR_ENV][0], expected, rtol=1e-6)


def test_flatten_observations_per_agent_on_a_pettingzoo_env():
    from pettingzoo.classic import rps_v2

    from flywheel import MultiAgentEnvRunner, PPOConfig
    from flywheel.connectors.env_to_module import FlattenObservations
    from flywheel.env.pettingzoo import PettingZooEnv

    config = (
        PPOConfig()
        .environment(lambda cfg: PettingZooEnv(rps_v2.parallel_env(max_cycles=3)))
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kw: "shared")
        .env_runners(
            env_to_module_connector=lambda env, spaces, device: FlattenObservations(multi_agent=True)
        )
        .debugging(seed=0)
    )
    runner = MultiAgentEnvRunner(config=config)
    try:
        assert runner.module["shared"].observation_space == gym.spaces.Box(0.0, 1.0, (4,), np.float32)
        (episode,) = runner.sample(num_episodes=1)
    finally:
        runner.stop()
    for agent_id in ("player_0", "player_1"):
        agent_episode = episode.agent_episodes[agent_id]
        observations = agent_episode.get_observations()
        assert observations.shape == (4, 4) and observations.dtype == np.float32
        assert observations.sum(axis=1).tolist() == [1.0] * 4  # one-hot, final observation too
        assert observations[0].tolist() == [0.0, 0.0, 0.0, 1.0]  # reset: "no move yet" (3)
    theirs = episode.agent_episodes["player_1"].get_actions()
    assert (
        np.argmax(episode.agent_episodes["player_0"].get_observations()[1:], axis=1).tolist()
        == theirs.tolist()
    )
