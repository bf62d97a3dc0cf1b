"""`TQCConfig`: truncated quantile critics (Kuznetsov et al., 2020), SAC with distributional critics.

config = TQCConfig().environment("Pendulum-v1").training(n_quantiles=25, n_critics=2, top_quantiles_to_drop_per_net=2)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from flywheel.algorithms import config_validation as checks
from flywheel.algorithms.config_settings import setting
from flywheel.algorithms.sac.config import SACConfig
from flywheel.typing import DEFAULT_MODULE_ID

if TYPE_CHECKING:
    from flywheel.core.rl_module.spec import RLModuleSpec


@dataclasses.dataclass(init=False, repr=False, eq=True)
class TQCConfig(SACConfig):
    """Settings of TQC (RLlib 2.60's names and defaults); `training()` also takes the keywords below
    and SAC's. TQC is SAC with `n_critics` critics that each give `n_quantiles` quantiles of the
    return; the critics' targets pool the target critics' quantiles and drop the largest
    `top_quantiles_to_drop_per_net * n_critics` of them (see `TQCTorchLearner`). Box actions only;
    `twin_q` is not used (`n_critics` sets the number of critics)."""

    n_quantiles: int = setting("training", 25)
    """Quantiles each critic gives (at the fractions (2i + 1) / (2 n_quantiles))."""
    n_critics: int = setting("training", 2)
    """Critics, each with its own network (and target copy)."""
    top_quantiles_to_drop_per_net: int = setting("training", 2)
    """Per critic, how many of the pooled target quantiles to drop from the top: the more, the
    more the targets counter Q overestimation (the paper's d; 2 of 25 per critic for MuJoCo)."""

    def get_default_algo_class(self) -> type:
        """TQC (imported on first use)."""
        from flywheel.algorithms.tqc.tqc import TQC

        return TQC

    def get_default_learner_class(self) -> type:
        """TQCTorchLearner (imported on first use)."""
        from flywheel.algorithms.tqc.learner import TQCTorchLearner

        return TQCTorchLearner

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        """DefaultTQCTorchRLModule: policy and quantile critics with [256, 256] relu layers."""
        from flywheel.algorithms.tqc.rl_module import DefaultTQCTorchRLModule

        spec = super().get_default_rl_module_spec()
        spec.module_class = DefaultTQCTorchRLModule
        return spec

    def get_rl_module_spec(
        self, spaces: tuple | dict | None = None, module_id: str = DEFAULT_MODULE_ID, **kwargs: Any
    ) -> RLModuleSpec:
        """SAC's merged spec, with `model_config["n_quantiles"]` and `["n_critics"]` = the settings."""
        spec = super().get_rl_module_spec(spaces, module_id, **kwargs)
        spec.model_config = {
            **(spec.model_config or {}),
            "n_quantiles": self.n_quantiles,
            "n_critics": self.n_critics,
        }
        return spec

    def validation_problems(self) -> list[str]:
        """SAC's problems and TQC's (at least one target quantile must remain)."""
        problems = [
            checks.check_int(self, "n_quantiles", 1),
            checks.check_int(self, "n_critics", 1),
            checks.check_int(self, "top_quantiles_to_drop_per_net", 0),
        ]
        if not any(problems) and self.top_quantiles_to_drop_per_net >= self.n_quantiles:
            dropped, total = (
                self.top_quantiles_to_drop_per_net * self.n_critics,
                self.n_quantiles * self.n_critics,
            )
            problems.append(
                f"top_quantiles_to_drop_per_net={self.top_quantiles_to_drop_per_net} drops {dropped} of the "
                f"{total} target quantiles (n_quantiles={self.n_quantiles} x n_critics={self.n_critics}), leaving "
                f"none. Fix: drop fewer than n_quantiles per critic, e.g. config.training(n_quantiles=25, "
                "top_quantiles_to_drop_per_net=2) (RLlib's defaults)."
            )
        if self.twin_q is False:
            problems.append(
                f"twin_q=False: TQC does not use twin_q; it has n_critics={self.n_critics} critics. Fix: leave "
                "twin_q at True and set the number of critics with config.training(n_critics=...)."
            )
        return super().validation_problems() + [problem for problem in problems if problem]
