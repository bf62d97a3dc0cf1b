"""RLModules: the networks of policies (`RLModule`, `TorchRLModule`, `MultiRLModule`, specs, APIs).

Names are imported on first use, so `DefaultModelConfig` (which configs validate against) comes
without torch.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "DefaultModelConfig": "flywheel.core.rl_module.default_model_config",
    "InferenceOnlyAPI": "flywheel.core.rl_module.apis",
    "MultiRLModule": "flywheel.core.rl_module.multi_rl_module",
    "MultiRLModuleSpec": "flywheel.core.rl_module.spec",
    "RLModule": "flywheel.core.rl_module.rl_module",
    "RLModuleSpec": "flywheel.core.rl_module.spec",
    "SelfSupervisedLossAPI": "flywheel.core.rl_module.apis",
    "TargetNetworkAPI": "flywheel.core.rl_module.apis",
    "TorchRLModule": "flywheel.core.rl_module.torch_rl_module",
    "ValueFunctionAPI": "flywheel.core.rl_module.apis",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flywheel.core.rl_module' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
