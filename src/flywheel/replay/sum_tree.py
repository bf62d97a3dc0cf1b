"""Segment trees over replay rows: `SumTree` (sampling ∝ priority) and `MinTree` (max weight).

Prioritized replay draws row ``i`` with probability ``p_i / sum(p)`` and normalizes importance
weights by the smallest priority. Both need to stay cheap while priorities change every
update, so they live in binary trees whose inner nodes hold the sum (or minimum) of their
children: setting ``k`` leaves and drawing ``k`` rows cost ``O(k log n)``, vectorized over ``k``.
"""

from __future__ import annotations

import numpy as np

from flywheel.errors import ConfigError


class _SegmentTree:
    """A complete binary tree in one array: root at 1, children of ``i`` at ``2i`` and ``2i + 1``."""

    _neutral: float = 0.0
    _combine: np.ufunc

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ConfigError(f"Expected a tree capacity >= 1, got {capacity}.")
        self.capacity = capacity
        self._depth = int(np.ceil(np.log2(capacity)))
        self._first_leaf = 1 << self._depth
        self._levels = np.arange(1, self._depth + 1)
        self._nodes = np.full(2 * self._first_leaf, self._neutral, np.float64)

    def set(self, indices: np.ndarray, values: np.ndarray | float) -> None:
        """Sets the leaves ``indices`` (in ``[0, capacity)``) to ``values`` and refreshes their ancestors.

        Inner nodes are recomputed from their children (never updated by differences), so
        rounding errors do not accumulate over millions of updates. A node reached twice is
        recomputed twice from the same children, which is cheaper than deduplicating.
        """
        nodes = self._nodes
        node = np.asarray(indices, np.int64) + self._first_leaf
        nodes[node] = values
        # All ancestors at once (one row per level, bottom up): a few numpy calls per level.
        ancestors = node >> self._levels[:, None]
        lefts = ancestors + ancestors
        for parent, left, right in zip(ancestors, lefts, lefts + 1):
            nodes[parent] = self._combine(nodes[left], nodes[right])

    def get(self, indices: np.ndarray) -> np.ndarray:
        """The leaf values at ``indices``."""
        return self._nodes[np.asarray(indices, np.int64) + self._first_leaf]


class SumTree(_SegmentTree):
    """Leaf values (priorities) with their total and a prefix-sum search."""

    _combine = np.add

    def total(self) -> float:
        return float(self._nodes[1])

    def find_prefix(self, mass: np.ndarray) -> np.ndarray:
        """For each ``m`` in ``mass`` (``0 <= m < total()``), the leaf ``i`` with ``sum(p[:i]) <= m < sum(p[:i+1])``.

        Draw ``mass`` uniformly in ``[0, total())`` to sample leaves ∝ their values. The walk
        never enters an empty subtree, so a zero leaf is never returned, even when rounding
        puts ``m`` at or past a subtree's sum.
        """
        nodes = self._nodes
        mass = np.asarray(mass, np.float64).copy()
        node = np.ones(len(mass), np.int64)
        for _ in range(self._depth):
            left = node + node
            left_sum = nodes[left]
            go_right = mass >= left_sum
            go_right &= nodes[left + 1] > 0.0
            mass -= left_sum * go_right
            node = left + go_right
        return node - self._first_leaf


class MinTree(_SegmentTree):
    """Leaf values with their minimum; unused leaves hold +inf."""

    _neutral = np.inf

    _combine = np.minimum

    def min(self) -> float:
        return float(self._nodes[1])
