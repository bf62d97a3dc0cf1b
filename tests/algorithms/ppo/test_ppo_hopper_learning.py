"""PPO with CleanRL's MuJoCo recipe (examples/ppo_mujoco.py) learns to hop: within 12,288 env steps on
Hopper-v5 the mean raw return of the last 10 episodes is at least 3x a random policy's (12-24).

The example's config, with smaller batches (1,024 steps, 5 epochs) so the budget holds 12 updates.
Seeds 0, 1, 2 and 3 reached 121, 123, 76 and 207 (a random policy: 15, 24, 12 and 13), each run
deterministic; CI runs seed 0 (25-40 s on a 2-core machine under a load of 17-30).
"""

import runpy
from pathlib import Path

import pytest

from flywheel import SingleAgentEnvRunner

pytestmark = pytest.mark.learning

EXAMPLE = Path(__file__).parents[3] / "examples" / "ppo_mujoco.py"
BUDGET = 12_288


def hopper_config(seed: int):
    make = runpy.run_path(str(EXAMPLE), run_name="example")["cleanrl_config"]
    return (
        make("Hopper-v5", seed, BUDGET)
        .training(train_batch_size_per_learner=1024, num_epochs=5)
        .reporting(metrics_num_episodes_for_smoothing=10)
    )


def random_return(config) -> float:
    runner = SingleAgentEnvRunner(config=config)
    runner.sample(num_timesteps=3000, random_actions=True)
    mean = runner.get_metrics()["episode_return_mean"]
    runner.stop()
    return mean


@pytest.mark.parametrize("seed", [0])
def test_hopper_improves_over_a_random_policy(seed):
    config = hopper_config(seed)
    baseline = random_return(config)
    algo = config.build_algo()
    result = {}
    while result.get("num_env_steps_sampled_lifetime", 0) < BUDGET:
        result = algo.train()
    algo.stop()
    assert 5 < baseline < 40
    assert result["env_runners"]["episode_return_mean"] >= 3 * baseline
