"""`synchronous_parallel_sample`: the sampling call of RLlib's own `training_step`s (PPO, DQN, MARWIL,
CQL), on `EnvRunnerGroup.sample`, so a `training_step` copied from RLlib runs as written::

    episodes, runner_metrics = synchronous_parallel_sample(
        worker_set=self.env_runner_group, max_env_steps=self.config.total_train_batch_size,
        sample_timeout_s=self.config.sample_timeout_s, _uses_new_env_runners=True, _return_metrics=True,
    )
    self.metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
"""

from __future__ import annotations

from typing import Any


def synchronous_parallel_sample(
    *,
    worker_set: Any,
    max_agent_steps: int | None = None,
    max_env_steps: int | None = None,
    concat: bool = True,
    sample_timeout_s: float | None = None,
    random_actions: bool = False,
    _uses_new_env_runners: bool = True,
    _return_metrics: bool = False,
) -> Any:
    """Episodes from the runners of `worker_set` (an `EnvRunnerGroup`; the local runner when there are
    no remote ones): at least `max_env_steps` env steps, or without it one rollout fragment from each
    runner. With `_return_metrics`, `(episodes, metrics)`: each runner's metrics of this sample, for
    `metrics.aggregate(metrics, key=ENV_RUNNER_RESULTS)`.

    Differences from RLlib's: `max_agent_steps` bounds env steps (flywheel's runners count env steps;
    a multi-agent sample then holds at least that many agent steps); `concat=False` gives one list
    holding every episode (the group merges its runners' returns); `sample_timeout_s` is the
    config's (`env_runners(sample_timeout_s=...)`), which the group already applies;
    `_uses_new_env_runners` is always true (episodes, never SampleBatches).
    """
    num_timesteps = max_env_steps if max_env_steps is not None else max_agent_steps
    episodes = worker_set.sample(num_timesteps=num_timesteps, random_actions=random_actions)
    result = episodes if concat else [episodes]
    return (result, worker_set.get_metrics_states()) if _return_metrics else result
