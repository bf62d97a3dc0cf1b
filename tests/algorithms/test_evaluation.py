"""Evaluation rounds as RLlib 2.60 runs them: which weights were evaluated (`weights_seq_no`), forced
env resets, custom evaluation functions; parallel evaluation is in test_evaluation_parallel.py."""

import re

import pytest

from flywheel import PPOConfig
from flywheel.errors import ConfigError
from flywheel.metrics.keys import ENV_RUNNER_RESULTS, EVALUATION_RESULTS
from flywheel.testing import CountingEnv


def config(**evaluation):
    return (
        PPOConfig()
        .environment(CountingEnv, env_config={"episode_len": 5})
        .training(train_batch_size_per_learner=20, minibatch_size=10, num_epochs=1)
        .evaluation(**{"evaluation_interval": 1, "evaluation_duration": 2, **evaluation})
        .debugging(seed=0)
    )


def test_results_name_the_evaluated_weights_also_after_a_restore(tmp_path):
    algo = config().build_algo()
    try:
        first = algo.train()
        path = algo.save_to_path(tmp_path / "ckpt")
        second = algo.train()
        # One learner update per iteration; evaluation runs after it, on the updated weights.
        assert first["learners"]["__all_modules__"]["weights_seq_no"] == 1
        assert first["evaluation"]["env_runners"]["weights_seq_no"] == 1
        assert first["evaluation"]["env_runners"]["num_episodes"] == 2
        assert second["evaluation"]["env_runners"]["weights_seq_no"] == 2
        assert algo.evaluate()["env_runners"]["weights_seq_no"] == 2
        algo.restore_from_path(path)  # back to the weights numbered 1: evaluation takes them
        assert algo.evaluate()["env_runners"]["weights_seq_no"] == 1
        restored = algo.learner_group.get_weights(inference_only=True)["default_policy"]
        evaluated = algo.eval_env_runner_group.local_env_runner.module.get_state(inference_only=True)
        assert all((restored[name] == evaluated[name]).all() for name in restored)
    finally:
        algo.stop()


def test_force_reset_envs_before_iteration_decides_whether_rounds_continue_episodes():
    """Rounds of 3 env steps in 5-step episodes: reset at each round, no episode ever ends; continued,
    the second round ends the first episode (steps 4 and 5) and starts the next one."""
    counts = {}
    for force_reset in (True, False):
        algo = config(
            evaluation_duration=3,
            evaluation_duration_unit="timesteps",
            evaluation_force_reset_envs_before_iteration=force_reset,
        ).build_algo()
        try:
            rounds = [algo.evaluate()["env_runners"] for _ in range(3)]
        finally:
            algo.stop()
        counts[force_reset] = [(r["num_env_steps_sampled"], r.get("num_episodes", 0)) for r in rounds]
        if not force_reset:
            assert rounds[1]["episode_len_mean"] == 5
            assert rounds[1]["episode_return_mean"] == 15  # 1 + 2 + 3 + 4 + 5: one episode over two rounds
    assert counts == {True: [(3, 0), (3, 0), (3, 0)], False: [(3, 0), (3, 1), (3, 0)]}


def custom_eval(algorithm, eval_workers):
    """Written as RLlib 2.60's custom evaluation example: sample, log under "evaluation", return steps."""
    samples = eval_workers.foreach_env_runner(
        lambda runner: (runner.sample(num_episodes=3), runner.get_metrics()), local_env_runner=True
    )
    algorithm.metrics.aggregate([m for _, m in samples], key=(EVALUATION_RESULTS, ENV_RUNNER_RESULTS))
    algorithm.metrics.log_value((EVALUATION_RESULTS, "rounds_logged"), 1, reduce="sum")
    episodes = [episode for chunk, _ in samples for episode in chunk]
    results = algorithm.metrics.peek((EVALUATION_RESULTS, ENV_RUNNER_RESULTS))
    return results, sum(e.env_steps() for e in episodes), sum(e.agent_steps() for e in episodes)


def test_custom_evaluation_function_result_is_what_it_logged_under_evaluation():
    algo = config(custom_evaluation_function=custom_eval).build_algo()
    try:
        results = [algo.train() for _ in range(2)]
    finally:
        algo.stop()
    for iteration, result in enumerate(results, start=1):
        evaluation = result["evaluation"]
        assert evaluation["rounds_logged"] == 1  # taken out of algo.metrics after each round
        assert evaluation["env_runners"]["num_episodes"] == 3
        assert evaluation["env_runners"]["episode_return_mean"] == 15
        assert evaluation["env_runners"]["weights_seq_no"] == iteration
        assert "rounds_logged" not in result


def test_custom_evaluation_function_that_logs_nothing_gives_its_results_and_a_wrong_return_is_refused():
    algo = config(custom_evaluation_function=lambda algorithm, workers: ({"score": 2.5}, 10, 10)).build_algo()
    try:
        assert algo.evaluate() == {"score": 2.5}
    finally:
        algo.stop()

    def old_style(algorithm, workers):
        return {"score": 2.5}

    algo = config(custom_evaluation_function=old_style).build_algo()
    try:
        with pytest.raises(ConfigError) as error:
            algo.evaluate()
    finally:
        algo.stop()
    assert str(error.value) == (
        "custom_evaluation_function 'old_style' returned a dict; expected (results: dict, env_steps: int, "
        "agent_steps: int), as in RLlib's new API stack. Fix: return the metrics dict and the env and agent "
        "steps the round sampled, e.g. `return results, sum(e.env_steps() for e in episodes), "
        "sum(e.agent_steps() for e in episodes)`."
    )
    with pytest.raises(ConfigError, match=re.escape("custom_evaluation_function=3 is not callable.")):
        config(custom_evaluation_function=3).validate()


def test_parallel_evaluation_needs_remote_evaluation_runners():
    with pytest.raises(ConfigError) as error:
        config(evaluation_parallel_to_training=True).validate()
    assert (
        "evaluation_parallel_to_training=True needs remote evaluation runners (evaluation_num_env_runners is 0): "
        "the evaluation samples while this process trains. Fix: config.evaluation(evaluation_num_env_runners=1), "
        "or evaluation_parallel_to_training=False."
    ) in str(error.value)


def test_auto_duration_needs_parallel_evaluation_and_other_durations_are_ints():
    with pytest.raises(ConfigError) as error:
        config(evaluation_duration="auto").validate()
    assert (
        "evaluation_duration='auto' means: evaluate for as long as the parallel training step takes, but "
        "evaluation_parallel_to_training is False. Fix: config.evaluation(evaluation_parallel_to_training=True, "
        "evaluation_num_env_runners=1), or an int evaluation_duration."
    ) in str(error.value)
    with pytest.raises(ConfigError, match=re.escape("evaluation_duration='ten' must be an int >= 1.")):
        config(evaluation_duration="ten").validate()
    parallel = {"evaluation_parallel_to_training": True, "evaluation_num_env_runners": 1}
    config(evaluation_duration="auto", **parallel).validate()
