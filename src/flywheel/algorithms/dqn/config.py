"""`OffPolicyConfig` (what DQN and SAC share: replay, update ratio, target networks) and `DQNConfig`.

config = (
    DQNConfig()
    .environment("CartPole-v1")
    .training(
        replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 50_000},
        n_step=3,
        training_intensity=16,   # replayed env steps per sampled env step
    )
)
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.algorithms.config_settings import Schedule, setting
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.core.rl_module.spec import RLModuleSpec
    from flywheel.replay import EpisodeReplayBuffer

DEFAULT_REPLAY_BUFFER_CONFIG = {
    "type": "EpisodeReplayBuffer",
    "capacity": 50_000,
    "alpha": 0.6,
    "beta": 0.4,
    "store_in_checkpoints": False,
}
"""What `replay_buffer_config` keys you leave out fall back to (alpha, beta: prioritized replay only;
`store_in_checkpoints`: save the buffer's contents with the algorithm, as large as the buffer)."""
BUFFER_TYPES = ("EpisodeReplayBuffer", "PrioritizedEpisodeReplayBuffer")
REPLAY_EXAMPLE = "{'type': 'PrioritizedEpisodeReplayBuffer', 'capacity': 50_000, 'alpha': 0.6, 'beta': 0.4}"


@dataclasses.dataclass(init=False, repr=False, eq=True)
class OffPolicyConfig(AlgorithmConfig):
    """Settings of off-policy algorithms that learn from a replay buffer (DQN, SAC).

    Each training step samples `rollout_fragment_length` env steps per sub-env into the buffer,
    then (after `num_steps_sampled_before_learning_starts`) takes gradient steps on batches of
    `total_train_batch_size` transitions replayed from it (`train_batch_size_per_learner` when set,
    else `train_batch_size`, as in RLlib); `training_intensity` sets how
    many, and `sample_and_train_rounds()` says what that means in sample calls and updates.
    """

    train_batch_size: int = setting("training", 32)
    """Transitions replayed per gradient step."""
    minibatch_size: int | None = setting("training", None)
    """Must stay None: off-policy algorithms take exactly one gradient step per replayed batch."""
    rollout_fragment_length: int | str = setting("env_runners", 1)
    """Env steps per sub-env per training step, added to the buffer before the updates."""
    min_sample_timesteps_per_iteration: int = setting("reporting", 1000)
    """A training step samples only a few env steps, so one train() call runs many of them."""
    replay_buffer_config: dict = setting("training", factory=lambda: dict(DEFAULT_REPLAY_BUFFER_CONFIG))
    """`type` ("EpisodeReplayBuffer", "PrioritizedEpisodeReplayBuffer" or a subclass), `capacity`
    (env steps), and for prioritized replay `alpha` (how strongly priorities count) and `beta`
    (importance-weight correction). Keys left out keep their defaults."""
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

    def build_replay_buffer(self) -> EpisodeReplayBuffer:
        """The replay buffer `replay_buffer_config` describes, seeded with `seed`."""
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
        if issubclass(cls, replay.PrioritizedEpisodeReplayBuffer):
            kwargs["alpha"] = settings["alpha"]
        return cls(**kwargs)

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
        """The common problems (minibatch_size may be None here) plus the off-policy ones."""
        problems = super().validation_problems()
        if self.minibatch_size is None:
            # The common check wants an int; None is the only valid value for off-policy learners.
            not_a_problem = checks.check_int(self, "minibatch_size", 1)
            problems = [problem for problem in problems if problem != not_a_problem]
        intensity = self.training_intensity
        if intensity is not None and not (_is_number(intensity) and intensity > 0):
            problems.append(
                f"training_intensity={intensity!r} would never train (it is the number of replayed env steps "
                "per sampled env step). Fix: pass a number > 0, or None for one update per training step, to "
                "config.training(training_intensity=...)."
            )
        problems += [
            *self._unused_settings_problems(),
            checks.check_int(self, "num_steps_sampled_before_learning_starts", 0),
            checks.check_int(self, "target_network_update_freq", 0),
            _check_tau(self),
            _check_n_step(self),
            *self._replay_problems(),
        ]
        return [problem for problem in problems if problem]

    def _unused_settings_problems(self) -> list[str]:
        """Settings the off-policy loop would silently ignore (it has one local learner and module)."""
        name, problems = type(self).__name__, []
        if self.minibatch_size is not None:
            problems.append(
                f"minibatch_size={self.minibatch_size!r}, but {name} takes one gradient step per replayed "
                "batch. Fix: leave minibatch_size=None and set the batch size with "
                "config.training(train_batch_size=...)."
            )
        if self.learner_connector is not None:
            problems.append(
                f"learner_connector is set, but {name} trains on batches replayed from its buffer, not on "
                "episodes, so the learner pipeline never runs. Fix: transform observations with "
                "config.env_runners(env_to_module_connector=...) (they are stored as the module sees them)."
            )
        if _is_int(self.num_learners) and self.num_learners > 0:
            problems.append(
                f"num_learners={self.num_learners}, but {name} updates one local learner on each replayed "
                "batch (remote learners would need the batch sharded). Fix: config.learners(num_learners=0); "
                "raise training_intensity for more updates instead."
            )
        if self.is_multi_agent:
            problems.append(
                f"{name} trains one module on single-agent episodes, but this config maps agents to modules "
                "(multi_agent()). Fix: use PPO for multi-agent training, or drop the policies and "
                "policy_mapping_fn."
            )
        if _is_atari_env(self.env):
            problems.append(
                f"env {self.env!r} is an Atari id, whose frames flywheel stacks (4 per observation) in the "
                f"connector pipelines, but {name} trains on single frames replayed from its buffer, without a "
                "learner pipeline to stack them. Fix: use PPOConfig for Atari ids, or register a creator "
                "that stacks frames inside the env: register_env('pong', lambda cfg: MyFrameStack("
                "gymnasium.make('ALE/Pong-v5', **cfg)))."
            )
        return problems

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


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_atari_env(env: Any) -> bool:
    from flywheel.env.make import is_atari_env

    return is_atari_env(env)


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
    from flywheel.replay import EpisodeReplayBuffer

    if isinstance(buffer_type, type) and issubclass(buffer_type, EpisodeReplayBuffer):
        return None
    return (
        f"replay_buffer_config['type']={buffer_type!r} is neither a buffer name {list(BUFFER_TYPES)} nor an "
        f"EpisodeReplayBuffer subclass. {fix}"
    )


@dataclasses.dataclass(init=False, repr=False, eq=True)
class DQNConfig(OffPolicyConfig):
    """Settings of DQN with the Rainbow options double Q, dueling heads, n-step returns and
    prioritized replay; `training()` also takes the keywords below and those of `OffPolicyConfig`."""

    lr: float | Schedule = setting("training", 5e-4)
    """Learning rate, or a piecewise-linear schedule over sampled env steps."""
    grad_clip: float | None = setting("training", 40.0)
    """Clips the global gradient norm: TD errors of stale targets can be large."""
    rollout_fragment_length: int | str = setting("env_runners", 4)
    """Env steps per sub-env per training step (DQN's classic "update every 4 steps")."""
    epsilon: float | Schedule = setting("training", factory=lambda: [[0, 1.0], [10_000, 0.05]])
    """Probability of a random action while exploring, or a schedule over sampled env steps
    (runners get the current value with the weights)."""
    double_q: bool = setting("training", True)
    """Pick the next action with the online network and value it with the target network
    (less overestimation than max over the target network)."""
    dueling: bool = setting("training", True)
    """Q = V(s) + A(s, a) - mean_a A(s, a): a state value and advantages in separate heads."""
    td_error_loss_fn: str = setting("training", "huber")
    """"huber" (robust to large TD errors) or "mse"."""

    def get_default_algo_class(self) -> type:
        """DQN (imported on first use)."""
        from flywheel.algorithms.dqn.dqn import DQN

        return DQN

    def get_default_learner_class(self) -> type:
        """DQNTorchLearner (imported on first use)."""
        from flywheel.algorithms.dqn.learner import DQNTorchLearner

        return DQNTorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """DefaultDQNTorchRLModule: encoder [256] relu, then advantage (and value) heads [256]."""
        from flywheel.algorithms.dqn.rl_module import DefaultDQNTorchRLModule
        from flywheel.core.rl_module.spec import RLModuleSpec

        return RLModuleSpec(
            module_class=DefaultDQNTorchRLModule,
            model_config={"fcnet_hiddens": [256], "fcnet_activation": "relu", "head_fcnet_hiddens": [256]},
        )

    def get_rl_module_spec(
        self, spaces: tuple | dict | None = None, module_id: str = DEFAULT_MODULE_ID, **kwargs: Any
    ) -> RLModuleSpec:
        """The merged spec, with `model_config["dueling"]` = the `dueling` training setting."""
        spec = super().get_rl_module_spec(spaces, module_id, **kwargs)
        spec.model_config = {**spec.model_config, "dueling": self.dueling}
        return spec

    def validation_problems(self) -> list[str]:
        """The off-policy problems plus DQN's."""
        problems = [
            _check_epsilon(self),
            checks.check_bool(self, "double_q"),
            checks.check_bool(self, "dueling"),
            checks.check_choice(self, "td_error_loss_fn", ("huber", "mse")),
        ]
        return super().validation_problems() + [problem for problem in problems if problem]


def _check_epsilon(config: DQNConfig) -> str | None:
    problem = checks.check_schedule(config, "epsilon", 0)
    if problem:
        return problem
    epsilon = config.epsilon
    values = [value for _, value in epsilon] if isinstance(epsilon, list | tuple) else [epsilon]
    if max(values) <= 1:
        return None
    return (
        f"epsilon={epsilon!r} has a probability above 1 ({max(values)}). "
        "Fix: pass a number in [0, 1] or a schedule such as [[0, 1.0], [10_000, 0.05]] to config.training(epsilon=...)."
    )
