"""`AddTimeDimToBatchAndZeroPad`: sequences of `max_seq_len` rows for stateful (recurrent) modules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner.module_episodes import (
    module_episodes,
    transition_blocks,
)
from flywheel.errors import ConnectorError
from flywheel.utils.nested import concat, num_rows, stack, take
from flywheel.utils.numpy import convert_to_numpy

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType

_DEFAULT_MAX_SEQ_LEN = 20


class AddTimeDimToBatchAndZeroPad(ConnectorV2):
    """Splits each chunk of a stateful module into sequences of `max_seq_len` rows, zero-padded.

    Every column of such a module becomes `[num_sequences, max_seq_len, ...]`; `SEQ_LENS` holds
    each sequence's real length, `LOSS_MASK` is False on padding, and `STATE_IN` (`{name:
    [num_sequences, ...]}`) is the recurrent state at each sequence start: the `STATE_OUT` the
    runner stored for the step before it (from the lookback buffer for a chunk's first
    sequence), or the module's initial state at an episode's very first step. Sequences never
    cross chunk boundaries. Stateless modules are left alone.

    Args:
        max_seq_len: Sequence length; default: the module's `model_config["max_seq_len"]` (20).
    """

    def __init__(self, input_observation_space=None, input_action_space=None, *, max_seq_len=None, **kwargs):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.max_seq_len = max_seq_len

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[EpisodeType],
        explore: bool | None = None,
        shared_data: dict | None = None,
        metrics: Any = None,
        **kwargs: object,
    ) -> dict[str, Any]:
        blocks = transition_blocks(episodes)
        if blocks is not None and not any(_stateful(rl_module, module_id) for module_id, _ in blocks):
            return batch  # replayed transitions of stateless modules: nothing to do, episodes untouched
        chunks: dict[str, list] = {}
        for module_id, episode in module_episodes(episodes):
            chunks.setdefault(module_id, []).append(episode)
        for module_id, module_chunks in chunks.items():
            module = rl_module[module_id]
            if not module.is_stateful():
                continue
            max_seq_len = self.max_seq_len or module.model_config.get("max_seq_len", _DEFAULT_MAX_SEQ_LEN)
            rows = [len(episode) for episode in module_chunks]
            columns = batch[module_id]
            if Columns.LOSS_MASK not in columns:
                columns[Columns.LOSS_MASK] = [np.ones(n, dtype=bool) for n in rows]
            for column, items in columns.items():
                per_chunk = _split_per_chunk(items, rows, module_id, column)
                columns[column] = [_to_sequences(item, max_seq_len) for item in per_chunk]
            columns[Columns.SEQ_LENS] = [_seq_lens(n, max_seq_len) for n in rows]
            columns[Columns.STATE_IN] = [
                states_at_sequence_starts(module, episode, list(range(0, n, max_seq_len)))
                for episode, n in zip(module_chunks, rows)
            ]
        return batch


def _stateful(rl_module: Any, module_id: str) -> bool:
    return module_id in rl_module and rl_module[module_id].is_stateful()


def _split_per_chunk(items: Any, rows: list[int], module_id: str, column: str) -> list:
    """Per-chunk items, splitting a column an earlier piece built as one array."""
    if not isinstance(items, list):
        total = num_rows(items)
        if total != sum(rows):
            raise ConnectorError(
                f"batch[{module_id!r}][{column!r}] has {total} rows, expected {sum(rows)} (one per "
                f"timestep of the module's chunks). Fix the piece that sets {column!r}."
            )
        bounds = np.cumsum(rows)[:-1]
        return [take(items, slice(start, end)) for start, end in zip([0, *bounds], [*bounds, total])]
    for item, n in zip(items, rows):
        if num_rows(item) != n:
            raise ConnectorError(
                f"batch[{module_id!r}][{column!r}] has a chunk item with {num_rows(item)} rows, expected {n}. "
                f"Fix the piece that sets {column!r}: one row per timestep of each chunk."
            )
    return items


def _to_sequences(data: Any, max_seq_len: int) -> Any:
    """`[rows, ...]` → `[ceil(rows / max_seq_len), max_seq_len, ...]`, zero-padded at the end."""
    if isinstance(data, dict):
        return {key: _to_sequences(value, max_seq_len) for key, value in data.items()}
    if isinstance(data, tuple):
        return tuple(_to_sequences(value, max_seq_len) for value in data)
    data = np.asarray(data)
    num_seqs = -(-len(data) // max_seq_len)
    padded = np.zeros((num_seqs * max_seq_len,) + data.shape[1:], dtype=data.dtype)
    padded[: len(data)] = data
    return padded.reshape((num_seqs, max_seq_len) + data.shape[1:])


def _seq_lens(rows: int, max_seq_len: int) -> np.ndarray:
    num_seqs = -(-rows // max_seq_len)
    lens = np.full(num_seqs, max_seq_len, dtype=np.int32)
    lens[-1] = rows - (num_seqs - 1) * max_seq_len
    return lens


def states_at_sequence_starts(module: Any, episode: Any, starts: list[int]) -> dict:
    """`STATE_IN` for sequences of `episode` (a chunk) starting at the steps `starts` (the first is
    0): the stored `STATE_OUT` of the step before each start (from the lookback buffer for step 0),
    or the module's initial state at an episode's very first step."""
    before_starts = [start - 1 for start in starts[1:]]
    if episode.t_started == 0:
        initial = convert_to_numpy(module.get_initial_state(), reduce_type=False)
        first = {name: np.asarray(value) for name, value in initial.items()}
    else:
        first = episode.get_extra_model_outputs(Columns.STATE_OUT, -1, neg_index_as_lookback=True)
    first = stack([first])
    if not before_starts:
        return first
    later = stack(episode.get_extra_model_outputs(Columns.STATE_OUT, before_starts))
    return concat([first, later])
