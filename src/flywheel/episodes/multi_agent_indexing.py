"""Reading `MultiAgentEpisode` data: its getters, by agent step or by env step.

Each agent's data lives in its `SingleAgentEpisode`, indexed by the agent's own steps. A
per-agent `LookbackBuffer` (``env_t_to_agent_t``) holds, for every env timestep of the chunk
(and of its lookback), the agent's timestep ``t`` of the observation it received then, or
`NOT_OBSERVED`. Env-step getters translate env indices through that map:

- observations and infos at env timestep ``i``: the agent's observation received at ``i``;
- actions, rewards and extra model outputs at env step ``i``: the agent step that *began* at
  ``i`` (the action taken on that observation, and every reward collected until the agent's
  next observation), once that step is complete.

Agents without data at a position are left out, or padded with ``fill`` when it is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flywheel.episodes.lookback_buffer import Indices, LookbackBuffer
from flywheel.errors import EpisodeError

if TYPE_CHECKING:
    from flywheel.episodes.multi_agent_episode import MultiAgentEpisode
    from flywheel.episodes.single_agent_episode import SingleAgentEpisode

NOT_OBSERVED = -1
"""``env_t_to_agent_t`` entry for an env timestep at which the agent received no observation."""

_PER_OBSERVATION = ("observations", "infos")


class MultiAgentGetters:
    """The getters of `MultiAgentEpisode`: ``{agent_id: data}`` by env step or by agent step."""

    agent_episodes: dict
    env_t_to_agent_t: dict

    def get_observations(
        self,
        indices: Indices = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        return_list: bool = False,
    ) -> dict | list[dict]:
        """Observations as ``{agent_id: data}`` (``return_list``: one such dict per env position).

        ``env_steps=True`` indexes env timesteps of the chunk (0 = the chunk's first, -1 = the
        newest) and returns only agents that observed at those timesteps, or pads the others with
        ``fill``; ``env_steps=False`` indexes each agent's own steps (``indices`` as in
        `SingleAgentEpisode`). ``agent_ids`` is one id or a collection (default: every agent).
        """
        return get_data(
            self, "observations", indices, agent_ids, env_steps, neg_index_as_lookback, fill, return_list
        )

    def get_infos(
        self,
        indices: Indices = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        return_list: bool = False,
    ) -> dict | list[dict]:
        return get_data(
            self, "infos", indices, agent_ids, env_steps, neg_index_as_lookback, fill, return_list
        )

    def get_actions(
        self,
        indices: Indices = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        return_list: bool = False,
    ) -> dict | list[dict]:
        """Actions; at env step ``i``, those of the agent steps that began at ``i`` and are complete."""
        return get_data(
            self, "actions", indices, agent_ids, env_steps, neg_index_as_lookback, fill, return_list
        )

    def get_rewards(
        self,
        indices: Indices = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        return_list: bool = False,
    ) -> dict | list[dict]:
        """Rewards per agent step (summed while the agent waited); by env step as for `get_actions`."""
        return get_data(
            self, "rewards", indices, agent_ids, env_steps, neg_index_as_lookback, fill, return_list
        )

    def get_extra_model_outputs(
        self,
        key: str | None = None,
        indices: Indices = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        return_list: bool = False,
    ) -> dict | list[dict]:
        """One extra model output column (all of them as a dict per agent with ``key=None``).

        Agents that have no such column (e.g. ones whose module does not output it) are left out.
        """
        return get_data(
            self,
            "extra_model_outputs",
            indices,
            agent_ids,
            env_steps,
            neg_index_as_lookback,
            fill,
            return_list,
            key,
        )


def agent_timesteps(
    mapping: LookbackBuffer, indices: Indices, what: str, neg_index_as_lookback: bool, fill: Any
):
    """The agent timesteps (or `NOT_OBSERVED`) at env ``indices``: an int, or a list for several indices.

    Actions, rewards and extra outputs have one item less than observations per chunk (there
    is no step after the newest observation yet), so their indices use the map without its
    newest entry. Positions outside the map raise for int indices (and are clipped for slices)
    unless ``fill`` is given; then they become `NOT_OBSERVED`.
    """
    per_step = what not in _PER_OBSERVATION
    if isinstance(indices, int):  # The common case (e.g. -1 for the newest), without copying the map.
        total = mapping.total_len() - per_step
        if indices >= 0 or neg_index_as_lookback:
            position = mapping.lookback + indices
        else:
            position = total + indices
        if 0 <= position < total:
            return mapping.data[position]
        if fill is not None:
            return NOT_OBSERVED
        raise EpisodeError(
            f"Env-step index {indices} is out of range: the episode chunk has {total - mapping.lookback} "
            f"{'env steps' if per_step else 'env timesteps (observations)'} and {mapping.lookback} of lookback; "
            f"pass fill=... to pad, or neg_index_as_lookback=True to count negative indices into the lookback."
        )
    view = LookbackBuffer(mapping.data[:-1], mapping.lookback) if per_step else mapping
    return view.get(indices, neg_index_as_lookback, None if fill is None else NOT_OBSERVED)


def get_data(
    episode: MultiAgentEpisode,
    what: str,
    indices: Indices,
    agent_ids: Any,
    env_steps: bool,
    neg_index_as_lookback: bool,
    fill: Any,
    return_list: bool,
    key: str | None = None,
) -> dict | list[dict]:
    """See `MultiAgentEpisode.get_observations` (``key``: the extra model output column, None = all)."""
    selected = _select_agents(episode, agent_ids)
    if env_steps:
        return _get_by_env_steps(
            episode, what, key, indices, selected, neg_index_as_lookback, fill, return_list
        )
    if return_list:
        raise EpisodeError(
            f"get_{what}(return_list=True) needs env_steps=True: one dict per env position only exists "
            f"on the env-step timeline (agents' own steps do not line up)."
        )
    result = {}
    for agent_id in selected:
        sa_episode = episode.agent_episodes[agent_id]
        if key is not None and key not in sa_episode.extra_model_outputs:
            continue
        args = (key, indices) if what == "extra_model_outputs" else (indices,)
        getter = getattr(sa_episode, "get_" + what)
        result[agent_id] = getter(*args, neg_index_as_lookback=neg_index_as_lookback, fill=fill)
    return result


def _select_agents(episode: MultiAgentEpisode, agent_ids: Any) -> list:
    """The requested agents that have data; unknown ids (not even in the spaces) raise."""
    if agent_ids is None:
        return list(episode.agent_episodes)
    wanted = list(agent_ids) if isinstance(agent_ids, list | tuple | set | frozenset) else [agent_ids]
    possible = list(episode.observation_space or ())
    known = set(episode.agent_episodes) | episode._finished_agents | set(possible)
    unknown = [agent_id for agent_id in wanted if agent_id not in known]
    if unknown:
        raise EpisodeError(
            f"Unknown agent id(s) {unknown} for episode {episode.id_}: its agents are {episode.agent_ids}"
            + (f" (possible: {possible})" if possible else "")
            + ". Pass ids of agents that observed in this episode."
        )
    return [agent_id for agent_id in wanted if agent_id in episode.agent_episodes]


def _get_by_env_steps(
    episode: MultiAgentEpisode,
    what: str,
    key: str | None,
    indices: Indices,
    agent_ids: list,
    neg_index_as_lookback: bool,
    fill: Any,
    return_list: bool,
) -> dict | list[dict]:
    """The env-step case of `get_data`."""
    if return_list and isinstance(indices, int):
        indices = [indices]
    per_agent = {}
    for agent_id in agent_ids:
        sa_episode = episode.agent_episodes[agent_id]
        buffers = _buffers(sa_episode, what, key)
        if buffers is None:
            continue
        ts = agent_timesteps(episode.env_t_to_agent_t[agent_id], indices, what, neg_index_as_lookback, fill)
        per_agent[agent_id] = (sa_episode, buffers, ts)
    if return_list:
        return _as_list(episode, per_agent, indices, what, neg_index_as_lookback, fill)
    result = {}
    for agent_id, (sa_episode, buffers, ts) in per_agent.items():
        item = _gather(sa_episode, buffers, ts, what, fill)
        if item is not _MISSING:
            result[agent_id] = item
    return result


_MISSING = object()


def _buffers(sa_episode: SingleAgentEpisode, what: str, key: str | None) -> LookbackBuffer | dict | None:
    """The agent's buffer for ``what`` (a dict of buffers for all extra outputs); None if it has no such outputs."""
    if what != "extra_model_outputs":
        return getattr(sa_episode, what)
    if key is None:
        return sa_episode.extra_model_outputs or None
    return sa_episode.extra_model_outputs.get(key)


