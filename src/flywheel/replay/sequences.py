"""Sequences of `batch_length_T` consecutive env steps out of a `StepStorage` (DreamerV3's replay).

A sequence step is an observation with the action taken there, the reward that came with it, and
flags: `is_first` (the world model restarts here) and `is_terminated` (the episode ended in this
observation). A finished episode's final observation is a step of its own (the continue and
reconstruction losses learn from it; its action is zeros). A row starts at a uniformly drawn stored
step and, where its episode's stored data ends, goes on at another drawn step with `is_first`, so no
row is padded (RLlib 2.60's layout).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tree

from flywheel.errors import EpisodeError
from flywheel.replay.step_storage import StepStorage

__all__ = ["IS_FIRST", "IS_TERMINATED", "sample_sequences"]

IS_FIRST = "is_first"
IS_TERMINATED = "is_terminated"


def sample_sequences(
    storage: StepStorage, batch_size_B: int, batch_length_T: int, rng: np.random.Generator
) -> dict[str, Any]:
    """`{"obs", "actions": (B, T, ...), "rewards", "is_first", "is_terminated": (B, T)}`."""
    if storage.num_steps == 0 or storage.obs is None or storage.actions is None or storage.final_obs is None:
        raise EpisodeError(
            "The replay buffer holds no env steps yet; add episodes before sampling sequences."
        )
    obs_store, action_store, final_store = storage.obs, storage.actions, storage.final_obs

    def draw(n: int) -> np.ndarray:
        return (storage.first_id + rng.integers(storage.num_steps, size=n)) % storage.capacity

    pos = draw(batch_size_B)
    final = np.zeros(batch_size_B, bool)
    first = np.ones(batch_size_B, bool)
    reward = np.zeros(batch_size_B, np.float32)
    columns: dict[str, list] = {"obs": [], "actions": [], "rewards": [], IS_FIRST: [], IS_TERMINATED: []}
    for _ in range(batch_length_T):
        slots = storage.row_slot[pos]
        obs, actions = obs_store.read(pos), action_store.read(pos)
        if final.any():
            final_obs = final_store.read(slots[final])
            for leaf, final_leaf, action_leaf in zip(
                tree.flatten(obs), tree.flatten(final_obs), tree.flatten(actions)
            ):
                leaf[final] = final_leaf
                action_leaf[final] = 0
        columns["obs"].append(obs)
        columns["actions"].append(actions)
        columns["rewards"].append(reward)
        columns[IS_FIRST].append(first)
        columns[IS_TERMINATED].append(final & storage.ep_terminated[slots])
        # Advance: the next stored row, else the final observation of a finished episode, else a new draw.
        following = storage.row_next[pos]
        done = storage.ep_terminated[slots] | storage.ep_truncated[slots]
        ends = (following < 0) & (storage.row_t[pos] + 1 == storage.ep_end_t[slots]) & done
        to_final = ~final & ends
        to_next = ~final & (following >= 0)
        jump = ~(to_final | to_next)
        reward = np.where(jump, 0.0, storage.rewards[pos]).astype(np.float32)
        pos = np.where(to_next, following, pos)
        if jump.any():
            pos[jump] = draw(int(jump.sum()))
        final, first = to_final, jump
    return {
        key: tree.map_structure(lambda *steps: np.stack(steps, axis=1), *items)
        for key, items in columns.items()
    }
