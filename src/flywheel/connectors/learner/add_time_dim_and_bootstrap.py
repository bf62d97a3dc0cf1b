"""`AddTimeDimToBatchAndBootstrap`: rows of timesteps, each run followed by its bootstrap element (V-trace).

V-trace (IMPALA, APPO) needs, for every step, the value of the observation after it: the next step's
own, or at the end of a run of steps the "bootstrap" value of the observation that follows it. This
piece lays each module's timesteps out as `[B, T]` rows in which every run of steps is followed by
one bootstrap element, so a row holds everything its steps need (rows can be shuffled, split into
minibatches or handed to different learners)::

    chunk a: 5 steps, chunk b: 3 steps, T = 6 (stateless: runs packed into rows)
    row 0:  a0 a1 a2 a3 a4 [a5]          [x] = bootstrap element (LOSS_MASK False)
    row 1:  b0 b1 b2 [b3] .  .           .   = padding
    T = 4:  a0 a1 a2 [a3] | a3 a4 [a5] b0 ... (a run cut at a row's end: its last element repeats
            the observation the next row starts with)

Runs are at most `T - 1` steps long. A stateless module's rows pack several chunks (the element
after a chunk's last step is its `AddOneTsToEpisodesAndTruncate` row: the observation it was cut or
truncated at, or its terminal one); a stateful module's rows hold one run each, starting at
`STATE_IN` (the runner's `STATE_OUT` of the step before), `T = model_config["max_seq_len"]`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from flywheel.columns import Columns
from flywheel.connectors.connector import ConnectorV2
from flywheel.connectors.learner.add_time_dim import states_at_sequence_starts
from flywheel.connectors.learner.module_episodes import (
    bootstrap_chunk_lens,
    module_episodes,
)
from flywheel.errors import ConnectorError
from flywheel.utils.nested import concat, num_rows

if TYPE_CHECKING:
    from flywheel.typing import EpisodeType

_DEFAULT_SEQUENCE_LENGTH = 50


class AddTimeDimToBatchAndBootstrap(ConnectorV2):
    """Turns each module's flat timesteps (one row per step plus one bootstrap row per chunk, from
    `AddOneTsToEpisodesAndTruncate` and the batching pieces) into `[B, T, ...]` rows of runs of steps,
    each run followed by its bootstrap element.

    Every column becomes `[B, T, ...]` (padding zeroed); `LOSS_MASK` is True exactly on the steps (a
    custom piece's False stays False); `SEQ_LENS` counts each row's elements (steps, bootstrap
    elements); stateful modules also get `STATE_IN` (`{name: [B, ...]}`). Runs right after
    `BatchIndividualItems` (on NumPy columns, before `NumpyToTensor`), in place of `AddTimeDimToBatchAndZeroPad`.

    Args:
        sequence_length: `T` for stateless modules (IMPALA's config passes its
            `rollout_fragment_length`); default 50. Stateful modules use their `max_seq_len`.
    """

    def __init__(
        self, input_observation_space=None, input_action_space=None, *, sequence_length=None, **kwargs
    ):
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.sequence_length = sequence_length

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
        chunk_lens = bootstrap_chunk_lens(shared_data, "AddTimeDimToBatchAndBootstrap")
        chunks: dict[str, list] = {}
        for module_id, episode in module_episodes(episodes):
            chunks.setdefault(module_id, []).append(episode)
        for module_id, columns in batch.items():
            module = rl_module[module_id]
            stateful = module.is_stateful()
            length = self._length(module, stateful)
            lens = list(chunk_lens[module_id])
            if num_rows(columns) != sum(lens):
                raise ConnectorError(
                    f"AddTimeDimToBatchAndBootstrap: module {module_id!r} has {num_rows(columns)} rows, expected "
                    f"{sum(lens)} (len(chunk) + 1 per chunk). Fix the piece that changed the row count."
                )
            layout = row_layout(lens, length, pack=not stateful)
            batch[module_id] = _rows(columns, layout, length)
            if stateful:
                batch[module_id][Columns.STATE_IN] = _states_in(module, chunks[module_id], layout.starts)
        return batch

    def _length(self, module: Any, stateful: bool) -> int:
        if stateful:
            length = module.model_config.get("max_seq_len", 20)
        else:
            length = self.sequence_length or _DEFAULT_SEQUENCE_LENGTH
        if length < 2:
            raise ConnectorError(
                f"AddTimeDimToBatchAndBootstrap needs rows of at least 2 elements (a step and its bootstrap), "
                f"got {length}. Fix: a rollout_fragment_length (or, for recurrent modules, max_seq_len) of 2 or more."
            )
        return length


class RowLayout(NamedTuple):
    """Where each element of the `[B, T]` rows comes from, as flat `[B * T]` arrays."""

    source: np.ndarray  # flat row index of each element (0 on padding)
    is_step: np.ndarray  # True on steps, False on bootstrap elements and padding
    used: np.ndarray  # False on padding
    starts: list[tuple[int, int]]  # per row: (chunk, step) of its first element


def row_layout(chunk_rows: list[int], length: int, *, pack: bool) -> RowLayout:
    """The rows for chunks of `chunk_rows[i] - 1` steps (plus a bootstrap row each), stored one after
    another; `pack` lets a row hold runs of several chunks (else each run starts a row)."""
    offsets = np.concatenate([[0], np.cumsum(chunk_rows)[:-1]]).astype(np.int64)
    runs: list[tuple[int, int, int, int]] = []  # (row, column, first flat row, steps)
    starts: list[tuple[int, int]] = []
    row, pos = 0, 0
    for chunk, rows in enumerate(chunk_rows):
        step = 0
        while step < rows - 1:
            if pos > 0 and (not pack or length - pos < 2):
                row, pos = row + 1, 0
            if pos == 0:
                starts.append((chunk, step))
            steps = min(rows - 1 - step, length - pos - 1)
            runs.append((row, pos, int(offsets[chunk]) + step, steps))
            pos += steps + 1
            step += steps
    num = (row + 1) * length if runs else 0
    source = np.zeros(num, dtype=np.int64)
    is_step = np.zeros(num, dtype=bool)
    used = np.zeros(num, dtype=bool)
    for row, pos, first, steps in runs:
        at = row * length + pos
        source[at : at + steps + 1] = np.arange(first, first + steps + 1)
        is_step[at : at + steps] = True
        used[at : at + steps + 1] = True
    return RowLayout(source, is_step, used, starts)


def _rows(columns: dict, layout: RowLayout, length: int) -> dict:
    """Every column gathered into `[B, T, ...]` (leaf-wise), `LOSS_MASK` and `SEQ_LENS` set."""
    out = {column: _gather(data, layout, length) for column, data in columns.items()}
    is_step = layout.is_step.reshape(-1, length)
    mask = out.get(Columns.LOSS_MASK)
    out[Columns.LOSS_MASK] = is_step if mask is None else is_step & mask.astype(bool)
    out[Columns.SEQ_LENS] = layout.used.reshape(-1, length).sum(axis=1).astype(np.int32)
    return out


def _gather(data: Any, layout: RowLayout, length: int) -> Any:
    if isinstance(data, dict):
        return {key: _gather(value, layout, length) for key, value in data.items()}
    data = np.asarray(data)
    out = data[layout.source]
    if out.dtype != object:
        out[~layout.used] = 0
    return out.reshape((-1, length) + data.shape[1:])


def _states_in(module: Any, chunks: list, starts: list[tuple[int, int]]) -> dict:
    """`STATE_IN` of each row (one run each): the state before its first step."""
    by_chunk: dict[int, list[int]] = {}
    for chunk, step in starts:
        by_chunk.setdefault(chunk, []).append(step)
    return concat(
        [states_at_sequence_starts(module, chunks[chunk], steps) for chunk, steps in by_chunk.items()]
    )
