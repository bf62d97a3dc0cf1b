"""Helpers the learner pieces share: which module an episode trains, and per-module batch items.

The learner batch is `{module_id: {column: items}}`. While the pipeline runs, `items` is a list
with one array per episode chunk (leading dim = that chunk's rows, chunks in the order
`module_episodes` yields them) or, when a piece already built the whole column, one array;
`BatchIndividualItems` concatenates the lists.

Replayed transitions (`TransitionEpisodes`) are one-step episodes held as columns: while no piece
has asked for their episode objects, `transition_blocks` gives the default pieces those columns,
one block per module, and each piece adds a block's column in one go.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from flywheel.connectors.batch_items import episode_key, is_keyed, move_keyed_columns, stack_rows, take_rows
from flywheel.episodes.transition_episodes import TransitionBlock, TransitionEpisodes
from flywheel.errors import ConnectorError
from flywheel.typing import DEFAULT_MODULE_ID, ModuleID

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType

# `shared_data` key under which `AddOneTsToEpisodesAndTruncate` records, per module, the number
# of rows of each chunk (its steps plus the one bootstrap timestep), in `module_episodes` order.
BOOTSTRAP_CHUNK_LENS = "bootstrap_chunk_lens"


def module_episodes(episodes: list[EpisodeType]) -> Iterator[tuple[ModuleID, Any]]:
    """Yields `(module_id, single_agent_episode)` for every chunk with at least one step.

    A `SingleAgentEpisode` trains `episode.module_id` (the default policy when unset); a
    multi-agent episode yields each agent's episode with the module its agent maps to.
    Empty chunks carry nothing to train on and are skipped by every learner piece alike.
    """
    for episode in episodes:
        agent_episodes = getattr(episode, "agent_episodes", None)
        if agent_episodes is None:
            if len(episode) > 0:
                yield (getattr(episode, "module_id", None) or DEFAULT_MODULE_ID), episode
            continue
        for agent_id, agent_episode in agent_episodes.items():
            if len(agent_episode) > 0:
                yield agent_episode.module_id or episode.module_for(agent_id), agent_episode


def transition_blocks(episodes: Any) -> list[tuple[ModuleID, TransitionBlock]] | None:
    """`[(module_id, block)]` of replayed transitions whose episode objects no piece asked for (their
    columns are still the data), else None (read the episodes with `module_episodes`)."""
    if not isinstance(episodes, TransitionEpisodes) or episodes.touched:
        return None
    return [(block.module_id or DEFAULT_MODULE_ID, block) for block in episodes.blocks]


def add_transition_column(
    batch: dict, blocks: list[tuple[ModuleID, TransitionBlock]], column: str, preset: set[ModuleID]
) -> None:
    """Adds `column` of every block (`transition_blocks`) whose module is not in `preset`."""
    for module_id, block in blocks:
        if module_id not in preset:
            add_module_item(batch, module_id, column, block.columns[column])


def bootstrap_chunk_lens(shared_data: dict | None, piece: str) -> dict:
    """The chunk lengths `AddOneTsToEpisodesAndTruncate` recorded, which `piece` (its name) needs."""
    chunk_lens = (shared_data or {}).get(BOOTSTRAP_CHUNK_LENS)
    if chunk_lens is None:
        raise ConnectorError(
            f"{piece} needs the bootstrap timestep of each chunk, but no AddOneTsToEpisodesAndTruncate ran "
            "before it. Fix: pipeline.prepend(AddOneTsToEpisodesAndTruncate())."
        )
    return chunk_lens


def add_module_item(batch: dict, module_id: ModuleID, column: str, item: object) -> None:
    """Appends one chunk's `item` to `batch[module_id][column]` (a list of per-chunk items)."""
    columns = batch.get(module_id)
    if columns is None:
        batch[module_id] = {column: [item]}
        return
    items = columns.get(column)
    if items is None:
        columns[column] = [item]
    else:
        items.append(item)


def place_episode_items(batch: dict, episodes: list[EpisodeType]) -> None:
    """Moves the episode-keyed columns custom pieces added (`ConnectorV2.add_batch_item` with an
    episode) into the learner layout: `batch[module_id][column]`, one array per chunk (`len(chunk)`
    rows, the bootstrap timestep included when `AddOneTsToEpisodesAndTruncate` ran), in `module_episodes` order."""
    if not any(is_keyed(value) for value in batch.values()):
        return

    def place(column: str, items_by_key: dict) -> None:
        for module_id, episode in module_episodes(episodes):
            items = take_rows(items_by_key, episode_key(episode), len(episode))
            if items:
                add_module_item(batch, module_id, column, stack_rows(items))

    move_keyed_columns(batch, place)


def modules_with_column(batch: dict, column: str) -> set[ModuleID]:
    """Modules for which an earlier piece already set `column` (those pieces own it there)."""
    return {module_id for module_id, columns in batch.items() if column in columns}


def terminated_column(rows: int, last_real: int, flag: bool) -> np.ndarray:
    """A bool column of `rows` False values with `flag` at row `last_real`."""
    column = np.zeros(rows, dtype=bool)
    column[last_real] = flag
    return column


__all__ = [
    "BOOTSTRAP_CHUNK_LENS",
    "add_module_item",
    "add_transition_column",
    "bootstrap_chunk_lens",
    "modules_with_column",
    "module_episodes",
    "place_episode_items",
    "terminated_column",
    "transition_blocks",
]
