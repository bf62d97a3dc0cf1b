"""`DreamerV3TorchRLModule`: DreamerV3's world model, actor and critic in one module.

    acting (runners, one step per call; the state travels as any recurrent module's does):
        OBS (B, 1, obs), STATE_IN {"h", "z", "a"} -> ACTIONS (B, 1), STATE_OUT {"h", "z", "a"}
        h, z: the posterior state after this observation; a: the action taken in it, as the RSSM reads
        it. A new episode starts from `get_initial_state()`: the learned h_0, the prior's mode z_0, a = 0.
        Exploring samples the actor; inference takes its mode (argmax, or the mean for Box actions).

    train batch (rows = B x T replayed steps, row-major by sequence):
        OBS (B*T, obs), ACTIONS (B*T,) ints or (B*T, A), REWARDS, TERMINATEDS, IS_FIRST (B*T,)
    forward_train -> {WORLD_MODEL_OUT: WorldModelOutput over (B, T)}

`model_config` holds `model_size`, `symlog_obs` (True/False/"auto"), `batch_length_T` (what the
config sets, as RLlib 2.60 auto-includes them); vector observations only so far.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F

from flywheel.algorithms.dreamerv3.actor import Actor
from flywheel.algorithms.dreamerv3.critic import Critic
from flywheel.algorithms.dreamerv3.model_sizes import model_dims, uses_symlog_obs
from flywheel.algorithms.dreamerv3.rssm import RSSMState
from flywheel.algorithms.dreamerv3.world_model import WorldModel, model_state
from flywheel.columns import Columns
from flywheel.core.rl_module.torch_rl_module import TorchRLModule
from flywheel.errors import ModuleError

__all__ = ["IS_FIRST", "WORLD_MODEL_OUT", "DreamerV3TorchRLModule"]

IS_FIRST = "is_first"
"""Train-batch column: 1.0 where a replayed step starts its episode (the RSSM restarts there)."""
WORLD_MODEL_OUT = "world_model_out"
"""forward_train output: the world model's `WorldModelOutput` over (B, T)."""


class DreamerV3TorchRLModule(TorchRLModule):
    """World model (`world_model`), actor (`actor`) and critic (`critic`), sized by `model_size`."""

    def setup(self) -> None:
        obs_space, action_space = self.observation_space, self.action_space
        if not (isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1):
            raise ModuleError(
                f"DreamerV3TorchRLModule takes 1-D Box observations so far, not {obs_space}. "
                "Fix: flatten the observations (gymnasium's FlattenObservation wrapper); images come later."
            )
        if action_space is None:
            raise ModuleError(
                "DreamerV3TorchRLModule needs an action space. Fix: build it from a config with an env."
            )
        config = self.model_config or {}
        dims = model_dims(config.get("model_size", "XS"))
        self.batch_length_T = int(config.get("batch_length_T", 64))
        state_size = dims.gru_units + dims.num_z_categoricals * dims.num_z_classes
        self.actor = Actor(
            state_size, action_space, dims, decay=config.get("return_normalization_decay", 0.99)
        )
        self.discrete, self.action_size = self.actor.discrete, self.actor.action_size
        symlog_obs = uses_symlog_obs(obs_space, config.get("symlog_obs", "auto"))
        self.world_model = WorldModel(int(obs_space.shape[0]), self.action_size, dims, symlog_obs=symlog_obs)
        self.critic = Critic(state_size, dims)

    def actions_as_inputs(self, actions: torch.Tensor) -> torch.Tensor:
        """Actions (N,) or (N, A) as the RSSM reads them, (N, A): one-hot for Discrete, floats for Box."""
        if self.discrete:
            return F.one_hot(actions.long(), self.action_size).float()
        return actions.float().reshape(
            *actions.shape[: actions.dim() - (actions.dim() > 1)], self.action_size
        )

    def _forward_train(self, batch: dict, **kwargs: object) -> dict:
        rows = batch[Columns.OBS].shape[0]
        if rows % self.batch_length_T:
            raise ModuleError(
                f"DreamerV3's train batch has {rows} rows, not a multiple of batch_length_T={self.batch_length_T}. "
                "Fix: pass B x T rows, row-major by sequence (what the DreamerV3 replay sampling gives)."
            )
        steps = (rows // self.batch_length_T, self.batch_length_T)
        obs = batch[Columns.OBS].reshape(*steps, -1)
        actions = self.actions_as_inputs(batch[Columns.ACTIONS]).reshape(*steps, self.action_size)
        is_first = batch[IS_FIRST].reshape(steps)
        return {WORLD_MODEL_OUT: self.world_model.observe(obs, actions, is_first)}

    def get_initial_state(self) -> dict:
        """The state of a new episode (no batch axis): h_0 = tanh(w), z_0 the prior's mode, a zero action."""
        with torch.no_grad():
            start = self.world_model.rssm.initial_state(1)
        return {
            "h": start.h[0].cpu().numpy(),
            "z": start.z[0].cpu().numpy(),
            "a": np.zeros(self.action_size, np.float32),
        }

    def _forward_exploration(self, batch: dict, **kwargs: object) -> dict:
        return self._act(batch, explore=True)

    def _forward_inference(self, batch: dict, **kwargs: object) -> dict:
        return self._act(batch, explore=False)

    def _act(self, batch: dict, *, explore: bool) -> dict:
        obs = batch[Columns.OBS][:, 0]  # the runner's time axis of length 1
        state_in = batch[Columns.STATE_IN]
        previous = RSSMState(state_in["h"], state_in["z"])
        embed = self.world_model.encode(obs)
        state, _, _ = self.world_model.rssm.observe_step(previous, state_in["a"], embed)
        dist = self.actor.distribution(model_state(state))
        if isinstance(dist, torch.distributions.OneHotCategorical):
            probs = dist.probs
            index = torch.multinomial(probs, 1)[:, 0] if explore else probs.argmax(-1)
            taken = F.one_hot(index, self.action_size).float()
            actions = index
        else:
            taken = actions = torch.clamp(dist.sample() if explore else dist.mean, -1.0, 1.0)
        return {
            Columns.ACTIONS: actions[:, None],
            Columns.STATE_OUT: {"h": state.h, "z": state.z, "a": taken},
        }
