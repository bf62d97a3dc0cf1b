"""Helpers behind the config's builders: module-spec merging and connector-pipeline assembly.

Everything connector- and module-related is imported on first use, so building or validating a
config never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flywheel.errors import ConnectorError

if TYPE_CHECKING:
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.core.rl_module.spec import RLModuleSpec

_SPEC_FIELDS = ("module_class", "observation_space", "action_space", "inference_only", "learner_only")


def merge_module_specs(
    default: RLModuleSpec, user: RLModuleSpec | None, model_config: dict, spaces: tuple
) -> RLModuleSpec:
    """`default` updated by `user`'s fields that are not None, then by `spaces` (obs, act) not None.

    model_config: default spec's < `model_config` (the config's) < user spec's.
    """
    from flywheel.core.rl_module.spec import RLModuleSpec

    specs = (default,) if user is None else (user, default)
    merged = {
        name: next((getattr(s, name) for s in specs if getattr(s, name) is not None), None)
        for name in _SPEC_FIELDS
    }
    for name, space in zip(("observation_space", "action_space"), spaces, strict=True):
        if space is not None:
            merged[name] = space
    merged["inference_only"] = bool(merged["inference_only"])
    merged["learner_only"] = bool(merged["learner_only"])
    user_model_config = user.model_config if user is not None else None
    merged_model_config = {**(default.model_config or {}), **model_config, **(user_model_config or {})}
    return RLModuleSpec(**merged, model_config=merged_model_config)


def hook_pieces(hook: Callable | None, hook_name: str, *args: Any) -> list:
    """The pieces a connector hook returns (a piece, a list of pieces, or a pipeline), as a flat list."""
    if hook is None:
        return []
    from flywheel.connectors.connector import ConnectorV2
    from flywheel.connectors.pipeline import ConnectorPipelineV2

    result = hook(*args)
    if isinstance(result, ConnectorPipelineV2):
        return list(result.connectors)
    if isinstance(result, ConnectorV2):
        return [result]
    if isinstance(result, list | tuple) and all(isinstance(piece, ConnectorV2) for piece in result):
        return list(result)
    raise ConnectorError(
        f"config.{hook_name} returned {result!r}; expected a ConnectorV2 piece, a list of pieces or a "
        "ConnectorPipelineV2. Fix: make the function return its piece(s)."
    )


def env_spaces(env: Any, spaces: tuple | None) -> tuple:
    """`spaces` if given, else the (vector) env's single observation and action spaces."""
    return spaces if spaces is not None else (env.single_observation_space, env.single_action_space)


def make_pipeline(observation_space: Any, action_space: Any, pieces: list) -> ConnectorPipelineV2:
    """A ConnectorPipelineV2 of `pieces` with the given input spaces."""
    from flywheel.connectors.pipeline import ConnectorPipelineV2

    return ConnectorPipelineV2(
        input_observation_space=observation_space, input_action_space=action_space, connectors=pieces
    )
