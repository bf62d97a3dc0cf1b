"""IMPALA learns CartPole-v1 with two remote runners sampling asynchronously: a mean return (last 100
episodes) of 400 within 500k env steps."""

import pytest

from flywheel import IMPALAConfig

from ..conftest import train_until

pytestmark = [pytest.mark.learning, pytest.mark.ray]

BUDGET = 500_000
# Each remote runner imports torch as it starts: on a loaded machine that outlasts the default 60 s.
STARTUP_S = 600


def test_impala_with_two_remote_runners_reaches_400_within_500k_env_steps(ray_session):
    # RLlib's tuned APPO CartPole settings (shared value layers, vf_loss_coeff 0.05, no entropy bonus),
    # a smaller network, lr 1e-3 and minibatches of 100 env steps (2 rows of 50).
    config = (
        IMPALAConfig()
        .environment("CartPole-v1")
        .env_runners(
            num_env_runners=2,
            num_envs_per_env_runner=4,
            num_cpus_per_env_runner=0.5,
            sample_timeout_s=STARTUP_S,
        )
        .training(lr=1e-3, entropy_coeff=0.0, vf_loss_coeff=0.05, minibatch_size=100)
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "vf_share_layers": True})
        .reporting(min_time_s_per_iteration=1)
        .debugging(seed=0)
    )
    ret, steps = train_until(config.build_algo(), 400, BUDGET)
    assert ret >= 400, f"mean return {ret:.1f} after {steps} env steps"
    assert steps <= BUDGET  # runs cross 400 at ~180k env steps here (asynchronous: not repeatable)
