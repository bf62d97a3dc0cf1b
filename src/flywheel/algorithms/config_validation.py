"""Checks behind `AlgorithmConfig.validate()`: each returns a problem line (with its fix) or None.

Problems are collected, not raised one by one, so a user fixes a config in one round.
"""

from __future__ import annotations

import difflib
import numbers
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from flywheel.callbacks import HOOK_NAMES, RLlibCallback
from flywheel.core.rl_module.default_model_config import model_config_problems
from flywheel.offline.options import SEED_KEY, SHUFFLE_KEY, iter_batches_options
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig

SCHEDULE_EXAMPLE = "[[0, 3e-4], [100_000, 1e-5]]"
LOG_LEVELS = ("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL")
PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")


SCHEDULE_KEYWORDS = {"lr_schedule": "lr", "entropy_coeff_schedule": "entropy_coeff"}
"""RLlib's old API stack keywords for schedules -> the setting that takes the schedule itself."""


def schedule_keyword_fix(key: str, value: object, valid: Iterable[str]) -> str | None:
    """For an old-stack schedule keyword (`lr_schedule`) whose setting (`lr`) is among `valid`: that
    the setting takes the schedule itself, with the user's value as the fix; else None."""
    setting = SCHEDULE_KEYWORDS.get(key)
    if setting is None or setting not in set(valid):
        return None
    return (
        f"RLlib's new API stack (and flywheel) take the schedule in {setting!r} itself: a float, or a list of "
        f"[env_steps, value] pairs interpolated linearly. Fix: {setting}={value!r}."
    )


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to `word` (ignoring case), or None when nothing is similar.

    Of difflib's similar candidates, the one sharing the longest run of characters with `word` wins
    (then difflib's order), so a long name the user nearly typed beats a shorter one that difflib
    alone would rank first.
    """
    if not isinstance(word, str):  # e.g. an int key in a dict given to from_dict()
        return None
    by_lower = {candidate.lower(): candidate for candidate in candidates}
    word = word.lower()
    matches = difflib.get_close_matches(word, list(by_lower), n=5)
    if not matches:
        return None
    shared = [difflib.SequenceMatcher(None, word, m).find_longest_match().size for m in matches]
    return by_lower[matches[shared.index(max(shared))]]


def where(config: AlgorithmConfig, name: str) -> str:
    """How a user sets `name`: ``config.<section>(name=...)``."""
    return f"config.{config.section_of(name)}({name}=...)"


def _is_number(value: object) -> TypeGuard[float]:
    """A real number (numpy's included), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_int(value: object) -> TypeGuard[int]:
    """An integer (numpy's included), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int(config: AlgorithmConfig, name: str, minimum: int, *, allow_none: bool = False) -> str | None:
    """`name` must be an int >= minimum (or None when allowed)."""
    value = getattr(config, name)
    if (value is None and allow_none) or (_is_int(value) and value >= minimum):
        return None
    wanted = f"an int >= {minimum}" + (" or None" if allow_none else "")
    return f"{name}={value!r} must be {wanted}. Fix: pass {wanted} to {where(config, name)}."


def check_number(
    config: AlgorithmConfig, name: str, minimum: float, *, strict: bool = False, allow_none: bool = False
) -> str | None:
    """`name` must be a number >= minimum (> minimum when strict), or None when allowed."""
    value = getattr(config, name)
    if value is None and allow_none:
        return None
    if _is_number(value) and (value > minimum if strict else value >= minimum):
        return None
    wanted = f"a number {'>' if strict else '>='} {minimum}" + (" or None" if allow_none else "")
    return f"{name}={value!r} must be {wanted}. Fix: pass {wanted} to {where(config, name)}."


def check_unit_interval(config: AlgorithmConfig, name: str) -> str | None:
    """`name` must be a number in [0, 1]."""
    value = getattr(config, name)
    if _is_number(value) and 0 <= value <= 1:
        return None
    return (
        f"{name}={value!r} must be a number in [0, 1]. Fix: pass a number in [0, 1] to {where(config, name)}."
    )


def check_bool(config: AlgorithmConfig, name: str) -> str | None:
    """`name` must be True or False."""
    value = getattr(config, name)
    if isinstance(value, bool):
        return None
    return f"{name}={value!r} must be True or False. Fix: pass a bool to {where(config, name)}."


def check_choice(config: AlgorithmConfig, name: str, choices: tuple[str, ...]) -> str | None:
    """`name` must be one of `choices`; the fix suggests the closest one."""
    value = getattr(config, name)
    if isinstance(value, str) and value in choices:
        return None
    suggestion = (closest(value, choices) if isinstance(value, str) else None) or choices[0]
    example = where(config, name).replace("...", repr(suggestion))
    return f"{name}={value!r} is not one of {list(choices)}. Fix: use one of them, e.g. {example}."


def check_optional_choice(config: AlgorithmConfig, name: str, choices: tuple[str, ...]) -> str | None:
    """`name` must be None or one of `choices`."""
    if getattr(config, name) is None:
        return None
    problem = check_choice(config, name, choices)
    return problem and problem.replace(
        f"is not one of {list(choices)}", f"is not None nor one of {list(choices)}"
    )


def check_optional_callable(config: AlgorithmConfig, name: str) -> str | None:
    """`name` must be None or callable."""
    value = getattr(config, name)
    if value is None or callable(value):
        return None
    return f"{name}={value!r} is not callable. Fix: pass a function (or None) to {where(config, name)}."


def check_optional_class(config: AlgorithmConfig, name: str) -> str | None:
    """`name` must be None or a class."""
    value = getattr(config, name)
    if value is None or isinstance(value, type):
        return None
    return f"{name}={value!r} is not a class. Fix: pass the class itself (not an instance) to {where(config, name)}."


def check_schedule(config: AlgorithmConfig, name: str, minimum: float, *, strict: bool = False) -> str | None:
    """`name` is a number (> / >= minimum) or a piecewise-linear schedule with values >= minimum."""
    value = getattr(config, name)
    if not isinstance(value, list | tuple):
        return check_number(config, name, minimum, strict=strict)
    fix = f"Fix: pass a number or a list of [step, value] pairs such as {SCHEDULE_EXAMPLE} to {where(config, name)}."
    pairs_ok = all(isinstance(p, list | tuple) and len(p) == 2 for p in value)
    if not value or not pairs_ok or not all(_is_int(s) and _is_number(v) for s, v in value):
        return f"{name}={value!r} is neither a number nor a schedule of [int step, number value] pairs. {fix}"
    steps = [step for step, _ in value]
    if steps[0] != 0:
        return f"{name}={value!r} must start at step 0 (got {steps[0]}). {fix}"
    if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
        return f"{name}={value!r} has steps that do not strictly increase: {steps}. {fix}"
    low = min(v for _, v in value)
    if low < minimum:
        return f"{name}={value!r} has a value below {minimum} ({low}). {fix}"
    return None


def _check_env(config: AlgorithmConfig) -> list[str | None]:
    problems: list[str | None] = []
    # A custom runner may have no env (EnvRunnerServerForExternalInference: the env runs elsewhere).
    if config.env is None and config.env_runner_cls is None:
        problems.append(
            "env is not set. Fix: call config.environment('CartPole-v1') (or a registered name, Env class or creator)."
        )
    elif config.env is not None and not (isinstance(config.env, str) or callable(config.env)):
        problems.append(
            f"env={config.env!r} ({type(config.env).__name__}) is not an env id, name, class or creator. "
            "Fix: pass a gymnasium id, a name given to register_env(), an Env subclass or a callable to config.environment()."
        )
    if not isinstance(config.env_config, Mapping):
        problems.append(
            f"env_config={config.env_config!r} is not a dict. Fix: pass a dict to {where(config, 'env_config')}."
        )
    problems.append(_check_env_wrappers(config))
    problems.append(check_bool(config, "normalize_actions"))
    problems.append(check_bool(config, "clip_actions"))
    problems.append(check_bool(config, "render_env"))
    if config.render_env is True and config.is_multi_agent:
        problems.append(
            "render_env=True records videos of single-agent envs only, but this config is multi-agent. "
            "Fix: record a single-agent version of the env, or set render_env=False."
        )
    clip = config.clip_rewards
    if not (clip is None or isinstance(clip, bool) or (_is_number(clip) and clip > 0)):
        problems.append(
            f"clip_rewards={clip!r} must be None, a bool or a number > 0. Fix: pass e.g. {where(config, 'clip_rewards').replace('...', '1.0')}."
        )
    return problems


def _check_env_wrappers(config: AlgorithmConfig) -> str | None:
    wrappers = config.env_wrappers
    fix = f"Fix: pass a list of wrapper classes or functions wrapper(env) -> env to {where(config, 'env_wrappers')}"
    if not isinstance(wrappers, list | tuple):
        return f"env_wrappers={wrappers!r} is not a list. {fix}, e.g. [gymnasium.wrappers.ClipAction]."
    bad = [w for w in wrappers if not callable(w)]
    if bad:
        return f"env_wrappers holds {', '.join(map(repr, bad))}, which is not callable. {fix}."
    if wrappers and config.is_multi_agent:
        return "env_wrappers wrap single-agent gymnasium envs, but this config is multi-agent. Fix: wrap the envs inside your MultiAgentEnv, or drop env_wrappers."
    mode = config.gym_env_vectorize_mode
    if wrappers and mode in ("vector_entry_point", "envpool"):
        return (
            f"env_wrappers wrap each sub-env, but gym_env_vectorize_mode={mode!r} builds none. "
            "Fix: use gym_env_vectorize_mode='sync' or 'async', or drop env_wrappers."
        )
    return None


def _check_vectorize_mode(config: AlgorithmConfig) -> str | None:
    """RLlib's modes (strings or ``gymnasium.VectorizeMode`` members) or "envpool", which steps EnvPool's
    own single-agent envs only."""
    from flywheel.env.make import VECTORIZE_MODES, registered_envs

    mode = getattr(config.gym_env_vectorize_mode, "value", config.gym_env_vectorize_mode)
    if mode not in VECTORIZE_MODES:
        return check_choice(config, "gym_env_vectorize_mode", VECTORIZE_MODES)
    if mode != "envpool":
        return None
    fix = (
        "Fix: use gym_env_vectorize_mode='sync' (or 'async') for it, or an EnvPool id such as 'CartPole-v1'."
    )
    if config.is_multi_agent:
        return f"gym_env_vectorize_mode='envpool' steps single-agent EnvPool envs, but this config is multi-agent. {fix}"
    env = config.env
    if callable(env) or (isinstance(env, str) and env in registered_envs()):
        return (
            f"gym_env_vectorize_mode='envpool' steps EnvPool's own C++ envs (ids of envpool.list_all_envs()), "
            f"but env={env!r} is a custom Python env. {fix}"
        )
    return None


def _check_env_runners(config: AlgorithmConfig) -> list[str | None]:
    fragment = config.rollout_fragment_length
    return [
        check_int(config, "num_env_runners", 0),
        check_int(config, "num_envs_per_env_runner", 1),
        _check_vectorize_mode(config),
        None
        if fragment == "auto" or (_is_int(fragment) and fragment >= 1)
        else (
            f"rollout_fragment_length={fragment!r} must be 'auto' or an int >= 1. "
            f"Fix: pass 'auto' or an int >= 1 to {where(config, 'rollout_fragment_length')}."
        ),
        check_choice(config, "batch_mode", ("truncate_episodes", "complete_episodes")),
        check_bool(config, "explore"),
        check_optional_callable(config, "env_to_module_connector"),
        check_optional_callable(config, "module_to_env_connector"),
        check_int(config, "episode_lookback_horizon", 0),
        check_number(config, "sample_timeout_s", 0, strict=True, allow_none=True),
        check_int(config, "max_requests_in_flight_per_env_runner", 1),
        check_number(config, "num_cpus_per_env_runner", 0),
        check_bool(config, "normalize_rewards"),
        None
        if not (config.normalize_rewards is True and config.is_multi_agent)
        else (
            "normalize_rewards=True works on single-agent runs only (the piece follows one reward stream "
            "per sub-env). Fix: normalize rewards inside the multi-agent env, or pass normalize_rewards=False "
            f"to {where(config, 'normalize_rewards')}."
        ),
    ]


def _check_learners_and_training(config: AlgorithmConfig) -> list[str | None]:
    problems = [
        check_int(config, "num_learners", 0),
        check_number(config, "num_cpus_per_learner", 0),
        check_number(config, "num_gpus_per_learner", 0),
        check_optional_class(config, "learner_class"),
        check_optional_callable(config, "learner_connector"),
        check_unit_interval(config, "gamma"),
        check_schedule(config, "lr", 0, strict=True) if config.uses_lr else None,
        check_number(config, "adam_epsilon", 0, strict=True),
        check_number(config, "grad_clip", 0, strict=True, allow_none=True),
        check_choice(config, "grad_clip_by", ("value", "norm", "global_norm")),
        check_int(config, "train_batch_size", 1) if config.uses_train_batch_size else None,
        check_optional_class(config, "env_runner_cls"),
        _check_cpu_runners(config),
        check_int(config, "train_batch_size_per_learner", 1, allow_none=True),
        check_int(config, "minibatch_size", 1, allow_none=True),
        check_int(config, "num_epochs", 1),
    ]
    per_learner, minibatch = config.train_batch_size_per_learner, config.minibatch_size
    name = setting = "train_batch_size_per_learner"
    if per_learner is None and _is_int(config.train_batch_size) and _is_int(config.num_learners):
        per_learner, setting = config.learner_train_batch_size, "train_batch_size"
        name = setting if config.num_learners <= 1 else "train_batch_size / num_learners"
    if _is_int(per_learner) and _is_int(minibatch) and minibatch > per_learner:
        problems.append(
            f"minibatch_size={minibatch} is larger than {name}={per_learner}. "
            f"Fix: lower minibatch_size or raise {setting} in config.training()."
        )
    return problems


def _check_multi_agent(config: AlgorithmConfig) -> list[str | None]:
    policies = config.policies
    if not isinstance(policies, Mapping | set | frozenset | list | tuple) or not policies:
        return [
            f"policies={policies!r} must be a non-empty set/list of module ids or a dict id -> RLModuleSpec. "
            "Fix: pass e.g. config.multi_agent(policies={'p0', 'p1'})."
        ]
    not_ids = [module_id for module_id in policies if not isinstance(module_id, str)]
    if not_ids:
        return [
            f"policies={policies!r} holds {not_ids[0]!r}, which is not a module id (module ids are strings). "
            "Fix: pass e.g. config.multi_agent(policies={'p0', 'p1'})."
        ]
    problems = [check_optional_callable(config, "policy_mapping_fn")]
    ids = set(policies)
    if ids != {DEFAULT_MODULE_ID} and config.policy_mapping_fn is None:
        problems.append(
            f"policies={sorted(ids)} needs a policy_mapping_fn to know which module acts for which agent. "
            "Fix: pass policy_mapping_fn=lambda agent_id, episode, **kw: <module id> to config.multi_agent()."
        )
    to_train = config.policies_to_train
    if not (to_train is None or callable(to_train) or _is_id_collection(to_train)):
        problems.append(
            f"policies_to_train={to_train!r} is not a list of module ids or a function (module_id, batch) -> bool. "
            "Fix: pass e.g. config.multi_agent(policies_to_train=['p0'])."
        )
    elif to_train is not None and not callable(to_train):
        for module_id in sorted(set(to_train) - ids):
            problems.append(
                f"policies_to_train contains {module_id!r}, which is not in policies {sorted(ids)}. "
                "Fix: add it to config.multi_agent(policies=...) or remove it from policies_to_train."
            )
    problems.append(check_choice(config, "count_steps_by", ("env_steps", "agent_steps")))
    return problems


def _is_id_collection(value: Any) -> bool:
    return isinstance(value, list | tuple | set | frozenset) and all(isinstance(item, str) for item in value)


def _check_module_and_evaluation(config: AlgorithmConfig) -> list[str | None]:
    problems: list[str | None] = []
    spec = config.rl_module_spec
    if spec is not None and not hasattr(spec, "build"):
        problems.append(
            f"rl_module_spec={spec!r} is not an RLModuleSpec. Fix: pass RLModuleSpec(module_class=...) to {where(config, 'rl_module_spec')}."
        )
    problems += _check_model_configs(config) + _check_module_ids(config)
    problems += [
        check_int(config, "evaluation_interval", 1, allow_none=True),
        _check_evaluation_duration(config),
        check_int(config, "evaluation_auto_duration_min_env_steps_per_sample", 1),
        check_int(config, "evaluation_auto_duration_max_env_steps_per_sample", 1),
        check_choice(config, "evaluation_duration_unit", ("episodes", "timesteps")),
        check_int(config, "evaluation_num_env_runners", 0),
        check_bool(config, "evaluation_force_reset_envs_before_iteration"),
        check_optional_callable(config, "custom_evaluation_function"),
    ]
    if config.evaluation_parallel_to_training and config.evaluation_num_env_runners == 0:
        problems.append(
            "evaluation_parallel_to_training=True needs remote evaluation runners (evaluation_num_env_runners "
            "is 0): the evaluation samples while this process trains. Fix: "
            "config.evaluation(evaluation_num_env_runners=1), or evaluation_parallel_to_training=False."
        )
    overrides = config.evaluation_config
    if overrides is not None and not isinstance(overrides, Mapping):
        problems.append(
            f"evaluation_config={overrides!r} is not a dict. Fix: pass AlgorithmConfig.overrides(explore=False) or a dict to config.evaluation()."
        )
    elif overrides:
        known = config.setting_names()
        for key in [k for k in overrides if k not in known]:
            hint = closest(key, known)
            problems.append(
                f"evaluation_config has an unknown setting {key!r}. Fix: use a setting name"
                + (f", e.g. {hint!r}." if hint else f" ({type(config).__name__}.setting_names() lists them).")
            )
    return problems


def _check_evaluation_duration(config: AlgorithmConfig) -> str | None:
    """An int >= 1, or "auto" when evaluation runs parallel to training (RLlib refuses it otherwise)."""
    if config.evaluation_duration != "auto":
        return check_int(config, "evaluation_duration", 1)
    if config.evaluation_parallel_to_training:
        return None
    return (
        "evaluation_duration='auto' means: evaluate for as long as the parallel training step takes, but "
        "evaluation_parallel_to_training is False. Fix: config.evaluation(evaluation_parallel_to_training=True, "
        "evaluation_num_env_runners=1), or an int evaluation_duration."
    )


def _check_model_configs(config: AlgorithmConfig) -> list[str]:
    """`model_config` (and the model_config of user specs) where flywheel's default modules read them;
    custom module classes take any keys, as in RLlib."""
    user = config.rl_module_spec
    specs = dict(user.rl_module_specs) if hasattr(user, "rl_module_specs") else {None: user}
    specs = {mid: spec if hasattr(spec, "module_class") else None for mid, spec in specs.items()}
    if isinstance(config.policies, Mapping):
        specs.update({mid: spec for mid, spec in config.policies.items() if hasattr(spec, "module_class")})
    default = {mid: spec for mid, spec in specs.items() if _uses_default_model(spec)}
    problems = model_config_problems(config.model_config, "model_config", closest) if default else []
    for mid, spec in default.items():
        if spec is not None and spec.model_config is not None:
            name = "rl_module_spec" if mid is None else f"the spec of module {mid!r}"
            problems += model_config_problems(spec.model_config, f"{name}.model_config", closest)
    return problems


def _uses_default_model(spec: Any) -> bool:
    module_class = getattr(spec, "module_class", None)
    return module_class is None or getattr(module_class, "uses_default_model_config", False)


def _check_module_ids(config: AlgorithmConfig) -> list[str]:
    """A MultiRLModuleSpec's module ids must be policies: others would be silently never built."""
    spec = config.rl_module_spec
    if not hasattr(spec, "rl_module_specs") or not isinstance(
        config.policies, Mapping | set | frozenset | list | tuple
    ):
        return []
    from flywheel.core.rl_module.multi_rl_module import MultiRLModule  # loaded with the spec already

    if getattr(spec, "multi_rl_module_class", MultiRLModule) is not MultiRLModule:
        return []  # a custom container routes data to its own modules (e.g. a shared encoder)
    policies = set(config.policies)
    extra = sorted(
        mid
        for mid, sub in spec.rl_module_specs.items()
        if mid not in policies and not getattr(sub, "learner_only", False)
    )
    if not extra:
        return []
    return [
        f"rl_module_spec is a MultiRLModuleSpec with the module ids {sorted(spec.rl_module_specs)}, but policies are "
        f"{sorted(policies)}, so {extra} would never be built or trained. Fix: name them in "
        "config.multi_agent(policies=..., policy_mapping_fn=...) (a multi-agent env maps its agents to them), "
        "or remove them from the MultiRLModuleSpec."
    ]


def _check_attributes(config: AlgorithmConfig) -> list[str]:
    """Attributes set on the config that are no setting (`config.lrr = 0.1`): a typo would else be ignored."""
    try:
        declared = set(vars(type(config)()))
    except TypeError:  # a config subclass that cannot be built without arguments: nothing to compare with
        return []
    problems = []
    for name in [n for n in vars(config) if not n.startswith("_") and n not in declared]:
        hint = closest(name, config.setting_names())
        fix = (
            f"Did you mean {hint!r}? Fix: {where(config, hint)}."
            if hint and config.section_of(hint)
            else f"Fix: remove it ({type(config).__name__}.setting_names() lists the settings; a config subclass "
            "declares its own attributes in __init__)."
        )
        problems.append(
            f"{name}={getattr(config, name)!r} was set on the config, but {type(config).__name__} has no setting "
            f"{name!r}. {fix}"
        )
    return problems


def check_offline_input(config: AlgorithmConfig) -> str | None:
    """Offline algorithms (BC, MARWIL, CQL) need `input_`."""
    if config.input_ is not None:
        return None
    return (
        f"{type(config).__name__} trains on offline data, but input_ is None. Fix: "
        "config.offline_data(input_=folder recorded with config.offline_data(output=...))."
    )


def check_iter_batches_kwargs(config: AlgorithmConfig) -> str | None:
    """`iter_batches_kwargs` is a dict; with the algorithm's defaults, its shuffle keys are valid."""
    kwargs = config.iter_batches_kwargs
    if not isinstance(kwargs, dict):
        return (
            f"iter_batches_kwargs={kwargs!r} must be a dict (e.g. {{{SHUFFLE_KEY!r}: 10_000}}). Fix: pass a "
            f"dict to {where(config, 'iter_batches_kwargs')}."
        )
    options = iter_batches_options(config)
    size, seed, ahead = options.get(SHUFFLE_KEY), options.get(SEED_KEY), options.get("prefetch_batches", 0)
    if not (_is_int(ahead) and ahead >= 0):
        return (
            f"iter_batches_kwargs['prefetch_batches']={ahead!r} must be an int >= 0 (train batches read ahead). "
            "Fix: config.offline_data(iter_batches_kwargs={'prefetch_batches': 1}), or leave it out."
        )
    if size is not None and not (_is_int(size) and size >= 1):
        return (
            f"iter_batches_kwargs[{SHUFFLE_KEY!r}]={size!r} must be an int >= 1 (rows in the shuffle buffer) "
            f"or None (no shuffling). Fix: config.offline_data(iter_batches_kwargs={{{SHUFFLE_KEY!r}: 10_000}})."
        )
    if seed is not None and not _is_int(seed):
        return (
            f"iter_batches_kwargs[{SEED_KEY!r}]={seed!r} must be an int or None (None: the config's seed). "
            f"Fix: config.offline_data(iter_batches_kwargs={{{SEED_KEY!r}: 0}})."
        )
    if size is not None and config.input_read_episodes is True:
        return (
            f"iter_batches_kwargs[{SHUFFLE_KEY!r}]={size!r} shuffles single steps, but input_read_episodes=True "
            "reads files with one row per episode chunk, whose steps stay together. Fix: record one row per "
            "step (config.offline_data(output_write_episodes=False)) and read those, or train on whole "
            f"chunks with config.offline_data(iter_batches_kwargs={{{SHUFFLE_KEY!r}: None}})."
        )
    return None


def _check_offline_data(config: AlgorithmConfig) -> list[str | None]:
    problems = [
        check_bool(config, "output_write_episodes"),
        check_bool(config, "input_read_episodes"),
        check_bool(config, "input_ignore_corrupt_files"),
        check_bool(config, "actions_in_input_normalized"),
        check_int(config, "output_max_rows_per_file", 1, allow_none=True),
        check_int(config, "dataset_num_iters_per_learner", 1, allow_none=True),
        check_iter_batches_kwargs(config),
    ]
    for name, value in (("output", config.output), ("input_", config.input_)):
        paths = value if isinstance(value, list | tuple) else [value]
        if value is not None and not (paths and all(isinstance(p, str | os.PathLike) for p in paths)):
            problems.append(
                f"{name}={value!r} must be a path or a list of paths (or None). Fix: pass a folder to "
                f"{where(config, name)}."
            )
    return problems


def _check_rest(config: AlgorithmConfig) -> list[str | None]:
    problems = [
        check_int(config, "max_num_env_runner_restarts", 0),
        check_number(config, "delay_between_env_runner_restarts_s", 0),
        check_int(config, "metrics_num_episodes_for_smoothing", 1),
        check_number(config, "num_cpus_for_main_process", 0, strict=True),
        check_choice(config, "placement_strategy", PLACEMENT_STRATEGIES),
        check_number(config, "min_time_s_per_iteration", 0, allow_none=True),
        check_int(config, "min_sample_timesteps_per_iteration", 0, allow_none=True),
        check_int(config, "seed", 0, allow_none=True),
        check_choice(config, "log_level", LOG_LEVELS),
    ]
    cls = config.callbacks_class
    if cls is not None and not (issubclass(cls, RLlibCallback) if isinstance(cls, type) else callable(cls)):
        problems.append(
            f"callbacks_class={cls!r} is not an RLlibCallback subclass (nor a callable that makes one, e.g. "
            "functools.partial(MyCallback, arg=...)). Fix: subclass flywheel.RLlibCallback and pass the class "
            "to config.callbacks()."
        )
    for name in HOOK_NAMES:
        hook = getattr(config, name)
        if (
            hook is not None
            and not callable(hook)
            and not (isinstance(hook, list | tuple) and all(map(callable, hook)))
        ):
            problems.append(
                f"{name}={hook!r} is not a function or a list of functions. Fix: pass a function to config.callbacks({name}=...)."
            )
    return problems


_SECTION_CHECKS: tuple[Callable[[AlgorithmConfig], Sequence[str | None]], ...] = (
    _check_attributes,
    _check_env,
    _check_env_runners,
    _check_learners_and_training,
    _check_multi_agent,
    _check_module_and_evaluation,
    _check_offline_data,
    _check_rest,
)


def common_problems(config: AlgorithmConfig) -> list[str]:
    """Every problem of the settings all algorithms share, in section order."""
    return [problem for check in _SECTION_CHECKS for problem in check(config) if problem]


def _check_cpu_runners(config: AlgorithmConfig) -> str | None:
    """num_gpus_per_env_runner is RLlib's; flywheel's runners act on the CPU."""
    if config.num_gpus_per_env_runner == 0:
        return None
    return (
        f"num_gpus_per_env_runner={config.num_gpus_per_env_runner!r}: flywheel's env runners act on the CPU "
        "(one small forward pass per step). Fix: drop it, or put GPUs on the learners with "
        "config.learners(num_gpus_per_learner=1)."
    )
