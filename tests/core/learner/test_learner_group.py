"""LearnerGroup with a local learner (num_learners=0)."""

import gymnasium as gym
import numpy as np

from flywheel.algorithms.ppo.config import PPOConfig
from flywheel.algorithms.ppo.learner import PPOTorchLearner
from flywheel.columns import Columns
from flywheel.core.learner.learner_group import LearnerGroup
from flywheel.episodes import SingleAgentEpisode

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)


def config():
    return (
        PPOConfig()
        .training(num_epochs=2, minibatch_size=4, train_batch_size_per_learner=8)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def episodes():
    rng = np.random.default_rng(0)
    return [
        SingleAgentEpisode(
            observations=list(rng.uniform(-1, 1, (n + 1, 3)).astype(np.float32)),
            actions=[1] * n,
            rewards=[1.0] * n,
            extra_model_outputs={
                Columns.ACTION_LOGP: [np.log(0.5)] * n,
                Columns.ACTION_DIST_INPUTS: [np.zeros(2, np.float32)] * n,
            },
            terminated=True,
            len_lookback_buffer=0,
        ).to_numpy()
        for n in (3, 5)
    ]


def test_local_group_builds_the_config_learner_and_updates():
    group = LearnerGroup(config=config(), spaces=(OBS_SPACE, ACT_SPACE))
    assert group.is_local
    learners = group.foreach_learner(lambda learner: learner)
    assert len(learners) == 1 and type(learners[0]) is PPOTorchLearner
    assert learners[0].module["default_policy"].observation_space == OBS_SPACE
    results = group.update(episodes=episodes(), timesteps={"num_env_steps_sampled_lifetime": 8})
    assert results["__all_modules__"] == {
        "num_env_steps_trained": 16,
        "num_non_finite_updates": 0,
        "weights_seq_no": 1,
    }
    assert results["default_policy"]["num_module_steps_trained"] == 16
    assert group.weights_seq_no == 1


def test_weights_and_state():
    group = LearnerGroup(config=config(), spaces=(OBS_SPACE, ACT_SPACE))
    group.update(episodes=episodes())
    weights = group.get_weights(inference_only=True)
    assert set(weights) == {"default_policy"}
    assert not any(name.startswith("vf") for name in weights["default_policy"])  # what runners get
    assert any(name.startswith("vf") for name in group.get_weights()["default_policy"])  # all of it

    other = LearnerGroup(config=config(), spaces=(OBS_SPACE, ACT_SPACE))
    other.set_state(group.get_state())
    assert other.weights_seq_no == 1
    for name, value in group.get_weights(inference_only=False)["default_policy"].items():
        assert np.array_equal(other.get_weights(inference_only=False)["default_policy"][name], value)
