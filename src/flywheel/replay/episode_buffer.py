"""`EpisodeReplayBuffer`: stores episodes as they come from EnvRunners, samples n-step transitions.

An off-policy algorithm drives it like this::

    buffer = EpisodeReplayBuffer(capacity=100_000, batch_size_B=32)
    while training:
        buffer.add(env_runner.sample(num_timesteps=...))   # finished episodes and ongoing chunks
        episodes = buffer.sample(n_step=3, gamma=0.99)      # one-step episodes (o_t -> o_t+n), as columns
        learner.update(episodes=episodes)   # the learner pipeline builds OBS, NEXT_OBS, REWARDS, N_STEP, ...

Chunks of an ongoing episode (same ``id_``) continue the stored episode, so n-step windows
run across chunk boundaries. Capacity counts env steps; when a new chunk does not fit, the
oldest chunks go first, each as a whole (an episode added in one piece leaves in one piece;
a long-running episode loses its oldest chunks first).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from flywheel.columns import Columns
from flywheel.episodes.single_agent_episode import SingleAgentEpisode
from flywheel.episodes.transition_episodes import TransitionBlock, TransitionEpisodes
from flywheel.errors import ConfigError, EpisodeError
from flywheel.replay.sequences import sample_sequences
from flywheel.replay.step_storage import StepStorage

INDICES = "replay_indices"
"""Extra model output of sampled transitions (a train-batch column, and a learner result next to the TD
errors): the sampled rows' ids, to pass back to ``update_priorities``."""

NStep = int | tuple[int, int]

__all__ = ["INDICES", "EpisodeReplayBuffer"]


