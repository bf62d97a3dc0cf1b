"""RLlib's batch-item helpers for custom connector pieces, and how their items reach flywheel's batches.

A custom piece adds data with `ConnectorV2.add_batch_item(batch, column, item, episode)` (or
`add_n_batch_items` for several rows at once). As in RLlib, an item that names its episode is
stored under the episode's key: `batch[column][(episode_id,)]`, or for an agent of a multi-agent
episode `batch[column][(multi_agent_episode_id, agent_id, module_id)]`, so the order in which a
piece visits episodes does not matter. The first default piece of a pipeline (and the batching
piece) moves such columns into the layout flywheel's pipelines use: `batch[column]` as one row per
episode (single-agent env-to-module), `batch[module_id][column]` as one row per agent to act
(multi-agent env-to-module, see `agent_rows`), or one array per episode chunk in
`module_episodes` order (learner). Items added without an episode stay a plain list, in call order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from flywheel.errors import ConnectorError
from flywheel.utils.nested import concat, num_rows, stack

EpisodeKey = tuple


class BatchedItems:
    """Several rows added at once by `add_n_batch_items` (leading dimension = rows)."""

    __slots__ = ("data", "num_items")

    def __init__(self, data: object, num_items: int) -> None:
        self.data = data
        self.num_items = num_items


def episode_key(single_agent_episode: Any) -> EpisodeKey:
    """`(episode_id,)`, or `(multi_agent_episode_id, agent_id, module_id)` for an agent's episode."""
    if single_agent_episode.agent_id is None:
        return (single_agent_episode.id_,)
    return (
        single_agent_episode.multi_agent_episode_id,
        single_agent_episode.agent_id,
        single_agent_episode.module_id,
    )


def add_batch_item(
    batch: dict[str, Any], column: str, item_to_add: Any, single_agent_episode: Any = None
) -> None:
    """Adds one row to `batch[column]`: to a plain list without an episode, else under the episode's
    key (see the module docstring)."""
    if single_agent_episode is None:
        batch.setdefault(column, []).append(item_to_add)
        return
    module_id = single_agent_episode.module_id
    if module_id is not None and isinstance(batch.get(module_id), dict) and not is_keyed(batch[module_id]):
        raise ConnectorError(
            f"add_batch_item(batch, {column!r}, ...) was called on a batch that is already keyed by module "
            f"id ({module_id!r} holds its columns). Fix: add items before the default pieces run (custom "
            f"pieces run first), or set batch[{module_id!r}][{column!r}] directly."
        )
    batch.setdefault(column, {}).setdefault(episode_key(single_agent_episode), []).append(item_to_add)


def add_n_batch_items(
    batch: dict[str, Any], column: str, items_to_add: Any, num_items: int, single_agent_episode: Any = None
) -> None:
    """Adds `num_items` rows at once: a list of rows, or an array (or nested structure of arrays)
    whose leading dimension is `num_items`."""
    if isinstance(items_to_add, list):
        if len(items_to_add) != num_items:
            raise ConnectorError(
                f"add_n_batch_items(num_items={num_items}) got a list of {len(items_to_add)} items for "
                f"column {column!r}. Fix: pass num_items=len(items_to_add)."
            )
        for item in items_to_add:
            add_batch_item(batch, column, item, single_agent_episode)
        return
    rows = num_rows(items_to_add)
    if rows != num_items:
        raise ConnectorError(
            f"add_n_batch_items(num_items={num_items}) got data with {rows} rows (leading dimension) for "
            f"column {column!r}. Expected num_items rows."
        )
    add_batch_item(batch, column, BatchedItems(items_to_add, num_items), single_agent_episode)


def is_keyed(value: object) -> bool:
    """Whether `value` is a column of episode-keyed items (a dict with tuple keys)."""
    return isinstance(value, dict) and bool(value) and isinstance(next(iter(value)), tuple)


def stack_rows(items: list[Any]) -> Any:
    """One array (leaf-wise for nested items) of all rows in `items`, where each item is a row or a
    `BatchedItems` of several rows."""
    if BatchedItems not in map(type, items):  # (faster than any(isinstance(...)) per step)
        return stack(items)
    return concat([item.data if isinstance(item, BatchedItems) else stack([item]) for item in items])


def rows_of(items: list[Any]) -> int:
    return sum(item.num_items if isinstance(item, BatchedItems) else 1 for item in items)


def move_keyed_columns(batch: dict[str, Any], place: Callable[[str, dict[EpisodeKey, list]], None]) -> None:
    """Hands every episode-keyed top-level column to `place(column, items_by_key)` and removes it
    from the top level; `place` must use up every key (leftovers raise, naming them)."""
    for column in [key for key, value in batch.items() if is_keyed(value)]:
        items_by_key = batch.pop(column)
        place(column, items_by_key)
        unused = [key for key, items in items_by_key.items() if items]
        if unused:
            raise ConnectorError(
                f"Column {column!r} has items for episode keys {unused} that match no row of this batch "
                "(no such episode, or an agent that does not act now). Fix: add items only for the "
                "episodes (and agents) the pipeline is called with."
            )


