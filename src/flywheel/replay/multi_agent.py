"""`MultiAgentEpisodeReplayBuffer`: one replay buffer per module, fed with per-agent episodes.

Each module learns from the steps of the agents mapped to it, so a multi-agent episode is
split into its agents' `SingleAgentEpisode`s and each goes to the buffer of its module::

    buffer = MultiAgentEpisodeReplayBuffer(capacity=50_000)
    buffer.add(multi_agent_runner.sample(num_timesteps=...))
    episodes = buffer.sample(32, n_step=3)   # 32 transitions per module, each episode with its module_id

As RLlib's `MultiAgentEpisodeReplayBuffer` samples "independently": every module replays its own
transitions, whatever the other agents did at the time.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np

from flywheel.episodes.transition_episodes import TransitionEpisodes
from flywheel.errors import ConfigError
from flywheel.replay.episode_buffer import EpisodeReplayBuffer
from flywheel.replay.prioritized import PrioritizedEpisodeReplayBuffer
from flywheel.typing import DEFAULT_MODULE_ID, ModuleID


class MultiAgentEpisodeReplayBuffer:
    """A dict of module id → buffer, created on a module's first steps.

    Args:
        capacity: Maximum number of env steps stored per module.
        batch_size_B: Default number of transitions per module and `sample` call.
        buffer_class: `EpisodeReplayBuffer` or `PrioritizedEpisodeReplayBuffer`.
        seed: Seed; each module's buffer gets its own stream derived from it and the module id.
        **buffer_kwargs: Further arguments of ``buffer_class`` (e.g. ``alpha``).
    """

    def __init__(
        self,
        capacity: int = 10_000,
        *,
        batch_size_B: int = 16,
        buffer_class: type[EpisodeReplayBuffer] = EpisodeReplayBuffer,
        seed: int | None = None,
        **buffer_kwargs: Any,
    ):
        self.buffer_class = buffer_class
        self._buffer_kwargs = {"capacity": capacity, "batch_size_B": batch_size_B, **buffer_kwargs}
        self._seed = seed
        self._make(DEFAULT_MODULE_ID)  # Invalid arguments fail here, not at the first add().
        self._buffers: dict[ModuleID, EpisodeReplayBuffer] = {}

    def _make(self, module_id: ModuleID) -> EpisodeReplayBuffer:
        seed = None if self._seed is None else [self._seed, zlib.crc32(str(module_id).encode())]
        return self.buffer_class(seed=seed, **self._buffer_kwargs)

    def add(self, episodes: Iterable[Any]) -> None:
        """Stores multi-agent episodes (objects with ``agent_episodes`` and ``module_for(agent_id)``).

        Single-agent episodes go to their ``module_id`` (default: ``"default_policy"``).
        """
        by_module: dict[ModuleID, list] = {}
        for episode in episodes:
            if hasattr(episode, "agent_episodes"):
                for agent_id, agent_episode in episode.agent_episodes.items():
                    by_module.setdefault(episode.module_for(agent_id), []).append(agent_episode)
            else:
                by_module.setdefault(episode.module_id or DEFAULT_MODULE_ID, []).append(episode)
        for module_id, module_episodes in by_module.items():
            if module_id not in self._buffers:
                self._buffers[module_id] = self._make(module_id)
            self._buffers[module_id].add(module_episodes)

    def __getitem__(self, module_id: ModuleID) -> EpisodeReplayBuffer:
        try:
            return self._buffers[module_id]
        except KeyError:
            raise KeyError(
                f"No replay buffer for module {module_id!r}; modules with stored steps: {sorted(self._buffers)}."
            ) from None

    def keys(self) -> list[ModuleID]:
        """Ids of the modules with a buffer (iterating the buffer gives the same)."""
        return list(self._buffers)

    def __iter__(self) -> Iterator[ModuleID]:
        return iter(list(self._buffers))

    def __contains__(self, module_id: object) -> bool:
        return module_id in self._buffers

    def sample(
        self, num_items: int | None = None, *, module_ids: Iterable[ModuleID] | None = None, **kwargs: Any
    ) -> TransitionEpisodes:
        """``num_items`` (default ``batch_size_B``) transitions of each module in ``module_ids`` (default:
        every module with stored steps), module after module; each episode's ``module_id`` says whose.

        Takes the keyword arguments of `EpisodeReplayBuffer.sample` (``n_step``, ``gamma``, ``beta``, ...);
        ``INDICES`` are ids in the module's own buffer.
        """
        if module_ids is None:
            module_ids = [m for m, buffer in self._buffers.items() if len(buffer)]
        blocks = []
        for module_id in module_ids:
            (block,) = self[module_id].sample(num_items, **kwargs).blocks
            blocks.append(replace(block, module_id=module_id))
        return TransitionEpisodes(blocks)

    def update_priorities(
        self, priorities: dict[ModuleID, np.ndarray], indices: dict[ModuleID, np.ndarray]
    ) -> None:
        """Per module, `PrioritizedEpisodeReplayBuffer.update_priorities`."""
        if set(priorities) != set(indices):
            raise ConfigError(
                f"Expected priorities and indices for the same modules, got {sorted(priorities)} and "
                f"{sorted(indices)}."
            )
        for module_id, module_priorities in priorities.items():
            buffer = self[module_id]
            if not isinstance(buffer, PrioritizedEpisodeReplayBuffer):
                raise ConfigError(
                    f"update_priorities() needs prioritized buffers, but module {module_id!r} has a "
                    f"{type(buffer).__name__}. Fix: use MultiAgentPrioritizedEpisodeReplayBuffer."
                )
            buffer.update_priorities(module_priorities, indices[module_id])

    def __len__(self) -> int:
        """Stored env steps over all modules."""
        return sum(len(buffer) for buffer in self._buffers.values())

    def get_num_timesteps(self, module_id: ModuleID | None = None) -> int:
        """Stored env steps of ``module_id`` (default: all modules)."""
        return len(self) if module_id is None else len(self[module_id])

    def get_num_episodes(self, module_id: ModuleID | None = None) -> int:
        """Stored (per-agent) episodes of ``module_id`` (default: all modules)."""
        buffers = self._buffers.values() if module_id is None else [self[module_id]]
        return sum(buffer.get_num_episodes() for buffer in buffers)

    def get_added_timesteps(self, module_id: ModuleID | None = None) -> int:
        """Env steps ever added for ``module_id`` (default: all modules)."""
        buffers = self._buffers.values() if module_id is None else [self[module_id]]
        return sum(buffer.get_added_timesteps() for buffer in buffers)

    def get_state(self) -> dict[str, Any]:
        return {module_id: buffer.get_state() for module_id, buffer in self._buffers.items()}

    def set_state(self, state: dict[str, Any]) -> None:
        self._buffers = {}
        for module_id, module_state in state.items():
            self._buffers[module_id] = self._make(module_id)
            self._buffers[module_id].set_state(module_state)


class MultiAgentPrioritizedEpisodeReplayBuffer(MultiAgentEpisodeReplayBuffer):
    """`MultiAgentEpisodeReplayBuffer` with one `PrioritizedEpisodeReplayBuffer` per module.

    Args:
        capacity: Maximum number of env steps stored per module.
        batch_size_B: Default number of transitions per module and `sample` call.
        alpha: How strongly priorities shape sampling (0 = uniform, 1 = proportional).
        seed: Seed; each module's buffer gets its own stream derived from it and the module id.
    """

    def __init__(
        self, capacity: int = 10_000, *, batch_size_B: int = 16, alpha: float = 0.6, seed: int | None = None
    ):
        super().__init__(
            capacity,
            batch_size_B=batch_size_B,
            buffer_class=PrioritizedEpisodeReplayBuffer,
            seed=seed,
            alpha=alpha,
        )


__all__ = ["MultiAgentEpisodeReplayBuffer", "MultiAgentPrioritizedEpisodeReplayBuffer"]
