"""Type aliases shared across flywheel, with RLlib's names (`ray.rllib.utils.typing`).

They are for annotations only; importing this module imports neither torch nor gymnasium (the
aliases that name their types refer to them as strings, hence `Union` rather than `|`).
"""

# ruff: noqa: UP007

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, Union

import numpy as np

if TYPE_CHECKING:
    import gymnasium
    import torch

    from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec
    from flywheel.env.make import EnvContext
    from flywheel.episodes import MultiAgentEpisode, SingleAgentEpisode

AgentID = Any
ModuleID = str
PolicyID = str  # RLlib's old name for a module id
EpisodeID = str
EnvID = int | str
StateDict = dict[str, Any]
ResultDict = dict
"""What `algo.train()`, `Learner.update()` and `MetricsLogger.reduce()` return (nested dicts)."""

TensorType = Union[np.ndarray, "torch.Tensor"]
TensorStructType = Union[TensorType, dict, tuple]
TensorShape = tuple[int, ...] | list[int]
NetworkType = Union["torch.nn.Module"]
DeviceType = Union[str, "torch.device", int]
ModelWeights = dict
Param = Union["torch.Tensor"]
ParamList = list[Param]
ParamDict = dict[Any, Param]
NamedParamDict = dict[str, Param]
Optimizer = Union["torch.optim.Optimizer"]
LearningRateOrSchedule = float | list[list[int | float]] | list[tuple[int, int | float]]

EpisodeType = Union["SingleAgentEpisode", "MultiAgentEpisode"]
RLModuleSpecType = Union["RLModuleSpec", "MultiRLModuleSpec"]
SpaceStruct = Union["gymnasium.Space", dict, tuple]
MultiAgentDict = dict[AgentID, Any]

EnvConfigDict = dict
EnvType = Union[Any, "gymnasium.Env"]
EnvCreator = Callable[["EnvContext"], EnvType | None]
AgentToModuleMappingFn = Callable[[AgentID, EpisodeType], ModuleID]
ShouldModuleBeUpdatedFn = Collection[ModuleID] | Callable[[ModuleID, Any], bool]

DEFAULT_MODULE_ID: ModuleID = "default_policy"
ALL_MODULES: str = "__all_modules__"
