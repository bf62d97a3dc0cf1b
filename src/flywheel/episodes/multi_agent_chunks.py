"""Whole-episode operations of `MultiAgentEpisode`: cut, slice, concat, validate, state.

Each operation works per agent through the `SingleAgentEpisode` chunk operations and keeps
the env-step map (``env_t_to_agent_t``) in line with them. The methods of
`MultiAgentEpisode` delegate here.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from flywheel.episodes.chunks import slice_bounds
from flywheel.episodes.lookback_buffer import LookbackBuffer
from flywheel.episodes.multi_agent_indexing import NOT_OBSERVED
from flywheel.episodes.single_agent_episode import SingleAgentEpisode
from flywheel.errors import EpisodeConcatError, EpisodeError

if TYPE_CHECKING:
    from flywheel.episodes.multi_agent_episode import MultiAgentEpisode


def _successor_shell(episode: MultiAgentEpisode, env_t_started: int) -> MultiAgentEpisode:
    """An empty episode with ``episode``'s id, spaces and module choices."""
    return type(episode)(
        episode.id_,
        agent_module_ids=episode.bookkeeping.agent_to_module,
        agent_to_module_mapping_fn=episode.agent_to_module_mapping_fn,
        agent_episode_ids=episode.bookkeeping.agent_episode_ids,
        observation_space=episode.observation_space,
        action_space=episode.action_space,
        env_t_started=env_t_started,
    )


def cut(episode: MultiAgentEpisode, len_lookback_buffer: int) -> MultiAgentEpisode:
    """See `MultiAgentEpisode.cut`."""
    if len_lookback_buffer < 0:
        raise EpisodeError(f"Expected len_lookback_buffer >= 0 for cut(), got {len_lookback_buffer}.")
    n = len_lookback_buffer
    book = episode.bookkeeping
    successor = _successor_shell(episode, episode.env_t)
    new = successor.bookkeeping
    # Agents with a step in flight keep their last observation inside the env-step lookback.
    waits = (_steps_since_observed(episode.env_t_to_agent_t[agent_id]) for agent_id in book.in_flight)
    new.env_lookback = env_lookback = min(max(n, *waits, 0), book.env_lookback + len(episode))
    for agent_id, sa_episode in episode.agent_episodes.items():
        if sa_episode.is_done:
            new.finished_agents.add(agent_id)
            continue
        tail = episode.env_t_to_agent_t[agent_id].tail(env_lookback + 1)
        # A lookback stretched for a waiting agent also keeps the other agents' steps inside it.
        steps_in_window = n if env_lookback == n else sum(t != NOT_OBSERVED for t in tail) - 1
        successor.agent_episodes[agent_id] = sa_episode.cut(max(n, steps_in_window))
        successor.env_t_to_agent_t[agent_id] = LookbackBuffer(tail, env_lookback)
    new.finished_agents |= book.finished_agents
    new.in_flight = {agent_id: list(step) for agent_id, step in book.in_flight.items()}
    new.waiting_rewards = dict(book.waiting_rewards)
    new.agents_that_stepped = book.agents_that_stepped & successor.agent_episodes.keys()
    new.agents_to_act = set(book.agents_to_act)
    successor.custom_data = copy.deepcopy(episode.custom_data)
    return successor


def _steps_since_observed(mapping: LookbackBuffer) -> int:
    """Env steps since the agent's last observation in ``mapping`` (all of them if it has none)."""
    data = mapping.data
    for steps, t in enumerate(reversed(data)):
        if t != NOT_OBSERVED:
            return steps
    return len(data)


def slice_episode(
    episode: MultiAgentEpisode, slc: slice, len_lookback_buffer: int | None
) -> MultiAgentEpisode:
    """See `MultiAgentEpisode.slice`."""
    start, stop = slice_bounds(slc, len(episode))
    book = episode.bookkeeping
    env_lookback = book.env_lookback if len_lookback_buffer is None else len_lookback_buffer
    sliced = _successor_shell(episode, episode.env_t_started + start)
    new = sliced.bookkeeping
    sliced.env_t = episode.env_t_started + stop
    new.env_lookback = min(env_lookback, book.env_lookback + start)
    new.finished_agents = set(book.finished_agents)
    for agent_id, sa_episode in episode.agent_episodes.items():
        mapping = episode.env_t_to_agent_t[agent_id]
        bounds = _agent_bounds(sa_episode, mapping, start, stop)
        if bounds is None:
            if sa_episode.is_done:
                new.finished_agents.add(agent_id)
            continue
        first, last = bounds[0] - sa_episode.t_started, bounds[1] - sa_episode.t_started
        sliced.agent_episodes[agent_id] = sa_episode.slice(
            slice(first, last), len_lookback_buffer=len_lookback_buffer
        )
        sliced.env_t_to_agent_t[agent_id] = mapping.sliced(start, stop + 1, env_lookback)
        step = None if mapping.get(stop) != NOT_OBSERVED else _step_from(episode, agent_id, last)
        if step is not None:
            new.in_flight[agent_id] = step
    if stop == len(episode):
        sliced.is_terminated, sliced.is_truncated = episode.is_terminated, episode.is_truncated
    new.agents_that_stepped = {a for a, m in sliced.env_t_to_agent_t.items() if m.data[-1] != NOT_OBSERVED}
    new.agents_to_act = {a for a in new.agents_that_stepped if not sliced.agent_episodes[a].is_done}
    return sliced


