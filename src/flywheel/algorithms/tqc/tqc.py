"""`TQC`: truncated quantile critics (Kuznetsov et al., 2020) on SAC's off-policy replay loop."""

from __future__ import annotations

from flywheel.algorithms.sac.sac import SAC


class TQC(SAC):
    """SAC's training step (`OffPolicyAlgorithm.training_step`) with TQC's losses and module
    (`TQCTorchLearner`, `DefaultTQCTorchRLModule`)."""
