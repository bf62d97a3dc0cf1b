"""`DreamerV3Config`: DreamerV3's settings, with RLlib 2.60's names and defaults.

config = (
    DreamerV3Config()
    .environment("CartPole-v1")
    .training(model_size="XS", training_ratio=1024, batch_size_B=16, batch_length_T=64, horizon_H=15)
)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.algorithm_config import AlgorithmConfig
from flywheel.algorithms.config_settings import Schedule, setting
from flywheel.algorithms.dreamerv3.model_sizes import MODEL_SIZES
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.algorithms.dreamerv3.dreamerv3 import DreamerV3
    from flywheel.algorithms.dreamerv3.learner import DreamerV3TorchLearner
    from flywheel.core.rl_module.spec import RLModuleSpec

MODEL_CONFIG_SETTINGS = ("gamma", "horizon_H", "model_size", "symlog_obs", "use_float16", "batch_length_T")
"""Settings copied into the module's `model_config` (RLlib 2.60's auto-included keys)."""

_REPLAY_KEYS = ("type", "capacity")
_REPLAY_EXAMPLE = {"type": "EpisodeReplayBuffer", "capacity": 1_000_000}


@dataclasses.dataclass(init=False, repr=False, eq=True)
class DreamerV3Config(AlgorithmConfig):
    """Settings of DreamerV3 (Hafner et al., 2023); `training()` also takes the keywords below.

    DreamerV3 trains three parts with three optimizers, so `lr` is None and not used (set
    `world_model_lr`, `actor_lr` and `critic_lr`), and it replays `batch_size_B` sequences of
    `batch_length_T` steps, so `train_batch_size` is None and not used either (RLlib 2.60's rules).
    """

    uses_lr = False
    uses_train_batch_size = False

    # Base settings with DreamerV3's defaults.
    lr: float | Schedule | None = setting("training", None)
    """Not used (None): DreamerV3's optimizers take `world_model_lr`, `actor_lr` and `critic_lr`."""
    gamma: float = setting("training", 0.997)
    """Discount of the imagined rewards (the paper's 0.997, eq. 7)."""
    train_batch_size: int | None = setting("training", None)
    """Not used (None): each update replays `batch_size_B` x `batch_length_T` env steps."""
    minibatch_size: int | None = setting("training", None)
    """Not used (None): each update is one gradient step per optimizer on the whole replayed batch."""
    shuffle_batch_per_epoch: bool = setting("training", False)
    """Not used: replayed sequences keep their time order."""
    rollout_fragment_length: int | str = setting("env_runners", 1)
    """Env steps per sub-env per sample: 1, so learning keeps up with acting step by step (`training_ratio`)."""
    metrics_num_episodes_for_smoothing: int = setting("reporting", 1)
    """DreamerV3 needs few episodes; averaging over the usual 100 would hide how fast it learns."""

    # DreamerV3's own.
    model_size: str = setting("training", "XS")
    """One name for every layer size: "nano", "micro", "mini", "XXS" (RLlib's debug sizes), "XS", "S", "M",
    "L", "XL" (the paper's table B.1); see `flywheel.algorithms.dreamerv3.model_sizes.MODEL_SIZES`."""
    training_ratio: float = setting("training", 1024)
    """Replayed env steps (B x T per update) per env step sampled: 1024 with B x T = 1024 is one update
    per env step, 512 one update per two env steps."""
    replay_buffer_config: dict = setting("training", factory=lambda: dict(_REPLAY_EXAMPLE))
    """`type` (only "EpisodeReplayBuffer") and `capacity` in env steps (the paper's million)."""
    world_model_lr: float | Schedule = setting("training", 1e-4)
    """Learning rate of the world model (encoder, RSSM, decoder, reward and continue heads)."""
    actor_lr: float | Schedule = setting("training", 3e-5)
    """Learning rate of the actor."""
    critic_lr: float | Schedule = setting("training", 3e-5)
    """Learning rate of the critic."""
    batch_size_B: int = setting("training", 16)
    """Sequences per update (split evenly across learners)."""
    batch_length_T: int = setting("training", 64)
    """Env steps per replayed sequence (sequences may cross episode starts, flagged by is_first)."""
    horizon_H: int = setting("training", 15)
    """Imagined steps from every replayed state for the actor and critic losses."""
    gae_lambda: float = setting("training", 0.95)
    """λ of the λ-returns over imagined trajectories (eq. 7)."""
    entropy_scale: float = setting("training", 3e-4)
    """Weight of the actor's entropy bonus, on returns scaled by their 5th-95th percentile range (eq. 11)."""
    return_normalization_decay: float = setting("training", 0.99)
    """Decay of the EMAs of the returns' 5th and 95th percentiles (eq. 11-12)."""
    train_critic: bool = setting("training", True)
    """Train the critic (False also needs `train_actor=False`: the actor learns from the critic)."""
    train_actor: bool = setting("training", True)
    """Train the actor (needs `train_critic=True`)."""
    intrinsic_rewards_scale: float = setting("training", 0.1)
    """RLlib's weight of curiosity rewards; kept for its configs (curiosity is off in RLlib 2.60 too)."""
    world_model_grad_clip_by_global_norm: float = setting("training", 1000.0)
    """Global-norm clip of the world model's gradients."""
    critic_grad_clip_by_global_norm: float = setting("training", 100.0)
    """Global-norm clip of the critic's gradients."""
    actor_grad_clip_by_global_norm: float = setting("training", 100.0)
    """Global-norm clip of the actor's gradients."""
    symlog_obs: bool | str = setting("training", "auto")
    """Regress observations in symlog space; "auto": yes, unless they are images."""
    use_float16: bool = setting("training", False)
    """RLlib's mixed precision (parameters in float32, computations in float16); not in flywheel yet, so
    True is refused."""
    report_individual_batch_item_stats: bool = setting("reporting", False)
    """Also report the losses per batch row and time step (large)."""
    report_dream_data: bool = setting("reporting", False)
    """Also report the imagined trajectories of the first time step of each row."""
    report_images_and_videos: bool = setting("reporting", False)
    """Also report decoded observations (images) next to the sampled ones."""

    @property
    def batch_size_B_per_learner(self) -> int:
        """Sequences each learner replays per update: `batch_size_B // max(1, num_learners)`."""
        return self.batch_size_B // max(1, self.num_learners)

    if TYPE_CHECKING:  # what build_algo() returns, for editors

        def build_algo(self) -> DreamerV3: ...

    def get_default_algo_class(self) -> type[DreamerV3]:
        """DreamerV3 (imported on first use)."""
        from flywheel.algorithms.dreamerv3.dreamerv3 import DreamerV3

        return DreamerV3

    def get_default_learner_class(self) -> type[DreamerV3TorchLearner]:
        """DreamerV3TorchLearner (imported on first use)."""
        from flywheel.algorithms.dreamerv3.learner import DreamerV3TorchLearner

        return DreamerV3TorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """DreamerV3TorchRLModule: world model, actor and critic sized by `model_size`."""
        from flywheel.algorithms.dreamerv3.rl_module import DreamerV3TorchRLModule
        from flywheel.core.rl_module.spec import RLModuleSpec

        return RLModuleSpec(module_class=DreamerV3TorchRLModule)

    def get_rl_module_spec(
        self,
        spaces: tuple | dict | None = None,
        module_id: str = DEFAULT_MODULE_ID,
        *,
        env: object = None,
        inference_only: bool | None = None,
    ) -> RLModuleSpec:
        """The merged spec, with the `MODEL_CONFIG_SETTINGS` and `return_normalization_decay` in its
        `model_config`."""
        spec = super().get_rl_module_spec(spaces, module_id, env=env, inference_only=inference_only)
        settings = {name: getattr(self, name) for name in MODEL_CONFIG_SETTINGS}
        settings["return_normalization_decay"] = self.return_normalization_decay
        spec.model_config = {**(spec.model_config or {}), **settings}
        return spec

    def validation_problems(self) -> list[str]:
        """The common problems plus DreamerV3's."""
        problems = [
            checks.check_choice(self, "model_size", tuple(MODEL_SIZES)),
            checks.check_number(self, "training_ratio", 0, strict=True),
            checks.check_int(self, "batch_size_B", 1),
            checks.check_int(self, "batch_length_T", 1),
            checks.check_int(self, "horizon_H", 1),
            checks.check_unit_interval(self, "gae_lambda"),
            checks.check_number(self, "entropy_scale", 0),
            _check_decay(self),
            checks.check_bool(self, "train_critic"),
            checks.check_bool(self, "train_actor"),
            checks.check_number(self, "intrinsic_rewards_scale", 0),
            checks.check_schedule(self, "world_model_lr", 0, strict=True),
            checks.check_schedule(self, "actor_lr", 0, strict=True),
            checks.check_schedule(self, "critic_lr", 0, strict=True),
            checks.check_number(self, "world_model_grad_clip_by_global_norm", 0, strict=True),
            checks.check_number(self, "critic_grad_clip_by_global_norm", 0, strict=True),
            checks.check_number(self, "actor_grad_clip_by_global_norm", 0, strict=True),
            _check_symlog_obs(self),
            checks.check_bool(self, "use_float16"),
            checks.check_bool(self, "report_individual_batch_item_stats"),
            checks.check_bool(self, "report_dream_data"),
            checks.check_bool(self, "report_images_and_videos"),
            _check_float16(self),
            _check_unused(self),
            _check_fragment(self),
            _check_actor_needs_critic(self),
            _check_learner_split(self),
            _check_single_agent(self),
            *_check_replay(self),
        ]
        return super().validation_problems() + [problem for problem in problems if problem]


def _check_decay(config: DreamerV3Config) -> str | None:
    value = config.return_normalization_decay
    if checks.check_unit_interval(config, "return_normalization_decay") is None and value < 1:
        return None
    return (
        f"return_normalization_decay={value!r} must be a number in [0, 1) (the paper's 0.99). "
        "Fix: pass it to config.training(return_normalization_decay=...)."
    )


def _check_symlog_obs(config: DreamerV3Config) -> str | None:
    if config.symlog_obs == "auto" or isinstance(config.symlog_obs, bool):
        return None
    return (
        f"symlog_obs={config.symlog_obs!r} must be 'auto', True or False ('auto': symlog unless the "
        "observations are images). Fix: pass one of them to config.training(symlog_obs=...)."
    )


def _check_float16(config: DreamerV3Config) -> str | None:
    if config.use_float16 is not True:
        return None
    return (
        "use_float16=True: mixed-precision training is not in flywheel's DreamerV3 yet (the setting is there "
        "for RLlib's configs). Fix: leave use_float16=False."
    )


def _check_unused(config: DreamerV3Config) -> str | None:
    used = "the world model, actor and critic have their own rates: world_model_lr, actor_lr, critic_lr"
    if config.lr is not None:
        return f"lr={config.lr!r}: DreamerV3 does not use lr; {used}. Fix: set those and leave lr=None."
    if config.train_batch_size is not None:
        return (
            f"train_batch_size={config.train_batch_size!r}: DreamerV3 does not use it; an update replays "
            f"batch_size_B x batch_length_T = {config.batch_size_B} x {config.batch_length_T} env steps. "
            "Fix: set batch_size_B and batch_length_T in config.training() and leave train_batch_size=None."
        )
    return None


def _check_fragment(config: DreamerV3Config) -> str | None:
    if config.rollout_fragment_length != "auto":
        return None
    return (
        "rollout_fragment_length='auto' sizes samples from train_batch_size, which DreamerV3 does not use. "
        "Fix: pass an int (1, the default: one env step per sub-env between updates) to "
        "config.env_runners(rollout_fragment_length=...)."
    )


def _check_actor_needs_critic(config: DreamerV3Config) -> str | None:
    if not (config.train_actor is True and config.train_critic is False):
        return None
    return (
        "train_actor=True with train_critic=False: the actor learns from the critic's values. "
        "Fix: pass train_critic=True, or train_actor=False, to config.training()."
    )


def _check_learner_split(config: DreamerV3Config) -> str | None:
    learners, batch = config.num_learners, config.batch_size_B
    if not (isinstance(learners, int) and isinstance(batch, int)) or learners <= 1 or batch % learners == 0:
        return None
    return (
        f"batch_size_B={batch} does not split evenly across num_learners={learners}. "
        f"Fix: make batch_size_B a multiple of num_learners, e.g. {learners * max(1, batch // learners)}."
    )


def _check_single_agent(config: DreamerV3Config) -> str | None:
    if not config.is_multi_agent:
        return None
    return "DreamerV3 is single-agent (as in RLlib 2.60). Fix: remove config.multi_agent(...)."


def _check_replay(config: DreamerV3Config) -> list[str]:
    given: object = config.replay_buffer_config
    fix = f"Fix: pass e.g. config.training(replay_buffer_config={_REPLAY_EXAMPLE})."
    if not isinstance(given, Mapping):
        return [f"replay_buffer_config={given!r} is not a dict. {fix}"]
    problems = [
        f"replay_buffer_config has an unknown key {key!r} (known: {list(_REPLAY_KEYS)}). {fix}"
        for key in given
        if key not in _REPLAY_KEYS
    ]
    if given.get("type", "EpisodeReplayBuffer") != "EpisodeReplayBuffer":
        problems.append(
            f"replay_buffer_config['type']={given['type']!r}: DreamerV3 replays sequences from an "
            f"'EpisodeReplayBuffer' only. {fix}"
        )
    capacity = given.get("capacity", _REPLAY_EXAMPLE["capacity"])
    if not (isinstance(capacity, int) and not isinstance(capacity, bool) and capacity >= 1):
        problems.append(
            f"replay_buffer_config['capacity']={capacity!r} must be an int >= 1 (env steps). {fix}"
        )
    return problems
