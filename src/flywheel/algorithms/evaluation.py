"""One evaluation round of an `Algorithm`, as RLlib 2.60 runs it.

A round has three parts::

    group = start(algo)      # the learners' weights (with their weights_seq_no) and the training
                             # runners' connector states go to the evaluation runners; on_evaluate_start
    result = run(algo, group)                  # evaluation_duration episodes or timesteps
    evaluation = finish(algo, result)          # on_evaluate_end; the `evaluation` result part

The evaluation runners log the `weights_seq_no` of the weights they act with, so
`result["evaluation"]["env_runners"]["weights_seq_no"]` says which weights were evaluated.
"""

from __future__ import annotations

from typing import Any

from flywheel.env_runners.group import EnvRunnerGroup
from flywheel.metrics import MetricsLogger
from flywheel.metrics.keys import ENV_RUNNER_RESULTS


def evaluation_group(algo: Any) -> EnvRunnerGroup:
    """The algorithm's evaluation runners, built on first use when `evaluation_interval` is None."""
    if algo.eval_env_runner_group is None:
        algo.eval_env_runner_group = build_evaluation_group(algo.config)
    return algo.eval_env_runner_group


def build_evaluation_group(config: Any) -> EnvRunnerGroup:
    """The evaluation runners of `config`: `config.get_evaluation_config_object()`'s runners."""
    from flywheel.algorithms.algorithm import runner_class

    eval_config = config.get_evaluation_config_object()
    return EnvRunnerGroup(config=eval_config, runner_class=runner_class(eval_config))


def start(algo: Any) -> EnvRunnerGroup:
    """Sends the learners' inference weights, tagged with their `weights_seq_no`, and the training
    runners' merged connector states to the evaluation runners; calls `on_evaluate_start`."""
    group = evaluation_group(algo)
    weights = algo.learner_group.get_weights(inference_only=True)
    group.sync_weights(weights, algo.learner_group.weights_seq_no)
    group.sync_connector_states(from_group=algo.env_runner_group)
    algo._callbacks.on_evaluate_start(algorithm=algo, metrics_logger=algo.metrics)
    return group


def run(algo: Any, group: EnvRunnerGroup) -> dict[str, Any]:
    """Samples `evaluation_duration` episodes or timesteps; returns the round's reduced metrics."""
    config = algo.config
    force_reset = config.evaluation_force_reset_envs_before_iteration
    if config.evaluation_duration_unit == "episodes":
        group.sample(num_episodes=config.evaluation_duration, force_reset=force_reset)
    else:
        group.sample(num_timesteps=config.evaluation_duration, force_reset=force_reset)
    logger = MetricsLogger()
    logger.aggregate(group.get_metrics_states(), key=ENV_RUNNER_RESULTS)
    return logger.reduce()


def finish(algo: Any, evaluation: dict[str, Any]) -> dict[str, Any]:
    """Calls `on_evaluate_end` with the round's metrics and returns them."""
    algo._callbacks.on_evaluate_end(
        algorithm=algo, metrics_logger=algo.metrics, evaluation_metrics=evaluation
    )
    return evaluation


def forget_weights(algo: Any) -> None:
    """After a restore, the learners' `weights_seq_no` may be older than the evaluation runners':
    reset theirs (weights tagged 0 are always taken) so the next round's weights are taken."""
    if algo.eval_env_runner_group is not None:
        algo.eval_env_runner_group.sync_weights(algo.learner_group.get_weights(inference_only=True), 0)
