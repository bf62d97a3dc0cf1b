"""`DefaultPPOTorchRLModule`: PPO's default actor-critic, built from `model_config`.

Layout (see `flywheel.core.models` for the parts)::

    obs ─ encoder ─┬─ pi  → ACTION_DIST_INPUTS
                   └─ vf  → values              (vf_share_layers=True, the default, or use_lstm)

    obs ─ encoder.actor_encoder ── pi → ACTION_DIST_INPUTS
    obs ─ encoder.critic_encoder ─ vf → values  (vf_share_layers=False; RLlib's attribute names)

Runners build it with `inference_only=True`: encoder and policy head only. Observations
`{"observations": ..., "action_mask": ...}` mask the logits (`flywheel.core.models.action_mask`).
"""

from __future__ import annotations

import torch

from flywheel.algorithms.ppo.catalog import PPOCatalog
from flywheel.columns import Columns
from flywheel.compat import child, forward_of
from flywheel.core.models import (
    FUSION_KEYS,
    LSTMEncoder,
    build_encoder,
    build_policy_head,
    build_value_head,
    mask_logits,
    masked_observation_space,
    resolve_model_config,
    split_masked,
)
from flywheel.core.models.catalog import Encoder
from flywheel.core.rl_module.apis import ValueFunctionAPI
from flywheel.core.rl_module.torch_rl_module import TorchRLModule
from flywheel.errors import ModuleError


