"""`CQLConfig`: conservative Q-learning (Kumar et al., 2020) on offline data, built on SAC.

config = (
    CQLConfig()
    .environment("Pendulum-v1")                       # spaces and evaluation
    .offline_data(input_="data/pendulum", dataset_num_iters_per_learner=100)
    .training(bc_iters=200, min_q_weight=5.0, num_actions=10)
)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.config_settings import Schedule, setting
from flywheel.algorithms.sac.config import SACConfig
from flywheel.offline.options import SHUFFLE_KEY

if TYPE_CHECKING:
    from flywheel.algorithms.cql.cql import CQL
    from flywheel.algorithms.cql.learner import CQLTorchLearner


@dataclasses.dataclass(init=False, repr=False, eq=True)
class CQLConfig(SACConfig):
    """Settings of CQL (RLlib 2.60's names and defaults); `training()` also takes the keywords below
    and SAC's. CQL trains SAC's module on recorded transitions and adds a conservative term to each
    critic's loss that pushes Q-values down on actions the data does not hold (see
    `CQLTorchLearner`). Box actions only."""

    bc_iters: int = setting("training", 20_000)
    """Updates (gradient steps of the learner) whose actor loss is behavior cloning,
    `alpha * log pi(a~|s) - log pi(a_data|s)`, before it becomes SAC's."""
    temperature: float = setting("training", 1.0)
    """Temperature T of the soft maximum over sampled actions: `T * logsumexp(Q / T)`."""
    num_actions: int = setting("training", 10)
    """Actions sampled per row and per source (uniform, policy at s, policy at s') for the soft maximum."""
    min_q_weight: float = setting("training", 5.0)
    """Weight of the conservative term in each critic's loss."""
    lagrangian: bool = setting("training", False)
    """Tune the conservative term's weight (alpha', initially 1) by dual gradient descent, so the
    weighted gap `min_q_weight * (soft max - Q(s, a_data))` stays near `lagrangian_thresh`."""
    lagrangian_thresh: float = setting("training", 5.0)
    """The gap the Lagrangian aims at (with `lagrangian=True`)."""
    deterministic_backup: bool = setting("training", True)
    """Critic targets without SAC's entropy bonus: `r + gamma * min Q'(s', a')`."""
    lr: float | Schedule | None = setting("training", None)
    """Unused, as in SAC (the three learning rates below are); None, so a rate passed here is refused
    with the fix instead of being silently ignored (RLlib's CQL default is an unused 3e-4)."""
    actor_lr: float | Schedule = setting("training", 1e-4)
    """Learning rate of the policy (CQL default 1e-4), or a schedule."""
    critic_lr: float | Schedule = setting("training", 1e-3)
    """Learning rate of the critic(s) and, with `lagrangian`, of log(alpha') (CQL default 1e-3)."""
    alpha_lr: float | Schedule = setting("training", 1e-3)
    """Learning rate of log(alpha) (CQL default 1e-3)."""
    default_iter_batches_kwargs: ClassVar[dict[str, Any]] = {SHUFFLE_KEY: 10_000}
    """CQL trains on single transitions: rows stream through a 10,000-row shuffle buffer (see
    `flywheel.offline.shuffle`), so a train batch holds rows from many episodes, not one or two
    consecutive ones. `iter_batches_kwargs={"local_shuffle_buffer_size": None}` turns it off."""
    min_sample_timesteps_per_iteration: int = setting("reporting", 0)
    """Offline: a training iteration samples no env steps."""

    if TYPE_CHECKING:  # what build_algo() returns, for editors

        def build_algo(self) -> CQL: ...

    def get_default_algo_class(self) -> type[CQL]:
        """CQL (imported on first use)."""
        from flywheel.algorithms.cql.cql import CQL

        return CQL

    def get_default_learner_class(self) -> type[CQLTorchLearner]:
        """CQLTorchLearner (imported on first use)."""
        from flywheel.algorithms.cql.learner import CQLTorchLearner

        return CQLTorchLearner

    def validation_problems(self) -> list[str]:
        """SAC's problems, CQL's, and an offline input."""
        problems = [
            checks.check_int(self, "bc_iters", 0),
            checks.check_number(self, "temperature", 0, strict=True),
            checks.check_int(self, "num_actions", 1),
            checks.check_number(self, "min_q_weight", 0),
            checks.check_bool(self, "lagrangian"),
            checks.check_number(self, "lagrangian_thresh", 0),
            checks.check_bool(self, "deterministic_backup"),
            checks.check_offline_input(self),
        ]
        return super().validation_problems() + [problem for problem in problems if problem]
