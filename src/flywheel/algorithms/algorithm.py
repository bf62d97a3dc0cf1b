"""`Algorithm`: wires env runners, learners and metrics together.

The driving loop::

    algo = config.build_algo()
    while True:
        result = algo.train()        # training_step() until the iteration's minimums are met
        if result["env_runners"]["episode_return_mean"] >= 475:
            break
    algo.stop()

Subclasses implement `training_step()` (PPO: sample → learner update → weight sync).
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
import torch

from flywheel.core.learner.learner_group import LearnerGroup
from flywheel.core.rl_module.spec import MultiRLModuleSpec
from flywheel.env_runners.group import EnvRunnerGroup
from flywheel.metrics import MetricsLogger
from flywheel.typing import DEFAULT_MODULE_ID

ENV_RUNNERS = "env_runners"
LEARNERS = "learners"
EVALUATION = "evaluation"
TIMERS = "timers"


class Algorithm:
    """Base class of every algorithm (PPO, ...): `train()`, `evaluate()`, `get_module()`, `stop()`."""

    def __init__(self, config: Any, **kwargs: Any) -> None:
        if not config.is_frozen:
            config = config.copy()
            config.validate()
            config.freeze()
        self.config = config
        self.metrics = MetricsLogger()
        self.iteration = 0
        self._time_total_s = 0.0
        self._callbacks = config.build_callbacks()
        self._seed_everything()
        self.env_runner_group = EnvRunnerGroup(config=config)
        runner = self.env_runner_group.local_env_runner
        spaces = (runner.env_to_module.observation_space, runner.env_to_module.action_space)
        module_spec = MultiRLModuleSpec(
            rl_module_specs={DEFAULT_MODULE_ID: config.get_rl_module_spec(spaces=spaces)}
        )
        self.learner_group = LearnerGroup(config=config, module_spec=module_spec, spaces=spaces)
        self._sync_weights(force=True)
        self.eval_env_runner_group = self._build_evaluation_group()
        self._callbacks.on_algorithm_init(algorithm=self, metrics_logger=self.metrics)

    # --------------------------------------------------------------- set up

    def _seed_everything(self) -> None:
        seed = self.config.seed
        if seed is None:
            return
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)

    def _build_evaluation_group(self) -> EnvRunnerGroup | None:
        if not self.config.evaluation_interval:
            return None
        eval_config = self.config.get_evaluation_config_object()
        return EnvRunnerGroup(config=eval_config)

    # ------------------------------------------------------------- training

    @property
    def env_runner(self):
        """The local env runner."""
        return self.env_runner_group.local_env_runner

    def training_step(self) -> None:
        """One round of sampling and learning; logs into `self.metrics`."""
        raise NotImplementedError(f"{type(self).__name__} must implement training_step().")

    def train(self) -> dict[str, Any]:
        """Runs `training_step()` until `min_time_s_per_iteration` and `min_sample_timesteps_per_iteration`
        are met; returns the result dict (API.md §2)."""
        start = time.perf_counter()
        steps_before = self._lifetime_env_steps()
        while True:
            self.training_step()
            elapsed = time.perf_counter() - start
            steps = self._lifetime_env_steps() - steps_before
            if (
                elapsed >= self.config.min_time_s_per_iteration
                and steps >= self.config.min_sample_timesteps_per_iteration
            ):
                break
        self.iteration += 1
        evaluation = None
        interval = self.config.evaluation_interval
        if interval and self.iteration % interval == 0:
            evaluation = self.evaluate()
        result = self.metrics.reduce()
        time_this_iter = time.perf_counter() - start
        self._time_total_s += time_this_iter
        if evaluation is not None:
            result[EVALUATION] = evaluation
        result.update(
            training_iteration=self.iteration,
            time_this_iter_s=time_this_iter,
            time_total_s=self._time_total_s,
            num_env_steps_sampled_lifetime=self._lifetime_env_steps(),
        )
        self._callbacks.on_train_result(algorithm=self, metrics_logger=self.metrics, result=result)
        return result

    def _lifetime_env_steps(self) -> int:
        return int(self.metrics.peek((ENV_RUNNERS, "num_env_steps_sampled_lifetime"), default=0))

    def _sample(self, **kwargs: Any) -> list:
        """Samples from the runner group and merges the runners' metrics (exactly) into `self.metrics`."""
        with self.metrics.log_time((TIMERS, "env_runner_sampling_timer")):
            episodes = self.env_runner_group.sample(**kwargs)
        self.metrics.aggregate(self.env_runner_group.get_metrics_states(), key=ENV_RUNNERS)
        return episodes

    def _update(self, episodes: list) -> dict[str, Any]:
        """One learner-group update on `episodes`; logs its results under `learners`."""
        timesteps = {"num_env_steps_sampled_lifetime": self._lifetime_env_steps()}
        with self.metrics.log_time((TIMERS, "learner_update_timer")):
            results = self.learner_group.update(episodes=episodes, timesteps=timesteps)
        self.metrics.log_dict(results, key=LEARNERS)
        num_trained = sum(len(e) for e in episodes)
        self.metrics.log_value("num_env_steps_trained_lifetime", num_trained, reduce="lifetime_sum")
        return results

    def _sync_weights(self, force: bool = False) -> None:
        with self.metrics.log_time((TIMERS, "synch_weights")):
            seq_no = 0 if force else self.learner_group.weights_seq_no
            self.env_runner_group.sync_weights(self.learner_group.get_weights(inference_only=True), seq_no)

    # ----------------------------------------------------------- evaluation

    def evaluate(self) -> dict[str, Any]:
        """Runs the evaluation runners with the current weights; returns the `evaluation` result part."""
        group = self.eval_env_runner_group
        if group is None:
            group = self.eval_env_runner_group = EnvRunnerGroup(
                config=self.config.get_evaluation_config_object()
            )
        self._callbacks.on_evaluate_start(algorithm=self, metrics_logger=self.metrics)
        group.sync_weights(self.learner_group.get_weights(inference_only=True), 0)
        group.sync_connector_states(from_group=self.env_runner_group)
        duration = self.config.evaluation_duration
        if self.config.evaluation_duration_unit == "episodes":
            group.sample(num_episodes=duration)
        else:
            group.sample(num_timesteps=duration)
        logger = MetricsLogger()
        logger.aggregate(group.get_metrics_states(), key=ENV_RUNNERS)
        evaluation = logger.reduce()
        self._callbacks.on_evaluate_end(
            algorithm=self, metrics_logger=self.metrics, evaluation_metrics=evaluation
        )
        return evaluation

    # -------------------------------------------------------------- modules

    def get_module(self, module_id: str = DEFAULT_MODULE_ID):
        """The inference module (the local runner's) for `module_id`."""
        if module_id != DEFAULT_MODULE_ID:
            raise KeyError(f"Unknown module id {module_id!r}; this algorithm has only {DEFAULT_MODULE_ID!r}.")
        return self.env_runner.module

    def stop(self) -> None:
        """Releases envs, runners and learners."""
        self.env_runner_group.stop()
        if self.eval_env_runner_group is not None:
            self.eval_env_runner_group.stop()
