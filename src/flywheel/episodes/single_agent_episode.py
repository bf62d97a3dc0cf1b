"""`SingleAgentEpisode`: the record of one agent's trajectory (or one chunk of it).

An EnvRunner drives it like this::

    episode = SingleAgentEpisode(observation_space=..., action_space=...)
    episode.add_env_reset(observation=obs, infos=info)
    while not episode.is_done and not enough_steps:
        obs, reward, terminated, truncated, info = env.step(action)
        episode.add_env_step(obs, action, reward, infos=info, terminated=terminated, truncated=truncated)
    chunk_for_learner, episode = episode, episode.cut(len_lookback_buffer=n)   # ongoing: continue
    chunk_for_learner.to_numpy()

Observations and infos hold ``len + 1`` items of the chunk (the reset observation or the
predecessor's last one, then one per step); actions, rewards and every extra model output hold
``len`` items. Each sits in a `LookbackBuffer`, which also keeps history from earlier chunks and
does all index arithmetic.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym
import numpy as np

from flywheel.episodes import chunks
from flywheel.episodes.deferred_data import RECORDED_ATTRIBUTES, REWARD_SPACE, Unread
from flywheel.episodes.episode_id import new_episode_id
from flywheel.episodes.lookback_buffer import Indices, LookbackBuffer
from flywheel.errors import EpisodeError, EpisodeKeyError


def _buffer(data: Any, lookback: int, space: gym.Space | None = None) -> LookbackBuffer:
    if isinstance(data, LookbackBuffer):
        if space is not None:
            data.space = space
        return data
    return LookbackBuffer(data, lookback, space)


class SingleAgentEpisode:
    """One agent's episode chunk: observations, actions, rewards, infos and model outputs.

    Built empty by runners (then `add_env_reset` / `add_env_step`), or from data (lists or
    arrays) by learners and replay buffers. With ``len_lookback_buffer=n`` the first ``n``
    actions/rewards/extra outputs (and observations/infos) of the given data are history in
    front of the chunk; ``"auto"`` (the default) makes all given steps history, which is what
    `cut` produces; pass ``len_lookback_buffer=0`` to make all given data the chunk's own.
    ``agent_id``, ``module_id`` and ``multi_agent_episode_id`` tie the episode to a
    multi-agent episode; they are only carried along.
    """

    # Slots as in RLlib: no instance dict, so an episode is one object the garbage collector tracks.
    __slots__ = (
        "id_", "agent_id", "module_id", "multi_agent_episode_id", "is_terminated", "is_truncated",
        "t_started", "custom_data", "_start_time", "_end_time", "_pending", *RECORDED_ATTRIBUTES,
    )  # fmt: skip
    _pending: Any
    """What builds the episode's `RECORDED_ATTRIBUTES` when one is first read, or None
    (`flywheel.episodes.deferred_data`)."""

    def __init__(
        self,
        id_: str | None = None,
        *,
        observations: Any = None,
        observation_space: gym.Space | None = None,
        infos: Any = None,
        actions: Any = None,
        action_space: gym.Space | None = None,
        rewards: Any = None,
        terminated: bool = False,
        truncated: bool = False,
        extra_model_outputs: dict[str, Any] | None = None,
        t_started: int | None = None,
        len_lookback_buffer: int | str = "auto",
        agent_id: Any = None,
        module_id: str | None = None,
        multi_agent_episode_id: str | None = None,
    ):
        self.id_ = new_episode_id() if id_ is None else id_
        self.agent_id = agent_id
        self.module_id = module_id
        self.multi_agent_episode_id = multi_agent_episode_id
        self.is_terminated = terminated
        self.is_truncated = truncated
        self.t_started = t_started or 0
        self.custom_data: dict[str, Any] = {}
        self._start_time: float | None = None
        self._end_time: float | None = None
        self._pending = None
        if (
            observations is None
            and infos is None
            and actions is None
            and rewards is None
            and extra_model_outputs is None
        ):
            # Built empty (runners: one per episode): its buffers are made when first read, so a
            # `VectorRecorder` that records the episode's steps itself never builds throwaway ones.
            self._pending = Unread(observation_space, action_space)
            return
        lookback = self._lookback_from(len_lookback_buffer, rewards)
        self.observations = _buffer(observations, lookback, observation_space)
        if infos is None:
            infos = [{} for _ in range(self.observations.len_incl_lookback())]
        self.infos = _buffer(infos, lookback)
        self.actions = _buffer(actions, lookback, action_space)
        self.rewards = _buffer(rewards, lookback, REWARD_SPACE)
        self.extra_model_outputs = {
            key: _buffer(value, lookback) for key, value in (extra_model_outputs or {}).items()
        }
        self.t = self.t_started + len(self.rewards)
        self.validate()

    @staticmethod
    def _lookback_from(len_lookback_buffer: int | str, rewards: Any) -> int:
        if isinstance(rewards, LookbackBuffer):
            return rewards.lookback
        n_steps = 0 if rewards is None else len(rewards)
        if len_lookback_buffer == "auto":
            return n_steps
        if not isinstance(len_lookback_buffer, int | np.integer) or len_lookback_buffer < 0:
            raise EpisodeError(
                f"Expected len_lookback_buffer to be an int >= 0 or 'auto', got {len_lookback_buffer!r}."
            )
        return min(int(len_lookback_buffer), n_steps)

    def __getattr__(self, name: str) -> Any:
        # Python calls this only for attributes the instance lacks. A pending episode lacks its data
        # attributes until something reads one: its recorder then hands its steps in.
        # (`_pending` is read only for those: unpickling asks for other names before it is set.)
        pending = self._pending if name in RECORDED_ATTRIBUTES else None
        if pending is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        pending.realize(self)
        return getattr(self, name)

    # ----------------------------------------------------------------- recording (hot path)

    def add_env_reset(self, observation: Any, infos: dict | None = None) -> None:
        """Records the first observation (and info) of the episode, as returned by ``env.reset()``."""
        if len(self.observations) or self.is_done:
            raise EpisodeError(
                f"add_env_reset() needs a fresh episode, but episode {self.id_} already holds "
                f"{len(self.observations)} observation(s) (done={self.is_done}); create a new episode."
            )
        self.observations.data.append(observation)
        self.infos.data.append({} if infos is None else infos)
        self._start_time = time.perf_counter()

    def add_env_step(
        self,
        observation: Any,
        action: Any,
        reward: float,
        infos: dict | None = None,
        *,
        terminated: bool = False,
        truncated: bool = False,
        extra_model_outputs: dict[str, Any] | None = None,
    ) -> None:
        """Records one env step: the action taken and what the env returned for it.

        Runs once per env step per sub-env, so it only appends (no checks, no copies); call
        `validate` to check an episode thoroughly.
        """
        if self.is_terminated or self.is_truncated:
            raise EpisodeError(
                f"Episode {self.id_} is already done (terminated={self.is_terminated}, "
                f"truncated={self.is_truncated}) at t={self.t}; start a new episode after a reset."
            )
        try:
            self.observations.data.append(observation)
        except AttributeError:
            raise EpisodeError(
                f"Episode {self.id_} was turned to numpy and cannot grow; call cut() before to_numpy() "
                f"and keep stepping the (list-based) successor."
            ) from None
        self.actions.data.append(action)
        self.rewards.data.append(reward)
        self.infos.data.append({} if infos is None else infos)
        if extra_model_outputs:
            outputs = self.extra_model_outputs
            for key, value in extra_model_outputs.items():
                buffer = outputs.get(key)
                if buffer is None:
                    buffer = outputs[key] = LookbackBuffer()
                buffer.data.append(value)
        self.t += 1
        self.is_terminated = terminated
        self.is_truncated = truncated

    # ------------------------------------------------------------------------ properties

    @property
    def observation_space(self) -> gym.Space | None:
        return self.observations.space

    @observation_space.setter
    def observation_space(self, space: gym.Space | None) -> None:
        self.observations.space = space

    @property
    def action_space(self) -> gym.Space | None:
        return self.actions.space

    @action_space.setter
    def action_space(self, space: gym.Space | None) -> None:
        self.actions.space = space

    @property
    def is_done(self) -> bool:
        """Whether the env ended the episode (terminated or truncated)."""
        return self.is_terminated or self.is_truncated

    @property
    def is_numpy(self) -> bool:
        """Whether `to_numpy` turned the data into arrays (the episode can then no longer grow)."""
        return self.observations.finalized

    @property
    def is_reset(self) -> bool:
        """Whether the episode holds its first observation (`add_env_reset` ran, or it was built from data)."""
        return self.observations.len_incl_lookback() > 0

    def __len__(self) -> int:
        """Number of env steps in this chunk (lookback excluded)."""
        return self.t - self.t_started

    def env_steps(self) -> int:
        return len(self)

    def agent_steps(self) -> int:
        return len(self)

    def get_return(self) -> float:
        """Sum of this chunk's rewards (the lookback's rewards belong to earlier chunks)."""
        rewards = self.rewards.get()
        return float(rewards.sum()) if isinstance(rewards, np.ndarray) else float(sum(rewards))

    def get_duration_s(self) -> float:
        """Seconds from this chunk's start (reset or cut) to its end (`cut` or `to_numpy`), or to now while it runs.

        0.0 for an episode built from data. The end is taken when the runner hands the chunk out
        rather than at every step, so recording stays free of clock reads.
        """
        if self._start_time is None:
            return 0.0
        end = time.perf_counter() if self._end_time is None else self._end_time
        return end - self._start_time

    def __repr__(self) -> str:
        return (
            f"SingleAgentEpisode(id_={self.id_[:8]}, len={len(self)}, t_started={self.t_started}, "
            f"terminated={self.is_terminated}, truncated={self.is_truncated})"
        )

    # --------------------------------------------------------------------------- getters

    def get_observations(
        self,
        indices: Indices = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        """Observations at ``indices`` (see `LookbackBuffer` for indices, ``fill`` and ``one_hot_discrete``)."""
        return self.observations.get(indices, neg_index_as_lookback, fill, one_hot_discrete)

    def get_infos(
        self, indices: Indices = None, *, neg_index_as_lookback: bool = False, fill: Any = None
    ) -> Any:
        """Infos at ``indices``; infos stay a list even on a numpy'd episode."""
        return self.infos.get(indices, neg_index_as_lookback, fill)

    def get_actions(
        self,
        indices: Indices = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
    ) -> Any:
        return self.actions.get(indices, neg_index_as_lookback, fill, one_hot_discrete)

    def get_rewards(
        self, indices: Indices = None, *, neg_index_as_lookback: bool = False, fill: Any = None
    ) -> Any:
        return self.rewards.get(indices, neg_index_as_lookback, fill)

    def get_extra_model_outputs(
        self,
        key: str | None = None,
        indices: Indices = None,
        *,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
    ) -> Any:
        """One extra model output column at ``indices``, or all of them as a dict (``key=None``)."""
        if key is None:
            return {
                k: buffer.get(indices, neg_index_as_lookback, fill)
                for k, buffer in self.extra_model_outputs.items()
            }
        return self._extra_buffer(key).get(indices, neg_index_as_lookback, fill)

    def _extra_buffer(self, key: str) -> LookbackBuffer:
        buffer = self.extra_model_outputs.get(key)
        if buffer is None:
            raise EpisodeKeyError(
                f"Episode {self.id_} has no extra model output {key!r}; it has "
                f"{sorted(self.extra_model_outputs)} (outputs are recorded via add_env_step(extra_model_outputs=...))."
            )
        return buffer

    # --------------------------------------------------------------------------- setters

    def set_observations(
        self, *, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        """Overwrites observations in place (e.g. a connector normalizing the newest one)."""
        self.observations.set(new_data, at_indices, neg_index_as_lookback)

    def set_actions(
        self, *, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        self.actions.set(new_data, at_indices, neg_index_as_lookback)

    def set_rewards(
        self, *, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        self.rewards.set(new_data, at_indices, neg_index_as_lookback)

    def set_extra_model_outputs(
        self, *, key: str, new_data: Any, at_indices: Indices = None, neg_index_as_lookback: bool = False
    ) -> None:
        self._extra_buffer(key).set(new_data, at_indices, neg_index_as_lookback)

    # ----------------------------------------------------------------- chunks and slices

    def cut(self, len_lookback_buffer: int = 0) -> SingleAgentEpisode:
        """Returns the successor chunk that continues this (ongoing) episode.

        The successor has the same ``id_``, starts at ``t_started = self.t`` with this chunk's
        last observation and info as its index 0, and keeps the last ``len_lookback_buffer``
        actions, rewards, extra outputs and observations before the last one as lookback. It is
        list-based (even when this chunk was numpy'd) and not done: cutting a done episode gives
        a successor nobody should step. ``custom_data`` is deep-copied into it.
        """
        self._end_time = time.perf_counter()
        successor = chunks.cut(self, len_lookback_buffer)
        successor._start_time = self._end_time
        return successor

    def __getitem__(self, item: slice) -> SingleAgentEpisode:
        """``episode[a:b]`` is ``episode.slice(slice(a, b))``; single steps are read with the getters."""
        return self.slice(chunks.as_slice(item))

    def slice(self, slc: slice, *, len_lookback_buffer: int | None = None) -> SingleAgentEpisode:
        """Returns a new episode holding the steps ``slc`` (a step-1 slice) of this chunk.

        Its lookback is taken from the data before ``slc.start`` (default: as deep as this
        episode's lookback), ``t_started`` moves by ``slc.start``, and the done flags are kept
        only if the slice reaches this chunk's end. The data is copied (lists shallowly), so
        writing into the slice leaves this episode alone; ``custom_data`` starts empty.
        """
        return chunks.slice_episode(self, slc, len_lookback_buffer)

    def concat_episode(self, other: SingleAgentEpisode) -> None:
        """Appends ``other`` (the successor chunk from `cut`, or the next slice) to this episode, in place.

        ``other`` must have this ``id_``, start at this episode's ``t`` and begin with this
        episode's last observation; this episode then also takes ``other``'s done flags and
        infos at the seam, and updates its ``custom_data`` with ``other``'s.
        """
        chunks.concat(self, other)

    # ------------------------------------------------------------- numpy, checks, state

    def to_numpy(self) -> SingleAgentEpisode:
        """Stacks observations, actions, rewards (float32) and extra outputs into arrays, once.

        ``Dict``/``Tuple`` observations and actions become dicts/tuples of arrays; infos stay a
        list. Idempotent. Returns the episode for chaining.
        """
        self.observations.finalize()
        self.actions.finalize()
        self.rewards.finalize()
        for buffer in self.extra_model_outputs.values():
            buffer.finalize()
        if self._end_time is None and self._start_time is not None:
            self._end_time = time.perf_counter()
        return self

    def validate(self) -> None:
        """Checks the episode's lengths, timesteps and done flags; raises `EpisodeError` listing every problem."""
        chunks.validate(self)

    def get_state(self) -> dict[str, Any]:
        """Plain data (dicts, lists, arrays, the spaces) for transport and checkpoints."""
        return chunks.get_state(self)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> SingleAgentEpisode:
        """Rebuilds an episode from `get_state` output."""
        return chunks.from_state(cls, state)
