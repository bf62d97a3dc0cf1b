"""docs/concepts/algorithms.md: REINFORCE written only from the page reports the counters PPO reports,
in flywheel's words and in RLlib's, checkpoints and restores, learns CartPole, and runs with remote
runners and two learners."""

import sys

import numpy as np
import pytest

from flywheel import Algorithm, PPOConfig


@pytest.fixture(scope="module")
def page():
    """The page's namespace (its example trained 3 iterations and saved a checkpoint at `path`)."""
    from conftest import _run_doc_blocks

    return _run_doc_blocks("docs/concepts/algorithms.md", blocks=2, module="algorithms_page")


def counter_keys(result: dict) -> set[str]:
    """The keys every algorithm reports: top-level numbers, env runner metrics, the learners'
    `__all_modules__` counters and the timers (losses differ by algorithm)."""
    keys = {key for key, value in result.items() if not isinstance(value, dict)}
    keys |= {f"env_runners/{key}" for key in result["env_runners"]}
    keys |= {f"learners/__all_modules__/{key}" for key in result["learners"]["__all_modules__"]}
    return keys | {f"timers/{key}" for key in result["timers"]}


def counts(result: dict) -> dict:
    """The learners' `__all_modules__` counters, without throughputs (rates over wall-clock time)."""
    return {k: v for k, v in result["learners"]["__all_modules__"].items() if not k.endswith("_throughput")}


def small(config):
    return config.environment("CartPole-v1").reporting(min_time_s_per_iteration=0).debugging(seed=3)


def two_iterations(config):
    algo = config.build_algo()
    try:
        return [algo.train() for _ in range(2)], algo.learner_group.get_weights()
    finally:
        algo.stop()


def test_vpg_reports_the_counters_ppo_reports(page):
    vpg = small(
        page["VPGConfig"]().training(num_episodes_per_train_batch=4, num_epochs=1, minibatch_size=None)
    )
    (_, result), _ = two_iterations(vpg)
    (_, ppo_result), _ = two_iterations(small(PPOConfig().training(train_batch_size=200, minibatch_size=100)))
    assert counter_keys(result) == counter_keys(ppo_result)
    assert result["training_iteration"] == 2 and result["env_runners"]["num_episodes_lifetime"] == 8
    sampled = result["num_env_steps_sampled_lifetime"]
    assert sampled == result["env_runners"]["num_env_steps_sampled_lifetime"] > 0
    assert result["num_env_steps_trained_lifetime"] == sampled  # one epoch: each step trained once
    assert result["learners"]["__all_modules__"]["weights_seq_no"] == 2
    assert (
        result["learners"]["default_policy"]["num_module_steps_trained"]
        == result["env_runners"]["num_env_steps_sampled"]
    )


def test_rllibs_spelling_of_the_training_step_gives_the_same_run(page):
    settings = {"num_episodes_per_train_batch": 4, "num_epochs": 1, "minibatch_size": None}
    ours, our_weights = two_iterations(small(page["VPGConfig"]().training(**settings)))
    theirs, their_weights = two_iterations(
        small(page["VPGConfig"](algo_class=page["VPGInRLlibsWords"]).training(**settings))
    )
    for mine, other in zip(ours, theirs, strict=True):
        assert counter_keys(mine) == counter_keys(other)
        for key in ("num_env_steps_sampled_lifetime", "num_env_steps_trained_lifetime"):
            assert mine[key] == other[key]
        assert mine["env_runners"]["episode_return_mean"] == other["env_runners"]["episode_return_mean"]
        assert counts(mine) == counts(other)
        assert (
            mine["learners"]["default_policy"]["policy_loss"]
            == other["learners"]["default_policy"]["policy_loss"]
        )
    for name, value in our_weights["default_policy"].items():
        np.testing.assert_array_equal(value, their_weights["default_policy"][name], err_msg=name)


def test_the_page_checkpoint_restores_and_trains_on(page):
    classes = [page[name] for name in ("VPG", "VPGConfig", "VPGLearner", "PolicyNet", "ReturnsToGo")]
    algo = Algorithm.from_checkpoint(page["path"], classes=classes)
    try:
        assert type(algo).__name__ == "VPG" and algo.iteration == 3
        sampled = algo.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime"))
        assert sampled == page["result"]["num_env_steps_sampled_lifetime"]
        result = algo.train()
    finally:
        algo.stop()
    assert result["training_iteration"] == 4 and result["num_env_steps_sampled_lifetime"] > sampled
    assert result["learners"]["__all_modules__"]["weights_seq_no"] == 4


@pytest.mark.learning
def test_vpg_learns_cartpole(page):
    config = page["config"].copy().training(num_episodes_per_train_batch=10)
    algo = config.build_algo()
    try:
        returns = [algo.train()["env_runners"]["episode_return_mean"] for _ in range(40)]
    finally:
        algo.stop()
    assert max(returns) >= 150, returns


@pytest.mark.ray
def test_vpg_with_remote_runners_and_two_learners(page, ray_session):
    # Ray ships a script's own classes by value; the page's module stands for that script here.
    ray_session.cloudpickle.register_pickle_by_value(sys.modules["algorithms_page"])
    config = (
        small(page["VPGConfig"]())
        .training(num_episodes_per_train_batch=4, num_epochs=1, minibatch_size=None)
        .env_runners(num_env_runners=2, num_cpus_per_env_runner=0.5, sample_timeout_s=600)
        .learners(num_learners=2, num_cpus_per_learner=0.5)
    )
    algo = config.build_algo()
    try:
        results = [algo.train() for _ in range(2)]
        weights = algo.learner_group.foreach_learner(lambda learner: learner.get_weights()["default_policy"])
    finally:
        algo.stop()
    for name, value in weights[0].items():
        np.testing.assert_array_equal(value, weights[1][name], err_msg=name)
    last = results[-1]
    assert last["env_runners"]["num_episodes_lifetime"] == 8
    assert last["num_env_steps_trained_lifetime"] == last["num_env_steps_sampled_lifetime"]
    assert last["learners"]["__all_modules__"]["weights_seq_no"] == 2
    assert last["fault_tolerance"]["num_healthy_env_runners"] == 2
