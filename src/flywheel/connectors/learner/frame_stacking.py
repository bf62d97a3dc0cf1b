"""`FrameStacking` for the learner pipeline: the stacks the env-to-module piece gave the module."""

from __future__ import annotations

import gymnasium as gym

from flywheel.connectors.env_to_module.frame_stacking import FrameStacking as EnvToModuleFrameStacking


class FrameStacking(EnvToModuleFrameStacking):
    """`flywheel.connectors.env_to_module.FrameStacking(..., as_learner_connector=True)` (RLlib's
    `FrameStackingLearner`): `batch[module_id][OBS]` holds, for every step of each episode chunk, the
    last `num_frames` observations up to that step, stacked as the env-to-module piece stacks them."""

    def __init__(
        self,
        input_observation_space: gym.Space | None = None,
        input_action_space: gym.Space | None = None,
        *,
        num_frames: int = 4,
        **kwargs: object,
    ):
        super().__init__(
            input_observation_space,
            input_action_space,
            num_frames=num_frames,
            as_learner_connector=True,
            **kwargs,
        )

    def __repr__(self) -> str:
        return f"learner.FrameStacking(num_frames={self.num_frames})"
