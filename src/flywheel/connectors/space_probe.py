"""`undeclared_observation_change`: which env-to-module piece hands on observations of another shape
than the observation space it declares (the space the RLModule is built for).

A runner asks only after its module's forward pass failed (a torch shape error names neither the
piece nor the fix): the pieces are called again, copied, on a one-step episode with an observation
sampled from the pipeline's input space, and what each piece hands on is compared with its
`observation_space`. The runner's own pieces and episodes are not touched.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from flywheel.columns import Columns
from flywheel.connectors.pipeline import ConnectorPipelineV2
from flywheel.episodes.single_agent_episode import SingleAgentEpisode

if TYPE_CHECKING:
    from flywheel.core.rl_module.multi_rl_module import MultiRLModule
    from flywheel.core.rl_module.rl_module import RLModule


def undeclared_observation_change(
    pipeline: ConnectorPipelineV2, rl_module: RLModule | MultiRLModule
) -> str | None:
    """A message naming the first piece whose observations' shape differs from its declared
    `observation_space` (Box spaces), the shape it produced and the fix; None when every piece (up to
    the last one not defined by flywheel) keeps to its space, or when the probe itself fails."""
    space, action_space = pipeline.input_observation_space, pipeline.input_action_space
    user_pieces = [i for i, piece in enumerate(pipeline.connectors) if not _is_flywheels(piece)]
    if not isinstance(space, gym.spaces.Box) or action_space is None or not user_pieces:
        return None
    episode = SingleAgentEpisode(
        observations=[space.sample(), space.sample()],
        actions=[action_space.sample()],
        rewards=[0.0],
        len_lookback_buffer=0,
    )
    batch: dict[str, Any] = {}
    try:
        pieces = copy.deepcopy(pipeline.connectors[: user_pieces[-1] + 1])
        for piece in pieces:
            batch = piece(rl_module=rl_module, batch=batch, episodes=[episode], explore=False, shared_data={})
            produced = _observation_shape(batch, episode)
            declared = piece.observation_space
            if isinstance(declared, gym.spaces.Box) and produced != declared.shape:
                return (
                    f"Connector piece {piece.name} hands on observations of shape {produced}, but its "
                    f"observation space (what the RLModule is built for) has shape {declared.shape}: the "
                    f"piece changes the observation space without declaring it. Fix: override "
                    f"recompute_output_observation_space(input_observation_space, input_action_space) in "
                    f"{type(piece).__name__} to return the space of what it produces (see "
                    f"docs/concepts/connectors.md)."
                )
    except Exception:  # a piece that needs more than a one-step episode: no diagnosis
        return None
    return None


def _is_flywheels(piece: Any) -> bool:
    return type(piece).__module__.startswith("flywheel.")


def _observation_shape(batch: dict[str, Any], episode: SingleAgentEpisode) -> tuple[int, ...]:
    """One observation's shape: a row of `batch[OBS]` when a piece put the column there, else the
    episode's newest observation."""
    if Columns.OBS in batch and hasattr(batch[Columns.OBS], "shape"):
        return tuple(batch[Columns.OBS].shape[1:])
    return np.shape(episode.get_observations(-1))
