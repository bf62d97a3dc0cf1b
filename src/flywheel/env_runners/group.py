"""`EnvRunnerGroup`: the algorithm's runners behind one interface (a local runner; Ray actors later).

The driving loop (one training iteration)::

    episodes = group.sample(num_timesteps=n)            # from every runner
    metrics_states = group.get_metrics_states()           # exact merge in the algorithm's logger
    group.sync_weights(weights, weights_seq_no)           # once per learner update
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flywheel.errors import ConfigError
from flywheel.typing import DEFAULT_MODULE_ID


class EnvRunnerGroup:
    """Builds and drives the env runners of an algorithm (or of its evaluation).

    Args:
        config: The (frozen) algorithm config.
        runner_class: The runner class; defaults to `SingleAgentEnvRunner`.
    """

    def __init__(self, *, config: Any, runner_class: type | None = None) -> None:
        if config.num_env_runners != 0:
            raise ConfigError(
                f"num_env_runners={config.num_env_runners} needs remote (Ray) env runners, which this "
                "version does not provide yet. Fix: config.env_runners(num_env_runners=0) to sample in "
                "this process (use num_envs_per_env_runner to vectorize)."
            )
        if runner_class is None:
            from flywheel.env_runners.single_agent import SingleAgentEnvRunner

            runner_class = SingleAgentEnvRunner
        self.config = config
        self.local_env_runner = runner_class(config=config, worker_index=0, num_workers=0)

    def sample(self, **kwargs: Any) -> list:
        """Episodes from every runner (`kwargs` as in `EnvRunner.sample`)."""
        return self.local_env_runner.sample(**kwargs)

    def get_metrics_states(self) -> list[dict]:
        """Each runner's metrics since the last call, as `MetricsLogger` states."""
        return [self.local_env_runner.get_metrics_state()]

    def sync_weights(self, weights: dict, weights_seq_no: int) -> None:
        """Sends the learners' inference weights `{module_id: weights}`, tagged with their sequence
        number, to every runner (a single-agent runner takes its one module's weights)."""
        if not self.config.is_multi_agent:
            weights = weights[DEFAULT_MODULE_ID]
        self.local_env_runner.set_state({"rl_module": weights, "weights_seq_no": weights_seq_no})

    def sync_connector_states(self, from_group: EnvRunnerGroup | None = None) -> None:
        """Merges the runners' connector states and sends the merged state to every runner.

        With `from_group`, this group's runners receive `from_group`'s merged state instead
        (evaluation runners use the training runners' observation filters).
        """
        source = from_group or self
        state = source.local_env_runner.get_state(
            components=["env_to_module_connector", "module_to_env_connector"]
        )
        state.pop("weights_seq_no", None)
        if from_group is not None:
            self.local_env_runner.set_state(state)

    def foreach_env_runner(self, func: Callable[[Any], Any], local_env_runner: bool = True) -> list:
        """`[func(runner) for each runner]`."""
        return [func(self.local_env_runner)] if local_env_runner else []

    @property
    def num_healthy_env_runners(self) -> int:
        return 1

    def stop(self) -> None:
        self.local_env_runner.stop()