class DefaultPPOTorchRLModule(TorchRLModule, ValueFunctionAPI):
    """Actor-critic for PPO: encoder + policy head, and a value branch on learners.

    `model_config` is resolved against `DEFAULT_MODEL_CONFIG` in `setup()`, so
    `module.model_config` holds every default-model key (e.g. `max_seq_len` for learners).
    With `use_lstm` the value head shares the LSTM: a separate value LSTM would need its own
    state, recorded by runners that never run it.

    Outputs: `_forward` (acting) → `ACTION_DIST_INPUTS` (+ `STATE_OUT` if recurrent; a recurrent
    module acts on `[B, 1, ...]` observations, as runners give them, and returns `[B, 1, ...]` inputs);
    `_forward_train` also → `EMBEDDINGS` when the value head shares the policy's encoder, which
    `compute_values(batch, embeddings)` reuses instead of encoding the batch again. With separate
    encoders `compute_values(batch)` runs the critic encoder itself: a loss that needs no values
    (BC) never pays for it.
    """

    uses_default_model_config = True  # model_config is checked against DefaultModelConfig's keys
    default_catalog_class = PPOCatalog

    def setup(self) -> None:
        self.model_config = resolve_model_config(
            self.model_config,
            check=self.uses_default_model_config,
            unused=FUSION_KEYS,
            module="DefaultPPOTorchRLModule",
        )
        cfg = self.model_config
        inner_space = masked_observation_space(self.observation_space, self.action_space)
        self.masked = inner_space is not None
        encoder_space = inner_space if self.masked else self.observation_space
        encoder = build_encoder(encoder_space, cfg)
        self.recurrent = isinstance(encoder, LSTMEncoder)
        self.shared_encoder = bool(cfg["vf_share_layers"]) or self.recurrent
        self.encoder = encoder if self.shared_encoder else ActorCriticEncoder(encoder)
        dist_cls = self.get_train_action_dist_cls()  # a ModuleError for a module without action space
        assert self.action_space is not None
        self.pi = build_policy_head(encoder.output_dim, self.action_space, dist_cls, cfg)
        if self.inference_only:
            return
        if not self.shared_encoder:
            self.encoder.critic_encoder = build_encoder(encoder_space, cfg)
        self.vf = build_value_head(encoder.output_dim, cfg)

    def get_initial_state(self) -> dict:
        return self.encoder.get_initial_state() if isinstance(self.encoder, LSTMEncoder) else {}

    def get_non_inference_attributes(self) -> list[str]:
        return ["encoder.critic_encoder", "vf"]

    def _forward(self, batch: dict, **kwargs) -> dict:
        obs, allowed = self._observations(batch)
        if self.recurrent:
            embeddings, state = self.encoder(obs, batch[Columns.STATE_IN])
            return {Columns.ACTION_DIST_INPUTS: self._logits(embeddings, allowed), Columns.STATE_OUT: state}
        # Runners call this every step: the actor encoder is called directly rather than through
        # `ActorCriticEncoder` (whose call would only pass `obs` on), and the children are read and
        # called through `flywheel.compat` (`self.encoder(obs)` as it runs, ~2 us less per read and call).
        encoder = child(self, "encoder")
        if isinstance(encoder, ActorCriticEncoder):
            encoder = child(encoder, "actor_encoder")
        return {Columns.ACTION_DIST_INPUTS: self._logits(forward_of(encoder)(obs), allowed)}

    def _forward_train(self, batch: dict, **kwargs) -> dict:
        obs, allowed = self._observations(batch)
        out = {}
        if self.recurrent:
            embeddings, out[Columns.STATE_OUT] = self.encoder(obs, state_in(batch))
        else:
            embeddings = self.encoder(obs)
        out[Columns.ACTION_DIST_INPUTS] = self._logits(embeddings, allowed)
        if self.shared_encoder and not self.inference_only:
            # Free: the value head reads the policy's embeddings. A separate critic encoder runs only
            # when a loss asks for values (compute_values), so losses without one (BC) skip it.
            out[Columns.EMBEDDINGS] = embeddings
        return out

    def compute_values(self, batch: dict, embeddings: torch.Tensor | None = None) -> torch.Tensor:
        """Values `[B]` (or `[B, T]` for recurrent sequence batches, which need `STATE_IN`)."""
        if self.inference_only:
            raise ModuleError(
                "This DefaultPPOTorchRLModule was built with inference_only=True and has no value "
                "branch. Fix: compute values on the learner's module (inference_only=False)."
            )
        if embeddings is None:
            embeddings = self._value_embeddings(batch)
        return self.vf(embeddings).squeeze(-1)

    def _observations(self, batch: dict) -> tuple:
        """(what the encoders read, the allowed-actions mask or None)."""
        return split_masked(batch[Columns.OBS]) if self.masked else (batch[Columns.OBS], None)

    def _logits(self, embeddings: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
        logits = forward_of(child(self, "pi"))(embeddings)  # `self.pi(embeddings)`, see `_forward`
        return logits if allowed is None else mask_logits(logits, allowed)

    def _value_embeddings(self, batch: dict) -> torch.Tensor:
        obs = self._observations(batch)[0]
        if self.recurrent:
            return self.encoder(obs, state_in(batch))[0]
        encoder = self.encoder
        return encoder.critic_encoder(obs) if isinstance(encoder, ActorCriticEncoder) else encoder(obs)


class ActorCriticEncoder(torch.nn.Module):
    """Separate policy and value encoders under RLlib's names, `actor_encoder` and `critic_encoder`
    (code such as a learner with one optimizer per branch reads them); calling it encodes for
    acting. Inference-only modules have no `critic_encoder`."""

    critic_encoder: torch.nn.Module  # set by the module on learners

    def __init__(self, actor_encoder: Encoder) -> None:
        super().__init__()
        self.actor_encoder = actor_encoder
        self.output_dim = actor_encoder.output_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor_encoder(obs)


def state_in(batch: dict) -> dict:
    """`batch[STATE_IN]` (the recurrent state at each sequence start), or a ModuleError naming it."""
    if Columns.STATE_IN not in batch:
        raise ModuleError(
            f"This recurrent module needs batch[{Columns.STATE_IN!r}] (the LSTM state at each "
            f"sequence start, {{'h': [B, cell], 'c': [B, cell]}}) with OBS [B, T, ...]; the batch "
            f"has {sorted(batch)}. Fix: keep the default learner connectors, which add it."
        )
    return batch[Columns.STATE_IN]
