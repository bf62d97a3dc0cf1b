"""Turn whatever a user passes as ``env`` into gymnasium envs and vector envs.

A config names its env in one of four ways: a name given to :func:`register_env`, a
gymnasium id, a ``gymnasium.Env`` subclass, or a callable. :func:`make_env_creator` resolves
that once, at build time, into a creator ``creator(env_context) -> gymnasium.Env``, so a typo
fails before any process or sub-env is started. :func:`make_vector_env` then builds the
gymnasium vector env the runners step, one sub-env per creator call, each told its
``worker_index`` and ``vector_index`` through an :class:`EnvContext`.
"""

from __future__ import annotations

import contextlib
import difflib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import gymnasium as gym

from flywheel.compat import tune_registered_env
from flywheel.env.atari import is_atari_spec, make_atari
from flywheel.env.gym_ids import gym_spec
from flywheel.env.recording import record_sub_env
from flywheel.env.sync_vector_env import FastSyncVectorEnv
from flywheel.errors import EnvError

__all__ = [
    "INPUT_ENV_SINGLE_SPACES",
    "INPUT_ENV_SPACES",
    "SUB_ENV_RESTARTED",
    "VECTORIZE_MODES",
    "EnvContext",
    "is_atari_env",
    "make_env",
    "make_env_creator",
    "make_vector_env",
    "module_to_import",
    "register_env",
    "seed_for",
    "vectorize_mode_name",
    "wrapped_creator",
]

EnvCreator = Callable[["EnvContext"], gym.Env]

VECTORIZE_MODES: tuple[str, ...] = ("sync", "async", "vector_entry_point", "envpool")
"""The valid ``gym_env_vectorize_mode`` values: gymnasium's (strings or ``gymnasium.VectorizeMode``
members) and ``"envpool"`` (`flywheel.env.envpool_vector`)."""

INPUT_ENV_SPACES = "__env__"
"""Key of the vector env's `(observation_space, action_space)` in a spaces dict (RLlib's name): what
runners' `get_spaces()` return and the connector hooks receive."""
INPUT_ENV_SINGLE_SPACES = "__env_single__"
"""Key of one env's `(observation_space, action_space)` in a spaces dict (RLlib's name)."""

SUB_ENV_RESTARTED = "flywheel_sub_env_restarted"
"""Info key a sub-env sets (to ``True``) when it failed and was rebuilt; see :func:`make_vector_env`."""

_REGISTRY: dict[str, EnvCreator] = {}


_HOW_TO_PASS = (
    "Pass a gymnasium id, a name given to flywheel.register_env(name, creator), "
    "an Env subclass or a callable."
)


class EnvContext(dict):
    """The user's ``env_config`` dict, plus where the env being built runs.

    Creators and env classes receive it instead of the bare dict, so an env can vary with the
    runner (``worker_index``: 0 for the local runner, 1..``num_workers`` for remote ones) and
    with its slot in the vector env (``vector_index``). It stays a plain dict for everything
    else and pickles with its attributes, so it can cross process boundaries.
    """

    def __init__(
        self,
        env_config: Mapping[str, Any] | None = None,
        *,
        worker_index: int = 0,
        num_workers: int = 0,
        vector_index: int = 0,
    ) -> None:
        super().__init__(env_config or {})
        self.worker_index = worker_index
        self.num_workers = num_workers
        self.vector_index = vector_index

    def copy_with_overrides(
        self,
        worker_index: int | None = None,
        num_workers: int | None = None,
        vector_index: int | None = None,
        env_config: Mapping[str, Any] | None = None,
    ) -> EnvContext:
        """Returns a new context; every argument left at ``None`` keeps this context's value."""
        return EnvContext(
            dict(self) if env_config is None else env_config,
            worker_index=self.worker_index if worker_index is None else worker_index,
            num_workers=self.num_workers if num_workers is None else num_workers,
            vector_index=self.vector_index if vector_index is None else vector_index,
        )

    def __repr__(self) -> str:
        return (
            f"EnvContext({dict.__repr__(self)}, worker_index={self.worker_index}, "
            f"num_workers={self.num_workers}, vector_index={self.vector_index})"
        )


