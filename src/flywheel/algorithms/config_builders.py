"""Helpers behind the config's builders: module-spec merging, connector-pipeline assembly and the
env runner class.

Everything connector- and module-related is imported on first use, so building or validating a
config never imports torch.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flywheel.core.rl_module.default_model_config import as_model_config_dict
from flywheel.env.make import INPUT_ENV_SINGLE_SPACES, INPUT_ENV_SPACES
from flywheel.errors import ConfigError, ConnectorError
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.core.rl_module.spec import MultiRLModuleSpec, RLModuleSpec

_ENV_SPACE_KEYS = (INPUT_ENV_SPACES, INPUT_ENV_SINGLE_SPACES)
_SPEC_FIELDS = (
    "module_class", "observation_space", "action_space", "inference_only", "learner_only", "catalog_class",
    "load_state_path",
)  # fmt: skip


def merge_module_specs(
    default: RLModuleSpec, user: RLModuleSpec | None, model_config: dict, spaces: tuple
) -> RLModuleSpec:
    """`default` updated by `user`'s fields that are not None, then by `spaces` (obs, act) not None.

    model_config: default spec's < `model_config` (the config's) < user spec's.
    """
    from flywheel.core.rl_module.spec import RLModuleSpec

    specs = (default,) if user is None else (user, default)
    merged: dict[str, Any] = {
        name: next((getattr(s, name) for s in specs if getattr(s, name) is not None), None)
        for name in _SPEC_FIELDS
    }
    for name, space in zip(("observation_space", "action_space"), spaces, strict=True):
        if space is not None:
            merged[name] = space
    merged["inference_only"] = bool(merged["inference_only"])
    merged["learner_only"] = bool(merged["learner_only"])
    parts = (default.model_config, model_config, user.model_config if user is not None else None)
    merged_model_config = {
        key: value for part in parts for key, value in (as_model_config_dict(part) or {}).items()
    }
    return RLModuleSpec(**merged, model_config=merged_model_config)


def hook_pieces(hook: Callable | None, hook_name: str, *args: object) -> list:
    """The pieces a connector hook returns (a piece, a list of pieces, or a pipeline), as a flat list."""
    if hook is None:
        return []
    from flywheel.connectors.connector import ConnectorV2
    from flywheel.connectors.pipeline import ConnectorPipelineV2

    result = hook(*args[: _positional_capacity(hook, len(args))])
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


def atari_frame_stacking(config_env: Any, pieces: list, *, as_learner_connector: bool) -> list:
    """`[FrameStacking(num_frames=4)]` when `config_env` is an Atari id (whose frames flywheel stacks in
    the pipelines, see `flywheel.env.atari`) and none of `pieces` stacks frames already; else `[]`."""
    from flywheel.connectors import common, env_to_module, learner
    from flywheel.env.atari import ATARI_FRAME_STACK
    from flywheel.env.make import is_atari_env

    if not is_atari_env(config_env) or any(isinstance(piece, common.FrameStacking) for piece in pieces):
        return []
    stacking = learner.FrameStacking if as_learner_connector else env_to_module.FrameStacking
    return [stacking(num_frames=ATARI_FRAME_STACK)]


def _positional_capacity(hook: Callable, available: int) -> int:
    """How many of the `available` positional arguments `hook` takes: RLlib also calls hooks written
    for its older, shorter signatures (`lambda env: piece`) with just the leading ones."""
    try:
        parameters = inspect.signature(hook).parameters.values()
    except (TypeError, ValueError):  # no signature to read (some builtins): pass everything
        return available
    kinds = [p.kind for p in parameters]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return available
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return min(available, sum(kind in positional for kind in kinds))


def env_spaces(env: Any, spaces: tuple | dict | None) -> tuple[Any, Any]:
    """The single-env `(observation_space, action_space)`: `spaces` if given (a pair, or RLlib's dict
    with `"__env_single__"`), else the (vector) env's single spaces."""
    if isinstance(spaces, dict):
        spaces = spaces.get(INPUT_ENV_SINGLE_SPACES)
    return spaces if spaces is not None else (env.single_observation_space, env.single_action_space)


def hook_spaces(env: Any, spaces: tuple | dict | None) -> dict[str, tuple]:
    """The `spaces` argument of the env-to-module / module-to-env hooks, as RLlib passes it:
    `{"__env__": (vector env's spaces), "__env_single__": (one env's spaces)}`."""
    single = env_spaces(env, spaces)
    vector = (getattr(env, "observation_space", single[0]), getattr(env, "action_space", single[1]))
    return {INPUT_ENV_SPACES: vector, INPUT_ENV_SINGLE_SPACES: single}


def make_pipeline(observation_space: Any, action_space: Any, pieces: list) -> ConnectorPipelineV2:
    """A ConnectorPipelineV2 of `pieces` with the given input spaces."""
    from flywheel.connectors.pipeline import ConnectorPipelineV2

    return ConnectorPipelineV2(
        input_observation_space=observation_space, input_action_space=action_space, connectors=pieces
    )


