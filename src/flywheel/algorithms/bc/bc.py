"""`BC`: behavior cloning on offline data (MARWIL with beta=0)."""

from __future__ import annotations

from flywheel.algorithms.marwil.marwil import MARWIL


class BC(MARWIL):
    """MARWIL's offline training step with BC's loss (`BCConfig.beta == 0`)."""
