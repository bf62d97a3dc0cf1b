"""Shared helpers for runner tests: configs on the deterministic counting envs and a runner factory."""

import pytest

from flywheel import PPOConfig, SingleAgentEnvRunner
from flywheel.testing import CountingEnv


class VaryingLengthEnv(CountingEnv):
    """`CountingEnv` whose sub-env `i` (its `vector_index`) ends every episode after `2 + i` steps."""

    def __init__(self, config=None):
        super().__init__(config)
        self.episode_len = 2 + getattr(self.config, "vector_index", 0)


def counting_config(*, env=CountingEnv, num_envs=1, episode_len=5, truncate=False, seed=0, **env_runners):
    """A PPO config on a counting env (`env_runners` keywords pass through)."""
    return (
        PPOConfig()
        .environment(env, env_config={"episode_len": episode_len, "truncate": truncate})
        .env_runners(num_envs_per_env_runner=num_envs, **env_runners)
        .debugging(seed=seed)
    )


def obs_of(episode):
    """The chunk's observations as a flat list of floats."""
    return episode.get_observations().ravel().tolist()


def rewards_of(episode):
    return episode.get_rewards().tolist()


@pytest.fixture
def make_runner():
    """Builds runners from configs and stops them after the test."""
    runners = []

    def make(config):
        runner = SingleAgentEnvRunner(config=config)
        runners.append(runner)
        return runner

    yield make
    for runner in runners:
        runner.stop()