def _agent_index(sa_episode: SingleAgentEpisode, buffer: LookbackBuffer, t: int, what: str) -> int | None:
    """Chunk-relative index (negative = lookback) of the agent's item at timestep ``t``, None if not stored."""
    if t == NOT_OBSERVED:
        return None
    index = t - sa_episode.t_started
    stored = len(buffer) if what in _PER_OBSERVATION else len(sa_episode)  # Incomplete steps are not stored.
    return index if -buffer.lookback <= index < stored else None


def _gather(sa_episode: SingleAgentEpisode, buffers: Any, ts: Any, what: str, fill: Any) -> Any:
    if isinstance(buffers, dict):
        items = {k: _gather(sa_episode, b, ts, what, fill) for k, b in buffers.items()}
        return _MISSING if any(v is _MISSING for v in items.values()) else items
    if isinstance(ts, int):
        index = _agent_index(sa_episode, buffers, ts, what)
        if index is None:
            return _MISSING if fill is None else buffers.get(-buffers.lookback - 1, True, fill)
        return buffers.get(index, True)
    indices = [_agent_index(sa_episode, buffers, t, what) for t in ts]
    if fill is None:
        present = [i for i in indices if i is not None]
        return buffers.get(present, True) if present else _MISSING
    before_start = -buffers.lookback - 1  # Any position before the stored data reads as ``fill``.
    return buffers.get([before_start if i is None else i for i in indices], True, fill)


def _as_list(
    episode: MultiAgentEpisode,
    per_agent: dict,
    indices: Indices,
    what: str,
    neg_index_as_lookback: bool,
    fill: Any,
) -> list[dict]:
    """One ``{agent_id: item}`` dict per env position."""
    if not per_agent:
        if not episode.env_t_to_agent_t:
            return []
        mapping = next(iter(episode.env_t_to_agent_t.values()))
        return [{} for _ in agent_timesteps(mapping, indices, what, neg_index_as_lookback, fill)]
    n_positions = len(next(iter(per_agent.values()))[2])
    result: list[dict] = [{} for _ in range(n_positions)]
    for agent_id, (sa_episode, buffers, ts) in per_agent.items():
        for position, t in enumerate(ts):
            item = _gather(sa_episode, buffers, t, what, fill)
            if item is not _MISSING:
                result[position][agent_id] = item
    return result
