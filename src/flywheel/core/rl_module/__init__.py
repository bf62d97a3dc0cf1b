"""RLModules: the networks of policies (`RLModule`, `TorchRLModule`, `MultiRLModule`, specs, APIs)."""

from flywheel.core.rl_module.apis import TargetNetworkAPI, ValueFunctionAPI
from flywheel.core.rl_module.multi_rl_module import MultiRLModule
from flywheel.core.rl_module.rl_module import RLModule
from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec
from flywheel.core.rl_module.torch_rl_module import TorchRLModule

__all__ = [
    "MultiRLModule",
    "MultiRLModuleSpec",
    "RLModule",
    "RLModuleSpec",
    "TargetNetworkAPI",
    "TorchRLModule",
    "ValueFunctionAPI",
]