def _step_from(episode: MultiAgentEpisode, agent_id: object, index: int) -> list | None:
    """The agent's step begun at its chunk index ``index`` as an in-flight step, or None if there is none."""
    sa_episode = episode.agent_episodes[agent_id]
    if index < len(sa_episode):
        extras = {key: buffer.get(index) for key, buffer in sa_episode.extra_model_outputs.items()}
        return [sa_episode.get_actions(index), extras or None, sa_episode.get_rewards(index)]
    step = episode.bookkeeping.in_flight.get(agent_id)
    return None if step is None else copy.deepcopy(step)


def _agent_bounds(
    sa_episode: SingleAgentEpisode, mapping: LookbackBuffer, start: int, stop: int
) -> tuple[int, int] | None:
    """The agent timesteps from its last observation at or before env ``start`` to its last at or before ``stop``.

    None if the agent had not observed by ``stop``, or had finished by ``start``.
    """
    chunk = mapping.data[mapping.lookback :]
    # An agent episode's first chunk observation may come from before this env chunk (an earlier cut).
    before = [] if sa_episode.t_started in chunk else [sa_episode.t_started]
    upto_start = before + [t for t in chunk[: start + 1] if t != NOT_OBSERVED]
    upto_stop = before + [t for t in chunk[: stop + 1] if t != NOT_OBSERVED]
    if not upto_stop:
        return None
    first = upto_start[-1] if upto_start else upto_stop[0]
    if sa_episode.is_done and first == sa_episode.t:
        return None
    return first, upto_stop[-1]


def concat(episode: MultiAgentEpisode, other: MultiAgentEpisode) -> None:
    """See `MultiAgentEpisode.concat_episode`."""
    _check_concat(episode, other)
    book, later = episode.bookkeeping, other.bookkeeping
    n_timesteps = book.env_lookback + len(episode) + 1
    for agent_id, mapping in episode.env_t_to_agent_t.items():
        if agent_id in other.agent_episodes:
            _add_missing_extra_outputs(episode.agent_episodes[agent_id], other.agent_episodes[agent_id])
            episode.agent_episodes[agent_id].concat_episode(other.agent_episodes[agent_id])
            mapping.extend(other.env_t_to_agent_t[agent_id].get(slice(1, None)))
        else:
            mapping.data.extend([NOT_OBSERVED] * len(other))
    for agent_id, sa_episode in other.agent_episodes.items():
        if agent_id in episode.agent_episodes:
            continue
        # Joined in ``other``: not observed at any of this episode's env timesteps.
        other_mapping = other.env_t_to_agent_t[agent_id]
        joined = [NOT_OBSERVED] * n_timesteps + other_mapping.data[other_mapping.lookback + 1 :]
        episode.agent_episodes[agent_id] = sa_episode
        episode.env_t_to_agent_t[agent_id] = LookbackBuffer(joined, book.env_lookback)
    episode.env_t = other.env_t
    episode.is_terminated, episode.is_truncated = other.is_terminated, other.is_truncated
    episode.custom_data.update(other.custom_data)  # The later chunk knows more.
    book.in_flight = {agent_id: list(step) for agent_id, step in later.in_flight.items()}
    book.waiting_rewards = dict(later.waiting_rewards)
    book.finished_agents |= later.finished_agents
    book.agent_to_module.update(later.agent_to_module)
    book.agents_that_stepped = set(later.agents_that_stepped)
    book.agents_to_act = set(later.agents_to_act)


def _add_missing_extra_outputs(sa_episode: SingleAgentEpisode, successor: SingleAgentEpisode) -> None:
    """An agent that never acted yet (e.g. joined just before a cut) has no extra output columns; its
    successor may. Zero actions means zero outputs in every column, so empty columns make them match."""
    if sa_episode.actions.len_incl_lookback() == 0:
        for key in successor.extra_model_outputs.keys() - sa_episode.extra_model_outputs.keys():
            sa_episode.extra_model_outputs[key] = LookbackBuffer()


