"""RLlib's observation preprocessors: `preprocess()` rewrites the newest observation in the episodes,
single-agent or for all agents at once; `FlattenObservations(agent_ids=...)` flattens only some agents."""

import gymnasium as gym
import numpy as np

from flywheel import MultiAgentEnvRunner, PPOConfig, SingleAgentEnvRunner
from flywheel.connectors.env_to_module import (
    FlattenObservations,
    MultiAgentObservationPreprocessor,
    SingleAgentObservationPreprocessor,
)
from flywheel.testing.multi_agent_envs import MultiCartPole


class FirstTwo(SingleAgentObservationPreprocessor):
    """CartPole's cart position and velocity only, doubled."""

    def recompute_output_observation_space(self, input_observation_space, input_action_space):
        return gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)

    def preprocess(self, observation, episode):
        return (observation[:2] * 2).astype(np.float32)


def test_single_agent_preprocessor_rewrites_the_episodes_and_sets_the_module_space():
    config = (
        PPOConfig().environment("CartPole-v1").env_runners(env_to_module_connector=lambda env: FirstTwo())
    )
    runner = SingleAgentEnvRunner(config=config)
    assert runner.module.observation_space.shape == (2,)
    episodes = runner.sample(num_timesteps=10)
    observations = np.concatenate([e.get_observations(slice(0, len(e))) for e in episodes])
    assert observations.shape == (10, 2) and np.abs(observations[:, 0]).max() <= 2 * 4.8
    runner.stop()


class PartnerCart(MultiAgentObservationPreprocessor):
    """Each agent sees its own observation plus the other agent's cart position (or 9 when it is gone)."""

    def recompute_output_observation_space(self, input_observation_space, input_action_space):
        return gym.spaces.Dict(
            {
                "agent_0": gym.spaces.Dict(
                    {"own": input_observation_space["agent_0"], "mode": gym.spaces.Discrete(2)}
                ),
                "agent_1": gym.spaces.Box(-np.inf, np.inf, (5,), np.float32),
            }
        )

    def preprocess(self, observations, episode):
        new = {}
        if "agent_0" in observations:
            new["agent_0"] = {"own": observations["agent_0"], "mode": 1}
        if "agent_1" in observations:
            partner = observations.get("agent_0", np.full(4, 9.0))[0]
            new["agent_1"] = np.append(observations["agent_1"], partner).astype(np.float32)
        return new


def test_multi_agent_preprocessor_then_flattening_one_agent_only():
    config = (
        PPOConfig()
        .environment(MultiCartPole, env_config={"num_agents": 2})
        .env_runners(
            env_to_module_connector=lambda env, spaces, device: [
                PartnerCart(),
                FlattenObservations(multi_agent=True, agent_ids=["agent_0"]),
            ]
        )
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda aid, *a, **kw: f"p{aid[-1]}")
    )
    runner = MultiAgentEnvRunner(config=config)
    assert runner.module["p0"].observation_space.shape == (4 + 2,)  # own obs + one-hot mode
    assert runner.module["p1"].observation_space.shape == (5,)  # passed through unflattened
    episodes = runner.sample(num_timesteps=12)
    for episode in episodes:
        a0 = np.asarray(episode.agent_episodes["agent_0"].get_observations(-1))
        a1 = np.asarray(episode.agent_episodes["agent_1"].get_observations(-1))
        assert a0.shape == (6,) and a0[:2].tolist() == [0.0, 1.0]  # Dict keys sorted: "mode" first
        assert a1.shape == (5,)
    runner.stop()
