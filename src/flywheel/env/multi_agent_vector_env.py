"""Vector envs that step copies of a `MultiAgentEnv` (sync, or async in subprocesses).

A runner steps ``num_envs_per_env_runner`` copies through a vector env::

    vector_env = make_multi_agent_vector_env(MyEnv, env_config, num_envs=4)
    observations, infos = vector_env.reset(seed=0)            # lists: one dict per sub-env
    while sampling:
        actions = [policy(obs) for obs in observations]        # one action dict per sub-env
        observations, rewards, terminateds, truncateds, infos = vector_env.step(actions)
        # A sub-env whose "__all__" is done was reset in this same step: observations[i] and
        # infos[i] belong to its new episode, the old one's last are infos[i][FINAL_OBS]
        # and infos[i][FINAL_INFOS] (gymnasium's SAME_STEP autoreset, per sub-env).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import gymnasium as gym

from flywheel.env.make import EnvContext, RestartingThunk, RestartOnFailure, make_env_creator, run_check
from flywheel.env.multi_agent_env import MultiAgentEnv, agent_space
from flywheel.errors import EnvError
from flywheel.typing import AgentID

__all__ = [
    "FINAL_INFOS",
    "FINAL_OBS",
    "MultiAgentAsyncVectorEnv",
    "MultiAgentSyncVectorEnv",
    "VectorMultiAgentEnv",
    "make_multi_agent_vector_env",
]

FINAL_OBS = "__final_obs__"
"""Key in a sub-env's infos (after an autoreset) holding the finished episode's last observations."""
FINAL_INFOS = "__final_infos__"
"""Key in a sub-env's infos (after an autoreset) holding the finished episode's last infos."""

_MA_VECTORIZE_MODES = ("sync", "async")


def _step_and_autoreset(env: MultiAgentEnv, actions: dict, index: int) -> tuple[dict, ...]:
    """One sub-env step; an ended episode is reset at once, its last obs/infos go into the new infos."""
    obs, rewards, terminateds, truncateds, infos = env.step(actions)
    # A missing "__all__" is False, as in RLlib (its rock-paper-scissors example returns truncateds {}).
    if terminateds.get("__all__", False) or truncateds.get("__all__", False):
        final_obs, final_infos = obs, infos
        obs, infos = env.reset()
        infos = {**infos, FINAL_OBS: final_obs, FINAL_INFOS: final_infos}
    return obs, rewards, terminateds, truncateds, infos


def _seeds(seed: int | Sequence[int | None] | None, num_envs: int) -> list[int | None]:
    if seed is None or isinstance(seed, int):
        return [None if seed is None else seed + i for i in range(num_envs)]
    seeds = list(seed)
    if len(seeds) != num_envs:
        raise EnvError(f"Expected one seed per sub-env ({num_envs}), got {len(seeds)}: {seeds}.")
    return seeds


class VectorMultiAgentEnv:
    """What both vector envs share (RLlib's `VectorMultiAgentEnv` base class, so
    `isinstance(env, VectorMultiAgentEnv)` tells them from single envs): the sub-envs' spaces and
    agent ids (taken from sub-env 0), and `unwrapped`, the vector env itself."""

    num_envs: int
    possible_agents: list[AgentID]
    observation_spaces: dict[AgentID, gym.Space]
    action_spaces: dict[AgentID, gym.Space]

    def _set_spaces(self, possible_agents: list, observation_spaces: dict, action_spaces: dict) -> None:
        self.possible_agents = possible_agents
        self.observation_spaces = observation_spaces
        self.action_spaces = action_spaces

    @property
    def unwrapped(self) -> VectorMultiAgentEnv:
        """The vector env itself (as gymnasium's `VectorEnv.unwrapped`): it wraps no other."""
        return self

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        return agent_space(self, agent_id, "observation_spaces")

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        return agent_space(self, agent_id, "action_spaces")

    def __enter__(self) -> VectorMultiAgentEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError


def _agent_spaces(env: MultiAgentEnv) -> tuple[list, dict, dict]:
    """(possible_agents, observation spaces, action spaces), every possible agent's spaces checked."""
    agents = list(env.possible_agents)
    observation_spaces = {a: env.get_observation_space(a) for a in agents}
    return agents, observation_spaces, {a: env.get_action_space(a) for a in agents}


class MultiAgentSyncVectorEnv(VectorMultiAgentEnv):
    """``num_envs`` multi-agent sub-envs stepped one after the other in this process.

    ``reset`` returns ``(observations, infos)`` and ``step(actions)`` (one action dict per
    sub-env) returns ``(observations, rewards, terminateds, truncateds, infos)``: lists with
    one dict per sub-env. Sub-envs autoreset in the same step (see the module docstring).
    """

    def __init__(self, env_fns: Sequence[Callable[[], MultiAgentEnv]]) -> None:
        self.envs = [env_fn() for env_fn in env_fns]
        self.num_envs = len(self.envs)
        self._set_spaces(*_agent_spaces(self.envs[0]))

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None
    ) -> tuple[list[dict], list[dict]]:
        """Resets every sub-env; an int ``seed`` seeds sub-env ``i`` with ``seed + i``."""
        results = [
            env.reset(seed=s, options=options) for env, s in zip(self.envs, _seeds(seed, self.num_envs))
        ]
        return [r[0] for r in results], [r[1] for r in results]

    def step(
        self, actions: Sequence[dict]
    ) -> tuple[list[dict], list[dict], list[dict], list[dict], list[dict]]:
        obs, rewards, terminateds, truncateds, infos = [], [], [], [], []
        for i, (env, agent_actions) in enumerate(zip(self.envs, actions)):
            o, r, te, tr, info = _step_and_autoreset(env, agent_actions, i)
            obs.append(o)
            rewards.append(r)
            terminateds.append(te)
            truncateds.append(tr)
            infos.append(info)
        return obs, rewards, terminateds, truncateds, infos

    def get_attr(self, name: str) -> list:
        return [getattr(env, name) for env in self.envs]

    def call(self, name: str, *args: Any, **kwargs: Any) -> list:
        return [getattr(env, name)(*args, **kwargs) for env in self.envs]

    def close(self) -> None:
        for env in self.envs:
            env.close()


