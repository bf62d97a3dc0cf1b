"""LearnerGroup with a local learner (num_learners=0); updates are all-or-nothing."""

import gymnasium as gym
import numpy as np
import pytest

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
    assert isinstance(results, list) and len(results) == 1  # RLlib's shape: one result per learner
    (results,) = results
    throughput = results["__all_modules__"].pop("num_env_steps_trained_lifetime_throughput")
    assert throughput > 0
    assert results["__all_modules__"] == {
        "num_env_steps_trained": 16,
        "num_env_steps_trained_lifetime": 16,  # what this update adds (the algorithm keeps the total)
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


class FailingLearner(PPOTorchLearner):
    """Raises in the loss of its `fail_at`-th minibatch (counted over all updates), when set."""

    fail_at = None
    calls = 0

    def compute_loss_for_module(self, **kwargs):
        self.calls += 1
        if self.calls == self.fail_at:
            raise ValueError(f"loss failed in minibatch call {self.calls}")
        return super().compute_loss_for_module(**kwargs)


def failing_group():
    return LearnerGroup(config=config().learners(learner_class=FailingLearner), spaces=(OBS_SPACE, ACT_SPACE))


def full_state(group):
    return group.get_state()["learner"]


def assert_same_state(actual, expected):
    assert actual["weights_seq_no"] == expected["weights_seq_no"]
    assert actual["timestep"] == expected["timestep"]
    for name, value in expected["rl_module"]["default_policy"].items():
        np.testing.assert_array_equal(actual["rl_module"]["default_policy"][name], value, err_msg=name)
    for key, optimizer in expected["optimizer"].items():
        for index, slot in optimizer["state"]["state"].items():
            for name, value in slot.items():
                np.testing.assert_array_equal(actual["optimizer"][key]["state"]["state"][index][name], value)


def test_an_update_that_raises_midway_leaves_the_learner_as_before():
    group = failing_group()
    group.update(episodes=episodes(), timesteps={"num_env_steps_sampled_lifetime": 8})
    before = full_state(group)
    # 2 minibatches x 2 epochs per update: call 7 is the third minibatch of the second update, after
    # two optimizer steps of that update.
    group.foreach_learner(lambda learner: setattr(learner, "fail_at", 7))
    with pytest.raises(ValueError, match=r"^loss failed in minibatch call 7$"):
        group.update(episodes=episodes(), timesteps={"num_env_steps_sampled_lifetime": 16})
    assert_same_state(full_state(group), before)
    assert group.weights_seq_no == 1
    # The learner's metrics hold nothing from the failed update: the next one reports only its own.
    (results,) = group.update(episodes=episodes(), timesteps={"num_env_steps_sampled_lifetime": 16})
    assert results["__all_modules__"]["weights_seq_no"] == 2
    assert results["default_policy"]["num_module_steps_trained"] == 16


def test_an_atomic_block_that_raises_rolls_back_every_update_in_it():
    group = failing_group()
    before = full_state(group)
    with pytest.raises(KeyboardInterrupt), group.atomic():
        group.update(episodes=episodes())
        group.update(episodes=episodes())
        assert group.weights_seq_no == 2
        raise KeyboardInterrupt
    assert_same_state(full_state(group), before)
    assert group.weights_seq_no == 0
    with group.atomic():
        group.update(episodes=episodes())
    assert group.weights_seq_no == 1