def register_env(name: str, env_creator: EnvCreator) -> None:
    """Makes ``name`` usable wherever an env is expected; registering a name again replaces it.

    The parameter names are Ray Tune's (`register_env(name=..., env_creator=...)`). The registry is
    per process: names are resolved into their creator at build time, and the creator itself (not
    the name) travels to sub-env processes.
    """
    if not isinstance(name, str) or not callable(env_creator):
        raise EnvError(
            f"register_env expects a str name and a callable env_creator(env_config), got "
            f"{type(name).__name__} {name!r} and {type(env_creator).__name__}. "
            "Fix: register_env('my_env', lambda env_config: MyEnv(env_config))."
        )
    _REGISTRY[name] = env_creator


def registered_envs() -> dict[str, EnvCreator]:
    """A copy of the registry: every name given to `register_env` with its creator (e.g. for processes
    that start later, such as Ray Tune trials, to register them again)."""
    return dict(_REGISTRY)


def make_env_creator(env: Any, env_config: Mapping[str, Any] | None = None) -> EnvCreator:
    """Resolves ``env`` into ``creator(env_context) -> gymnasium.Env``.

    Tried in order: a registered name, a gymnasium id (``"module:Id-v0"`` imports ``module``
    first; ``"ALE/..."`` and ``"MinAtar/..."`` ids register their package's envs), a
    ``gymnasium.Env`` subclass (called as ``cls(env_context)``), any callable. A gymnasium id is
    made with ``gymnasium.make(id, **env_config)``: every key of ``env_config`` is a keyword of
    ``gymnasium.make`` (flywheel's own context, ``worker_index`` etc., rides as attributes, not
    keys). Atari ids also get DeepMind preprocessing (`flywheel.env.atari`).
    """
    if isinstance(env, str):
        if env in _REGISTRY:
            return _REGISTRY[env]
        tune_creator = _tune_registered(env)
        if tune_creator is not None:
            return tune_creator
        spec = gym_spec(env)
        if spec is None:
            raise EnvError(_unknown_env_message(env))
        return _GymMake(env, atari=is_atari_spec(spec))
    if isinstance(env, gym.Env):
        raise EnvError(
            f"Got an env instance ({type(env).__name__}), but each runner and sub-env needs its own env. "
            f"Fix: pass its class {type(env).__name__} or a callable that creates one."
        )
    if callable(env):
        return cast(EnvCreator, env)  # a user's creator: what it returns is checked when it is called
    raise EnvError(f"Cannot make an env from {env!r} (type {type(env).__name__}). {_HOW_TO_PASS}")


def _tune_registered(name: str) -> EnvCreator | None:
    """A creator registered with `ray.tune.register_env` (RLlib's registry) when this process uses Ray Tune."""
    if "ray.tune.registry" not in sys.modules:
        return None  # nothing can have registered there (and ray stays unimported)
    return tune_registered_env(name)


def make_env(env: Any, env_config: Mapping[str, Any] | None = None, *, render: bool = False) -> gym.Env:
    """One env made as runners make their sub-envs (e.g. an Atari id with its preprocessing), for
    playing a policy outside training. With `render`, gymnasium ids get ``render_mode="rgb_array"``
    (unless ``env_config`` names a render mode) and the env is wrapped to record its episodes' frames
    (`flywheel.env.recording.RecordEpisodeFrames`)."""
    creator = make_env_creator(env, env_config)
    thunk = _SubEnvThunk(creator, EnvContext(_render_config(creator, env_config, render)), record=render)
    return thunk()