class EpisodeReplayBuffer:
    """Uniform replay over the env steps of stored episodes.

    Args:
        capacity: Maximum number of env steps stored.
        batch_size_B: Default number of transitions per `sample` call.
        seed: Seed of the buffer's random generator (sampling and random n-step lengths).
        store_extra_model_outputs: False: the episodes' extra model outputs are not stored (e.g. a
            recurrent module's states, which DreamerV3 recomputes from the replayed sequences).
    """

    def __init__(
        self,
        capacity: int = 10_000,
        *,
        batch_size_B: int = 16,
        seed: Any = None,
        store_extra_model_outputs: bool = True,
    ):
        problems = []
        if not isinstance(capacity, int | np.integer) or capacity < 1:
            problems.append(f"capacity must be an int >= 1 (env steps), got {capacity!r}")
        if not isinstance(batch_size_B, int | np.integer) or batch_size_B < 1:
            problems.append(f"batch_size_B must be an int >= 1, got {batch_size_B!r}")
        if problems:
            raise ConfigError(f"Invalid {type(self).__name__} arguments: " + "; ".join(problems) + ".")
        self.capacity = int(capacity)
        self.batch_size_B = int(batch_size_B)
        self._rng = np.random.default_rng(seed)
        self._store_extras = bool(store_extra_model_outputs)
        self._storage = StepStorage(self.capacity, store_extras=self._store_extras)

    # --------------------------------------------------------------------- adding

    def add(self, episodes: SingleAgentEpisode | Iterable[SingleAgentEpisode]) -> None:
        """Stores the episodes' own steps (their lookback belongs to earlier chunks).

        A chunk whose ``id_`` is stored must start where the stored episode ends
        (``t_started`` = its ``t``) and continues it; chunks without steps are skipped.
        """
        if isinstance(episodes, SingleAgentEpisode):
            episodes = [episodes]
        for episode in episodes:
            if len(episode):
                evicted, written = self._storage.add_chunk(episode)
                self._on_rows_changed(evicted, written)

    def _on_rows_changed(self, evicted: np.ndarray, written: np.ndarray) -> None:
        """Hook for subclasses that keep per-row data (priorities)."""

    # ------------------------------------------------------------------- counting

    def __len__(self) -> int:
        """Number of stored env steps."""
        return self._storage.num_steps

    def get_num_timesteps(self) -> int:
        """Number of stored env steps."""
        return self._storage.num_steps

    def get_num_episodes(self) -> int:
        """Number of stored episodes (chunks of one episode count once)."""
        return self._storage.num_episodes

    def get_added_timesteps(self) -> int:
        """Number of env steps ever added (evicted ones included)."""
        return self._storage.next_id

    # ------------------------------------------------------------------- sampling

    def sample(
        self,
        num_items: int | None = None,
        *,
        batch_size_B: int | None = None,
        n_step: NStep = 1,
        gamma: float = 0.99,
        beta: float = 0.0,
        include_extra_model_outputs: bool = False,
        lookback: int = 0,
    ) -> TransitionEpisodes:
        """Samples ``num_items`` (or ``batch_size_B``) n-step transitions, as one-step episodes.

        Each is RLlib's sampled episode (see `TransitionEpisodes`): observations ``[o_t, o_{t+n}]``,
        the action ``a_t``, the discounted sum of the window's rewards as its one reward, the done
        flags of the window's end, and the extra model outputs ``N_STEP`` (steps actually used: a
        window stops early at the episode's end, or, for an ongoing episode, at its newest stored
        observation; bootstrap with ``gamma ** N_STEP``), ``WEIGHTS`` (importance weights; all 1
        here, ``beta`` only matters for prioritized replay) and ``INDICES`` (row ids for
        ``update_priorities``). ``n_step`` is an int or an inclusive range ``(lo, hi)`` drawn per
        transition. With ``include_extra_model_outputs`` every extra model output the runner
        recorded at ``t`` is added too.

        With ``lookback`` L > 0 the block also holds the L observations before ``o_t`` and before
        ``o_{t+n}`` (`TransitionBlock.lookback`), read from the stored rows when the batch is sampled:
        what the learner's `FrameStacking` stacks, so frames are stored once, not once per stack.
        """
        if not isinstance(lookback, int | np.integer) or lookback < 0:
            raise ConfigError(
                f"Expected lookback to be an int >= 0 (observations before each one), got {lookback!r}."
            )
        size = self._batch_size(num_items, batch_size_B)
        lengths = self._n_step_lengths(n_step, size)
        if self._storage.num_steps == 0:
            raise EpisodeError(f"{type(self).__name__} holds no env steps yet; add episodes before sampling.")
        positions, weights = self._draw(size, beta)
        storage = self._storage
        assert storage.obs is not None and storage.actions is not None  # it holds env steps
        window = storage.n_step(positions, lengths, gamma)
        columns = {
            Columns.OBS: storage.obs.read(positions),
            Columns.NEXT_OBS: window["next_obs"],
            Columns.ACTIONS: storage.actions.read(positions),
            Columns.REWARDS: window["returns"],
            Columns.TERMINATEDS: window["terminateds"],
            Columns.TRUNCATEDS: window["truncateds"],
            Columns.N_STEP: window["n_step"],
            Columns.WEIGHTS: weights,
            INDICES: storage.positions_to_ids(positions),
        }
        if include_extra_model_outputs:
            columns.update(storage.read_extras(positions))
        before = None
        if lookback:
            before = {
                Columns.OBS: storage.obs.read(storage.history(positions, lookback + 1)[:, :-1]),
                Columns.NEXT_OBS: storage.obs.read(storage.history(window["before_next"], lookback)),
            }
        obs_space, action_space = storage.spaces
        block = TransitionBlock(
            columns,
            episode_ids=storage.episode_ids(window["slots"]),
            t_started=window["t"],
            observation_space=obs_space,
            action_space=action_space,
            lookback=before,
        )
        return TransitionEpisodes([block])

    def sample_sequences(
        self, *, batch_size_B: int | None = None, batch_length_T: int = 64
    ) -> dict[str, Any]:
        """``batch_size_B`` (default: the buffer's) rows of ``batch_length_T`` consecutive env steps, as
        ``{"obs", "actions": (B, T, ...), "rewards", "is_first", "is_terminated": (B, T)}``: what DreamerV3
        replays (see `flywheel.replay.sequences`)."""
        size = self._batch_size(None, batch_size_B)
        if not isinstance(batch_length_T, int | np.integer) or batch_length_T < 1:
            raise ConfigError(
                f"Expected batch_length_T to be an int >= 1 (steps per row), got {batch_length_T!r}."
            )
        return sample_sequences(self._storage, size, int(batch_length_T), self._rng)

    def _draw(self, size: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
        """Row positions drawn uniformly over the stored steps, and their (unit) weights."""
        storage = self._storage
        offsets = self._rng.integers(storage.num_steps, size=size)
        return (storage.first_id + offsets) % self.capacity, np.ones(size, np.float32)

    def _batch_size(self, num_items: int | None, batch_size_B: int | None) -> int:
        if num_items is not None and batch_size_B is not None:
            raise ConfigError(
                f"sample() takes num_items or batch_size_B, got both ({num_items} and {batch_size_B}); "
                f"pass one of them."
            )
        size = num_items if num_items is not None else batch_size_B
        size = self.batch_size_B if size is None else size
        if not isinstance(size, int | np.integer) or size < 1:
            raise ConfigError(f"Expected the number of items to sample to be an int >= 1, got {size!r}.")
        return int(size)

    def _n_step_lengths(self, n_step: NStep, size: int) -> int | np.ndarray:
        if isinstance(n_step, int | np.integer) and n_step >= 1:
            return int(n_step)
        if (
            isinstance(n_step, tuple | list)
            and len(n_step) == 2
            and all(isinstance(n, int | np.integer) for n in n_step)
            and 1 <= n_step[0] <= n_step[1]
        ):
            return self._rng.integers(n_step[0], n_step[1] + 1, size=size)
        raise ConfigError(
            f"Expected n_step to be an int >= 1 or a range (lo, hi) with 1 <= lo <= hi, got {n_step!r}."
        )

    # ---------------------------------------------------------------------- state

    def get_state(self) -> dict[str, Any]:
        """The stored steps and episodes, counters and random state (numpy and plain data).

        Holds every stored observation, so checkpoints that include it are as large as the buffer.
        """
        # The generator's 128-bit integers go as strings: checkpoints store integers of 64 bits.
        rng = self._rng.bit_generator.state
        return {"storage": self._storage.get_state(), "rng": {**rng, "state": _strings(rng["state"])}}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restores `get_state` output (into a buffer of at least the stored number of steps)."""
        self._storage = StepStorage.from_state(state["storage"], self.capacity)
        self._storage.store_extras = self._store_extras
        rng = state["rng"]
        self._rng.bit_generator.state = {**rng, "state": {k: int(v) for k, v in rng["state"].items()}}


def _strings(numbers: dict[str, int]) -> dict[str, str]:
    return {key: str(value) for key, value in numbers.items()}
