"""`DQNConfig`: DQN with the Rainbow options (double Q, dueling heads, n-step returns, prioritized replay,
distributional Q-learning).

config = (
    DQNConfig()
    .environment("CartPole-v1")
    .training(
        replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 50_000},
        n_step=3,
        training_intensity=16,   # replayed env steps per sampled env step
    )
)
config = DQNConfig().environment("CartPole-v1").training(num_atoms=51, v_min=0.0, v_max=100.0)   # C51
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.config_settings import Schedule, setting
from flywheel.algorithms.off_policy.config import OffPolicyConfig
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.algorithms.dqn.dqn import DQN
    from flywheel.algorithms.dqn.learner import DQNTorchLearner
    from flywheel.core.rl_module.spec import RLModuleSpec


@dataclasses.dataclass(init=False, repr=False, eq=True)
class DQNConfig(OffPolicyConfig):
    """Settings of DQN with the Rainbow options double Q, dueling heads, n-step returns, prioritized
    replay and distributional Q-learning (C51); `training()` also takes the keywords below and those of
    `OffPolicyConfig`."""

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
    evaluation_config: dict | None = setting("evaluation", factory=lambda: {"explore": False})
    """Evaluate greedily (RLlib's DQN default): no epsilon-random actions in evaluation."""
    td_error_loss_fn: str = setting("training", "huber")
    """"huber" (robust to large TD errors) or "mse"; not used with `num_atoms > 1` (cross-entropy)."""
    num_atoms: int = setting("training", 1)
    """Atoms of the return distribution per action: 1 learns expected values (plain DQN); more learns
    a categorical distribution over `num_atoms` returns from `v_min` to `v_max` (C51; 51 in the paper)."""
    v_min: float = setting("training", -10.0)
    """The smallest return on the support (C51); returns below it count as `v_min`."""
    v_max: float = setting("training", 10.0)
    """The largest return on the support (C51); returns above it count as `v_max`."""

    if TYPE_CHECKING:  # what build_algo() returns, for editors

        def build_algo(self) -> DQN: ...

    def get_default_algo_class(self) -> type[DQN]:
        """DQN (imported on first use)."""
        from flywheel.algorithms.dqn.dqn import DQN

        return DQN

    def get_default_learner_class(self) -> type[DQNTorchLearner]:
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
        """The merged spec, with the `dueling`, `num_atoms`, `v_min` and `v_max` training settings in
        `model_config` (as RLlib adds them)."""
        spec = super().get_rl_module_spec(spaces, module_id, **kwargs)
        spec.model_config = {
            **(spec.model_config or {}),
            "dueling": self.dueling,
            "num_atoms": self.num_atoms,
            "v_min": self.v_min,
            "v_max": self.v_max,
        }
        return spec

    def validation_problems(self) -> list[str]:
        """The off-policy problems plus DQN's."""
        problems = [
            _check_epsilon(self),
            checks.check_bool(self, "double_q"),
            checks.check_bool(self, "dueling"),
            checks.check_choice(self, "td_error_loss_fn", ("huber", "mse")),
            checks.check_int(self, "num_atoms", 1),
            _check_support(self),
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


def _check_support(config: DQNConfig) -> str | None:
    bounds = (config.v_min, config.v_max)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in bounds):
        return (
            f"v_min={config.v_min!r}, v_max={config.v_max!r} must be finite numbers (the ends of C51's support). "
            "Fix: pass numbers to config.training(v_min=..., v_max=...)."
        )
    if isinstance(config.num_atoms, int) and config.num_atoms > 1 and config.v_min >= config.v_max:
        return (
            f"v_min={config.v_min!r} must be below v_max={config.v_max!r}: they are the ends of the support of "
            f"the {config.num_atoms} atoms. Fix: pass returns that bound the Q-values, "
            "e.g. config.training(v_min=0.0, v_max=100.0)."
        )
    return None
