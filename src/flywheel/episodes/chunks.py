"""Whole-episode operations of `SingleAgentEpisode`: cut, slice, concat, validate, state.

An episode that outlives one ``EnvRunner.sample()`` call is handed out in chunks: `cut` makes
the successor that keeps recording, `concat` glues chunks back together (e.g. in a replay
buffer), `slice_episode` takes sub-sequences (e.g. for training on fixed-length pieces). The
methods of `SingleAgentEpisode` delegate here; the index arithmetic stays in `LookbackBuffer`.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import numpy as np
import tree

from flywheel.episodes.lookback_buffer import LookbackBuffer
from flywheel.errors import EpisodeConcatError, EpisodeError

if TYPE_CHECKING:
    from flywheel.episodes.single_agent_episode import SingleAgentEpisode


def _history(items: list, space: Any = None) -> LookbackBuffer:
    """A list-based buffer whose items are all lookback."""
    return LookbackBuffer(items, len(items), space)


def cut(episode: SingleAgentEpisode, len_lookback_buffer: int) -> SingleAgentEpisode:
    """See `SingleAgentEpisode.cut`."""
    if len_lookback_buffer < 0:
        raise EpisodeError(f"Expected len_lookback_buffer >= 0 for cut(), got {len_lookback_buffer}.")
    n = len_lookback_buffer
    observations = episode.observations.tail(n + 1)
    infos = episode.infos.tail(n + 1)
    # The successor's index 0 is the last observation/info; everything before it is history.
    obs_lookback = max(len(observations) - 1, 0)
    return successor(
        episode,
        episode.t,
        observations=LookbackBuffer(observations, obs_lookback, episode.observation_space),
        infos=LookbackBuffer(infos, max(len(infos) - 1, 0)),
        actions=_history(episode.actions.tail(n), episode.action_space),
        rewards=_history(episode.rewards.tail(n)),
        extra_model_outputs={k: _history(b.tail(n)) for k, b in episode.extra_model_outputs.items()},
    )


def successor(episode: SingleAgentEpisode, t: int, **data: Any) -> SingleAgentEpisode:
    """The chunk continuing `episode` (which is at step `t`): its ids, a deep copy of its
    `custom_data`, and `data` (none: built empty)."""
    new = type(episode)(
        episode.id_,
        t_started=t,
        agent_id=episode.agent_id,
        module_id=episode.module_id,
        multi_agent_episode_id=episode.multi_agent_episode_id,
        **data,
    )
    new.custom_data = copy.deepcopy(episode.custom_data)
    return new


def as_slice(item: Any) -> slice:
    """The slice of ``episode[item]``; episodes are only sliced (their steps are read with the getters)."""
    if not isinstance(item, slice):
        raise EpisodeError(
            f"Episodes can only be sliced (episode[a:b]), got episode[{item!r}]; read one step with "
            f"get_observations({item!r}), get_actions({item!r}), ... instead."
        )
    return item


def slice_bounds(slc: slice, length: int) -> tuple[int, int]:
    """`(start, stop)` of `slc` over `length` steps (stop >= start); episodes slice with step 1 only."""
    start, stop, step = slc.indices(length)
    if step != 1:
        raise EpisodeError(f"Expected a slice with step 1, got {slc}; slice first, then subsample.")
    return start, max(stop, start)


def slice_episode(
    episode: SingleAgentEpisode, slc: slice, len_lookback_buffer: int | None
) -> SingleAgentEpisode:
    """See `SingleAgentEpisode.slice`."""
    start, stop = slice_bounds(slc, len(episode))
    lookback = len_lookback_buffer
    reaches_end = stop == len(episode)
    return type(episode)(
        episode.id_,
        observations=episode.observations.sliced(start, stop + 1, lookback),
        infos=episode.infos.sliced(start, stop + 1, lookback),
        actions=episode.actions.sliced(start, stop, lookback),
        rewards=episode.rewards.sliced(start, stop, lookback),
        extra_model_outputs={
            key: buffer.sliced(start, stop, lookback) for key, buffer in episode.extra_model_outputs.items()
        },
        terminated=episode.is_terminated and reaches_end,
        truncated=episode.is_truncated and reaches_end,
        t_started=episode.t_started + start,
        agent_id=episode.agent_id,
        module_id=episode.module_id,
        multi_agent_episode_id=episode.multi_agent_episode_id,
    )


def concat(episode: SingleAgentEpisode, other: SingleAgentEpisode) -> None:
    """See `SingleAgentEpisode.concat_episode`."""
    _check_concat(episode, other)
    # The other's first observation is our last one (its info may be newer, so the other's wins).
    episode.observations.pop()
    episode.infos.pop()
    episode.observations.concat(other.observations)
    episode.infos.concat(other.infos)
    episode.actions.concat(other.actions)
    episode.rewards.concat(other.rewards)
    for key, buffer in episode.extra_model_outputs.items():
        buffer.concat(other.extra_model_outputs[key])
    episode.t = other.t
    episode.is_terminated = other.is_terminated
    episode.is_truncated = other.is_truncated
    episode.custom_data.update(other.custom_data)  # The later chunk knows more.


def _items_equal(a: Any, b: Any) -> bool:
    leaves_a, leaves_b = tree.flatten(a), tree.flatten(b)
    return len(leaves_a) == len(leaves_b) and all(
        np.array_equal(x, y) for x, y in zip(leaves_a, leaves_b, strict=True)
    )


def _check_concat(episode: SingleAgentEpisode, other: SingleAgentEpisode) -> None:
    if other.id_ != episode.id_:
        raise EpisodeConcatError(
            f"Cannot concat episode {other.id_} to episode {episode.id_}: expected the same id_ "
            f"(concat the successor chunks that cut() returned)."
        )
    if episode.is_done:
        raise EpisodeConcatError(
            f"Cannot concat to episode {episode.id_}: it is already done at t={episode.t}."
        )
    if other.t_started != episode.t:
        raise EpisodeConcatError(
            f"Cannot concat the chunk of episode {episode.id_} starting at t_started={other.t_started} to the "
            f"chunk ending at t={episode.t}; concat chunks in order, each starting where the last ended."
        )
    last, first = episode.get_observations(-1), other.get_observations(0)
    if not _items_equal(last, first):
        raise EpisodeConcatError(
            f"Cannot concat chunks of episode {episode.id_}: the other's first observation {first!r} "
            f"differs from this one's last {last!r}; the other chunk must come from cut()."
        )
    if set(other.extra_model_outputs) != set(episode.extra_model_outputs):
        raise EpisodeConcatError(
            f"Cannot concat chunks of episode {episode.id_}: the other's extra model outputs "
            f"{sorted(other.extra_model_outputs)} differ from this one's {sorted(episode.extra_model_outputs)}."
        )


def validate(episode: SingleAgentEpisode) -> None:
    """See `SingleAgentEpisode.validate`."""
    n_obs = len(episode.observations)
    n_steps = max(n_obs - 1, 0)
    expected = {"infos": (episode.infos, n_obs), "actions": (episode.actions, n_steps)}
    expected["rewards"] = (episode.rewards, n_steps)
    expected.update(
        {f"extra_model_outputs[{k!r}]": (b, n_steps) for k, b in episode.extra_model_outputs.items()}
    )
    problems = [
        f"{name} has {len(buffer)} items, expected {n}"
        for name, (buffer, n) in expected.items()
        if len(buffer) != n
    ]
    if episode.t_started < 0:
        problems.append(f"t_started is {episode.t_started}, expected >= 0")
    if episode.t - episode.t_started != n_steps:
        problems.append(
            f"t - t_started is {episode.t - episode.t_started}, expected {n_steps} (one per step)"
        )
    if episode.is_done and n_obs == 0:
        problems.append("the episode is done but holds no observation (add_env_reset() never ran)")
    if problems:
        raise EpisodeError(
            f"Episode {episode.id_} (observations: {n_obs} in the chunk, so {n_steps} steps) is inconsistent: "
            + "; ".join(problems)
            + ". Record data only through add_env_reset()/add_env_step(), or pass matching lengths."
        )


def get_state(episode: SingleAgentEpisode) -> dict[str, Any]:
    """See `SingleAgentEpisode.get_state`."""
    return {
        "id_": episode.id_,
        "agent_id": episode.agent_id,
        "module_id": episode.module_id,
        "multi_agent_episode_id": episode.multi_agent_episode_id,
        "observations": episode.observations.get_state(),
        "infos": episode.infos.get_state(),
        "actions": episode.actions.get_state(),
        "rewards": episode.rewards.get_state(),
        "extra_model_outputs": {k: b.get_state() for k, b in episode.extra_model_outputs.items()},
        "t_started": episode.t_started,
        "is_terminated": episode.is_terminated,
        "is_truncated": episode.is_truncated,
        "custom_data": copy.deepcopy(episode.custom_data),
        "start_time": episode._start_time,
        "end_time": episode._end_time,
    }


def from_state(cls: type[SingleAgentEpisode], state: dict[str, Any]) -> SingleAgentEpisode:
    """See `SingleAgentEpisode.from_state`."""
    episode = cls(
        state["id_"],
        observations=LookbackBuffer.from_state(state["observations"]),
        infos=LookbackBuffer.from_state(state["infos"]),
        actions=LookbackBuffer.from_state(state["actions"]),
        rewards=LookbackBuffer.from_state(state["rewards"]),
        extra_model_outputs={
            k: LookbackBuffer.from_state(s) for k, s in state["extra_model_outputs"].items()
        },
        terminated=state["is_terminated"],
        truncated=state["is_truncated"],
        t_started=state["t_started"],
        agent_id=state["agent_id"],
        module_id=state["module_id"],
        multi_agent_episode_id=state["multi_agent_episode_id"],
    )
    episode.custom_data = state["custom_data"]
    episode._start_time, episode._end_time = state["start_time"], state["end_time"]
    return episode
