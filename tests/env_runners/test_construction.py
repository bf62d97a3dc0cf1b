"""Runners built as RLlib 2.60 builds them: the config positionally or by keyword, worker_index /
num_workers, and from a bare AlgorithmConfig (no algorithm, no module): random actions only."""

import pytest

from flywheel import AlgorithmConfig, MultiAgentEnvRunner, PPOConfig, SingleAgentEnvRunner
from flywheel.env import make_multi_agent
from flywheel.errors import ConfigError


def bare(num_envs=5):
    return (
        AlgorithmConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=num_envs, rollout_fragment_length=64)
    )


def test_config_positionally_or_by_keyword_and_rllibs_worker_kwargs():
    config = PPOConfig().environment("CartPole-v1").env_runners(num_env_runners=3)
    for runner in (SingleAgentEnvRunner(config), SingleAgentEnvRunner(config=config)):
        assert runner.config is config and (runner.worker_index, runner.num_workers) == (0, 3)
        runner.stop()
    runner = SingleAgentEnvRunner(config, worker_index=2, num_workers=5)
    assert (runner.worker_index, runner.num_workers) == (2, 5)
    runner.stop()


def test_a_bare_config_samples_random_actions_as_rllib():
    runner = SingleAgentEnvRunner(bare())
    assert runner.module is None
    for _ in range(3):
        episodes = runner.sample(num_episodes=10, random_actions=True)
        assert len(episodes) == 10 and all(e.is_done and e.t_started == 0 for e in episodes)
    runner.sample(random_actions=True)
    for _ in range(3):
        episodes = runner.sample(num_timesteps=22, random_actions=True)
        assert 22 <= sum(len(e) for e in episodes) < 22 + 5 and any(e.t_started > 0 for e in episodes)
        episodes = runner.sample(random_actions=True)
        assert 5 * 64 <= sum(len(e) for e in episodes) < 5 * 64 + 5
    episodes = runner.sample(num_timesteps=20, random_actions=True, force_reset=True)
    assert any(e.t_started == 0 for e in episodes)
    assert set(runner.get_state()) == {"weights_seq_no", "env_to_module_connector", "module_to_env_connector"}
    runner.stop()


def test_sampling_without_a_module_needs_random_actions():
    runner = SingleAgentEnvRunner(bare(num_envs=1))
    with pytest.raises(
        ConfigError,
        match=r"SingleAgentEnvRunner.sample\(\) needs an RLModule to act, but this runner has none",
    ):
        runner.sample(num_timesteps=10)
    runner.stop()


def test_a_bare_runner_saves_and_restores_without_a_module(tmp_path):
    runner = SingleAgentEnvRunner(bare(num_envs=1))
    path = runner.save_to_path(tmp_path / "runner")
    restored = SingleAgentEnvRunner.from_checkpoint(path)
    assert restored.module is None and len(restored.sample(num_episodes=1, random_actions=True)) == 1


def test_multi_agent_runner_from_a_bare_config():
    config = (
        AlgorithmConfig()
        .environment(make_multi_agent("CartPole-v1"), env_config={"num_agents": 2})
        .env_runners(num_envs_per_env_runner=2)
    )
    runner = MultiAgentEnvRunner(config)
    assert runner.module is None and runner.num_workers == 0
    episodes = runner.sample(num_episodes=4, random_actions=True)
    assert len(episodes) == 4 and all(set(e.agent_ids) == {0, 1} for e in episodes)
    with pytest.raises(ConfigError, match=r"MultiAgentEnvRunner.sample\(\) needs an RLModule to act"):
        runner.sample(num_timesteps=5)
    runner.stop()


def test_get_spaces_feeds_build_learner():
    config = PPOConfig().environment("CartPole-v1").env_runners(num_envs_per_env_runner=3)
    runner = SingleAgentEnvRunner(config)
    spaces = runner.get_spaces()
    single = (runner.env.single_observation_space, runner.env.single_action_space)
    assert spaces["__env_single__"] == spaces["default_policy"] == single
    assert spaces["__env__"] == (runner.env.observation_space, runner.env.action_space)
    learner = config.build_learner(spaces=spaces)
    assert learner.module["default_policy"].observation_space == single[0]
    runner.stop()


def test_multi_agent_get_spaces_names_every_module():
    config = (
        PPOConfig()
        .environment(make_multi_agent("CartPole-v1"), env_config={"num_agents": 2})
        .multi_agent(policies={"p0", "p1"}, policy_mapping_fn=lambda agent_id, episode, **kw: f"p{agent_id}")
    )
    runner = MultiAgentEnvRunner(config)
    spaces = runner.get_spaces()
    assert set(spaces) == {"__env__", "__env_single__", "p0", "p1"}
    assert spaces["p1"] == (runner.env.observation_spaces[1], runner.env.action_spaces[1])
    assert set(config.build_learner(spaces=spaces).module.keys()) == {"p0", "p1"}
    runner.stop()
