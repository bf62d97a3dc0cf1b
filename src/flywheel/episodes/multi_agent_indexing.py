"""Reading `MultiAgentEpisode` data: its getters, by agent step or by env step.

Each agent's data lives in its `SingleAgentEpisode`, indexed by the agent's own steps. A
per-agent `LookbackBuffer` (``env_t_to_agent_t``) holds, for every env timestep of the chunk
(and of its lookback), the agent's timestep ``t`` of the observation it received then, or
`NOT_OBSERVED` (RLlib's ``"S"``). Env-step getters translate env indices through that map:

- observations and infos at env timestep ``i``: the agent's observation received at ``i``;
- actions, rewards and extra model outputs at env step ``i``: the agent step that *began* at
  ``i``: the action taken on that observation (and its extra outputs) and every reward
  collected since, also while the step is still in flight (the agent has not observed again).

Agents without data at a position are left out, or padded with ``fill`` when it is given.
Agent-step getters with explicit indices also see an in-flight step, as the agent's newest
step (``get_actions(-1, env_steps=False)``); ``indices=None`` returns the stored steps only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from flywheel.episodes.lookback_buffer import Indices, LookbackBuffer
from flywheel.errors import EpisodeError, EpisodeIndexError, EpisodeKeyError

if TYPE_CHECKING:
    from flywheel.episodes.multi_agent_episode import MultiAgentEpisode
    from flywheel.episodes.single_agent_episode import SingleAgentEpisode

NOT_OBSERVED = "S"
"""``env_t_to_agent_t`` entry for an env timestep at which the agent received no observation."""

_PER_OBSERVATION = ("observations", "infos")
_MISSING = object()


class _Query(NamedTuple):
    what: str
    key: str | None
    neg_index_as_lookback: bool
    fill: Any
    one_hot_discrete: bool


def _episode(getters: MultiAgentGetters) -> MultiAgentEpisode:
    """The episode these getters belong to (`MultiAgentEpisode` is their one subclass)."""
    return cast("MultiAgentEpisode", getters)


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
        one_hot_discrete: bool = False,
        return_list: bool = False,
    ) -> dict | list[dict]:
        """Observations as ``{agent_id: data}`` (``return_list``: one such dict per env position).

        ``env_steps=True`` indexes env timesteps of the chunk (0 = the chunk's first, -1 = the
        newest) and returns only agents that observed at those timesteps, or pads the others with
        ``fill``; ``env_steps=False`` indexes each agent's own steps (``indices`` as in
        `SingleAgentEpisode`). ``agent_ids`` is one id or a collection (default: every agent).
        """
        query = _Query("observations", None, neg_index_as_lookback, fill, one_hot_discrete)
        return get_data(_episode(self), query, indices, agent_ids, env_steps, return_list)

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
        query = _Query("infos", None, neg_index_as_lookback, fill, False)
        return get_data(_episode(self), query, indices, agent_ids, env_steps, return_list)

    def get_actions(
        self,
        indices: Indices = None,
        agent_ids: Any = None,
        *,
        env_steps: bool = True,
        neg_index_as_lookback: bool = False,
        fill: Any = None,
        one_hot_discrete: bool = False,
        return_list: bool = False,
    ) -> dict | list[dict]:
        """Actions; at env step ``i``, those of the agent steps that began at ``i`` (in-flight ones too)."""
        query = _Query("actions", None, neg_index_as_lookback, fill, one_hot_discrete)
        return get_data(_episode(self), query, indices, agent_ids, env_steps, return_list)

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
        """Rewards per agent step (summed while the agent waited; an in-flight step: summed so far)."""
        query = _Query("rewards", None, neg_index_as_lookback, fill, False)
        return get_data(_episode(self), query, indices, agent_ids, env_steps, return_list)

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
        query = _Query("extra_model_outputs", key, neg_index_as_lookback, fill, False)
        return get_data(_episode(self), query, indices, agent_ids, env_steps, return_list)


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
        total = mapping.len_incl_lookback() - per_step
        if indices >= 0 or neg_index_as_lookback:
            position = mapping.lookback + indices
        else:
            position = total + indices
        if 0 <= position < total:
            return mapping.data[position]
        if fill is not None:
            return NOT_OBSERVED
        raise EpisodeIndexError(
            f"Env-step index {indices} is out of range: the episode chunk has {total - mapping.lookback} "
            f"{'env steps' if per_step else 'env timesteps (observations)'} and {mapping.lookback} of lookback; "
            f"pass fill=... to pad, or neg_index_as_lookback=True to count negative indices into the lookback."
        )
    view = LookbackBuffer(mapping.data[:-1], mapping.lookback) if per_step else mapping
    return view.get(
        indices, neg_index_as_lookback=neg_index_as_lookback, fill=None if fill is None else NOT_OBSERVED
    )


def get_data(
    episode: MultiAgentEpisode,
    query: _Query,
    indices: Indices,
    agent_ids: Any,
    env_steps: bool,
    return_list: bool,
) -> dict | list[dict]:
    """See `MultiAgentEpisode.get_observations`."""
    selected = _select_agents(episode, agent_ids)
    if query.what == "extra_model_outputs" and query.key is not None:
        _check_extra_key(episode, selected, query.key)
    if env_steps:
        return _get_by_env_steps(episode, query, indices, selected, return_list)
    if return_list:
        raise EpisodeError(
            f"get_{query.what}(return_list=True) needs env_steps=True: one dict per env position only exists "
            f"on the env-step timeline (agents' own steps do not line up)."
        )
    result = {}
    for agent_id in selected:
        buffers = _buffers(episode, agent_id, query, in_flight=indices is not None)
        if buffers is None:
            continue
        value = _read(buffers, indices, query)
        if not (isinstance(value, list) and not value):  # Agents without such steps are left out.
            result[agent_id] = value
    return result


def _check_extra_key(episode: MultiAgentEpisode, agent_ids: list, key: str) -> None:
    """A key that none of the agents has (stored or in flight) is a `KeyError`, as in RLlib."""
    known: set[str] = set()
    for agent_id in agent_ids:
        step = episode.bookkeeping.in_flight.get(agent_id)
        known.update(episode.agent_episodes[agent_id].extra_model_outputs, (step and step[1]) or ())
    if agent_ids and key not in known:
        raise EpisodeKeyError(
            f"Episode {episode.id_} has no extra model output {key!r} for agents {agent_ids}; they have "
            f"{sorted(known)} (outputs are recorded via add_env_step(extra_model_outputs=...))."
        )


def _select_agents(episode: MultiAgentEpisode, agent_ids: Any) -> list:
    """The requested agents that have data; unknown ids (not even in the spaces) raise."""
    if agent_ids is None:
        return list(episode.agent_episodes)
    many = isinstance(agent_ids, Iterable) and not isinstance(agent_ids, str)
    wanted = list(agent_ids) if many else [agent_ids]
    possible = list(episode.observation_space or ())
    known = episode.agent_episodes.keys() | episode.bookkeeping.finished_agents | set(possible)
    unknown = [agent_id for agent_id in wanted if agent_id not in known]
    if unknown:
        raise EpisodeKeyError(
            f"Unknown agent id(s) {unknown} for episode {episode.id_}: its agents are {list(episode.agent_episodes)}"
            + (f" (possible: {possible})" if possible else "")
            + ". Pass ids of agents that observed in this episode."
        )
    return [agent_id for agent_id in wanted if agent_id in episode.agent_episodes]


def _get_by_env_steps(
    episode: MultiAgentEpisode, query: _Query, indices: Indices, agent_ids: list, return_list: bool
) -> dict | list[dict]:
    """The env-step case of `get_data`."""
    if return_list and isinstance(indices, int):
        indices = [indices]
    per_agent = {}
    for agent_id in agent_ids:
        buffers = _buffers(episode, agent_id, query, in_flight=False)
        if buffers is None:
            continue
        mapping = episode.env_t_to_agent_t[agent_id]
        ts = agent_timesteps(mapping, indices, query.what, query.neg_index_as_lookback, query.fill)
        per_agent[agent_id] = (episode.agent_episodes[agent_id].t_started, buffers, ts)
    if return_list:
        return _as_list(episode, per_agent, indices, query)
    result = {}
    for agent_id, (t_started, buffers, ts) in per_agent.items():
        item = _gather(episode, agent_id, t_started, buffers, ts, query)
        if item is not _MISSING:
            result[agent_id] = item
    return result


def _buffers(episode: MultiAgentEpisode, agent_id: Any, query: _Query, *, in_flight: bool) -> Any:
    """The agent's buffer for ``query`` (a dict of buffers for all extra outputs), with its in-flight
    step appended if ``in_flight``; None if the agent has no such outputs."""
    sa_episode = episode.agent_episodes[agent_id]
    step = episode.bookkeeping.in_flight.get(agent_id)
    if query.what != "extra_model_outputs":
        buffer = getattr(sa_episode, query.what)
        if step is None or not in_flight or query.what in _PER_OBSERVATION:
            return buffer
        return buffer.with_item(step[0] if query.what == "actions" else step[2])
    columns = _extra_columns(sa_episode, None if step is None else step[1], append=in_flight)
    if query.key is None:
        return columns or None
    return columns.get(query.key)


def _extra_columns(sa_episode: SingleAgentEpisode, in_flight: dict | None, *, append: bool) -> dict:
    """The agent's extra output buffers, with the in-flight step's outputs appended if ``append``.

    An agent whose first step is in flight has no stored columns yet; its in-flight outputs
    then get columns of their own (empty ones unless ``append``).
    """
    columns = dict(sa_episode.extra_model_outputs)
    if not in_flight:
        return columns
    first_step = sa_episode.actions.len_incl_lookback() == 0
    for key, value in in_flight.items():
        if key in columns:
            if append:
                columns[key] = columns[key].with_item(value)
        elif first_step:
            columns[key] = LookbackBuffer([value] if append else [])
    return columns


def _in_flight_value(episode: MultiAgentEpisode, agent_id: Any, query: _Query) -> Any:
    """The in-flight step's item for ``query`` (a dict for all extra outputs), or _MISSING."""
    step = episode.bookkeeping.in_flight.get(agent_id)
    if step is None or query.what in _PER_OBSERVATION:
        return _MISSING
    if query.what == "actions":
        return step[0]
    if query.what == "rewards":
        return step[2]
    extras = step[1] or {}
    if query.key is None:
        return extras
    return extras.get(query.key, _MISSING)