def learner_module_spec(config: AlgorithmConfig, env: Any = None, spaces: Any = None) -> MultiRLModuleSpec:
    """The module spec `config.build_learner(env=..., spaces=...)` trains.

    Spaces come from `spaces` (`(observation_space, action_space)`, or RLlib's `{module_id: (obs,
    act)}` with `"__env_single__"` for the env's), else from `env` (a gymnasium or multi-agent env,
    or a vector env), else from `config.observation_space` / `action_space`, else from one env made
    from `config.env` and closed again.
    """
    from flywheel.env.multi_agent_env import MultiAgentEnv
    from flywheel.env_runners.multi_agent_modules import module_spaces, multi_rl_module_spec

    if spaces is None and env is None and None in (config.observation_space, config.action_space):
        env = _env_from_config(config)
        try:
            return learner_module_spec(config, env=env)
        finally:
            env.close()
    if config.is_multi_agent:
        if isinstance(spaces, dict):
            per_module = {mid: pair for mid, pair in spaces.items() if mid not in _ENV_SPACE_KEYS}
        elif isinstance(env, MultiAgentEnv):
            per_module = module_spaces(config, env.possible_agents, env.observation_spaces, env.action_spaces)
        else:
            raise ConfigError(
                f"build_learner() for a multi-agent config needs a MultiAgentEnv or spaces={{module_id: "
                f"(observation_space, action_space)}}, got env={env!r}, spaces={spaces!r}."
            )
        return multi_rl_module_spec(config, per_module)
    return single_agent_learner_spec(config, spaces, env=env)


def single_agent_learner_spec(
    config: AlgorithmConfig, spaces: Any = None, *, env: Any = None
) -> MultiRLModuleSpec:
    """What a single-agent config's learners train: `"default_policy"`, plus every other module of a
    `MultiRLModuleSpec` given as `rl_module_spec` (e.g. a `learner_only` curiosity model trained next
    to the policy, RLlib's pattern), built for the same spaces, in the spec's container class."""
    from flywheel.core.rl_module.multi_rl_module import MultiRLModule
    from flywheel.core.rl_module.spec import MultiRLModuleSpec

    user = config.rl_module_spec
    module_ids = [
        DEFAULT_MODULE_ID,
        *(mid for mid in getattr(user, "rl_module_specs", {}) if mid != DEFAULT_MODULE_ID),
    ]
    return MultiRLModuleSpec(
        multi_rl_module_class=getattr(user, "multi_rl_module_class", MultiRLModule),
        rl_module_specs={mid: config.get_rl_module_spec(spaces, mid, env=env) for mid in module_ids},
    )


def module_spaces(env: Any, spaces: tuple | dict | None, module_id: str = DEFAULT_MODULE_ID) -> tuple | None:
    """`(observation_space, action_space)` for a module: `spaces` (a pair, or RLlib's dict by module
    id with `"__env_single__"` as the fallback), else `env`'s (one env's for a vector env), else None."""
    if isinstance(spaces, dict):
        return spaces.get(module_id, spaces.get(INPUT_ENV_SINGLE_SPACES))
    if spaces is None and env is not None:
        return (
            getattr(env, "single_observation_space", env.observation_space),
            getattr(env, "single_action_space", env.action_space),
        )
    return spaces


def _env_from_config(config: AlgorithmConfig) -> Any:
    from flywheel.env.make import EnvContext, make_env_creator, wrapped_creator

    if config.env is None:
        raise ConfigError(
            "build_learner() needs spaces for the module, but got no env, no spaces, and the config names "
            "no env or observation/action spaces. Fix: pass env=... or spaces=(observation_space, "
            "action_space), or set config.environment(env=...)."
        )
    if config.gym_env_vectorize_mode == "envpool":  # an EnvPool id: its spaces, without building a pool
        from flywheel.env.envpool_vector import EnvPoolVectorEnv

        return EnvPoolVectorEnv(config.env, config.env_config)
    creator = wrapped_creator(make_env_creator(config.env, config.env_config), config.env_wrappers)
    return creator(EnvContext(config.env_config))


def runner_class(config: AlgorithmConfig) -> type:
    """`config.env_runner_cls` when set, else `MultiAgentEnvRunner` for multi-agent configs
    (`config.is_multi_agent`) and `SingleAgentEnvRunner` for the others."""
    if config.env_runner_cls is not None:
        return config.env_runner_cls
    if config.is_multi_agent:
        from flywheel.env_runners.multi_agent import MultiAgentEnvRunner

        return MultiAgentEnvRunner
    from flywheel.env_runners.single_agent import SingleAgentEnvRunner

    return SingleAgentEnvRunner
