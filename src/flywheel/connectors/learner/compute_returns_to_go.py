"""`ComputeReturnsToGo`: the discounted sum of the rewards from each step to the end of its chunk."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner.gae import reverse_linear_scan
from flywheel.connectors.learner.module_episodes import module_episodes

if TYPE_CHECKING:
    from flywheel.core.rl_module.rl_module import RLModule
    from flywheel.metrics.metrics_logger import MetricsLogger
    from flywheel.typing import EpisodeType


class ComputeReturnsToGo(ConnectorV2):
    """Adds `RETURNS_TO_GO`: `G_t = r_t + gamma * G_{t+1}`, summed to the end of each episode chunk
    (the quantity vanilla policy gradient weights log-probabilities with; sample complete episodes
    for the true return).

    Runs before the default pieces (RLlib's VPG learner prepends it), one row per step of every
    chunk, for single- and multi-agent episodes.
    """

    def __init__(
        self,
        input_observation_space: Any = None,
        input_action_space: Any = None,
        *,
        gamma: float = 0.99,
        **kwargs: object,
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.gamma = gamma

    def __call__(
        self,
        *,
        rl_module: RLModule,
        batch: dict[str, Any],
        episodes: list[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: MetricsLogger | None = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        for _, episode in module_episodes(episodes):
            rewards = np.asarray(episode.get_rewards(), dtype=np.float64)
            returns = reverse_linear_scan(rewards, np.full(len(rewards), self.gamma))
            self.add_n_batch_items(
                batch, Columns.RETURNS_TO_GO, returns.astype(np.float32), len(episode), episode
            )
        return batch
