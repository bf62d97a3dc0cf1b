"""Which agent of which episode fills which row of a multi-agent module batch.

On a multi-agent runner the env-to-module pipeline builds `{module_id: {column: batched}}`: one
row per agent that acts next, rows ordered by (episode index, agent id sorted), each row in the
batch of the module its agent maps to. Every default piece and the runner (which maps the
module-to-env output back to `{agent_id: action}` per sub-env) read that layout from here, so
they agree on it by construction. It is computed once per pipeline call and kept in
`shared_data`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from flywheel.connectors.batch_items import episode_key, is_keyed, move_keyed_columns, take_rows
from flywheel.core.rl_module.rl_module import RLModule
from flywheel.episodes import MultiAgentEpisode
from flywheel.typing import AgentID, ModuleID

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType

AGENT_ROWS = "agent_rows"
"""`shared_data` key of the `{module_id: ModuleRows}` layout of the current call."""


class ModuleRows(NamedTuple):
    """The rows of one module's batch: the agent episodes and where each came from."""

    episodes: list[EpisodeType]
    """The agents' `SingleAgentEpisode`s, one per row."""
    keys: list[tuple[int, AgentID]]
    """`(episode index, agent id)` of each row."""


def is_multi_agent(episodes: list[EpisodeType]) -> bool:
    """Whether `episodes` are `MultiAgentEpisode`s (checked on the first one: pipelines get one kind)."""
    return bool(episodes) and isinstance(episodes[0], MultiAgentEpisode)


def is_stateless(rl_module: RLModule) -> bool:
    """Whether `rl_module` is one `RLModule` without recurrent state (never a `MultiRLModule`, whose
    modules may change between calls)."""
    return isinstance(rl_module, RLModule) and not rl_module.is_stateful()


def column_dicts(batch: dict[str, Any], episodes: list[EpisodeType]) -> Iterable[dict[str, Any]]:
    """The column dicts of a batch: each module's (`batch[module_id]`) for `MultiAgentEpisode`s, else
    the batch itself, so pieces that treat every column alike run one loop for both kinds."""
    return batch.values() if is_multi_agent(episodes) else (batch,)


def agent_rows(episodes: list[Any], shared_data: dict | None = None) -> dict[ModuleID, ModuleRows]:
    """The row layout of the agents to act in `episodes` (from `shared_data` when already there)."""
    if shared_data is not None:
        cached = shared_data.get(AGENT_ROWS)
        if cached is not None:
            return cached
    rows: dict[ModuleID, ModuleRows] = {}
    for index, episode in enumerate(episodes):
        agent_episodes = episode.agent_episodes
        to_act = episode.get_agents_to_act()
        for agent_id in sorted(to_act, key=str) if len(to_act) > 1 else to_act:
            module_id = episode.module_for(agent_id)
            module_rows = rows.get(module_id)
            if module_rows is None:
                module_rows = rows[module_id] = ModuleRows([], [])
            module_rows.episodes.append(agent_episodes[agent_id])
            module_rows.keys.append((index, agent_id))
    if shared_data is not None:
        shared_data[AGENT_ROWS] = rows
    return rows


def place_episode_items(batch: dict[str, Any], episodes: list[EpisodeType], shared_data: dict | None) -> None:
    """Moves the episode-keyed columns custom pieces added (`ConnectorV2.add_batch_item` with an
    episode) into this layout: `batch[column]` with one row per episode, or for `MultiAgentEpisode`s
    `batch[module_id][column]` with one row per agent to act."""
    for value in batch.values():  # (a loop, not any(): this runs twice per forward pass)
        if is_keyed(value):
            break
    else:
        return
    if is_multi_agent(episodes):
        rows = agent_rows(episodes, shared_data)

        def place(column: str, items_by_key: dict) -> None:
            for module_id, module_rows in rows.items():
                batch.setdefault(module_id, {})[column] = [
                    item
                    for episode in module_rows.episodes
                    for item in take_rows(items_by_key, episode_key(episode), None)
                ]

    else:

        def place(column: str, items_by_key: dict) -> None:
            batch[column] = [
                item for episode in episodes for item in take_rows(items_by_key, episode_key(episode), None)
            ]

    move_keyed_columns(batch, place)