def make_vector_env(
    env: Any,
    env_config: Mapping[str, Any] | None = None,
    *,
    num_envs: int = 1,
    vectorize_mode: str | gym.VectorizeMode = "sync",
    worker_index: int = 0,
    num_workers: int = 0,
    restart_failed_sub_environments: bool = False,
    render_env: bool = False,
    wrappers: Sequence[Callable] = (),
    check: Callable[[gym.Env], None] | None = None,
) -> gym.vector.VectorEnv:
    """Builds the vector env a runner steps.

    ``"sync"`` and ``"async"`` build ``num_envs`` sub-envs from the creator (in this process or
    one process each), with ``autoreset_mode=SAME_STEP``: a finished sub-env is reset within the
    same ``step()`` and its final observation is in ``infos["final_obs"]``. ``"vector_entry_point"``
    uses a gymnasium id's own vectorized implementation, which may autoreset ``NEXT_STEP``
    instead; runners read ``vector_env.metadata["autoreset_mode"]``. ``"envpool"`` steps one EnvPool
    batch of EnvPool's id ``env`` (:class:`~flywheel.env.envpool_vector.EnvPoolVectorEnv`, ``NEXT_STEP``).

    With ``restart_failed_sub_environments`` (``"sync"``/``"async"`` only), a sub-env whose
    ``reset``/``step`` raises is rebuilt from the creator and reset in place; that call returns the
    fresh reset observation (reward 0, not done) with ``info[SUB_ENV_RESTARTED] = True``, so the
    runner can drop the sub-env's episode. Off, the env is not wrapped and errors pass unchanged.

    With ``render_env`` (``"sync"``/``"async"`` only), sub-env 0 records its episodes' frames
    (`flywheel.env.recording`); gymnasium ids are then made with ``render_mode="rgb_array"`` unless
    ``env_config`` names a render mode.
    ``wrappers`` wrap every sub-env (see :func:`wrapped_creator`); ``"vector_entry_point"`` has no
    sub-envs to wrap and rejects them.

    ``check`` (e.g. :func:`flywheel.env.check_env`) runs on sub-env 0 right after it is built, in the
    process that builds it, and the sub-env is then used as it is: no env is made for checking only.
    ``"vector_entry_point"`` and ``"envpool"`` have no sub-env to check.
    """
    mode = vectorize_mode_name(vectorize_mode)
    if not isinstance(num_envs, int) or num_envs < 1:
        raise EnvError(f"num_envs must be an int >= 1, got {num_envs!r}. Fix: pass num_envs=1 or more.")
    if mode == "envpool":
        return _make_envpool(env, env_config, num_envs, wrappers, restart_failed_sub_environments, render_env)
    if wrappers and mode == "vector_entry_point":
        raise EnvError(
            "env_wrappers wrap each sub-env, but gym_env_vectorize_mode='vector_entry_point' builds no "
            "sub-envs. Fix: use gym_env_vectorize_mode='sync' (or 'async'), or drop env_wrappers."
        )
    base = make_env_creator(env, env_config)
    creator = wrapped_creator(base, wrappers)
    if mode == "vector_entry_point":
        return _make_vector_entry_point(env, creator, num_envs, env_config)
    env_config = _render_config(base, env_config, render_env)
    context = EnvContext(env_config, worker_index=worker_index, num_workers=num_workers)
    thunks = [
        _SubEnvThunk(
            creator,
            context.copy_with_overrides(vector_index=i),
            record=render_env,
            check=check if i == 0 else None,
        )
        for i in range(num_envs)
    ]
    if restart_failed_sub_environments:
        thunks = [RestartingThunk(thunk, _RestartingEnv) for thunk in thunks]
    vector_cls = FastSyncVectorEnv if mode == "sync" else gym.vector.AsyncVectorEnv
    return vector_cls(thunks, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)


