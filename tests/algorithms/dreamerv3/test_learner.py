"""DreamerV3TorchLearner: one update steps all three optimizers, clips each with its own limit, and moves
the critic's EMA copy; a few updates on a fixed batch lower the world model's losses."""

import gymnasium as gym
import numpy as np
import torch

from flywheel.algorithms.dreamerv3.config import DreamerV3Config
from flywheel.algorithms.dreamerv3.rl_module import IS_FIRST
from flywheel.columns import Columns
from flywheel.typing import DEFAULT_MODULE_ID

OBS = gym.spaces.Box(-10.0, 10.0, (3,), np.float32)
ACT = gym.spaces.Discrete(2)
B, T = 2, 8


def learner(**training):
    config = (
        DreamerV3Config()
        .environment(observation_space=OBS, action_space=ACT)
        .training(model_size="nano", batch_size_B=B, batch_length_T=T, horizon_H=4, **training)
        .debugging(seed=0)
    )
    return config.build_learner(spaces=(OBS, ACT))


def batch(seed=0):
    rng = np.random.default_rng(seed)
    terminateds = np.zeros(B * T, np.float32)
    terminateds[T - 1] = 1.0
    is_first = np.zeros(B * T, np.float32)
    is_first[[0, T]] = 1.0
    return {
        DEFAULT_MODULE_ID: {
            Columns.OBS: rng.normal(size=(B * T, 3)).astype(np.float32),
            Columns.ACTIONS: rng.integers(0, 2, B * T),
            Columns.REWARDS: np.ones(B * T, np.float32),
            Columns.TERMINATEDS: terminateds,
            IS_FIRST: is_first,
        }
    }


def test_module_gets_the_settings():
    module = learner().module[DEFAULT_MODULE_ID]
    assert module.model_config["model_size"] == "nano" and module.model_config["batch_length_T"] == T
    assert module.world_model.rssm.initial_h.shape == (16,)


def test_one_update_steps_three_optimizers():
    lrn = learner()
    module = lrn.module[DEFAULT_MODULE_ID]
    names = sorted(name for name, _ in lrn.get_optimizers_for_module(DEFAULT_MODULE_ID))
    assert names == ["actor", "critic", "world_model"]
    lrs = {name: opt.param_groups[0]["lr"] for name, opt in lrn.get_optimizers_for_module(DEFAULT_MODULE_ID)}
    assert lrs == {"world_model": 1e-4, "actor": 3e-5, "critic": 3e-5}
    before = {
        name: [p.clone() for p in getattr(module, name).parameters()] for name in ("world_model", "actor")
    }
    critic_before = [p.clone() for p in module.critic.net.parameters()]
    ema_before = [p.clone() for p in module.critic.ema_net.parameters()]
    results = lrn.update(batch())
    stats = results[DEFAULT_MODULE_ID]
    for key in ("WORLD_MODEL_L_total", "WORLD_MODEL_L_reward", "ACTOR_L_total", "CRITIC_L_total"):
        assert np.isfinite(stats[key])
    assert abs(stats["WORLD_MODEL_L_reward"] - np.log(255)) < 1e-3  # zero-initialized reward head
    assert results["__all_modules__"]["num_env_steps_trained"] == B * T
    for name, params in before.items():
        assert any(
            not torch.equal(p, q) for p, q in zip(params, getattr(module, name).parameters(), strict=True)
        )
    # The critic moved, and its EMA copy moved 2% of the way towards it.
    critic_after = list(module.critic.net.parameters())
    assert any(not torch.equal(p, q) for p, q in zip(critic_before, critic_after, strict=True))
    for old, new, live in zip(ema_before, module.critic.ema_net.parameters(), critic_after, strict=True):
        assert torch.allclose(new, 0.98 * old + 0.02 * live, atol=1e-6)


def test_clip_limits_per_optimizer():
    lrn = learner(world_model_grad_clip_by_global_norm=1e-3, actor_grad_clip_by_global_norm=1e-4)
    stats = lrn.update(batch())[DEFAULT_MODULE_ID]
    assert stats["WORLD_MODEL_gradients_global_norm"] > 1e-3  # logged before clipping
    module = lrn.module[DEFAULT_MODULE_ID]
    world_model_norm = torch.linalg.vector_norm(
        torch.stack([p.grad.norm() for p in module.world_model.parameters() if p.grad is not None])
    )
    actor_norm = torch.linalg.vector_norm(
        torch.stack([p.grad.norm() for p in module.actor.parameters() if p.grad is not None])
    )
    assert world_model_norm.item() <= 1e-3 * 1.0001 and actor_norm.item() <= 1e-4 * 1.0001


def test_world_model_losses_fall_on_a_fixed_batch():
    """Measured: WORLD_MODEL_L_decoder 2.32 -> 0.78 and L_reward 5.54 -> 2.39 in 50 updates at lr 3e-3
    (13 s on a loaded 2-core machine)."""
    lrn = learner(world_model_lr=3e-3)
    data = batch()
    first = lrn.update(data)[DEFAULT_MODULE_ID]
    for _ in range(49):
        last = lrn.update(data)[DEFAULT_MODULE_ID]
    assert last["WORLD_MODEL_L_decoder"] < 0.5 * first["WORLD_MODEL_L_decoder"]
    assert last["WORLD_MODEL_L_reward"] < 0.5 * first["WORLD_MODEL_L_reward"]
