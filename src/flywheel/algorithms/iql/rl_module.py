"""`DefaultIQLTorchRLModule`: SAC's policy and (twin) critics with target copies, plus a state-value
network V(s) (IQL's expectile value).

Layout: SAC's (see `flywheel.algorithms.sac.rl_module`), and on learners::

    obs ─ vf_encoder ─ vf → V [B]

Runners build it with `inference_only=True`: the policy only, as SAC's. The value network is not a
target-network pair (IQL keeps target copies of the critics only).
"""

from __future__ import annotations

import torch
from torch import nn

from flywheel.algorithms.sac.rl_module import DefaultSACTorchRLModule
from flywheel.columns import Columns
from flywheel.core.models import build_encoder, build_head, split_masked
from flywheel.core.rl_module.apis import ValueFunctionAPI

_VALUE = ("vf_encoder", "vf")
LOG_STD_BOUNDS = (-5.0, 2.0)
"""The policy's log standard deviations are clamped to these (RLlib 2.60's squashed Gaussian clamps to
them, and so does the IQL paper's policy): IQL's actor maximizes the weighted log-likelihood of the
data's actions, and SAC's lower floor (-20) lets a few heavily weighted rows shrink the standard
deviation until their gradients swamp every other row's."""


class DefaultIQLTorchRLModule(DefaultSACTorchRLModule, ValueFunctionAPI):
    """SAC's module (Box or Discrete actions, same `model_config`) with a value network: an encoder
    of the observations as the policy's, and a head with one output. Its policy and critics have
    SAC's names, so SAC can fine-tune it online (build SAC with this module class and restore the
    weights; SAC trains policy and critics and leaves V alone). The policy's log standard deviations
    are clamped to `LOG_STD_BOUNDS` (Box actions)."""

    log_std_bounds = LOG_STD_BOUNDS

    def setup(self) -> None:
        super().setup()
        if self.inference_only:
            return
        self.vf_encoder = build_encoder(self.encoder_space, self.model_config)
        self.vf = build_head(self.vf_encoder.output_dim, 1, self.model_config, "vf")

    def compute_values(self, batch: dict, embeddings: torch.Tensor | None = None) -> torch.Tensor:
        """V(OBS), shape `[B]` (`embeddings` are the policy's, so they are not reused here)."""
        obs = split_masked(batch[Columns.OBS])[0] if self.masked else batch[Columns.OBS]
        return self.vf(self.vf_encoder(obs)).squeeze(-1)

    def value_parameters(self) -> list[nn.Parameter]:
        """What the value optimizer updates."""
        return [p for name in _VALUE for p in getattr(self, name).parameters()]

    def get_non_inference_attributes(self) -> list[str]:
        return [*super().get_non_inference_attributes(), *_VALUE]
