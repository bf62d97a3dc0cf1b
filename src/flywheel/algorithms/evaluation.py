"""One evaluation round of an `Algorithm`, as RLlib 2.60 runs it.

A round has three parts::

    group = start(algo)      # the learners' weights (with their weights_seq_no) and the training
                             # runners' connector states go to the evaluation runners; on_evaluate_start
    result = run(algo, group)                  # evaluation_duration episodes or timesteps
    evaluation = finish(algo, result)          # on_evaluate_end; the `evaluation` result part

The evaluation runners log the `weights_seq_no` of the weights they act with, so
`result["evaluation"]["env_runners"]["weights_seq_no"]` says which weights were evaluated.

With `evaluation_parallel_to_training`, `alongside` runs the iteration's training in a second thread
while this one drives the (remote) evaluation runners: the round evaluates the weights from before
the iteration's updates, and both callbacks run while training does not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from flywheel.algorithms.config_builders import runner_class
from flywheel.env_runners.group import EnvRunnerGroup
from flywheel.errors import ConfigError
from flywheel.metrics import MetricsLogger
from flywheel.metrics.keys import ENV_RUNNER_RESULTS, EVALUATION_RESULTS, TIMERS, TRAINING_ITERATION_TIMER

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig


def evaluation_group(algo: Any) -> EnvRunnerGroup:
    """The algorithm's evaluation runners, built on first use when `evaluation_interval` is None."""
    if algo.eval_env_runner_group is None:
        algo.eval_env_runner_group = build_evaluation_group(algo.config)
    return algo.eval_env_runner_group


def build_evaluation_group(config: AlgorithmConfig) -> EnvRunnerGroup:
    """The evaluation runners of `config`: `config.get_evaluation_config_object()`'s runners."""
    eval_config = config.get_evaluation_config_object()
    return EnvRunnerGroup(config=eval_config, runner_class=runner_class(eval_config))


def start(algo: Any) -> EnvRunnerGroup:
    """Sends the learners' inference weights, tagged with their `weights_seq_no`, and the training
    runners' merged connector states to the evaluation runners; calls `on_evaluate_start`."""
    group = evaluation_group(algo)
    weights = algo.learner_group.get_weights(inference_only=True)
    group.sync_weights(weights, algo.learner_group.weights_seq_no)
    group.sync_connector_states(from_group=algo.env_runner_group)
    algo.callbacks.on_evaluate_start(algorithm=algo, metrics_logger=algo.metrics)
    return group


def alongside(algo: Any, training: Callable[[], None]) -> dict[str, Any]:
    """One round while `training()` runs in another thread; returns the round's result once both
    ended (an error of either is raised after both ended)."""
    group = start(algo)
    # How long the last training took ("auto"), read before this one's thread may log it.
    expected_s = algo.metrics.peek((TIMERS, TRAINING_ITERATION_TIMER), default=0.0)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="flywheel-training") as pool:
        future = pool.submit(training)
        evaluation = run(algo, group, training=future, expected_s=expected_s)
        future.result()
    return finish(algo, evaluation)


def run(
    algo: Any, group: EnvRunnerGroup, *, training: Future | None = None, expected_s: float = 0.0
) -> dict[str, Any]:
    """Samples `evaluation_duration` episodes or timesteps (or calls `custom_evaluation_function`);
    returns the round's reduced metrics. `training`: the parallel training, which "auto" lasts
    as long as (`expected_s`: how long the last one took)."""
    config = algo.config
    if config.custom_evaluation_function is not None:
        return _run_custom(algo, group)
    force_reset = config.evaluation_force_reset_envs_before_iteration
    logger = MetricsLogger()
    if config.evaluation_duration == "auto":
        _run_auto(algo, group, logger, training, expected_s)
    elif config.evaluation_duration_unit == "episodes":
        group.sample(num_episodes=config.evaluation_duration, force_reset=force_reset)
    else:
        group.sample(num_timesteps=config.evaluation_duration, force_reset=force_reset)
    logger.aggregate(group.get_metrics_states(), key=ENV_RUNNER_RESULTS)
    return logger.reduce()


def _run_auto(
    algo: Any, group: EnvRunnerGroup, logger: MetricsLogger, training: Future | None, expected_s: float
) -> None:
    """Calls of `n` env steps on every evaluation runner until `training` is done (at least one;
    without training, one). `n` starts at the configured minimum; then it is what a runner samples,
    at this round's measured rate, in the training time still expected (the last iteration's
    training time minus the time gone), kept within the configured minimum and maximum."""
    config = algo.config
    low = config.evaluation_auto_duration_min_env_steps_per_sample
    high = config.evaluation_auto_duration_max_env_steps_per_sample
    force_reset = config.evaluation_force_reset_envs_before_iteration
    started, steps, per_runner = time.perf_counter(), 0, low
    while True:
        runners = group.num_healthy_env_runners or group.num_remote_env_runners()  # those starting, at first
        episodes = group.sample(num_timesteps=per_runner * runners, force_reset=force_reset)
        logger.aggregate(group.get_metrics_states(), key=ENV_RUNNER_RESULTS)
        steps, force_reset = steps + sum(len(episode) for episode in episodes), False
        if training is None or training.done():
            return
        elapsed = time.perf_counter() - started
        rate = steps / elapsed / runners
        per_runner = int(min(high, max(low, (expected_s - elapsed) * rate)))


def _run_custom(algo: Any, group: EnvRunnerGroup) -> dict[str, Any]:
    """RLlib's contract: `fn(algorithm, eval_workers) -> (results, env_steps, agent_steps)`; the
    function logs into `algorithm.metrics` under "evaluation" (e.g. `aggregate([runner.get_metrics()
    ...], key=("evaluation", "env_runners"))`), which becomes the round's result and is taken out
    of the algorithm's metrics. A function that logs nothing there gives its `results` dict."""
    fn = algo.config.custom_evaluation_function
    returned = fn(algo, group)
    if not (
        isinstance(returned, tuple)
        and len(returned) == 3
        and isinstance(returned[0], Mapping)
        and all(type(n) is int for n in returned[1:])
    ):
        raise ConfigError(
            f"custom_evaluation_function {getattr(fn, '__name__', fn)!r} returned {_describe(returned)}; "
            "expected (results: dict, env_steps: int, agent_steps: int), as in RLlib's new API stack. "
            "Fix: return the metrics dict and the env and agent steps the round sampled, e.g. "
            "`return results, sum(e.env_steps() for e in episodes), sum(e.agent_steps() for e in episodes)`."
        )
    logged = algo.metrics.peek(EVALUATION_RESULTS, default={})
    algo.metrics.delete(EVALUATION_RESULTS, key_error=False)
    return logged or dict(returned[0])


def _describe(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} ({', '.join(type(v).__name__ for v in value)})"
    return f"a {type(value).__name__}"


def finish(algo: Any, evaluation: dict[str, Any]) -> dict[str, Any]:
    """Calls `on_evaluate_end` with the round's metrics and returns them."""
    algo.callbacks.on_evaluate_end(algorithm=algo, metrics_logger=algo.metrics, evaluation_metrics=evaluation)
    return evaluation


def forget_weights(algo: Any) -> None:
    """After a restore, the learners' `weights_seq_no` may be older than the evaluation runners':
    reset theirs (weights tagged 0 are always taken) so the next round's weights are taken."""
    if algo.eval_env_runner_group is not None:
        algo.eval_env_runner_group.sync_weights(algo.learner_group.get_weights(inference_only=True), 0)