def seed_for(seed: int | None, worker_index: int, num_envs: int, vector_index: int = 0) -> int | None:
    """The seed of one sub-env: ``seed + worker_index * num_envs + vector_index`` (``None`` stays ``None``).

    Distinct for every (runner, sub-env) pair of a run, and consistent with gymnasium's vector
    ``reset(seed=s)``, which seeds sub-env ``i`` with ``s + i``: resetting a runner's vector env
    with ``seed_for(seed, worker_index, num_envs)`` gives each sub-env exactly this seed.
    """
    if seed is None:
        return None
    return seed + worker_index * num_envs + vector_index


def _render_config(creator: EnvCreator, env_config: Mapping[str, Any] | None, render: bool) -> Mapping | None:
    """`env_config` with ``render_mode="rgb_array"`` added for a gymnasium id that is to render."""
    if render and isinstance(creator, _GymMake):
        return {"render_mode": "rgb_array", **(env_config or {})}
    return env_config


class _GymMake:
    """Creator for a gymnasium id: ``gymnasium.make(id, **env_context)`` (Atari ids: `make_atari`); a
    class rather than a lambda so it pickles by value."""

    def __init__(self, env_id: str, *, atari: bool = False) -> None:
        self.env_id = env_id
        self.atari = atari

    def __call__(self, env_context: EnvContext) -> gym.Env:
        gym_spec(self.env_id)  # registers namespaced ids in processes that have not seen them yet
        kwargs = dict(env_context or {})
        try:
            return make_atari(self.env_id, kwargs) if self.atari else gym.make(self.env_id, **kwargs)
        except TypeError as e:
            raise EnvError(
                f"gymnasium.make({self.env_id!r}, **env_config) with env_config={kwargs!r} raised TypeError: "
                f"{e}. flywheel passes every env_config key to gymnasium.make as a keyword argument. Fix: "
                "keep only the keywords the env accepts, or register a creator that reads the others: "
                f"register_env('my_env', lambda cfg: MyWrapper(gymnasium.make({self.env_id!r}), cfg))."
            ) from e

    def __repr__(self) -> str:
        return f"gymnasium.make({self.env_id!r})" + (" in AtariPreprocessing" if self.atari else "")


def wrapped_creator(creator: EnvCreator, wrappers: Sequence[Callable]) -> EnvCreator:
    """``creator`` whose envs come wrapped in ``wrappers`` (gymnasium wrapper classes or callables
    ``wrapper(env) -> env``, first one innermost): config.environment(env_wrappers=[...])."""
    return _WrappedCreator(creator, tuple(wrappers)) if wrappers else creator


class _WrappedCreator:
    """A creator whose envs come wrapped in ``wrappers`` (first innermost); picklable when its parts are."""

    def __init__(self, creator: EnvCreator, wrappers: tuple[Callable, ...]) -> None:
        self.creator = creator
        self.wrappers = wrappers
        self.__qualname__ = getattr(creator, "__qualname__", repr(creator))

    def __call__(self, env_context: EnvContext) -> gym.Env:
        env = self.creator(env_context)
        for wrapper in self.wrappers:
            wrapped = wrapper(env)
            if not isinstance(wrapped, gym.Env):
                name = getattr(wrapper, "__qualname__", repr(wrapper))
                raise EnvError(
                    f"env_wrappers: {name}(env) returned {type(wrapped).__name__}, expected a gymnasium.Env. "
                    "Fix: pass wrapper classes (gymnasium.wrappers.ClipAction) or functions returning the wrapped env."
                )
            env = wrapped
        return env

    def __repr__(self) -> str:
        return f"{self.creator!r} wrapped in {[getattr(w, '__qualname__', w) for w in self.wrappers]}"


