"""TQC learns Pendulum-v1: a mean return (last 10 episodes) of -250 within 20,000 env steps, with the
settings of examples/sac_pendulum.py and 2 critics of 10 quantiles, 1 dropped per critic (RLlib's
25 quantiles cost about twice as much per gradient step). Seed 0 takes about 90 s of CPU time
(175 s measured on a loaded 2-core machine)."""

import pytest

from flywheel import TQCConfig

pytestmark = pytest.mark.learning

BUDGET = 20_000


def build_config() -> TQCConfig:
    return (
        TQCConfig()
        .environment("Pendulum-v1")
        .training(
            actor_lr=1e-3,
            critic_lr=1e-3,
            alpha_lr=1e-3,
            train_batch_size_per_learner=256,
            num_steps_sampled_before_learning_starts=1000,
            tau=0.005,
            n_quantiles=10,
            n_critics=2,
            top_quantiles_to_drop_per_net=1,
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .reporting(metrics_num_episodes_for_smoothing=10)
        .debugging(seed=0)
    )


def test_tqc_pendulum_reaches_minus_250_within_20k_env_steps():
    algo = build_config().build_algo()
    try:
        while True:
            result = algo.train()
            steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
            ret = result["env_runners"]["episode_return_mean"]
            if ret >= -250 or steps >= BUDGET:
                break
    finally:
        algo.stop()
    assert ret >= -250, f"mean return {ret:.1f} after {steps} env steps"
    assert steps <= BUDGET  # seeds 0, 1, 2 cross -250 at 6,000, 6,000 and 7,000 env steps (-125, -240, -153)
