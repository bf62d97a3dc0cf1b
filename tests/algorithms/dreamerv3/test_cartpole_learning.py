"""DreamerV3's world model learns CartPole-v1 on a tiny budget (model_size "nano")."""

import pytest

from flywheel.algorithms.dreamerv3.config import DreamerV3Config


@pytest.mark.learning
def test_world_model_losses_fall_by_half_on_cartpole():
    """Measured (seed 0, B x T = 4 x 16, one update per env step, world_model_lr 1e-3): over 240 env
    steps (225 updates) the reconstruction loss fell 3.32 -> 0.18 and the reward loss 5.54 -> 1.45
    (seed 1: 2.52 -> 0.22 and 5.54 -> 1.43). 50 s at load 11 on 2 cores; 214 s and 258 s in two runs
    at load 16."""
    config = (
        DreamerV3Config()
        .environment("CartPole-v1")
        .training(
            model_size="nano",
            batch_size_B=4,
            batch_length_T=16,
            horizon_H=5,
            training_ratio=64,
            world_model_lr=1e-3,
        )
        .debugging(seed=0)
    )
    algo = config.build_algo()
    first = None
    try:
        for _ in range(240):
            learner = algo.train().get("learners", {}).get("default_policy", {})
            if first is None and "WORLD_MODEL_L_decoder" in learner:
                first = learner
    finally:
        algo.stop()
    assert first is not None
    assert learner["WORLD_MODEL_L_decoder"] < 0.5 * first["WORLD_MODEL_L_decoder"]
    assert learner["WORLD_MODEL_L_reward"] < 0.5 * first["WORLD_MODEL_L_reward"]
