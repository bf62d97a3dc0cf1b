"""A one-time check of the multi-agent env contract, run when a multi-agent runner is built.

`MultiAgentEpisode` records without checking, so an env that gives data to an agent after
it is done, or an observation to an agent outside its possible agents, would fail deep inside
the episode. :func:`check_multi_agent_env` plays a few random steps (a runner: on its own first
sub-env, right after building it) and explains the first violation of the contract in
`flywheel.env.multi_agent_env`.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.env.checks import (
    ObservationMonitor,
    _call,
    _check_supported,
    _describe,
    _explain,
    _in_space_dtypes,
    check_observation,
)
from flywheel.env.multi_agent_env import MultiAgentEnv
from flywheel.env.observation_checks import outside_bounds_only
from flywheel.errors import EnvError

__all__ = ["MultiAgentObservationMonitor", "check_multi_agent_env"]


def check_multi_agent_env(
    env: MultiAgentEnv, *, num_steps: int = 10, seed: int | None = 0, warn_bounds: bool = True
) -> None:
    """Checks ``env`` against the multi-agent contract; the env stays open (the caller's to use or close).

    Checks every possible agent's spaces, that ``reset(seed=seed)`` and ``num_steps`` steps
    with random actions (for the agents that observed and are not done) return dicts keyed by
    possible agents, observations inside the agent's space, ``"__all__"`` in the done flags,
    nothing for agents that are done (a reward for an agent that has not acted yet is fine:
    the episode keeps it for that agent's next step), and infos only for agents that observe.
    Raises an `EnvError` naming the agent and the fix. An observation that leaves only a `Box`'s
    bounds gets one warning instead (none with ``warn_bounds=False``: runners leave that to their
    `MultiAgentObservationMonitor`).
    """
    name = type(env).__name__
    if not isinstance(getattr(env, "unwrapped", env), MultiAgentEnv):
        spec = getattr(env, "spec", None)
        raise EnvError(
            f"env {spec.id if spec else name} is a single-agent env (not a MultiAgentEnv), but the config is "
            "multi-agent (config.multi_agent() set policies other than 'default_policy' or a policy_mapping_fn). "
            "Fix: remove the multi_agent() settings to train one policy on it, or use a MultiAgentEnv (for several "
            "copies of a single-agent env, wrap it in a MultiAgentEnv that steps one copy per agent)."
        )
    checker = _Checker(env, name)
    checker.run(num_steps, seed)
    if checker.bounds and warn_bounds:
        warnings.warn(checker.bounds[0], stacklevel=2)


class _Checker:
    """Plays the env, remembering which agents wait for their next observation and which are done."""

    def __init__(self, env: MultiAgentEnv, name: str) -> None:
        self.env, self.name = env, name
        self.possible = list(env.possible_agents)
        self.in_flight: set = set()  # Acted and not observed since.
        self.done: set = set()
        self.to_act: set = set()
        self.bounds: list[str] = []  # warnings of observations outside a Box's bounds, in order

    def run(self, num_steps: int, seed: int | None) -> None:
        if not self.possible:
            raise EnvError(
                f"env {self.name}.possible_agents is {self.env.possible_agents!r}; expected a non-empty list of "
                "agent ids. Fix: set self.possible_agents = [...] in __init__."
            )
        for agent_id in self.possible:
            obs_space = self.env.get_observation_space(agent_id)
            action_space = self.env.get_action_space(agent_id)
            _check_supported(obs_space, self.name, f"observation_spaces[{agent_id!r}]")
            _check_supported(action_space, self.name, f"action_spaces[{agent_id!r}]")
            action_space.seed(seed)
        self._reset(seed)
        for step in range(1, num_steps + 1):
            if self._step(step):
                self._reset(None)

    def _reset(self, seed: int | None) -> None:
        what = f"reset(seed={seed})" if seed is not None else "reset()"
        result = _call(self.name, what, self.env.reset, seed=seed)
        if not isinstance(result, tuple) or len(result) != 2:
            raise EnvError(
                f"env {self.name}.{what} returned {_describe(result)}; expected a tuple (obs_dict, info_dict). "
                "Fix: return {agent_id: obs, ...}, {}."
            )
        observations, infos = result
        self.in_flight, self.done = set(), set()
        self._check_observations(what, observations)
        self._check_infos(what, infos, observations)
        self.to_act = set(observations)

    def _step(self, step: int) -> bool:
        """One step with random actions; returns whether ``"__all__"`` ended the episode."""
        actions = {a: self.env.get_action_space(a).sample() for a in self.to_act}
        what = f"step() at env step {step}"
        result = _call(self.name, f"step({actions!r})", self.env.step, actions)
        if not isinstance(result, tuple) or len(result) != 5 or not all(isinstance(d, dict) for d in result):
            raise EnvError(
                f"env {self.name}.{what} returned {_describe(result)}; expected five dicts (observations, rewards, "
                "terminateds, truncateds, infos) keyed by agent id. Fix: return all five, {} where empty."
            )
        observations, rewards, terminateds, truncateds, infos = result
        truncateds = {"__all__": False, **truncateds}  # may be left out (RLlib reads it as False)
        self.in_flight |= set(actions)
        self._check_observations(what, observations)
        self._check_rewards(what, rewards)
        ended = self._check_flags(what, terminateds, truncateds, observations)
        self._check_infos(what, infos, observations)
        self.in_flight -= set(observations) | ended
        self.done |= ended
        self.to_act = set(observations) - self.done
        all_done = bool(terminateds.get("__all__", False) or truncateds.get("__all__", False))
        if not (all_done or self.to_act or self.in_flight):
            raise EnvError(
                f"env {self.name}.{what}: no agent observes and none waits for its next observation, but "
                "'__all__' is False, so no agent could act next. Fix: set terminateds['__all__'] (or "
                "truncateds) when the last agent is done."
            )
        return all_done

    def _check_agent(self, what: str, agent_id: Any, data: str) -> None:
        if agent_id not in self.possible:
            raise EnvError(
                f"env {self.name}.{what} returned {data} for agent {agent_id!r}, which is not one of possible_agents "
                f"{self.possible}. Fix: add it to possible_agents (with its spaces) or stop returning it."
            )
        if agent_id in self.done:
            raise EnvError(
                f"env {self.name}.{what} returned {data} for agent {agent_id!r} after it was done (terminated or "
                f"truncated earlier). Fix: return no data for an agent once it is done."
            )

    def _check_observations(self, what: str, observations: Any) -> None:
        if not isinstance(observations, dict):
            raise EnvError(
                f"env {self.name}.{what} returned observations {_describe(observations)}; expected a dict "
                "{agent_id: obs}. Fix: return one observation per agent that acts next."
            )
        for agent_id, obs in observations.items():
            self._check_agent(what, agent_id, "an observation")
            returned = f"env {self.name}.{what} returned an observation for agent {agent_id!r}"
            warning = check_observation(
                returned, "its observation space", obs, self.env.get_observation_space(agent_id)
            )
            if warning is not None:
                self.bounds.append(warning)

    def _check_rewards(self, what: str, rewards: dict) -> None:
        for agent_id, reward in rewards.items():
            self._check_agent(what, agent_id, f"reward {reward!r}")
            if not isinstance(reward, numbers.Real) and not (
                isinstance(reward, np.ndarray) and reward.shape == ()
            ):
                raise EnvError(
                    f"env {self.name}.{what} returned reward {_describe(reward)} for agent {agent_id!r}; expected "
                    "a float. Fix: return float(reward)."
                )

    def _check_flags(self, what: str, terminateds: dict, truncateds: dict, observations: dict) -> set:
        """Checks both done dicts; returns the agents they end."""
        ended = set()
        for which, flags in (("terminateds", terminateds), ("truncateds", truncateds)):
            for agent_id, flag in flags.items():
                if not isinstance(flag, bool | np.bool_):
                    raise EnvError(
                        f"env {self.name}.{what} returned {which}[{agent_id!r}]={_describe(flag)}; expected a bool. "
                        f"Fix: return bool(flag)."
                    )
                # A done agent's flag may stay True (RLlib reads only data, not flags, as a step after done).
                if agent_id != "__all__" and flag and agent_id not in self.done:
                    self._check_agent(what, agent_id, f"{which}=True")
                    ended.add(agent_id)
        for agent_id in self.in_flight - set(observations):
            truncated = truncateds.get("__all__", False) or truncateds.get(agent_id, False)
            if truncated and not (terminateds.get("__all__", False) or terminateds.get(agent_id, False)):
                raise EnvError(
                    f"env {self.name}.{what} truncated agent {agent_id!r} while it waited for its next observation "
                    "and gave it none, so its last step has nothing to bootstrap from. Fix: return a final "
                    "observation for every agent it truncates."
                )
        return ended

    def _check_infos(self, what: str, infos: Any, observations: dict) -> None:
        if not isinstance(infos, dict):
            raise EnvError(
                f"env {self.name}.{what} returned infos {_describe(infos)}; expected a dict (or {{}})."
            )
        extra = [agent_id for agent_id in infos if agent_id not in observations]
        if extra:
            raise EnvError(
                f"env {self.name}.{what} returned infos for agents {extra} that got no observation in this step; "
                "infos travel with observations. Fix: return infos only for agents in the observation dict."
            )


class MultiAgentObservationMonitor(ObservationMonitor):
    """`ObservationMonitor` for multi-agent runners: every `every`-th step, each agent's observation
    in each sub-env is checked against that agent's space (`space` maps agent ids to spaces)."""

    space: dict[Any, gym.Space]

    def check(self, obs: list[dict], episodes: list, terminateds: Any = None, truncateds: Any = None) -> None:
        self._countdown -= 1
        if self._countdown:
            return
        self._countdown = self.every
        for i, agent_obs in enumerate(obs):
            for agent_id, value in agent_obs.items():
                space = self.space.get(agent_id)
                if space is None or space.contains(value):
                    continue
                converted = _in_space_dtypes(value, space)
                if space.contains(converted):
                    continue
                where = f"env {self.env_name} (sub-env {i} of runner {self.worker_index})"
                when = f"at env step {episodes[i].env_t + 1} of its episode"
                if outside_bounds_only(converted, space):
                    what = f"{where} returned an observation for agent {agent_id!r} {when} outside the bounds of its observation space"
                    self.warn_bounds(what, converted, space)
                    continue
                problem, fix = _explain(value, space)
                raise EnvError(
                    f"{where} returned an observation for agent {agent_id!r} outside its observation space "
                    f"{when}: got {_describe(value)}, expected {space}: {problem}. Fix: {fix}; or turn off "
                    "flywheel's env checks with config.environment(disable_env_checking=True)."
                )
