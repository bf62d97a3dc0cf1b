"""Which module acts for which agent, and the module specs a multi-agent runner and learner build.

Each module is built for the spaces of the agents mapped to it: the policy-mapping function is
asked once per possible agent (with a blank episode), and a module gets the spaces of its first
agent. A module no possible agent maps to (yet: RLlib's self-play examples add policies that the
mapping function picks later) gets the spaces its own `RLModuleSpec` names, else, as in RLlib, the
spaces every agent shares; agents with different spaces leave it without, which is an error.
A `PolicySpec` in `policies` that names spaces gives them to its module (RLlib's old-stack way to set
them), unless the module's `RLModuleSpec` names its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from flywheel.core.rl_module.multi_rl_module import MultiRLModule
from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec
from flywheel.episodes import MultiAgentEpisode
from flywheel.errors import ConfigError
from flywheel.old_stack import policy_spec_from
from flywheel.typing import DEFAULT_MODULE_ID, AgentID, ModuleID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.typing import EpisodeType


def mapping_fn(config: AlgorithmConfig) -> Callable[..., ModuleID]:
    """The config's policy-mapping function, or one mapping every agent to "default_policy"."""
    return config.policy_mapping_fn or _to_default_policy


def _to_default_policy(agent_id: AgentID, episode: EpisodeType, **kwargs: object) -> ModuleID:
    return DEFAULT_MODULE_ID


def module_ids(config: AlgorithmConfig) -> list[ModuleID]:
    """The config's module ids in a fixed order (sorted: `policies` may be a set)."""
    return sorted(config.policies)


def agent_modules(config: AlgorithmConfig, possible_agents: list[AgentID]) -> dict[AgentID, ModuleID]:
    """`{agent_id: module_id}` for every possible agent; ConfigError for a module not in `policies`."""
    fn, known = mapping_fn(config), set(config.policies)
    blank = MultiAgentEpisode()
    mapping = {}
    for agent_id in possible_agents:
        module_id = fn(agent_id, blank)
        if module_id not in known:
            raise_unknown_module(agent_id, module_id, known)
        mapping[agent_id] = module_id
    return mapping


def raise_unknown_module(agent_id: AgentID, module_id: ModuleID, known: Any) -> None:
    raise ConfigError(
        f"policy_mapping_fn mapped agent {agent_id!r} to module {module_id!r}, which is not one of the "
        f"policies {sorted(known)}. Fix: return one of those ids, or add {module_id!r} to "
        "config.multi_agent(policies=...)."
    )


def module_spaces(
    config: AlgorithmConfig,
    possible_agents: list[AgentID],
    observation_spaces: Mapping[AgentID, gym.Space],
    action_spaces: Mapping[AgentID, gym.Space],
) -> dict[ModuleID, tuple[gym.Space, gym.Space]]:
    """`{module_id: (observation space, action space)}` of the first possible agent mapped to each module;
    a module no agent maps to whose own spec names no spaces gets the spaces all agents share (if they do)."""
    spaces = {}
    for agent_id, module_id in agent_modules(config, possible_agents).items():
        if module_id not in spaces:
            spaces[module_id] = (observation_spaces[agent_id], action_spaces[agent_id])
    shared = _shared_spaces(possible_agents, observation_spaces, action_spaces)
    for module_id in module_ids(config):
        if module_id not in spaces and shared is not None and not _own_spaces(config, module_id):
            spaces[module_id] = shared
        given = _policy_spec_spaces(config, module_id)
        if given is not None:
            taken = spaces.get(module_id, (None, None))
            spaces[module_id] = (given[0] or taken[0], given[1] or taken[1])
    return spaces


def _policy_spec_spaces(config: Any, module_id: ModuleID) -> tuple[Any, Any] | None:
    """The spaces a `PolicySpec` (or RLlib's 4-tuple) in `policies` names for `module_id`, when it names
    any and the module's `RLModuleSpec` in the config's `MultiRLModuleSpec` names none."""
    policies = config.policies
    if not isinstance(policies, Mapping):
        return None
    policy = policy_spec_from(policies.get(module_id), module_id)
    if policy is None or (policy.observation_space is None and policy.action_space is None):
        return None
    own = getattr(config.rl_module_spec, "rl_module_specs", {}).get(module_id)
    if getattr(own, "observation_space", None) is not None:
        return None
    return policy.observation_space, policy.action_space


def _shared_spaces(
    agents: list[AgentID],
    observation_spaces: Mapping[AgentID, gym.Space],
    action_spaces: Mapping[AgentID, gym.Space],
) -> tuple[gym.Space, gym.Space] | None:
    """The one (observation space, action space) pair of all `agents`, or None if they differ."""
    if not agents:
        return None
    first = (observation_spaces[agents[0]], action_spaces[agents[0]])
    same = all((observation_spaces[a], action_spaces[a]) == first for a in agents)
    return first if same else None


def _own_spaces(config: AlgorithmConfig, module_id: ModuleID) -> bool:
    """Whether the module's own spec (in `policies` or the config's `MultiRLModuleSpec`) names its spaces."""
    specs = [config.policies.get(module_id) if isinstance(config.policies, Mapping) else None]
    specs.append(getattr(config.rl_module_spec, "rl_module_specs", {}).get(module_id))
    return any(getattr(spec, "observation_space", None) is not None for spec in specs)


def multi_rl_module_spec(config: AlgorithmConfig, spaces: Mapping[ModuleID, tuple]) -> MultiRLModuleSpec:
    """One `RLModuleSpec` per module id of the config, built for `spaces[module_id]`, in the container
    class of the config's `MultiRLModuleSpec`. Modules of that spec that are not policies (RLlib's
    pattern: an encoder a custom container shares between policies, a learner-only model) are
    built too, with the spaces of their own spec."""
    user = config.rl_module_spec
    extra = sorted(mid for mid in getattr(user, "rl_module_specs", {}) if mid not in config.policies)
    return MultiRLModuleSpec(
        multi_rl_module_class=getattr(user, "multi_rl_module_class", MultiRLModule),
        rl_module_specs={
            module_id: module_spec(config, module_id, spaces.get(module_id))
            for module_id in [*module_ids(config), *extra]
        },
    )


def module_spec(
    config: AlgorithmConfig, module_id: ModuleID, spaces: tuple | None, own: RLModuleSpec | None = None
) -> RLModuleSpec:
    """The spec of `module_id`: `own` (default: `policies[module_id]` when a spec) over the config's spec for
    it; `spaces` (those of its agents) win over both."""
    spec = config.get_rl_module_spec(spaces=spaces, module_id=module_id)
    policies = config.policies
    if own is None and isinstance(policies, Mapping):
        own = policies.get(module_id)
    if isinstance(own, RLModuleSpec):
        spec = RLModuleSpec(**{**vars(spec), **{k: v for k, v in vars(own).items() if v is not None}})
        if spaces is not None:
            spec.observation_space, spec.action_space = spaces
    if spec.observation_space is None or spec.action_space is None:
        raise ConfigError(
            f"Module {module_id!r} has no observation/action space: no agent of the env's possible_agents "
            f"maps to it and its RLModuleSpec has none. Fix: map an agent to {module_id!r} in "
            "policy_mapping_fn, or give RLModuleSpec(observation_space=..., action_space=...) for it."
        )
    return spec
