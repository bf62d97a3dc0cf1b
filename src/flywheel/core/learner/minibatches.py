"""How a learner's train batch becomes epochs of minibatches.

A module's rows are split into `ceil(rows / minibatch_rows)` near-equal parts (as
`np.array_split` splits), so minibatches hold `minibatch_size` rows or slightly fewer, never a
tiny remainder. Rows of a stateful module are whole sequences, as many per minibatch as hold
`minibatch_size` timesteps on average: `int(sequences * minibatch_size / sum(SEQ_LENS))`, RLlib's
count (so short sequences, e.g. at episode ends, give more of them per minibatch). With shuffling, each epoch gathers every column once in a
new row order and its minibatches are slices (views) of that; a single minibatch of all rows is
left in its order (a new one would change only the rounding of its sums, at the cost of a gather).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from flywheel.columns import Columns
from flywheel.typing import ModuleID
from flywheel.utils.nested import num_rows


def iter_minibatches(
    batch: dict[ModuleID, dict],
    num_epochs: int,
    minibatch_size: int | None,
    *,
    rng: np.random.Generator | None,
    take_rows: Callable[[dict, np.ndarray], dict],
    minibatch_counts: Callable[[dict[ModuleID, int]], dict[ModuleID, int]] = lambda counts: counts,
) -> Iterator[dict[ModuleID, dict]]:
    """Epochs x minibatches of `batch` (`{module_id: columns}`); each epoch covers every row of every
    module once. `rng` shuffles rows per epoch (None: keep their order); `take_rows(columns, rows)`
    gathers rows; `minibatch_counts` may raise the per-module counts (distributed learners align them)."""
    rows = {mid: num_rows(columns) for mid, columns in batch.items()}
    per_minibatch = {
        mid: rows[mid] if minibatch_size is None else _rows_per_minibatch(columns, rows[mid], minibatch_size)
        for mid, columns in batch.items()
    }
    counts = minibatch_counts({mid: max(1, -(-n // per_minibatch[mid])) for mid, n in rows.items()})
    bounds = {mid: _split_bounds(n, counts[mid]) for mid, n in rows.items()}
    if all(count == 1 for count in counts.values()):
        rng = None  # one minibatch of all rows (see the module docstring)
    for _ in range(num_epochs):
        epoch = (
            batch
            if rng is None
            else {mid: take_rows(batch[mid], rng.permutation(n)) for mid, n in rows.items()}
        )
        for i in range(max(counts.values(), default=0)):
            yield {mid: _slice(epoch[mid], *bounds[mid][i]) for mid in epoch if i < len(bounds[mid])}


def num_steps(columns: dict) -> int:
    """Timesteps a module's columns hold: the `LOSS_MASK` count, else the rows."""
    mask = columns.get(Columns.LOSS_MASK)
    return int(mask.sum()) if mask is not None else num_rows(columns)


def _split_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """`(start, stop)` of `parts` near-equal consecutive parts of `n` rows (the larger ones first,
    as `np.array_split` splits)."""
    size, extra = divmod(n, parts)
    stops = np.cumsum([size + (i < extra) for i in range(parts)]).tolist()
    return list(zip([0, *stops[:-1]], stops, strict=True))


def _slice(data: Any, start: int, stop: int) -> Any:
    """Rows `start:stop` of every column (leaf-wise for nested columns)."""
    if isinstance(data, dict):
        return {key: _slice(value, start, stop) for key, value in data.items()}
    if isinstance(data, tuple):
        return tuple(_slice(value, start, stop) for value in data)
    return data[start:stop]


def _rows_per_minibatch(columns: dict, rows: int, minibatch_size: int) -> int:
    """`minibatch_size` rows, or for a stateful module's sequence rows (of `SEQ_LENS` timesteps each) as
    many as hold `minibatch_size` timesteps on average (at least one)."""
    seq_lens = columns.get(Columns.SEQ_LENS)
    if seq_lens is None:
        return minibatch_size
    return max(1, int(rows * (minibatch_size / max(1, int(seq_lens.sum())))))
