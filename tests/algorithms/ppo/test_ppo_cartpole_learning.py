"""PPO learns CartPole-v1: a mean return (last 100 episodes) of 475 within 100,000 env steps."""

import pytest

from flywheel import PPOConfig

pytestmark = pytest.mark.learning

BUDGET = 100_000


def cartpole_config(seed: int) -> PPOConfig:
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .env_runners(num_envs_per_env_runner=8)
        .training(
            gamma=0.98,
            lambda_=0.8,
            clip_param=0.2,
            use_kl_loss=False,
            lr=[[0, 1e-3], [100_000, 1e-4]],
            train_batch_size_per_learner=1024,
            minibatch_size=128,
            num_epochs=10,
            vf_clip_param=float("inf"),
            vf_loss_coeff=0.5,
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64]})
        .debugging(seed=seed)
    )


def test_ppo_cartpole_reaches_475_within_100k_env_steps():
    algo = cartpole_config(seed=1).build_algo()
    try:
        while True:
            result = algo.train()
            steps = result["env_runners"]["num_env_steps_sampled_lifetime"]
            ret = result["env_runners"]["episode_return_mean"]
            if ret >= 475 or steps >= BUDGET:
                break
    finally:
        algo.stop()
    assert ret >= 475, f"mean return {ret:.1f} after {steps} env steps"
    assert steps <= BUDGET  # seed 1 crosses 475 at 56,320 env steps here (seeds 0-2: 56k-85k)
