"""`DefaultSACTorchRLModule`: SAC's policy and (twin) critics with target copies, for Box or Discrete actions.

Layout (see `flywheel.core.models` for the parts)::

    Box:       obs ─ pi_encoder ─ pi → ACTION_DIST_INPUTS = [mean, log_std] → squashed Gaussian in [-1, 1]
               [obs, action] ─ qf_encoder ─ qf → Q [B]      (and qf_twin_encoder ─ qf_twin with twin_q)
               qf_encoder: an MLP over [obs, action], or, when model_config sets a fusionnet_* key,
               RLlib's `FusionEncoder` (obs and action encoders, then fusionnet_hiddens)
    Discrete:  obs ─ pi_encoder ─ pi → ACTION_DIST_INPUTS = logits [B, n]  → Categorical
               obs ─ qf_encoder ─ qf → Q [B, n], one per action   (and the twin)

Runners build it with `inference_only=True`: the policy only. Learners also hold frozen
`target_*` copies of the critics, which the learner moves towards the critics (Polyak, tau).
Discrete actions with observations `{"observations": ..., "action_mask": ...}` mask the policy's
logits (`flywheel.core.models.action_mask`): forbidden actions get probability 0 in every expectation.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from flywheel.columns import Columns
from flywheel.core.distributions import Categorical, Distribution, distribution_for_space
from flywheel.core.learner.utils import make_target_network
from flywheel.core.models import (
    FUSION_KEYS,
    GAUSSIAN_HEAD_KEYS,
    FusionEncoder,
    LayerInit,
    MLPEncoder,
    build_encoder,
    build_head,
    build_mlp_encoder,
    mask_logits,
    masked_observation_space,
    resolve_model_config,
    split_masked,
)
from flywheel.core.models.catalog import Encoder
from flywheel.core.rl_module.apis import TargetNetworkAPI
from flywheel.core.rl_module.default_model_config import as_model_config_dict
from flywheel.core.rl_module.torch_rl_module import TorchRLModule
from flywheel.errors import ModuleError

QF_PREDS = "qf_preds"
"""Output key of `compute_q_values` / `forward_target`: Q-values `[B]` of `(OBS, ACTIONS)` (Box),
or `[B, n]` of `OBS` and every action (Discrete)."""
QF_TWIN_PREDS = "qf_twin_preds"
"""The twin critic's Q-values, shaped as `QF_PREDS` (twin_q only)."""

# Keeps the policy's standard deviation in a sane range: exp(-20) is deterministic, exp(2) ~ 7.4
# already squashes to +-1 almost surely.
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0
_CRITICS = ("qf_encoder", "qf", "qf_twin_encoder", "qf_twin")


