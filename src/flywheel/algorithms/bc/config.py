"""`BCConfig`: behavior cloning, MARWIL with `beta=0` (RLlib 2.60's BC): maximize log pi(a|s) on offline data.

config = (
    BCConfig()
    .environment("CartPole-v1")                       # spaces and evaluation
    .offline_data(input_="data/cartpole")
    .evaluation(evaluation_interval=1, evaluation_config=BCConfig.overrides(explore=False))
)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from flywheel.algorithms.config_settings import setting
from flywheel.algorithms.marwil.config import MARWILConfig

if TYPE_CHECKING:
    from flywheel.algorithms.bc.bc import BC


@dataclasses.dataclass(init=False, repr=False, eq=True)
class BCConfig(MARWILConfig):
    """MARWIL's settings with `beta=0.0`: no value function is trained, every action weighs the same."""

    beta: float = setting("training", 0.0)
    """0.0 for BC (a larger beta makes it MARWIL)."""

    if TYPE_CHECKING:  # what build_algo() returns, for editors

        def build_algo(self) -> BC: ...

    def get_default_algo_class(self) -> type[BC]:
        """BC (imported on first use)."""
        from flywheel.algorithms.bc.bc import BC

        return BC
