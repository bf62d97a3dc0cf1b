"""Chunk operations of `SingleAgentEpisode`: cut, slice and concat.

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
from flywheel.errors import EpisodeError

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
    successor = type(episode)(
        episode.id_,
        observations=LookbackBuffer(observations, obs_lookback, episode.observation_space),
        infos=LookbackBuffer(infos, max(len(infos) - 1, 0)),
        actions=_history(episode.actions.tail(n), episode.action_space),
        rewards=_history(episode.rewards.tail(n)),
        extra_model_outputs={k: _history(b.tail(n)) for k, b in episode.extra_model_outputs.items()},
        t_started=episode.t,
        agent_id=episode.agent_id,
        module_id=episode.module_id,
        multi_agent_episode_id=episode.multi_agent_episode_id,
    )
    successor.custom_data = copy.deepcopy(episode.custom_data)
    return successor


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
    # The other's first observation is our last one; its info may be newer, so it wins.
    episode.infos.set(other.get_infos(0), -1)
    episode.observations.extend_from(other.observations, skip=1)
    episode.infos.extend_from(other.infos, skip=1)
    episode.actions.extend_from(other.actions)
    episode.rewards.extend_from(other.rewards)
    for key, buffer in episode.extra_model_outputs.items():
        buffer.extend_from(other.extra_model_outputs[key])
    episode.t = other.t
    episode.is_terminated = other.is_terminated
    episode.is_truncated = other.is_truncated


def _items_equal(a: Any, b: Any) -> bool:
    leaves_a, leaves_b = tree.flatten(a), tree.flatten(b)
    return len(leaves_a) == len(leaves_b) and all(
        np.array_equal(x, y) for x, y in zip(leaves_a, leaves_b, strict=True)
    )


def _check_concat(episode: SingleAgentEpisode, other: SingleAgentEpisode) -> None:
    if other.id_ != episode.id_:
        raise EpisodeError(
            f"Cannot concat episode {other.id_} to episode {episode.id_}: expected the same id_ "
            f"(concat the successor chunks that cut() returned)."
        )
    if episode.is_done:
        raise EpisodeError(f"Cannot concat to episode {episode.id_}: it is already done at t={episode.t}.")
    if other.t_started != episode.t:
        raise EpisodeError(
            f"Cannot concat the chunk of episode {episode.id_} starting at t_started={other.t_started} to the "
            f"chunk ending at t={episode.t}; concat chunks in order, each starting where the last ended."
        )
    last, first = episode.get_observations(-1), other.get_observations(0)
    if not _items_equal(last, first):
        raise EpisodeError(
            f"Cannot concat chunks of episode {episode.id_}: the other's first observation {first!r} "
            f"differs from this one's last {last!r}; the other chunk must come from cut()."
        )
    if set(other.extra_model_outputs) != set(episode.extra_model_outputs):
        raise EpisodeError(
            f"Cannot concat chunks of episode {episode.id_}: the other's extra model outputs "
            f"{sorted(other.extra_model_outputs)} differ from this one's {sorted(episode.extra_model_outputs)}."
        )
