"""`DefaultDQNTorchRLModule`: DQN's default Q-network (optionally dueling) with target copies.

Layout (see `flywheel.core.models` for the parts)::

    obs ─ encoder ─┬─ advantages (af) ─┐
                   └─ value (vf) ──────┴→ Q = V + A - mean(A)     (dueling)
    obs ─ encoder ── af → Q                                        (dueling=False)

With `num_atoms > 1` (C51, see `flywheel.algorithms.dqn.distributional`) the heads give logits
`[B, num_actions, num_atoms]` (the value head one logit per atom, added to every action's centred
advantage logits), and Q = sum(softmax(logits) * z) over the support z from `v_min` to `v_max`.

Learners also hold `target_encoder`, `target_af` (and `target_vf`): the target network,
updated by the learner (`get_target_network_pairs`). Runners build the module with
`inference_only=True`, without the target copies. Observations `{"observations": ...,
"action_mask": ...}` mask the Q-values of both networks and the random exploratory actions
(`flywheel.core.models.action_mask`).
"""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import nn

from flywheel.algorithms.dqn.distributional import support
from flywheel.columns import Columns
from flywheel.core.learner.utils import make_target_network
from flywheel.core.models import (
    FUSION_KEYS,
    GAUSSIAN_HEAD_KEYS,
    build_encoder,
    build_head,
    mask_logits,
    masked_observation_space,
    random_allowed_actions,
    resolve_model_config,
    split_masked,
)
from flywheel.core.rl_module.apis import TargetNetworkAPI
from flywheel.core.rl_module.torch_rl_module import TorchRLModule
from flywheel.errors import ModuleError

QF_PREDS = "qf_preds"
"""Output key of `forward_train` / `forward_target`: Q-values `[B, num_actions]` of `batch[OBS]`."""
QF_LOGITS = "qf_logits"
"""Output key of `forward_train` / `forward_target` with `num_atoms > 1`: the logits
`[B, num_actions, num_atoms]` of each action's return distribution over the support."""

_NETWORKS = ("encoder", "af", "vf")


