"""`StatelessCartPole`: CartPole-v1 without the velocities, a small partially observable task.

The agent sees only the cart position and the pole angle, so one observation cannot tell
which way the pole is falling; a policy needs memory (an LSTM, or stacked frames) to balance
well. Memoryless policies plateau far below CartPole's 500, which makes this env a quick check
that a recurrent module really uses its state.

    from flywheel import PPOConfig
    from flywheel.testing.stateless_cartpole import StatelessCartPole

    config = PPOConfig().environment(StatelessCartPole).rl_module(model_config={"use_lstm": True})
"""

from __future__ import annotations

from collections.abc import Mapping

import gymnasium as gym
import numpy as np

from flywheel.checkpoints.registry import checkpoint_class

__all__ = ["StatelessCartPole"]

_KEPT = np.array([0, 2])
"""Indices of cart position and pole angle in CartPole's observation (velocities are 1 and 3)."""


@checkpoint_class
class StatelessCartPole(gym.ObservationWrapper):
    """CartPole-v1 (500-step time limit, same dynamics and rewards) observing `[x, theta]` only.

    Built as `StatelessCartPole(config)` like any env class given to `environment()`;
    `config["render_mode"]` is passed on to CartPole. Observations are `float32` in
    `Box(low, high, (2,))` with CartPole's bounds for the two kept entries.
    """

    def __init__(self, config: Mapping[str, object] | None = None) -> None:
        config = config if config is not None else {}
        super().__init__(gym.make("CartPole-v1", render_mode=config.get("render_mode")))
        full = self.env.observation_space
        assert isinstance(full, gym.spaces.Box)
        self.observation_space = gym.spaces.Box(full.low[_KEPT], full.high[_KEPT], dtype=np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation[_KEPT]
