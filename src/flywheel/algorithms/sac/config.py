"""`SACConfig`: soft actor-critic settings (twin Q, entropy temperature, learning rates).

config = SACConfig().environment("Pendulum-v1").training(actor_lr=1e-3, critic_lr=1e-3, tau=0.005)
config = SACConfig().environment("CartPole-v1")   # Discrete actions: a Categorical policy
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.config_settings import Schedule, setting
from flywheel.algorithms.off_policy.config import OffPolicyConfig
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.algorithms.sac.learner import SACTorchLearner
    from flywheel.algorithms.sac.sac import SAC
    from flywheel.core.rl_module.spec import RLModuleSpec


@dataclasses.dataclass(init=False, repr=False, eq=True)
class SACConfig(OffPolicyConfig):
    """Settings of SAC (Haarnoja et al., 2018, with automatic entropy tuning) for 1-D Box actions, and
    for Discrete ones (Christodoulou, 2019); `training()` also takes the keywords below and those of
    `OffPolicyConfig` (replay, `training_intensity`, `tau`, ...).

    SAC has three optimizers, so `lr` is None and not used: set `actor_lr`, `critic_lr` and `alpha_lr`
    (RLlib 2.60's settings and defaults; `training(lr=None)` is accepted, a rate in `lr` refused).
    """

    uses_lr = False

    lr: float | Schedule | None = setting("training", None)
    """Not used (None): SAC's optimizers take `actor_lr`, `critic_lr` and `alpha_lr`."""
    train_batch_size: int = setting("training", 256)
    """Transitions replayed per gradient step."""
    replay_buffer_config: dict = setting(
        "training", factory=lambda: {"type": "EpisodeReplayBuffer", "capacity": 1_000_000}
    )
    """As in `OffPolicyConfig`; SAC keeps up to a million env steps by default."""
    num_steps_sampled_before_learning_starts: int = setting("training", 1500)
    """Env steps sampled (with the initial, nearly uniform policy) before the first gradient step."""
    target_network_update_freq: int = setting("training", 0)
    """0: the target critics follow after every gradient step, slowly (tau)."""
    tau: float = setting("training", 5e-3)
    """Polyak factor of the target critics: `target = (1 - tau) * target + tau * critic`."""
    twin_q: bool = setting("training", True)
    """Two critics, and targets from their minimum (counters Q overestimation)."""
    initial_alpha: float = setting("training", 1.0)
    """Initial entropy temperature alpha (the weight of the entropy bonus); then tuned automatically."""
    target_entropy: float | str = setting("training", "auto")
    """Entropy the temperature tuning aims at; "auto" = -(number of action dimensions) for Box actions,
    0.5 * log(n) for Discrete(n), half the uniform policy's entropy (the paper's 0.98 * log(n) lets
    alpha grow without bound where no good policy is that random: see `DISCRETE_TARGET_ENTROPY_RATIO`
    in `flywheel.algorithms.sac.learner`)."""
    actor_lr: float | Schedule = setting("training", 3e-5)
    """Learning rate of the policy, or a schedule over sampled env steps (RLlib's default: a tenth of
    the critics', so the critics stay ahead of the policy they judge)."""
    critic_lr: float | Schedule = setting("training", 3e-4)
    """Learning rate of the critic(s), or a schedule over sampled env steps."""
    alpha_lr: float | Schedule = setting("training", 3e-4)
    """Learning rate of log(alpha), or a schedule over sampled env steps."""

    if TYPE_CHECKING:  # what build_algo() returns, for editors

        def build_algo(self) -> SAC: ...

    def get_default_algo_class(self) -> type[SAC]:
        """SAC (imported on first use)."""
        from flywheel.algorithms.sac.sac import SAC

        return SAC

    def get_default_learner_class(self) -> type[SACTorchLearner]:
        """SACTorchLearner (imported on first use)."""
        from flywheel.algorithms.sac.learner import SACTorchLearner

        return SACTorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """DefaultSACTorchRLModule (Box or Discrete actions): policy and critics with [256, 256] relu layers."""
        from flywheel.algorithms.sac.rl_module import DefaultSACTorchRLModule
        from flywheel.core.rl_module.spec import RLModuleSpec

        return RLModuleSpec(
            module_class=DefaultSACTorchRLModule,
            model_config={"fcnet_hiddens": [256, 256], "fcnet_activation": "relu"},
        )

    def get_rl_module_spec(
        self, spaces: tuple | dict | None = None, module_id: str = DEFAULT_MODULE_ID, **kwargs: Any
    ) -> RLModuleSpec:
        """The merged spec, with `model_config["twin_q"]` = the `twin_q` training setting."""
        spec = super().get_rl_module_spec(spaces, module_id, **kwargs)
        spec.model_config = {**(spec.model_config or {}), "twin_q": self.twin_q}
        return spec

    def validation_problems(self) -> list[str]:
        """The off-policy problems plus SAC's."""
        problems = [
            _check_lr_unused(self),
            checks.check_bool(self, "twin_q"),
            checks.check_number(self, "initial_alpha", 0, strict=True),
            checks.check_schedule(self, "actor_lr", 0, strict=True),
            checks.check_schedule(self, "critic_lr", 0, strict=True),
            checks.check_schedule(self, "alpha_lr", 0, strict=True),
        ]
        target = self.target_entropy
        if target != "auto" and not (isinstance(target, int | float) and not isinstance(target, bool)):
            problems.append(
                f"target_entropy={target!r} must be 'auto' or a number (e.g. -1.0 per action dimension, "
                "or 0.5 * log(n) for n discrete actions). "
                "Fix: pass it to config.training(target_entropy=...)."
            )
        return super().validation_problems() + [problem for problem in problems if problem]


def _check_lr_unused(config: SACConfig) -> str | None:
    if config.lr is None:
        return None
    name = type(config).__name__.removesuffix("Config")
    return (
        f"lr={config.lr!r}: {name} does not use lr; its three optimizers have their own rates, actor_lr="
        f"{config.actor_lr!r}, critic_lr={config.critic_lr!r} and alpha_lr={config.alpha_lr!r}. Fix: pass the "
        "rates to config.training(actor_lr=..., critic_lr=..., alpha_lr=...) and leave lr=None (the default)."
    )
