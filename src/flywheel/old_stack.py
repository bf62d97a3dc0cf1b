"""RLlib's old API stack names that programs written for its new stack still use, with RLlib 2.60's meaning there.

- `PolicySpec`: a value of ``config.multi_agent(policies={module_id: PolicySpec(...)})``. The new stack
  reads only its spaces (the module's observation/action space when its `RLModuleSpec` names none);
  its `policy_class` and `config` belong to the old stack, which RLlib 2.60 ignores there too
  (flywheel warns once).
- `SampleBatch`: RLlib's column-name constants (``SampleBatch.OBS`` is ``Columns.OBS``); the
  old batch class itself is not flywheel's, so making one raises with the fix.
- `Policy`: the old stack's base class. Modules that define a Policy subclass next to their new-stack
  code import (RLlib's examples keep both paths in one file); making one raises with the fix.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, NoReturn

from flywheel.columns import Columns
from flywheel.errors import ConfigError

__all__ = ["Policy", "PolicySpec", "SampleBatch"]

_POLICY_FIX = (
    "RLlib's old API stack Policy does not run on flywheel (nor on RLlib's new stack). Fix: put the "
    "network in a flywheel.TorchRLModule (RLModuleSpec(module_class=...)) and the loss in a flywheel.TorchLearner."
)
_SAMPLE_BATCH_FIX = (
    "SampleBatch(...) is RLlib's old API stack batch; flywheel passes episodes and dict batches keyed by "
    "flywheel.Columns. Fix: build a dict {Columns.OBS: ..., ...} (SampleBatch's column names are Columns' names)."
)


@dataclass
class PolicySpec:
    """One module of ``config.multi_agent(policies={...})``, as RLlib's old stack describes it.

    `observation_space` / `action_space` (None: the spaces of the agents mapped to the module) are
    the module's spaces unless its `RLModuleSpec` names its own. `policy_class` and `config` are
    ignored, as on RLlib's new stack (a warning names them when given).
    """

    policy_class: Any = None
    observation_space: Any = None
    action_space: Any = None
    config: Any = None

    def __post_init__(self) -> None:
        ignored = [name for name in ("policy_class", "config") if getattr(self, name)]
        if ignored:
            warnings.warn(
                f"PolicySpec({', '.join(f'{n}=...' for n in ignored)}): old API stack settings that RLlib's "
                "new stack and flywheel ignore. The module comes from RLModuleSpec (config.rl_module(...)); "
                "per-module settings go in config.multi_agent(algorithm_config_overrides_per_module=...).",
                UserWarning,
                stacklevel=2,
            )


def policy_spec_from(value: Any, module_id: Any) -> PolicySpec | None:
    """`value` of ``policies[module_id]`` as a `PolicySpec` (RLlib also takes a 4-tuple
    ``(policy_class, observation_space, action_space, config)``), or None when it is no such thing."""
    if isinstance(value, PolicySpec):
        return value
    if isinstance(value, tuple | list):
        if len(value) != 4:
            raise ConfigError(
                f"policies[{module_id!r}] = {value!r}: a tuple there is RLlib's PolicySpec as "
                "(policy_class, observation_space, action_space, config), 4 items, got "
                f"{len(value)}. Fix: pass PolicySpec(observation_space=..., action_space=...) or an RLModuleSpec."
            )
        return PolicySpec(*value)
    return None


class SampleBatch(Columns):
    """RLlib's `SampleBatch` column names (the `Columns` names plus the old stack's own)."""

    CUR_OBS = Columns.OBS
    PREV_ACTIONS = "prev_actions"
    PREV_REWARDS = "prev_rewards"
    DONES = "dones"
    ENV_ID = "env_id"
    AGENT_INDEX = "agent_index"
    UNROLL_ID = "unroll_id"
    ACTION_DIST = "action_dist"
    OBS_EMBEDS = "obs_embeds"
    ATTENTION_MASKS = "attention_masks"

    def __new__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        raise ConfigError(_SAMPLE_BATCH_FIX)


class Policy:
    """RLlib's old API stack `Policy`: subclasses can be defined, not made."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError(f"{type(self).__name__}: {_POLICY_FIX}")