def _check_concat(episode: MultiAgentEpisode, other: MultiAgentEpisode) -> None:
    if other.id_ != episode.id_:
        raise EpisodeConcatError(
            f"Cannot concat episode {other.id_} to episode {episode.id_}: expected the same id_ "
            f"(concat the successor chunks that cut() returned)."
        )
    if episode.is_done:
        raise EpisodeConcatError(
            f"Cannot concat to episode {episode.id_}: it is already done at env_t={episode.env_t}."
        )
    if other.env_t_started != episode.env_t:
        raise EpisodeConcatError(
            f"Cannot concat the chunk of episode {episode.id_} starting at env_t_started={other.env_t_started} "
            f"to the chunk ending at env_t={episode.env_t}; concat chunks in order, each starting where the last ended."
        )
    missing = [
        a for a, e in episode.agent_episodes.items() if not e.is_done and a not in other.agent_episodes
    ]
    if missing:
        raise EpisodeConcatError(
            f"Cannot concat chunks of episode {episode.id_}: agents {missing} are alive at this chunk's end but "
            f"missing from the other chunk; the other chunk must come from cut()."
        )


def validate(episode: MultiAgentEpisode) -> None:
    """See `MultiAgentEpisode.validate`."""
    problems = []
    for agent_id, sa_episode in episode.agent_episodes.items():
        try:
            sa_episode.validate()
        except EpisodeError as e:
            problems.append(f"agent {agent_id!r}: {str(e).rstrip('.')}")
    if set(episode.env_t_to_agent_t) != set(episode.agent_episodes):
        problems.append(
            f"env_t_to_agent_t has agents {list(episode.env_t_to_agent_t)}, expected those of agent_episodes "
            f"{list(episode.agent_episodes)}"
        )
    n_timesteps, env_lookback = len(episode) + 1, episode.bookkeeping.env_lookback
    for agent_id, mapping in episode.env_t_to_agent_t.items():
        if len(mapping) != n_timesteps or mapping.lookback != env_lookback:
            problems.append(
                f"env_t_to_agent_t[{agent_id!r}] has {len(mapping)} chunk entries and {mapping.lookback} of "
                f"lookback, expected {n_timesteps} (one per env timestep) and {env_lookback}"
            )
        if agent_id in episode.agent_episodes:
            problems += _timeline_problems(agent_id, episode.agent_episodes[agent_id], mapping)
    for agent_id in episode.bookkeeping.in_flight:
        sa_episode = episode.agent_episodes.get(agent_id)
        if sa_episode is None or sa_episode.is_done:
            problems.append(
                f"agent {agent_id!r} has a step in flight but is {'done' if sa_episode else 'unknown'}"
            )
    if len(episode) < 0 or episode.env_t_started < 0:
        problems.append(
            f"env_t_started={episode.env_t_started} and env_t={episode.env_t}, expected 0 <= started <= t"
        )
    if problems:
        raise EpisodeError(
            f"MultiAgentEpisode {episode.id_} is inconsistent: "
            + "; ".join(problems)
            + ". Record data only through add_env_reset()/add_env_step(), cut() and concat_episode()."
        )


def _timeline_problems(
    agent_id: object, sa_episode: SingleAgentEpisode, mapping: LookbackBuffer
) -> list[str]:
    """The map's chunk must list the agent's newest observations' timesteps, consecutive, ending at its ``t``."""
    seen = [t for t in mapping.data[mapping.lookback :] if t != NOT_OBSERVED]
    consecutive = seen == list(range(sa_episode.t - len(seen) + 1, sa_episode.t + 1))
    if consecutive and len(sa_episode) <= len(seen) <= len(sa_episode) + 1:
        return []
    return [
        f"env_t_to_agent_t[{agent_id!r}] lists agent timesteps {seen} in this chunk, expected consecutive "
        f"timesteps ending at the agent's t={sa_episode.t}, one for each of its {len(sa_episode)} steps "
        f"(plus its first observation if made in this chunk)"
    ]


