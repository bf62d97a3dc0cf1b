"""`DefaultAPPOTorchRLModule`: PPO's default actor-critic plus a target copy of its policy (APPO's "old" policy).

    obs ─ encoder ─ pi → ACTION_DIST_INPUTS          (trained)
    obs ─ _old_encoder ─ _old_pi → TARGET_NETWORK_ACTION_DIST_INPUTS   (forward_target; follows
                                                                         the trained nets every
                                                                         few updates)

The target copies exist on learners only (runners build the module `inference_only`); they are
made in `setup()`, so a module restored with `RLModule.from_checkpoint` takes their weights.
"""

from __future__ import annotations

import torch

from flywheel.algorithms.ppo.rl_module import DefaultPPOTorchRLModule, state_in
from flywheel.columns import Columns
from flywheel.core.learner.utils import make_target_network
from flywheel.core.rl_module.apis import TARGET_NETWORK_ACTION_DIST_INPUTS, TargetNetworkAPI


class DefaultAPPOTorchRLModule(DefaultPPOTorchRLModule, TargetNetworkAPI):
    """`DefaultPPOTorchRLModule` with `TargetNetworkAPI`: `_old_encoder` and `_old_pi`."""

    def setup(self) -> None:
        super().setup()
        if not self.inference_only:
            self.make_target_networks()

    def make_target_networks(self) -> None:
        """Frozen copies of the encoder and the policy head (once; later calls keep them)."""
        if not hasattr(self, "_old_pi"):
            self._old_encoder = make_target_network(self.encoder)
            self._old_pi = make_target_network(self.pi)

    def get_target_network_pairs(self) -> list[tuple[torch.nn.Module, torch.nn.Module]]:
        return [(self.encoder, self._old_encoder), (self.pi, self._old_pi)]

    def forward_target(self, batch: dict) -> dict:
        """`TARGET_NETWORK_ACTION_DIST_INPUTS`: the target policy's action-distribution inputs."""
        obs = batch[Columns.OBS]
        if self.recurrent:
            embeddings, _ = self._old_encoder(obs, state_in(batch))
        else:
            embeddings = self._old_encoder(obs)
        return {TARGET_NETWORK_ACTION_DIST_INPUTS: self._old_pi(embeddings)}

    def get_non_inference_attributes(self) -> list[str]:
        return [*super().get_non_inference_attributes(), "_old_encoder", "_old_pi"]
