"""MultiAgentEnvRunner: bad mappings, missing spaces and unknown agents fail early, naming agent and module."""

import itertools

import gymnasium as gym
import pytest

from flywheel import Columns, MultiAgentEnvRunner, PPOConfig, RLModuleSpec
from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule
from flywheel.errors import ConfigError, EnvError, EpisodeError, ModuleError
from flywheel.testing.multi_agent_envs import BrokenMultiAgentEnv, TurnBasedEnv


def config(env=TurnBasedEnv, *, policies=("p0", "p1"), mapping=None, problem=None, check=True):
    return (
        PPOConfig()
        .environment(env, env_config={"problem": problem} if problem else {}, disable_env_checking=not check)
        .multi_agent(
            policies=set(policies), policy_mapping_fn=mapping or (lambda agent_id, episode, **kw: agent_id)
        )
        .debugging(seed=0)
    )


def run(config):
    runner = MultiAgentEnvRunner(config=config)
    try:
        runner.sample(num_episodes=1)
    finally:
        runner.stop()


def test_mapping_to_an_unknown_module_names_agent_and_module():
    with pytest.raises(
        ConfigError,
        match=r"mapped agent 'p0' to module 'xp0', which is not one of the policies \['p0', 'p1'\]",
    ):
        run(config(mapping=lambda agent_id, episode, **kw: "x" + agent_id))


def test_mapping_to_an_unknown_module_while_sampling_is_caught_before_the_forward_pass():
    calls = itertools.count()

    def mapping(agent_id, episode, **kw):  # valid while the runner builds its modules, then not
        return agent_id if next(calls) < 2 else "late"

    with pytest.raises(
        ConfigError, match=r"mapped agent 'p0' to module 'late', which is not one of the policies"
    ):
        run(config(mapping=mapping))


class UnequalSpacesEnv(TurnBasedEnv):
    def __init__(self, config=None):
        super().__init__(config)
        self.action_spaces = {"p0": gym.spaces.Discrete(2), "p1": gym.spaces.Discrete(3)}


def test_module_without_agents_or_spaces():
    """A module no agent maps to takes the spaces all agents share; with unequal spaces it has none."""
    with pytest.raises(
        ConfigError, match=r"Module 'p2' has no observation/action space: no agent .* maps to it"
    ):
        run(config(UnequalSpacesEnv, policies=("p0", "p1", "p2")))
    runner = MultiAgentEnvRunner(config=config(policies=("p0", "p1", "p2")))
    assert runner.module["p2"].action_space == gym.spaces.Discrete(2)
    runner.stop()


@pytest.mark.parametrize("check", [True, False])
def test_missing_space_for_an_agent(check):
    with pytest.raises(
        EnvError, match=r"observation_spaces has no space for agent 'p1' \(it has spaces for \['p0'\]\)"
    ):
        run(config(BrokenMultiAgentEnv, problem="missing_space", check=check))


def test_agent_not_in_possible_agents_is_caught_by_the_env_check():
    with pytest.raises(EnvError, match=r"observation for agent 'ghost', which is not one of possible_agents"):
        run(config(BrokenMultiAgentEnv, problem="unknown_agent"))


def test_agent_not_in_possible_agents_without_the_env_check():
    with pytest.raises(EpisodeError, match=r"Agent 'ghost' observed in episode .* has no space for it"):
        run(config(BrokenMultiAgentEnv, problem="unknown_agent", check=False))


class LogitsOnly(DefaultPPOTorchRLModule):
    """PPO's default module, returning its logits under a key of its own."""

    def _forward(self, batch, **kwargs):
        return {"logits": super()._forward(batch, **kwargs)[Columns.ACTION_DIST_INPUTS]}


def test_module_without_action_dist_inputs_fails_with_its_keys_and_the_fix():
    bad = config().rl_module(rl_module_spec=RLModuleSpec(module_class=LogitsOnly))
    with pytest.raises(
        ModuleError,
        match=r"LogitsOnly\.forward_exploration\(\) returned the keys \['logits'\], but the runner's GetActions "
        r"piece needs Columns\.ACTION_DIST_INPUTS \('action_dist_inputs'\)",
    ):
        run(bad)
