"""`run_rllib_example_script_experiment`: runs an example script's config as RLlib 2.60's harness does.

The config gets the command line's settings (`--num-env-runners`, `--num-learners`, `--evaluation-*`,
...) unless `keep_config=True`; then a Ray Tune `Tuner` runs it as one or more trials (Tune's progress
table, its checkpoints every `--checkpoint-freq` iterations and at the end), or with `--no-tune` a plain
`algo.train()` loop does. Both stop at the first of `--stop-reward`, `--stop-iters` and
`--stop-timesteps`; with `--as-test` a run that did not reach the reward fails with a `ValueError`
naming the metric, the best value and the target.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flywheel.errors import ConfigError
from flywheel.examples_harness.args import add_rllib_example_script_args
from flywheel.metrics.keys import (
    ENV_RUNNER_RESULTS,
    EPISODE_RETURN_MEAN,
    EVALUATION_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
)

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

TRAINING_ITERATION = "training_iteration"
RETURN_KEY = f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}"
EVAL_RETURN_KEY = f"{EVALUATION_RESULTS}/{RETURN_KEY}"


def run_rllib_example_script_experiment(
    base_config: AlgorithmConfig,
    args: argparse.Namespace | None = None,
    *,
    stop: dict[str, Any] | None = None,
    success_metric: dict[str, float] | None = None,
    trainable: type | None = None,
    tune_callbacks: list | None = None,
    keep_config: bool = False,
    keep_ray_up: bool = False,
    scheduler: Any = None,
    progress_reporter: Any = None,
) -> Any:
    """Runs `base_config` (an AlgorithmConfig) with the settings of `args` (default: this process's
    command line, parsed by `add_rllib_example_script_args()`).

    `stop` maps result keys ("env_runners/episode_return_mean") to the values that end training
    (default: `--stop-reward`, `--stop-timesteps`, `--stop-iters`); `success_metric` is the one key and
    value `--as-test` requires (default: the stop's evaluation or training return). `trainable` is what
    the Tuner runs (default: `config.algo_class`; an Algorithm class becomes its flywheel Tune trainable).
    Returns the last result dict with `--no-tune`, else the Tuner's `ResultGrid`.
    """
    args = args if args is not None else add_rllib_example_script_args().parse_args()
    _refuse_retired_flags(args)
    if args.as_release_test:
        args.as_test = True
    if args.as_test:
        args.verbose, args.tune_max_report_freq = 1, 30
    stop = stop if stop is not None else default_stop(args)
    config = base_config if keep_config else apply_args(base_config, args)
    _init_ray(args)
    start = time.time()
    success_metric = success_metric or default_success_metric(stop, args)
    if args.no_tune:
        results, best = _train_loop(config, args, stop, tracked=[*stop, *success_metric])
    else:
        results = _tune(config, args, stop, trainable, tune_callbacks, scheduler, progress_reporter)
        best = _best_values(results)
    if not keep_ray_up:
        _shutdown_ray()
    if args.as_test:
        check_success(success_metric, best, args, time.time() - start)
    return results


def default_stop(args: argparse.Namespace) -> dict[str, Any]:
    """RLlib's default stop criteria: the mean return, the lifetime env steps and the iterations."""
    return {
        RETURN_KEY: args.stop_reward,
        f"{ENV_RUNNER_RESULTS}/{NUM_ENV_STEPS_SAMPLED_LIFETIME}": args.stop_timesteps,
        TRAINING_ITERATION: args.stop_iters,
    }


def default_success_metric(stop: Mapping[str, Any], args: argparse.Namespace) -> dict[str, float]:
    """The evaluation return when `stop` has it, else the training return (at `--stop-reward` unless
    `stop` names another value)."""
    for key in (EVAL_RETURN_KEY, RETURN_KEY):
        if key in stop:
            return {key: stop[key]}
    return {RETURN_KEY: args.stop_reward}


def apply_args(config: AlgorithmConfig, args: argparse.Namespace) -> Any:
    """`config` with the command line's settings, as RLlib's harness sets them (in place, returned)."""
    if args.framework != "torch":
        raise ConfigError(
            f"--framework={args.framework}: flywheel runs torch only. Fix: drop the flag (torch is the default)."
        )
    if args.env is not None and config.env is None:
        config.environment(args.env)
    if args.num_env_runners is not None:
        config.env_runners(num_env_runners=args.num_env_runners)
    if args.num_envs_per_env_runner is not None:
        config.env_runners(num_envs_per_env_runner=args.num_envs_per_env_runner)
    if args.num_gpus:
        raise ConfigError(
            f"--num-gpus={args.num_gpus} is RLlib's old API stack flag. Fix: train on GPUs with "
            "--num-gpus-per-learner=1 and --num-learners=<your number of GPUs>."
        )
    if args.num_learners is not None:
        config.learners(num_learners=args.num_learners)
    if args.num_aggregator_actors_per_learner is not None:
        config.learners(num_aggregator_actors_per_learner=args.num_aggregator_actors_per_learner)
    config.learners(num_gpus_per_learner=_gpus_per_learner(args, config.num_learners))
    if args.num_cpus_per_learner is not None:
        config.learners(num_cpus_per_learner=args.num_cpus_per_learner)
    if args.evaluation_interval > 0:
        config.evaluation(
            evaluation_num_env_runners=args.evaluation_num_env_runners,
            evaluation_interval=args.evaluation_interval,
            evaluation_duration=args.evaluation_duration,
            evaluation_duration_unit=args.evaluation_duration_unit,
            evaluation_parallel_to_training=args.evaluation_parallel_to_training,
        )
    if args.log_level is not None:
        config.debugging(log_level=args.log_level)
    if args.output is not None:
        config.offline_data(output=args.output)
    return config


def should_stop(stop: Mapping[str, Any], results: Mapping[str, Any]) -> bool:
    """Whether any `stop` criterion (a "/"-separated result key) is reached in `results` (prints which)."""
    for key, threshold in stop.items():
        value = _lookup(results, key)
        if value is not None and value >= threshold:
            print(f"Stop criterion ({key}={threshold}) fulfilled!")
            return True
    return False


def check_success(
    success_metric: Mapping[str, float], best: Mapping[str, float | None], args: Any, seconds: float
) -> None:
    """Raises a ValueError naming the metric, its best value and the target when the target was missed
    (and writes RLlib's JSON summary to $TEST_OUTPUT_JSON under `--as-release-test`)."""
    key, target = next(iter(success_metric.items()))
    value = best.get(key)
    passed = value is not None and value >= target
    if args.as_release_test and "TEST_OUTPUT_JSON" in os.environ:
        summary = {"time_taken": seconds, "passed": [passed], "success_metric": key}
        summary |= {"best_value": value, "target_value": float(target)}
        with open(os.environ["TEST_OUTPUT_JSON"], "w") as file:
            json.dump(summary, file)
    if passed:
        print(f"`{key}` of {target} reached! ok")
        return
    reached = "never reported" if value is None else f"the best value reached is {value}"
    raise ValueError(f"`{key}` of {target} not reached: {reached}.")


# ------------------------------------------------------------------------- the two ways to run


def _train_loop(
    config: AlgorithmConfig, args: argparse.Namespace, stop: Mapping[str, Any], tracked: list[str]
) -> tuple[dict[str, Any], dict[str, float]]:
    """The last result and the best value of each `tracked` key over the iterations."""
    algo = config.build_algo()
    results: dict[str, Any] = {}
    best: dict[str, float] = {}
    try:
        for i in range(stop.get(TRAINING_ITERATION, args.stop_iters)):
            results = algo.train()
            for key in tracked:
                value = _lookup(results, key)
                if isinstance(value, int | float):
                    best[key] = max(best.get(key, -math.inf), value)
            line = f"iter={i} R={_lookup(results, RETURN_KEY)}"
            if _lookup(results, EVAL_RETURN_KEY) is not None:
                line += f" R(eval)={_lookup(results, EVAL_RETURN_KEY)}"
            print(line)
            if should_stop(stop, results):
                break
    finally:
        algo.stop()
    return results, best


def _tune(
    config: AlgorithmConfig,
    args: argparse.Namespace,
    stop: dict[str, Any],
    trainable: type | None,
    callbacks: list | None,
    scheduler: Any,
    progress_reporter: Any,
) -> Any:
    from ray import tune

    from flywheel.tune import trainable as flywheel_trainable

    run = trainable or config.algo_class
    if not issubclass(run, tune.Trainable):  # a flywheel Algorithm class
        run = flywheel_trainable(run, config_class=type(config))
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"  # Tune's classic progress table, as RLlib's harness uses
    return tune.Tuner(
        run,
        param_space=config,  # pyright: ignore[reportArgumentType]  (Tune's annotation says dict; RLlib's harness passes the config)
        run_config=tune.RunConfig(
            failure_config=tune.FailureConfig(max_failures=0, fail_fast="raise"),
            stop=stop,
            verbose=args.verbose,
            callbacks=[*(callbacks or []), *_wandb_callbacks(args, config)],
            checkpoint_config=tune.CheckpointConfig(
                checkpoint_frequency=args.checkpoint_freq, checkpoint_at_end=args.checkpoint_at_end
            ),
            progress_reporter=progress_reporter or _reporter(args, config),
        ),
        tune_config=tune.TuneConfig(
            num_samples=args.num_samples,
            max_concurrent_trials=args.max_concurrent_trials,
            scheduler=scheduler,
        ),
    ).fit()


def _reporter(args: argparse.Namespace, config: AlgorithmConfig) -> Any:
    from ray import tune

    columns = {
        TRAINING_ITERATION: "iter",
        "time_total_s": "total time (s)",
        NUM_ENV_STEPS_SAMPLED_LIFETIME: "ts",
        RETURN_KEY: "episode return mean" if args.num_agents == 0 else "combined return",
    }
    if args.num_agents > 0:
        for module_id in config.policies:
            columns[f"{ENV_RUNNER_RESULTS}/module_episode_returns_mean/{module_id}"] = f"return {module_id}"
    return tune.CLIReporter(metric_columns=columns, max_report_frequency=args.tune_max_report_freq)


def _wandb_callbacks(args: argparse.Namespace, config: AlgorithmConfig) -> list:
    key = args.wandb_key or os.environ.get("WANDB_API_KEY")
    if key is None:
        return []
    if importlib.util.find_spec("wandb") is None:
        raise ConfigError(
            "--wandb-key (or $WANDB_API_KEY) logs to Weights & Biases, but wandb is not installed. "
            "Fix: pip install wandb, or drop --wandb-key."
        )
    from ray.air.integrations.wandb import WandbLoggerCallback

    project = args.wandb_project or f"{args.algo.lower()}-{str(config.env).lower()}"
    name = {"name": args.wandb_run_name} if args.wandb_run_name else {}
    return [WandbLoggerCallback(api_key=key, project=project, upload_checkpoints=True, **name)]


def _best_values(result_grid: Any) -> dict[str, float]:
    """Each result key's best (max) value over every trial and iteration (Tune flattens keys with "/")."""
    best: dict[str, float] = {}
    for result in result_grid:
        frame = result.metrics_dataframe
        if frame is None:
            continue
        for column in frame.columns:
            values = [v for v in frame[column] if isinstance(v, int | float) and not math.isnan(v)]
            if values:
                best[column] = max(best.get(column, -math.inf), max(values))
    return best


# ------------------------------------------------------------------------------------ helpers


def _refuse_retired_flags(args: argparse.Namespace) -> None:
    if args.enable_new_api_stack:
        raise ConfigError(
            "--enable-new-api-stack is retired: the new API stack is the only one. Fix: drop it."
        )
    if args.local_mode:
        raise ConfigError("--local-mode is retired (Ray removed local mode). Fix: drop it.")
    if args.old_api_stack:
        raise ConfigError(
            "--old-api-stack: flywheel has RLlib's new API stack only (RLModules, Learners, EnvRunners). "
            "Fix: drop the flag."
        )


def _gpus_per_learner(args: argparse.Namespace, num_learners: int) -> float:
    """`--num-gpus-per-learner`, or (unset) 1 when every learner can have a GPU, else 0, as RLlib's."""
    import torch

    available = torch.cuda.device_count()
    learners = max(num_learners, 1)  # 0 remote learners: one learner in the main process
    if args.num_gpus_per_learner is None:
        return 1 if available >= learners else 0
    if args.num_gpus_per_learner * learners > available:
        raise ConfigError(
            f"--num-gpus-per-learner={args.num_gpus_per_learner} with {learners} learner(s) needs "
            f"{args.num_gpus_per_learner * learners:g} GPUs, but this machine has {available}. "
            "Fix: --num-gpus-per-learner=0 (train on the CPU), or run where the GPUs are."
        )
    return args.num_gpus_per_learner


def _init_ray(args: argparse.Namespace) -> None:
    """Starts Ray for Tune (with `--num-cpus` CPUs); a `--no-tune` loop leaves Ray to the algorithm,
    which starts it only for remote runners or learners (so a local loop runs without Ray)."""
    if args.no_tune and not args.num_cpus:
        return
    import ray

    ray.init(num_cpus=args.num_cpus or None, ignore_reinit_error=True)


def _shutdown_ray() -> None:
    import sys

    if "ray" in sys.modules:
        sys.modules["ray"].shutdown()


def _lookup(results: Mapping[str, Any], key: str) -> Any:
    """`results["a"]["b"]` for key "a/b" (None when missing or NaN)."""
    value: Any = results
    for part in key.split("/"):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value
