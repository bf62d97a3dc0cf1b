"""`new_episode_id()`: a unique episode id, as cheap as a counter.

Runners start an episode (and one `SingleAgentEpisode` per agent of a multi-agent one) every
few dozen steps, so `uuid.uuid4()` (an OS random read per id) was a visible share of sampling.
Instead, each process draws one random 128-bit start and steps it by a fixed odd constant (a
Weyl sequence): ids of one process never repeat within 2**128 calls, ids of different
processes (or forked children, which draw a new start) collide only by the chance of two random
128-bit draws, and consecutive ids still differ in their leading digits (episode reprs show the
first 8). The id is 32 lowercase hex digits, like `uuid4().hex`.
"""

from __future__ import annotations

import itertools
import os

_MASK = (1 << 128) - 1
_STEP = 0x9E3779B97F4A7C15F39CC0605CEDC835  # odd (2**128 / golden ratio): a bijection mod 2**128


def _reseed() -> None:
    global _start, _counter
    _start = int.from_bytes(os.urandom(16), "little")
    _counter = itertools.count()


_start: int
_counter: itertools.count
_reseed()
os.register_at_fork(after_in_child=_reseed)


def new_episode_id() -> str:
    """A fresh id: 32 hex digits, unique across calls, processes and forks."""
    return f"{(_start + next(_counter) * _STEP) & _MASK:032x}"