def _read(buffers: Any, indices: Any, query: _Query) -> Any:
    if isinstance(buffers, dict):
        return {k: _read(b, indices, query) for k, b in buffers.items()}
    return buffers.get(
        indices,
        neg_index_as_lookback=query.neg_index_as_lookback,
        fill=query.fill,
        one_hot_discrete=query.one_hot_discrete,
    )


def _gather(
    episode: MultiAgentEpisode, agent_id: Any, t_started: int, buffers: Any, ts: Any, query: _Query
) -> Any:
    """The agent's items at agent timesteps ``ts`` (an int or a list), reading in-flight steps too."""
    several = isinstance(ts, list)
    indices = [None if t == NOT_OBSERVED else t - t_started for t in (ts if several else [ts])]
    if isinstance(buffers, dict):
        hanging = _in_flight_value(episode, agent_id, query)
        extras = {} if hanging is _MISSING else hanging
        buffers = {k: _with_needed(b, extras.get(k, _MISSING), indices) for k, b in buffers.items()}
        items = {k: _read_positions(b, indices, several, query) for k, b in buffers.items()}
        return _MISSING if any(v is _MISSING for v in items.values()) else items
    buffers = _with_needed(buffers, _in_flight_value(episode, agent_id, query), indices)
    return _read_positions(buffers, indices, several, query)


