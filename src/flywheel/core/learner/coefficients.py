"""Per-module loss coefficients that change while training: entropy schedules and adaptive KL weights.

Mixins for learners whose loss has an entropy bonus (PPO, IMPALA, APPO) and a KL term (PPO, APPO)::

    class MyLearner(EntropyCoeffSchedules, AdaptiveKLCoeffs, TorchLearner):
        def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
            ... - self.curr_entropy_coeffs[module_id] * entropy + self.curr_kl_coeffs[module_id] * kl

Both keep one value per module (set up when the learner is built or a module is added) and log it
once per update (`curr_entropy_coeff`, `curr_kl_coeff`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from flywheel.checkpoints.checkpointable import select
from flywheel.core.learner.schedules import Scheduler
from flywheel.typing import ModuleID, StateDict

if TYPE_CHECKING:
    from flywheel.algorithms.algorithm_config import AlgorithmConfig
    from flywheel.algorithms.config_settings import Schedule
    from flywheel.core.learner.learner import Learner

    _LearnerMixin = Learner  # the mixins extend a Learner's methods (`super()`) and read its attributes
else:
    _LearnerMixin = object


class EntropyCoeffConfig(Protocol):
    """The setting `EntropyCoeffSchedules` reads (PPOConfig and IMPALAConfig have it)."""

    entropy_coeff: float | Schedule


class KLCoeffConfig(Protocol):
    """The settings `AdaptiveKLCoeffs` reads (PPOConfig and APPOConfig have them)."""

    use_kl_loss: bool
    kl_coeff: float
    kl_target: float


class EntropyCoeffSchedules(_LearnerMixin):
    """`config.entropy_coeff` (a number or a schedule over sampled env steps) per module:
    `curr_entropy_coeffs[module_id]` holds its value for the current update."""

    config: EntropyCoeffConfig

    def build(self) -> None:
        self.entropy_coeff_schedulers: dict[ModuleID, Scheduler] = {}
        self.curr_entropy_coeffs: dict[ModuleID, float] = {}
        super().build()
        for module_id in self.module:
            self._set_up_entropy_coeff(module_id)

    def add_module(self, *, module_id: ModuleID, module_spec: Any, **kwargs: Any) -> Any:
        spec = super().add_module(module_id=module_id, module_spec=module_spec, **kwargs)
        self._set_up_entropy_coeff(module_id)
        return spec

    def remove_module(self, module_id: ModuleID, **kwargs: Any) -> Any:
        spec = super().remove_module(module_id, **kwargs)
        self.entropy_coeff_schedulers.pop(module_id, None)
        self.curr_entropy_coeffs.pop(module_id, None)
        return spec

    def reset_config(self, config: AlgorithmConfig) -> None:
        """The learner's `reset_config` (which makes `config` `self.config`), and each module follows the
        new `entropy_coeff`."""
        super().reset_config(config)
        entropy_coeff = self.config.entropy_coeff
        for module_id in self.entropy_coeff_schedulers:
            self.entropy_coeff_schedulers[module_id] = Scheduler(entropy_coeff, name="entropy_coeff")

    def _set_up_entropy_coeff(self, module_id: ModuleID) -> None:
        scheduler = Scheduler(self.config.entropy_coeff, name="entropy_coeff")
        self.entropy_coeff_schedulers[module_id] = scheduler
        self.curr_entropy_coeffs[module_id] = scheduler.value(self._timestep)

    def before_gradient_based_update(self, *, timesteps: dict | None) -> None:
        """The learner's, then every module's entropy coefficient at the current timestep."""
        super().before_gradient_based_update(timesteps=timesteps)
        for module_id, scheduler in self.entropy_coeff_schedulers.items():
            coeff = self.curr_entropy_coeffs[module_id] = scheduler.value(self._timestep)
            self.metrics.log_value((module_id, "curr_entropy_coeff"), coeff, reduce="mean")


class AdaptiveKLCoeffs(_LearnerMixin):
    """`curr_kl_coeffs[module_id]`, starting at `config.kl_coeff`; with `config.use_kl_loss`,
    `adapt_kl_coeffs(kls)` moves it after each update: ×1.5 when the update's KL exceeded 2 × `kl_target`,
    ×0.5 below 0.5 × `kl_target`. Saved in the learner's state."""

    config: KLCoeffConfig

    def build(self) -> None:
        self.curr_kl_coeffs: dict[ModuleID, float] = {}
        super().build()
        for module_id in self.module:
            self.curr_kl_coeffs[module_id] = float(self.config.kl_coeff)

    def add_module(self, *, module_id: ModuleID, module_spec: Any, **kwargs: Any) -> Any:
        spec = super().add_module(module_id=module_id, module_spec=module_spec, **kwargs)
        self.curr_kl_coeffs[module_id] = float(self.config.kl_coeff)
        return spec

    def remove_module(self, module_id: ModuleID, **kwargs: Any) -> Any:
        spec = super().remove_module(module_id, **kwargs)
        self.curr_kl_coeffs.pop(module_id, None)
        return spec

    def adapt_kl_coeffs(self, kls: dict[ModuleID, float]) -> None:
        """Adapts each trained module's coefficient to its KL of this update (`kls[module_id]`: RLlib's
        rule reads the update's last minibatch's); logs all."""
        for module_id in self.module:
            # Modules without a KL term this update (e.g. a curiosity model next to PPO's policies) keep theirs.
            kl = kls.get(module_id) if self.config.use_kl_loss else None
            if kl is not None and self.should_module_be_updated(module_id):
                if kl > 2.0 * self.config.kl_target:
                    self.curr_kl_coeffs[module_id] *= 1.5
                elif kl < 0.5 * self.config.kl_target:
                    self.curr_kl_coeffs[module_id] *= 0.5
            self.metrics.log_value(
                (module_id, "curr_kl_coeff"), self.curr_kl_coeffs[module_id], reduce="mean"
            )

    def get_state(
        self, components: str | list[str] | None = None, not_components: str | list[str] | None = None
    ) -> StateDict:
        state = super().get_state(components, not_components)
        if select("curr_kl_coeffs", components, not_components)[0]:
            state["curr_kl_coeffs"] = dict(self.curr_kl_coeffs)
        return state

    def set_state(self, state: StateDict) -> None:
        super().set_state(state)
        self.curr_kl_coeffs.update(state.get("curr_kl_coeffs", {}))
