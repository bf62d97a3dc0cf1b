"""`DefaultPPOTorchRLModule`: PPO's default actor-critic, built from `model_config`.

Layout (see `flywheel.core.models` for the parts)::

    obs ─ encoder ─┬─ pi  → ACTION_DIST_INPUTS
                   └─ vf  → values              (vf_share_layers=True, or use_lstm)
    obs ─ vf_encoder ── vf → values             (vf_share_layers=False, the default)

Runners build it with `inference_only=True`: encoder and policy head only.
"""

from __future__ import annotations

import torch

from flywheel.columns import Columns
from flywheel.core.models import (
    LSTMEncoder,
    build_encoder,
    build_policy_head,
    build_value_head,
    resolve_model_config,
)
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
    `_forward_train` also → `EMBEDDINGS` (the value branch's input), which
    `compute_values(batch, embeddings)` reuses instead of encoding the batch again.
    """

    uses_default_model_config = True  # model_config is checked against DefaultModelConfig's keys

    def setup(self) -> None:
        self.model_config = resolve_model_config(self.model_config, check=self.uses_default_model_config)
        cfg = self.model_config
        self.encoder = build_encoder(self.observation_space, cfg)
        self.recurrent = isinstance(self.encoder, LSTMEncoder)
        self.shared_encoder = bool(cfg["vf_share_layers"]) or self.recurrent
        self.pi = build_policy_head(
            self.encoder.output_dim, self.action_space, self.get_train_action_dist_cls(), cfg
        )
        if self.inference_only:
            return
        if not self.shared_encoder:
            self.vf_encoder = build_encoder(self.observation_space, cfg)
        self.vf = build_value_head(self.encoder.output_dim, cfg)

    def get_initial_state(self) -> dict:
        return self.encoder.get_initial_state() if self.recurrent else {}

    def get_non_inference_attributes(self) -> list[str]:
        return ["vf_encoder", "vf"]

    def _forward(self, batch: dict, **kwargs) -> dict:
        if self.recurrent:
            embeddings, state = self.encoder(batch[Columns.OBS], batch[Columns.STATE_IN])
            return {Columns.ACTION_DIST_INPUTS: self.pi(embeddings), Columns.STATE_OUT: state}
        return {Columns.ACTION_DIST_INPUTS: self.pi(self.encoder(batch[Columns.OBS]))}

    def _forward_train(self, batch: dict, **kwargs) -> dict:
        obs = batch[Columns.OBS]
        out = {}
        if self.recurrent:
            embeddings, out[Columns.STATE_OUT] = self.encoder(obs, self._state_in(batch))
        else:
            embeddings = self.encoder(obs)
        out[Columns.ACTION_DIST_INPUTS] = self.pi(embeddings)
        if not self.inference_only:
            out[Columns.EMBEDDINGS] = embeddings if self.shared_encoder else self.vf_encoder(obs)
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

    def _value_embeddings(self, batch: dict) -> torch.Tensor:
        obs = batch[Columns.OBS]
        if self.recurrent:
            return self.encoder(obs, self._state_in(batch))[0]
        return self.encoder(obs) if self.shared_encoder else self.vf_encoder(obs)

    def _state_in(self, batch: dict) -> dict:
        if Columns.STATE_IN not in batch:
            raise ModuleError(
                f"This recurrent module needs batch[{Columns.STATE_IN!r}] (the LSTM state at each "
                f"sequence start, {{'h': [B, cell], 'c': [B, cell]}}) with OBS [B, T, ...]; the batch "
                f"has {sorted(batch)}. Fix: keep the default learner connectors, which add it."
            )
        return batch[Columns.STATE_IN]