def _with_needed(buffer: LookbackBuffer, hanging: Any, indices: list) -> LookbackBuffer:
    """``buffer``, with the in-flight ``hanging`` item appended if one of ``indices`` asks for it."""
    if hanging is _MISSING or len(buffer) not in indices:
        return buffer
    return buffer.with_item(hanging)


def _read_positions(buffer: LookbackBuffer, indices: list, several: bool, query: _Query) -> Any:
    valid = [i if i is not None and -buffer.lookback <= i < len(buffer) else None for i in indices]
    fill, one_hot = query.fill, query.one_hot_discrete
    before_start = -buffer.lookback - 1  # Any position before the stored data reads as ``fill``.
    if not several:
        if valid[0] is None:
            if fill is None:
                return _MISSING
            return buffer.get(before_start, neg_index_as_lookback=True, fill=fill, one_hot_discrete=one_hot)
        return buffer.get(valid[0], neg_index_as_lookback=True, one_hot_discrete=one_hot)
    if fill is None:
        present = [i for i in valid if i is not None]
        if not present:
            return _MISSING
        return buffer.get(present, neg_index_as_lookback=True, one_hot_discrete=one_hot)
    positions = [before_start if i is None else i for i in valid]
    return buffer.get(positions, neg_index_as_lookback=True, fill=fill, one_hot_discrete=one_hot)


def _as_list(episode: MultiAgentEpisode, per_agent: dict, indices: Indices, query: _Query) -> list[dict]:
    """One ``{agent_id: item}`` dict per env position."""
    if not per_agent:
        if not episode.env_t_to_agent_t:
            return []
        mapping = next(iter(episode.env_t_to_agent_t.values()))
        positions = agent_timesteps(mapping, indices, query.what, query.neg_index_as_lookback, query.fill)
        return [{} for _ in positions]
    n_positions = len(next(iter(per_agent.values()))[2])
    result: list[dict] = [{} for _ in range(n_positions)]
    for agent_id, (t_started, buffers, ts) in per_agent.items():
        for position, t in enumerate(ts):
            item = _gather(episode, agent_id, t_started, buffers, t, query)
            if item is not _MISSING:
                result[position][agent_id] = item
    return result
