"""`Prefetcher`: the local readers' train batches, read in the learner's thread or, with
`prefetch_batches >= 1` (`input_read_method_kwargs`), that many batches ahead on a background thread.

The thread is the only consumer of the episode stream, in order, so the batches are the ones reading
in the learner's thread gives, in the same order (the same seeded file order too): nothing is
skipped or read twice. It overlaps what releases the GIL (pyarrow's reading, torch's kernels) but
not the Python that builds episode chunks, which then waits for the learner's Python and the other
way round; on 2 cores it also takes a core from a learner on 2 torch threads. There, BC measured
2-8% (1 torch thread) and 11-25% (2) fewer rows/s with it, hence the default 0 (docs/concepts/offline.md).
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from flywheel.episodes import MultiAgentEpisode, SingleAgentEpisode
from flywheel.errors import OfflineDataError

_JOIN_TIMEOUT_S = 5.0
Episode = SingleAgentEpisode | MultiAgentEpisode
E = TypeVar("E", bound=Episode)
PREFETCH_KEY = "prefetch_batches"
"""The `input_read_method_kwargs` key of the local readers: train batches read ahead on a thread."""


def prefetch_depth(read_kwargs: dict) -> int:
    """`read_kwargs["prefetch_batches"]` (default 0), checked."""
    depth = read_kwargs.get(PREFETCH_KEY, 0)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise OfflineDataError(
            f"input_read_method_kwargs[{PREFETCH_KEY!r}]={depth!r}, but it must be an int >= 0 (train batches "
            f"read ahead on a background thread; 0 reads in the learner's thread). Fix: "
            f"config.offline_data(input_read_method_kwargs={{{PREFETCH_KEY!r}: 1}}), or leave it out."
        )
    return depth


class Prefetcher(Generic[E]):
    """`take(num_rows)`: the next whole episode chunks of `stream` holding at least `num_rows` steps.

    With `depth == 0` the caller's thread reads. Else the first `take` starts a daemon thread that
    reads batches of that many rows, `depth` batches ahead (a bounded queue: memory holds
    `depth + 1` batches). A `take` of another size draws from the same stream in the same order
    (what a batch holds beyond it comes first next time). An exception in the thread is raised by
    the `take` that reaches it, the original exception with the thread's traceback, and again by
    every later `take`.
    """

    def __init__(self, stream: Iterator[E], depth: int) -> None:
        self._stream = stream
        self._depth = depth
        self._queue: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=max(depth, 1))
        self._pending: deque[E] = deque()  # what the last batch holds beyond a take
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def take(self, num_rows: int) -> list[E]:
        """Whole episode chunks holding at least `num_rows` steps together (the last may overshoot)."""
        if self._error is not None:
            raise self._error
        if self._stopped.is_set():
            raise OfflineDataError(
                "The offline reader was stopped (the algorithm's stop() ends it), so it reads no more "
                "batches. Fix: build a new algorithm (or reader) to train on."
            )
        if self._depth == 0:
            return take_rows(self._stream, num_rows)
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._read, args=(num_rows,), name="flywheel-offline-prefetch", daemon=True
            )
            self._thread.start()
        return take_rows(iter(self._next_episode, None), num_rows)

    def stop(self) -> None:
        """Ends the thread (it finishes the batch it is reading, if any)."""
        self._stopped.set()
        while True:  # frees a thread blocked on the full queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._thread is not None:
            self._thread.join(_JOIN_TIMEOUT_S)

    def _next_episode(self) -> E:
        if not self._pending:
            ok, value = self._queue.get()
            if not ok:
                self._error = value
                raise value
            self._pending.extend(value)
        return self._pending.popleft()

    def _read(self, num_rows: int) -> None:
        while not self._stopped.is_set():
            try:
                item = (True, take_rows(self._stream, num_rows))
            except BaseException as error:  # noqa: BLE001 (handed to the learner's thread, raised there)
                item = (False, error)
            self._queue.put(item)
            if not item[0]:
                return


def take_rows(stream: Iterator[E], num_rows: int) -> list[E]:
    """Whole episode chunks from `stream` holding at least `num_rows` agent steps together."""
    episodes, rows = [], 0
    while rows < num_rows:
        episode = next(stream)
        episodes.append(episode)
        rows += episode.agent_steps()
    return episodes