class _SubEnvThunk:
    """Builds one sub-env: ``creator(context)`` (wrapped to record videos with `record`); picklable
    whenever the creator (and `check`) is. `check` runs on the first env it builds only (not on one
    rebuilt after a failure), which it closes when the check fails."""

    def __init__(
        self,
        creator: EnvCreator,
        context: EnvContext,
        *,
        record: bool = False,
        check: Callable[[gym.Env], None] | None = None,
    ) -> None:
        self.creator = creator
        self.context = context
        self.record = record
        self.check = check

    def __call__(self) -> gym.Env:
        name = getattr(self.creator, "__qualname__", repr(self.creator))
        try:
            env = self.creator(self.context)
        except Exception as e:
            raise EnvError(
                f"Creating sub-env {self.context.vector_index} on worker {self.context.worker_index} with "
                f"{name}({self.context!r}) raised {type(e).__name__}: {str(e).rstrip('.')}. "
                "Fix the creator (see the chained error)."
            ) from e
        if not isinstance(env, gym.Env):
            raise EnvError(
                f"The env creator {name} returned {type(env).__name__}, expected a gymnasium.Env. "
                "Fix: return an instance of a gymnasium.Env subclass."
            )
        run_check(self, env)
        return record_sub_env(env, self.context.vector_index) if self.record else env


def run_check(thunk: Any, env: Any) -> None:
    """Runs `thunk.check` (once: it is cleared first) on the env the thunk just built; closes the env
    when the check fails (the runner that would have owned it is not built)."""
    check, thunk.check = thunk.check, None
    if check is None:
        return
    try:
        check(env)
    except BaseException:
        with contextlib.suppress(Exception):  # the failed check is the error worth reporting
            env.close()
        raise


class RestartingThunk:
    """Builds one sub-env from ``thunk`` wrapped in ``wrapper`` (a `RestartOnFailure` class, e.g.
    :class:`_RestartingEnv`); picklable whenever the thunk is."""

    def __init__(self, thunk: Callable[[], Any], wrapper: Callable[..., RestartOnFailure]) -> None:
        self.thunk = thunk
        self.wrapper = wrapper

    def __call__(self) -> Any:
        return self.wrapper(self.thunk)


class RestartOnFailure:
    """Rebuilds ``self.env`` from its thunk when ``reset``/``step`` raises, so one broken sub-env
    does not take its runner (and the other sub-envs' episodes) down with it.

    The failing call returns the fresh env's reset observation with ``SUB_ENV_RESTARTED: True`` in
    its info; a failed ``step`` reports `failed_step_outcome()` as its reward and done flags.
    Subclasses set ``self.env`` and ``self._thunk`` (single-agent and multi-agent sub-envs).
    """

    env: Any
    _thunk: Callable[[], Any]

    def failed_step_outcome(self) -> tuple[Any, Any, Any]:
        """(reward, terminated, truncated) of a step whose env failed and was rebuilt."""
        raise NotImplementedError

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        try:
            return self.env.reset(**kwargs)
        except Exception:
            return self._restart(**kwargs)

    def step(self, action: Any) -> tuple[Any, Any, Any, Any, dict]:
        try:
            return self.env.step(action)
        except Exception:
            obs, info = self._restart()
            return (obs, *self.failed_step_outcome(), info)

    def _restart(self, **reset_kwargs: Any) -> tuple[Any, dict]:
        with contextlib.suppress(Exception):  # the env is replaced because it broke; closing may fail too
            self.env.close()
        self.env = self._thunk()
        obs, info = self.env.reset(**reset_kwargs)
        return obs, {**info, SUB_ENV_RESTARTED: True}


class _RestartingEnv(RestartOnFailure, gym.Wrapper):
    """A gymnasium sub-env that restarts on failure; a failed step gives reward 0, not done."""

    def __init__(self, thunk: _SubEnvThunk) -> None:
        gym.Wrapper.__init__(self, thunk())
        self._thunk = thunk

    def failed_step_outcome(self) -> tuple[float, bool, bool]:
        return 0.0, False, False


