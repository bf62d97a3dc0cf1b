"""Algorithm.reset_config: hyperparameters read while training change in place (what Ray Tune's PBT
uses); any other change is refused and leaves the algorithm as it was."""

import cloudpickle
import pytest

from flywheel import PPOConfig

LEARNER = "learners/default_policy"


def flat(result, key):
    for part in key.split("/"):
        result = result[part]
    return result


@pytest.fixture
def config():
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .training(lr=1e-3, train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .debugging(seed=0)
    )


def test_lr_and_ppo_settings_change_in_place_and_the_next_update_uses_them(config):
    algo = config.build_algo()
    runner = algo.env_runner
    first = algo.train()
    assert flat(first, f"{LEARNER}/default_optimizer_learning_rate") == 1e-3

    new = config.copy().training(
        lr=2e-4, entropy_coeff=0.05, num_epochs=3, train_batch_size_per_learner=300, gamma=0.9, lambda_=0.5
    )
    assert algo.reset_config(new) is True
    assert (algo.config.lr, algo.config.num_epochs, algo.config.is_frozen) == (2e-4, 3, True)
    (gae,) = algo.learner_group.foreach_learner(
        lambda learner: learner.learner_connector["GeneralAdvantageEstimation"]
    )
    assert (gae.gamma, gae.lambda_) == (0.9, 0.5)  # the learner pipeline was rebuilt from the new config
    second = algo.train()
    algo.stop()

    assert algo.env_runner is runner  # the runners (and their envs) were kept
    assert second["training_iteration"] == 2
    assert flat(second, f"{LEARNER}/default_optimizer_learning_rate") == 2e-4
    assert flat(second, f"{LEARNER}/curr_entropy_coeff") == 0.05
    assert second["num_env_steps_sampled_lifetime"] == 200 + 300
    assert (
        flat(second, "learners/__all_modules__/num_env_steps_trained") == 300 * 3
    )  # 3 epochs over 300 steps


def test_a_setting_read_only_at_build_is_refused_and_nothing_changes(config):
    algo = config.build_algo()
    before = algo.config
    assert (
        algo.reset_config(config.copy().training(lr=5e-4).rl_module(model_config={"fcnet_hiddens": [8]}))
        is False
    )
    assert algo.reset_config(config.copy().environment("Pendulum-v1")) is False
    assert algo.config is before
    result = algo.train()
    algo.stop()
    assert flat(result, f"{LEARNER}/default_optimizer_learning_rate") == 1e-3


def test_functions_unpickled_in_another_process_count_as_unchanged(config):
    config.callbacks(on_train_result=lambda result, **kwargs: result.update(seen=True))
    algo = config.build_algo()
    copy = cloudpickle.loads(cloudpickle.dumps(config.copy().training(lr=5e-4)))  # how Tune ships configs
    assert copy.on_train_result is not config.on_train_result
    assert algo.reset_config(copy) is True
    result = algo.train()
    algo.stop()
    assert result["seen"] and flat(result, f"{LEARNER}/default_optimizer_learning_rate") == 5e-4


def test_an_invalid_new_config_raises_the_usual_config_error(config):
    algo = config.build_algo()
    with pytest.raises(
        ValueError, match=r"minibatch_size=300 is larger than train_batch_size_per_learner=200"
    ):
        algo.reset_config(config.copy().training(minibatch_size=300))
    algo.stop()
