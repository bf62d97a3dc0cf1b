"""`OffPolicyConfig`: what DQN and SAC share (replay, update ratio, n-step, target networks).

Both `DQNConfig` and `SACConfig` take these settings, e.g. prioritized 3-step replay for SAC:

config = SACConfig().environment("Pendulum-v1").training(
    replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "alpha": 0.6, "beta": 0.4},
    n_step=3,
    training_intensity=256,   # replayed env steps per sampled env step
)
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeGuard

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.algorithms.config_settings import setting

if TYPE_CHECKING:
    from flywheel.connectors.pipeline import ConnectorPipelineV2
    from flywheel.replay import EpisodeReplayBuffer, MultiAgentEpisodeReplayBuffer
    from flywheel.typing import DeviceType

DEFAULT_REPLAY_BUFFER_CONFIG = {
    "type": "EpisodeReplayBuffer",
    "capacity": 50_000,
    "alpha": 0.6,
    "beta": 0.4,
    "store_in_checkpoints": False,
}
"""What `replay_buffer_config` keys you leave out fall back to (alpha, beta: prioritized replay only;
`store_in_checkpoints`: save the buffer's contents with the algorithm, as large as the buffer)."""
BUFFER_TYPES = (
    "EpisodeReplayBuffer",
    "PrioritizedEpisodeReplayBuffer",
    "MultiAgentEpisodeReplayBuffer",
    "MultiAgentPrioritizedEpisodeReplayBuffer",
)
REPLAY_EXAMPLE = "{'type': 'PrioritizedEpisodeReplayBuffer', 'capacity': 50_000, 'alpha': 0.6, 'beta': 0.4}"


@dataclasses.dataclass(init=False, repr=False, eq=True)
class OffPolicyConfig(AlgorithmConfig):
    """Settings of off-policy algorithms that learn from a replay buffer (DQN, SAC).

    Each training step samples `rollout_fragment_length` env steps per sub-env into the buffer,
    then (after `num_steps_sampled_before_learning_starts`) takes gradient steps on batches of
    `learner_train_batch_size` transitions per learner (and per module) replayed from it
    (`train_batch_size_per_learner` when set, else `train_batch_size` split over the learners, as in RLlib);
    `training_intensity` sets how many, and `sample_and_train_rounds()` says what that means in
    sample calls and updates. The learner pipeline turns the replayed transitions into the train
    batch: the defaults plus `AddNextObservationsFromEpisodesToTrainBatch` (after
    `AddObservationsFromEpisodesToBatch`) and `NumpyToTensor` (last).
    """

    train_batch_size: int = setting("training", 32)
    """Transitions replayed per gradient step, over all learners."""
    minibatch_size: int | None = setting("training", None)
    """Must stay None: off-policy algorithms take exactly one gradient step per replayed batch."""
    rollout_fragment_length: int | str = setting("env_runners", 1)
    """Env steps per sub-env per training step, added to the buffer before the updates."""
    shuffle_batch_per_epoch: bool = setting("training", False)
    """Replayed rows are in random order already."""
    min_sample_timesteps_per_iteration: int = setting("reporting", 1000)
    """A training step samples only a few env steps, so one train() call runs many of them."""
    replay_buffer_config: dict = setting("training", factory=lambda: dict(DEFAULT_REPLAY_BUFFER_CONFIG))
    """`type` (one of `BUFFER_TYPES` or a subclass), `capacity` (env steps, per module), and for
    prioritized replay `alpha` (how strongly priorities count) and `beta` (importance-weight
    correction). Keys left out keep their defaults. Multi-agent configs replay per module: a
    single-agent type becomes one buffer of that type per module."""
    training_intensity: float | None = setting("training")
    """Replayed env steps per sampled env step (the replay ratio); None: one update per training step."""
    num_steps_sampled_before_learning_starts: int = setting("training", 1000)
    """Env steps sampled (to fill the buffer) before the first gradient step."""
    target_network_update_freq: int = setting("training", 500)
    """Sampled env steps between target-network updates (0: after every gradient step)."""
    tau: float = setting("training", 1.0)
    """Target update `target = (1 - tau) * target + tau * main`: 1.0 copies, small values track slowly."""
    n_step: int | list[int] = setting("training", 1)
    """Steps of real rewards before bootstrapping (`gamma ** n` on the bootstrap), or a range [lo, hi]
    drawn per transition."""

    def replay_buffer_settings(self) -> dict[str, Any]:
        """`replay_buffer_config` over `DEFAULT_REPLAY_BUFFER_CONFIG`."""
        return {**DEFAULT_REPLAY_BUFFER_CONFIG, **self.replay_buffer_config}

    def build_replay_buffer(self) -> EpisodeReplayBuffer | MultiAgentEpisodeReplayBuffer:
        """The replay buffer `replay_buffer_config` describes, seeded with `seed`; for multi-agent
        configs one buffer per module (`MultiAgentEpisodeReplayBuffer` of the given type)."""
        from flywheel import replay

        settings = self.replay_buffer_settings()
        cls = settings["type"]
        if isinstance(cls, str):
            cls = getattr(replay, cls)
        kwargs = {
            "capacity": settings["capacity"],
            "batch_size_B": self.total_train_batch_size,
            "seed": self.seed,
        }
        prioritized = (replay.PrioritizedEpisodeReplayBuffer, replay.MultiAgentPrioritizedEpisodeReplayBuffer)
        if issubclass(cls, prioritized):
            kwargs["alpha"] = settings["alpha"]
        if self.is_multi_agent and issubclass(cls, replay.EpisodeReplayBuffer):
            return replay.MultiAgentEpisodeReplayBuffer(buffer_class=cls, **kwargs)
        return cls(**kwargs)

    def build_learner_connector(
        self, input_observation_space: Any, input_action_space: Any, device: DeviceType | None = None
    ) -> ConnectorPipelineV2:
        """The user's pieces and the defaults, with `AddNextObservationsFromEpisodesToTrainBatch` right
        after `AddObservationsFromEpisodesToBatch` (the defaults only)."""
        pipeline = super().build_learner_connector(input_observation_space, input_action_space, device)
        if self.add_default_connectors_to_learner_pipeline:
            from flywheel.connectors.learner import (
                AddNextObservationsFromEpisodesToTrainBatch,
                AddObservationsFromEpisodesToBatch,
            )

            pipeline.insert_after(
                AddObservationsFromEpisodesToBatch, AddNextObservationsFromEpisodesToTrainBatch()
            )
        return pipeline

    def sample_and_train_rounds(self) -> tuple[int, int]:
        """`(sample() calls, gradient steps)` per training step that give `training_intensity`.

        One sample() call brings `rollout_fragment_length * num_envs_per_env_runner` env steps
        (per runner) and one gradient step replays `total_train_batch_size` of them. Without a
        `training_intensity` a training step is one of each; otherwise the rounded ratio decides
        whether to sample more often (intensity below the native ratio) or update more often.
        """
        if self.training_intensity is None:
            return 1, 1
        sampled = (
            self.get_rollout_fragment_length() * self.num_envs_per_env_runner * max(1, self.num_env_runners)
        )
        updates_per_sample = self.training_intensity * sampled / self.total_train_batch_size
        if updates_per_sample < 1:
            return max(1, round(1 / updates_per_sample)), 1
        return 1, round(updates_per_sample)

    def validation_problems(self) -> list[str]:
        """The common problems plus the off-policy ones."""
        problems = super().validation_problems()
        intensity = self.training_intensity
        if intensity is not None and not (_is_number(intensity) and intensity > 0):
            problems.append(
                f"training_intensity={intensity!r} would never train (it is the number of replayed env steps "
                "per sampled env step). Fix: pass a number > 0, or None for one update per training step, to "
                "config.training(training_intensity=...)."
            )
        problems += [
            self._minibatch_problem(),
            checks.check_int(self, "num_steps_sampled_before_learning_starts", 0),
            checks.check_int(self, "target_network_update_freq", 0),
            _check_tau(self),
            _check_n_step(self),
            *self._replay_problems(),
        ]
        return [problem for problem in problems if problem]

    def _minibatch_problem(self) -> str | None:
        if self.minibatch_size is None:
            return None
        return (
            f"minibatch_size={self.minibatch_size!r}, but {type(self).__name__} takes one gradient step per "
            "replayed batch. Fix: leave minibatch_size=None and set the batch size with "
            "config.training(train_batch_size=...)."
        )

    def _replay_problems(self) -> list[str | None]:
        fix = f"Fix: pass e.g. config.training(replay_buffer_config={REPLAY_EXAMPLE})."
        given = self.replay_buffer_config
        if not isinstance(given, Mapping):
            return [f"replay_buffer_config={given!r} is not a dict. {fix}"]
        problems: list[str | None] = []
        for key in [k for k in given if k not in DEFAULT_REPLAY_BUFFER_CONFIG]:
            hint = checks.closest(str(key), DEFAULT_REPLAY_BUFFER_CONFIG)
            known = (
                f"Did you mean {hint!r}?" if hint else f"Known keys: {list(DEFAULT_REPLAY_BUFFER_CONFIG)}."
            )
            problems.append(f"replay_buffer_config has an unknown key {key!r}. {known}")
        settings = self.replay_buffer_settings()
        problems.append(_check_buffer_type(settings["type"], fix))
        capacity = settings["capacity"]
        if not (_is_int(capacity) and capacity >= 1):
            return [
                *problems,
                f"replay_buffer_config['capacity']={capacity!r} must be an int >= 1 (env steps). {fix}",
            ]
        for key in ("alpha", "beta"):
            if not (_is_number(settings[key]) and settings[key] >= 0):
                problems.append(
                    f"replay_buffer_config[{key!r}]={settings[key]!r} must be a number >= 0. {fix}"
                )
        store = settings["store_in_checkpoints"]
        if not isinstance(store, bool):
            problems.append(
                f"replay_buffer_config['store_in_checkpoints']={store!r} must be True or False. {fix}"
            )
        batch = self.train_batch_size_per_learner or self.train_batch_size
        if _is_int(batch) and capacity < batch:
            problems.append(
                f"replay_buffer_config['capacity']={capacity} is smaller than the train batch ({batch}): "
                "the buffer can never hold one train batch. Fix: raise the capacity or lower the batch size."
            )
        fragment = self.rollout_fragment_length
        if _is_int(fragment) and capacity < fragment:
            problems.append(
                f"replay_buffer_config['capacity']={capacity} is smaller than rollout_fragment_length={fragment}: "
                "the sampled chunks would not fit in the buffer. Fix: raise the capacity or lower "
                "rollout_fragment_length."
            )
        return problems


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_tau(config: OffPolicyConfig) -> str | None:
    tau = config.tau
    if _is_number(tau) and 0 < tau <= 1:
        return None
    return f"tau={tau!r} must be a number in (0, 1] (1.0 copies the weights). Fix: pass e.g. config.training(tau=0.005)."


def _check_n_step(config: OffPolicyConfig) -> str | None:
    n_step = config.n_step
    if _is_int(n_step) and n_step >= 1:
        return None
    if (
        isinstance(n_step, list | tuple)
        and len(n_step) == 2
        and all(_is_int(n) for n in n_step)
        and 1 <= n_step[0] <= n_step[1]
    ):
        return None
    return (
        f"n_step={n_step!r} must be an int >= 1 or a range [lo, hi] with 1 <= lo <= hi. "
        "Fix: pass e.g. config.training(n_step=3) or config.training(n_step=[1, 5])."
    )


def _check_buffer_type(buffer_type: Any, fix: str) -> str | None:
    if isinstance(buffer_type, str):
        if buffer_type in BUFFER_TYPES:
            return None
        hint = checks.closest(buffer_type, BUFFER_TYPES) or BUFFER_TYPES[0]
        return f"replay_buffer_config['type']={buffer_type!r} is not one of {list(BUFFER_TYPES)}. Did you mean {hint!r}?"
    from flywheel.replay import EpisodeReplayBuffer, MultiAgentEpisodeReplayBuffer

    if isinstance(buffer_type, type) and issubclass(
        buffer_type, EpisodeReplayBuffer | MultiAgentEpisodeReplayBuffer
    ):
        return None
    return (
        f"replay_buffer_config['type']={buffer_type!r} is neither a buffer name {list(BUFFER_TYPES)} nor an "
        f"EpisodeReplayBuffer or MultiAgentEpisodeReplayBuffer subclass. {fix}"
    )