class DefaultDQNTorchRLModule(TorchRLModule, TargetNetworkAPI):
    """Q-network for Discrete actions, acting epsilon-greedily while exploring.

    `model_config`: the default-model keys (`fcnet_hiddens` for the encoder, `head_fcnet_hiddens`
    for the heads, ...) plus `dueling`, `num_atoms`, `v_min` and `v_max` (set from `DQNConfig`'s
    settings of those names; `num_atoms=1`, the default, is plain expected-value DQN).

    Outputs: `forward_exploration` → `ACTIONS` (a random action with probability `epsilon`, else
    the greedy one; the runner's GetActions piece then leaves them as they are);
    `forward_inference` → `ACTION_DIST_INPUTS` = Q-values (greedy: argmax); `forward_train` →
    `QF_PREDS` (and `QF_LOGITS` with `num_atoms > 1`). `epsilon` is a buffer: the learner sets it from the epsilon schedule, and runners
    receive it with the weights.

    The target copies are made in `setup()` of every non-inference module (so a module restored
    with `RLModule.from_checkpoint` accepts their weights); `make_target_networks()` then has
    nothing left to do.
    """

    uses_default_model_config = True  # model_config is checked against DefaultModelConfig's keys
    action_space: gym.spaces.Discrete  # setup() refuses other action spaces
    epsilon: torch.Tensor  # a buffer (registered in setup)
    target_encoder: nn.Module  # the target networks (made in `make_target_networks`)
    target_af: nn.Module
    target_vf: nn.Module | None
    atoms: torch.Tensor  # the support z [num_atoms] (a buffer; C51 only)

    def setup(self) -> None:
        if not isinstance(self.action_space, gym.spaces.Discrete):
            raise ModuleError(
                f"DQN needs a Discrete action space (one Q-value per action), got {self.action_space}. "
                "Fix: use SAC (flywheel.SACConfig) for continuous actions, or discretize the actions "
                "with a gymnasium ActionWrapper."
            )
        self.model_config = resolve_model_config(
            self.model_config,
            check=self.uses_default_model_config,
            unused=GAUSSIAN_HEAD_KEYS + FUSION_KEYS + ("pi_output_kernel_initializer_kwargs",),
            module="DefaultDQNTorchRLModule",
        )
        cfg = self.model_config
        if cfg["use_lstm"]:
            raise ModuleError(
                "DefaultDQNTorchRLModule has no recurrent version (model_config['use_lstm']=True). "
                "Fix: set use_lstm=False, or stack frames with flywheel.connectors.env_to_module.FrameStacking."
            )
        inner_space = masked_observation_space(self.observation_space, self.action_space)
        self.masked = inner_space is not None
        self.num_atoms = int(cfg.get("num_atoms", 1))
        if self.num_atoms > 1:
            atoms = support(self.num_atoms, float(cfg.get("v_min", -10.0)), float(cfg.get("v_max", 10.0)))
            self.register_buffer("atoms", atoms, persistent=False)
        self.encoder = build_encoder(inner_space if self.masked else self.observation_space, cfg)
        num_actions = int(self.action_space.n)
        self.af = build_head(self.encoder.output_dim, num_actions * self.num_atoms, cfg, "vf")
        dueling = cfg.get("dueling", True)
        self.vf = build_head(self.encoder.output_dim, self.num_atoms, cfg, "vf") if dueling else None
        self.register_buffer("epsilon", torch.tensor(1.0))
        if not self.inference_only:
            self.make_target_networks()

    # Acting and training.

    def compute_q_values(self, batch: dict) -> torch.Tensor:
        """Q-values `[B, num_actions]` of `batch[OBS]` (online network; forbidden actions `MASKED_LOGIT`)."""
        return self._q_outputs(batch, self.encoder, self.af, self.vf)[QF_PREDS]

    def _q_outputs(self, batch: dict, encoder: nn.Module, af: nn.Module, vf: nn.Module | None) -> dict:
        """`{QF_PREDS: [B, num_actions]}`, with `QF_LOGITS` `[B, num_actions, num_atoms]` for C51."""
        obs, allowed = split_masked(batch[Columns.OBS]) if self.masked else (batch[Columns.OBS], None)
        out = _q_outputs(encoder, af, vf, obs, int(self.action_space.n), self.num_atoms)
        if self.num_atoms > 1:
            out[QF_PREDS] = (torch.softmax(out[QF_LOGITS], dim=-1) * self.atoms).sum(dim=-1)
        if allowed is not None:
            out[QF_PREDS] = mask_logits(out[QF_PREDS], allowed)
        return out

    def _forward_inference(self, batch: dict, **kwargs) -> dict:
        return {Columns.ACTION_DIST_INPUTS: self.compute_q_values(batch)}

    def _forward_exploration(self, batch: dict, **kwargs) -> dict:
        greedy = torch.argmax(self.compute_q_values(batch), dim=-1)
        if self.masked:
            random = random_allowed_actions(split_masked(batch[Columns.OBS])[1])
        else:
            random = torch.randint_like(greedy, int(self.action_space.n))
        explore = torch.rand(greedy.shape, device=greedy.device) < self.epsilon
        return {Columns.ACTIONS: torch.where(explore, random, greedy)}

    def _forward_train(self, batch: dict, **kwargs) -> dict:
        return self._q_outputs(batch, self.encoder, self.af, self.vf)

    # TargetNetworkAPI.

    def make_target_networks(self) -> None:
        """Frozen copies `target_encoder`, `target_af`, `target_vf` of the online networks (once)."""
        if hasattr(self, "target_encoder"):
            return
        for name in _NETWORKS:
            network = getattr(self, name)
            target = None if network is None else make_target_network(network)
            setattr(self, f"target_{name}", target)

    def get_target_network_pairs(self) -> list[tuple[nn.Module, nn.Module]]:
        return [
            (getattr(self, name), getattr(self, f"target_{name}"))
            for name in _NETWORKS
            if getattr(self, name) is not None
        ]

    def forward_target(self, batch: dict) -> dict:
        """`{QF_PREDS: target-network Q-values [B, num_actions] of batch[OBS]}` (masked as `compute_q_values`),
        with `QF_LOGITS` for C51."""
        return self._q_outputs(batch, self.target_encoder, self.target_af, self.target_vf)

    def get_non_inference_attributes(self) -> list[str]:
        return [f"target_{name}" for name in _NETWORKS]


def _q_outputs(
    encoder: nn.Module,
    af: nn.Module,
    vf: nn.Module | None,
    obs: torch.Tensor,
    num_actions: int,
    num_atoms: int,
) -> dict:
    """`{QF_PREDS: Q}` from the advantage head, or dueling: `V + A - mean(A)` (the mean makes V and A
    identifiable: any constant could otherwise move between them). C51: `{QF_LOGITS: ...}` of shape
    `[B, num_actions, num_atoms]`, dueling per atom (V's logit for each atom plus the action's advantage
    logit minus the actions' mean; the caller turns them into Q)."""
    embeddings = encoder(obs)
    advantages = af(embeddings)
    if num_atoms > 1:
        advantages = advantages.view(*advantages.shape[:-1], num_actions, num_atoms)
        if vf is None:
            return {QF_LOGITS: advantages}
        centred = advantages - advantages.mean(dim=-2, keepdim=True)
        return {QF_LOGITS: vf(embeddings).unsqueeze(-2) + centred}
    if vf is None:
        return {QF_PREDS: advantages}
    return {QF_PREDS: vf(embeddings) + advantages - advantages.mean(dim=-1, keepdim=True)}
