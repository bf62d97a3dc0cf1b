"""`BC`: behavior cloning on offline data (MARWIL with beta=0)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flywheel.algorithms.marwil.marwil import MARWIL

if TYPE_CHECKING:
    from flywheel.algorithms.bc.config import BCConfig


class BC(MARWIL):
    """MARWIL's offline training step with BC's loss (`BCConfig.beta == 0`)."""

    config: BCConfig
