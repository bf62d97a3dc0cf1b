"""`DefaultTQCTorchRLModule`: SAC's policy with `n_critics` quantile critics (and target copies).

Layout::

    obs ─ pi_encoder ─ pi → ACTION_DIST_INPUTS = [mean, log_std] → squashed Gaussian in [-1, 1]   (SAC's)
    [obs, action] ─ qf_encoders[i] ─ qfs[i] → n_quantiles quantiles of Q,   i < n_critics
    compute_q_values / forward_target → {QF_PREDS: [B, n_critics, n_quantiles]}
"""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

from flywheel.algorithms.sac.rl_module import QF_PREDS, DefaultSACTorchRLModule
from flywheel.columns import Columns
from flywheel.core.models import build_head
from flywheel.errors import ModuleError

_CRITICS = ("qf_encoders", "qfs")


class DefaultTQCTorchRLModule(DefaultSACTorchRLModule):
    """SAC's default module for 1-D Box actions (the policy, its checks, `model_config` keys and
    fusion critic encoder are `DefaultSACTorchRLModule`'s) with TQC's critics: `model_config["n_critics"]`
    critics (default 2), each an encoder of `[obs, action]` and a head with
    `model_config["n_quantiles"]` outputs (default 25), the quantiles of the return at the fractions
    `(2j + 1) / (2 n_quantiles)`. `TQCConfig` sets both keys from its settings of the same names.
    """

    target_qf_encoders: nn.ModuleList  # made by SAC's make_target_networks from critic_names()
    target_qfs: nn.ModuleList

    def setup(self) -> None:
        """SAC's setup (which refuses other than 1-D Box observations and actions), Discrete actions refused."""
        if isinstance(self.action_space, gym.spaces.Discrete):
            raise ModuleError(
                f"TQC's critics read [observation, action] for a 1-D Box action space, got {self.action_space}. "
                "Fix: use SAC (flywheel.SACConfig, discrete SAC) or DQN for Discrete actions."
            )
        super().setup()

    def build_critics(self, cfg: dict, q_outputs: int) -> None:
        """`qf_encoders` and `qfs`: `n_critics` encoders and heads with `n_quantiles` outputs each."""
        self.n_quantiles, self.n_critics = int(cfg.get("n_quantiles", 25)), int(cfg.get("n_critics", 2))
        encoders = [self.critic_encoder(cfg) for _ in range(self.n_critics)]
        self.qf_encoders = nn.ModuleList(encoders)
        self.qfs = nn.ModuleList(build_head(e.output_dim, self.n_quantiles, cfg, "vf") for e in encoders)

    def compute_q_values(self, batch: dict) -> dict:
        """`{QF_PREDS: quantiles [B, n_critics, n_quantiles]}` of `(OBS, ACTIONS)`."""
        return {QF_PREDS: self._quantiles(batch, self.qf_encoders, self.qfs)}

    def forward_target(self, batch: dict) -> dict:
        """The target critics' quantiles, keyed and shaped as in `compute_q_values`."""
        return {QF_PREDS: self._quantiles(batch, self.target_qf_encoders, self.target_qfs)}

    @staticmethod
    def _quantiles(batch: dict, encoders: nn.ModuleList, heads: nn.ModuleList) -> torch.Tensor:
        inputs = torch.cat([batch[Columns.OBS].float(), batch[Columns.ACTIONS].float()], dim=-1)
        return torch.stack(
            [head(encoder(inputs)) for encoder, head in zip(encoders, heads, strict=True)], dim=1
        )

    def critic_names(self) -> list[str]:
        return [name for name in _CRITICS if getattr(self, name, None) is not None]

    def get_non_inference_attributes(self) -> list[str]:
        return [*_CRITICS, *(f"target_{name}" for name in _CRITICS)]
