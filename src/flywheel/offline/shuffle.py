"""Row-level shuffling of offline data (`config.offline_data(iter_batches_kwargs=...)`, RLlib's setting).

Recorded rows come in the order they were sampled: a train batch of 256 consecutive Pendulum rows is
one or two whole episodes, highly correlated. Learners that train on single transitions (CQL) need
rows from all over the data in every batch. `iter_batches_kwargs={"local_shuffle_buffer_size": n}`
(Ray Data's name and meaning) streams the rows through a buffer of at least n rows and hands them out
in random order: memory holds the buffer, never the dataset. With `num_learners >= 1` Ray Data's own
`iter_batches(local_shuffle_buffer_size=n)` does it; with a local learner `shuffled` below (Parquet
rows) or `shuffled_steps` (the steps of episodes read whole, as from a Minari dataset).

The options (with the algorithm's defaults) come from `flywheel.offline.options.iter_batches_options`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from flywheel.episodes.single_agent_episode import SingleAgentEpisode


def shuffled(
    batches: Iterator[pa.RecordBatch], buffer_size: int, rng: np.random.Generator, out_rows: int
) -> Iterator[pa.RecordBatch]:
    """The rows of `batches` in random order, as record batches of up to `out_rows` rows.

    Rows gather in a buffer until it holds `2 * buffer_size`; then it is permuted, the first half
    leaves and the other half stays for the next round. So every row handed out was drawn from at
    least `2 * buffer_size` rows, each row is handed out once, and memory holds at most
    `2 * buffer_size` rows plus one input batch. When `batches` ends, the rest leaves permuted.
    """
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        pending.append(batch)
        rows += batch.num_rows
        if rows < 2 * buffer_size:
            continue
        table = pa.Table.from_batches(pending).take(rng.permutation(rows))
        yield from table.slice(0, rows - buffer_size).to_batches(max_chunksize=out_rows)
        pending = table.slice(rows - buffer_size).combine_chunks().to_batches()
        rows = buffer_size
    if rows:
        yield from pa.Table.from_batches(pending).take(rng.permutation(rows)).to_batches(out_rows)


def shuffled_steps(
    episodes: Iterator[SingleAgentEpisode], buffer_size: int, rng: np.random.Generator
) -> Iterator[SingleAgentEpisode]:
    """The steps of `episodes` in random order, each a one-step chunk (its observation, action, reward,
    next observation, and the done flags if it is its episode's last step), drawn as `shuffled` draws
    rows: from a buffer of `2 * buffer_size` steps, half of which stays for the next round."""
    steps: list[SingleAgentEpisode] = []
    for episode in episodes:
        steps.extend(episode.slice(slice(t, t + 1), len_lookback_buffer=0) for t in range(len(episode)))
        if len(steps) < 2 * buffer_size:
            continue
        order = rng.permutation(len(steps))
        yield from (steps[i] for i in order[: len(steps) - buffer_size])
        steps = [steps[i] for i in order[len(steps) - buffer_size :]]
    yield from (steps[i] for i in rng.permutation(len(steps)))