class MultiAgentAsyncVectorEnv(VectorMultiAgentEnv):
    """Like `MultiAgentSyncVectorEnv`, with each sub-env in its own process; worth it when ``step`` is slow.

    ``env_fns`` must pickle under the chosen multiprocessing ``context`` (default: the
    platform's). An exception in a sub-env comes back as an `EnvError` naming the sub-env and
    the call, with the worker's traceback; the worker keeps running.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], MultiAgentEnv]],
        *,
        context: Literal["fork", "spawn", "forkserver"] | None = None,
    ) -> None:
        ctx = multiprocessing.get_context(context)
        self.num_envs = len(env_fns)
        self._pipes, self._processes = [], []
        self._closed = False
        for i, env_fn in enumerate(env_fns):
            parent, child = ctx.Pipe()
            process = ctx.Process(
                target=_worker, args=(env_fn, i, child, parent), name=f"flywheel-ma-env-{i}", daemon=True
            )
            process.start()
            child.close()
            self._pipes.append(parent)
            self._processes.append(process)
        self._receive_all("creating the env")
        self._set_spaces(*self._request(0, "spaces", None))

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None
    ) -> tuple[list[dict], list[dict]]:
        """Resets every sub-env; an int ``seed`` seeds sub-env ``i`` with ``seed + i``."""
        self._send_all([("reset", {"seed": s, "options": options}) for s in _seeds(seed, self.num_envs)])
        results = self._receive_all("reset()")
        return [r[0] for r in results], [r[1] for r in results]

    def step(
        self, actions: Sequence[dict]
    ) -> tuple[list[dict], list[dict], list[dict], list[dict], list[dict]]:
        self._send_all([("step", action_dict) for action_dict in actions])
        obs, rewards, terminateds, truncateds, infos = zip(*self._receive_all("step()"))
        return list(obs), list(rewards), list(terminateds), list(truncateds), list(infos)

    def get_attr(self, name: str) -> list:
        self._send_all([("get_attr", name)] * self.num_envs)
        return self._receive_all(f"getattr({name!r})")

    def call(self, name: str, *args: Any, **kwargs: Any) -> list:
        self._send_all([("call", (name, args, kwargs))] * self.num_envs)
        return self._receive_all(f"{name}()")

    def close(self) -> None:
        """Closes the sub-envs and ends their processes (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._send_all([("close", None)] * self.num_envs)
        for pipe, process in zip(self._pipes, self._processes):
            process.join(timeout=5)
            if process.is_alive():
                process.terminate()
            pipe.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def _send_all(self, messages: list[tuple[str, Any]]) -> None:
        for pipe, message in zip(self._pipes, messages):
            # A dead worker cannot take the message; its missing reply reports the problem.
            with contextlib.suppress(OSError):
                pipe.send(message)

    def _request(self, index: int, command: str, payload: Any) -> Any:
        self._pipes[index].send((command, payload))
        return self._raise_errors([self._recv(index)], what=command, first_index=index)[0]

    def _receive_all(self, what: str) -> list:
        # Read every reply before raising, so no answer is left in a pipe for the next call.
        return self._raise_errors([self._recv(i) for i in range(self.num_envs)], what)

    def _recv(self, index: int) -> tuple[str, Any]:
        try:
            return self._pipes[index].recv()
        except EOFError:
            code = self._processes[index].exitcode
            return "error", f"its process ended unexpectedly (exit code {code}); create a new vector env."

    @staticmethod
    def _raise_errors(replies: list[tuple[str, Any]], what: str, first_index: int = 0) -> list:
        for index, (status, result) in enumerate(replies, start=first_index):
            if status == "error":
                raise EnvError(f"Sub-env {index} (in its own process) raised during {what}:\n{result}")
        return [result for _, result in replies]


def _worker(env_fn: Callable[[], MultiAgentEnv], index: int, pipe: Any, parent_pipe: Any) -> None:
    """Runs in a sub-env process: answers each command with ("ok", result) or ("error", traceback)."""
    parent_pipe.close()
    try:
        env = env_fn()
    except Exception:
        pipe.send(("error", traceback.format_exc()))
        pipe.close()
        return
    pipe.send(("ok", None))
    while True:
        try:
            command, payload = pipe.recv()
        except (EOFError, KeyboardInterrupt):
            break
        if command == "close":
            break
        try:
            pipe.send(("ok", _run_command(env, index, command, payload)))
        except Exception:
            pipe.send(("error", traceback.format_exc()))
    env.close()
    pipe.close()


def _run_command(env: MultiAgentEnv, index: int, command: str, payload: Any) -> Any:
    if command == "step":
        return _step_and_autoreset(env, payload, index)
    if command == "reset":
        return env.reset(**payload)
    if command == "spaces":
        return _agent_spaces(env)
    if command == "get_attr":
        return getattr(env, payload)
    name, args, kwargs = payload
    return getattr(env, name)(*args, **kwargs)


class _MultiAgentThunk:
    """Builds one multi-agent sub-env: ``creator(context)``; picklable whenever the creator (and
    `check`) is. `check` runs on the first env it builds only (see `flywheel.env.make.run_check`)."""

    def __init__(
        self, creator: Callable[[EnvContext], Any], context: EnvContext, check: Callable | None = None
    ) -> None:
        self.creator = creator
        self.context = context
        self.check = check

    def __call__(self) -> MultiAgentEnv:
        name = getattr(self.creator, "__qualname__", repr(self.creator))
        try:
            env = self.creator(self.context)
        except Exception as e:
            raise EnvError(
                f"Creating multi-agent sub-env {self.context.vector_index} on worker {self.context.worker_index} "
                f"with {name}({self.context!r}) raised {type(e).__name__}: {str(e).rstrip('.')}. "
                "Fix the creator (see the chained error)."
            ) from e
        run_check(self, env)  # first: it names the config's fix for a single-agent env
        if not isinstance(env, MultiAgentEnv):
            hint = (
                " It looks like a PettingZoo ParallelEnv: wrap it, creator = lambda cfg: "
                "flywheel.env.pettingzoo.PettingZooEnv(make_parallel_env(cfg))."
                if hasattr(env, "possible_agents")
                else ""
            )
            raise EnvError(
                f"The env creator {name} returned {type(env).__name__}, expected a flywheel MultiAgentEnv. "
                f"Fix: return an instance of a MultiAgentEnv subclass.{hint}"
            )
        return env


class _RestartingEnv(RestartOnFailure):
    """A multi-agent sub-env that restarts on failure (`RestartOnFailure`); a failed ``step`` returns
    no rewards and no done flags. Everything else (spaces, agents, custom methods) reads through
    to the current env."""

    def __init__(self, thunk: _MultiAgentThunk) -> None:
        self._thunk = thunk
        self.env = thunk()

    def __getattr__(self, name: str) -> Any:
        if name == "env":  # not built yet (e.g. while copying): no recursion through self.env
            raise AttributeError(name)
        return getattr(self.env, name)

    def failed_step_outcome(self) -> tuple[dict, dict, dict]:
        return {}, {"__all__": False}, {"__all__": False}

    def close(self) -> None:
        self.env.close()


def make_multi_agent_vector_env(
    env: Any,
    env_config: Mapping[str, Any] | None = None,
    *,
    num_envs: int = 1,
    vectorize_mode: str = "sync",
    worker_index: int = 0,
    num_workers: int = 0,
    restart_failed_sub_environments: bool = False,
    check: Callable[[Any], None] | None = None,
) -> MultiAgentSyncVectorEnv | MultiAgentAsyncVectorEnv:
    """Builds the multi-agent vector env a runner steps (``num_envs`` sub-envs, autoreset SAME_STEP).

    ``env`` is named as for single-agent envs (a registered name, a `MultiAgentEnv` subclass, a
    callable); each sub-env gets an `EnvContext` with its ``worker_index`` and ``vector_index``.
    ``vectorize_mode`` is ``"sync"`` (this process) or ``"async"`` (one process per sub-env).
    With ``restart_failed_sub_environments``, a sub-env whose ``reset``/``step`` raises is rebuilt
    from the creator and reset in place (see `_RestartingEnv`); its infos then hold
    ``SUB_ENV_RESTARTED: True``, so the runner can drop the sub-env's episode. ``check`` (e.g.
    `check_multi_agent_env`) runs on sub-env 0 right after it is built, which is then used as it is.
    """
    mode = getattr(vectorize_mode, "value", vectorize_mode)
    if mode not in _MA_VECTORIZE_MODES:
        raise EnvError(
            f"Unknown vectorize mode {vectorize_mode!r} for a multi-agent env; expected one of "
            f"{list(_MA_VECTORIZE_MODES)} ('vector_entry_point' exists for gymnasium ids only)."
        )
    if not isinstance(num_envs, int) or num_envs < 1:
        raise EnvError(f"num_envs must be an int >= 1, got {num_envs!r}. Fix: pass num_envs=1 or more.")
    creator = make_env_creator(env, env_config)
    context = EnvContext(env_config, worker_index=worker_index, num_workers=num_workers)
    thunks = [
        _MultiAgentThunk(creator, context.copy_with_overrides(vector_index=i), check if i == 0 else None)
        for i in range(num_envs)
    ]
    if restart_failed_sub_environments:
        thunks = [RestartingThunk(thunk, _RestartingEnv) for thunk in thunks]
    if mode == "sync":
        return MultiAgentSyncVectorEnv(thunks)
    return MultiAgentAsyncVectorEnv(thunks)