def vectorize_mode_name(vectorize_mode: str | gym.VectorizeMode) -> str:
    """The ``gym_env_vectorize_mode`` as one of `VECTORIZE_MODES` (a ``gymnasium.VectorizeMode`` member
    gives its value); raises `EnvError` for any other value."""
    mode = vectorize_mode.value if isinstance(vectorize_mode, gym.VectorizeMode) else vectorize_mode
    if mode not in VECTORIZE_MODES:
        raise EnvError(
            f"Unknown gym_env_vectorize_mode {vectorize_mode!r}. Valid modes: {list(VECTORIZE_MODES)} "
            "(or the gymnasium.VectorizeMode members)."
        )
    return mode


def _make_envpool(
    env: Any,
    env_config: Mapping[str, Any] | None,
    num_envs: int,
    wrappers: Sequence[Callable],
    restart_failed_sub_environments: bool,
    render_env: bool,
) -> gym.vector.VectorEnv:
    from flywheel.env.envpool_vector import EnvPoolVectorEnv

    if not isinstance(env, str) or env in _REGISTRY:
        raise EnvError(
            f"gym_env_vectorize_mode='envpool' steps EnvPool's own C++ envs, named by an EnvPool id, but "
            f"env={env!r} is a custom Python env ({'a registered name' if isinstance(env, str) else type(env).__name__}). "
            "Fix: pass an id of envpool.list_all_envs() (e.g. 'CartPole-v1'), or use "
            "gym_env_vectorize_mode='sync' for this env."
        )
    unsupported = [
        name
        for name, value in (
            ("env_wrappers", wrappers),
            ("restart_failed_sub_environments", restart_failed_sub_environments),
            ("render_env", render_env),
        )
        if value
    ]
    if unsupported:
        raise EnvError(
            f"gym_env_vectorize_mode='envpool' has no Python sub-envs, so {', '.join(unsupported)} cannot "
            "apply. Fix: drop them, or use gym_env_vectorize_mode='sync'."
        )
    return EnvPoolVectorEnv(env, env_config, num_envs=num_envs)


def _make_vector_entry_point(
    env: Any, creator: EnvCreator, num_envs: int, env_config: Mapping[str, Any] | None
) -> gym.vector.VectorEnv:
    spec = gym_spec(creator.env_id) if isinstance(creator, _GymMake) else None
    if spec is None or spec.vector_entry_point is None:
        raise EnvError(
            f"gym_env_vectorize_mode='vector_entry_point' needs a gymnasium id whose spec has a "
            f"vector_entry_point, but env {env!r} has none. Modes that work for it: ['sync', 'async']."
        )
    return gym.make_vec(
        creator.env_id, num_envs, vectorization_mode="vector_entry_point", **dict(env_config or {})
    )


def is_atari_env(env: Any) -> bool:
    """Whether `env` is a gymnasium id (not a registered name) of an ALE Atari game, which flywheel
    preprocesses (`flywheel.env.atari`)."""
    if not isinstance(env, str) or env in _REGISTRY:
        return False
    return is_atari_spec(gym_spec(env))


def module_to_import(env: Any) -> str | None:
    """The module making ``env`` would import first: the ``module`` of a ``"module:Id-v0"`` gymnasium
    id that is not a registered name, when that module is not imported yet (else None). Loading a
    checkpoint checks this, since importing a module runs its code."""
    if not isinstance(env, str) or env in _REGISTRY:
        return None
    module = env.rpartition(":")[0]
    return module if module and module not in sys.modules else None


def _unknown_env_message(name: str) -> str:
    candidates = list(_REGISTRY) + list(gym.envs.registry)
    close = difflib.get_close_matches(name, candidates, n=1)
    did_you_mean = f" Did you mean {close[0]!r}?" if close else ""
    # With nothing registered, "Registered names: []" would only puzzle: the id is simply not gymnasium's.
    registered = f" Registered names: {sorted(_REGISTRY)}." if _REGISTRY else ""
    return f"Unknown env {name!r}.{did_you_mean}{registered} {_HOW_TO_PASS}"
