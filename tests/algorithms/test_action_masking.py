"""No forbidden action is ever taken, in training or evaluation, by PPO's, DQN's and SAC's default modules.

`ActionMaskEnv` raises on a forbidden action, so any slip fails the run; the sampled episodes are
also checked step by step against the masks they observed.
"""

import numpy as np
import pytest

from flywheel import DQNConfig, PPOConfig, SACConfig
from flywheel.env import check_env
from flywheel.errors import EnvError
from flywheel.testing import ActionMaskEnv

# Off-policy iterations sample 200 env steps (not the default 1000, each with an update), to stay quick.
OFF_POLICY = {"num_steps_sampled_before_learning_starts": 100, "train_batch_size_per_learner": 32}
CONFIGS = {
    "PPO": lambda: PPOConfig().training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=2),
    "DQN": lambda: DQNConfig().training(**OFF_POLICY).reporting(min_sample_timesteps_per_iteration=200),
    "SAC": lambda: SACConfig().training(**OFF_POLICY).reporting(min_sample_timesteps_per_iteration=200),
}


def forbidden_steps(episodes):
    """(episode index, step) of every action its observation's mask forbade."""
    bad = []
    for i, episode in enumerate(episodes):
        masks = episode.get_observations(slice(0, len(episode)))["action_mask"]
        actions = np.asarray(episode.get_actions())
        bad += [(i, t) for t in np.flatnonzero(masks[np.arange(len(episode)), actions] == 0)]
    return bad


@pytest.mark.parametrize("algo_name", sorted(CONFIGS))
def test_masked_actions_are_never_taken_in_training_or_evaluation(algo_name):
    config = (
        CONFIGS[algo_name]()
        .environment(ActionMaskEnv, env_config={"num_actions": 6})
        .env_runners(num_envs_per_env_runner=2)
        .evaluation(evaluation_interval=1, evaluation_duration=4)
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        for _ in range(3):
            result = algo.train()
        assert np.isfinite(result["learners"]["default_policy"]["total_loss"])
        assert result["evaluation"]["env_runners"]["num_episodes"] == 4
        runner = algo.env_runner
        for explore in (True, False):
            episodes = runner.sample(num_timesteps=300, explore=explore)
            assert sum(map(len, episodes)) >= 300 and forbidden_steps(episodes) == []
    finally:
        algo.stop()


def test_the_env_catches_a_policy_that_ignores_the_mask():
    algo = PPOConfig().environment(ActionMaskEnv).debugging(seed=0).build_algo()
    try:
        with pytest.raises(EnvError, match=r"ActionMaskEnv: action \d is forbidden by the mask"):
            algo.env_runner.sample(num_timesteps=100, random_actions=True)
    finally:
        algo.stop()


def test_check_env_steps_with_actions_the_mask_allows():
    check_env(ActionMaskEnv({"num_actions": 8}), num_steps=50)