def take_rows(items_by_key: dict[EpisodeKey, list], key: EpisodeKey, rows: int | None) -> list:
    """Removes and returns the items of `key` that make up the next `rows` rows (all of them: None)."""
    items = items_by_key.get(key, [])
    if rows is None:
        items_by_key[key] = []
        return items
    taken, count = [], 0
    while items and count < rows:
        item = items.pop(0)
        taken.append(item)
        count += rows_of([item])
    return taken


def foreach_batch_item_change_in_place(
    batch: dict[str, Any], column: str | list[str] | tuple[str, ...], func: Callable[..., Any]
) -> None:
    """Replaces every row of `column` (or of several columns at once) by `func(item, episode_id,
    agent_id, module_id)`. With several columns `item` is a tuple and `func` returns a tuple. Works
    on plain lists, episode-keyed columns, batched arrays (row by row, ids None) and module-keyed
    batches (`batch[module_id][column]`, module_id given)."""
    columns = [column] if isinstance(column, str) else list(column)
    if all(name in batch for name in columns):
        _change_rows(batch, columns, func, None)
        return
    holders = [
        (mid, sub) for mid, sub in batch.items() if isinstance(sub, dict) and all(c in sub for c in columns)
    ]
    if not holders:
        raise ConnectorError(
            f"foreach_batch_item_change_in_place: column(s) {columns} not in the batch; its top-level keys "
            f"are {list(batch)}."
        )
    for module_id, sub_batch in holders:
        _change_rows(sub_batch, columns, func, module_id)


def _change_rows(holder: dict, columns: list[str], func: Callable, module_id: Any) -> None:
    single = len(columns) == 1
    data = [holder[name] for name in columns]

    def apply(rows: tuple, ids: tuple) -> tuple:
        result = func(rows[0] if single else rows, *ids)
        return (result,) if single else tuple(result)

    if is_keyed(data[0]):
        for key in data[0]:
            ids = (key[0], None, None) if len(key) == 1 else key
            results = [apply(rows, ids) for rows in zip(*(d[key] for d in data), strict=True)]
            for name, column_results in zip(columns, zip(*results, strict=True), strict=True):
                holder[name][key] = list(column_results)
        return
    results = [apply(rows, (None, None, module_id)) for rows in zip(*data, strict=True)]
    for name, original, column_results in zip(columns, data, zip(*results, strict=True), strict=True):
        holder[name] = (
            list(column_results) if isinstance(original, list) else _restack(original, column_results)
        )


def _restack(original: Any, rows: tuple) -> Any:
    if hasattr(original, "new_tensor"):  # a torch tensor: stack with torch, on its device
        import torch

        return torch.stack([torch.as_tensor(row, device=original.device) for row in rows])
    return np.stack(rows)


def single_agent_episode_iterator(
    episodes: list[Any], agents_that_stepped_only: bool = True, zip_with_batch_column: Any = None
) -> Iterator[Any]:
    """Yields every `SingleAgentEpisode` of `episodes` (a multi-agent episode's agent episodes, only
    those of agents that just stepped unless `agents_that_stepped_only=False`; agents in sorted
    order). With `zip_with_batch_column` (a list or array with one row per yielded episode, or an
    episode-keyed column) it yields `(episode, row)` pairs."""
    single = list(_agent_episodes(episodes, agents_that_stepped_only))
    if zip_with_batch_column is None:
        yield from single
    elif is_keyed(zip_with_batch_column):
        cursor: dict[EpisodeKey, int] = defaultdict(int)
        for episode in single:
            key = episode_key(episode)
            items = zip_with_batch_column.get(key, [])
            if cursor[key] >= len(items):
                raise ConnectorError(
                    f"zip_with_batch_column has no more items for episode key {key}; it must hold one item "
                    "per episode the iterator yields."
                )
            yield episode, items[cursor[key]]
            cursor[key] += 1
    else:
        if len(zip_with_batch_column) != len(single):
            raise ConnectorError(
                f"zip_with_batch_column has {len(zip_with_batch_column)} rows for {len(single)} episodes; "
                "it must hold one row per episode the iterator yields."
            )
        yield from zip(single, zip_with_batch_column, strict=True)


def _agent_episodes(episodes: list[Any], agents_that_stepped_only: bool) -> Iterator[Any]:
    for episode in episodes:
        agent_episodes = getattr(episode, "agent_episodes", None)
        if agent_episodes is None:
            yield episode
            continue
        agent_ids = episode.get_agents_that_stepped() if agents_that_stepped_only else agent_episodes
        for agent_id in sorted(agent_ids, key=str):
            if agent_id in agent_episodes:
                yield agent_episodes[agent_id]


def switch_batch_from_column_to_module_ids(batch: dict[str, dict]) -> dict[Any, dict[str, Any]]:
    """`{column: {module_id: data}}` as `{module_id: {column: data}}`."""
    switched: dict[Any, dict[str, Any]] = defaultdict(dict)
    for column, per_module in batch.items():
        for module_id, data in per_module.items():
            switched[module_id][column] = data
    return dict(switched)