def get_state(episode: MultiAgentEpisode) -> dict[str, Any]:
    """See `MultiAgentEpisode.get_state`."""
    book = episode.bookkeeping
    return {
        "id_": episode.id_,
        "observation_space": episode.observation_space,
        "action_space": episode.action_space,
        "agent_episodes": {a: e.get_state() for a, e in episode.agent_episodes.items()},
        "env_t_to_agent_t": {a: m.get_state() for a, m in episode.env_t_to_agent_t.items()},
        "env_t_started": episode.env_t_started,
        "env_t": episode.env_t,
        "env_lookback": book.env_lookback,
        "is_terminated": episode.is_terminated,
        "is_truncated": episode.is_truncated,
        "agent_to_module": dict(book.agent_to_module),
        "in_flight": copy.deepcopy(book.in_flight),
        "waiting_rewards": dict(book.waiting_rewards),
        "finished_agents": list(book.finished_agents),
        "agents_that_stepped": list(book.agents_that_stepped),
        "agents_to_act": list(book.agents_to_act),
        "custom_data": copy.deepcopy(episode.custom_data),
        "agent_to_module_mapping_fn": episode.agent_to_module_mapping_fn,
        "agent_episode_ids": dict(book.agent_episode_ids),
        "start_time": book.start_time,
        "end_time": book.end_time,
    }


def from_state(cls: type[MultiAgentEpisode], state: dict[str, Any], mapping_fn: Any) -> MultiAgentEpisode:
    """See `MultiAgentEpisode.from_state`."""
    episode = cls(
        state["id_"],
        agent_module_ids=state["agent_to_module"],
        agent_to_module_mapping_fn=mapping_fn or state["agent_to_module_mapping_fn"],
        agent_episode_ids=state["agent_episode_ids"],
        observation_space=state["observation_space"],
        action_space=state["action_space"],
        env_t_started=state["env_t_started"],
    )
    episode.agent_episodes = {a: SingleAgentEpisode.from_state(s) for a, s in state["agent_episodes"].items()}
    episode.env_t_to_agent_t = {a: LookbackBuffer.from_state(s) for a, s in state["env_t_to_agent_t"].items()}
    episode.env_t = state["env_t"]
    episode.is_terminated, episode.is_truncated = state["is_terminated"], state["is_truncated"]
    episode.custom_data = copy.deepcopy(state["custom_data"])
    book = episode.bookkeeping
    book.env_lookback = state["env_lookback"]
    book.in_flight = copy.deepcopy(state["in_flight"])
    book.waiting_rewards = dict(state.get("waiting_rewards", {}))  # (states saved before it: none)
    book.finished_agents = set(state["finished_agents"])
    book.agents_that_stepped = set(state["agents_that_stepped"])
    book.agents_to_act = set(state["agents_to_act"])
    book.start_time, book.end_time = state["start_time"], state["end_time"]
    return episode


def from_agent_episodes(
    cls: type[MultiAgentEpisode],
    id_: str,
    agent_episodes: dict[Any, SingleAgentEpisode],
    *,
    observation_space: Any,
    action_space: Any,
    mapping_fn: Any,
) -> MultiAgentEpisode:
    """An episode holding `agent_episodes` (one chunk per agent) as if the agents stepped together:
    each agent's step k at env step k of the chunk. Data that keeps each agent's own steps but not the
    env's timeline (offline rows) comes back this way; each agent's module comes from `mapping_fn`.
    It is done when every agent is (truncated when all were truncated)."""
    episode = cls(
        id_,
        observation_space=observation_space,
        action_space=action_space,
        agent_to_module_mapping_fn=mapping_fn,
    )
    n_steps = max((len(e) for e in agent_episodes.values()), default=0)
    episode.env_t = n_steps
    for agent_id, sa_episode in agent_episodes.items():
        sa_episode.agent_id, sa_episode.multi_agent_episode_id = agent_id, id_
        sa_episode.module_id = episode.module_for(agent_id)
        observed = list(range(sa_episode.t_started, sa_episode.t + 1))
        episode.env_t_to_agent_t[agent_id] = LookbackBuffer(
            observed + [NOT_OBSERVED] * (n_steps - len(sa_episode))
        )
        episode.bookkeeping.agent_episode_ids[agent_id] = sa_episode.id_
    episode.agent_episodes = dict(agent_episodes)
    if agent_episodes and all(e.is_done for e in agent_episodes.values()):
        episode.is_truncated = all(e.is_truncated for e in agent_episodes.values())
        episode.is_terminated = not episode.is_truncated
    return episode


def timeline(episode: MultiAgentEpisode) -> str:
    """A table of the env timesteps (lookback negative) at which each agent observed (``x``)."""
    lookback = episode.bookkeeping.env_lookback
    width = max([len("t"), *(len(str(agent_id)) for agent_id in episode.env_t_to_agent_t)])
    steps = range(-lookback, len(episode) + 1)
    lines = ["t".ljust(width) + "".join(f"{t:>4}" for t in steps)]
    for agent_id, mapping in episode.env_t_to_agent_t.items():
        marks = "".join("   x" if t != NOT_OBSERVED else "   ." for t in mapping.data)
        lines.append(str(agent_id).ljust(width) + marks)
    return "\n".join(lines)
