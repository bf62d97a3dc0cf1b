"""Building a `MultiAgentEpisode` from per-env-step data (what RLlib's constructor takes).

``observations[k]`` holds the observations of env timestep ``k``; ``actions[k]``,
``rewards[k]`` and ``extra_model_outputs[k]`` what the agents sent and got in env step ``k``
(from timestep ``k`` to ``k + 1``). The data is recorded step by step through
``add_env_step``, so an episode built from data and one recorded live are the same; then
the first ``len_lookback_buffer`` env steps become history, and the final done flags apply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flywheel.episodes.multi_agent_bookkeeping import end_in_flight_step
from flywheel.episodes.multi_agent_indexing import NOT_OBSERVED
from flywheel.errors import EpisodeError

if TYPE_CHECKING:
    from flywheel.episodes.multi_agent_episode import MultiAgentEpisode


def record_from_data(
    episode: MultiAgentEpisode, data: dict[str, Any], len_lookback_buffer: int | str
) -> None:
    """Records ``data`` (the constructor's lists and flags) into the empty ``episode``.

    ``terminateds``/``truncateds`` are either one dict per env step (flags as ``add_env_step``
    takes them) or, as in RLlib, one dict of final flags per agent (with ``"__all__"``), or a
    bool for the whole episode.
    """
    observations = data["observations"]
    n_steps = len(observations) - 1
    per_step = {name: data[name] for name in ("terminateds", "truncateds") if isinstance(data[name], list)}
    _check_lengths(episode, data, per_step, n_steps)
    lookback = _lookback_from(len_lookback_buffer, n_steps)
    episode.env_t_started = episode.env_t = episode.env_t_started - lookback
    infos, extras = data["infos"], data["extra_model_outputs"]
    episode.add_env_reset(observations=observations[0], infos=infos[0] if infos else None)
    for k in range(n_steps):
        episode.add_env_step(
            observations[k + 1],
            {a: v for a, v in data["actions"][k].items() if a in episode.bookkeeping.agents_to_act},
            data["rewards"][k],
            infos[k + 1] if infos else None,
            terminateds=per_step["terminateds"][k] if "terminateds" in per_step else None,
            truncateds=per_step["truncateds"][k] if "truncateds" in per_step else None,
            extra_model_outputs=extras[k] if extras else None,
        )
    if not per_step:
        _apply_final_flags(episode, _final(data["terminateds"]), _final(data["truncateds"]))
    _make_history(episode, lookback)
    _shift_agent_timesteps(episode, data["agent_t_started"] or {})
    episode.bookkeeping.start_time = (
        None  # Built, not played: no duration (as for a SingleAgentEpisode from data).
    )
    for sa_episode in episode.agent_episodes.values():
        sa_episode._start_time = None


def _check_lengths(episode: MultiAgentEpisode, data: dict, per_step: dict, n_steps: int) -> None:
    expected = {"infos": n_steps + 1, "actions": n_steps, "rewards": n_steps, "extra_model_outputs": n_steps}
    expected.update({name: n_steps for name in per_step})
    wrong = [
        f"{name} has {len(data[name] or ())} dicts, expected {n}"
        for name, n in expected.items()
        if (data[name] is not None or name in ("actions", "rewards")) and len(data[name] or ()) != n
    ]
    if wrong:
        raise EpisodeError(
            f"Cannot build episode {episode.id_} from {n_steps + 1} observation dicts ({n_steps} env steps): "
            f"{'; '.join(wrong)}. Pass one dict per env step (observations and infos: one more); "
            f"terminateds/truncateds as one dict per env step or one dict of final flags."
        )


def _lookback_from(len_lookback_buffer: int | str, n_steps: int) -> int:
    if len_lookback_buffer == "auto":
        return n_steps
    if not isinstance(len_lookback_buffer, int) or len_lookback_buffer < 0:
        raise EpisodeError(
            f"Expected len_lookback_buffer to be an int >= 0 or 'auto', got {len_lookback_buffer!r}."
        )
    return min(len_lookback_buffer, n_steps)


def _final(flags: dict | bool | None) -> dict:
    if isinstance(flags, bool):
        return {"__all__": flags}
    return dict(flags or {})


def _apply_final_flags(episode: MultiAgentEpisode, terminateds: dict, truncateds: dict) -> None:
    """Ends the agents flagged done (and the episode on ``"__all__"``) after the last recorded step.

    As in RLlib, an agent that observed before the last env timestep and neither acted on that
    observation nor observed again must have been done there: it counts as terminated.
    """
    all_terminated, all_truncated = bool(terminateds.get("__all__")), bool(truncateds.get("__all__"))
    for agent_id, sa_episode in episode.agent_episodes.items():
        if sa_episode.is_done:
            continue
        terminated = all_terminated or bool(terminateds.get(agent_id))
        truncated = all_truncated or bool(truncateds.get(agent_id))
        if agent_id in episode.bookkeeping.in_flight:
            if terminated or truncated:
                end_in_flight_step(episode, agent_id, terminated)
        elif truncated:
            sa_episode.is_truncated = True
        elif terminated or episode.env_t_to_agent_t[agent_id].data[-1] == NOT_OBSERVED:
            sa_episode.is_terminated = True
    book = episode.bookkeeping
    book.agents_to_act = {a for a in book.agents_to_act if not episode.agent_episodes[a].is_done}
    if all_terminated or all_truncated:
        episode.is_terminated, episode.is_truncated = all_terminated, all_truncated
    elif episode.agent_episodes and all(e.is_done for e in episode.agent_episodes.values()):
        episode.is_truncated = all(e.is_truncated for e in episode.agent_episodes.values())
        episode.is_terminated = not episode.is_truncated


def _make_history(episode: MultiAgentEpisode, n: int) -> None:
    """Turns the first ``n`` recorded env steps into lookback, as if a `cut` had happened after them."""
    episode.env_t_started += n
    episode.bookkeeping.env_lookback = n
    for agent_id, sa_episode in episode.agent_episodes.items():
        mapping = episode.env_t_to_agent_t[agent_id]
        mapping.lookback = n
        seen = [t for t in mapping.data[: n + 1] if t != NOT_OBSERVED]
        k = seen[-1] - sa_episode.t_started if seen else 0
        buffers = [sa_episode.observations, sa_episode.infos, sa_episode.actions, sa_episode.rewards]
        for buffer in [*buffers, *sa_episode.extra_model_outputs.values()]:
            buffer.lookback += k
        sa_episode.t_started += k


def _shift_agent_timesteps(episode: MultiAgentEpisode, agent_t_started: dict) -> None:
    """Moves each agent's timesteps so that its chunk starts at ``agent_t_started[agent_id]`` (default 0,
    as for the env steps: steps in the lookback then have negative timesteps)."""
    for agent_id, sa_episode in episode.agent_episodes.items():
        shift = agent_t_started.get(agent_id, 0) - sa_episode.t_started
        if not shift:
            continue
        sa_episode.t_started += shift
        sa_episode.t += shift
        mapping = episode.env_t_to_agent_t[agent_id]
        mapping.data = [t if t == NOT_OBSERVED else t + shift for t in mapping.data]
