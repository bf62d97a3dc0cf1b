"""`EnvRunner`: the interface every runner (single-agent, multi-agent, local or remote) offers.

The driving loop::

    runner = SingleAgentEnvRunner(config=config)
    while training:
        episodes = runner.sample(num_timesteps=n)      # finished episodes + cut chunks (numpy)
        learner_results = learner_group.update(episodes=episodes)
        runner.set_state({"rl_module": weights, "weights_seq_no": seq_no})
        metrics = runner.get_metrics()
"""

from __future__ import annotations

import abc
from typing import Any

from flywheel.checkpoints.checkpointable import Checkpointable
from flywheel.metrics import MetricsLogger


class EnvRunner(Checkpointable, abc.ABC):
    """Steps an env with an RLModule and records episodes.

    Subclasses hold `module` (the RLModule) and the `env_to_module` / `module_to_env` pipelines;
    checkpoints save each in its own sub-directory (`rl_module`, `env_to_module_connector`,
    `module_to_env_connector`) and the runner's `weights_seq_no` in the runner's state.
    """

    ctor_args_may_pickle = True

    def __init__(self, *, config, worker_index: int = 0, num_workers: int = 0, **kwargs):
        self.config = config
        self.worker_index = worker_index
        self.num_workers = num_workers
        self.metrics = MetricsLogger()

    @abc.abstractmethod
    def sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool | None = None,
        random_actions: bool = False,
        force_reset: bool = False,
    ) -> list:
        """Returns finished episodes plus cut chunks of ongoing ones (numpy'ized)."""

    @abc.abstractmethod
    def get_state(self, components=None, *, not_components=None, **kwargs) -> dict[str, Any]:
        """The runner's state: `rl_module` weights, `weights_seq_no`, connector states."""

    @abc.abstractmethod
    def set_state(self, state: dict[str, Any]) -> None:
        """Sets (parts of) the state; module weights older than the runner's are ignored."""

    def get_metrics(self) -> dict[str, Any]:
        """The runner's metrics since the last call, as plain numbers."""
        return self.metrics.reduce()

    def get_metrics_state(self) -> dict[str, Any]:
        """The metrics logged since the last call, as logger state for an exact merge elsewhere."""
        return self.metrics.reduce_to_state()

    def get_checkpointable_components(self) -> list[tuple[str, Checkpointable]]:
        return [
            ("rl_module", self.module),
            ("env_to_module_connector", self.env_to_module),
            ("module_to_env_connector", self.module_to_env),
        ]

    def get_ctor_args_and_kwargs(self) -> tuple[tuple, dict[str, Any]]:
        return (), {"config": self.config, "worker_index": self.worker_index, "num_workers": self.num_workers}

    def ping(self) -> str:
        """Health probe for remote runners."""
        return "pong"

    @abc.abstractmethod
    def stop(self) -> None:
        """Releases the env and any other resources."""