class DefaultSACTorchRLModule(TorchRLModule, TargetNetworkAPI):
    """Policy and critics for SAC with 1-D Box or Discrete actions (chosen by the action space).

    Box: the policy's actions are tanh-squashed into [-1, 1]; runners map them to the env's bounds
    (`normalize_actions=True`, the default), and the critics learn on the stored [-1, 1] actions.
    Observations must be 1-D (the critics read `[obs, action]`).

    Discrete (Christodoulou, 2019): the policy gives the logits of a Categorical (runners sample it
    when exploring, take the argmax otherwise) and each critic maps obs to one Q-value per action,
    so the learner takes exact expectations over the actions; observations may be anything the
    default encoders read (1-D, images, Discrete).

    `model_config`: the default-model keys (`fcnet_hiddens` for every network, `head_fcnet_hiddens`
    for the heads) plus `twin_q` (set from `SACConfig.twin_q`). With Box actions, a `model_config`
    that sets any `fusionnet_*` key (a `DefaultModelConfig` sets them all) gets RLlib 2.60's critic
    encoder: the observations through an encoder as the policy's, the actions through an MLP over
    `fcnet_hiddens`, and `fusionnet_hiddens` layers (`fusionnet_activation`) over both embeddings,
    with skip connections (`flywheel.core.models.fusion.FusionEncoder`). Without them the critic
    encoder is one MLP over `[obs, action]`; the resolved `model_config` then holds no fusion keys,
    so a module rebuilt from it (a checkpoint) has the same critics.

    The target critics are made in `setup()` of every non-inference module (so a module restored
    with `RLModule.from_checkpoint` accepts their weights); `make_target_networks()` then has
    nothing left to do.
    """

    uses_default_model_config = True  # model_config is checked against DefaultModelConfig's keys
    log_std_bounds: tuple[float, float] = (LOG_STD_MIN, LOG_STD_MAX)
    """The policy's log standard deviations (Box actions) are clamped to these bounds."""
    action_space: gym.spaces.Discrete | gym.spaces.Box  # setup() refuses other action spaces

    def setup(self) -> None:
        self._check_spaces()
        self.discrete = isinstance(self.action_space, gym.spaces.Discrete)
        given = as_model_config_dict(self.model_config) or {}
        self.fused = not self.discrete and any(key in given for key in FUSION_KEYS)
        self.model_config = resolve_model_config(
            self.model_config,
            check=self.uses_default_model_config,
            unused=GAUSSIAN_HEAD_KEYS + (FUSION_KEYS if self.discrete else ()),
            module="DefaultSACTorchRLModule" + (" with Discrete actions" if self.discrete else ""),
        )
        if not self.fused:
            self.model_config = {k: v for k, v in self.model_config.items() if k not in FUSION_KEYS}
        cfg = self.model_config
        self._dist_cls, pi_outputs, q_outputs = self._output_layout()
        inner_space = masked_observation_space(self.observation_space, self.action_space)
        self.masked = inner_space is not None
        self.encoder_space = inner_space if self.masked else self.observation_space
        self.pi_encoder = build_encoder(self.encoder_space, cfg)
        self.pi = build_head(self.pi_encoder.output_dim, pi_outputs, cfg, "pi")
        if self.inference_only:
            return
        self.build_critics(cfg, q_outputs)
        self.make_target_networks()

    def build_critics(self, cfg: dict, q_outputs: int) -> None:
        """The critic (and with `twin_q` its twin): encoder `qf_encoder` and head `qf` with `q_outputs`
        outputs. A subclass with other critics (TQC's quantile critics) overrides this, `critic_names`,
        `get_non_inference_attributes` and the Q-value methods; the policy stays SAC's."""
        for prefix in ("qf", "qf_twin") if cfg.get("twin_q", True) else ("qf",):
            encoder = self.critic_encoder(cfg)
            setattr(self, f"{prefix}_encoder", encoder)
            setattr(self, prefix, build_head(encoder.output_dim, q_outputs, cfg, "vf"))

    def _output_layout(self) -> tuple[type[Distribution], int, int]:
        """(distribution class, policy outputs, outputs per critic)."""
        if isinstance(self.action_space, gym.spaces.Discrete):
            return Categorical, int(self.action_space.n), int(self.action_space.n)
        size = int(self.action_space.shape[0])
        unit_box = gym.spaces.Box(-1.0, 1.0, (size,), np.float32)
        return distribution_for_space(unit_box, squashed=True), 2 * size, 1

    def critic_encoder(self, cfg: dict) -> Encoder | FusionEncoder:
        """Discrete: an encoder of the observations; Box: an MLP over `[obs, action]`, or RLlib's
        fusion of an observation and an action encoder (`self.fused`)."""
        if self.discrete:
            return build_encoder(self.encoder_space, cfg)
        obs_space, action_space = self.observation_space, self.action_space
        # Both are 1-D Boxes here: setup() refused others (`_check_box_spaces`).
        assert isinstance(obs_space, gym.spaces.Box) and isinstance(action_space, gym.spaces.Box)
        obs_size, action_size = int(obs_space.shape[0]), int(action_space.shape[0])
        if not self.fused:
            return build_mlp_encoder(obs_size + action_size, cfg)
        obs_encoder = build_mlp_encoder(obs_size, cfg)
        # RLlib's action encoder: fcnet_hiddens and fcnet_activation, torch's initialization.
        action_encoder = MLPEncoder(action_size, cfg["fcnet_hiddens"], cfg["fcnet_activation"])
        return FusionEncoder(
            [(obs_size, obs_encoder), (action_size, action_encoder)],
            cfg["fusionnet_hiddens"],
            cfg["fusionnet_activation"],
            obs_encoder.output_dim,
            LayerInit.from_model_config(cfg, "fusionnet"),
        )

    def _check_spaces(self) -> None:
        if not isinstance(self.action_space, gym.spaces.Discrete):
            self._check_box_spaces()
        if self.model_config.get("use_lstm"):
            raise ModuleError(
                "DefaultSACTorchRLModule has no recurrent version (model_config['use_lstm']=True). Fix: set "
                "use_lstm=False, or stack frames with flywheel.connectors.env_to_module.FrameStacking."
            )

    def _check_box_spaces(self) -> None:
        """Box actions: the critics read `[obs, action]`, so both must be 1-D."""
        space = self.action_space
        if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
            raise ModuleError(
                f"The default SAC module needs a 1-D Box or a Discrete action space, got {space}. Fix: turn "
                "the actions into one Discrete (e.g. one index per combination) or a 1-D Box with a gymnasium "
                "ActionWrapper, or use PPO (flywheel.PPOConfig)."
            )
        obs = self.observation_space
        if not (isinstance(obs, gym.spaces.Box) and len(obs.shape) == 1):
            raise ModuleError(
                f"The default SAC module's critics read [observation, action], so observations must be a "
                f"1-D Box, got {obs}. Fix: add flywheel.connectors.env_to_module.FlattenObservations via "
                "config.env_runners(env_to_module_connector=lambda env, spaces, device: FlattenObservations())."
            )

    # Acting and training.

    def get_inference_action_dist_cls(self) -> type[Distribution]:
        return self._dist_cls

    def get_exploration_action_dist_cls(self) -> type[Distribution]:
        return self._dist_cls

    def get_train_action_dist_cls(self) -> type[Distribution]:
        return self._dist_cls

    def _forward(self, batch: dict, **kwargs) -> dict:
        if self.masked:
            obs, allowed = split_masked(batch[Columns.OBS])
            return {Columns.ACTION_DIST_INPUTS: mask_logits(self.pi(self.pi_encoder(obs)), allowed)}
        inputs = self.pi(self.pi_encoder(batch[Columns.OBS]))
        if self.discrete:
            return {Columns.ACTION_DIST_INPUTS: inputs}
        mean, log_std = inputs.chunk(2, dim=-1)
        log_std = log_std.clamp(*self.log_std_bounds)
        return {Columns.ACTION_DIST_INPUTS: torch.cat([mean, log_std], dim=-1)}

    def compute_q_values(self, batch: dict) -> dict:
        """`{QF_PREDS: Q(OBS, ACTIONS) [B]}` (Box) or `{QF_PREDS: Q(OBS, every action) [B, n]}`
        (Discrete; ACTIONS not read), and `QF_TWIN_PREDS` likewise with twin critics."""
        return self._critics(batch, "")

    def forward_target(self, batch: dict) -> dict:
        """The target critics' Q-values, keyed and shaped as in `compute_q_values`."""
        return self._critics(batch, "target_")

    def _critics(self, batch: dict, prefix: str) -> dict:
        if self.discrete:
            inputs = split_masked(batch[Columns.OBS])[0] if self.masked else batch[Columns.OBS]
        else:
            inputs = torch.cat([batch[Columns.OBS].float(), batch[Columns.ACTIONS].float()], dim=-1)
        out = {}
        for key, name in ((QF_PREDS, "qf"), (QF_TWIN_PREDS, "qf_twin")):
            encoder = getattr(self, f"{prefix}{name}_encoder", None)
            if encoder is not None:
                q = getattr(self, f"{prefix}{name}")(encoder(inputs))
                out[key] = q if self.discrete else q.squeeze(-1)
        return out

    def policy_parameters(self) -> list[nn.Parameter]:
        """What the actor optimizer updates."""
        return [*self.pi_encoder.parameters(), *self.pi.parameters()]

    def critic_parameters(self) -> list[nn.Parameter]:
        """What the critic optimizer updates (both critics with twin_q)."""
        return [p for name in self.critic_names() for p in getattr(self, name).parameters()]

    # TargetNetworkAPI.

    def make_target_networks(self) -> None:
        """Frozen `target_*` copies of the critics (once)."""
        if hasattr(self, f"target_{self.critic_names()[0]}"):
            return
        for name in self.critic_names():
            setattr(self, f"target_{name}", make_target_network(getattr(self, name)))

    def get_target_network_pairs(self) -> list[tuple[nn.Module, nn.Module]]:
        return [(getattr(self, name), getattr(self, f"target_{name}")) for name in self.critic_names()]

    def critic_names(self) -> list[str]:
        """The critics' attribute names (each has a `target_` copy)."""
        return [name for name in _CRITICS if getattr(self, name, None) is not None]

    def get_non_inference_attributes(self) -> list[str]:
        return [*_CRITICS, *(f"target_{name}" for name in _CRITICS)]
